/**
 * What the user sees of the extension: a status bar item (not connected / connected to oh on port N /
 * running an action) that opens the log when clicked, and the "oh" output channel with one line
 * per connection change and per action (time, kind, summary, outcome, duration). Nothing here ever
 * receives the token.
 *
 * OH_VSCODE_LOG=<file> in the extension host's environment also appends the log lines to that
 * file: how the end-to-end test reads what the extension did, without scraping the UI.
 */
import * as fs from 'fs';
import * as vscode from 'vscode';
import { ConnectionStatus } from './manager';

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

  actionFinished(key: number, kind: string, summary: string, outcome: string, exitCode: number | undefined, ms: number): void {
    this.running.delete(key);
    const code = exitCode === undefined ? '' : ` exit ${exitCode}`;
    this.log(`${kind} ${JSON.stringify(short(summary, 120))} -> ${outcome}${code} (${ms} ms)`);
    this.render();
  }

  private render(): void {
    const connected = this.connections.filter((c) => c.state === 'connected');
    const latest = [...this.running.values()].pop();
    // oh and this extension from different releases, or refused (versions.ts): the fix stays visible here.
    const problem = this.connections.map((c) => c.problem).find((p) => p?.level === 'error') ?? this.connections.map((c) => c.problem).find((p) => p);
    this.item.backgroundColor = problem ? new vscode.ThemeColor(problem.level === 'error' ? 'statusBarItem.errorBackground' : 'statusBarItem.warningBackground') : undefined;
    if (problem && !latest && !connected.length) {
      this.item.text = '$(error) oh: version mismatch';
      this.item.tooltip = `${problem.text} Click to show the log.`;
    } else if (latest) {
      this.item.text = `$(sync~spin) oh: ${latest.kind} ${short(latest.summary, 40)}`;
      this.item.tooltip = `oh: the agent's ${latest.kind} action is running${this.running.size > 1 ? ` (+${this.running.size - 1} more)` : ''}. Click to show the log.`;
    } else if (connected.length) {
      this.item.text = `${problem ? '$(warning)' : '$(plug)'} oh :${connected.map((c) => c.port).join(',')}`;
      this.item.tooltip =
        'oh: connected to ' +
        connected.map((c) => `the backend on port ${c.port} (workspace ${c.workspace})`).join(', ') +
        '. ' + (problem ? problem.text + ' ' : '') + 'Click to show the log.';
    } else {
      const waiting = this.connections.length > 0;
      this.item.text = waiting ? '$(debug-disconnect) oh: reconnecting' : 'oh: idle';
      // A remote window (Remote-SSH, WSL, containers) runs this extension on the remote: oh must run there too.
      const remote = vscode.env.remoteName
        ? ` This window's extensions run on the remote (${vscode.env.remoteName}): install and start oh there, in this window's terminal (pipx install oh-editor-runtime).`
        : '';
      this.item.tooltip = waiting
        ? 'oh: a backend for this window exists but the connection is down; retrying. Click to show the log.'
        : `oh: not connected. Start a backend with \`oh start --runtime vscode\` in this workspace.${remote} Click to show the log.`;
    }
  }

  show(): void {
    this.channel.show(true);
  }

  dispose(): void {
    this.item.dispose();
    this.channel.dispose();
  }
}
