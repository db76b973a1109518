// Frame parsing/validation and observation building (docs/protocol.md §3-4).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeFrame,
  editObservation,
  errorObservation,
  OutputBuffer,
  parseAction,
  ProtocolError,
  readObservation,
  registerFrame,
  runArgs,
  runObservation,
  summarize,
  truncateMiddle,
  writeObservation,
} from '../src/protocol';

function refusal(fn: () => unknown): ProtocolError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ProtocolError, `expected ProtocolError, got ${e}`);
    return e;
  }
  assert.fail('expected a ProtocolError');
}

test('decodeFrame refuses non-JSON and non-objects with BAD_REQUEST', () => {
  for (const bad of ['not json', '[1,2]', '"x"', 'null', '42', '']) {
    const e = refusal(() => decodeFrame(bad));
    assert.equal(e.errorId, 'BAD_REQUEST');
    assert.equal(e.cause, undefined);
  }
  assert.deepEqual(decodeFrame('{"a":1}'), { a: 1 });
});

test('parseAction accepts the OpenHands shapes from the reference', () => {
  const run = parseAction({
    id: 5,
    timestamp: '2025-06-24T10:00:00',
    source: 'agent',
    message: 'Running command: ls -la',
    action: 'run',
    args: {
      command: 'ls -la',
      is_input: false,
      thought: 'list',
      blocking: false,
      is_static: false,
      cwd: null,
      hidden: false,
      confirmation_state: 'confirmed',
      security_risk: -1,
    },
    timeout: 30.0,
  });
  assert.equal(run.id, 5);
  assert.equal(run.kind, 'run');
  assert.equal(run.timeout, 30);
  assert.deepEqual(runArgs(run), {
    command: 'ls -la',
    is_input: false,
    blocking: false,
    cwd: null,
    hidden: false,
    reset: false,
    env: undefined,
    maxOutput: undefined,
  });
  const edit = parseAction({
    id: 8,
    source: 'agent',
    message: '',
    action: 'edit',
    args: {
      path: '/w/a.py',
      command: 'str_replace',
      file_text: null,
      old_str: 'a',
      new_str: 'b',
      insert_line: null,
      content: '',
      start: 1,
      end: -1,
      thought: '',
      security_risk: -1,
      impl_source: 'oh_aci',
    },
  });
  assert.equal(edit.kind, 'edit');
  assert.equal(
    parseAction({ id: 6, action: 'read', args: { path: '/w/a.py', start: 0, end: -1, view_range: [1, 10] } }).kind,
    'read',
  );
  assert.equal(parseAction({ id: 7, action: 'write', args: { path: '/w/a.py', content: 'x' } }).kind, 'write');
});

test('parseAction refusals carry the cause when the id is readable', () => {
  const cases: Array<[unknown, string, number | undefined]> = [
    [{ action: 'run', args: { command: 'x' } }, 'BAD_REQUEST', undefined],
    [{ id: true, action: 'run', args: { command: 'x' } }, 'BAD_REQUEST', undefined],
    [{ id: -1, action: 'run', args: { command: 'x' } }, 'BAD_REQUEST', undefined],
    [{ id: 1.5, action: 'run', args: { command: 'x' } }, 'BAD_REQUEST', undefined],
    [{ id: '3', action: 'run', args: { command: 'x' } }, 'BAD_REQUEST', undefined],
    [{ id: 3, observation: 'run', content: '' }, 'BAD_REQUEST', 3],
    [{ id: 3, args: {} }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'browse', args: {} }, 'TOOL_UNSUPPORTED', 3],
    [{ id: 3, action: 'run', args: [] }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'run', args: {} }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'run', args: { command: 1 } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'run', args: { command: 'x', is_input: 'yes' } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'run', args: { command: 'x' }, timeout: -1 }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'run', args: { command: 'x' }, timeout: true }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'read', args: { path: '' } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'read', args: { path: 'a\u0000b' } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'read', args: { path: 'a', view_range: [1] } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'read', args: { path: 'a', start: 'x' } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'write', args: { path: 'a' } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'edit', args: { path: 'a', command: 'delete' } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'edit', args: { path: 'a', command: 'create' } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'edit', args: { path: 'a', command: 'str_replace', old_str: '' } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'edit', args: { path: 'a', command: 'insert', new_str: 'x' } }, 'BAD_REQUEST', 3],
    [{ id: 3, action: 'edit', args: { path: 'a', command: 'insert', insert_line: 1 } }, 'BAD_REQUEST', 3],
  ];
  for (const [frame, errorId, cause] of cases) {
    const e = refusal(() => parseAction(frame as Record<string, unknown>));
    assert.equal(e.errorId, errorId, JSON.stringify(frame));
    assert.equal(e.cause, cause, JSON.stringify(frame));
  }
});

test('observations have exactly the keys OpenHands deserializes', () => {
  const run = runObservation(5, 'ls', { content: 'out', exitCode: 0, workingDir: '/w', pid: 42 });
  assert.deepEqual(Object.keys(run).sort(), [
    'cause',
    'content',
    'extras',
    'message',
    'observation',
    'source',
    'success',
    'timestamp',
  ]);
  assert.equal(run.observation, 'run');
  assert.equal(run.success, true);
  assert.equal(run.message, 'Command `ls` executed with exit code 0.');
  assert.deepEqual(run.extras, {
    command: 'ls',
    metadata: {
      exit_code: 0,
      pid: 42,
      username: null,
      hostname: null,
      working_dir: '/w',
      py_interpreter_path: null,
      prefix: '',
      suffix: '',
    },
    hidden: false,
  });
  assert.equal(runObservation(1, 'false', { content: '', exitCode: 1, workingDir: null }).success, false);
  assert.deepEqual(readObservation(6, '/w/a.py', 'txt').extras, { path: '/w/a.py', impl_source: 'oh_aci' });
  assert.deepEqual(writeObservation(7, '/w/a.py').extras, { path: '/w/a.py' });
  const edit = editObservation(8, '/w/a.py', {
    content: 'edited',
    prevExist: true,
    oldContent: 'a',
    newContent: 'b',
    diff: '--- a',
  });
  assert.deepEqual(Object.keys(edit.extras as object).sort(), [
    '_diff_cache',
    'diff',
    'impl_source',
    'new_content',
    'old_content',
    'path',
    'prev_exist',
  ]);
  assert.equal((edit.extras as Record<string, unknown>)._diff_cache, null);
  const err = errorObservation(9, 'TOOL_ERROR', 'boom');
  assert.equal(err.content, 'boom');
  assert.equal(err.message, 'boom');
  assert.deepEqual(err.extras, { error_id: 'TOOL_ERROR' });
  assert.ok(!('cause' in errorObservation(undefined, 'BAD_REQUEST', 'x')));
  for (const o of [run, edit, err]) assert.ok(!('id' in o), 'the connection numbers observations');
});

test('register frame follows §4', () => {
  const f = registerFrame({
    session: 'abc',
    workspaceFolders: ['/w'],
    editorName: 'Visual Studio Code',
    editorVersion: '1.99.3',
    editorPid: 7,
    extensionVersion: '0.1.0',
  });
  assert.deepEqual(f, {
    type: 'register',
    protocol: 1,
    protocol_range: [1, 1],
    session: 'abc',
    workspace_folders: ['/w'],
    editor: { name: 'Visual Studio Code', version: '1.99.3', pid: 7 },
    extension_version: '0.1.0',
    capabilities: [
      'run',
      'read',
      'write',
      'edit',
      'stat',
      'job',
      'diagnostics',
      'open',
      'editors',
      'symbols',
      'definition',
      'references',
      'write_modes',
      'binary',
      'escalate',
      'branch',
      'review',
      'consent',
    ],
  });
});

test('truncateMiddle keeps head and tail and says how much was dropped', () => {
  assert.equal(truncateMiddle('short', 10), 'short');
  const t = truncateMiddle('a'.repeat(50) + 'b'.repeat(50), 20);
  assert.equal(t, 'a'.repeat(10) + '\n[... 80 characters truncated ...]\n' + 'b'.repeat(10));
  const big = truncateMiddle('x'.repeat(100000));
  assert.ok(big.includes('[... 70000 characters truncated ...]'));
});

test('OutputBuffer gives the same result as truncateMiddle over the concatenation', () => {
  for (const limit of [10, 31, 30000]) {
    for (const sizes of [[1, 2, 3], [5, 50, 7, 300], [29999, 2], [40000], [10, 10, 10, 10, 10, 10, 10]]) {
      const b = new OutputBuffer(limit);
      let all = '';
      sizes.forEach((n, i) => {
        const s = String.fromCharCode(97 + (i % 26)).repeat(n);
        b.add(s);
        all += s;
      });
      assert.equal(b.text(), truncateMiddle(all, limit), `${limit} ${sizes}`);
      assert.equal(b.length, all.length);
    }
  }
  const b = new OutputBuffer(10);
  b.add('abc');
  assert.equal(b.take(), 'abc');
  assert.equal(b.take(), '');
});

test('summarize is one line, never file contents', () => {
  assert.equal(summarize(parseAction({ id: 1, action: 'run', args: { command: 'echo  a\n b' } })), 'echo a b');
  assert.equal(summarize(parseAction({ id: 1, action: 'run', args: { command: 'y', is_input: true } })), 'input: y');
  assert.equal(summarize(parseAction({ id: 1, action: 'write', args: { path: '/w/a', content: 'SECRET' } })), '/w/a');
  assert.equal(
    summarize(parseAction({ id: 1, action: 'edit', args: { path: '/w/a', command: 'create', file_text: 'S' } })),
    'create /w/a',
  );
  assert.equal(summarize(parseAction({ id: 1, action: 'run', args: { command: 'x'.repeat(200) } })).length, 80);
});

test('wave-2 run additions: agent, reset, env, max_output, timeout 0 (SPEC-wave2 C, E)', () => {
  const a = parseAction({
    id: 9,
    action: 'run',
    timeout: 0,
    args: { command: 'x', reset: true, env: { API_KEY: 's3cret', B: '' }, max_output: 0 },
    agent: { id: 'a3', name: 'claude\x1b]0;pwn\x07-code', workdir: '/w/sub', shell: 'cli' },
  });
  assert.equal(a.timeout, undefined); // 0 = no timeout given
  assert.deepEqual(a.agent, { id: 'a3', name: 'claude]0;pwn-code', workdir: '/w/sub', shell: 'cli' });
  const r = runArgs(a);
  assert.equal(r.reset, true);
  assert.deepEqual(r.env, { API_KEY: 's3cret', B: '' });
  assert.equal(r.maxOutput, 16 * 1024 * 1024);
  assert.equal(runArgs(parseAction({ id: 1, action: 'run', args: { command: 'x', max_output: 10 } })).maxOutput, 10);
  // no agent, or a malformed one (older backends): undefined, as the headless editor reads it
  assert.equal(parseAction({ id: 1, action: 'run', args: { command: 'x' } }).agent, undefined);
  for (const agent of [
    { id: 'a1', name: 'n' },
    { shell: '../x', workdir: '/w' },
    { shell: 'a b', workdir: '/w' },
    { shell: 's', workdir: 'rel' },
    'a3',
    [1],
  ]) {
    assert.equal(
      parseAction({ id: 4, action: 'run', args: { command: 'x' }, agent }).agent,
      undefined,
      JSON.stringify(agent),
    );
  }
  const bad: Array<[Record<string, unknown>, RegExp]> = [
    [{ env: { 'BAD-NAME': 'x' } }, /not a valid environment variable name/],
    [{ env: { OK: 1 } }, /args.env.OK must be a string/],
    [{ env: ['A=1'] }, /args.env must be an object/],
    [{ max_output: -1 }, /max_output must be an integer >= 0/],
    [{ reset: 'yes' }, /reset must be a boolean/],
  ];
  for (const [extra, msg] of bad) {
    const e = refusal(() => parseAction({ id: 4, action: 'run', args: { command: 'x', ...extra } }));
    assert.equal(e.errorId, 'BAD_REQUEST');
    assert.match(e.message, msg);
    assert.doesNotMatch(e.message, /s3cret/);
  }
  assert.equal(
    refusal(() => parseAction({ id: 4, action: 'read', args: { path: '/x', encoding: 'hex' } })).errorId,
    'BAD_REQUEST',
  );
  assert.equal(
    parseAction({ id: 4, action: 'read', args: { path: '/x', encoding: 'base64' } }).args.encoding,
    'base64',
  );
});

test('run metadata and read extras (base64 only when asked)', () => {
  const o = runObservation(1, 'x', {
    content: '',
    exitCode: 0,
    workingDir: '/w',
    username: 'u',
    hostname: 'h',
    pyInterpreterPath: '/usr/bin/python3',
  });
  const md = (o.extras as Record<string, Record<string, unknown>>).metadata;
  assert.equal(md.username, 'u');
  assert.equal(md.hostname, 'h');
  assert.equal(md.py_interpreter_path, '/usr/bin/python3');
  assert.deepEqual(Object.keys(readObservation(1, '/p', 'x').extras as object).sort(), ['impl_source', 'path']);
  assert.deepEqual(readObservation(1, '/p', 'eA==', { encoding: 'base64', mimeType: 'image/png' }).extras, {
    path: '/p',
    impl_source: 'oh_aci',
    encoding: 'base64',
    mime_type: 'image/png',
  });
});
