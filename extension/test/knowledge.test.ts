// Editor knowledge actions (docs/protocol.md §3.6): validation, the settle rule, and the executors
// against the mocked `vscode` (diagnostics events, tabs, execute*Provider commands) on a real temp folder.
import './vscodeMock'; // first: makes require('vscode') resolve to the mock
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { Dispatcher } from '../src/dispatcher';
import { EditExecutor } from '../src/executors/edit';
import { KnowledgeExecutor } from '../src/executors/knowledge';
import { isSettled, KNOWLEDGE_KINDS } from '../src/knowledge';
import { Action, JsonObject, parseAction, ProtocolError, registerFrame, ToolError } from '../src/protocol';
import {
  Diagnostic,
  DiagnosticSeverity,
  knowledgeMock,
  Location,
  Position,
  Range,
  resetMock,
  SymbolKind,
  TabInputText,
  Uri,
  workspace,
} from './vscodeMock';

let root: string;
let outside: string;
let k: KnowledgeExecutor;

beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-know-')));
  outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-know-out-')));
  resetMock(root);
  knowledgeMock.reset();
  k = new KnowledgeExecutor();
});

afterEach(() => {
  k.dispose();
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

let nextId = 1;
function action(kind: string, args: JsonObject): Action {
  return parseAction({ id: nextId++, action: kind, args });
}

function badRequest(kind: string, args: JsonObject): string {
  try {
    action(kind, args);
  } catch (e) {
    assert.ok(e instanceof ProtocolError);
    assert.equal(e.errorId, 'BAD_REQUEST');
    return e.message;
  }
  assert.fail(`${kind} ${JSON.stringify(args)} was accepted`);
}

const r = (l1: number, c1: number, l2: number, c2: number) => new Range(new Position(l1, c1), new Position(l2, c2));

test('parseAction accepts the knowledge kinds and refuses bad args with a message saying what to send', () => {
  assert.equal(action('editors', {}).kind, 'editors');
  assert.equal(action('diagnostics', {}).kind, 'diagnostics');
  assert.equal(action('symbols', { query: 'f', limit: 5 }).kind, 'symbols');
  assert.match(badRequest('definition', { path: 'a.ts', line: 0, column: 1 }), /args\.line must be an integer >= 1/);
  assert.match(badRequest('definition', { path: 'a.ts', line: 1 }), /args\.column/);
  assert.match(badRequest('symbols', {}), /args\.query must be a string/);
  assert.match(badRequest('symbols', { query: 'x', limit: 5000 }), /args\.limit/);
  assert.match(badRequest('diagnostics', { severity: 'fatal' }), /args\.severity/);
  assert.match(badRequest('diagnostics', { wait: 61 }), /args\.wait/);
  assert.match(badRequest('open', { path: 'a.ts', end_line: 3 }), /end_line needs args\.line/);
  assert.match(
    badRequest('edit', { path: 'a.ts', command: 'view', diagnostics: 'yes' }),
    /args\.diagnostics must be a boolean/,
  );
  // 2.0 is a float for the backend: refused where an integer is due, as for the other kinds
  try {
    const { decodeFrame } = require('../src/protocol');
    parseAction(decodeFrame('{"id": 1, "action": "definition", "args": {"path": "a.ts", "line": 2.0, "column": 1}}'));
    assert.fail('accepted 2.0');
  } catch (e) {
    assert.ok(e instanceof ProtocolError && e.errorId === 'BAD_REQUEST');
  }
});

test('the register frame advertises the knowledge kinds', () => {
  const caps = registerFrame({
    session: null,
    workspaceFolders: [root],
    editorName: 'x',
    editorVersion: '1',
    editorPid: 1,
    extensionVersion: '0',
  }).capabilities as string[];
  for (const kind of KNOWLEDGE_KINDS) assert.ok(caps.includes(kind), kind);
});

test('a dispatcher without a knowledge executor answers TOOL_UNSUPPORTED, not a hang', async () => {
  const d = new Dispatcher({}, { isTrusted: () => true });
  const o = await d.execute(action('symbols', { query: 'x' }), new AbortController().signal);
  assert.equal((o.extras as JsonObject).error_id, 'TOOL_UNSUPPORTED');
});

test('isSettled: quiet period, and after an edit the server gets its time to report', () => {
  assert.equal(isSettled({ now: 1000, lastChange: undefined, since: undefined, quietMs: 500, expectMs: 2500 }), true);
  assert.equal(isSettled({ now: 1000, lastChange: 800, since: undefined, quietMs: 500, expectMs: 2500 }), false);
  // edit at 1000, no report yet: not settled before 3500, settled after (an unchanged list is never published)
  assert.equal(isSettled({ now: 2000, lastChange: 100, since: 1000, quietMs: 500, expectMs: 2500 }), false);
  assert.equal(isSettled({ now: 3600, lastChange: 100, since: 1000, quietMs: 500, expectMs: 2500 }), true);
  // the report came at 1200: settled once quiet for 500 ms
  assert.equal(isSettled({ now: 1600, lastChange: 1200, since: 1000, quietMs: 500, expectMs: 2500 }), false);
  assert.equal(isSettled({ now: 1800, lastChange: 1200, since: 1000, quietMs: 500, expectMs: 2500 }), true);
});

test('diagnostics of a file: waits for the report after the agent edit, lists it 1-based, severity filter', async () => {
  const file = path.join(root, 'a.ts');
  fs.writeFileSync(file, 'let x: number = "s";\n');
  const uri = Uri.file(file);
  const edit = new EditExecutor();
  const editAction = action('edit', { path: file, command: 'str_replace', old_str: 'let x', new_str: 'let y' });
  await k.afterChange(editAction, await edit.execute(editAction));
  // the "language server" reports 150 ms after the edit
  setTimeout(() => {
    const d = new Diagnostic(
      r(0, 4, 0, 5),
      "Type 'string' is not assignable to type 'number'.",
      DiagnosticSeverity.Error,
    );
    d.source = 'ts';
    d.code = 2322;
    const hint = new Diagnostic(r(0, 0, 0, 3), 'a hint', DiagnosticSeverity.Hint);
    knowledgeMock.setDiagnostics(uri, [d, hint]);
  }, 150);
  const o = await k.diagnostics(action('diagnostics', { path: 'a.ts', wait: 10 }), undefined);
  const extras = o.extras as JsonObject;
  const list = extras.diagnostics as JsonObject[];
  assert.equal(o.observation, 'diagnostics');
  assert.equal(extras.settled, true);
  assert.equal(list.length, 1, 'the hint is below the default severity (warning)');
  assert.deepEqual(
    { ...list[0] },
    {
      path: file,
      line: 1,
      column: 5,
      end_line: 1,
      end_column: 6,
      severity: 'error',
      message: "Type 'string' is not assignable to type 'number'.",
      source: 'ts',
      code: 2322,
    },
  );
  assert.match(
    String(o.content),
    new RegExp(
      `^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1:5: error: Type 'string'.*\\(ts 2322\\)\n1 error, 0 warnings in 1 file\\.$`,
    ),
  );
  const all = await k.diagnostics(action('diagnostics', { path: file, severity: 'hint', wait: 0 }), undefined);
  assert.equal(((all.extras as JsonObject).diagnostics as unknown[]).length, 2);
  // TypeScript checks only files open in a tab: the file got a background tab, once, without focus
  assert.equal(knowledgeMock.opened.length, 1);
  assert.deepEqual(knowledgeMock.opened[0].options, { preview: true, preserveFocus: true, background: true });
  assert.equal(knowledgeMock.shown.length, 0, 'the active editor did not change');
});

test('diagnostics is bounded: a server that keeps reporting gives settled=false after `wait`', async () => {
  const file = path.join(root, 'b.ts');
  fs.writeFileSync(file, 'x\n');
  const uri = Uri.file(file);
  await workspace.openTextDocument(uri);
  const t = setInterval(() => knowledgeMock.setDiagnostics(uri, []), 20);
  try {
    await new Promise((res) => setTimeout(res, 70)); // the server is busy publishing when we ask
    const o = await k.diagnostics(action('diagnostics', { path: file, wait: 0.3 }), undefined);
    assert.equal((o.extras as JsonObject).settled, false);
    assert.match(String(o.content), /still reporting/);
  } finally {
    clearInterval(t);
  }
});

test('a file just opened with no report says a starting server may report later', async () => {
  const file = path.join(root, 'quiet.ts');
  fs.writeFileSync(file, 'export {};\n');
  const o = await k.diagnostics(action('diagnostics', { path: file, wait: 0.2 }), undefined);
  assert.match(String(o.content), /^No problems \(error\/warning\) in .*quiet\.ts\..*may report later/s);
  // once a server has reported, no such note
  knowledgeMock.setDiagnostics(Uri.file(file), []);
  await new Promise((res) => setTimeout(res, 600));
  const again = await k.diagnostics(action('diagnostics', { path: file, wait: 0.2 }), undefined);
  assert.doesNotMatch(String(again.content), /may report later/);
});

test('workspace diagnostics list only files inside the folders; a path outside is PATH_DENIED', async () => {
  knowledgeMock.setDiagnostics(Uri.file(path.join(root, 'in.ts')), [
    new Diagnostic(r(2, 0, 2, 1), 'inside', DiagnosticSeverity.Warning),
  ]);
  knowledgeMock.setDiagnostics(Uri.file(path.join(outside, 'out.ts')), [new Diagnostic(r(0, 0, 0, 1), 'outside')]);
  const o = await k.diagnostics(action('diagnostics', { wait: 0 }), undefined);
  const list = (o.extras as JsonObject).diagnostics as JsonObject[];
  assert.deepEqual(
    list.map((d) => d.message),
    ['inside'],
  );
  assert.equal((o.extras as JsonObject).path, null);
  await assert.rejects(
    k.diagnostics(action('diagnostics', { path: path.join(outside, 'out.ts') }), undefined),
    (e: unknown) => {
      return e instanceof ToolError && e.errorId === 'PATH_DENIED';
    },
  );
});

test('edit with diagnostics: true carries the file diagnostics in extras and content', async () => {
  const file = path.join(root, 'c.ts');
  fs.writeFileSync(file, 'const a = 1;\n');
  const edit = new EditExecutor();
  const a = action('edit', {
    path: file,
    command: 'str_replace',
    old_str: 'const a = 1;',
    new_str: 'const a: string = 1;',
    diagnostics: true,
  });
  setTimeout(() => knowledgeMock.setDiagnostics(Uri.file(file), [new Diagnostic(r(0, 6, 0, 7), 'bad type')]), 100);
  const o = await k.afterChange(a, await edit.execute(a));
  assert.equal(o.observation, 'edit');
  const diags = (o.extras as JsonObject).diagnostics as JsonObject[];
  assert.equal(diags.length, 1);
  assert.equal(diags[0].message, 'bad type');
  assert.match(String(o.content), /Diagnostics after this change:\n.*c\.ts:1:7: error: bad type/);
  // without the flag: no extras key (OpenHands' deserializer refuses unknown keys)
  const b = action('edit', { path: file, command: 'view' });
  assert.equal('diagnostics' in ((await k.afterChange(b, await edit.execute(b))).extras as JsonObject), false);
});

test('open shows the file at the line with the range selected; editors reports it', async () => {
  const file = path.join(root, 'd.ts');
  fs.writeFileSync(file, 'one\ntwo\nthree\nfour\n');
  const o = await k.open(action('open', { path: file, line: 3, column: 2, end_line: 4 }));
  assert.equal(o.observation, 'open');
  assert.deepEqual(o.extras, { path: file, line: 3, column: 2, end_line: 4, end_column: 5 });
  assert.equal(knowledgeMock.shown.length, 1);
  knowledgeMock.tabs.push({ input: new TabInputText(Uri.file(file)), isDirty: false, isActive: true });
  knowledgeMock.tabs.push({
    input: new TabInputText(Uri.file(path.join(outside, 'secret.ts'))),
    isDirty: true,
    isActive: false,
  });
  const e = await k.editors(action('editors', {}));
  const extras = e.extras as JsonObject;
  assert.equal(extras.active, file);
  assert.equal(extras.others, 1, 'an editor outside the folders is counted, not named');
  const [ed] = extras.editors as JsonObject[];
  assert.deepEqual(ed.selection, {
    line: 3,
    column: 2,
    end_line: 4,
    end_column: 5,
    text: 'hree\nfour',
    truncated: false,
  });
  assert.equal(ed.active, true);
  assert.doesNotMatch(String(e.content), /secret/);
  assert.match(String(e.content), /d\.ts:3:2 \[active\] selection 3:2-4:5/);
});

test('open of a missing file is a TOOL_ERROR; a line past the end is clamped', async () => {
  await assert.rejects(
    k.open(action('open', { path: path.join(root, 'nope.ts') })),
    (e: unknown) => e instanceof ToolError && e.errorId === 'TOOL_ERROR',
  );
  fs.mkdirSync(path.join(root, 'dir'));
  await assert.rejects(
    k.definition(action('definition', { path: path.join(root, 'dir'), line: 1, column: 1 })),
    /is a directory/,
  );
  const file = path.join(root, 'e.ts');
  fs.writeFileSync(file, 'a\nb');
  const o = await k.open(action('open', { path: file, line: 99 }));
  assert.equal((o.extras as JsonObject).line, 2);
});

test('symbols: language-server results inside the folders, 1-based, limited', async () => {
  const file = path.join(root, 'f.ts');
  knowledgeMock.commands.set('vscode.executeWorkspaceSymbolProvider', (q) => {
    assert.equal(q, 'greet');
    return [
      {
        name: 'greet',
        kind: SymbolKind.Function,
        containerName: '',
        location: new Location(Uri.file(file), r(4, 16, 6, 1)),
      },
      {
        name: 'greetAll',
        kind: SymbolKind.Method,
        containerName: 'Greeter',
        location: new Location(Uri.file(file), r(9, 2, 9, 10)),
      },
      {
        name: 'greetLib',
        kind: SymbolKind.Function,
        containerName: '',
        location: new Location(Uri.file(path.join(outside, 'x.ts')), r(0, 0, 0, 1)),
      },
    ];
  });
  const o = await k.symbols(action('symbols', { query: 'greet' }));
  const list = (o.extras as JsonObject).symbols as JsonObject[];
  assert.deepEqual(list[0], { name: 'greet', kind: 'function', container: null, path: file, line: 5, column: 17 });
  assert.equal(list.length, 2, 'the symbol outside the folders is left out');
  assert.match(String(o.content), /f\.ts:10:3: method greetAll \(in Greeter\)/);
  const one = await k.symbols(action('symbols', { query: 'greet', limit: 1 }));
  assert.equal(((one.extras as JsonObject).symbols as unknown[]).length, 1);
});

test('definition and references: positions converted both ways, text only inside the folders', async () => {
  const file = path.join(root, 'g.ts');
  fs.writeFileSync(file, 'export function greet() {}\n\ngreet();\n');
  const lib = path.join(outside, 'lib.d.ts');
  let asked: Position | undefined;
  knowledgeMock.commands.set('vscode.executeDefinitionProvider', (_u, pos) => {
    asked = pos as Position;
    return [
      { targetUri: Uri.file(file), targetRange: r(0, 0, 0, 26), targetSelectionRange: r(0, 16, 0, 21) },
      new Location(Uri.file(lib), r(7, 2, 7, 4)),
    ];
  });
  knowledgeMock.commands.set('vscode.executeReferenceProvider', () => [
    new Location(Uri.file(file), r(0, 16, 0, 21)),
    new Location(Uri.file(file), r(2, 0, 2, 5)),
  ]);
  const d = await k.definition(action('definition', { path: file, line: 3, column: 1 }));
  assert.deepEqual(asked, new Position(2, 0));
  const locs = (d.extras as JsonObject).locations as JsonObject[];
  assert.deepEqual(locs[0], {
    path: file,
    line: 1,
    column: 17,
    end_line: 1,
    end_column: 22,
    text: 'export function greet() {}',
  });
  assert.deepEqual(locs[1], { path: lib, line: 8, column: 3, end_line: 8, end_column: 5, outside: true });
  assert.match(String(d.content), /lib\.d\.ts:8:3 \(outside the workspace\)/);
  const refs = await k.references(action('references', { path: file, line: 1, column: 17 }));
  assert.equal(((refs.extras as JsonObject).locations as unknown[]).length, 2);
  const noDecl = await k.references(
    action('references', { path: file, line: 1, column: 17, include_declaration: false }),
  );
  assert.deepEqual(
    ((noDecl.extras as JsonObject).locations as JsonObject[]).map((l) => l.line),
    [3],
  );
  await assert.rejects(k.definition(action('definition', { path: file, line: 40, column: 1 })), /past the end/);
});
