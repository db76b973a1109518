// Branch mode in the editor (docs/protocol.md §3.12): the rules, and executeBranch against a stand-in
// for VS Code's Git extension API object only. The stand-in runs real git in a temp repository, so
// every switch, stash and init really happens and is checked with git itself.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import {
  Ask,
  BranchArgs,
  decide,
  executeBranch,
  GitApiLike,
  GitHost,
  GitRepositoryLike,
  RepoState,
  uniqueName,
} from '../src/branch';
import { Action, parseAction, registerFrame } from '../src/protocol';

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@example.invalid',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@example.invalid',
};

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8' }).trim();
}

/** The Git extension's API object, as far as branch.ts uses it, backed by real git. */
function gitApi(calls: string[]): GitApiLike {
  const repoAt = (root: string): GitRepositoryLike => {
    const state = {
      HEAD: undefined as { name?: string } | undefined,
      workingTreeChanges: [] as string[],
      indexChanges: [] as string[],
      mergeChanges: [] as string[],
    };
    return {
      rootUri: { fsPath: root },
      state,
      async status() {
        const head = execFileSync('git', ['symbolic-ref', '--quiet', '--short', 'HEAD'], {
          cwd: root,
          encoding: 'utf8',
        }).trim();
        state.HEAD = { name: head };
        state.workingTreeChanges = git(root, 'status', '--porcelain').split('\n').filter(Boolean);
      },
      async getBranches() {
        return git(root, 'for-each-ref', '--format=%(refname:short)', 'refs/heads')
          .split('\n')
          .filter(Boolean)
          .map((name) => ({ name }));
      },
      async createBranch(name: string, checkout: boolean) {
        calls.push(`createBranch ${name} ${checkout}`);
        git(root, 'checkout', '-q', '-b', name);
      },
      async checkout(treeish: string) {
        calls.push(`checkout ${treeish}`);
        git(root, 'checkout', '-q', treeish);
      },
    };
  };
  const isRepo = (p: string) => fs.existsSync(path.join(p, '.git'));
  return {
    git: { path: 'git' },
    state: 'initialized',
    getRepository: (uri) =>
      isRepo((uri as { fsPath: string }).fsPath) ? repoAt((uri as { fsPath: string }).fsPath) : null,
    async init(uri) {
      const p = (uri as { fsPath: string }).fsPath;
      calls.push('init');
      git(p, 'init', '-q');
      return repoAt(p);
    },
  };
}

function hostFor(api: GitApiLike | undefined): GitHost {
  return {
    api: async () => api,
    uri: (fsPath) => ({ fsPath }),
    runGit: async (gitPath, args, cwd) => {
      execFileSync(gitPath, args, { cwd, env: GIT_ENV });
    },
  };
}

let ws: string;
let calls: string[];

beforeEach(() => {
  ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-branch-')));
  calls = [];
});

afterEach(() => fs.rmSync(ws, { recursive: true, force: true })); // ~30 repositories per run were left in /tmp

function repo(): void {
  git(ws, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(ws, 'README'), 'hello\n');
  git(ws, 'add', 'README');
  git(ws, 'commit', '-q', '-m', 'first');
}

function action(args: Partial<BranchArgs> = {}): Action {
  return parseAction({
    id: 7,
    action: 'branch',
    args: {
      name: 'oh/20261125-0800-coder',
      named: false,
      reuse: null,
      on_dirty: 'ask',
      on_not_git: 'ask',
      workspace: ws,
      ...args,
    },
    agent: { id: 'a1', name: 'coder', workdir: ws, shell: 'a1' },
  });
}

const never: Ask = async () => assert.fail('nobody should have been asked');

test('the editor advertises branch and parses the backend frame', () => {
  assert.ok(
    (
      registerFrame({
        session: null,
        workspaceFolders: [],
        editorName: 'x',
        editorVersion: '1',
        editorPid: 1,
        extensionVersion: '1',
      }).capabilities as string[]
    ).includes('branch'),
  );
  assert.equal(action().kind, 'branch');
});

test('decide: names are never clobbered; a named or reused branch is switched to', () => {
  const base: BranchArgs = {
    name: 'oh/x',
    named: false,
    reuse: null,
    on_dirty: 'ask',
    on_not_git: 'ask',
    workspace: ws,
  };
  const clean: RepoState = { isRepo: true, branch: 'main', dirty: false, branches: ['main', 'oh/x', 'oh/x-2'] };
  assert.equal(uniqueName('oh/x', new Set(['oh/x', 'oh/x-2'])), 'oh/x-3');
  assert.deepEqual(decide(clean, base), { target: 'oh/x-3', steps: ['create'] });
  assert.deepEqual(decide(clean, { ...base, named: true }), { target: 'oh/x', steps: ['switch'] });
  assert.deepEqual(decide(clean, { ...base, reuse: 'oh/x-2' }), { target: 'oh/x-2', steps: ['switch'] });
  assert.deepEqual(decide({ ...clean, branch: 'oh/x-2' }, { ...base, reuse: 'oh/x-2' }), {
    target: 'oh/x-2',
    steps: [],
  });
  assert.deepEqual(decide({ ...clean, dirty: true }, base), { steps: [], ask: 'dirty' });
  assert.deepEqual(decide({ ...clean, dirty: true }, base, 'stash'), { target: 'oh/x-3', steps: ['stash', 'create'] });
  assert.deepEqual(decide({ ...clean, dirty: true }, { ...base, on_dirty: 'carry' }), {
    target: 'oh/x-3',
    steps: ['create'],
  });
  assert.match(decide({ ...clean, dirty: true }, { ...base, on_dirty: 'abort' }).refuse ?? '', /--on-dirty stash/);
  assert.deepEqual(decide({ isRepo: false, dirty: false, branches: [] }, base), { steps: [], ask: 'not_git' });
  assert.deepEqual(decide({ isRepo: false, dirty: false, branches: [] }, base, 'init'), {
    target: 'oh/x',
    steps: ['init', 'create'],
  });
  assert.match(decide(clean, { ...base, name: 'bad..name' }).refuse ?? '', /not a valid git branch name/);
});

test('a clean repository: a new branch through the Git API, nobody asked', async () => {
  repo();
  const o = await executeBranch(action(), hostFor(gitApi(calls)), never);
  assert.equal(o.observation, 'branch');
  assert.deepEqual(calls, ['createBranch oh/20261125-0800-coder true']);
  assert.equal(git(ws, 'branch', '--show-current'), 'oh/20261125-0800-coder');
  const x = o.extras as Record<string, unknown>;
  assert.equal(x.branch, 'oh/20261125-0800-coder');
  assert.equal(x.previous, 'main');
  assert.equal(x.created, true);
});

test('a dirty tree asks with the choices; stash stashes, then switches', async () => {
  repo();
  fs.writeFileSync(path.join(ws, 'README'), 'user edit\n');
  const asked: string[][] = [];
  const o = await executeBranch(action(), hostFor(gitApi(calls)), async (text, _detail, choices) => {
    asked.push([text, ...choices.map((c) => c.key)]);
    return 'stash';
  });
  assert.deepEqual(asked, [[`oh: ${ws} has uncommitted changes`, 'stash', 'carry', 'nobranch']]);
  assert.equal(o.observation, 'branch');
  assert.equal((o.extras as Record<string, unknown>).stashed, true);
  assert.equal(fs.readFileSync(path.join(ws, 'README'), 'utf8'), 'hello\n');
  assert.match(git(ws, 'stash', 'list'), /oh: before switching to oh\/20261125-0800-coder/);
  assert.equal(git(ws, 'branch', '--show-current'), 'oh/20261125-0800-coder');
});

test('carry keeps the changes on the new branch', async () => {
  repo();
  fs.writeFileSync(path.join(ws, 'README'), 'user edit\n');
  const o = await executeBranch(action(), hostFor(gitApi(calls)), async () => 'carry');
  assert.equal((o.extras as Record<string, unknown>).carried, true);
  assert.equal(fs.readFileSync(path.join(ws, 'README'), 'utf8'), 'user edit\n');
  assert.equal(git(ws, 'branch', '--show-current'), 'oh/20261125-0800-coder');
});

test('closing the dialog cancels: BRANCH_FAILED and nothing changed', async () => {
  repo();
  fs.writeFileSync(path.join(ws, 'README'), 'user edit\n');
  const o = await executeBranch(action(), hostFor(gitApi(calls)), async () => undefined);
  assert.equal(o.observation, 'error');
  assert.equal((o.extras as Record<string, unknown>).error_id, 'BRANCH_FAILED');
  assert.match(String(o.content), /cancelled/);
  assert.deepEqual(calls, []);
  assert.equal(git(ws, 'branch', '--show-current'), 'main');
});

test("don't use a branch: branch mode is off, nothing changed", async () => {
  repo();
  fs.writeFileSync(path.join(ws, 'README'), 'user edit\n');
  const o = await executeBranch(action(), hostFor(gitApi(calls)), async () => 'nobranch');
  assert.equal(o.observation, 'branch');
  assert.deepEqual(o.extras, { off: true });
  assert.equal(git(ws, 'branch', '--show-current'), 'main');
});

test('a non-git folder: git init through the API, then the branch', async () => {
  fs.writeFileSync(path.join(ws, 'x.txt'), 'x\n');
  const o = await executeBranch(action(), hostFor(gitApi(calls)), async (_t, _d, choices) => {
    assert.deepEqual(
      choices.map((c) => c.key),
      ['init', 'nobranch'],
    );
    return 'init';
  });
  assert.deepEqual(calls, ['init', 'createBranch oh/20261125-0800-coder true']);
  assert.equal((o.extras as Record<string, unknown>).initialized, true);
  assert.equal(git(ws, 'branch', '--show-current'), 'oh/20261125-0800-coder');
});

test('on_not_git abort and a missing Git extension are BRANCH_FAILED', async () => {
  const refused = await executeBranch(action({ on_not_git: 'abort' }), hostFor(gitApi(calls)), never);
  assert.match(String(refused.content), /--git-init/);
  const none = await executeBranch(action(), hostFor(undefined), never);
  assert.equal((none.extras as Record<string, unknown>).error_id, 'BRANCH_FAILED');
  assert.match(String(none.content), /Git extension/);
  assert.equal(fs.existsSync(path.join(ws, '.git')), false);
});

test("a git failure is BRANCH_FAILED with git's reason", async () => {
  repo();
  const api = gitApi(calls);
  const real = api.getRepository.bind(api);
  api.getRepository = (uri) => {
    const r = real(uri)!;
    return {
      ...r,
      state: r.state,
      status: r.status,
      getBranches: r.getBranches,
      checkout: r.checkout,
      createBranch: async () => {
        throw Object.assign(new Error('Git error'), { stderr: 'fatal: cannot lock ref' });
      },
    };
  };
  const o = await executeBranch(action(), hostFor(api), never);
  assert.equal((o.extras as Record<string, unknown>).error_id, 'BRANCH_FAILED');
  assert.match(String(o.content), /could not create .*fatal: cannot lock ref/);
});

test("a branch frame for another folder than the backend's workspace is refused", async () => {
  repo();
  const o = await executeBranch(action(), hostFor(gitApi(calls)), never, '/somewhere/else');
  assert.equal((o.extras as Record<string, unknown>).error_id, 'PATH_DENIED');
  assert.deepEqual(calls, []);
  assert.equal(git(ws, 'branch', '--show-current'), 'main');
});

test('an answer that comes after the backend cancelled changes nothing', async () => {
  repo();
  fs.writeFileSync(path.join(ws, 'README'), 'user edit\n');
  const controller = new AbortController();
  const o = await executeBranch(
    action(),
    hostFor(gitApi(calls)),
    async () => {
      controller.abort(); // the deadline passed while the dialog was open
      return 'stash';
    },
    ws,
    controller.signal,
  );
  assert.equal((o.extras as Record<string, unknown>).error_id, 'BRANCH_FAILED');
  assert.deepEqual(calls, []);
  assert.equal(git(ws, 'stash', 'list'), '');
  assert.equal(git(ws, 'branch', '--show-current'), 'main');
});
