// The shared protocol contract: the extension's validator gives every frame the backend's verdict
// (tests/contract/protocol-frames.json, written by tests/contract/gen_protocol_fixtures.py from Python).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { JsonScanError, MAX_DEPTH, pathKey, pythonFloatPaths } from '../src/jsonnum';
import { KNOWLEDGE_KINDS } from '../src/knowledge';
import {
  Action,
  ACTION_KINDS,
  decodeFrame,
  parseAction,
  PATH_SUMMARY_KINDS,
  ProtocolError,
  registerFrame,
  summarize,
} from '../src/protocol';

interface Verdict {
  frame: string;
  ok: boolean;
  error_id?: string;
  cause?: number | null;
  id?: number;
  kind?: string;
  timeout?: number | null;
}

const FIXTURES = path.join(__dirname, '..', '..', '..', 'tests', 'contract', 'protocol-frames.json');
// The backend's action-kind table (src/oh/protocol/kinds.py), written by tests/contract/gen_protocol_fixtures.py.
const KINDS = path.join(__dirname, '..', '..', '..', 'tests', 'contract', 'action-kinds.json');

interface KindRow {
  kind: string;
  capability: string | null; // null: the backend answers it itself, an editor never gets it
  example: Record<string, unknown>;
}

function verdictOf(frame: string): Verdict {
  try {
    const a = parseAction(decodeFrame(frame));
    return { frame, ok: true, id: a.id, kind: a.kind, timeout: a.timeout ?? null };
  } catch (e) {
    assert.ok(e instanceof ProtocolError, `not a ProtocolError for ${frame}: ${e}`);
    return { frame, ok: false, error_id: e.errorId, cause: e.cause ?? null };
  }
}

test('shared fixtures: same verdict, error id and cause as the backend', () => {
  const expected: Verdict[] = JSON.parse(fs.readFileSync(FIXTURES, 'utf8'));
  assert.ok(expected.length >= 500, `only ${expected.length} fixtures`);
  assert.ok(expected.some((v) => v.ok) && expected.some((v) => !v.ok));
  const wrong = expected.filter((v) => JSON.stringify(verdictOf(v.frame)) !== JSON.stringify(v));
  assert.deepEqual(
    wrong.slice(0, 3).map((v) => ({ expected: v, got: verdictOf(v.frame) })),
    [],
    `${wrong.length} of ${expected.length} frames get another verdict`,
  );
});

test('ids are JSON integers: 2.0, 2e0 and 64-bit overflows are floats, as in Python', () => {
  assert.deepEqual([...pythonFloatPaths('{"id": 2.0, "args": {"view_range": [1, 2e0], "start": 1}}')].sort(), [
    pathKey(['args', 'view_range', 1]),
    pathKey(['id']),
  ]);
  assert.equal(pythonFloatPaths('{"id": 2.0, "id": 2}').size, 0); // the last duplicate wins
  assert.equal(pythonFloatPaths('{"\\u0069d": 1.0}').has(pathKey(['id'])), true);
  assert.equal(pythonFloatPaths('{"s": "2.0 \\" 1.0", "n": 18446744073709551615}').size, 0);
  assert.equal(pythonFloatPaths('{"n": 18446744073709551616}').has(pathKey(['n'])), true);
  assert.equal(pythonFloatPaths('{"a": {"b": {"c": 1.0}}}', 3).has(pathKey(['a', 'b', 'c'])), true);
  assert.equal(pythonFloatPaths('{"a": {"b": {"c": {"d": 1.0}}}}', 3).size, 0); // deeper: not tracked
});

test('what the backend cannot decode is refused here too', () => {
  for (const bad of ['{"a": 1e400}', '{"a": "\\ud800"}', '{"a": "\\udc00"}', '{"a": "\\ud800\\u0041"}']) {
    assert.throws(() => pythonFloatPaths(bad), JsonScanError, bad);
  }
  assert.doesNotThrow(() => pythonFloatPaths('{"a": "\\ud83d\\ude00 \\u00e9"}'));
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  assert.doesNotThrow(() => pythonFloatPaths(deep(MAX_DEPTH)));
  assert.throws(() => pythonFloatPaths(deep(MAX_DEPTH + 1)), JsonScanError);
  const e = (() => {
    try {
      decodeFrame('{"id": 1, "x": 1e999}');
    } catch (err) {
      return err as ProtocolError;
    }
    return undefined;
  })();
  assert.equal(e?.errorId, 'BAD_REQUEST');
  assert.match(e!.message, /not valid JSON \(number 1e999 is out of range\)/);
});

test('a large frame is scanned without trouble', () => {
  const content = 'x"\\\\'.repeat(1 << 20);
  const frame = JSON.stringify({ id: 1, action: 'write', args: { path: '/w/a', content, start: 0 } });
  assert.equal(parseAction(decodeFrame(frame)).id, 1);
});

test('summarize: the same line as the backend for every kind (action-kinds.json summaries)', () => {
  const table: {
    kinds: (KindRow & { path_summary: boolean })[];
    summaries: { kind: string; args: Record<string, unknown>; summary: string }[];
  } = JSON.parse(fs.readFileSync(KINDS, 'utf8'));
  const pathKinds = table.kinds.filter((k) => k.path_summary).map((k) => k.kind);
  assert.deepEqual([...PATH_SUMMARY_KINDS].sort(), pathKinds.sort());
  assert.deepEqual(new Set(table.summaries.map((c) => c.kind)), new Set(table.kinds.map((k) => k.kind)));
  for (const c of table.summaries) {
    // Built directly, not parsed: the extension refuses the kinds the backend answers itself (ensure).
    const action = { id: 1, kind: c.kind, args: c.args } as unknown as Action;
    assert.equal(summarize(action), c.summary, `${c.kind} ${JSON.stringify(c.args)}`);
  }
});

test('the kind table: the extension executes every kind the backend forwards to an editor, and refuses the rest', () => {
  const table: { kinds: KindRow[]; capabilities: string[] } = JSON.parse(fs.readFileSync(KINDS, 'utf8'));
  const forwarded = table.kinds.filter((k) => k.capability !== null).map((k) => k.kind);
  assert.deepEqual([...ACTION_KINDS, ...KNOWLEDGE_KINDS].sort(), [...forwarded].sort());
  const refusal = (kind: string, args: unknown) => {
    try {
      parseAction({ id: 4, action: kind, args } as never);
    } catch (e) {
      return e instanceof ProtocolError ? [e.errorId, e.cause] : ['not a ProtocolError', String(e)];
    }
    return undefined;
  };
  for (const k of table.kinds) {
    assert.deepEqual(refusal(k.kind, k.example), k.capability === null ? ['TOOL_UNSUPPORTED', 4] : undefined, k.kind);
  }
  assert.deepEqual(refusal('teleport', { where: 'moon' }), ['TOOL_UNSUPPORTED', 4]); // a kind nobody wrote
  const advertised = registerFrame({
    session: null,
    workspaceFolders: ['/w'],
    editorName: 'VS Code',
    editorVersion: '1',
    editorPid: 1,
    extensionVersion: '0',
  }).capabilities as string[];
  assert.deepEqual(
    advertised.filter((c) => !table.capabilities.includes(c)),
    [],
    'capabilities the backend does not know',
  );
});
