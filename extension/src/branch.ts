/**
 * Git-branch mode on the editor side (docs/protocol.md §3.12): the backend sends a `branch` frame
 * before an agent's first change; we put the workspace on the feature branch with VS Code's Git
 * extension (so the changes then sit in the Source Control view), asking the user with a modal when
 * the tree is dirty or the folder is not a git repository. Never a silent switch.
 *
 * `decide` mirrors src/oh/protocol/branch.py. No `vscode` import: the Git extension's API object and
 * the question are injected (extension.ts passes the real ones), so the rules are unit-tested.
 */

import { Action, branchObservation, errorObservation, JsonObject, Observation, ProtocolError } from './protocol';

export const ON_DIRTY = ['ask', 'stash', 'carry', 'abort'] as const;
export const ON_NOT_GIT = ['ask', 'init', 'abort'] as const;

/** The answers of the modal (the terminal prompt of `oh start` offers the same ones). Falling back to
 *  proposal mode ("review") is meant to become one more entry here. */
export const CHOICES: Record<string, string> = {
  stash: 'Stash changes and switch',
  carry: 'Carry changes to the branch',
  init: 'Run git init',
  nobranch: "Don't use a branch",
};

export interface BranchArgs {
  name: string;
  named: boolean;
  reuse: string | null;
  on_dirty: (typeof ON_DIRTY)[number];
  on_not_git: (typeof ON_NOT_GIT)[number];
  workspace: string;
}

export interface RepoState {
  isRepo: boolean;
  branch?: string; // undefined: detached
  dirty: boolean;
  branches: string[];
}

export interface Decision {
  target?: string;
  steps: ('init' | 'stash' | 'create' | 'switch')[];
  ask?: 'dirty' | 'not_git';
  refuse?: string;
  off?: boolean;
}

const NAME_OK = /^(?!\/)(?!.*\/\/)(?!.*\.\.)(?!.*@\{)(?!.*\.lock(\/|$))[A-Za-z0-9._/+-]{1,200}(?<![/.])$/;

export function validName(name: string): boolean {
  return NAME_OK.test(name) && !name.startsWith('-');
}

export function uniqueName(base: string, existing: Set<string>): string {
  if (!existing.has(base)) return base;
  let n = 2;
  while (existing.has(`${base}-${n}`)) n++;
  return `${base}-${n}`;
}

export function parseBranchArgs(a: JsonObject, cause: number): BranchArgs {
  const bad = (what: string) => new ProtocolError('BAD_REQUEST', `branch: ${what}`, cause);
  if (typeof a.name !== 'string' || a.name === '') throw bad('args.name must be a non-empty string.');
  if (typeof a.workspace !== 'string' || a.workspace === '') throw bad('args.workspace must be the backend workspace.');
  if (a.reuse !== undefined && a.reuse !== null && typeof a.reuse !== 'string')
    throw bad('args.reuse must be a string or null.');
  const onDirty = a.on_dirty ?? 'ask';
  const onNotGit = a.on_not_git ?? 'ask';
  if (!(ON_DIRTY as readonly unknown[]).includes(onDirty))
    throw bad(`args.on_dirty must be one of ${ON_DIRTY.join(', ')}.`);
  if (!(ON_NOT_GIT as readonly unknown[]).includes(onNotGit))
    throw bad(`args.on_not_git must be one of ${ON_NOT_GIT.join(', ')}.`);
  return {
    name: a.name,
    named: a.named === true,
    reuse: (a.reuse as string | null | undefined) ?? null,
    on_dirty: onDirty as BranchArgs['on_dirty'],
    on_not_git: onNotGit as BranchArgs['on_not_git'],
    workspace: a.workspace,
  };
}

const CANCELLED = 'The user cancelled the branch switch; the action was not executed and nothing changed.';
const NOT_GIT =
  'The workspace is not a git repository, so branch mode cannot put the changes on a branch; the action was not executed. ' +
  'Restart with `oh start --branch --git-init` (creates a repository), or without --branch.';
const DIRTY =
  'The workspace has uncommitted changes, so branch mode will not switch branches silently; the action was not executed. ' +
  'Restart with `oh start --branch --on-dirty stash` (stash them) or `--on-dirty carry` (take them to the new branch), or commit them first.';

/** What to do (mirror of protocol/branch.py `decide`); `answer` = the user's choice to an earlier `ask`. */
export function decide(state: RepoState, args: BranchArgs, answer?: string): Decision {
  const { name, reuse } = args;
  if (!validName(name))
    return { steps: [], refuse: `'${name}' is not a valid git branch name; choose another with --branch-name.` };
  let init = false;
  if (!state.isRepo) {
    const choice = answer ?? { init: 'init', abort: 'abort', ask: undefined }[args.on_not_git];
    if (choice === undefined) return { steps: [], ask: 'not_git' };
    if (choice !== 'init')
      return choice === 'nobranch'
        ? { steps: [], off: true }
        : { steps: [], refuse: choice === 'cancel' ? CANCELLED : NOT_GIT };
    init = true;
    state = { isRepo: true, dirty: false, branches: [] };
  }
  if (reuse && state.branch === reuse) return { target: reuse, steps: [] };
  if (args.named && state.branch === name) return { target: name, steps: [] };
  let target: string;
  let create: boolean;
  if (args.named && state.branches.includes(name)) [target, create] = [name, false];
  else if (reuse && state.branches.includes(reuse)) [target, create] = [reuse, false];
  else [target, create] = [uniqueName(name, new Set(state.branches)), true];
  let stash = false;
  if (state.dirty) {
    let choice = answer && ['stash', 'carry', 'nobranch', 'cancel'].includes(answer) ? answer : undefined;
    choice = choice ?? { stash: 'stash', carry: 'carry', abort: 'abort', ask: undefined }[args.on_dirty];
    if (choice === undefined) return { steps: [], ask: 'dirty' };
    if (choice !== 'stash' && choice !== 'carry') {
      return choice === 'nobranch'
        ? { steps: [], off: true }
        : { steps: [], refuse: choice === 'cancel' ? CANCELLED : DIRTY };
    }
    stash = choice === 'stash';
  }
  const steps: Decision['steps'] = [];
  if (init) steps.push('init');
  if (stash) steps.push('stash');
  steps.push(create ? 'create' : 'switch');
  return { target, steps };
}

export function questionText(
  question: 'dirty' | 'not_git',
  workspace: string,
): { text: string; detail: string; choices: string[] } {
  if (question === 'not_git') {
    return {
      text: `oh: ${workspace} is not a git repository`,
      detail:
        "Branch mode puts the agent's changes on a new git branch, which needs a repository. Cancel refuses the agent's action.",
      choices: ['init', 'nobranch'],
    };
  }
  return {
    text: `oh: ${workspace} has uncommitted changes`,
    detail:
      "Branch mode switches to a new branch before the agent's first change. Stash keeps your changes in `git stash`; carry takes them " +
      "along to the new branch. Cancel refuses the agent's action.",
    choices: ['stash', 'carry', 'nobranch'],
  };
}

// ------------------------------------------------------------------------------------------------
// The Git extension's API (extensions/git/src/api/git.d.ts), only the parts we use.

export interface GitRepositoryLike {
  readonly rootUri: { fsPath: string };
  readonly state: {
    readonly HEAD?: { name?: string };
    readonly workingTreeChanges: readonly unknown[];
    readonly indexChanges: readonly unknown[];
    readonly mergeChanges: readonly unknown[];
    readonly untrackedChanges?: readonly unknown[];
  };
  status(): Promise<void>;
  getBranches(query: { remote?: boolean }): Promise<{ name?: string }[]>;
  createBranch(name: string, checkout: boolean, ref?: string): Promise<void>;
  checkout(treeish: string): Promise<void>;
}

export interface GitApiLike {
  readonly git: { readonly path: string };
  readonly state?: string;
  getRepository(uri: unknown): GitRepositoryLike | null;
  openRepository?(root: unknown): Promise<GitRepositoryLike | null>;
  init(root: unknown): Promise<GitRepositoryLike | null | undefined>;
}

export interface GitHost {
  api: () => Promise<GitApiLike | undefined>;
  /** `vscode.Uri.file` (a Uri is what the API wants). */
  uri: (fsPath: string) => unknown;
  /** Runs the Git extension's git binary (its API has no stash creation). */
  runGit: (gitPath: string, args: string[], cwd: string) => Promise<void>;
}

export type Ask = (
  text: string,
  detail: string,
  choices: { key: string; label: string }[],
) => Promise<string | undefined>;

async function repoFor(api: GitApiLike, host: GitHost, ws: string): Promise<GitRepositoryLike | null> {
  const uri = host.uri(ws);
  return api.getRepository(uri) ?? (api.openRepository ? await api.openRepository(uri) : null);
}

async function inspect(repo: GitRepositoryLike | null): Promise<RepoState> {
  if (!repo) return { isRepo: false, dirty: false, branches: [] };
  await repo.status(); // the extension's view may lag behind the disk (e.g. the user just saved)
  const s = repo.state;
  const dirty = [s.workingTreeChanges, s.indexChanges, s.mergeChanges, s.untrackedChanges ?? []].some(
    (c) => c.length > 0,
  );
  const branches = (await repo.getBranches({ remote: false })).map((r) => r.name).filter((n): n is string => !!n);
  return { isRepo: true, branch: s.HEAD?.name, dirty, branches };
}

function fail(action: Action, message: string): Observation {
  return errorObservation(action.id, 'BRANCH_FAILED', message);
}

/** Only the workspace the backend registered with is ours to switch (defence in depth). */
function notOurs(action: Action, workspace: string, backendWorkspace?: string): Observation | null {
  if (!backendWorkspace || workspace === backendWorkspace) return null;
  return errorObservation(
    action.id,
    'PATH_DENIED',
    `branch: ${workspace} is not the backend's workspace ${backendWorkspace}; nothing was done.`,
  );
}

/** The decision, asking the user as often as it needs an answer (no answer: cancel). */
async function decideAsking(
  state: Parameters<typeof decide>[0],
  args: Parameters<typeof decide>[1],
  ws: string,
  ask: Ask,
): Promise<ReturnType<typeof decide>> {
  let decision = decide(state, args);
  while (decision.ask) {
    const q = questionText(decision.ask, ws);
    const key = await ask(
      q.text,
      q.detail,
      q.choices.map((k) => ({ key: k, label: CHOICES[k] })),
    );
    decision = decide(state, args, key ?? 'cancel');
  }
  return decision;
}

/** The `branch` action: inspect, ask when needed, carry out the steps through the Git extension. */
export async function executeBranch(
  action: Action,
  host: GitHost,
  ask: Ask,
  backendWorkspace?: string,
  signal?: AbortSignal,
): Promise<Observation> {
  const args = parseBranchArgs(action.args, action.id);
  const foreign = notOurs(action, args.workspace, backendWorkspace);
  if (foreign) return foreign;
  const api = await host.api();
  if (!api) {
    return fail(
      action,
      "VS Code's Git extension (vscode.git) is not available (disabled, or git is not installed), so branch mode cannot switch branches; the action was not executed.",
    );
  }
  const ws = args.workspace;
  let repo = await repoFor(api, host, ws);
  const state = await inspect(repo);
  const decision = await decideAsking(state, args, ws, ask);
  if (signal?.aborted) {
    // The backend gave up meanwhile (deadline, agent gone) and told the agent the action did not run:
    // an answer clicked after that must not switch branches behind its back.
    return fail(action, 'The branch question was answered after the action had been cancelled; nothing was changed.');
  }
  if (decision.off) {
    return branchObservation(action.id, 'Branch mode is off for this session: the user chose not to use a branch.', {
      off: true,
    });
  }
  if (decision.refuse) return fail(action, decision.refuse);
  const target = decision.target!;
  const result: JsonObject = {
    branch: target,
    previous: state.isRepo ? (state.branch ?? null) : null,
    created: false,
    switched: false,
    stashed: false,
    carried: false,
    initialized: false,
  };
  let step = '';
  try {
    for (step of decision.steps) {
      if (step === 'init') {
        repo = (await api.init(host.uri(ws))) ?? (await repoFor(api, host, ws));
        if (!repo)
          return fail(
            action,
            `git init in ${ws} did not give a repository the Git extension opened; the action was not executed.`,
          );
        result.initialized = true;
      } else if (step === 'stash') {
        await host.runGit(
          api.git.path,
          ['stash', 'push', '--include-untracked', '--quiet', '--message', `oh: before switching to ${target}`],
          repo!.rootUri.fsPath,
        );
        result.stashed = true;
      } else if (step === 'create') {
        await repo!.createBranch(target, true); // git checkout -b: keeps uncommitted changes ("carry")
        result.created = result.switched = true;
      } else {
        await repo!.checkout(target);
        result.switched = true;
      }
    }
  } catch (e) {
    const why = e instanceof Error ? (((e as { stderr?: string }).stderr || e.message) ?? '').trim() : String(e);
    return fail(action, `Branch mode could not ${step} (${target}): ${why.slice(0, 400)} The action was not executed.`);
  }
  result.carried = state.dirty && !result.stashed && !result.initialized;
  await repo?.status().catch(() => undefined); // the Source Control view shows the new branch at once
  return branchObservation(action.id, `On git branch ${target}.`, result);
}
