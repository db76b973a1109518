/**
 * `oh.terminalMode: engine` (the default): the agent's terminal is oh's shell engine, the same one the
 * local runtime and `oh attach` use (docs/protocol.md §3.4.1): the user's shell (`$SHELL` when bash or
 * zsh) with their rc files, interactive, on a real pseudo-terminal, with oh's own markers for exact
 * command boundaries and exit codes, and output rendered the way a terminal shows it.
 *
 * The engine is Python: this module spawns its host, `python -m oh.runtimes.local.enginehost`, with the
 * interpreter that runs the backend (the session file's `python`), and talks JSON lines over its stdio.
 * The host's `data` events are the live terminal (prompt, command, output, rc banner) and are shown
 * as they come in the agent's "oh · <agent>" Pseudoterminal; keys the user types there reach a running
 * command. `done` carries the command's rendered output, exit code and cwd.
 */
import { ChildProcess, spawn } from 'child_process';
import * as vscode from 'vscode';
import { CommandShell, RunningCommand, StartOptions } from '../runstate';
import type { SandboxSettings } from '../connection';
import { rcWords } from './terminalmode';

/** Output before VS Code opened the terminal is kept (up to this many characters) and shown once it opens. */
const EARLY_LIMIT = 1 << 20;
/** While a command prints, its output so far is asked for at most this often (soft timeouts show it). */
const PEEK_DELAY_MS = 250;
/** Output per command the host keeps; `max_output` is applied here, as for the other terminal modes. */
const HOST_MAX_OUTPUT = 16 * 1024 * 1024;
const SECRET_ENV = /^OH_.*(TOKEN|SECRET)$|^OH_TOKEN$/;
/**
 * VS Code's shell-integration marks (OSC 633: A prompt, B command, C output, D;code end), written into the
 * agent's terminal around each command, so a failing command gets VS Code's red decoration with its exit code
 * and a passing one the blue one, as in a shell-integrated terminal (issue 42: a failure looked like a success).
 */
const MARK_START = '\x1b]633;A\x07\x1b]633;B\x07\x1b]633;C\x07';
function markEnd(code: number | undefined): string {
  return code === undefined ? '\x1b]633;D\x07' : `\x1b]633;D;${code}\x07`;
}
/** `run` env names the host accepts (enginehost.py's EXPORT_NAME). */
const EXPORT_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** How long the agent's host may take to say its exports before an extra shell starts without them. */
const EXPORTS_WAIT_MS = 2000;

export interface EngineOptions {
  python: string;
  cwd: string;
  /** The clean shell (bash without rc files) instead of the user's. */
  clean: boolean;
  /** Seconds the user's rc files may take before the clean shell replaces them. */
  startupTimeoutS?: number;
  /** The sandbox (docs/protocol.md §3.17): the level (undefined: the host's default, workspace-write) and the backend's settings. */
  sandbox?: SandboxSettings;
  /** The backend's allowed roots: writable in the sandbox besides cwd. */
  roots?: string[];
  /** A one-shot host for a command the consent gate allowed to leave the sandbox ("off") or to use the network (§3.17). */
  escalation?: 'off' | 'network';
  /** The agent's main shell: the host keeps its exports for `exports()` (--exports; extra shells start with them). */
  keepExports?: boolean;
  /** Extra and one-shot shells: the main shell's exports, exported before the first command (as the local runtime does). */
  initEnv?: Promise<Record<string, string>>;
  name: string;
  /** A first line for the terminal saying why it exists (extra and job terminals). */
  banner?: string;
  log: (line: string) => void;
  onClosed: () => void;
}

/** What the host said when its shell came up. */
export interface EngineReady {
  shell: string;
  path: string;
  /** The log's words for whether the user's rc files were read (./terminalmode.ts rcWords). */
  rc: string;
  pid: number;
  note: string;
}

type HostMsg = Record<string, unknown> & { type: string };

/** The environment the agent's shell inherits: the extension host's, minus oh's secrets and Electron's switches. */
export function engineEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const k of Object.keys(env)) {
    if (SECRET_ENV.test(k) || k === 'ELECTRON_RUN_AS_NODE' || k === 'ELECTRON_NO_ATTACH_CONSOLE') delete env[k];
  }
  return env;
}

export class EngineShell implements CommandShell {
  readonly name = "oh terminal (the user's shell on a pty)";
  /** The host keeps the echo of agent input out of the output (`hide_echo`). */
  readonly echoesInput = false;
  readonly terminal: vscode.Terminal;
  /** Resolves with the first `ready`, or rejects when the host could not start its shell. */
  readonly ready: Promise<EngineReady>;
  private readonly proc: ChildProcess;
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  private readonly closeEmitter = new vscode.EventEmitter<number | void>();
  private early: string[] | null = [];
  private earlyChars = 0;
  private current: {
    id: string;
    cmd: RunningCommand;
    sink?: (t: string) => void;
    peekTimer: NodeJS.Timeout | null;
    peeking: boolean;
    /** C-c was sent to it (bash then prints a newline of its own when the job dies of SIGINT). */
    interrupted?: boolean;
  } | null = null;
  private seq = 0;
  private shellPid: number | undefined;
  private lastCwd: string;
  private pendingNote = '';
  private hinted = false;
  private closed = false;
  private stdoutRest = '';
  private readonly exportWaiters = new Map<string, (env: Record<string, string>) => void>();
  private initEnv: Promise<Record<string, string>> | undefined;

  constructor(private readonly opts: EngineOptions) {
    this.lastCwd = opts.cwd;
    this.initEnv = opts.initEnv;
    const args = ['-m', 'oh.runtimes.local.enginehost', '--cwd', opts.cwd, '--max-output', String(HOST_MAX_OUTPUT)];
    if (opts.clean) args.push('--clean');
    if (opts.keepExports) args.push('--exports');
    if (opts.startupTimeoutS !== undefined) args.push('--startup-timeout', String(opts.startupTimeoutS));
    args.push(...sandboxArgs(opts.sandbox, opts.roots, opts.escalation));
    this.proc = spawn(opts.python, args, { cwd: opts.cwd, env: engineEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let resolveReady!: (r: EngineReady) => void;
    let rejectReady!: (e: Error) => void;
    this.ready = new Promise((res, rej) => {
      resolveReady = res;
      rejectReady = rej;
    });
    this.ready.catch(() => {}); // the creator awaits it; never an unhandled rejection
    this.onReady = resolveReady;
    this.onFail = rejectReady;
    let stderr = '';
    this.proc.stderr?.setEncoding('utf8');
    this.proc.stderr?.on('data', (t: string) => {
      stderr = (stderr + t).slice(-4000);
    });
    this.proc.stdout?.setEncoding('utf8');
    this.proc.stdout?.on('data', (t: string) => this.onStdout(t));
    this.proc.stdin?.on('error', () => {
      /* EPIPE: the host is gone; 'exit' reports it */
    });
    this.proc.on('error', (e) => this.hostGone(`cannot start ${opts.python}: ${e.message}`));
    this.proc.on('exit', (code, signal) => {
      const tail = stderr.trim().split('\n').slice(-3).join(' | ');
      this.hostGone(`the shell engine host exited (${signal ?? code})${tail ? `: ${tail}` : ''}`);
    });
    const pty: vscode.Pseudoterminal = {
      onDidWrite: this.writeEmitter.event,
      onDidClose: this.closeEmitter.event,
      open: () => {
        const early = this.early ?? [];
        this.early = null;
        if (early.length) this.writeEmitter.fire(early.join(''));
      },
      close: () => this.dispose(),
      handleInput: (data) => this.userInput(data),
    };
    this.terminal = vscode.window.createTerminal({
      name: opts.name,
      pty,
      isTransient: true,
      iconPath: new vscode.ThemeIcon('hubot'),
    });
    if (opts.banner) this.show(`\x1b[2m[oh] ${opts.banner}\x1b[0m\r\n`);
  }

  private onReady: (r: EngineReady) => void;
  private onFail: (e: Error) => void;

  private onStdout(text: string): void {
    const lines = (this.stdoutRest + text).split('\n');
    this.stdoutRest = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.trim()) continue;
      let msg: HostMsg;
      try {
        msg = JSON.parse(line) as HostMsg;
      } catch {
        this.opts.log(`shell engine: a line that is not JSON (${line.length} chars)`);
        continue;
      }
      this.onMessage(msg);
    }
  }

  private onMessage(msg: HostMsg): void {
    switch (msg.type) {
      case 'data':
        this.show(String(msg.text ?? ''));
        if (this.current) this.schedulePeek();
        return;
      case 'ready': {
        const r: EngineReady = {
          shell: String(msg.shell ?? ''),
          path: String(msg.path ?? ''),
          rc: rcWords(msg.rc),
          pid: Number(msg.pid),
          note: String(msg.note ?? ''),
        };
        this.shellPid = Number.isInteger(r.pid) ? r.pid : undefined;
        if (r.note) {
          this.pendingNote = r.note; // said once, in the next observation
          this.opts.log(`"${this.opts.name}": ${r.note}`);
        }
        if (msg.restarted) this.opts.log(`"${this.opts.name}": the shell was restarted (${String(msg.reason ?? '')})`);
        this.onReady(r);
        return;
      }
      case 'exports': {
        const answer = this.exportWaiters.get(String(msg.id));
        if (answer) answer(safeExports(msg.env));
        return;
      }
      case 'started':
        if (typeof msg.pid === 'number') this.shellPid = msg.pid;
        return;
      case 'output': {
        const cur = this.current;
        if (!cur || msg.id !== cur.id) return;
        cur.peeking = false;
        this.deliver(cur, String(msg.output ?? ''));
        return;
      }
      case 'done': {
        const cur = this.current;
        if (!cur || msg.id !== cur.id) return;
        this.current = null;
        if (cur.peekTimer) clearTimeout(cur.peekTimer);
        let out = String(msg.output ?? '');
        // The newline bash prints after a job killed by C-c (to end the line the kernel's ^C echo left) is
        // an interrupt artefact, not the program's output (docs/protocol.md §3.4: no ^C or kill artefact).
        if (cur.interrupted && msg.exit_code === 130 && out.endsWith('\n')) out = out.slice(0, -1);
        this.deliver(cur, out);
        if (typeof msg.cwd === 'string' && msg.cwd) this.lastCwd = msg.cwd;
        const code = typeof msg.exit_code === 'number' ? msg.exit_code : undefined;
        this.show(markEnd(code));
        if (typeof msg.note === 'string' && msg.note) cur.cmd.notes.push(`[${msg.note}]`);
        if (msg.killed) {
          cur.cmd.notes.push(
            `[Its shell was killed with it and a fresh one started in ${this.lastCwd}: variables and exports of the old shell are gone.]`,
          );
          cur.cmd.finish(code);
        } else cur.cmd.finish(code, msg.shell_exited === true);
        return;
      }
      case 'error': {
        const cur = this.current;
        if (cur && msg.id === cur.id) {
          // The host refused the command (BUSY, BAD_REQUEST): nothing ran.
          this.current = null;
          cur.cmd.push(`oh: the shell engine refused the command: ${String(msg.message ?? msg.code)}\n`);
          cur.cmd.finish(undefined);
        } else this.opts.log(`shell engine: ${String(msg.code)}: ${String(msg.message ?? '')}`);
        return;
      }
      default:
        return;
    }
  }

  private deliver(cur: NonNullable<EngineShell['current']>, text: string): void {
    if (!text) return;
    cur.sink?.(text);
    cur.cmd.push(text);
  }

  /** The running command printed: its output so far is fetched a little later (one request per burst). */
  private schedulePeek(): void {
    const cur = this.current;
    if (!cur || cur.peekTimer || cur.peeking) return;
    cur.peekTimer = setTimeout(() => {
      cur.peekTimer = null;
      if (this.current !== cur) return;
      cur.peeking = true;
      this.send({ type: 'peek', id: cur.id });
    }, PEEK_DELAY_MS);
  }

  private show(text: string): void {
    if (this.closed || !text) return;
    if (!this.early) {
      this.writeEmitter.fire(text);
      return;
    }
    this.early.push(text);
    this.earlyChars += text.length;
    while (this.earlyChars > EARLY_LIMIT && this.early.length > 1) this.earlyChars -= this.early.shift()!.length;
  }

  /** Keys the user types into the agent's terminal: they reach a running command, never the shell's prompt. */
  private userInput(data: string): void {
    if (this.current) {
      this.send({ type: 'input', text: data });
      return;
    }
    if (this.hinted) return;
    this.hinted = true;
    this.show(
      "\r\n\x1b[2m[oh] this terminal runs the agent's commands; keys reach a running command only. Use another terminal for your own.\x1b[0m\r\n",
    );
  }

  private send(msg: Record<string, unknown>): void {
    if (this.closed) return;
    this.proc.stdin?.write(JSON.stringify(msg) + '\n');
  }

  async start(commandLine: string, opts: StartOptions = {}): Promise<RunningCommand> {
    await this.ready;
    if (this.closed) throw new Error('the shell engine is gone');
    const cmd = new RunningCommand(false, opts.limit);
    if (this.pendingNote) {
      // one note per line (the host may send the sandbox's level and the shell's own note together)
      for (const line of this.pendingNote.split('\n')) if (line) cmd.notes.push(`[${line}]`);
      this.pendingNote = '';
    }
    const id = `c${++this.seq}`;
    this.current = { id, cmd, sink: opts.sink, peekTimer: null, peeking: false };
    const msg: Record<string, unknown> = { type: 'run', id, command: commandLine };
    // The first command of an extra shell: the main shell's exports first, the action's own env over them.
    const init = this.initEnv ? await this.initEnv : {};
    this.initEnv = undefined;
    const env = { ...init, ...(opts.env ?? {}) };
    if (Object.keys(env).length) msg.env = env; // values: secrets, never logged
    this.show(MARK_START); // VS Code's command marks: the decoration shows the exit code (issue 42)
    this.send(msg);
    return cmd;
  }

  /**
   * The shell's exports as of its last finished command (a host started with `keepExports`), names checked and oh's
   * secrets left out on both sides; {} when the host does not answer within 2 s or is gone. Asked once per extra
   * shell, not per command.
   */
  exports(): Promise<Record<string, string>> {
    if (this.closed) return Promise.resolve({});
    const id = `e${++this.seq}`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => done({}), EXPORTS_WAIT_MS);
      const done = (env: Record<string, string>) => {
        clearTimeout(timer);
        this.exportWaiters.delete(id);
        resolve(env);
      };
      this.exportWaiters.set(id, done);
      this.send({ type: 'exports', id });
    });
  }

  sendLine(text: string): void {
    this.send({ type: 'input', text: text + '\r', hide_echo: true });
  }

  sendKey(key: string): boolean {
    const k = key.length === 3 ? `C-${key[2].toLowerCase()}` : key;
    if (k !== 'C-c' && k !== 'C-d' && k !== 'C-z' && k !== 'C-\\') return false;
    if (k === 'C-c' && this.current) this.current.interrupted = true;
    this.send({ type: 'key', key: k });
    return true;
  }

  async killRunning(): Promise<void> {
    if (this.current) this.send({ type: 'kill' });
  }

  cwd(): string | null {
    return this.lastCwd;
  }

  pid(): number | undefined {
    return this.shellPid;
  }

  /** The host went away: a running command ends with it, the terminal closes, the slot opens a new one next time. */
  private hostGone(why: string): void {
    if (this.closed) return;
    this.opts.log(`"${this.opts.name}": ${why}`);
    this.onFail(new Error(why));
    const cur = this.current;
    this.current = null;
    if (cur) {
      if (cur.peekTimer) clearTimeout(cur.peekTimer);
      cur.cmd.notes.push(`[The agent's shell engine stopped: ${why}.]`);
      cur.cmd.finish(undefined, true);
    }
    this.closeEmitter.fire();
    this.dispose();
  }

  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    const cur = this.current;
    this.current = null;
    if (cur && !cur.cmd.done) cur.cmd.finish(undefined, true);
    for (const answer of [...this.exportWaiters.values()]) answer({});
    try {
      this.proc.stdin?.write(JSON.stringify({ type: 'close' }) + '\n');
      this.proc.stdin?.end();
    } catch {
      /* gone */
    }
    // The host kills its shell on close / EOF; make sure it goes even if it hangs.
    const p = this.proc;
    setTimeout(() => {
      if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    }, 3000).unref();
    this.opts.onClosed();
  }
}

/**
 * The engine host's sandbox flags (docs/protocol.md §3.17): the backend's resolved spec as it is (`--sandbox-spec`);
 * none sent: the host's default (workspace-write, or OH_SANDBOX).
 * `escalation` (a one-shot host for an approved escalation): "off" runs the shell unconfined; "network" keeps the
 * level and everything else of the sandbox and turns the network on (with no settings: the host's default level).
 */
export function sandboxArgs(
  sb: SandboxSettings | undefined,
  roots: string[] | undefined,
  escalation?: 'off' | 'network',
): string[] {
  const args: string[] = [];
  if (escalation === 'off') args.push('--sandbox', 'off');
  else if (sb?.writable && sb.hidden && sb.fallback && sb.bwrap !== undefined) {
    args.push('--sandbox-spec', JSON.stringify(escalation === 'network' ? { ...sb, network: true } : sb));
  } else if (sb)
    args.push('--sandbox', sb.level, '--sandbox-network', sb.network || escalation === 'network' ? 'on' : 'off');
  else if (escalation === 'network') args.push('--sandbox-network', 'on');
  for (const root of roots ?? []) args.push('--allow', root);
  return args;
}

/** The host's `exports` answer, kept only where `run` would accept it: string values, valid names, no oh secrets. */
export function safeExports(raw: unknown): Record<string, string> {
  const env: Record<string, string> = {};
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return env;
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof v === 'string' && EXPORT_NAME.test(k) && !SECRET_ENV.test(k) && !v.includes('\0')) env[k] = v;
  }
  return env;
}

/** The host could not start because the shell cannot be sandboxed: never fall back to an unconfined terminal. */
export function sandboxRefusal(message: string): boolean {
  return message.includes('cannot be sandboxed');
}
