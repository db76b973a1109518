// The editor leg against a real WebSocket server: handshake headers, registration, answers, bad frames.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ActionContext, CloseInfo, EditorConnection, RegisteredInfo } from '../src/connection';
import { Action, errorObservation, ORPHANED, readObservation, registerFrame } from '../src/protocol';
import { SessionInfo } from '../src/session';
import { FakeBackend } from './fakeBackend';

let backend: FakeBackend;
before(async () => {
  backend = new FakeBackend();
  await backend.listen();
});
after(() => backend.close());

function session(token = backend.token): SessionInfo {
  return {
    instance_id: 'abc123',
    pid: process.pid,
    host: '127.0.0.1',
    port: backend.port,
    url: `ws://127.0.0.1:${backend.port}`,
    workspace: '/w',
    token,
  };
}

function open(handler: (a: Action, s: AbortSignal) => Promise<Record<string, unknown>>, token?: string) {
  const events: { registered?: RegisteredInfo; closed?: CloseInfo; log: string[] } = { log: [] };
  const conn = new EditorConnection({
    session: session(token),
    registerFrame: registerFrame({
      session: 'abc123',
      workspaceFolders: ['/w'],
      editorName: 'test',
      editorVersion: '1',
      editorPid: 1,
      extensionVersion: '0.1.0',
    }),
    handler: { execute: handler as never },
    log: (l) => events.log.push(l),
    onRegistered: (i) => (events.registered = i),
    onClose: (i) => (events.closed = i),
  });
  return { conn, events };
}

test('handshake: bearer token header, no Origin, Host is 127.0.0.1:port; then the register frame', async () => {
  const before = backend.peers.length;
  const { conn, events } = open(async (a) => readObservation(a.id, 'p', 'x'));
  await backend.until(() => backend.peers.length > before && !!events.registered, 5000, 'registration');
  const peer = backend.peers[backend.peers.length - 1];
  assert.equal(peer.headers.authorization, `Bearer ${backend.token}`);
  assert.equal(peer.headers.origin, undefined);
  assert.equal(peer.headers.host, `127.0.0.1:${backend.port}`);
  assert.equal(peer.register.type, 'register');
  assert.equal(peer.register.session, 'abc123');
  assert.equal(events.registered?.editor_id, `e${before}`);
  conn.close();
  await backend.until(() => !!events.closed, 5000, 'close');
  assert.equal(events.closed?.code, 1000);
});

test('a wrong token is an HTTP 401, reported as such (and the token is never logged)', async () => {
  const { events } = open(async (a) => readObservation(a.id, 'p', 'x'), 'wrong-token-value');
  await backend.until(() => !!events.closed, 5000, 'close');
  assert.equal(events.closed?.httpStatus, 401);
  assert.equal(events.closed?.registered, false);
  assert.ok(!events.log.join('\n').includes('wrong-token-value'));
});

test('actions are answered once each (cause = id, own monotonic ids); bad frames get BAD_REQUEST; control errors are not answered', async () => {
  const before = backend.peers.length;
  const { conn, events } = open(async (a) => {
    if (a.id === 2) await new Promise((r) => setTimeout(r, 50)); // finishes after id 3: any order is fine
    return readObservation(a.id, String(a.args.path), 'content');
  });
  await backend.until(() => backend.peers.length > before && !!events.registered);
  const peer = backend.peers[backend.peers.length - 1];
  const send = (x: unknown) => peer.ws.send(typeof x === 'string' ? x : JSON.stringify(x));
  send({ id: 2, action: 'read', args: { path: '/w/a' } });
  send({ id: 3, action: 'read', args: { path: '/w/b' } });
  send('not json');
  send({ id: 7, action: 'read', args: {} });
  send({ id: 8, action: 'fly', args: {} });
  send({ type: 'error', error_id: 'BAD_REQUEST', message: 'your observation was bad' });
  send({ type: 'something-new' });
  peer.ws.send(Buffer.from([1, 2, 3]), { binary: true });
  await backend.until(() => peer.frames.length >= 6, 5000, 'six answers');
  await new Promise((r) => setTimeout(r, 100)); // nothing else arrives
  const frames = peer.frames as Array<Record<string, any>>;
  assert.equal(frames.length, 6);
  const byCause = (c: number | undefined) => frames.filter((f) => f.cause === c);
  assert.equal(byCause(2)[0].observation, 'read');
  assert.equal(byCause(3)[0].observation, 'read');
  assert.equal(byCause(7)[0].extras.error_id, 'BAD_REQUEST');
  assert.equal(byCause(8)[0].extras.error_id, 'TOOL_UNSUPPORTED');
  const noCause = byCause(undefined);
  assert.equal(noCause.length, 2); // not JSON + binary
  assert.ok(noCause.every((f) => f.extras.error_id === 'BAD_REQUEST'));
  const ids = frames.map((f) => f.id);
  assert.deepEqual(
    [...ids].sort((a, b) => a - b),
    [1, 2, 3, 4, 5, 6],
  );
  assert.ok(events.log.some((l) => l.includes('your observation was bad')));
  conn.close();
});

test('cancel aborts the action and its answer is skipped; a throwing handler still answers', async () => {
  const before = backend.peers.length;
  let aborted = false;
  const { conn, events } = open(async (a, signal) => {
    if (a.id === 1) {
      await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
      aborted = true;
      return errorObservation(a.id, 'INTERRUPTED', 'cancelled');
    }
    throw new Error('handler bug');
  });
  await backend.until(() => backend.peers.length > before && !!events.registered);
  const peer = backend.peers[backend.peers.length - 1];
  peer.ws.send(JSON.stringify({ id: 1, action: 'run', args: { command: 'sleep 100' } }));
  await new Promise((r) => setTimeout(r, 50));
  peer.ws.send(JSON.stringify({ type: 'cancel', id: 1 }));
  peer.ws.send(JSON.stringify({ id: 2, action: 'read', args: { path: '/w/a' } }));
  await backend.until(() => peer.frames.length >= 1 && aborted);
  await new Promise((r) => setTimeout(r, 100));
  const frames = peer.frames as Array<Record<string, any>>;
  assert.equal(frames.length, 1);
  assert.equal(frames[0].cause, 2);
  assert.equal(frames[0].extras.error_id, 'SERVER_ERROR');
  assert.match(frames[0].content, /handler bug/);
  conn.close();
});

test('a registration refusal is reported with its error id', async () => {
  const prev = backend.registerAnswer;
  backend.registerAnswer = () => ({ type: 'error', error_id: 'WRONG_SESSION', message: 'not me' });
  try {
    const { events } = open(async (a) => readObservation(a.id, 'p', 'x'));
    await backend.until(() => !!events.closed, 5000, 'close');
    assert.equal(events.closed?.refusal?.error_id, 'WRONG_SESSION');
    assert.equal(events.closed?.code, 4400);
  } finally {
    backend.registerAnswer = prev;
  }
});

test('registered allowed_roots, agent_gone, and a lost connection orphaning in-flight actions (SPEC-wave2 B/E, issue 9 #15)', async () => {
  const saved = backend.registerAnswer;
  backend.registerAnswer = (f) => ({
    type: 'registered',
    editor_id: 'eR',
    instance_id: String(f.session),
    protocol: 1,
    workspace: '/w/sub',
    allowed_roots: ['/w/sub', '/tmp/scratch', 'relative', 7],
  });
  try {
    const seen: Array<{ ctx: unknown; signal: AbortSignal }> = [];
    const gone: Array<[string, unknown]> = [];
    const events: { registered?: RegisteredInfo; closed?: CloseInfo } = {};
    const conn = new EditorConnection({
      session: session(),
      registerFrame: registerFrame({
        session: 'abc123',
        workspaceFolders: ['/w'],
        editorName: 'test',
        editorVersion: '1',
        editorPid: 1,
        extensionVersion: '0.1.0',
      }),
      handler: {
        execute: (_a, signal, ctx) => {
          seen.push({ ctx, signal });
          return new Promise(() => {}); // a command that never ends
        },
        agentGone: (shell, ctx) => gone.push([shell, ctx]),
      },
      log: () => {},
      onRegistered: (i) => (events.registered = i),
      onClose: (i) => (events.closed = i),
    });
    await backend.until(() => !!events.registered, 5000, 'registration');
    assert.deepEqual(events.registered?.allowed_roots, ['/w/sub', '/tmp/scratch']);
    const peer = backend.peers[backend.peers.length - 1];
    peer.ws.send(JSON.stringify({ id: 1, action: 'run', args: { command: 'sleep 100' } }));
    await backend.until(() => seen.length === 1, 5000, 'the action');
    const ctx = seen[0].ctx as { roots: string[]; workspace: string; backend: string };
    assert.deepEqual(ctx.roots, ['/w/sub', '/tmp/scratch']);
    assert.equal(ctx.workspace, '/w/sub');
    assert.equal(ctx.backend, `abc123:${process.pid}::${backend.port}`);
    peer.ws.send(JSON.stringify({ type: 'agent_gone', shell: 'a3' }));
    peer.ws.send(JSON.stringify({ type: 'agent_gone', shell: '../bad key' }));
    await backend.until(() => gone.length === 1, 5000, 'agent_gone');
    assert.equal(gone[0][0], 'a3');
    assert.equal(conn.inFlight, 1);
    peer.ws.terminate(); // the backend dies mid-command
    await backend.until(() => !!events.closed, 5000, 'close');
    assert.equal(seen[0].signal.aborted, true);
    assert.equal(seen[0].signal.reason, ORPHANED); // stop waiting; do not kill the command
  } finally {
    backend.registerAnswer = saved;
  }
});

test('older backends: registered without allowed_roots confines to its workspace', async () => {
  const seen: unknown[] = [];
  const { conn, events } = open(async (a) => readObservation(a.id, 'p', 'x'));
  (conn as unknown as { opts: { handler: unknown } }).opts.handler = {
    execute: async (a: Action, _s: AbortSignal, ctx: unknown) => {
      seen.push(ctx);
      return readObservation(a.id, 'p', 'x');
    },
  };
  await backend.until(() => !!events.registered, 5000, 'registration');
  backend.peers[backend.peers.length - 1].ws.send(JSON.stringify({ id: 1, action: 'read', args: { path: '/w/x' } }));
  await backend.until(() => seen.length === 1, 5000, 'the action');
  assert.deepEqual((seen[0] as { roots: string[] }).roots, ['/w']);
  conn.close();
});

test('registered review: the context carries proposal mode and a way to send proposal events (§3.11)', async () => {
  const saved = backend.registerAnswer;
  backend.registerAnswer = (f) => ({
    type: 'registered',
    editor_id: 'eV',
    instance_id: String(f.session),
    protocol: 1,
    workspace: '/w',
    review: true,
    review_timeout: 42,
  });
  try {
    const seen: ActionContext[] = [];
    const { conn, events } = open(async (a) => readObservation(a.id, 'p', 'x'));
    (conn as unknown as { opts: { handler: unknown } }).opts.handler = {
      execute: async (a: Action, _s: AbortSignal, ctx: ActionContext) => {
        seen.push(ctx);
        ctx.sendFrame?.({
          type: 'proposal_event',
          event: 'proposal_opened',
          proposal: { cause: a.id, path: '/w/x', kind: 'write' },
        });
        return readObservation(a.id, 'p', 'x');
      },
    };
    await backend.until(() => !!events.registered, 5000, 'registration');
    const peer = backend.peers[backend.peers.length - 1];
    peer.ws.send(JSON.stringify({ id: 3, action: 'write', args: { path: '/w/x', content: '' } }));
    await backend.until(() => peer.frames.length >= 2, 5000, 'the proposal event and the answer');
    assert.deepEqual(seen[0].review, { timeoutSeconds: 42 });
    assert.deepEqual(peer.frames[0], {
      type: 'proposal_event',
      event: 'proposal_opened',
      proposal: { cause: 3, path: '/w/x', kind: 'write' },
    });
    conn.close();
  } finally {
    backend.registerAnswer = saved;
  }
  // Without `review` (every older backend): no proposal mode.
  const seen: ActionContext[] = [];
  const { conn, events } = open(async (a) => readObservation(a.id, 'p', 'x'));
  (conn as unknown as { opts: { handler: unknown } }).opts.handler = {
    execute: async (a: Action, _s: AbortSignal, ctx: ActionContext) => (
      seen.push(ctx),
      readObservation(a.id, 'p', 'x')
    ),
  };
  await backend.until(() => !!events.registered, 5000, 'registration');
  backend.peers[backend.peers.length - 1].ws.send(JSON.stringify({ id: 1, action: 'read', args: { path: '/w/x' } }));
  await backend.until(() => seen.length === 1, 5000, 'the action');
  assert.equal(seen[0].review, undefined);
  conn.close();
});

test('consent frames (§3.13): approval_request reaches the handler, the answer goes back on the same leg', async () => {
  const asked: Array<[unknown, ActionContext]> = [];
  const closed: unknown[] = [];
  const events: { registered?: RegisteredInfo; closed?: CloseInfo } = {};
  const conn = new EditorConnection({
    session: session(),
    registerFrame: registerFrame({
      session: 'abc123',
      workspaceFolders: ['/w'],
      editorName: 'test',
      editorVersion: '1',
      editorPid: 1,
      extensionVersion: '0.1.0',
    }),
    handler: {
      execute: async (a) => readObservation(a.id, 'p', 'x'),
      approvalRequested: (row, ctx) => {
        asked.push([row, ctx]);
        ctx.sendFrame?.({ type: 'approval', op: 'allow', id: (row as { id: string }).id });
      },
      approvalClosed: (id) => closed.push(id),
    },
    log: () => {},
    onRegistered: (i) => (events.registered = i),
    onClose: (i) => (events.closed = i),
  });
  try {
    await backend.until(() => !!events.registered, 5000, 'registration');
    const peer = backend.peers[backend.peers.length - 1];
    assert.ok((peer.register.capabilities as string[]).includes('consent'));
    peer.ws.send(JSON.stringify({ type: 'approval_request', approval: { id: 'c1', what: 'ls', always: [] } }));
    peer.ws.send(JSON.stringify({ type: 'approval_closed', id: 'c1', decision: 'allowed', by: 'vscode' }));
    await backend.until(() => closed.length === 1, 5000, 'approval_closed');
    assert.deepEqual(asked[0][0], { id: 'c1', what: 'ls', always: [] });
    await backend.until(
      () => peer.frames.some((f) => typeof f === 'object' && f.type === 'approval'),
      5000,
      'the answer',
    );
    assert.deepEqual(
      peer.frames.find((f) => typeof f === 'object' && f.type === 'approval'),
      { type: 'approval', op: 'allow', id: 'c1' },
    );
  } finally {
    conn.close();
  }
});
