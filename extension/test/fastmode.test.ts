// `oh.terminalMode: fast` through the `run` executor (src/executors/fastshell.ts over bashloop.ts),
// against a mocked `vscode` pseudoterminal and a real persistent bash: the user's view, soft and
// hard timeouts, input, env secrets, reset, and the shell going away.
import './vscodeMock'; // first: makes require('vscode') resolve to the mock
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { RunExecutor } from '../src/executors/run';
import { JsonObject, parseAction } from '../src/protocol';
import { mock, resetMock } from './vscodeMock';

let root: string;

beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-fast-')));
  fs.mkdirSync(path.join(root, 'sub'));
  resetMock(root);
});

afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

let nextId = 1;
const agent = { id: 'a1', name: 'claude-code', shell: 'main' } as JsonObject;
const run = (args: JsonObject, timeout?: number) =>
  parseAction({ id: nextId++, action: 'run', args, agent: { ...agent, workdir: root }, ...(timeout !== undefined ? { timeout } : {}) });
const meta = (o: JsonObject) => (o.extras as JsonObject).metadata as JsonObject;
const sig = () => new AbortController().signal;
const ctx = () => ({ backend: 'b1', instanceId: 'b1', workspace: root, roots: [root] });

function fastExecutor(logs: string[] = []): RunExecutor {
  return new RunExecutor({ log: (l) => logs.push(l), confirmCommands: () => false, terminalMode: () => 'fast' });
}

test('fast mode: one pseudoterminal named after the agent shows the commands; exact output, exit codes, cd/export persist', async () => {
  const logs: string[] = [];
  const ex = fastExecutor(logs);
  try {
    const a = await ex.execute(run({ command: 'echo out; echo err >&2; exit_code=4; (exit $exit_code)' }), sig(), ctx());
    assert.equal(a.content, 'out\nerr\n');
    assert.equal(meta(a).exit_code, 4);
    assert.equal((meta(await ex.execute(run({ command: 'cd sub && export KEPT=yes' }), sig(), ctx()))).exit_code, 0);
    const c = await ex.execute(run({ command: 'echo $KEPT; pwd' }), sig(), ctx());
    assert.equal(c.content, `yes\n${path.join(root, 'sub')}\n`);
    assert.equal(meta(c).working_dir, path.join(root, 'sub'));
    const s = await ex.execute(run({ command: 'echo $TOKEN_X', env: { TOKEN_X: 'hunter2' } }), sig(), ctx());
    assert.equal(s.content, 'hunter2\n');
    assert.equal(mock.terminals.length, 1);
    const t = mock.terminals[0];
    assert.equal(t.options.name, 'oh · claude-code');
    assert.ok(t.options.pty, 'a pseudoterminal');
    assert.ok(t.shown > 0, 'shown to the user');
    assert.match(t.screen, /echo \$KEPT; pwd\r\nyes\r\n/);
    assert.equal(t.screen.includes('hunter2\r\n'), true, 'the output is shown');
    assert.equal(t.screen.includes("TOKEN_X='hunter2'"), false, 'the export line (a secret) is never shown');
    assert.equal(logs.join('\n').includes('hunter2'), false);
    assert.ok(logs.some((l) => l.includes('fast mode')));
    // The user types while nothing runs: refused, with a note shown once in the terminal.
    t.options.pty!.handleInput!('ls\r');
    t.options.pty!.handleInput!('ls\r');
    assert.equal(t.screen.split('keys reach a running command only').length - 1, 1);
  } finally {
    ex.dispose();
  }
});

test('fast mode: soft timeout then continue, input, C-c, hard timeout; reset gives a fresh shell in the workdir', async () => {
  const ex = fastExecutor();
  try {
    const soft = await ex.execute(run({ command: 'echo start; sleep 1; echo done' }, 0.3), sig(), ctx());
    assert.equal(meta(soft).exit_code, -1);
    assert.match(String(meta(soft).suffix), /still running/);
    const rest = await ex.execute(run({ command: '' }, 20), sig(), ctx());
    assert.equal(meta(rest).exit_code, 0);
    assert.match(String(rest.content), /done\n$/);
    await ex.execute(run({ command: 'read x; echo got $x' }, 0.3), sig(), ctx());
    const got = await ex.execute(run({ command: 'hi', is_input: true }, 20), sig(), ctx());
    assert.match(String(got.content), /got hi\n$/);
    await ex.execute(run({ command: 'sleep 30' }, 0.3), sig(), ctx());
    const cc = await ex.execute(run({ command: 'C-c', is_input: true }, 20), sig(), ctx());
    assert.equal(meta(cc).exit_code, 130);
    const hard = await ex.execute(run({ command: "bash -c \"trap '' INT; sleep 30\"", blocking: true }, 0.5), sig(), ctx());
    assert.match(String(meta(hard).suffix), /interrupted \(C-c\) and then killed/);
    assert.equal((await ex.execute(run({ command: 'cd sub; echo alive' }), sig(), ctx())).content, 'alive\n');
    const r = await ex.execute(run({ command: '', reset: true }), sig(), ctx());
    assert.equal(r.content, 'Terminal session has been reset.');
    assert.equal((await ex.execute(run({ command: 'pwd' }), sig(), ctx())).content, root + '\n');
    assert.equal(mock.terminals.length, 2, 'reset closes the terminal and opens a fresh one');
  } finally {
    ex.dispose();
  }
});

test('fast mode: `exit` ends the shell and closes its terminal; the next command opens a new one where it was', async () => {
  const ex = fastExecutor();
  try {
    const o = await ex.execute(run({ command: 'cd sub && exit 5' }), sig(), ctx());
    assert.equal(meta(o).exit_code, 5);
    assert.match(String(meta(o).suffix), /The shell exited with code 5/);
    const p = await ex.execute(run({ command: 'pwd' }), sig(), ctx());
    assert.equal(p.content, path.join(root, 'sub') + '\n');
    assert.equal(mock.terminals.length, 2);
  } finally {
    ex.dispose();
  }
});
