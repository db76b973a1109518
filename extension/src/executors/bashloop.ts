/**
 * One persistent bash per agent shell, driven through pipes (`oh.terminalMode: fast`, ./fastshell.ts
 * shows it in a VS Code pseudoterminal). No `vscode`: unit-tested with a real bash
 * (test/bashloop.test.ts).
 *
 * Layout (the local runtime's technique, src/oh/runtimes/local/shell.py, written afresh here):
 * - fd 0: a pipe we write to; it stays the *command's* stdin, so `is_input` text reaches `read x`;
 * - fd 1 (and fd 2, joined in the loop): the command's output, in order, byte-exact;
 * - fd 3 -> 254: the loop reads one NUL-terminated command at a time from it;
 * - fd 4 -> 253: after each command the loop writes `D<status>\0<cwd>\0`, and an EXIT trap writes
 *   `X<status>\0<cwd>\0` when the shell itself exits (./markers.ts). Markers never touch the output.
 *
 * Each command is `source`d from a tiny private file holding `eval "$__oh_cmd"`: top level (exports,
 * `cd`, `declare` persist) yet `return` is legal, which `trap 'return 130' INT` needs: a C-c (SIGINT
 * to the process group) kills the foreground program and aborts the rest of the command line with
 * status 130, as an interactive shell would, while the shell survives.
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { StringDecoder } from 'string_decoder';
import { killDescendants, processCwd } from '../procs';
import { CommandShell, quoteSh, RunningCommand, StartOptions } from '../runstate';
import { MarkerParser } from './markers';
import { envScript } from './shellenv';

const LOOP = `
exec 2>&1 254<&3 253>&4 3<&- 4>&-
__oh_src=$1
set --
shopt -s expand_aliases
trap 'return 130 2>/dev/null' INT
trap 'builtin printf "X%s\\0%s\\0" "$?" "$PWD" >&253' EXIT
while :; do
  if IFS= builtin read -r -d '' -u 254 __oh_cmd; then
    builtin source "$__oh_src"
    __oh_st=$?
    builtin printf 'D%s\\0%s\\0' "$__oh_st" "$PWD" >&253
  elif (( $? <= 128 )); then
    break
  fi
done
`;

/** Poll turns without new output after a marker before the command counts as complete (see onMarker). */
const QUIET_TURNS = 2;
/** Output printed between commands kept for the next one (characters, newest kept). */
const IDLE_LIMIT = 30_000;
const MAX_DRAIN_TURNS = 50;

export interface BashLoopHooks {
  /** Everything the shell prints (and the command lines we run): the user's view of this shell. */
  echo(text: string): void;
  /** The shell process is gone (exit, killed); a running command has been finished. */
  exited(status: number | undefined): void;
}

export class BashLoop implements CommandShell {
  readonly name = 'oh fast terminal (persistent bash)';
  readonly echoesInput = false; // pipes: what we type is not echoed back into the output
  private readonly child: ChildProcess;
  private readonly decoder = new StringDecoder('utf8');
  private readonly markers = new MarkerParser();
  private readonly needle: string;
  private carry = '';
  private current: RunningCommand | null = null;
  /** The running command's extra consumer (a background job's spool). */
  private sink: ((text: string) => void) | undefined;
  private lastCwd: string;
  private dataSeq = 0;
  private idleOutput = '';
  private gone = false;
  /** Where `is_input` text goes: the shell's stdin (a new one after a C-d closed the first). */
  private stdin: NodeJS.WritableStream | null;
  private stdinClosed = false;
  /** Markers of our own commands (a fresh stdin after C-d) still to come: not the agent's. */
  private internalPending = 0;

  constructor(
    cwd: string,
    env: NodeJS.ProcessEnv,
    private readonly sourceFile: string,
    private readonly hooks: BashLoopHooks,
  ) {
    this.lastCwd = cwd;
    // 0600 in the caller's 0700 directory; the command itself travels through the pipe, never argv.
    fs.writeFileSync(sourceFile, 'eval "$__oh_cmd"\n', { mode: 0o600 });
    // bash names the sourced file in its messages ("<file>: line 1: x: command not found"); we show
    // what `bash -c` would, so no private path reaches the output.
    this.needle = sourceFile + ': ';
    const bash = fs.existsSync('/bin/bash') ? '/bin/bash' : 'bash';
    // detached: its own session and process group, so C-c (SIGINT to the group) reaches what it started.
    this.child = spawn(bash, ['--noprofile', '--norc', '-c', LOOP, 'bash', sourceFile], {
      cwd,
      env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    this.stdin = this.child.stdin;
    this.child.stdout?.on('data', (b: Buffer) => this.onOutput(this.decoder.write(b)));
    this.child.stderr?.on('data', (b: Buffer) => this.onOutput(b.toString('utf8'))); // only before the loop's `exec 2>&1`
    (this.child.stdio[4] as NodeJS.ReadableStream | null)?.on('data', (b: Buffer) => this.onMarkers(b));
    for (const s of [this.child.stdin, this.child.stdio[3] as NodeJS.WritableStream | null]) {
      s?.on('error', () => {
        /* EPIPE: the shell is gone; its exit handler reports it */
      });
    }
    this.child.on('error', (e) => {
      this.hooks.echo(`oh: cannot start bash: ${e.message}\n`);
      this.onExit(127);
    });
    this.child.on('exit', (code, signal) => this.onExit(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : undefined)));
  }

  /** Output of the shell: to the running command (if any) and to the user's view. */
  private onOutput(raw: string): void {
    const text = this.scrub(raw);
    if (!text) return;
    this.dataSeq++;
    this.hooks.echo(text);
    const cmd = this.current;
    if (cmd && !cmd.done) {
      this.sink?.(text);
      cmd.push(text);
    } else {
      // Printed while no command runs (a background job): goes to the next command, as in the local runtime.
      this.idleOutput = (this.idleOutput + text).slice(-IDLE_LIMIT);
    }
  }

  /** Replaces the private source file's name in bash's messages; a chunk may end inside it. */
  private scrub(raw: string): string {
    let t = this.carry + raw;
    this.carry = '';
    t = t.split(this.needle).join('bash: ');
    for (let k = Math.min(this.needle.length - 1, t.length); k > 0; k--) {
      if (this.needle.startsWith(t.slice(t.length - k))) {
        const held = (this.carry = t.slice(t.length - k));
        // Held back only until more output comes; a command that stops printing here still shows it soon.
        setTimeout(() => {
          if (this.carry === held) this.flushCarry();
        }, 50);
        return t.slice(0, t.length - k);
      }
    }
    return t;
  }

  private onMarkers(b: Buffer): void {
    for (const m of this.markers.push(b)) {
      this.lastCwd = m.cwd || this.lastCwd;
      if (m.kind === 'D' && this.internalPending > 0) {
        this.internalPending--;
        continue;
      }
      if (m.kind === 'D') this.completeAfterDrain(m.status, false);
      else this.completeAfterDrain(m.status, true);
    }
  }

  /**
   * The command's output was written before its marker, but the two pipes are read independently:
   * finish once a few event-loop turns passed with no new output (each turn polls the pipes without
   * blocking), so the tail of the output is never attributed to the next command.
   */
  private completeAfterDrain(status: number, shellExited: boolean): void {
    const cmd = this.current;
    if (!cmd || cmd.done) return;
    let quiet = 0;
    let turns = 0;
    let seen = this.dataSeq;
    const step = () => {
      turns++;
      if (this.dataSeq !== seen) {
        seen = this.dataSeq;
        quiet = 0;
      } else quiet++;
      if (quiet < QUIET_TURNS && turns < MAX_DRAIN_TURNS) {
        setImmediate(step);
        return;
      }
      this.flushCarry();
      if (status !== 0) this.hooks.echo(`\x1b[2m[exit ${status}]\x1b[0m\n`);
      if (this.current === cmd) {
        this.current = null;
        this.sink = undefined;
      }
      cmd.finish(status, shellExited);
      if (this.stdinClosed && !shellExited) this.reopenStdin();
      // Same tick as the finish: the executor drops this shell before the agent's next command can reach it.
      if (shellExited) this.reportExit(status);
    };
    setImmediate(step);
  }

  private flushCarry(): void {
    if (!this.carry) return;
    const rest = this.carry;
    this.carry = '';
    this.hooks.echo(rest);
    if (this.current && !this.current.done) {
      this.sink?.(rest);
      this.current.push(rest);
    }
  }

  private onExit(status: number | undefined): void {
    if (this.gone) return;
    this.gone = true;
    // A last marker (the EXIT trap's) may still be in flight: give it a moment, then end whatever runs.
    setTimeout(() => {
      this.flushCarry();
      const cmd = this.current;
      this.current = null;
      cmd?.finish(status, true);
      this.reportExit(status);
    }, 50);
  }

  private exitReported = false;

  private reportExit(status: number | undefined): void {
    this.gone = true; // no new command is sent to a shell that is exiting
    if (this.exitReported) return;
    this.exitReported = true;
    this.hooks.exited(status);
  }

  get alive(): boolean {
    return !this.gone;
  }

  async start(commandLine: string, opts: StartOptions = {}): Promise<RunningCommand> {
    const cmd = new RunningCommand(false, opts.limit);
    if (this.gone) {
      cmd.finish(undefined, true);
      return cmd;
    }
    this.current = cmd;
    this.sink = opts.sink;
    if (this.idleOutput) {
      cmd.push(this.idleOutput);
      this.idleOutput = '';
    }
    // What the user sees: the directory and the command as the agent sent it (never the exports:
    // their values may be secrets, and they travel only through the command pipe).
    this.hooks.echo(`\x1b[2m${caretNotation(this.lastCwd)} $\x1b[0m ${caretNotation(commandLine)}\n`);
    const exports = opts.env && Object.keys(opts.env).length ? envScript(opts.env) : '';
    (this.child.stdio[3] as NodeJS.WritableStream).write(exports + commandLine + '\0');
    return cmd;
  }

  sendLine(text: string): void {
    this.hooks.echo(text + '\n');
    if (!this.stdinClosed) this.stdin?.write(text + '\n');
  }

  sendKey(key: string): boolean {
    const k = key.slice(2).toLowerCase();
    if (k === 'c') {
      this.hooks.echo('^C\n');
      this.signal('SIGINT');
      return true;
    }
    if (k === 'd') {
      // End of input for the running command; the shell gets a fresh stdin once it ends (reopenStdin).
      this.hooks.echo('^D\n');
      if (!this.stdinClosed) {
        this.stdinClosed = true;
        this.stdin?.end();
      }
      return true;
    }
    return false; // no job control on pipes: C-z would stop a command nobody can resume
  }

  /**
   * After a C-d closed the shell's stdin, later commands need one again: a private FIFO (0600, in
   * the source file's 0700 directory) that we hold open read-write (so neither side's open blocks),
   * made the shell's fd 0 by one internal command whose marker is not the agent's.
   */
  private reopenStdin(): void {
    if (this.gone) return;
    const fifo = this.sourceFile.replace(/\.sh$/, '') + `-in-${Date.now().toString(36)}`;
    try {
      execFileSync('mkfifo', ['-m', '600', fifo]);
      const fd = fs.openSync(fifo, fs.constants.O_RDWR);
      const stream = fs.createWriteStream('', { fd });
      stream.on('error', () => {
        /* the shell is gone */
      });
      this.stdin = stream;
      this.stdinClosed = false;
      this.internalPending++;
      (this.child.stdio[3] as NodeJS.WritableStream).write(`exec 0<${quoteSh(fifo)}; builtin command rm -f -- ${quoteSh(fifo)}\0`);
    } catch (e) {
      this.hooks.echo(`\x1b[2m[oh] could not give the shell a new stdin after C-d (${(e as Error).message}); \`reset\` starts a fresh shell.\x1b[0m\n`);
    }
  }

  /** Hard timeout after C-c: kills every process the shell started; the shell (cwd, exports) survives. */
  async killRunning(): Promise<void> {
    if (this.child.pid && !this.gone) await killDescendants(this.child.pid);
  }

  private signal(sig: NodeJS.Signals): void {
    if (!this.child.pid || this.gone) return;
    try {
      process.kill(-this.child.pid, sig);
    } catch {
      /* gone */
    }
  }

  /** Keys the user typed into the terminal: to the running command's stdin; false when nothing runs. */
  userInput(data: string): boolean {
    if (!this.current || this.current.done) return false;
    if (data === '\x03') {
      this.sendKey('C-c');
      return true;
    }
    if (data === '\x04') {
      this.sendKey('C-d');
      return true;
    }
    const text = data.replace(/\r/g, '\n');
    this.hooks.echo(text);
    if (!this.stdinClosed) this.stdin?.write(text);
    return true;
  }

  cwd(): string | null {
    if (this.child.pid && !this.gone) return processCwd(this.child.pid) ?? this.lastCwd;
    return this.lastCwd;
  }

  pid(): number | undefined {
    return this.child.pid;
  }

  /** Ends the shell and everything it started; a running command finishes as "shell exited". */
  dispose(): void {
    if (this.child.pid && !this.gone) {
      void killDescendants(this.child.pid).finally(() => this.signal('SIGKILL'));
    }
    fs.rm(this.sourceFile, { force: true }, () => {});
  }
}

/** The private source file for one shell, in `dir` (0700). */
export function sourceFileIn(dir: string): string {
  return path.join(dir, `fast-${process.pid}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}.sh`);
}

/**
 * Agent-controlled text (the command line, a directory name) shown in the terminal: control
 * characters in caret notation (ESC -> ^[), as bash's line editor echoes them, so an escape sequence
 * in a command is shown, never obeyed by the terminal. Newlines and tabs stay (multi-line commands).
 */
export function caretNotation(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (c) => (c === '\x7f' ? '^?' : '^' + String.fromCharCode(c.charCodeAt(0) + 64))).replace(/[\x80-\x9f]/g, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`);
}
