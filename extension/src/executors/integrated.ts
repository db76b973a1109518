/**
 * An agent's terminal driven through VS Code's shell integration (the preferred path of ./run.ts):
 * `executeCommand` runs the command in the terminal's shell (so `cd`, exports and aliases persist),
 * `execution.read()` streams what it printed and `onDidEndTerminalShellExecution` gives its exit code.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { killForegroundJob, processCwd } from '../procs';
import { ToolError } from '../protocol';
import { CommandShell, quoteSh, RunningCommand, StartOptions } from '../runstate';
import { envScript } from './shellenv';

/** After the end event, how long the output stream may still deliver its last chunks. */
const STREAM_DRAIN_MS = 300;
/** Time for the shell to draw its prompt after a command ended, before the next one is typed. */
const PROMPT_SETTLE_MS = 250;

export function waitForShellIntegration(term: vscode.Terminal, ms: number): Promise<vscode.TerminalShellIntegration | undefined> {
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

/** An agent's terminal driven through shell integration. */
export class IntegratedShell implements CommandShell {
  readonly name = 'VS Code terminal (shell integration)';
  readonly echoesInput = true; // a real tty: what we type comes back in the output
  private shellPid: number | undefined;
  private lastCwd: string | null;
  private scriptSeq = 0;
  /** When this terminal's last command ended (its next prompt follows). */
  private lastEnd = 0;
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

  async start(commandLine: string, opts: StartOptions = {}): Promise<RunningCommand> {
    // Sent only once the previous command's prompt had time to be drawn. Before typing,
    // executeCommand sends C-c whenever VS Code's model of the prompt line is not empty, which it
    // still is between a command's end and the next prompt (and in a terminal that starts amid a
    // burst of others). That C-c became a phantom execution VS Code paired with ours: its end came
    // with no exit code and no output, and our real command ran unpaired (issue 11; traced in
    // code-server 1.99). Only back-to-back commands wait.
    const wait = this.lastEnd + PROMPT_SETTLE_MS - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    let text = commandLine;
    let script: string | null = null;
    const exports = opts.env && Object.keys(opts.env).length ? envScript(opts.env) : '';
    if (exports || /[\r\n]/.test(commandLine)) {
      // A multi-line command typed into a shell would become several executions (one per line);
      // sourcing a script keeps it one execution with one exit code, in the same shell. Exported
      // values (secrets) go the same way: never typed into the terminal or its history. The
      // script is 0600 in a 0700 directory and deletes itself as its first step.
      script = path.join(this.tmpDir, `cmd-${++this.scriptSeq}.sh`);
      fs.writeFileSync(script, `builtin command rm -f -- ${quoteSh(script)}\n${exports}${commandLine}\n`, { mode: 0o600 });
      text = `. ${quoteSh(script)}`;
    }
    const cmd = new RunningCommand(true, opts.limit);
    const t0 = Date.now();
    const tr = (what: string) => this.trace?.(`trace +${Date.now() - t0} ms ${what}`);
    /** The execution being followed, and what it delivered so far. */
    let cur: { execution: vscode.TerminalShellExecution; chunks: number; streamDone: boolean; ended: boolean; exitCode?: number } | null = null;
    let completed = false;
    const subs: vscode.Disposable[] = [];
    const complete = () => {
      if (completed) return;
      completed = true;
      for (const d of subs) {
        d.dispose();
        this.pending.delete(d);
      }
      tr('complete');
      this.lastEnd = Date.now();
      this.lastCwd = this.cwd() ?? cur?.execution.cwd?.fsPath ?? this.lastCwd;
      // Every stream VS Code delivers starts with the shell's "command started" sequence: none at all
      // means VS Code dropped the chunk that held the command's output (start, output and end in one
      // terminal read, before its data listener existed). Say so rather than answer a silent "".
      if (cur && cur.chunks === 0) {
        cmd.outputLost = true;
        tr('no data delivered');
      }
      cmd.finish(cur?.exitCode);
      if (script) fs.rm(script, { force: true }, () => {});
    };
    const settle = (c: NonNullable<typeof cur>) => {
      if (c === cur && c.ended) complete();
    };
    const follow = (execution: vscode.TerminalShellExecution) => {
      const c = { execution, chunks: 0, streamDone: false, ended: false } as NonNullable<typeof cur>;
      cur = c;
      void (async () => {
        try {
          for await (const data of execution.read()) {
            if (c !== cur) return;
            c.chunks++;
            tr(`data ${data.length} chars`); // sizes only: output may hold secrets
            opts.sink?.(data);
            cmd.push(data);
          }
        } catch {
          /* the terminal went away; the close handler finishes the command */
        }
        c.streamDone = true;
        tr('stream done');
        settle(c);
      })();
    };
    subs.push(
      vscode.window.onDidEndTerminalShellExecution((e) => {
        const c = cur;
        if (!c || e.execution !== c.execution) return;
        tr(`end event exit=${e.exitCode} streamDone=${c.streamDone}`);
        c.ended = true;
        c.exitCode = e.exitCode;
        if (c.streamDone) settle(c);
        else {
          // The stream normally ends first; never wait on it forever.
          setTimeout(() => {
            c.streamDone = true;
            settle(c);
          }, STREAM_DRAIN_MS);
        }
      }),
    );
    for (const d of subs) this.pending.add(d);
    // A leading space: when the text arrives while bash is still switching its terminal to
    // line-editing mode after the previous prompt, the first character can be dropped ("cho: command
    // not found", seen ~1 in 30 under load in the e2e suite; a known shell-readiness race). Losing a
    // space is harmless, and with HISTCONTROL=ignorespace the agent's commands stay out of the
    // user's shell history.
    const si = this.terminal.shellIntegration;
    if (!si) throw new ToolError(`The "${this.terminal.name}" terminal lost its shell integration; run the command again.`);
    follow(si.executeCommand(' ' + text)); // its stream must be read before the command prints anything
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
