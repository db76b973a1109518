/**
 * The real collaborators of branch.ts: VS Code's Git extension API, a modal question, and the git
 * binary the Git extension itself uses (for `git stash push`, which its API does not offer).
 */
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import { Ask, GitApiLike, GitHost } from './branch';

const GIT_TIMEOUT_MS = 30_000;
const API_READY_MS = 10_000;

async function gitApi(): Promise<GitApiLike | undefined> {
  const ext = vscode.extensions.getExtension<{
    getAPI(version: 1): GitApiLike & { onDidChangeState?: vscode.Event<string> };
  }>('vscode.git');
  if (!ext) return undefined;
  const exports = ext.isActive ? ext.exports : await ext.activate();
  const api = exports?.getAPI(1);
  if (!api) return undefined;
  if (api.state !== 'initialized' && api.onDidChangeState) {
    // Right after the window opens the Git extension may still be scanning: wait a bounded while.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        sub.dispose();
        resolve();
      }, API_READY_MS);
      const sub = api.onDidChangeState!((s) => {
        if (s === 'initialized') {
          clearTimeout(timer);
          sub.dispose();
          resolve();
        }
      });
    });
  }
  return api;
}

export const gitHost: GitHost = {
  api: gitApi,
  uri: (fsPath) => vscode.Uri.file(fsPath),
  runGit: (gitPath, args, cwd) =>
    new Promise((resolve, reject) => {
      execFile(
        gitPath || 'git',
        args,
        { cwd, timeout: GIT_TIMEOUT_MS, env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } },
        (err, _out, stderr) => {
          if (err) reject(Object.assign(err, { stderr: String(stderr) }));
          else resolve();
        },
      );
    }),
};

/** A modal: the user must answer before the agent's change goes ahead; closing it is "cancel". */
export const askModal: Ask = async (text, detail, choices) => {
  const picked = await vscode.window.showWarningMessage(text, { modal: true, detail }, ...choices.map((c) => c.label));
  return choices.find((c) => c.label === picked)?.key;
};
