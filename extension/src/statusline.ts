/**
 * What the status bar item says (./ui.ts shows it): what is connected (the workspace's name, not a port),
 * the action that runs, a version problem, or -- issue 42 -- that the backend ended and how to start it
 * again, instead of quietly returning to `oh: idle`. Pure, so it is unit-tested.
 */
import * as path from 'path';
import { ConnectionStatus } from './manager';

export interface Ended {
  workspace: string;
  pid: number;
}

export interface StatusInput {
  connections: ConnectionStatus[];
  /** The latest running action, and how many run. */
  latest?: { kind: string; summary: string };
  runningCount: number;
  /** The last backend of this window that ended (cleared when one connects). */
  ended?: Ended;
  /** VS Code's remote name (Remote-SSH, WSL, containers), if any. */
  remote?: string;
}

export interface StatusLine {
  text: string;
  tooltip: string;
  level?: 'error' | 'warning';
}

function short(text: string, n: number): string {
  return text.length <= n ? text : text.slice(0, n - 1) + '…';
}

const START = 'oh start --runtime vscode';

export function statusLine(s: StatusInput): StatusLine {
  const connected = s.connections.filter((c) => c.state === 'connected');
  // oh and this extension from different releases, or refused (versions.ts): the fix stays visible here.
  const problem =
    s.connections.map((c) => c.problem).find((p) => p?.level === 'error') ??
    s.connections.map((c) => c.problem).find((p) => p);
  const level = problem?.level === 'error' ? 'error' : problem ? 'warning' : undefined;
  if (problem && !s.latest && !connected.length) {
    return { text: '$(error) oh: version mismatch', tooltip: `${problem.text} Click to show the log.`, level };
  }
  if (s.latest) {
    // Paths in the workspace read relative to it (issue 42: absolute paths filled the item).
    let summary = s.latest.summary;
    for (const c of s.connections) {
      const base = c.workspace.replace(/\/+$/, '');
      if (base) summary = summary.split(base + '/').join('');
    }
    const more = s.runningCount > 1 ? ` (+${s.runningCount - 1} more)` : '';
    return {
      text: `$(sync~spin) oh: ${s.latest.kind} ${short(summary, 40)}`,
      tooltip: `oh: the agent's ${s.latest.kind} action is running${more}. Click to show the log.`,
      level,
    };
  }
  if (connected.length) {
    const names = connected.map((c) => path.basename(c.workspace) || c.workspace);
    return {
      text: `${problem ? '$(warning)' : '$(plug)'} oh: connected to ${short(names.join(', '), 40)}`,
      tooltip:
        'oh: this window runs the actions of agents using ' +
        connected.map((c) => `the oh backend for ${c.workspace} (port ${c.port})`).join(', ') +
        '. ' +
        (problem ? problem.text + ' ' : '') +
        'Click to show the log.',
      level,
    };
  }
  if (s.connections.length) {
    return {
      text: '$(debug-disconnect) oh: reconnecting',
      tooltip: 'oh: a backend for this window exists but the connection is down; retrying. Click to show the log.',
      level,
    };
  }
  // A remote window (Remote-SSH, WSL, containers) runs this extension on the remote: oh must run there too.
  const remote = s.remote
    ? ` This window's extensions run on the remote (${s.remote}): install and start oh there, in this window's terminal (pipx install oh-editor-runtime).`
    : '';
  if (s.ended) {
    return {
      text: '$(debug-disconnect) oh: backend ended',
      tooltip: `oh: the backend for ${s.ended.workspace} ended (pid ${s.ended.pid}); agents cannot act here until one runs again. Start it in this workspace: \`${START}\`.${remote} Click to show the log.`,
      level: 'warning',
    };
  }
  return {
    text: 'oh: idle',
    tooltip: `oh: not connected. Start a backend with \`${START}\` in this workspace.${remote} Click to show the log.`,
  };
}
