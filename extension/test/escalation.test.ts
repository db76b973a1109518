// Issue 27 (docs/protocol.md §3.17): a `run` the backend's consent gate allowed to leave the sandbox runs in a
// one-shot engine host with the escalated sandbox; the agent's own engine terminal stays as it was. The host's
// flags are unit-tested; the rest runs the REAL engine host (`python -m oh.runtimes.local.enginehost`) in real
// bubblewrap, against a mocked `vscode` pseudoterminal, with a loopback TCP server and marker files as effects.
import './vscodeMock'; // first: makes require('vscode') resolve to the mock
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { sandboxArgs } from '../src/executors/engineshell';
import { RunExecutor } from '../src/executors/run';
import { JsonObject, parseAction, registerFrame, ToolError } from '../src/protocol';
import { mock, resetMock } from './vscodeMock';

const PYTHON = process.env.OH_TEST_PYTHON ?? path.resolve(__dirname, '../../../.venv/bin/python');
const noPython = fs.existsSync(PYTHON) ? false : `no Python with oh installed at ${PYTHON} (set OH_TEST_PYTHON)`;
const bwrapOk = (() => {
  try {
    return (
      require('node:child_process').spawnSync('bwrap', [
        '--ro-bind',
        '/',
        '/',
        '--unshare-pid',
        '--proc',
        '/proc',
        '--',
        'true',
      ]).status === 0
    );
  } catch {
    return false;
  }
})();
const skip = noPython || (!bwrapOk && 'bubblewrap cannot run here');

test('the one-shot host flags: off leaves the sandbox; network keeps the level, writable and fallback and turns the network on', () => {
  const sb = {
    level: 'read-only' as const,
    network: false,
    writable: ['/c'],
    fallback: 'refuse' as const,
    bwrap: '',
    hidden: ['/h'],
  };
  const spec = (network: boolean) => JSON.stringify({ ...sb, network });
  assert.deepEqual(sandboxArgs(sb, ['/r']), ['--sandbox-spec', spec(false), '--allow', '/r']);
  assert.deepEqual(sandboxArgs(sb, ['/r'], 'network'), ['--sandbox-spec', spec(true), '--allow', '/r']);
  assert.deepEqual(sandboxArgs(sb, ['/r'], 'off'), ['--sandbox', 'off', '--allow', '/r']);
  // No settings from the backend: the host's own default level, with the network on / off.
  assert.deepEqual(sandboxArgs(undefined, [], 'network'), ['--sandbox-network', 'on']);
  // A level alone (this window's oh.sandbox, no backend's spec): the host's own writable list and fallback.
  assert.deepEqual(sandboxArgs({ level: 'read-only', network: false }, [], 'network'), [
    '--sandbox',
    'read-only',
    '--sandbox-network',
    'on',
  ]);
  assert.deepEqual(sandboxArgs(undefined, [], 'off'), ['--sandbox', 'off']);
  assert.deepEqual(sandboxArgs(undefined, []), []);
});

test("parseAction keeps the backend's escalation only when it names the same request as args.sandbox; the extension advertises 'escalate'", () => {
  const frame = (args: JsonObject, escalation?: JsonObject) =>
    parseAction({ id: 1, action: 'run', args: { command: 'x', ...args }, ...(escalation ? { escalation } : {}) });
  assert.deepEqual(frame({ sandbox: 'network', reason: 'r' }, { sandbox: 'network', reason: 'pip' }).escalation, {
    sandbox: 'network',
    reason: 'pip',
  });
  assert.deepEqual(frame({ sandbox: 'off', reason: 'r' }, { sandbox: 'off', reason: 'w' }).escalation, {
    sandbox: 'off',
    reason: 'w',
  });
  assert.equal(
    frame({ sandbox: 'network', reason: 'r' }, { sandbox: 'off', reason: 'w' }).escalation,
    undefined,
    'a different request',
  );
  assert.equal(
    frame({}, { sandbox: 'off', reason: 'w' }).escalation,
    undefined,
    'no args.sandbox: nothing to leave for',
  );
  assert.equal(frame({ sandbox: 'off', reason: 'r' }).escalation, undefined, 'not allowed by the backend');
  const caps = registerFrame({
    session: null,
    workspaceFolders: [],
    editorName: 'x',
    editorVersion: '1',
    editorPid: 1,
    extensionVersion: '1',
  }).capabilities;
  assert.ok((caps as string[]).includes('escalate'));
});

let root: string;
let outside: string;
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-esc-')));
  // Under /tmp: the sandbox's /tmp is private, so a confined write there never shows here; an unconfined one does.
  outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-esc-outside-')));
  resetMock(root);
});
afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

let nextId = 1;
const agent = { id: 'a1', name: 'claude-code', shell: 'main' } as JsonObject;
function run(args: JsonObject, escalation?: JsonObject): ReturnType<typeof parseAction> {
  const id = nextId++;
  return parseAction({
    id,
    action: 'run',
    args,
    agent: { ...agent, workdir: root },
    job_id: `j${id}`,
    timeout: 60,
    ...(escalation ? { escalation } : {}),
  });
}
const meta = (o: JsonObject) => (o.extras as JsonObject).metadata as JsonObject;
const sig = () => new AbortController().signal;
const sandbox = { level: 'workspace-write' as const, network: false };
const ctx = () => ({ backend: 'b1', instanceId: 'b1', workspace: root, roots: [root], python: PYTHON, sandbox });

/** Engine hosts still running for this test's workspace (their command line names it), with the given flag pair. */
function hosts(flag: string, value: string): number[] {
  const found: number[] = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let argv: string[];
    try {
      argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const at = argv.indexOf(flag);
    if (argv.includes('oh.runtimes.local.enginehost') && argv.includes(root) && at >= 0 && argv[at + 1] === value)
      found.push(Number(pid));
  }
  return found;
}

async function gone(flag: string, value: string): Promise<number[]> {
  for (let i = 0; i < 100 && hosts(flag, value).length; i++) await new Promise((r) => setTimeout(r, 100)); // bounded: 10 s
  return hosts(flag, value);
}

test(
  'an approved network escalation reaches a loopback server from a one-shot host, still confined otherwise, then that host ends',
  { skip },
  async () => {
    const got: string[] = [];
    const server = net.createServer((c) => c.on('data', (d) => got.push(String(d))));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const probe =
      `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 5).sendall(b'hi')" && echo REACHED; ` +
      `echo x > ${outside}/net && echo WROTE; pwd`;
    const ex = new RunExecutor({
      log: () => {},
      confirmCommands: () => false,
      terminalMode: () => 'engine',
      userShell: () => false,
    });
    try {
      fs.mkdirSync(path.join(root, 'sub'));
      const first = await ex.execute(run({ command: 'cd sub', blocking: true }), sig(), ctx());
      assert.equal(meta(first).exit_code, 0);
      let o = await ex.execute(run({ command: probe, blocking: true }), sig(), ctx());
      assert.doesNotMatch(String(o.content), /REACHED\n/, 'the agent shell: network off');
      const why = { sandbox: 'network', reason: 'fetches from a loopback index' };
      o = await ex.execute(run({ command: probe, blocking: true, ...why }, why), sig(), ctx());
      assert.match(String(o.content), /REACHED\n/, String(o.content));
      assert.deepEqual(got, ['hi']);
      assert.match(
        String(meta(o).prefix),
        /^\[This command ran in the sandbox WITH THE NETWORK, in a shell of its own \(reason: fetches from a loopback index\)\.\]/,
      );
      assert.match(String(o.content), new RegExp(`${path.join(root, 'sub')}\\n$`), 'started where the agent shell is');
      assert.ok(!fs.existsSync(path.join(outside, 'net')), 'a write outside the workspace still does not happen');
      assert.equal(meta(o).job_id, `j${nextId - 1}`);
      assert.ok(
        mock.terminals.some((t) => t.options.name === 'oh · claude-code · with the network'),
        'a terminal of its own',
      );
      assert.deepEqual(await gone('--sandbox-network', 'on'), [], 'the one-shot host ended with its command');
      o = await ex.execute(run({ command: probe, blocking: true }), sig(), ctx());
      assert.doesNotMatch(String(o.content), /REACHED\n/, 'the agent shell still has no network');
      assert.deepEqual(got, ['hi']);
      assert.equal(hosts('--sandbox-network', 'off').length, 1, "the agent's own engine host is still there");
    } finally {
      ex.dispose();
      server.close();
    }
  },
);

test(
  "an approved escalation out of the sandbox writes outside; a run asking without the backend's escalation is REJECTED and runs nothing",
  { skip },
  async () => {
    const ex = new RunExecutor({
      log: () => {},
      confirmCommands: () => false,
      terminalMode: () => 'engine',
      userShell: () => false,
    });
    try {
      const marker = path.join(outside, 'm');
      await assert.rejects(
        ex.execute(run({ command: `touch ${marker}`, blocking: true, sandbox: 'off', reason: 'r' }), sig(), ctx()),
        (e: unknown) => e instanceof ToolError && e.errorId === 'REJECTED' && /NOT executed/.test(e.message),
      );
      assert.deepEqual(mock.terminals, [], 'no terminal was even opened');
      let o = await ex.execute(run({ command: `touch ${marker}; echo done`, blocking: true }), sig(), ctx());
      assert.ok(!fs.existsSync(marker), 'the agent shell is confined');
      const why = { sandbox: 'off', reason: 'writes a marker outside' };
      o = await ex.execute(
        run({ command: `touch ${marker} && echo WROTE`, blocking: true, ...why }, why),
        sig(),
        ctx(),
      );
      assert.match(String(o.content), /WROTE/);
      assert.ok(fs.existsSync(marker), 'written outside the sandbox');
      assert.match(
        String(meta(o).prefix),
        /^\[This command ran OUTSIDE the sandbox, as the user, in a shell of its own \(reason: writes a marker outside\)\.\]/,
      );
      assert.deepEqual(await gone('--sandbox', 'off'), [], 'the one-shot host ended with its command');
      fs.rmSync(marker);
      await ex.execute(run({ command: `touch ${marker}`, blocking: true }), sig(), ctx());
      assert.ok(!fs.existsSync(marker), 'the agent shell is still confined');
    } finally {
      ex.dispose();
    }
  },
);

test(
  "an approved escalation in the background (ensure's installs) runs as a job in a one-shot host with the network",
  { skip },
  async () => {
    const got: string[] = [];
    const server = net.createServer((c) => c.on('data', (d) => got.push(String(d))));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const ex = new RunExecutor({
      log: () => {},
      confirmCommands: () => false,
      terminalMode: () => 'engine',
      userShell: () => false,
    });
    try {
      const why = { sandbox: 'network', reason: 'installs' };
      const command = `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 5).sendall(b'job')"`;
      const o = await ex.execute(run({ command, background: true, ...why }, why), sig(), ctx());
      assert.match(String(meta(o).prefix), /WITH THE NETWORK/);
      const jid = String(meta(o).job_id);
      const w = await ex.executeJob(
        parseAction({
          id: nextId++,
          action: 'job',
          args: { op: 'wait', job_id: jid, wait: 30 },
          agent: { ...agent, workdir: root },
        }),
        sig(),
        ctx(),
      );
      assert.equal(((w.extras as JsonObject).job as JsonObject).state, 'SUCCEEDED', JSON.stringify(w));
      assert.deepEqual(got, ['job']);
    } finally {
      ex.dispose();
      server.close();
    }
  },
);

test("in shell mode (VS Code's own, unconfined terminal) an approved escalation runs as usual and says so", async () => {
  mock.onTerminal = () => undefined;
  const ex = new RunExecutor({ log: () => {}, confirmCommands: () => false, terminalMode: () => 'shell' });
  try {
    const why = { sandbox: 'off', reason: 'r' };
    const o = await ex.execute(run({ command: 'echo plain', blocking: true, ...why }, why), sig(), ctx());
    assert.equal(o.content, 'plain\n');
    assert.match(
      String(meta(o).prefix),
      /^\[The agent's terminal is VS Code's own terminal, which is not sandboxed: the command ran as usual\.\]/,
    );
  } finally {
    ex.dispose();
  }
});

// The local runtime starts its extra and one-shot shells with the main shell's exports (group.py); so do the
// extension's: the agent's engine host says them (parsed from its `export -p`, never run; oh's secrets left out).
test(
  "the agent shell's exports and directory reach an escalated one-shot, an extra terminal and a background job",
  { skip },
  async () => {
    const ex = new RunExecutor({
      log: () => {},
      confirmCommands: () => false,
      terminalMode: () => 'engine',
      userShell: () => false,
    });
    const show = `printf '%s|' "$FOO" "\${OH_TOKEN-no token}" "\${OH_X_SECRET-no secret}"; pwd`;
    const want = `b a"r$\`\\\nx|no token|no secret|${path.join(root, 'sub')}\n`;
    try {
      fs.mkdirSync(path.join(root, 'sub'));
      const first = await ex.execute(
        run({ command: `export FOO='b a"r$\`\\'$'\\n''x' OH_TOKEN=leak OH_X_SECRET=leak2; cd sub`, blocking: true }),
        sig(),
        ctx(),
      );
      assert.equal(meta(first).exit_code, 0, String(first.content));
      const why = { sandbox: 'network', reason: 'fetches' };
      let o = await ex.execute(run({ command: show, blocking: true, ...why }, why), sig(), ctx());
      assert.match(String(meta(o).prefix), /WITH THE NETWORK/);
      assert.equal(String(o.content), want, 'the escalated one-shot');
      const off = { sandbox: 'off', reason: 'writes outside' };
      o = await ex.execute(run({ command: show, blocking: true, ...off }, off), sig(), ctx());
      assert.equal(String(o.content), want, 'the one-shot outside the sandbox');
      // The main terminal busy: the next command runs in an extra terminal, which starts with the exports too.
      const [busy, extra] = await Promise.all([
        ex.execute(run({ command: 'sleep 1.5; echo MAIN', blocking: true }), sig(), ctx()),
        new Promise((r) => setTimeout(r, 400)).then(() =>
          ex.execute(run({ command: show, blocking: true }), sig(), ctx()),
        ),
      ]);
      assert.equal(String(busy.content), 'MAIN\n');
      assert.equal(String(extra.content), want, 'the extra terminal');
      assert.match(String(meta(extra).prefix), /ran in an extra terminal .* with the agent terminal's exports/);
      const job = await ex.execute(run({ command: `{ ${show}; } > job.out`, background: true }), sig(), ctx());
      const jid = String(meta(job).job_id);
      const w = await ex.executeJob(
        parseAction({
          id: nextId++,
          action: 'job',
          args: { op: 'wait', job_id: jid, wait: 30 },
          agent: { ...agent, workdir: root },
        }),
        sig(),
        ctx(),
      );
      assert.equal(((w.extras as JsonObject).job as JsonObject).state, 'SUCCEEDED', JSON.stringify(w));
      assert.equal(fs.readFileSync(path.join(root, 'sub', 'job.out'), 'utf8'), want, 'the background job');
    } finally {
      ex.dispose();
    }
  },
);
