/**
 * Fallback when the terminal's shell integration does not come up (unsupported shell, user opted
 * out, a slow rc file): a Pseudoterminal named "oh" that runs each command as a child process
 * (`bash -c` in the persisted working directory) and echoes it and its output there, so the user still
 * sees everything, and the agent still gets exact output and the real exit code.
 *
 * The working directory persists between commands: an EXIT trap writes `pwd` to a private file when
 * the command's shell ends (also after an explicit `exit N`), and the next command starts there.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { StringDecoder } from 'string_decoder';
import * as vscode from 'vscode';
import { killDescendants } from '../procs';
import { CommandShell, quoteSh, RunningCommand, StartOptions } from '../runstate';

/** After the process exits, how long its pipes may still deliver buffered output. */
const DRAIN_MS = 50;

export class PtyShell implements CommandShell {
  readonly name = 'oh pseudoterminal (no shell integration)';
  readonly terminal: vscode.Terminal;
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  private readonly closeEmitter = new vscode.EventEmitter<number | void>();
  private child: ChildProcess | null = null;
  private current: RunningCommand | null = null;
  private cwdPath: string;
  private readonly cwdFile: string;
  private opened: Promise<void>;
  private hinted = false;
  private closed = false;

  constructor(
    cwd: string,
    private readonly env: NodeJS.ProcessEnv,
    tmpDir: string,
    private readonly onClosed: () => void,
    name = 'oh',
    /** The first line the terminal shows (what it is for); the fallback's explanation by default. */
    banner = 'commands the agent runs appear here (shell integration was not available).',
  ) {
    this.cwdPath = cwd;
    this.cwdFile = path.join(tmpDir, `cwd-${process.pid}-${Date.now()}`);
    let markOpen: () => void = () => {};
    this.opened = new Promise((r) => (markOpen = r));
    const pty: vscode.Pseudoterminal = {
      onDidWrite: this.writeEmitter.event,
      onDidClose: this.closeEmitter.event,
      open: () => {
        this.echo(`\x1b[2m[oh] ${banner}\x1b[0m\n`);
        markOpen();
      },
      close: () => this.dispose(),
      handleInput: (data) => this.onUserInput(data),
    };
    this.terminal = vscode.window.createTerminal({
      name,
      pty,
      isTransient: true,
      iconPath: new vscode.ThemeIcon('hubot'),
    });
    // Output written before the terminal is opened would be lost; do not wait forever for a hidden panel.
    this.opened = Promise.race([this.opened, new Promise<void>((r) => setTimeout(r, 1000))]);
  }

  private echo(text: string): void {
    if (!this.closed) this.writeEmitter.fire(text.replace(/\r?\n/g, '\r\n'));
  }

  async start(commandLine: string, opts: StartOptions = {}): Promise<RunningCommand> {
    await this.opened;
    // Each command is its own process here: exported variables persist by living in our env copy.
    if (opts.env) Object.assign(this.env, opts.env);
    const cmd = new RunningCommand(false, opts.limit);
    this.current = cmd;
    this.echo(`\x1b[2m${this.cwdPath} $\x1b[0m ${commandLine}\n`);
    const cwd = fs.existsSync(this.cwdPath) ? this.cwdPath : os.homedir();
    let child: ChildProcess;
    if (process.platform === 'win32') {
      child = spawn(process.env.COMSPEC || 'cmd.exe', ['/d', '/s', '/c', commandLine], {
        cwd,
        env: this.env,
        windowsVerbatimArguments: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
    } else {
      // stderr joins stdout inside the shell, so the two stay in the order they were written.
      const script =
        'exec 2>&1\n' +
        `trap '__oh_rc=$?; builtin pwd > ${quoteSh(this.cwdFile)} 2>/dev/null; exit $__oh_rc' EXIT\n` +
        commandLine +
        '\n';
      const shell = fs.existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
      // detached: its own process group, so C-c (SIGINT) reaches everything it started.
      child = spawn(shell, ['-c', script], { cwd, env: this.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    }
    this.child = child;
    const decoder = new StringDecoder('utf8');
    const sink = opts.sink;
    const onData = (b: Buffer) => {
      const s = decoder.write(b);
      if (!s) return;
      sink?.(s);
      cmd.push(s);
      this.echo(s);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.stdin?.on('error', () => {
      /* EPIPE: the command stopped reading */
    });
    child.on('error', (e) => {
      cmd.push(`oh: cannot start the shell: ${e.message}\n`);
      cmd.finish(127);
      if (this.child === child) this.child = null;
    });
    // 'exit' rather than 'close': a background job holding the pipe open must not keep the command "running".
    child.on('exit', (code, signal) => {
      setTimeout(() => {
        const rest = decoder.end();
        if (rest) {
          sink?.(rest);
          cmd.push(rest);
          this.echo(rest);
        }
        this.readCwd();
        const exitCode = code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0);
        if (exitCode !== 0) this.echo(`\x1b[2m[exit ${exitCode}]\x1b[0m\n`);
        if (this.child === child) this.child = null;
        cmd.finish(exitCode);
      }, DRAIN_MS);
    });
    return cmd;
  }

  private readCwd(): void {
    try {
      const p = fs.readFileSync(this.cwdFile, 'utf8').replace(/\n$/, '');
      if (p && fs.statSync(p).isDirectory()) this.cwdPath = p;
    } catch {
      /* the command did not get to write it (killed): keep the previous one */
    }
  }

  sendLine(text: string): void {
    this.echo(text + '\n');
    this.child?.stdin?.write(text + '\n');
  }

  sendKey(key: string): boolean {
    const k = key.slice(2).toLowerCase();
    const child = this.child;
    if (k === 'c') {
      this.echo('^C\n');
      if (child?.pid) signalGroup(child, 'SIGINT');
      return true;
    }
    if (k === 'd') {
      child?.stdin?.end();
      return true;
    }
    return false; // no job control without a real terminal: C-z would stop a command nobody can resume
  }

  async killRunning(): Promise<void> {
    const child = this.child;
    if (!child?.pid) return;
    await killDescendants(child.pid);
    signalGroup(child, 'SIGKILL');
  }

  cwd(): string | null {
    return this.cwdPath;
  }

  pid(): number | undefined {
    return this.child?.pid ?? undefined;
  }

  /** Keys typed into the "oh" terminal go to the running command, as they would in a shell. */
  private onUserInput(data: string): void {
    const child = this.child;
    if (!child) {
      if (!this.hinted) {
        this.hinted = true;
        this.echo(
          "\x1b[2m[oh] this terminal shows the agent's commands; use another terminal to type your own.\x1b[0m\n",
        );
      }
      return;
    }
    if (data === '\x03') {
      this.sendKey('C-c');
      return;
    }
    if (data === '\x04') {
      child.stdin?.end();
      return;
    }
    const text = data.replace(/\r/g, '\n');
    this.echo(text);
    child.stdin?.write(text);
  }

  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    const child = this.child;
    if (child?.pid) signalGroup(child, 'SIGHUP');
    this.child = null;
    this.current?.finish(undefined, true);
    try {
      fs.unlinkSync(this.cwdFile);
    } catch {
      /* never written */
    }
    this.onClosed();
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (process.platform === 'win32') child.kill(signal);
    else process.kill(-child.pid!, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* gone */
    }
  }
}
