/**
 * What the user sees of the extension: a status bar item (./statusline.ts: not connected / connected to
 * the backend of a workspace / running an action / the backend ended) that opens the log when clicked, and the "oh" output channel with one line
 * per connection change and per action (time, kind, summary, outcome, duration). Nothing here ever
 * receives the token.
 *
 * OH_VSCODE_LOG=<file> in the extension host's environment also appends the log lines to that
 * file: how the end-to-end test reads what the extension did, without scraping the UI.
 */
import * as fs from 'fs';
import * as vscode from 'vscode';
import { ConnectionStatus } from './manager';
import { Ended, statusLine } from './statusline';

function clock(d = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

function short(text: string, n: number): string {
  return text.length <= n ? text : text.slice(0, n - 1) + '…';
}

export class Ui implements vscode.Disposable {
  readonly channel: vscode.OutputChannel;
  private readonly item: vscode.StatusBarItem;
  private readonly logFile = process.env.OH_VSCODE_LOG || '';
  private connections: ConnectionStatus[] = [];
  private readonly running = new Map<number, { kind: string; summary: string }>();
  private ended: Ended | undefined;

  constructor() {
    this.channel = vscode.window.createOutputChannel('oh');
    this.item = vscode.window.createStatusBarItem('oh.status', vscode.StatusBarAlignment.Left, 0);
    this.item.name = 'oh';
    this.item.command = 'oh.showLog';
    this.render();
    this.item.show();
  }

  log(line: string): void {
    const text = `${clock()} ${line}`;
    this.channel.appendLine(text);
    if (this.logFile) {
      try {
        fs.appendFileSync(this.logFile, text + '\n');
      } catch {
        /* a debugging aid must never break the extension */
      }
    }
  }

  setConnections(list: ConnectionStatus[]): void {
    this.connections = list;
    this.render();
  }

  actionStarted(key: number, kind: string, summary: string): void {
    this.running.set(key, { kind, summary });
    this.render();
  }

  actionFinished(
    key: number,
    kind: string,
    summary: string,
    outcome: string,
    exitCode: number | undefined,
    ms: number,
  ): void {
    this.running.delete(key);
    const code = exitCode === undefined ? '' : ` exit ${exitCode}`;
    this.log(`${kind} ${JSON.stringify(short(summary, 120))} -> ${outcome}${code} (${ms} ms)`);
    this.render();
  }

  /** A backend of this window ended: the status bar says so (and how to start one) until one connects. */
  backendEnded(ended: Ended): void {
    this.ended = ended;
    this.render();
  }

  private render(): void {
    if (this.connections.some((c) => c.state === 'connected')) this.ended = undefined;
    const line = statusLine({
      connections: this.connections,
      latest: [...this.running.values()].pop(),
      runningCount: this.running.size,
      ended: this.ended,
      remote: vscode.env.remoteName,
    });
    this.item.text = line.text;
    this.item.tooltip = line.tooltip;
    this.item.backgroundColor = line.level
      ? new vscode.ThemeColor(
          line.level === 'error' ? 'statusBarItem.errorBackground' : 'statusBarItem.warningBackground',
        )
      : undefined;
  }

  show(): void {
    this.channel.show(true);
  }

  dispose(): void {
    this.item.dispose();
    this.channel.dispose();
  }
}
