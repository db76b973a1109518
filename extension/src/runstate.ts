/**
 * The `run` action's rules, independent of how a command is executed (docs/protocol.md §3.1):
 * one command at a time per terminal, soft and hard timeouts, `is_input`, waiting again with an
 * empty command, cancellation, bounded output.
 *
 * No `vscode`: the terminal (shell integration) and the fallback pseudoterminal each implement
 * `CommandShell`; unit tests use a fake one. Texts follow the backend's local runtime
 * (src/oh/runtimes/local/terminal.py) so an agent reads the same hints whichever runtime it uses.
 */

import * as path from 'path';
import { TerminalTextCleaner } from './ansi';
import { ORPHANED, OutputBuffer, RunArgs, RunResult, ToolError } from './protocol';

export const NO_CHANGE_TIMEOUT_S = 30; // OpenHands' soft limit: return after 30 s without new output
export const MAX_WAIT_S = 240; // a non-blocking run without timeout returns by then (backend deadline: 300 s)
export const INTERRUPT_GRACE_MS = 2000; // after C-c, how long before the processes are killed

// OpenHands' wording, naming no tool (agents reach oh through many tools); same text as the local runtime.
export const WAIT_HINT =
  "You may wait longer to see additional output by sending empty command '', send other commands to interact " +
  'with the current process (is_input), send keys ("C-c", "C-d") to interrupt/kill the previous command ' +
  'before sending your new command, or use the timeout parameter for future commands.';
export const CONTINUED_PREFIX = '[Below is the output of the previous command.]\n';

/** Output and completion of one command, fed by whichever shell runs it. */
export class RunningCommand {
  readonly buffer: OutputBuffer;
  private readonly cleaner: TerminalTextCleaner | null;
  done = false;
  exitCode: number | undefined;
  /** Set when the shell itself went away (terminal closed, `exit`). */
  shellExited = false;
  /** Set when the terminal delivered none of the command's output stream (a VS Code race, see run.ts). */
  outputLost = false;
  /** Sentences for the observation's suffix, said by the shell that ran the command (e.g. how it ended). */
  readonly notes: string[] = [];
  lastOutputAt = Date.now();
  private listeners: Array<() => void> = [];
  /** What the terminal will echo back of input we typed (a tty echoes it; a pipe does not). */
  private echo: string[] = [];
  private held = '';

  /**
   * `clean`: the data is terminal data (escape sequences, \r\n) rather than a pipe's bytes. `filter`
   * then drops what is not the command's output from the cleaned text (e.g. bash's job notices).
   */
  constructor(
    clean: boolean,
    limit?: number,
    private readonly filter?: { push(t: string): string; flush(): string },
  ) {
    this.buffer = new OutputBuffer(limit);
    this.cleaner = clean ? new TerminalTextCleaner() : null;
  }

  /**
   * The terminal echoes what we type (`hello` + Enter shows `hello\n`, C-c shows `^C`): the agent
   * already knows it and the local runtime (pipes, no echo) does not return it, so it is dropped once
   * when the output starts with it. Anything else (echo off, e.g. a password prompt) passes through.
   */
  expectEcho(...parts: string[]): void {
    this.echo.push(...parts);
  }

  private dropEcho(text: string): string {
    let t = this.held + text;
    this.held = '';
    while (this.echo.length && t) {
      const e = this.echo[0];
      if (t.startsWith(e)) {
        t = t.slice(e.length);
        this.echo.shift();
      } else if (e.startsWith(t)) {
        this.held = t; // may be the start of the echo, cut by a chunk boundary
        return '';
      } else {
        this.echo = [];
      }
    }
    return t;
  }

  push(data: string): void {
    if (this.done) return;
    let text = this.cleaner ? this.cleaner.push(data) : data;
    if (this.filter && text) text = this.filter.push(text);
    if (text && (this.echo.length || this.held)) text = this.dropEcho(text);
    if (text) {
      this.buffer.add(text);
      this.lastOutputAt = Date.now();
    }
    this.notify();
  }

  finish(exitCode: number | undefined, shellExited = false): void {
    if (this.done) return;
    if (this.cleaner) {
      let rest = this.cleaner.flush();
      if (this.filter) rest = this.filter.push(rest) + this.filter.flush();
      this.buffer.add(this.echo.length || this.held ? this.dropEcho(rest) : rest);
    }
    if (this.held) this.buffer.add(this.held); // held back as a possible echo: it was output after all
    this.held = '';
    this.echo = [];
    this.done = true;
    this.exitCode = exitCode;
    this.shellExited = shellExited;
    this.notify();
  }

  private notify(): void {
    const ls = this.listeners;
    this.listeners = [];
    for (const l of ls) l();
  }

  /** Resolves when the command has ended. */
  async whenDone(): Promise<void> {
    while (!this.done) await this.changed(60000);
  }

  /** Resolves on the next output or completion, or after `ms`. */
  changed(ms: number): Promise<void> {
    if (this.done) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.listeners = this.listeners.filter((l) => l !== done);
        resolve();
      };
      const t = setTimeout(done, Math.max(0, ms));
      this.listeners.push(done);
    });
  }
}

/** What `RunController` needs from a terminal. */
export interface StartOptions {
  /** Exported in the shell before the command (and kept there). Secrets: never echoed or logged. */
  env?: Record<string, string>;
  /** Output limit in characters. */
  limit?: number;
  /** Gets every piece of output too (a background job's spool), unbounded by `limit`. */
  sink?: (text: string) => void;
}

export interface CommandShell {
  /** Starts `commandLine` (already prefixed with a `cd` when the action names a cwd). */
  start(commandLine: string, opts?: StartOptions): Promise<RunningCommand>;
  /** The terminal echoes typed input into the command's output (a real tty does; a pipe does not). */
  readonly echoesInput?: boolean;
  /** Sends a line of text to the running command's input (a newline is added). */
  sendLine(text: string): void;
  /** Sends a control key (`C-c` -> \x03 ...); false when this shell cannot (e.g. C-z without job control). */
  sendKey(key: string): boolean;
  /** Kills whatever the running command started (after C-c did not end it). */
  killRunning(): Promise<void>;
  /** Current working directory, when known. */
  cwd(): string | null;
  pid(): number | undefined;
  readonly name: string;
}

export interface RunOptions {
  timeoutS?: number;
  signal?: AbortSignal;
}

// The local runtime's texts (src/oh/runtimes/local/terminal.py): one wording whichever runtime runs it.
export const NO_OUTPUT_TEXT = 'No previous running command to retrieve logs from.';
export const NO_INPUT_TEXT = 'No previous running command to interact with.';

export function busyMessage(command: string): string {
  return (
    `Your command "${command.slice(0, 200)}" was NOT executed: the previous command is still running. ` +
    'Send an empty command to wait for more of its output, send input to it with is_input ' +
    '(keys "C-c" to interrupt it, "C-d" to end its input), or set reset to kill it and start a fresh shell.'
  );
}

const SPECIAL_KEY = /^C-[a-zA-Z\\]$/;

export function quoteSh(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export class RunController {
  private running: RunningCommand | null = null;
  private claimed = false; // a new command was accepted and is starting
  private waiting = false; // an observation is waiting on the running command
  private lastCwd: string | null = null;
  /** The running command's text, for BUSY messages and the "interrupt it?" question. */
  runningCommand: string | null = null;

  constructor(
    private readonly shellFor: () => Promise<CommandShell>,
    private readonly currentShell: () => CommandShell | null,
    private readonly noChangeS = NO_CHANGE_TIMEOUT_S,
    private readonly maxWaitS = MAX_WAIT_S,
  ) {}

  get busy(): boolean {
    return this.claimed || (this.running !== null && !this.running.done);
  }

  /** Resolves once no command is starting or running here (an extra terminal is then retired). */
  async idle(): Promise<void> {
    while (this.busy) {
      const cmd = this.running;
      if (cmd && !cmd.done) await cmd.changed(60000);
      else await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** C-c, then kill what is left: the command stops, the terminal's shell stays. */
  async interrupt(): Promise<void> {
    const cmd = this.running;
    if (cmd && !cmd.done) await this.stop(cmd);
  }

  private cwdNow(): string | null {
    return this.currentShell()?.cwd() ?? this.lastCwd;
  }

  private result(content: string, exitCode: number, extra: Partial<RunResult> = {}): RunResult {
    return { content, exitCode, workingDir: this.cwdNow(), pid: this.currentShell()?.pid(), ...extra };
  }

  /** Executes one `run` action; `cwd` is the already-checked real directory from args.cwd. */
  async run(args: RunArgs, opts: RunOptions, cwd: string | null): Promise<RunResult> {
    const command = args.command;
    if (command.includes('\0')) throw new ToolError('args.command must not contain NUL characters.', 'BAD_REQUEST');
    if (args.is_input) return this.input(args, opts);
    if (command.trim() === '') {
      const cmd = this.running;
      if (!cmd || cmd.done) throw new ToolError(NO_OUTPUT_TEXT, 'NO_COMMAND');
      return this.waitExclusive(cmd, args, opts, CONTINUED_PREFIX);
    }
    const { cmd } = await this.begin(args, cwd);
    return this.waitExclusive(cmd, args, opts, '');
  }

  /**
   * Starts a command and returns at once (a background job, §3.8): `sink` gets all of its output;
   * follow-ups (empty command, is_input) still reach it here.
   */
  async startDetached(
    args: RunArgs,
    cwd: string | null,
    sink: (text: string) => void,
  ): Promise<{ cmd: RunningCommand; shell: CommandShell }> {
    if (args.command.includes('\0'))
      throw new ToolError('args.command must not contain NUL characters.', 'BAD_REQUEST');
    return this.begin(args, cwd, sink);
  }

  private async begin(
    args: RunArgs,
    cwd: string | null,
    sink?: (text: string) => void,
  ): Promise<{ cmd: RunningCommand; shell: CommandShell }> {
    const command = args.command;
    if (this.busy) throw new ToolError(busyMessage(command), 'BUSY');
    this.claimed = true;
    this.runningCommand = command; // already, for a BUSY message or an extra terminal's note meanwhile
    try {
      const shell = await this.shellFor();
      // The CLI names its own cwd on every run; a `cd` into where the shell already is would only
      // clutter the user's terminal (and a real directory change costs VS Code a cwd round trip).
      const here = shell.cwd();
      const needCd = cwd !== null && !(here !== null && path.resolve(here) === path.resolve(cwd));
      const line = needCd ? `cd -- ${quoteSh(cwd!)} && ${command}` : command;
      const cmd = await shell.start(line, { env: args.env, limit: args.maxOutput, ...(sink ? { sink } : {}) });
      this.running = cmd;
      return { cmd, shell };
    } catch (e) {
      if (!this.running || this.running.done) this.runningCommand = null;
      throw e;
    } finally {
      this.claimed = false;
    }
  }

  private async input(args: RunArgs, opts: RunOptions): Promise<RunResult> {
    const cmd = this.running;
    const shell = this.currentShell();
    if (!cmd || cmd.done || !shell) throw new ToolError(NO_INPUT_TEXT, 'NO_COMMAND');
    const text = args.command;
    if (text !== '') {
      if (SPECIAL_KEY.test(text)) {
        if (shell.echoesInput && text.toLowerCase() === 'c-c') cmd.expectEcho('^C', '\n');
        if (!shell.sendKey(text)) {
          throw new ToolError(
            `Key ${text} is not supported by this terminal (${shell.name}): C-c interrupts, C-d ends the input; other input is sent as a line of text.`,
            'TOOL_UNSUPPORTED',
          );
        }
      } else {
        if (shell.echoesInput) cmd.expectEcho(text + '\n');
        shell.sendLine(text);
      }
    }
    if (this.waiting) {
      return this.result('', -1, {
        suffix:
          '\n[Input sent. Another observation is already waiting for the running command; its output ' +
          'and exit code will be reported there.]',
      });
    }
    return this.waitExclusive(cmd, args, opts, CONTINUED_PREFIX);
  }

  private async waitExclusive(
    cmd: RunningCommand,
    args: RunArgs,
    opts: RunOptions,
    prefix: string,
  ): Promise<RunResult> {
    if (this.waiting) {
      return this.result('', -1, {
        prefix,
        suffix:
          '\n[Another observation is already waiting for the running command; its output and exit code will be reported there.]',
      });
    }
    this.waiting = true;
    try {
      return await this.wait(cmd, args, opts, prefix);
    } finally {
      this.waiting = false;
    }
  }

  private async wait(cmd: RunningCommand, args: RunArgs, opts: RunOptions, prefix: string): Promise<RunResult> {
    const timeout = opts.timeoutS;
    const hard = args.blocking && timeout !== undefined;
    const noChange = timeout === undefined && !args.blocking ? this.noChangeS : undefined;
    const limit = timeout !== undefined ? timeout : args.blocking ? undefined : this.maxWaitS;
    const start = Date.now();
    const signal = opts.signal;
    const aborted = abortPromise(signal);
    while (!cmd.done) {
      if (signal?.aborted && signal.reason === ORPHANED) {
        // The backend's connection went away: nobody reads this answer, and nobody asked to stop
        // the command. It keeps running in its terminal (the user decides; see RunExecutor).
        return this.result(cmd.buffer.text(), -1, { suffix: '\n[The connection to the backend was lost.]' });
      }
      if (signal?.aborted) {
        // Cancelled by the backend (agent gone, deadline passed): kill the command (C-c first, as a
        // user would; then its processes), answer nobody.
        void this.stop(cmd);
        return this.result('', -1, { suffix: '\n[Cancelled.]' });
      }
      const now = Date.now();
      const waits: number[] = [];
      if (limit !== undefined) waits.push(start + limit * 1000 - now);
      if (noChange !== undefined) waits.push(Math.max(cmd.lastOutputAt, start) + noChange * 1000 - now);
      const remaining = waits.length ? Math.min(...waits) : 1000;
      if (waits.length && remaining <= 0) break;
      await Promise.race([cmd.changed(Math.min(remaining, 1000)), aborted]);
    }
    if (cmd.done) return this.finished(cmd, prefix);
    const elapsed = (Date.now() - start) / 1000;
    if (hard) return this.interruptAfter(cmd, timeout!, prefix);
    let suffix: string;
    if (noChange !== undefined && elapsed < (limit ?? Infinity)) {
      suffix = `\n[The command has no new output after ${seconds(noChange)}. ${WAIT_HINT}]`;
    } else {
      suffix = `\n[The command timed out after ${seconds(limit ?? elapsed)} and is still running. ${WAIT_HINT}]`;
    }
    return this.result(cmd.buffer.take(), -1, { prefix, suffix });
  }

  private finished(cmd: RunningCommand, prefix: string): RunResult {
    const shell = this.currentShell();
    const cwd = shell?.cwd() ?? this.lastCwd;
    this.lastCwd = cwd;
    let suffix = '';
    let exitCode = cmd.exitCode;
    if (exitCode === undefined) {
      exitCode = -1;
      suffix = '\n[The terminal did not report an exit code for this command.]';
    }
    if (cmd.outputLost) {
      suffix +=
        "\n[VS Code delivered none of this command's output stream (its shell-integration race for commands that end " +
        'within one terminal read); the exit code is real. Run the command again if you need its output.]';
    }
    for (const n of cmd.notes) suffix += '\n' + n;
    if (cmd.shellExited) {
      suffix +=
        `\n[The shell exited with code ${exitCode}. The next command runs in a new shell in ${cwd ?? 'the workspace folder'}; ` +
        'variables, exports and other shell state were reset.]';
    }
    if (this.running === cmd) {
      this.running = null;
      this.runningCommand = null;
    }
    return { content: cmd.buffer.take(), exitCode, workingDir: cwd, pid: shell?.pid(), prefix, suffix };
  }

  /** C-c, then kill what is left after a grace period; the terminal's shell itself survives. Returns whether it had to kill. */
  private async stop(cmd: RunningCommand): Promise<boolean> {
    const shell = this.currentShell();
    if (shell?.echoesInput) cmd.expectEcho('^C', '\n'); // the local runtime shows no ^C either
    shell?.sendKey('C-c');
    const deadline = Date.now() + INTERRUPT_GRACE_MS;
    while (!cmd.done && Date.now() < deadline) await cmd.changed(deadline - Date.now());
    if (cmd.done || !shell) return false;
    await shell.killRunning();
    const d2 = Date.now() + 1000;
    while (!cmd.done && Date.now() < d2) await cmd.changed(d2 - Date.now());
    return true;
  }

  /** Hard timeout: the command is stopped, the observation says how. */
  private async interruptAfter(cmd: RunningCommand, timeoutS: number, prefix: string): Promise<RunResult> {
    const killed = await this.stop(cmd);
    if (cmd.done && this.running === cmd) {
      this.running = null;
      this.runningCommand = null;
    }
    const how = killed ? 'interrupted (C-c) and then killed' : 'interrupted (C-c)';
    const suffix = `\n[The command timed out after ${seconds(timeoutS)} and was ${how}.]`;
    return this.result(cmd.buffer.take(), -1, { prefix, suffix });
  }

  /** The terminal went away (closed by the user): a running command ends with it. */
  shellClosed(exitCode: number | undefined): void {
    const cmd = this.running;
    if (cmd && !cmd.done) cmd.finish(exitCode, true);
  }
}

/** "1 second", "2.5 seconds": the same words as the Python engine (src/oh/runtimes/local/terminal.py). */
function seconds(s: number): string {
  return `${fmt(s)} second${s === 1 ? '' : 's'}`;
}

function fmt(s: number): string {
  return Number.isInteger(s) ? String(s) : String(Math.round(s * 1000) / 1000);
}

function abortPromise(signal?: AbortSignal): Promise<void> {
  if (!signal) return new Promise(() => {});
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
