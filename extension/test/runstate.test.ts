// The run action's rules (timeouts, input, one command at a time, cancel) against a fake terminal.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ORPHANED, RunArgs, ToolError } from '../src/protocol';
import { CommandShell, CONTINUED_PREFIX, RunController, RunningCommand } from '../src/runstate';

class FakeShell implements CommandShell {
  readonly name = 'fake';
  echoesInput = false;
  opts: unknown[] = [];
  started: string[] = [];
  lines: string[] = [];
  keys: string[] = [];
  killed = 0;
  cmd: RunningCommand | null = null;
  dir = '/w';
  onStart: (cmd: RunningCommand, line: string) => void = () => {};
  onKey: (key: string) => void = () => {};
  async start(line: string, opts?: { limit?: number }): Promise<RunningCommand> {
    this.started.push(line);
    this.opts.push(opts);
    this.cmd = new RunningCommand(true, opts?.limit);
    this.onStart(this.cmd, line);
    return this.cmd;
  }
  sendLine(text: string): void {
    this.lines.push(text);
  }
  sendKey(key: string): boolean {
    if (key === 'C-z') return false;
    this.keys.push(key);
    this.onKey(key);
    return true;
  }
  async killRunning(): Promise<void> {
    this.killed++;
  }
  cwd(): string {
    return this.dir;
  }
  pid(): number {
    return 99;
  }
}

const args = (command: string, extra: Partial<RunArgs> = {}): RunArgs => ({
  command,
  is_input: false,
  blocking: false,
  cwd: null,
  hidden: false,
  ...extra,
});

function setup(noChangeS = 30, maxWaitS = 240) {
  const shell = new FakeShell();
  const ctl = new RunController(
    async () => shell,
    () => shell,
    noChangeS,
    maxWaitS,
  );
  return { shell, ctl };
}

test('a finished command: exact output, real exit code, working dir', async () => {
  const { shell, ctl } = setup();
  shell.onStart = (cmd) =>
    setTimeout(() => {
      cmd.push('\x1b]633;C\x07out\r\n');
      cmd.finish(3);
    }, 5);
  const r = await ctl.run(args('bash -c "echo out; exit 3"'), {}, null);
  assert.deepEqual(r, { content: 'out\n', exitCode: 3, workingDir: '/w', pid: 99, prefix: '', suffix: '' });
});

test('cwd: cd prefix only when the shell is elsewhere', async () => {
  const { shell, ctl } = setup();
  shell.onStart = (cmd) => setTimeout(() => cmd.finish(0), 1);
  await ctl.run(args('ls'), {}, '/w');
  await ctl.run(args('ls'), {}, "/other dir/it's");
  assert.deepEqual(shell.started, ['ls', `cd -- '/other dir/it'\\''s' && ls`]);
});

test('soft timeout returns partial output, exit -1; the command keeps running; empty command waits again', async () => {
  const { shell, ctl } = setup();
  let cmd!: RunningCommand;
  shell.onStart = (c) => {
    cmd = c;
    c.push('first\r\n');
  };
  const r1 = await ctl.run(args('long'), { timeoutS: 0.05 }, null);
  assert.equal(r1.exitCode, -1);
  assert.equal(r1.content, 'first\n');
  assert.match(r1.suffix!, /timed out after 0.05 seconds and is still running/);
  // a new command is refused while it runs
  // a new command is an error observation (BUSY) naming what to do, and no tool
  const busy = await ctl.run(args('echo new'), {}, null).then(
    () => null,
    (e) => e,
  );
  assert.ok(busy instanceof ToolError && busy.errorId === 'BUSY', String(busy));
  assert.match(busy.message, /^Your command "echo new" was NOT executed: the previous command is still running\./);
  assert.match(busy.message, /empty command.*is_input.*C-c.*reset/);
  assert.doesNotMatch(busy.message, /execute_bash/);
  assert.equal(shell.started.length, 1);
  setTimeout(() => {
    cmd.push('second\r\n');
    cmd.finish(0);
  }, 10);
  const r2 = await ctl.run(args(''), { timeoutS: 5 }, null);
  assert.equal(r2.exitCode, 0);
  assert.equal(r2.content, 'second\n');
  assert.equal(r2.prefix, CONTINUED_PREFIX);
});

test('no timeout, non-blocking: returns after the no-change period', async () => {
  const { shell, ctl } = setup(0.05, 10);
  shell.onStart = (c) => c.push('x');
  const r = await ctl.run(args('quiet'), {}, null);
  assert.equal(r.exitCode, -1);
  assert.match(r.suffix!, /no new output after 0.05 seconds/);
});

test('is_input sends a line or a key; without a running command it says so', async () => {
  const { shell, ctl } = setup();
  for (const a of [args('y', { is_input: true }), args('')]) {
    const e = await ctl.run(a, {}, null).then(
      () => null,
      (err) => err,
    );
    assert.ok(e instanceof ToolError && e.errorId === 'NO_COMMAND', String(e));
  }
  let cmd!: RunningCommand;
  shell.onStart = (c) => (cmd = c);
  await ctl.run(args('read x'), { timeoutS: 0.02 }, null);
  shell.lines = [];
  setTimeout(() => {
    cmd.push('got hello\r\n');
    cmd.finish(0);
  }, 5);
  const r = await ctl.run(args('hello', { is_input: true }), { timeoutS: 2 }, null);
  assert.deepEqual(shell.lines, ['hello']);
  assert.equal(r.content, 'got hello\n');
  assert.equal(r.prefix, CONTINUED_PREFIX);

  await ctl.run(args('sleep 100'), { timeoutS: 0.02 }, null);
  shell.onKey = (k) => k === 'C-c' && setTimeout(() => cmd.finish(130), 5);
  const c = await ctl.run(args('C-c', { is_input: true }), { timeoutS: 2 }, null);
  assert.deepEqual(shell.keys, ['C-c']);
  assert.equal(c.exitCode, 130);

  await ctl.run(args('sleep 100'), { timeoutS: 0.02 }, null);
  await assert.rejects(
    ctl.run(args('C-z', { is_input: true }), {}, null),
    (e: unknown) => e instanceof ToolError && e.errorId === 'TOOL_UNSUPPORTED',
  );
});

test('hard timeout: C-c, then kill, exit -1 and a suffix saying so', async () => {
  const { shell, ctl } = setup();
  shell.onKey = () => {}; // ignores C-c
  let cmd!: RunningCommand;
  shell.onStart = (c) => (cmd = c);
  const t0 = Date.now();
  const pending = ctl.run(args('stubborn', { blocking: true }), { timeoutS: 0.05 }, null);
  const timer = setInterval(() => shell.killed && cmd.finish(137), 20);
  const r = await pending;
  clearInterval(timer);
  assert.equal(r.exitCode, -1);
  assert.deepEqual(shell.keys, ['C-c']);
  assert.equal(shell.killed, 1);
  assert.match(r.suffix!, /timed out after 0.05 seconds and was interrupted \(C-c\) and then killed/);
  assert.ok(Date.now() - t0 < 5000);
  assert.ok(!ctl.busy);
});

test('cancel (abort) interrupts the running command', async () => {
  const { shell, ctl } = setup();
  shell.onKey = () => shell.cmd!.finish(130);
  const ac = new AbortController();
  const pending = ctl.run(args('sleep 100', { blocking: true }), { signal: ac.signal }, null);
  setTimeout(() => ac.abort(), 20);
  await pending;
  assert.deepEqual(shell.keys, ['C-c']);
  assert.equal(shell.killed, 0);
});

test('cancel kills a command that ignores C-c', async () => {
  const { shell, ctl } = setup();
  const ac = new AbortController();
  const pending = ctl.run(args('stubborn', { blocking: true }), { signal: ac.signal }, null);
  setTimeout(() => ac.abort(), 20);
  await pending; // answers at once (the backend no longer waits); the kill follows
  const t0 = Date.now();
  while (!shell.killed && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 50));
  assert.equal(shell.killed, 1);
});

test('output over the limit is truncated in the middle', async () => {
  const { shell, ctl } = setup();
  shell.onStart = (c) => {
    for (let i = 0; i < 100; i++) c.push('x'.repeat(1000));
    c.finish(0);
  };
  const r = await ctl.run(args('big'), {}, null);
  assert.ok(r.content.includes('[... 70000 characters truncated ...]'));
  assert.ok(r.content.length < 30100);
});

test('the shell going away ends the command with a note', async () => {
  const { shell, ctl } = setup();
  shell.onStart = () => {};
  const pending = ctl.run(args('exit 4', { blocking: true }), {}, null);
  setTimeout(() => ctl.shellClosed(4), 10);
  const r = await pending;
  assert.equal(r.exitCode, 4);
  assert.match(r.suffix!, /The shell exited with code 4/);
});

test('a tty echo of is_input text and of C-c is not in the output, like the local runtime (issue 9 #17)', async () => {
  const { shell, ctl } = setup();
  shell.echoesInput = true; // a real terminal: what is typed comes back
  let cmd!: RunningCommand;
  shell.onStart = (c) => (cmd = c);
  await ctl.run(args('cat'), { timeoutS: 0.02 }, null);
  setTimeout(() => {
    cmd.push('hel'); // the echo, cut by a chunk boundary
    cmd.push('lo\r\nhello\r\n'); // ... and cat's own output
  }, 5);
  const r = await ctl.run(args('hello', { is_input: true }), { timeoutS: 0.2 }, null);
  assert.equal(r.content, 'hello\n'); // once, as cat printed it
  // a command that echoes nothing (echo off, e.g. read -s) loses nothing
  setTimeout(() => cmd.push('different\r\n'), 5);
  const q = await ctl.run(args('secret', { is_input: true }), { timeoutS: 0.2 }, null);
  assert.equal(q.content, 'different\n');
  // hard timeout: the terminal shows ^C; the agent does not get it
  shell.onKey = (k) =>
    k === 'C-c' &&
    setTimeout(() => {
      cmd.push('^C\r\n');
      cmd.finish(130);
    }, 5);
  const h = await ctl.run(args('', { blocking: true }), { timeoutS: 0.05 }, null);
  assert.equal(h.content, '');
  assert.match(h.suffix!, /timed out after 0.05 seconds and was interrupted \(C-c\)/);
});

test('max_output limits the buffer per command', async () => {
  const { shell, ctl } = setup();
  shell.onStart = (c) => {
    c.push('x'.repeat(100));
    c.finish(0);
  };
  const r = await ctl.run(args('big', { maxOutput: 10 }), {}, null);
  assert.match(r.content, /^xxxxx\n\[\.\.\. 90 characters truncated \.\.\.\]\nxxxxx$/);
  assert.deepEqual(shell.opts[0], { env: undefined, limit: 10 });
});

test('a lost connection orphans the wait without touching the command; interrupt() stops it (issue 9 #15)', async () => {
  const { shell, ctl } = setup();
  const ac = new AbortController();
  const pending = ctl.run(args('sleep 100', { blocking: true }), { signal: ac.signal }, null);
  setTimeout(() => ac.abort(ORPHANED), 20);
  const r = await pending;
  assert.equal(r.exitCode, -1);
  assert.deepEqual(shell.keys, []); // nobody asked to stop it
  assert.equal(shell.killed, 0);
  assert.ok(ctl.busy);
  assert.equal(ctl.runningCommand, 'sleep 100');
  shell.onKey = () => shell.cmd!.finish(130);
  await ctl.interrupt();
  assert.deepEqual(shell.keys, ['C-c']);
});
