/**
 * `oh.terminalMode: fast`: the agent's terminal is a VS Code Pseudoterminal the extension drives,
 * backed by one persistent bash on pipes (./bashloop.ts). No shell integration in the loop: the
 * command goes down a pipe at once and its end comes back as a marker, so there is neither VS Code's
 * ~100 ms to its first output nor the 250 ms prompt-settle wait between commands (./integrated.ts).
 * The user still sees every command and its output live in the `oh · <agent>` terminal, and the
 * agent gets the real exit code; `cd` and exports persist as in a terminal.
 *
 * Keys the user types go to the running command's stdin (C-c interrupts it); with nothing running
 * they are refused with a one-time visible note: this terminal shows the agent's shell, whose state
 * the agent relies on.
 */
import * as vscode from 'vscode';
import { CommandShell, RunningCommand, StartOptions } from '../runstate';
import { BashLoop, sourceFileIn } from './bashloop';

const EARLY_LIMIT = 1 << 20;

export class FastShell implements CommandShell {
  readonly name = 'oh fast terminal (persistent bash)';
  readonly echoesInput = false;
  readonly terminal: vscode.Terminal;
  private readonly loop: BashLoop;
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  private readonly closeEmitter = new vscode.EventEmitter<number | void>();
  /** Output before VS Code opened the terminal: shown once it opens (a pseudoterminal drops it otherwise). */
  private early: string[] | null = [];
  private earlyChars = 0;
  private hinted = false;
  private closed = false;

  constructor(cwd: string, env: NodeJS.ProcessEnv, tmpDir: string, private readonly onClosed: () => void, name: string) {
    this.loop = new BashLoop(cwd, env, sourceFileIn(tmpDir), {
      echo: (text) => this.show(text),
      exited: () => {
        // `exit` in the agent's shell: the terminal goes with it, as a real terminal's would.
        if (!this.closed) this.closeEmitter.fire();
        this.dispose();
      },
    });
    const pty: vscode.Pseudoterminal = {
      onDidWrite: this.writeEmitter.event,
      onDidClose: this.closeEmitter.event,
      open: () => {
        const early = this.early ?? [];
        this.early = null;
        this.writeEmitter.fire(crlf('\x1b[2m[oh] the agent\'s shell (fast mode): its commands and their output appear here.\x1b[0m\n' + early.join('')));
      },
      close: () => this.dispose(),
      handleInput: (data) => {
        if (this.loop.userInput(data) || this.hinted) return;
        this.hinted = true;
        this.show('\x1b[2m[oh] this terminal runs the agent\'s commands; keys reach a running command only. Use another terminal for your own.\x1b[0m\n');
      },
    };
    this.terminal = vscode.window.createTerminal({ name, pty, isTransient: true, iconPath: new vscode.ThemeIcon('hubot') });
  }

  private show(text: string): void {
    if (this.closed) return;
    if (!this.early) {
      this.writeEmitter.fire(crlf(text));
      return;
    }
    this.early.push(text);
    this.earlyChars += text.length;
    // Never opened (a hidden panel): keep only the newest output for when it is.
    while (this.earlyChars > EARLY_LIMIT && this.early.length > 1) this.earlyChars -= this.early.shift()!.length;
  }

  start(commandLine: string, opts?: StartOptions): Promise<RunningCommand> {
    return this.loop.start(commandLine, opts);
  }
  sendLine(text: string): void {
    this.loop.sendLine(text);
  }
  sendKey(key: string): boolean {
    return this.loop.sendKey(key);
  }
  killRunning(): Promise<void> {
    return this.loop.killRunning();
  }
  cwd(): string | null {
    return this.loop.cwd();
  }
  pid(): number | undefined {
    return this.loop.pid();
  }

  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    this.loop.dispose();
    this.onClosed();
  }
}

function crlf(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}
