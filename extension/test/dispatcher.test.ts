// Exactly one observation per action, never an exception.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dispatcher } from '../src/dispatcher';
import { parseAction, readObservation, ToolError } from '../src/protocol';

const signal = new AbortController().signal;
const read = parseAction({ id: 4, action: 'read', args: { path: '/w/a' } });

test('executor result gets the cause; hooks see the outcome', async () => {
  const seen: string[] = [];
  const d = new Dispatcher(
    { read: async (a) => readObservation(a.id, '/w/a', 'x') },
    {
      isTrusted: () => true,
      onFinish: (_a, summary, outcome) => seen.push(`${summary} ${outcome}`),
    },
  );
  const o = await d.execute(read, signal);
  assert.equal(o.observation, 'read');
  assert.equal(o.cause, 4);
  assert.deepEqual(seen, ['/w/a ok']);
});

test('tool errors, bugs, unsupported kinds and untrusted workspaces become error observations', async () => {
  const boom = new Dispatcher(
    {
      read: async () => {
        throw new ToolError('nope', 'PATH_DENIED');
      },
      write: async () => {
        throw new TypeError('bug');
      },
    },
    {
      isTrusted: () => true,
      onStart: () => {
        throw new Error('ui broke');
      },
    },
  );
  const e1 = await boom.execute(read, signal);
  assert.deepEqual(
    [e1.observation, (e1.extras as Record<string, string>).error_id, e1.content, e1.cause],
    ['error', 'PATH_DENIED', 'nope', 4],
  );
  const e2 = await boom.execute(parseAction({ id: 5, action: 'write', args: { path: 'a', content: '' } }), signal);
  assert.equal((e2.extras as Record<string, string>).error_id, 'SERVER_ERROR');
  assert.match(String(e2.content), /TypeError: bug/);
  const e3 = await boom.execute(parseAction({ id: 6, action: 'edit', args: { path: 'a', command: 'view' } }), signal);
  assert.equal((e3.extras as Record<string, string>).error_id, 'TOOL_UNSUPPORTED');
  const untrusted = new Dispatcher({ read: async () => assert.fail('must not run') }, { isTrusted: () => false });
  const e4 = await untrusted.execute(read, signal);
  assert.equal((e4.extras as Record<string, string>).error_id, 'UNTRUSTED_WORKSPACE');
});
