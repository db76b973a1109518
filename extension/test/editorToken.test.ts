// The editor credential (issue 9 #12): the window reads `editor_token` from the session file and
// presents it, not the agent token, on /v1/editor; a real `ws` server checks the header.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CloseInfo, EditorConnection, editorCredential, RegisteredInfo } from '../src/connection';
import { readObservation, registerFrame } from '../src/protocol';
import { parseSession, SessionInfo } from '../src/session';
import { FakeBackend } from './fakeBackend';

const AGENT_TOKEN = 'agent-token-abcdefghijklmnop';
const EDITOR_TOKEN = 'editor-token-qrstuvwxyz012345';
let backend: FakeBackend;
before(async () => {
  backend = new FakeBackend(EDITOR_TOKEN); // accepts only the editor token
  await backend.listen();
});
after(() => backend.close());

function sessionText(extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    instance_id: 'abc123',
    pid: process.pid,
    host: '127.0.0.1',
    port: backend.port,
    workspace: '/w',
    token: AGENT_TOKEN,
    editor_token: EDITOR_TOKEN,
    ...extra,
  });
}

function connect(session: SessionInfo) {
  const events: { registered?: RegisteredInfo; closed?: CloseInfo } = {};
  const conn = new EditorConnection({
    session,
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
    onRegistered: (i) => (events.registered = i),
    onClose: (i) => (events.closed = i),
  });
  return { conn, events };
}

test('parseSession keeps editor_token apart from token; absent or empty means none', () => {
  const s = parseSession(sessionText());
  assert.equal(s?.token, AGENT_TOKEN);
  assert.equal(s?.editor_token, EDITOR_TOKEN);
  assert.equal(parseSession(sessionText({ editor_token: undefined }))?.editor_token, undefined);
  assert.equal(parseSession(sessionText({ editor_token: '' }))?.editor_token, undefined);
  assert.equal(parseSession(sessionText({ editor_token: 42 }))?.editor_token, undefined);
});

test('the editor leg presents editor_token, never the agent token', async () => {
  const session = parseSession(sessionText())!;
  assert.equal(editorCredential(session), EDITOR_TOKEN);
  const before = backend.peers.length;
  const { conn, events } = connect(session);
  await backend.until(() => backend.peers.length > before && !!events.registered, 5000, 'registration');
  assert.equal(backend.peers[backend.peers.length - 1].headers.authorization, `Bearer ${EDITOR_TOKEN}`);
  conn.close();
  await backend.until(() => !!events.closed, 5000, 'close');
});

test('a session file of an older backend (no editor_token) falls back to the token, which this backend refuses', async () => {
  const session = parseSession(sessionText({ editor_token: undefined }))!;
  assert.equal(editorCredential(session), AGENT_TOKEN);
  const { events } = connect(session);
  await backend.until(() => !!events.closed, 5000, 'close');
  assert.equal(events.closed?.httpStatus, 401);
  assert.equal(events.closed?.registered, false);
});
