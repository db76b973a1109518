// The trust rule for oh's directories and session files (src/owned.ts, docs/security.md §2 "a shared
// OH_HOME"), with real files. "Another user" is uid 65534 via chown when we are root, and group/other
// write bits (chmod) otherwise. Windows has no uid or mode bits: the rule is skipped there.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { Backoff } from '../src/backoff';
import { SessionManager } from '../src/manager';
import { checkOwned, checkParents, checkSessionsDir, readOwnedFile, UnsafePath } from '../src/owned';
import { readObservation, registerFrame } from '../src/protocol';
import { readSession, readSessions } from '../src/session';
import { FakeBackend } from './fakeBackend';

const posix = typeof process.getuid === 'function' && process.platform !== 'win32';
const root = posix && process.getuid!() === 0;
const OTHER = 65534;

let base: string;
let home: string; // the oh directory (OH_HOME)
let dir: string; // its sessions directory

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-owned-')));
  home = path.join(base, 'home');
  dir = path.join(home, 'sessions');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
});

afterEach(() => {
  fs.rmSync(base, { recursive: true, force: true });
});

const session = (id: string, workspace: string, port = 1, token = 'tok') =>
  JSON.stringify({
    instance_id: id,
    pid: 1001,
    start_time: 1,
    host: '127.0.0.1',
    port,
    url: '',
    workspace,
    token,
    protocol: 1,
  });

function writeSession(id: string, mode = 0o600, body = session(id, base)): string {
  const f = path.join(dir, `${id}.json`);
  fs.writeFileSync(f, body, { mode });
  fs.chmodSync(f, mode); // writeFileSync's mode is filtered by the umask
  return f;
}

function refusal(fn: () => unknown): UnsafePath {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof UnsafePath, `expected UnsafePath, got ${String(e)}`);
    return e;
  }
  assert.fail('expected a refusal');
}

async function readRefusal(p: string): Promise<UnsafePath> {
  try {
    await readOwnedFile(p, 'session file');
  } catch (e) {
    assert.ok(e instanceof UnsafePath, `expected UnsafePath, got ${String(e)}`);
    return e;
  }
  assert.fail(`expected ${p} to be refused`);
}

test(
  'own 0700 directories and 0600/0644 session files are trusted; missing ones are not refusals',
  { skip: !posix },
  async () => {
    assert.ok(checkOwned(dir, 'sessions directory'));
    checkSessionsDir(dir);
    checkSessionsDir(path.join(base, 'nowhere', 'sessions'));
    const f = writeSession('a1', 0o600);
    assert.equal(await readOwnedFile(f, 'session file'), session('a1', base));
    fs.chmodSync(f, 0o644); // readable by others is a confidentiality problem the CLI handles, not a planting one
    assert.ok(await readOwnedFile(f, 'session file'));
    assert.equal(await readOwnedFile(path.join(dir, 'missing.json'), 'session file'), null);
    assert.deepEqual(
      (await readSessions(dir)).map((s) => s.session.instance_id),
      ['a1'],
    );
  },
);

test(
  'a session file writable by group or others is refused, with the CLI wording and fix',
  { skip: !posix },
  async () => {
    for (const mode of [0o620, 0o602, 0o666]) {
      const f = writeSession('w1', mode);
      const e = await readRefusal(f);
      assert.equal(e.path, f);
      assert.match(
        e.message,
        new RegExp(
          `^refusing to use ${f}: this session file is writable by other users \\(mode 0${mode.toString(8)}\\)\\. Fix: chmod 600 `,
        ),
      );
      assert.match(e.fix, /oh token rotate/);
    }
  },
);

test('a session file owned by another user is refused', { skip: !root }, async () => {
  const f = writeSession('o1', 0o600);
  fs.chownSync(f, OTHER, OTHER);
  const e = await readRefusal(f);
  assert.match(e.problem, /^this session file is owned by uid 65534\b.*not by you \(uid 0\b/);
  assert.match(e.problem, /could have planted a token or session file/);
});

test(
  'a symlink, a FIFO or a directory named like a session file is refused (and the FIFO does not hang)',
  { skip: !posix },
  async () => {
    const target = path.join(base, 'elsewhere.json');
    fs.writeFileSync(target, session('l1', base), { mode: 0o600 });
    const link = path.join(dir, 'l1.json');
    fs.symlinkSync(target, link);
    const e = await readRefusal(link);
    assert.equal(e.problem, 'this session file is not a regular file (a symlink or something else)');
    assert.equal(e.fix, `remove it: rm ${link}`);
    fs.mkdirSync(path.join(dir, 'd1.json'));
    await readRefusal(path.join(dir, 'd1.json'));
    const { execFileSync } = await import('node:child_process');
    const fifo = path.join(dir, 'f1.json');
    execFileSync('mkfifo', [fifo]);
    await readRefusal(fifo);
  },
);

test('the sessions directory or the oh directory writable by others, or not ours, is refused', { skip: !posix }, () => {
  fs.chmodSync(dir, 0o770);
  let e = refusal(() => checkSessionsDir(dir));
  assert.equal(
    e.message,
    `refusing to use ${dir}: this sessions directory is writable by other users (mode 0770). Fix: chmod 700 ${dir}`,
  );
  fs.chmodSync(dir, 0o700);
  fs.chmodSync(home, 0o777);
  e = refusal(() => checkSessionsDir(dir));
  assert.equal(e.path, home);
  assert.match(e.problem, /^this oh directory is writable by other users \(mode 0777\)/);
  // A sticky world-writable directory is fine above the oh directory (/tmp), never as it.
  fs.chmodSync(home, 0o1777);
  refusal(() => checkSessionsDir(dir));
  fs.chmodSync(home, 0o700);
  checkSessionsDir(dir);
});

test(
  'directories above the oh directory: world-writable only with the sticky bit, owned by you or root',
  { skip: !posix },
  () => {
    fs.chmodSync(base, 0o777);
    const e = refusal(() => checkParents(home));
    assert.equal(
      e.message,
      `refusing to use ${home}: its parent directory ${base} is writable by everyone (mode 0777) without the sticky bit. Fix: chmod o-w ${base}, or keep oh's files elsewhere`,
    );
    refusal(() => checkSessionsDir(dir));
    fs.chmodSync(base, 0o1777);
    checkParents(home);
    checkSessionsDir(dir);
    fs.chmodSync(base, 0o700);
  },
);

test("another user's oh directory, sessions directory or parent directory is refused", { skip: !root }, () => {
  fs.chownSync(home, OTHER, OTHER);
  let e = refusal(() => checkSessionsDir(dir));
  assert.equal(e.path, home);
  assert.match(e.problem, /^this oh directory is owned by uid 65534/);
  assert.match(e.fix, /export OH_HOME=~\/\.oh/);
  fs.chownSync(home, 0, 0);
  fs.chownSync(dir, OTHER, OTHER);
  e = refusal(() => checkSessionsDir(dir));
  assert.equal(e.path, dir);
  fs.chownSync(dir, 0, 0);
  fs.chownSync(base, OTHER, OTHER);
  e = refusal(() => checkSessionsDir(dir));
  assert.match(e.problem, new RegExp(`^its parent directory ${base} is owned by uid 65534.*who could replace it$`));
  fs.chownSync(base, 0, 0);
});

test('readSessions/readSession skip refused files and report each refusal, never throw', { skip: !posix }, async () => {
  writeSession('good1');
  const planted = writeSession('bad1', 0o666);
  const refused: UnsafePath[] = [];
  const found = await readSessions(dir, (r) => refused.push(r));
  assert.deepEqual(
    found.map((s) => s.session.instance_id),
    ['good1'],
  );
  assert.deepEqual(
    refused.map((r) => r.path),
    [planted],
  );
  refused.length = 0;
  assert.equal(await readSession(dir, 'bad1', (r) => refused.push(r)), null);
  assert.equal(refused.length, 1);
  assert.ok(await readSession(dir, 'good1'));
  // A refused directory: nothing in it is read, not even the good file.
  fs.chmodSync(dir, 0o777);
  refused.length = 0;
  assert.deepEqual(await readSessions(dir, (r) => refused.push(r)), []);
  assert.equal(await readSession(dir, 'good1', (r) => refused.push(r)), null);
  assert.deepEqual(
    refused.map((r) => r.path),
    [dir, dir],
  );
});

test(
  'the manager never connects to a planted session, logs the refusal once, and connects once it is fixed',
  { skip: !posix },
  async () => {
    const backend = new FakeBackend();
    await backend.listen();
    const ws = path.join(base, 'ws');
    fs.mkdirSync(ws);
    const logs: string[] = [];
    const manager = new SessionManager({
      dir,
      folders: async () => [ws],
      registerFrame: (s) =>
        registerFrame({
          session: s.instance_id,
          workspaceFolders: [ws],
          editorName: 't',
          editorVersion: '1',
          editorPid: 1,
          extensionVersion: '0',
        }),
      handler: { execute: async (a) => readObservation(a.id, 'p', 'x') },
      log: (l) => logs.push(l),
      pidAlive: () => true,
      pollMs: 50,
      backoff: () => new Backoff(50, 200),
    });
    try {
      const f = writeSession('p1', 0o666, session('p1', ws, backend.port, backend.token));
      if (root) fs.chownSync(f, OTHER, OTHER); // as a real other user would leave it
      manager.start();
      await new Promise((r) => setTimeout(r, 500)); // ~10 polls
      assert.equal(backend.tcpConnects, 0, 'a planted session file must not be connected to');
      const refusals = logs.filter((l) => l.includes('refusing to use'));
      assert.equal(refusals.length, 1, `logged once, not every poll: ${JSON.stringify(logs)}`);
      assert.match(refusals[0], new RegExp(`^not connecting: refusing to use ${f}: .*Fix: `));
      const now = await manager.connectNow();
      assert.deepEqual(now.matched, []);
      assert.equal(now.refused.length, 1);
      // The user replaces it with a file of their own: connected.
      fs.rmSync(f);
      writeSession('p1', 0o600, session('p1', ws, backend.port, backend.token));
      await backend.until(() => backend.livePeers.length === 1, 3000, 'connection');
    } finally {
      manager.dispose();
      await backend.close();
    }
  },
);
