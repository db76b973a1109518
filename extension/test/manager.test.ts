// On-demand connection management with real session files and a real WebSocket server.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { Backoff } from '../src/backoff';
import { SessionManager } from '../src/manager';
import { readObservation, registerFrame } from '../src/protocol';
import { FakeBackend } from './fakeBackend';

let base: string;
let dir: string;
let ws: string;
let backend: FakeBackend;
let manager: SessionManager | null;
let logs: string[];
let alive: Set<number>;

beforeEach(async () => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-mgr-')));
  dir = path.join(base, 'home', 'sessions'); // does not exist yet: the watcher must cope
  ws = path.join(base, 'ws');
  fs.mkdirSync(path.join(ws, 'pkg'), { recursive: true });
  fs.mkdirSync(path.join(base, 'other'));
  backend = new FakeBackend();
  await backend.listen();
  logs = [];
  alive = new Set([1001]);
  manager = null;
});

afterEach(async () => {
  manager?.dispose();
  await backend.close();
  fs.rmSync(base, { recursive: true, force: true });
});

function start(folders = [ws]): SessionManager {
  manager = new SessionManager({
    dir,
    folders: async () => folders,
    registerFrame: (s) =>
      registerFrame({
        session: s.instance_id,
        workspaceFolders: folders,
        editorName: 't',
        editorVersion: '1',
        editorPid: 1,
        extensionVersion: '0',
      }),
    handler: { execute: async (a) => readObservation(a.id, 'p', 'x') },
    log: (l) => logs.push(l),
    pidAlive: (pid) => alive.has(pid),
    pollMs: 100,
    backoff: () => new Backoff(50, 200),
  });
  manager.start();
  return manager;
}

function writeSession(id: string, workspace: string, extra: Record<string, unknown> = {}): void {
  fs.mkdirSync(dir, { recursive: true });
  const body = {
    instance_id: id,
    pid: 1001,
    start_time: 1,
    host: '127.0.0.1',
    port: backend.port,
    url: '',
    workspace,
    token: backend.token,
    protocol: 1,
    ...extra,
  };
  const tmp = path.join(dir, `.${id}.tmp`);
  fs.writeFileSync(tmp, JSON.stringify(body));
  fs.renameSync(tmp, path.join(dir, `${id}.json`)); // atomic, as the backend writes it
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('no session, or a session for another workspace: no network at all', async () => {
  start();
  await sleep(300);
  writeSession('other1', path.join(base, 'other'));
  writeSession('parent1', base); // a parent of the folder is not this window's workspace
  await sleep(400);
  assert.equal(backend.tcpConnects, 0);
});

test('a live session for this window (or inside a folder) connects; removing its file disconnects', async () => {
  start();
  await sleep(150);
  writeSession('s1', path.join(ws, 'pkg'));
  await backend.until(() => backend.livePeers.length === 1, 3000, 'connection');
  assert.equal(backend.peers[0].register.session, 's1');
  await backend.until(() => manager!.status()[0]?.state === 'connected', 3000, 'registered state');
  fs.unlinkSync(path.join(dir, 's1.json'));
  await backend.until(() => backend.livePeers.length === 0, 3000, 'disconnect');
  const connects = backend.tcpConnects;
  await sleep(400);
  assert.equal(backend.tcpConnects, connects, 'no reconnect after the session ended');
});

test('a session that exists before activation is connected by the first scan', async () => {
  writeSession('early', ws);
  start();
  await backend.until(() => backend.livePeers.length === 1, 3000, 'connection');
});

test('a dead pid is not connected to, and a pid dying disconnects', async () => {
  start();
  writeSession('s2', ws, { pid: 4242 });
  await sleep(400);
  assert.equal(backend.tcpConnects, 0);
  alive.add(4242);
  await backend.until(() => backend.livePeers.length === 1, 3000, 'connection');
  alive.delete(4242);
  await backend.until(() => backend.livePeers.length === 0, 3000, 'disconnect');
});

test('a dropped connection is retried with backoff while the session lasts', async () => {
  start();
  writeSession('s3', ws);
  await backend.until(() => backend.livePeers.length === 1, 3000, 'connection');
  backend.peers[0].ws.terminate();
  await backend.until(() => backend.livePeers.length === 1 && backend.peers.length === 2, 3000, 'reconnection');
});

test('close 4001 (token rotated): re-read the session file and reconnect at once with the new token', async () => {
  start();
  writeSession('s4', ws);
  await backend.until(() => backend.livePeers.length === 1, 3000, 'connection');
  backend.token = 'rotated-token-abcdef';
  writeSession('s4', ws);
  const t0 = Date.now();
  backend.peers[0].ws.close(4001, 'token rotated');
  await backend.until(() => backend.livePeers.length === 1 && backend.peers.length === 2, 3000, 'reconnection');
  assert.equal(backend.peers[1].headers.authorization, 'Bearer rotated-token-abcdef');
  assert.ok(Date.now() - t0 < 1000, `reconnected in ${Date.now() - t0} ms`);
  assert.ok(!logs.join('\n').includes('rotated-token-abcdef'), 'the token is never logged');
});

test('close 1001 (backend shutting down): no new connection, even while the file still exists', async () => {
  start();
  writeSession('s5', ws);
  await backend.until(() => backend.livePeers.length === 1, 3000, 'connection');
  const connects = backend.tcpConnects;
  backend.peers[0].ws.close(1001, 'backend shutting down');
  await sleep(700);
  assert.equal(backend.tcpConnects, connects);
  assert.ok(logs.some((l) => l.includes('1001')));
  // a new backend process behind the same file is a new session
  alive.add(2002);
  writeSession('s5', ws, { pid: 2002 });
  await backend.until(() => backend.livePeers.length === 1, 3000, 'connection to the new backend');
});

test('disconnect command stays disconnected; connect command comes back', async () => {
  const m = start();
  writeSession('s6', ws);
  await backend.until(() => backend.livePeers.length === 1, 3000, 'connection');
  assert.equal(m.disconnectAll(), 1);
  await backend.until(() => backend.livePeers.length === 0, 3000, 'disconnect');
  const connects = backend.tcpConnects;
  await sleep(400);
  assert.equal(backend.tcpConnects, connects);
  const { matched } = await m.connectNow();
  assert.deepEqual(
    matched.map((s) => s.instance_id),
    ['s6'],
  );
  await backend.until(() => backend.livePeers.length === 1, 3000, 'reconnection');
});

test('connectNow with an id of another workspace reports it and connects nothing', async () => {
  const m = start();
  writeSession('far', path.join(base, 'other'));
  const r = await m.connectNow('far');
  assert.deepEqual(r.matched, []);
  assert.deepEqual(
    r.elsewhere.map((s) => s.instance_id),
    ['far'],
  );
  await sleep(200);
  assert.equal(backend.tcpConnects, 0);
});

test('multi-root: a session in the second folder connects', async () => {
  const second = path.join(base, 'other');
  start([ws, second]);
  writeSession('s7', second);
  await backend.until(() => backend.livePeers.length === 1, 3000, 'connection');
  assert.deepEqual(backend.peers[0].register.workspace_folders, [ws, second]);
});

test('a backend that dies mid-command is reported gone (its terminals are orphans); a live one is not (issue 9 #15)', async () => {
  const gone: string[] = [];
  manager = new SessionManager({
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
    pidAlive: (pid) => alive.has(pid),
    onBackendGone: (key) => gone.push(key),
    pollMs: 100,
    backoff: () => new Backoff(50, 200),
  });
  manager.start();
  writeSession('g1', ws, { pid: 5151 });
  alive.add(5151);
  await backend.until(() => backend.livePeers.length === 1, 3000, 'connection');
  backend.peers[0].ws.terminate(); // a transient drop: retried, not gone
  await backend.until(() => backend.livePeers.length === 1 && backend.peers.length === 2, 3000, 'reconnection');
  assert.deepEqual(gone, []);
  alive.delete(5151); // kill -9: the connection drops and the pid is dead
  backend.peers[1].ws.terminate();
  await backend.until(() => gone.length > 0, 3000, 'the gone report');
  assert.equal(gone[0], `g1:5151:1:${backend.port}`);
});

// Versions (issue 20, versions.ts): the backend's verdict reaches the status (status bar) and ONE notification.
function startWithWarn(warned: string[]): SessionManager {
  manager = new SessionManager({
    dir,
    folders: async () => [ws],
    registerFrame: (s) =>
      registerFrame({
        session: s.instance_id,
        workspaceFolders: [ws],
        editorName: 't',
        editorVersion: '1',
        editorPid: 1,
        extensionVersion: '0.1.0',
      }),
    handler: { execute: async (a) => readObservation(a.id, 'p', 'x') },
    log: (l) => logs.push(l),
    warn: (m) => warned.push(m),
    extensionVersion: '0.1.0',
    pidAlive: (pid) => alive.has(pid),
    pollMs: 100,
    backoff: () => new Backoff(50, 200),
  });
  manager.start();
  return manager;
}

test('a backend of another release: connected, with the warning in the status and one notification', async () => {
  backend.registerAnswer = (f) => ({
    type: 'registered',
    editor_id: 'e1',
    instance_id: String(f.session),
    protocol: 1,
    workspace: ws,
    oh_version: '0.2.0',
    protocol_range: [1, 1],
    version_check: {
      status: 'warn',
      message: 'oh 0.2.0 and the oh extension 0.1.0 are from different releases.',
      fix: 'Run `oh vscode install`.',
    },
  });
  const warned: string[] = [];
  startWithWarn(warned);
  writeSession('v1', ws);
  await backend.until(() => manager!.status()[0]?.state === 'connected', 3000, 'registered');
  assert.equal(manager!.status()[0].problem?.level, 'warn');
  assert.deepEqual(warned, [
    'oh: oh 0.2.0 and the oh extension 0.1.0 are from different releases. Fix: Run `oh vscode install`.',
  ]);
  backend.livePeers[0].ws.close(1011, 'drop'); // a reconnect to the same backend does not notify again
  await backend.until(
    () => backend.peers.length === 2 && manager!.status()[0]?.state === 'connected',
    3000,
    'reconnected',
  );
  assert.equal(warned.length, 1);
});

test('a refused registration (PROTOCOL_MISMATCH): state refused, the fix in the status and one notification, no retry', async () => {
  backend.registerAnswer = () => ({
    type: 'error',
    error_id: 'PROTOCOL_MISMATCH',
    message: 'oh 0.1.0 is too old for the oh extension 9.0.0. Fix: Upgrade oh.',
  });
  const warned: string[] = [];
  startWithWarn(warned);
  writeSession('v2', ws);
  await backend.until(() => manager!.status()[0]?.state === 'refused', 3000, 'refused');
  assert.equal(manager!.status()[0].problem?.level, 'error');
  assert.deepEqual(warned, ['oh: oh 0.1.0 is too old for the oh extension 9.0.0. Fix: Upgrade oh.']);
  const connects = backend.tcpConnects;
  await sleep(400);
  assert.equal(backend.tcpConnects, connects, 'a refusal no retry can fix is not retried');
});
