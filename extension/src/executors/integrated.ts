/**
 * An agent's terminal driven through VS Code's shell integration (the preferred path of ./run.ts):
 * `executeCommand` runs the command in the terminal's shell (so `cd`, exports and aliases persist),
 * `execution.read()` streams what it printed and `onDidEndTerminalShellExecution` gives its exit code.
 */
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { killForegroundJob, processCwd, shellAtPrompt } from '../procs';
import { ToolError } from '../protocol';
import { CommandShell, quoteSh, RunningCommand, StartOptions } from '../runstate';
import { envScript } from './shellenv';
import { JobNoticeFilter, MarkScanner, markedScript, shownCommand } from './streammarks';

/** After the end event, how long the output stream may still deliver its last chunks. */
const STREAM_DRAIN_MS = 300;
/** Time for the shell to draw its prompt after a command ended, before the next one is typed. */
const PROMPT_SETTLE_MS = 250;
/** After oh's end mark, how long VS Code's end event may take before the mark ends the command. */
const END_GRACE_MS = 1000;
/** How often the script's status file is looked for, and how long the stream then has to deliver. */
const STATUS_POLL_MS = 1000;
const STATUS_GRACE_MS = 1000;
/** After C-c or a kill, when to check whether the shell is back at its prompt with the command unended. */
const WEDGE_CHECK_MS = 1500;
/** The command shown in the terminal above its output: at most this many characters. */
const SHOWN_MAX = 2000;

let scriptSeq = 0;

function readStatus(file: string): number | undefined {
  try {
    const t = fs.readFileSync(file, 'utf8');
    return /^\d+$/.test(t) ? Number(t) : undefined;
  } catch {
    return undefined;
  }
}

export function waitForShellIntegration(
  term: vscode.Terminal,
  ms: number,
): Promise<vscode.TerminalShellIntegration | undefined> {
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

/** What a followed command needs from its terminal. */
interface FollowHost {
  sink?: (text: string) => void;
  trace?: (line: string) => void;
  /** End-event subscriptions of commands still running (released if the terminal goes away). */
  pending: Set<vscode.Disposable>;
  /** The command ended: the terminal's bookkeeping (its next prompt, its directory). */
  ended: () => void;
}

/** The execution being followed, and what it delivered so far. */
interface Exec {
  execution: vscode.TerminalShellExecution;
  chunks: number;
  streamDone: boolean;
  ended: boolean;
  exitCode?: number;
}

/**
 * One command followed to its end, whichever witness comes first: VS Code's end event (with its stream
 * drained), oh's end mark in the stream, or the script's status file.
 */
class Following {
  cur: Exec | null = null;
  private completed = false;
  private readonly subs: vscode.Disposable[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly t0 = Date.now();

  constructor(
    readonly cmd: RunningCommand,
    readonly marks: MarkScanner,
    private readonly script: string,
    private readonly statusFile: string,
    private readonly host: FollowHost,
  ) {}

  private tr(what: string): void {
    this.host.trace?.(`trace +${Date.now() - this.t0} ms ${what}`);
  }

  private deliver(text: string): void {
    if (!text) return;
    this.host.sink?.(text);
    this.cmd.push(text);
  }

  complete(how: 'vscode' | 'mark' | 'status' | 'recovered'): void {
    if (this.completed) return;
    this.completed = true;
    for (const d of this.subs) {
      d.dispose();
      this.host.pending.delete(d);
    }
    for (const t of this.timers) clearInterval(t);
    this.tr(`complete (${how})`);
    this.host.ended();
    this.deliver(this.marks.flush());
    const cur = this.cur;
    // Every stream VS Code delivers starts with the shell's "command started" sequence: none at all
    // means VS Code dropped the chunk that held the command's output (start, output and end in one
    // terminal read, before its data listener existed). Say so rather than answer a silent "".
    if (cur && cur.chunks === 0 && this.marks.state === 'before') {
      this.cmd.outputLost = true;
      this.tr('no data delivered');
    }
    // oh's own status first: it is `$?` after the command line itself; VS Code's is that of `.`
    // (the same unless the script never ran to its end), and sometimes missing.
    let code = this.marks.status ?? cur?.exitCode ?? readStatus(this.statusFile);
    if (how === 'recovered') {
      code = undefined;
      this.cmd.notes.push(
        '[VS Code never reported the end of this command; after C-c its shell was back at its prompt, so the terminal ' +
          'takes commands again. Run the command again if you need its exit code.]',
      );
    } else if (how !== 'vscode') {
      this.host.trace?.(
        `VS Code reported no end for a command; oh's own ${how === 'mark' ? 'mark' : 'status file'} ended it`,
      );
    }
    this.cmd.finish(code);
    fs.rm(this.script, { force: true }, () => {});
    fs.rm(this.statusFile, { force: true }, () => {});
  }

  private settle(c: Exec): void {
    if (c === this.cur && c.ended) this.complete('vscode');
  }

  /** Reads the execution's stream; oh's end mark in it ends the command if VS Code's end event does not. */
  follow(execution: vscode.TerminalShellExecution): void {
    const c: Exec = { execution, chunks: 0, streamDone: false, ended: false };
    this.cur = c;
    void (async () => {
      try {
        for await (const data of execution.read()) {
          if (c !== this.cur || this.completed) return;
          c.chunks++;
          this.tr(`data ${data.length} chars`); // sizes only: output may hold secrets
          const before = this.marks.state;
          this.deliver(this.marks.feed(data));
          if (before !== 'after' && this.marks.state === 'after') {
            this.tr(`oh end mark status=${this.marks.status}`);
            // Output is complete. VS Code's end event normally follows within milliseconds (it
            // comes with the next prompt); when it does not, the mark ends the command.
            this.timers.push(setTimeout(() => this.complete('mark'), END_GRACE_MS));
          }
        }
      } catch {
        /* the terminal went away; the close handler finishes the command */
      }
      c.streamDone = true;
      this.tr('stream done');
      this.settle(c);
    })();
  }

  /** VS Code's end event, and the status file as the last witness. */
  watch(): void {
    this.subs.push(vscode.window.onDidEndTerminalShellExecution((e) => this.onEnd(e)));
    for (const d of this.subs) this.host.pending.add(d);
    // The script's status file: the witness that the command ended even when VS Code delivers neither
    // an end event nor the stream holding the end mark. Checked once a second (a stat), never parsed
    // before the stream had its chance to deliver the output.
    let statusSeenAt = 0;
    this.timers.push(
      setInterval(() => {
        if (this.completed || this.marks.state === 'after') return;
        if (!statusSeenAt) {
          if (fs.existsSync(this.statusFile)) statusSeenAt = Date.now();
        } else if (Date.now() - statusSeenAt >= STATUS_GRACE_MS) this.complete('status');
      }, STATUS_POLL_MS),
    );
  }

  private onEnd(e: vscode.TerminalShellExecutionEndEvent): void {
    const c = this.cur;
    if (!c || e.execution !== c.execution) return;
    this.tr(`end event exit=${e.exitCode} streamDone=${c.streamDone}`);
    c.ended = true;
    c.exitCode = e.exitCode;
    if (c.streamDone) this.settle(c);
    else {
      // The stream normally ends first; never wait on it forever.
      this.timers.push(
        setTimeout(() => {
          c.streamDone = true;
          this.settle(c);
        }, STREAM_DRAIN_MS),
      );
    }
  }
}

/** An agent's terminal driven through shell integration. */
export class IntegratedShell implements CommandShell {
  readonly name = 'VS Code terminal (shell integration)';
  readonly echoesInput = true; // a real tty: what we type comes back in the output
  private shellPid: number | undefined;
  private lastCwd: string | null;
  /** When this terminal's last command ended (its next prompt follows). */
  private lastEnd = 0;
  /** End-event subscriptions of commands still running: released if the terminal goes away. */
  private readonly pending = new Set<vscode.Disposable>();
  /** Random per terminal: only this extension's scripts can print its marks (./streammarks.ts). */
  private readonly nonce = crypto.randomBytes(12).toString('hex');
  /** The command running now, for the wedge check after C-c. */
  private current: { cmd: RunningCommand; marks: MarkScanner; statusFile: string; recover: () => void } | null = null;

  constructor(
    readonly terminal: vscode.Terminal,
    private readonly tmpDir: string,
    initialCwd: string,
    private readonly trace?: (line: string) => void,
  ) {
    this.lastCwd = initialCwd;
    void Promise.resolve(terminal.processId).then((p) => (this.shellPid = p));
  }

  async start(commandLine: string, opts: StartOptions = {}): Promise<RunningCommand> {
    // Sent only once the previous command's prompt had time to be drawn. Before typing,
    // executeCommand sends C-c whenever VS Code's model of the prompt line is not empty, which it
    // still is between a command's end and the next prompt (and in a terminal that starts amid a
    // burst of others). That C-c became a phantom execution VS Code paired with ours: its end came
    // with no exit code and no output, and our real command ran unpaired (issue 11; traced in
    // code-server 1.99). Only back-to-back commands wait.
    const wait = this.lastEnd + PROMPT_SETTLE_MS - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    // Every command is sourced from a script (./streammarks.ts): typed as the simple command
    // `. <script>`, so VS Code's integration sees it start whatever its shape (`(exit 7)`,
    // `( … )` that prints, several lines), and the script's own marks give the output's bounds and
    // the exit code even when VS Code reports none. Exported values (secrets) go the same way: never
    // typed into the terminal or its history. The script is 0600 in a 0700 directory and deletes
    // itself as its first step.
    const si = this.terminal.shellIntegration;
    if (!si)
      throw new ToolError(`The "${this.terminal.name}" terminal lost its shell integration; run the command again.`);
    const seq = ++scriptSeq; // module-wide: terminals share the private directory
    const script = path.join(this.tmpDir, `cmd-${seq}.sh`);
    const statusFile = path.join(this.tmpDir, `st-${seq}`);
    const exports = opts.env && Object.keys(opts.env).length ? envScript(opts.env) : '';
    const shown = shownCommand(commandLine.length > SHOWN_MAX ? commandLine.slice(0, SHOWN_MAX) + '…' : commandLine);
    fs.writeFileSync(
      script,
      markedScript({ script, nonce: this.nonce, commandLine, exportLines: exports, statusFile, shown }),
      { mode: 0o600 },
    );
    const cmd = new RunningCommand(true, opts.limit, new JobNoticeFilter());
    const f = new Following(cmd, new MarkScanner(this.nonce), script, statusFile, {
      sink: opts.sink,
      trace: this.trace,
      pending: this.pending,
      ended: () => {
        if (this.current?.cmd === cmd) this.current = null;
        this.lastEnd = Date.now();
        this.lastCwd = this.cwd() ?? f.cur?.execution.cwd?.fsPath ?? this.lastCwd;
      },
    });
    f.watch();
    this.current = { cmd, marks: f.marks, statusFile, recover: () => f.complete('recovered') };
    // A leading space: when the text arrives while bash is still switching its terminal to
    // line-editing mode after the previous prompt, the first character can be dropped ("cho: command
    // not found", seen ~1 in 30 under load in the e2e suite; a known shell-readiness race). Losing a
    // space is harmless, and with HISTCONTROL=ignorespace the agent's commands stay out of the
    // user's shell history.
    f.follow(si.executeCommand(' ' + `. ${quoteSh(script)}`)); // its stream must be read before the command prints anything
    return cmd;
  }

  sendLine(text: string): void {
    this.terminal.sendText(text, true);
  }

  sendKey(key: string): boolean {
    const c = key[2];
    const ch = c === '\\' ? '\x1c' : String.fromCharCode(c.toLowerCase().charCodeAt(0) - 96);
    this.terminal.sendText(ch, false);
    if (ch === '\x03') this.checkWedged();
    return true;
  }

  async killRunning(): Promise<void> {
    if (this.shellPid) await killForegroundJob(this.shellPid);
    this.checkWedged();
  }

  /**
   * After C-c or a kill: a command VS Code still has not ended while its shell is back at the prompt
   * (nothing in the terminal's foreground, the shell asleep reading its next line) will never end by
   * itself: C-c aborts the sourced script before its end mark, and VS Code's end event is what did
   * not come. It is given up on (said in its observation) so the terminal takes commands again,
   * rather than every later command silently going to an extra terminal.
   */
  private checkWedged(): void {
    const cur = this.current;
    if (!cur) return;
    setTimeout(() => {
      if (this.current !== cur || cur.cmd.done || !this.shellPid) return;
      if (fs.existsSync(cur.statusFile)) return; // it ended; the status file ends it
      if (shellAtPrompt(this.shellPid)) cur.recover();
    }, WEDGE_CHECK_MS);
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
