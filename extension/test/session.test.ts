// Session discovery (protocol.md §7): directory rule, file parsing, matching, liveness; and backoff.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { Backoff } from '../src/backoff';
import {
  linuxProcessStartTime,
  parseSession,
  pathContains,
  pidAlive,
  readSessions,
  sessionsDir,
  sessionTargets,
} from '../src/session';

test('sessions directory: OH_HOME first, then the platform state dir', () => {
  assert.equal(sessionsDir({ OH_HOME: '/x/oh' }, 'linux', '/home/u'), '/x/oh/sessions');
  assert.equal(sessionsDir({ OH_HOME: '~/oh' }, 'linux', '/home/u'), '/home/u/oh/sessions');
  assert.equal(sessionsDir({}, 'linux', '/home/u'), '/home/u/.local/state/oh/sessions');
  assert.equal(sessionsDir({ XDG_STATE_HOME: '/st' }, 'linux', '/home/u'), '/st/oh/sessions');
  assert.equal(sessionsDir({ XDG_STATE_HOME: 'relative' }, 'linux', '/home/u'), '/home/u/.local/state/oh/sessions');
  assert.equal(sessionsDir({}, 'darwin', '/Users/u'), '/Users/u/Library/Application Support/oh/sessions');
  assert.equal(
    sessionsDir({ LOCALAPPDATA: 'C:\\Users\\u\\AppData\\Local' }, 'win32', 'C:\\Users\\u'),
    'C:\\Users\\u\\AppData\\Local\\oh\\sessions',
  );
});

const valid = {
  instance_id: '7f3c9a1b2d4e',
  pid: 1234,
  start_time: 1763890000.12,
  host: '127.0.0.1',
  port: 45123,
  url: 'ws://127.0.0.1:45123',
  runtime: 'vscode',
  workspace: '/real/path',
  token: 'tok',
  protocol: 1,
  oh_version: '0.1.0',
  started_at: '2026-11-23T10:00:00+00:00',
  trace: '/t.jsonl',
  editor_timeout: 30.0,
};

test('session files: the documented shape parses, broken ones do not', () => {
  const s = parseSession(JSON.stringify(valid));
  assert.ok(s);
  assert.equal(s.url, 'ws://127.0.0.1:45123');
  assert.equal(s.workspace, '/real/path');
  assert.equal(parseSession('{"instance_id": "a", "pid"'), null); // partial write
  assert.equal(parseSession('[]'), null);
  for (const [k, v] of Object.entries({
    pid: '1',
    port: 0,
    token: '',
    workspace: 3,
    instance_id: '../x',
    host: '10.0.0.1',
  })) {
    assert.equal(parseSession(JSON.stringify({ ...valid, [k]: v })), null, k);
  }
  assert.equal(parseSession(JSON.stringify({ ...valid, host: '::1' }))?.url, 'ws://[::1]:45123');
  assert.equal(parseSession(JSON.stringify({ ...valid, host: '127.0.0.2' }))?.url, 'ws://127.0.0.2:45123');
  assert.equal(parseSession(JSON.stringify({ ...valid, host: '127.0.0.256' })), null);
  assert.equal(parseSession(JSON.stringify({ ...valid, host: '127.0.0.1.evil.com' })), null);
});

test('path containment never confuses siblings sharing a prefix', () => {
  assert.ok(pathContains('/work/a', '/work/a', 'linux'));
  assert.ok(pathContains('/work/a', '/work/a/b/c', 'linux'));
  assert.ok(pathContains('/work/a/', '/work/a/b', 'linux'));
  assert.ok(!pathContains('/work/a', '/work/ab', 'linux'));
  assert.ok(!pathContains('/work/a/b', '/work/a', 'linux'));
  assert.ok(pathContains('/', '/anything', 'linux'));
  assert.ok(!pathContains('/Work/A', '/work/a/b', 'linux'));
  assert.ok(pathContains('/Work/A', '/work/a/b', 'darwin'));
  assert.ok(pathContains('C:\\Repo', 'c:/repo/sub', 'win32'));
  assert.ok(!pathContains('C:\\Repo', 'C:\\Repo2', 'win32'));
});

test('a session targets a window when its workspace is a folder or inside one (multi-root)', () => {
  const folders = ['/w/front', '/w/back'];
  assert.ok(sessionTargets('/w/back', folders, 'linux'));
  assert.ok(sessionTargets('/w/front/pkg', folders, 'linux'));
  assert.ok(!sessionTargets('/w', folders, 'linux')); // a parent of the folders is another workspace
  assert.ok(!sessionTargets('/w/frontend', folders, 'linux'));
  assert.ok(!sessionTargets('/w/back', [], 'linux'));
});

test('pid liveness: ours is alive, a dead one is not, a reused pid is told apart by start time', () => {
  assert.ok(pidAlive(process.pid));
  assert.ok(!pidAlive(0));
  assert.ok(!pidAlive(-5));
  assert.ok(!pidAlive(2 ** 22 + 12345)); // above pid_max
  if (process.platform === 'linux') {
    const start = linuxProcessStartTime(process.pid);
    assert.ok(start !== null && Math.abs(start - (Date.now() / 1000 - process.uptime())) < 2, `start ${start}`);
    assert.ok(pidAlive(process.pid, start!));
    assert.ok(pidAlive(process.pid, start! + 0.5));
    assert.ok(!pidAlive(process.pid, start! - 3600));
  }
});

test('readSessions skips temp files, dotfiles and files whose name is not their id', async () => {
  // Not directly in /tmp: that would make /tmp the oh directory, which the trust rule refuses (src/owned.ts).
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'oh-sessions-'));
  const dir = path.join(home, 'sessions');
  fs.mkdirSync(dir);
  try {
    fs.writeFileSync(path.join(dir, `${valid.instance_id}.json`), JSON.stringify(valid));
    fs.writeFileSync(path.join(dir, `.${valid.instance_id}.json.123.tmp`), JSON.stringify(valid));
    fs.writeFileSync(path.join(dir, '.abc.lock'), '');
    fs.writeFileSync(path.join(dir, 'other.json'), JSON.stringify(valid));
    fs.writeFileSync(path.join(dir, 'garbage.json'), '{');
    const found = await readSessions(dir);
    assert.deepEqual(
      found.map((f) => f.session.instance_id),
      [valid.instance_id],
    );
    assert.deepEqual(await readSessions(path.join(dir, 'missing')), []);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('backoff: 0.25 s doubling to 5 s, reset after success', () => {
  const b = new Backoff();
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7, 8].map(() => b.next()),
    [250, 500, 1000, 2000, 4000, 5000, 5000, 5000],
  );
  b.reset();
  assert.equal(b.next(), 250);
});

test('connect URI: /connect with an optional session id, nothing else', async () => {
  const { parseConnectUri } = await import('../src/uri');
  assert.deepEqual(parseConnectUri('/connect', 'session=7f3c9a1b2d4e'), { session: '7f3c9a1b2d4e' });
  assert.deepEqual(parseConnectUri('/connect/', ''), {});
  assert.equal(parseConnectUri('/other', 'session=x'), null);
  assert.equal(parseConnectUri('/connect', 'session=../../etc'), null);
});

test('a process cwd comes from the kernel on Linux', async () => {
  const { processCwd } = await import('../src/procs');
  if (process.platform === 'linux') assert.equal(processCwd(process.pid), fs.realpathSync(process.cwd()));
  else assert.equal(processCwd(process.pid), null);
  assert.equal(processCwd(2 ** 22 + 12345), null);
});

test('a zombie backend pid is dead (issue 9 #13)', { skip: process.platform !== 'linux' }, async () => {
  // `sh` starts a short child and then becomes `sleep`, which never reaps it: the child stays a
  // zombie (state Z) while the sleep lasts, exactly like a kill -9'd backend under a non-reaping PID 1.
  const { spawn } = await import('node:child_process');
  const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 20'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const zpid = await new Promise<number>((resolve) =>
      parent.stdout!.once('data', (d) => resolve(Number(String(d).trim()))),
    );
    const { linuxProcessState } = await import('../src/session');
    const deadline = Date.now() + 5000;
    while (linuxProcessState(zpid) !== 'Z' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(linuxProcessState(zpid), 'Z');
    assert.equal(pidAlive(zpid), false);
    assert.equal(pidAlive(zpid, Date.now() / 1000), false);
  } finally {
    parent.kill('SIGKILL');
  }
});
