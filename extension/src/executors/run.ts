/**
 * `run`: the agent's commands in a dedicated, visible terminal named "oh".
 *
 * Preferred path: VS Code's shell integration. `executeCommand` runs the command in the terminal's
 * shell (so `cd`, exports and aliases persist between commands, as in OpenHands' bash session),
 * `execution.read()` streams exactly what the command printed (escape sequences stripped, see
 * ../ansi.ts) and `onDidEndTerminalShellExecution` gives the real exit code. Fallback, when shell
 * integration does not come up within a few seconds: ./pty.ts. The action rules (timeouts, input,
 * one command at a time) live in ../runstate.ts.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { killForegroundJob, processCwd } from '../procs';
import { Action, Observation, runArgs, runObservation, ToolError } from '../protocol';
import { CommandShell, quoteSh, RunController, RunningCommand } from '../runstate';
import { resolveTarget, workspaceRoots } from './files';
import { PtyShell } from './pty';

export const SHELL_INTEGRATION_WAIT_MS = 5000;
/** After the end event, how long the output stream may still deliver its last chunks. */
const STREAM_DRAIN_MS = 300;
const SECRET_ENV = /^OH_.*(TOKEN|SECRET)$|^OH_TOKEN$/;

/** Environment changes for the agent's shell: no `oh` secrets, and pagers that never wait for a key. */
function terminalEnv(): Record<string, string | null> {
  const env: Record<string, string | null> = { PAGER: 'cat', GIT_PAGER: 'cat' };
  for (const k of Object.keys(process.env)) if (SECRET_ENV.test(k)) env[k] = null;
  return env;
}

function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PAGER: 'cat', GIT_PAGER: 'cat', TERM: 'dumb' };
  for (const k of Object.keys(env)) if (SECRET_ENV.test(k)) delete env[k];
  return env;
}

/** A private directory for multi-line command scripts and the fallback's cwd file. */
function privateTmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'oh-vscode-'));
}

function waitForShellIntegration(term: vscode.Terminal, ms: number): Promise<vscode.TerminalShellIntegration | undefined> {
  if (term.shellIntegration) return Promise.resolve(term.shellIntegration);
  return new Promise((resolve) => {
    const done = (si: vscode.TerminalShellIntegration | undefined) => {
      clearTimeout(timer);
      sub.dispose();
      closeSub.dispose();
      resolve(si);
    };
    const sub = vscode.window.onDidChangeTerminalShellIntegration((e) => {
      if (e.terminal === term) done(e.shellIntegration);
    });
    const closeSub = vscode.window.onDidCloseTerminal((t) => {
      if (t === term) done(undefined);
    });
    const timer = setTimeout(() => done(term.shellIntegration), ms);
  });
}

/** The "oh" terminal driven through shell integration. */
class IntegratedShell implements CommandShell {
  readonly name = 'VS Code terminal (shell integration)';
  private shellPid: number | undefined;
  private lastCwd: string | null;
  private scriptSeq = 0;
  /** End-event subscriptions of commands still running: released if the terminal goes away. */
  private readonly pending = new Set<vscode.Disposable>();

  constructor(
    readonly terminal: vscode.Terminal,
    private readonly tmpDir: string,
    initialCwd: string,
    private readonly trace?: (line: string) => void,
  ) {
    this.lastCwd = initialCwd;
    void Promise.resolve(terminal.processId).then((p) => (this.shellPid = p));
  }

  async start(commandLine: string): Promise<RunningCommand> {
    const si = this.terminal.shellIntegration;
    if (!si) throw new ToolError('The "oh" terminal lost its shell integration; run the command again.');
    let text = commandLine;
    let script: string | null = null;
    if (/[\r\n]/.test(commandLine)) {
      // A multi-line command typed into a shell would become several executions (one per line);
      // sourcing a script keeps it one execution with one exit code, in the same shell.
      script = path.join(this.tmpDir, `cmd-${++this.scriptSeq}.sh`);
      fs.writeFileSync(script, commandLine + '\n', { mode: 0o600 });
      text = `. ${quoteSh(script)}`;
    }
    const cmd = new RunningCommand(true);
    let execution: vscode.TerminalShellExecution | undefined;
    let ended = false;
    let streamDone = false;
    let exitCode: number | undefined;
    const t0 = Date.now();
    const tr = (what: string) => this.trace?.(`trace +${Date.now() - t0} ms ${what}`);
    let completed = false;
    const complete = () => {
      if (completed) return;
      completed = true;
      tr('complete');
      this.lastCwd = this.cwd() ?? execution?.cwd?.fsPath ?? this.lastCwd;
      cmd.finish(exitCode);
      if (script) fs.rm(script, { force: true }, () => {});
    };
    const sub = vscode.window.onDidEndTerminalShellExecution((e) => {
      if (e.execution !== execution) return;
      sub.dispose();
      this.pending.delete(sub);
      tr(`end event exit=${e.exitCode} streamDone=${streamDone}`);
      ended = true;
      exitCode = e.exitCode;
      if (streamDone) complete();
      else setTimeout(complete, STREAM_DRAIN_MS); // the stream normally ends first; never wait on it forever
    });
    this.pending.add(sub);
    execution = si.executeCommand(text);
    const stream = execution.read(); // must start before the command prints anything
    void (async () => {
      try {
        for await (const data of stream) {
          tr(`data ${data.length} chars`); // sizes only: output may hold secrets
          cmd.push(data);
        }
      } catch {
        /* the terminal went away; the close handler finishes the command */
      }
      streamDone = true;
      tr('stream done');
      if (ended) complete();
    })();
    return cmd;
  }

  sendLine(text: string): void {
    this.terminal.sendText(text, true);
  }

  sendKey(key: string): boolean {
    const c = key[2];
    const ch = c === '\\' ? '\x1c' : String.fromCharCode(c.toLowerCase().charCodeAt(0) - 96);
    this.terminal.sendText(ch, false);
    return true;
  }

  async killRunning(): Promise<void> {
    if (this.shellPid) await killForegroundJob(this.shellPid);
  }

  /**
   * The shell's working directory. VS Code learns it from the prompt that follows a command, which
   * can arrive after the command's end event; on Linux the kernel knows it already. The shell's
   * own spelling ($PWD, symlinks kept) wins when both agree.
   */
  cwd(): string | null {
    const reported = this.terminal.shellIntegration?.cwd?.fsPath ?? this.lastCwd;
    const actual = this.shellPid ? processCwd(this.shellPid) : null;
    if (!actual) return reported;
    if (reported) {
      try {
        if (fs.realpathSync(reported) === actual) return reported;
      } catch {
        /* the reported directory is gone */
      }
    }
    return actual;
  }

  pid(): number | undefined {
    return this.shellPid;
  }

  dispose(): void {
    for (const d of this.pending) d.dispose();
    this.pending.clear();
  }
}

export interface RunExecutorDeps {
  log: (line: string) => void;
  confirmCommands: () => boolean;
}

export class RunExecutor implements vscode.Disposable {
  private shell: IntegratedShell | PtyShell | null = null;
  private preferPty = false;
  private tmpDir: string | null = null;
  private lastCwd: string | null = null;
  private starting: Promise<CommandShell> | null = null;
  private readonly controller: RunController;
  private readonly subs: vscode.Disposable[] = [];

  constructor(private readonly deps: RunExecutorDeps) {
    this.controller = new RunController(
      () => this.ensureShell(),
      () => this.shell,
    );
    this.subs.push(
      vscode.window.onDidCloseTerminal((t) => {
        if (this.shell instanceof IntegratedShell && t === this.shell.terminal) {
          this.lastCwd = this.shell.cwd();
          this.shell.dispose();
          this.shell = null;
          this.controller.shellClosed(t.exitStatus?.code);
          this.deps.log('the "oh" terminal was closed; the next command opens a new one');
        }
      }),
    );
  }

  private tmp(): string {
    if (!this.tmpDir || !fs.existsSync(this.tmpDir)) this.tmpDir = privateTmpDir();
    return this.tmpDir;
  }

  /** The "oh" terminal, created lazily on the first command and reused afterwards. */
  private ensureShell(): Promise<CommandShell> {
    if (this.shell) return Promise.resolve(this.shell);
    if (!this.starting) {
      this.starting = this.createShell().finally(() => (this.starting = null));
    }
    return this.starting;
  }

  private async startDir(): Promise<string> {
    if (this.lastCwd && fs.existsSync(this.lastCwd)) return this.lastCwd;
    const { roots } = await workspaceRoots();
    return roots[0]?.path ?? os.homedir();
  }

  private async createShell(): Promise<CommandShell> {
    const cwd = await this.startDir();
    if (!this.preferPty) {
      const t0 = Date.now();
      // bash on POSIX: agents (OpenHands' CmdRunAction) write bash, and VS Code's bash integration is its most reliable.
      const shellPath = process.platform !== 'win32' && fs.existsSync('/bin/bash') ? '/bin/bash' : undefined;
      const terminal = vscode.window.createTerminal({
        name: 'oh',
        cwd,
        shellPath,
        env: terminalEnv(),
        isTransient: true,
        iconPath: new vscode.ThemeIcon('hubot'),
      });
      terminal.show(true); // visible, without taking the keyboard focus from the user
      const si = await waitForShellIntegration(terminal, SHELL_INTEGRATION_WAIT_MS);
      if (si) {
        this.deps.log(`"oh" terminal ready with shell integration in ${Date.now() - t0} ms`);
        this.shell = new IntegratedShell(terminal, this.tmp(), cwd, process.env.OH_VSCODE_TRACE ? this.deps.log : undefined);
        return this.shell;
      }
      this.deps.log(
        `shell integration did not start within ${SHELL_INTEGRATION_WAIT_MS / 1000} s; ` +
          'running commands in a pseudoterminal instead (still visible in the "oh" terminal)',
      );
      terminal.dispose();
      this.preferPty = true;
    }
    const pty: PtyShell = new PtyShell(cwd, childEnv(), this.tmp(), () => {
      if (this.shell === pty) {
        this.lastCwd = pty.cwd();
        this.shell = null;
        this.preferPty = false; // closed by the user: the next terminal tries shell integration again
        this.controller.shellClosed(undefined);
        this.deps.log('the "oh" terminal was closed; the next command opens a new one');
      }
    });
    pty.terminal.show(true);
    this.shell = pty;
    return pty;
  }

  async execute(action: Action, signal: AbortSignal): Promise<Observation> {
    const args = runArgs(action);
    let cwd: string | null = null;
    if (args.cwd) {
      const t = await resolveTarget(args.cwd);
      if (!fs.existsSync(t.rp.real) || !fs.statSync(t.rp.real).isDirectory()) {
        throw new ToolError(`The working directory ${t.rp.shown} does not exist or is not a directory.`);
      }
      cwd = t.rp.shown;
    }
    if (!args.is_input && args.command.trim() !== '' && this.deps.confirmCommands()) {
      const choice = await vscode.window.showWarningMessage(
        'The agent wants to run a command in the "oh" terminal.',
        { modal: true, detail: args.command },
        'Run',
      );
      if (choice !== 'Run') throw new ToolError(`The user declined to run \`${args.command}\`.`, 'INTERRUPTED');
    }
    const r = await this.controller.run(args, { timeoutS: action.timeout, signal }, cwd);
    return runObservation(action.id, args.command, r, args.hidden);
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    if (this.shell instanceof PtyShell) this.shell.dispose();
    if (this.tmpDir) fs.rm(this.tmpDir, { recursive: true, force: true }, () => {});
  }
}
