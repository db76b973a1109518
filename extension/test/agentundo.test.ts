// "oh: Revert an Agent's Action…" (docs/protocol.md §3.15.2): entries as picks, the backend's edits checked
// before anything is applied, and the editor leg's request/answer by rid against a real WebSocket server.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asText, entryItem, parseEdits, parseEntries, refusalText, relativeTo } from '../src/agentundo';
import { EditorConnection, RegisteredInfo } from '../src/connection';
import { readObservation, registerFrame } from '../src/protocol';
import { FakeBackend } from './fakeBackend';

test('entries: only those that changed files, newest first; malformed rows skipped', () => {
  const got = parseEntries({
    entries: [
      { id: 1, agent: 'a', kind: 'run', what: 'sed -i x f', files: 2, status: 'done' },
      { id: 2, agent: 'a', kind: 'run', what: 'ls', files: 0, status: 'done' },
      { id: 3, agent: 'b', kind: 'write', what: 'write f', files: 1, status: 'interrupted' },
      { id: '4', kind: 'run', files: 1 },
      { id: 5, kind: 'mystery', files: 1 },
      null,
    ],
  });
  assert.deepEqual(
    got.map((e) => e.id),
    [3, 1],
  );
  assert.deepEqual(entryItem(got[0]), { label: '#3 b: write', description: '1 file, interrupted', detail: 'write f' });
  assert.equal(entryItem(got[1]).description, '2 files');
  assert.deepEqual(parseEntries({}), []);
});

test('edits: a path outside the workspace or bad content refuses them all', () => {
  const ok = parseEdits({
    edits: [
      { path: 'a/b.txt', content: Buffer.from('hi').toString('base64'), mode: 0o644 },
      { path: 'c', delete: true },
    ],
  });
  assert.equal(ok.length, 2);
  assert.deepEqual([...(ok[0] as { content: Uint8Array }).content], [...Buffer.from('hi')]);
  for (const bad of ['../x', '/etc/passwd', 'a/../../x', '', 'a//b', 7]) {
    assert.throws(() => parseEdits({ edits: [{ path: bad, delete: true }] }), /bad path/);
  }
  assert.throws(() => parseEdits({ edits: [{ path: 'a', content: 'not base64!' }] }), /bad content/);
  assert.throws(() => parseEdits({}), /no edits/);
});

test('text only when the bytes round-trip (UTF-8, no NUL, no BOM lost)', () => {
  assert.equal(asText(Buffer.from('héllo\n')), 'héllo\n');
  assert.equal(asText(Uint8Array.from([0x61, 0, 0x62])), undefined);
  assert.equal(asText(Uint8Array.from([0xff, 0xfe])), undefined);
  assert.equal(asText(Uint8Array.from([0xef, 0xbb, 0xbf, 0x61])), undefined);
});

test('relative paths inside the root only', () => {
  assert.equal(relativeTo('/w', '/w/a/b.txt'), 'a/b.txt');
  assert.equal(relativeTo('/w', '/w'), undefined);
  assert.equal(relativeTo('/w', '/other/x'), undefined);
  assert.equal(relativeTo('/w', '/w2/x'), undefined);
  assert.match(refusalText({ type: 'error', error_id: 'HISTORY_OFF', message: 'History is off' }), /History is off/);
});

let backend: FakeBackend;
before(async () => {
  backend = new FakeBackend();
  await backend.listen();
});
after(() => backend.close());

test('request: the answer with the same rid resolves it; a close rejects what is still waiting', async () => {
  let registered: RegisteredInfo | undefined;
  let closed = false;
  const conn = new EditorConnection({
    session: {
      instance_id: 'abc123',
      pid: process.pid,
      host: '127.0.0.1',
      port: backend.port,
      url: `ws://127.0.0.1:${backend.port}`,
      workspace: '/w',
      token: backend.token,
    },
    registerFrame: registerFrame({
      session: 'abc123',
      workspaceFolders: ['/w'],
      editorName: 'test',
      editorVersion: '1',
      editorPid: 1,
      extensionVersion: '0.1.0',
    }),
    handler: { execute: (async (a: { id: number }) => readObservation(a.id, 'p', 'x')) as never },
    log: () => undefined,
    onRegistered: (i) => (registered = i),
    onClose: () => (closed = true),
  });
  await backend.until(() => !!registered, 5000, 'registration');
  const peer = backend.peers[backend.peers.length - 1];
  const first = conn.request({ type: 'history', op: 'list' });
  const second = conn.request({ type: 'history', op: 'list' });
  await backend.until(() => peer.frames.length >= 2, 5000, 'two requests');
  const [a, b] = peer.frames as Array<Record<string, unknown>>;
  assert.notEqual(a.rid, b.rid);
  peer.ws.send(JSON.stringify({ type: 'history', op: 'list', rid: b.rid, entries: [] }));
  assert.deepEqual((await second).rid, b.rid);
  peer.ws.close(1001, 'going away');
  await assert.rejects(first, /connection closed/);
  await backend.until(() => closed, 5000, 'close');
  await assert.rejects(conn.request({ type: 'history', op: 'list' }), /not connected/);
});
