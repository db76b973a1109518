// `oh.terminalMode: engine` through the `run` executor (src/executors/engineshell.ts), against a mocked
// `vscode` pseudoterminal and the REAL shell engine host (`python -m oh.runtimes.local.enginehost`, run
// by the repository's .venv interpreter, or OH_TEST_PYTHON). The clean shell (`oh.userShell` off), so
// nothing depends on the HOME of whoever runs the tests; the user's-shell side is the e2e battery's.
import './vscodeMock'; // first: makes require('vscode') resolve to the mock
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { RunExecutor } from '../src/executors/run';
import { JsonObject, parseAction, ToolError } from '../src/protocol';
import { mock, resetMock, Terminal } from './vscodeMock';

const PYTHON = process.env.OH_TEST_PYTHON ?? path.resolve(__dirname, '../../../.venv/bin/python');
const skip = fs.existsSync(PYTHON) ? false : `no Python with oh installed at ${PYTHON} (set OH_TEST_PYTHON)`;

let root: string;
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-engine-')));
  fs.mkdirSync(path.join(root, 'sub'));
  resetMock(root);
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

let nextId = 1;
const agent = { id: 'a1', name: 'claude-code', shell: 'main' } as JsonObject;
const run = (args: JsonObject, timeout?: number) =>
  parseAction({
    id: nextId++,
    action: 'run',
    args,
    agent: { ...agent, workdir: root },
    ...(timeout !== undefined ? { timeout } : {}),
  });
const meta = (o: JsonObject) => (o.extras as JsonObject).metadata as JsonObject;
const sig = () => new AbortController().signal;
const ctx = (python = PYTHON) => ({ backend: 'b1', instanceId: 'b1', workspace: root, roots: [root], python });

function engineExecutor(logs: string[] = []): RunExecutor {
  return new RunExecutor({
    log: (l) => logs.push(l),
    confirmCommands: () => false,
    terminalMode: () => 'engine',
    userShell: () => false,
  });
}

test(
  'engine mode: exact exit codes for every shape, cwd and exports persist, a TTY, the live view in the pseudoterminal',
  { skip },
  async () => {
    const logs: string[] = [];
    const ex = engineExecutor(logs);
    try {
      const cases: Array<[string, number, string]> = [
        ['echo hi', 0, 'hi\n'],
        ['(exit 7)', 7, ''],
        ['mkdir -p d && (cd d && basename "$PWD")', 0, 'd\n'],
        ["printf 'a\\rb\\rc\\n'", 0, 'c\n'],
        ['[ -t 0 ] && [ -t 1 ] && echo tty; echo $TERM', 0, 'tty\nxterm-256color\n'],
      ];
      for (const [command, code, out] of cases) {
        const o = await ex.execute(run({ command, blocking: true }), sig(), ctx());
        assert.equal(o.content, out, command);
        assert.equal(meta(o).exit_code, code, command);
      }
      await ex.execute(run({ command: 'cd sub && export OH_ENGINE_T=kept', blocking: true }), sig(), ctx());
      const o = await ex.execute(run({ command: 'echo $OH_ENGINE_T; pwd', blocking: true }), sig(), ctx());
      assert.equal(o.content, `kept\n${path.join(root, 'sub')}\n`);
      assert.equal(meta(o).working_dir, path.join(root, 'sub'));
      assert.equal(mock.terminals.length, 1);
      const term = mock.terminals[0] as Terminal;
      assert.equal(term.options.name, 'oh · claude-code');
      assert.match(term.screen, /echo \$OH_ENGINE_T; pwd/, 'the live view shows the command');
      assert.ok(
        logs.some((l) => /ready in \d+ ms \(shell engine: bash/.test(l)),
        logs.join('\n'),
      );
    } finally {
      ex.dispose();
    }
  },
);

test(
  'engine mode: a soft timeout shows the prompt, is_input answers it without its echo, C-c interrupts',
  { skip },
  async () => {
    const ex = engineExecutor();
    try {
      const a = await ex.execute(run({ command: 'printf \'Name? \'; read -r n; echo "hi $n"' }, 1), sig(), ctx());
      assert.equal(meta(a).exit_code, -1);
      assert.match(String(a.content), /Name\? /);
      const b = await ex.execute(run({ command: 'bob', is_input: true, blocking: true }), sig(), ctx());
      assert.equal(meta(b).exit_code, 0);
      assert.equal(String(b.content).replace(/^\[Below is the output of the previous command\.\]\n/, ''), 'hi bob\n');
      await ex.execute(run({ command: 'sleep 30' }, 0.5), sig(), ctx());
      const c = await ex.execute(run({ command: 'C-c', is_input: true, blocking: true }), sig(), ctx());
      assert.equal(meta(c).exit_code, 130);
      assert.equal(
        String(c.content).replace(/^\[Below is the output of the previous command\.\]\n/, ''),
        '',
        'no interrupt artefact',
      );
      const d = await ex.execute(run({ command: 'echo alive', blocking: true }), sig(), ctx());
      assert.equal(d.content, 'alive\n');
    } finally {
      ex.dispose();
    }
  },
);

test('engine mode: an interpreter that is not there falls back to shell mode, said once, never silently', async () => {
  const logs: string[] = [];
  mock.onTerminal = (term: Terminal) => {
    // shell integration that runs the (marked) command with bash
    term.shellIntegration = undefined;
  };
  const ex = new RunExecutor({ log: (l) => logs.push(l), confirmCommands: () => false, terminalMode: () => 'engine' });
  try {
    // No shell integration in this mock terminal: after the engine, shell mode falls back to the pseudoterminal.
    const o = await ex.execute(run({ command: 'echo fb', blocking: true }, 30), sig(), ctx('/nonexistent/python3'));
    assert.equal(o.content, 'fb\n');
    assert.match(
      String(meta(o).suffix),
      /instead of oh's shell engine: the backend's interpreter \/nonexistent\/python3 is not on this machine/,
    );
    assert.ok(logs.some((l) => /shell engine is not used/.test(l)));
  } finally {
    ex.dispose();
  }
});

test(
  "engine mode: the backend's user_shell=false (oh start --clean-shell) gives the clean shell even when this window's setting says the user's",
  { skip },
  async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'oh-engine-home-'));
    fs.writeFileSync(path.join(home, '.bashrc'), 'export OH_RC_RAN=yes\n');
    const saved = { HOME: process.env.HOME, SHELL: process.env.SHELL };
    process.env.HOME = home;
    process.env.SHELL = '/bin/bash';
    const ex = new RunExecutor({
      log: () => {},
      confirmCommands: () => false,
      terminalMode: () => 'engine',
      userShell: () => true,
    });
    try {
      const user = await ex.execute(run({ command: 'echo "rc=$OH_RC_RAN"', blocking: true }), sig(), {
        ...ctx(),
        backend: 'user',
      });
      assert.equal(user.content, 'rc=yes\n', 'the user shell read the rc file');
      const clean = await ex.execute(run({ command: 'echo "rc=$OH_RC_RAN"', blocking: true }), sig(), {
        ...ctx(),
        backend: 'clean',
        userShell: false,
      });
      assert.equal(clean.content, 'rc=\n', 'the clean shell read none');
    } finally {
      ex.dispose();
      process.env.HOME = saved.HOME;
      process.env.SHELL = saved.SHELL;
      fs.rmSync(home, { recursive: true, force: true });
    }
  },
);

// Issue 27: the engine host runs the shell in bubblewrap with the backend's sandbox settings (docs/protocol.md §3.17).
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

test(
  "engine mode: the backend's sandbox confines the shell to the workspace; the window's oh.sandbox off lifts it",
  { skip: skip || (!bwrapOk && 'bubblewrap cannot run here') },
  async () => {
    const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-engine-outside-')));
    const sandbox = { level: 'workspace-write' as const, network: false };
    try {
      let ex = engineExecutor();
      try {
        const o = await ex.execute(
          run({ command: `echo in > inside.txt; echo x > ${outside}/m; echo done`, blocking: true }),
          sig(),
          { ...ctx(), sandbox },
        );
        assert.match(String(o.content), /done\n$/);
        assert.ok(fs.existsSync(path.join(root, 'inside.txt')), 'the workspace is writable');
        assert.ok(!fs.existsSync(path.join(outside, 'm')), 'nothing outside the workspace was written');
      } finally {
        ex.dispose();
      }
      ex = new RunExecutor({
        log: () => {},
        confirmCommands: () => false,
        terminalMode: () => 'engine',
        userShell: () => false,
        sandbox: () => 'off',
      });
      try {
        await ex.execute(run({ command: `echo x > ${outside}/m`, blocking: true }), sig(), { ...ctx(), sandbox });
        assert.ok(fs.existsSync(path.join(outside, 'm')), "oh.sandbox off: the window's setting lifts it");
      } finally {
        ex.dispose();
      }
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  },
);

test(
  'engine mode: a shell that cannot be sandboxed fails the command with the fix, never an unconfined fallback terminal',
  { skip },
  async () => {
    const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-engine-outside-')));
    const saved = process.env.OH_SANDBOX_BWRAP;
    process.env.OH_SANDBOX_BWRAP = path.join(outside, 'no-such-bwrap');
    const ex = engineExecutor();
    try {
      await assert.rejects(
        ex.execute(run({ command: `touch ${outside}/m`, blocking: true }), sig(), {
          ...ctx(),
          sandbox: { level: 'workspace-write', network: false },
        }),
        (e: unknown) =>
          e instanceof ToolError &&
          e.errorId === 'SANDBOX_UNAVAILABLE' &&
          /cannot be sandboxed.*bubblewrap is not installed/s.test(e.message),
      );
      assert.ok(!fs.existsSync(path.join(outside, 'm')), 'nothing ran');
    } finally {
      ex.dispose();
      if (saved === undefined) delete process.env.OH_SANDBOX_BWRAP;
      else process.env.OH_SANDBOX_BWRAP = saved;
      fs.rmSync(outside, { recursive: true, force: true });
    }
  },
);
