// Consent in VS Code (./src/consent.ts): the question's choices, the rules list, the waiting count and what goes back to the backend,
// and the connection's routing of approval frames from a real `ws` server (./src/connection.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ActionContext } from '../src/connection';
import {
  ALLOW_ONCE,
  ALWAYS,
  ConsentPrompter,
  ConsentUi,
  parseApproval,
  question,
  Question,
  REJECT,
  ruleRows,
  SHOW,
  SHOW_COMMAND,
  waitingLabel,
} from '../src/consent';
import { JsonObject } from '../src/protocol';

const ROW = {
  id: 'c3',
  agent: 'claude',
  kind: 'run',
  what: 'rm -rf build',
  reason: 'rm is a risky command',
  security_risk: 'high',
  always: ['run: rm *'],
};

function ctx(sent: JsonObject[]): ActionContext {
  return { backend: 'b', instanceId: 'i', workspace: '/w', roots: ['/w'], sendFrame: (f) => sent.push(f) };
}

type FakeUi = ConsentUi & {
  asked: Question[];
  infos: string[];
  rules: string[][];
  counts: number[];
  dismissed: string[];
  shown: [string, string | undefined][];
};

/** A scripted user: `answers` for the question box, `saves` for the rules list, `reasons` for the reason box. */
function ui(
  answers: (string | undefined)[],
  reasons: (string | undefined)[] = [],
  saves: (boolean | undefined)[] = [],
): FakeUi {
  const u: FakeUi = {
    asked: [],
    infos: [],
    rules: [],
    counts: [],
    dismissed: [],
    shown: [],
    ask: async (q) => {
      u.asked.push(q);
      return answers.shift();
    },
    confirmAlways: async (_id, rules) => {
      u.rules.push(rules);
      return saves.shift();
    },
    reason: async () => reasons.shift(),
    info: (m) => u.infos.push(m),
    waiting: (n) => u.counts.push(n),
    dismiss: (id) => u.dismissed.push(id),
    show: async (_id, t, lang) => {
      u.shown.push([t, lang]);
    },
  };
  return u;
}

const labels = (q: Question) => q.choices.map((c) => c.label);

test('the question: who, what, the risk and why, with short fixed choices', async () => {
  const sent: JsonObject[] = [];
  const u = ui([ALLOW_ONCE]);
  await new ConsentPrompter(u).request(ROW, ctx(sent));
  assert.equal(u.asked[0].title, 'oh: claude wants to run [security_risk HIGH] (rm is a risky command)');
  assert.equal(u.asked[0].what, 'rm -rf build');
  assert.deepEqual(labels(u.asked[0]), [ALLOW_ONCE, ALWAYS, REJECT]);
  assert.deepEqual(sent, [{ type: 'approval', op: 'allow', id: 'c3' }]);
  assert.deepEqual(u.counts, [1, 0]);
});

test('a multi-part command keeps the same short labels; "Always…" lists every rule whole before saving (issue 42)', async () => {
  const sent: JsonObject[] = [];
  const rules = [
    'run: python3 *',
    'run: echo *',
    'run: git status *',
    'run: git diff *',
    'run: ls',
    `run: ${'x'.repeat(150)} *`,
  ];
  const command = `sh -c "python3 -c 'print(1)' && echo x && git status --short && git diff --stat && ls"`;
  const u = ui([ALWAYS, ALWAYS], [], [false, true]);
  await new ConsentPrompter(u).request({ ...ROW, always: rules, command, what: command }, ctx(sent));
  assert.deepEqual(labels(u.asked[0]), [ALLOW_ONCE, ALWAYS, REJECT, SHOW_COMMAND]);
  for (const c of u.asked[0].choices) assert.ok(c.label.length <= 12, c.label);
  assert.ok(u.asked[0].choices[1].description.includes('save 6 rules'));
  assert.deepEqual(u.rules, [rules, rules]); // "Back" asked again; the second time it was saved
  assert.deepEqual(sent, [{ type: 'approval', op: 'allow', id: 'c3', always: true }]);
});

test('rule rows: a long rule goes on in the detail and continuation rows, nothing is lost', () => {
  const long = 'run: ' + 'abcdefghij'.repeat(20);
  const rows = ruleRows(['run: ls', long], 70);
  assert.deepEqual(rows[0], { label: 'run: ls', rule: 0 });
  const mine = rows.filter((r) => r.rule === 1);
  assert.equal(mine.length, 2);
  assert.equal(mine[0].label + mine[0].detail + mine[1].label.replace(/^↳ /, ''), long);
  for (const r of rows) assert.ok(r.label.length <= 72 && (r.detail ?? '').length <= 70);
});

test('reject with a reason; Escape in the reason box asks again', async () => {
  const sent: JsonObject[] = [];
  const u = ui([REJECT, REJECT], [undefined, ' use make clean ']);
  await new ConsentPrompter(u).request({ ...ROW, id: 'c4' }, ctx(sent));
  assert.equal(u.asked.length, 2);
  assert.deepEqual(sent, [{ type: 'approval', op: 'reject', id: 'c4', reason: 'use make clean' }]);
  assert.deepEqual(u.dismissed, ['c4']);
});

test('hidden with Escape, it keeps waiting behind the status bar count; reopening answers it', async () => {
  const sent: JsonObject[] = [];
  const u = ui([undefined, ALLOW_ONCE]);
  const p = new ConsentPrompter(u);
  await p.request(ROW, ctx(sent));
  assert.deepEqual(sent, []);
  assert.equal(p.pending, 1);
  assert.deepEqual(u.counts, [1]);
  await p.reopen(); // the status bar item
  assert.deepEqual(sent, [{ type: 'approval', op: 'allow', id: 'c3' }]);
  assert.deepEqual(u.counts, [1, 0]);
  assert.equal(waitingLabel(1), 'oh: 1 waits for you');
  assert.equal(waitingLabel(2), 'oh: 2 wait for you');
  assert.equal(waitingLabel(0), undefined);
});

test('decided elsewhere while shown: its UI is dismissed, the count drops, a late click sends nothing', async () => {
  const sent: JsonObject[] = [];
  let release!: (v: string) => void;
  const u = ui([]);
  u.ask = (q) => {
    u.asked.push(q);
    return new Promise<string>((r) => (release = r));
  };
  const p = new ConsentPrompter(u);
  const shown = p.request(ROW, ctx(sent));
  p.closed('c3'); // the terminal answered first
  assert.deepEqual(u.dismissed, ['c3']);
  assert.deepEqual(u.counts, [1, 0]);
  release(ALLOW_ONCE);
  await shown;
  assert.deepEqual(sent, []);
  assert.equal(u.infos.length, 1);
  for (const bad of [null, 3, {}, { ...ROW, id: 'p1' }, { ...ROW, id: 'c1\n' }])
    await new ConsentPrompter(ui([ALLOW_ONCE])).request(bad, ctx(sent));
  assert.deepEqual(sent, []);
});

test('one question at a time: the next is shown when the first is answered, the count says how many wait', async () => {
  const sent: JsonObject[] = [];
  const releases: ((v: string) => void)[] = [];
  const u = ui([]);
  u.ask = (q) => {
    u.asked.push(q);
    return new Promise<string>((r) => releases.push(r));
  };
  const p = new ConsentPrompter(u);
  const first = p.request(ROW, ctx(sent));
  await p.request({ ...ROW, id: 'c5', what: 'make' }, ctx(sent)); // queued: returns at once
  assert.deepEqual(
    u.asked.map((q) => q.id),
    ['c3'],
  );
  assert.deepEqual(u.counts, [1, 2]);
  releases[0](ALLOW_ONCE);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    u.asked.map((q) => q.id),
    ['c3', 'c5'],
  );
  releases[1](ALLOW_ONCE);
  await first;
  assert.deepEqual(
    sent.map((f) => f.id),
    ['c3', 'c5'],
  );
  assert.deepEqual(u.counts, [1, 2, 1, 0]);
});

test('agent text cannot drive the question (controls and bidi are escaped)', () => {
  const row = parseApproval({ ...ROW, what: 'echo \u202e\x1b[2J', agent: 'a\nb' })!;
  const q = question(row, true);
  for (const text of [q.title, q.what])
    assert.ok(!text.includes('\u202e') && !text.includes('\x1b') && !text.includes('\n'), text);
});

test('a change asked outside review mode can be shown, then the question comes back', async () => {
  const sent: JsonObject[] = [];
  const u = ui([SHOW, ALLOW_ONCE]);
  await new ConsentPrompter(u).request(
    { ...ROW, kind: 'edit', what: 'edit str_replace /w/.vscode/tasks.json', detail: '-make\n+curl x | sh\u202e\n' },
    ctx(sent),
  );
  assert.deepEqual(labels(u.asked[0]), [ALLOW_ONCE, ALWAYS, REJECT, SHOW]);
  assert.deepEqual(u.shown, [['-make\n+curl x | sh\n', 'diff']]);
  assert.equal(u.asked.length, 2);
  assert.deepEqual(sent, [{ type: 'approval', op: 'allow', id: 'c3' }]);
});

test('a command too long for the question is opened whole beside it, before the question (issue 25)', async () => {
  const sent: JsonObject[] = [];
  const u = ui([SHOW_COMMAND, ALLOW_ONCE]);
  const command = 'echo start\n' + 'x'.repeat(5000) + '\ntouch hidden-at-the-end\u202e';
  await new ConsentPrompter(u).request({ ...ROW, what: command.slice(0, 500), command }, ctx(sent));
  const whole = command.replace('\u202e', '');
  assert.deepEqual(u.shown, [
    [whole, 'shellscript'],
    [whole, 'shellscript'],
  ]);
  assert.ok(u.asked[0].what.endsWith('(the whole command is open beside this)'));
  assert.ok(!u.asked[0].what.includes('\n'));
  assert.deepEqual(labels(u.asked[0]), [ALLOW_ONCE, ALWAYS, REJECT, SHOW_COMMAND]);
  assert.deepEqual(sent, [{ type: 'approval', op: 'allow', id: 'c3' }]);
});

test('a short one-line command fits the question: nothing is opened until asked', async () => {
  const u = ui([ALLOW_ONCE]);
  await new ConsentPrompter(u).request({ ...ROW, command: 'rm -rf build' }, ctx([]));
  assert.deepEqual(u.shown, []);
  assert.equal(u.asked[0].what, 'rm -rf build');
});

test('a file change reads workspace-relative and says "edit", never str_replace; a command is never rewritten', () => {
  const edit = parseApproval({ ...ROW, kind: 'edit', what: 'edit str_replace /w/src/a.py' })!;
  assert.equal(question(edit, true, '/w').what, 'edit src/a.py');
  assert.equal(
    question(parseApproval({ ...ROW, kind: 'write', what: 'write /elsewhere/x' })!, true, '/w').what,
    'write /elsewhere/x',
  );
  const run = parseApproval({ ...ROW, what: 'rm -rf /w/build', command: 'rm -rf /w/build' })!;
  assert.equal(question(run, true, '/w').what, 'rm -rf /w/build');
});
