// The executors (src/executors/*) against a mocked `vscode` (./vscodeMock.ts) and a real temp folder:
// the document-is-the-truth rule, WorkspaceEdits (undoable) instead of raw writes, refusals, diffs.
import './vscodeMock'; // first: makes require('vscode') resolve to the mock
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { EditExecutor } from '../src/executors/edit';
import { executeRead } from '../src/executors/read';
import { executeWrite } from '../src/executors/write';
import { Action, BINARY_BODY, JsonObject, Observation, packBinary, parseAction, ToolError } from '../src/protocol';
import { unifiedDiff } from '../src/udiff';
import { mock, resetMock, TextDocument, Uri, workspace } from './vscodeMock';

let root: string;
let outside: string;

beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-exec-')));
  outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-outside-')));
  resetMock(root);
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

let nextId = 1;
function action(kind: string, args: JsonObject): Action {
  return parseAction({ id: nextId++, action: kind, args });
}

async function refusal(p: Promise<unknown>): Promise<ToolError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ToolError, `expected a ToolError, got ${e}`);
    return e;
  }
  assert.fail('expected a ToolError');
}

function file(rel: string, text: string): string {
  const p = path.join(root, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, text);
  return p;
}

/** A document open in the (mock) editor, optionally with unsaved text. */
async function openDoc(p: string, unsaved?: string): Promise<TextDocument> {
  const doc = await workspace.openTextDocument(Uri.file(p));
  if (unsaved !== undefined) doc.change(0, doc.getText().length, unsaved);
  return doc;
}

const extras = (o: Observation) => o.extras as JsonObject;

// ------------------------------------------------------------------------------------------- read
test('read: disk text, relative paths, ranges', async () => {
  file('a.txt', 'one\ntwo\nthree\n');
  const o = await executeRead(action('read', { path: 'a.txt' }));
  assert.equal(o.observation, 'read');
  assert.equal(o.content, 'one\ntwo\nthree\n');
  assert.equal(extras(o).path, 'a.txt');
  assert.equal(
    (await executeRead(action('read', { path: path.join(root, 'a.txt'), start: 1, end: 2 }))).content,
    'two\n',
  );
  assert.equal((await executeRead(action('read', { path: 'a.txt', view_range: [2, -1] }))).content, 'two\nthree\n');
});

test('read: an open document with unsaved changes is the truth', async () => {
  const p = file('a.txt', 'on disk\n');
  await openDoc(p, 'unsaved\n');
  assert.equal((await executeRead(action('read', { path: 'a.txt' }))).content, 'unsaved\n');
});

test('read: refusals say what to do', async () => {
  file('dir/x', '');
  fs.writeFileSync(path.join(root, 'bin'), Buffer.from([0x41, 0, 0x42]));
  assert.match((await refusal(executeRead(action('read', { path: 'missing.txt' })))).message, /does not exist/);
  assert.match((await refusal(executeRead(action('read', { path: 'dir' })))).message, /is a directory.*`view`/);
  assert.match((await refusal(executeRead(action('read', { path: 'bin' })))).message, /binary file/);
});

test('read: paths outside the workspace are PATH_DENIED, also through a symlink', async () => {
  fs.writeFileSync(path.join(outside, 'secret'), 's');
  fs.symlinkSync(outside, path.join(root, 'link'));
  for (const p of [path.join(outside, 'secret'), '../' + path.basename(outside) + '/secret', 'link/secret']) {
    const e = await refusal(executeRead(action('read', { path: p })));
    assert.equal(e.errorId, 'PATH_DENIED', p);
  }
  resetMock(root);
  workspace.workspaceFolders = [];
  assert.match((await refusal(executeRead(action('read', { path: 'a' })))).message, /no folder open/);
});

// ------------------------------------------------------------------------------------------- write
test('write: creates parents, writes bytes, no document involved', async () => {
  const o = await executeWrite(action('write', { path: 'new/deep/f.txt', content: 'héllo\n' }));
  assert.equal(o.observation, 'write');
  assert.equal(fs.readFileSync(path.join(root, 'new/deep/f.txt'), 'utf8'), 'héllo\n');
  assert.equal(mock.appliedEdits.length, 0);
});

test('write: a line range replaces only those lines', async () => {
  const p = file('f.txt', 'a\nb\nc\n');
  await executeWrite(action('write', { path: 'f.txt', content: 'B\n', start: 1, end: 2 }));
  assert.equal(fs.readFileSync(p, 'utf8'), 'a\nB\nc\n');
});

test('write: an open document with unsaved text is replaced by one undoable edit and saved', async () => {
  const p = file('f.txt', 'disk\n');
  const doc = await openDoc(p, 'unsaved\n');
  await executeWrite(action('write', { path: 'f.txt', content: 'agent\n' }));
  assert.equal(doc.getText(), 'agent\n');
  assert.equal(doc.isDirty, false);
  assert.equal(fs.readFileSync(p, 'utf8'), 'agent\n');
  assert.equal(mock.appliedEdits.length, 1);
});

test('write: an open clean document shows the new text (reloaded, or set when no reload comes)', async () => {
  const p = file('f.txt', 'old\n');
  const doc = await openDoc(p);
  await executeWrite(action('write', { path: 'f.txt', content: 'new\n' }));
  assert.equal(doc.getText(), 'new\n');
  assert.equal(mock.appliedEdits.length, 0); // VS Code's own reload did it
  mock.reloadOnWrite = false;
  await executeWrite(action('write', { path: 'f.txt', content: 'newer\n' }));
  assert.equal(doc.getText(), 'newer\n');
  assert.equal(fs.readFileSync(p, 'utf8'), 'newer\n');
});

test('write: a directory is refused; a refused edit is reported', async () => {
  fs.mkdirSync(path.join(root, 'd'));
  assert.match((await refusal(executeWrite(action('write', { path: 'd', content: 'x' })))).message, /is a directory/);
  const p = file('f.txt', 'disk\n');
  await openDoc(p, 'unsaved\n');
  mock.refuseEdits = true;
  assert.match(
    (await refusal(executeWrite(action('write', { path: 'f.txt', content: 'x' })))).message,
    /VS Code refused the edit/,
  );
  assert.equal(fs.readFileSync(p, 'utf8'), 'disk\n');
});

// ------------------------------------------------------------------------------------------- edit
test('edit create: a new file through one WorkspaceEdit, refused when it exists', async () => {
  const ed = new EditExecutor();
  const o = await ed.execute(action('edit', { path: 'src/n.py', command: 'create', file_text: 'print(1)\n' }));
  assert.equal(o.observation, 'edit');
  assert.equal(fs.readFileSync(path.join(root, 'src/n.py'), 'utf8'), 'print(1)\n');
  assert.equal(extras(o).prev_exist, false);
  assert.equal(extras(o).diff, unifiedDiff(path.join(root, 'src/n.py'), '', 'print(1)\n'));
  assert.equal(mock.appliedEdits.length, 1);
  const again = await refusal(ed.execute(action('edit', { path: 'src/n.py', command: 'create', file_text: 'x' })));
  assert.match(again.message, /already exists/);
});

test('edit str_replace / insert / undo_edit: edits land in the document, are saved, and undo restores', async () => {
  const p = file('m.py', 'def f():\n    return 1\n');
  const ed = new EditExecutor();
  const o = await ed.execute(
    action('edit', { path: 'm.py', command: 'str_replace', old_str: 'return 1', new_str: 'return 2' }),
  );
  assert.equal(fs.readFileSync(p, 'utf8'), 'def f():\n    return 2\n');
  assert.match(String(o.content), /has been edited/);
  assert.equal(extras(o).diff, unifiedDiff(p, 'def f():\n    return 1\n', 'def f():\n    return 2\n'));
  // whole files, as the OpenHands SDK's FileEditorObservation wants them
  assert.equal(extras(o).old_content, 'def f():\n    return 1\n');
  assert.equal(extras(o).new_content, 'def f():\n    return 2\n');

  await ed.execute(action('edit', { path: 'm.py', command: 'insert', insert_line: 0, new_str: '# top' }));
  assert.equal(fs.readFileSync(p, 'utf8'), '# top\ndef f():\n    return 2\n');
  // Each change is a WorkspaceEdit on the document (on VS Code's undo stack), never a raw disk write.
  assert.equal(mock.appliedEdits.length, 2);

  await ed.execute(action('edit', { path: 'm.py', command: 'undo_edit' }));
  assert.equal(fs.readFileSync(p, 'utf8'), 'def f():\n    return 2\n');
  await ed.execute(action('edit', { path: 'm.py', command: 'undo_edit' }));
  assert.equal(fs.readFileSync(p, 'utf8'), 'def f():\n    return 1\n');
  assert.match(
    (await refusal(ed.execute(action('edit', { path: 'm.py', command: 'undo_edit' })))).message,
    /No edit history/,
  );
});

test('edit: works on the unsaved text of an open document, and never saves it (issue 9 #16)', async () => {
  const p = file('u.txt', 'disk\n');
  const doc = await openDoc(p, 'alpha\nbeta\n');
  const ed = new EditExecutor();
  const o = await ed.execute(
    action('edit', { path: 'u.txt', command: 'str_replace', old_str: 'beta', new_str: 'gamma' }),
  );
  assert.equal(doc.getText(), 'alpha\ngamma\n');
  // the user's unsaved text (and the edit made on it) stays in the buffer: the disk keeps the saved text
  assert.equal(fs.readFileSync(p, 'utf8'), 'disk\n');
  assert.match(
    String(o.content),
    /unsaved changes by the user in VS Code\. The edit was applied to the editor .* but NOT saved/,
  );
  assert.equal(extras(o).old_content, 'alpha\nbeta\n');
  assert.equal(extras(o).new_content, 'alpha\ngamma\n');
  // undo follows the same rule
  await ed.execute(action('edit', { path: 'u.txt', command: 'undo_edit' }));
  assert.equal(doc.getText(), 'alpha\nbeta\n');
  assert.equal(fs.readFileSync(p, 'utf8'), 'disk\n');
});

test('edit: refusals (not unique, missing, binary, VS Code refusing, save failing) change nothing', async () => {
  const p = file('r.txt', 'x\nx\n');
  fs.writeFileSync(path.join(root, 'bin'), Buffer.from([0, 1, 2]));
  const ed = new EditExecutor();
  const dup = await refusal(
    ed.execute(action('edit', { path: 'r.txt', command: 'str_replace', old_str: 'x', new_str: 'y' })),
  );
  assert.match(dup.message, /Multiple occurrences/);
  const missing = await refusal(
    ed.execute(action('edit', { path: 'nope', command: 'str_replace', old_str: 'x', new_str: 'y' })),
  );
  assert.match(missing.message, /does not exist/);
  const bin = await refusal(
    ed.execute(action('edit', { path: 'bin', command: 'insert', insert_line: 0, new_str: 'y' })),
  );
  assert.match(bin.message, /binary/);
  mock.refuseEdits = true;
  const refused = await refusal(
    ed.execute(action('edit', { path: 'r.txt', command: 'insert', insert_line: 0, new_str: 'y' })),
  );
  assert.match(refused.message, /VS Code refused the edit/);
  mock.refuseEdits = false;
  mock.failSave = true;
  const unsaved = await refusal(
    ed.execute(action('edit', { path: 'r.txt', command: 'insert', insert_line: 0, new_str: 'y' })),
  );
  assert.match(unsaved.message, /could not save/);
  assert.equal(fs.readFileSync(p, 'utf8'), 'x\nx\n');
  const denied = await refusal(
    ed.execute(action('edit', { path: path.join(outside, 'f'), command: 'create', file_text: 'x' })),
  );
  assert.equal(denied.errorId, 'PATH_DENIED');
  assert.equal(fs.existsSync(path.join(outside, 'f')), false);
});

test('edit view: a file cat -n style, a directory two levels deep without hidden entries', async () => {
  file('v/a.txt', 'l1\nl2\n');
  file('v/sub/b.txt', '');
  file('v/.hidden', '');
  const ed = new EditExecutor();
  const f = await ed.execute(action('edit', { path: 'v/a.txt', command: 'view' }));
  assert.equal(
    f.content,
    `Here's the result of running \`cat -n\` on ${path.join(root, 'v/a.txt')}:\n     1\tl1\n     2\tl2\n`,
  );
  const d = await ed.execute(action('edit', { path: 'v', command: 'view' }));
  const listing = String(d.content);
  assert.match(listing, /v\/a\.txt\n/);
  assert.match(listing, /v\/sub\/\n/);
  assert.match(listing, /v\/sub\/b\.txt/);
  assert.doesNotMatch(listing, /\.hidden\n/);
  assert.match(listing, /1 hidden files\/directories/);
  const bad = await refusal(ed.execute(action('edit', { path: 'v', command: 'view', view_range: [1, 2] })));
  assert.match(bad.message, /not allowed when `path` points to a directory/);
});

// ---------------------------------------------------------------------------------------------
// Wave 2 (SPEC-wave2 D): encodings, base64, parents created, allowed roots from the backend.

test('read encoding base64: raw bytes, mime type, extras only when asked; binary auto read says to ask', async () => {
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]);
  fs.writeFileSync(path.join(root, 'i.png'), png);
  const o = await executeRead(action('read', { path: 'i.png', encoding: 'base64' }));
  assert.deepEqual(Buffer.from(String(o.content), 'base64'), png);
  assert.equal(extras(o).encoding, 'base64');
  assert.equal(extras(o).mime_type, 'image/png');
  const e = await refusal(executeRead(action('read', { path: 'i.png' })));
  assert.match(e.message, /binary file .*args\.encoding "base64"/);
  const img = await refusal(new EditExecutor().execute(action('edit', { path: 'i.png', command: 'view' })));
  assert.match(img.message, /is an image; get its bytes with the read action/);
});

test('read encoding binary (§3.7): the bytes ride beside the observation, packed as one binary frame', async () => {
  const blob = Buffer.from([...Array(256).keys()]);
  fs.writeFileSync(path.join(root, 'b.bin'), blob);
  const o = await executeRead(action('read', { path: 'b.bin', encoding: 'binary' }));
  assert.equal('content' in o, false, 'no content in the JSON part');
  assert.equal(extras(o).encoding, 'binary');
  assert.equal(extras(o).mime_type, 'application/octet-stream');
  const body = (o as Record<symbol, unknown>)[BINARY_BODY] as Uint8Array;
  assert.deepEqual(Buffer.from(body), blob);
  o.cause = 5;
  const frame = packBinary(o, body);
  const n = frame.readUInt32BE(0);
  assert.equal(frame[0], 0, 'byte 0 is 0x00: never mistaken for JSON');
  const header = JSON.parse(frame.subarray(4, 4 + n).toString('utf8'));
  assert.equal(header.observation, 'read');
  assert.equal(header.cause, 5);
  assert.equal(header.content, undefined);
  assert.deepEqual(frame.subarray(4 + n), blob);
  assert.ok(!JSON.stringify(o).includes('binary body'), 'the bytes never reach the JSON');
});

test('non-UTF-8 text: read decoded, edited and written back in its own encoding', async () => {
  const p = path.join(root, 'l1.txt');
  fs.writeFileSync(p, Buffer.from('caf\xe9 cr\xe8me\n', 'latin1'));
  assert.equal((await executeRead(action('read', { path: 'l1.txt' }))).content, 'café crème\n');
  await new EditExecutor().execute(
    action('edit', { path: 'l1.txt', command: 'str_replace', old_str: 'crème', new_str: 'brûlée' }),
  );
  assert.deepEqual(fs.readFileSync(p), Buffer.from('caf\xe9 br\xfbl\xe9e\n', 'latin1'));
  await executeWrite(action('write', { path: 'l1.txt', content: 'déjà\n' })); // no encoding: keeps latin-1
  assert.deepEqual(fs.readFileSync(p), Buffer.from('d\xe9j\xe0\n', 'latin1'));
  await executeWrite(action('write', { path: 'l1.txt', content: 'déjà\n', encoding: 'utf-8' })); // asked: converts
  assert.equal(fs.readFileSync(p, 'utf8'), 'déjà\n');
  const bad = await refusal(executeWrite(action('write', { path: 'x.txt', content: 'x', encoding: 'shift_jis' })));
  assert.match(bad.message, /not supported by the VS Code extension/);
});

test('write base64 creates parent folders; invalid base64 is BAD_REQUEST and writes nothing', async () => {
  await executeWrite(
    action('write', { path: 'a/b/c.bin', content: Buffer.from([0, 1, 255]).toString('base64'), encoding: 'base64' }),
  );
  assert.deepEqual(fs.readFileSync(path.join(root, 'a', 'b', 'c.bin')), Buffer.from([0, 1, 255]));
  const e = await refusal(executeWrite(action('write', { path: 'd.bin', content: 'not base64!', encoding: 'base64' })));
  assert.equal(e.errorId, 'BAD_REQUEST');
  assert.equal(fs.existsSync(path.join(root, 'd.bin')), false);
});

test('a ranged write into a document with unsaved text is not saved (issue 9 #16)', async () => {
  const p = file('w.txt', 'one\ntwo\n');
  const doc = await openDoc(p, 'one\ntwo\nuser\n');
  const o = await executeWrite(action('write', { path: 'w.txt', content: 'TWO\n', start: 1, end: 2 }));
  assert.equal(doc.getText(), 'one\nTWO\nuser\n');
  assert.equal(fs.readFileSync(p, 'utf8'), 'one\ntwo\n');
  assert.match(String(o.content), /NOT saved/);
});

test('paths follow the backend roots from the registered answer, not the window folders', async () => {
  const sub = path.join(root, 'sub');
  fs.mkdirSync(sub);
  file('top.txt', 'top\n');
  file('sub/in.txt', 'in\n');
  fs.writeFileSync(path.join(outside, 'scratch.txt'), 'scratch\n');
  const ctx = { backend: 'b', instanceId: 'b', workspace: sub, roots: [sub, outside] };
  const relative = await executeRead(
    parseAction({
      id: nextId++,
      action: 'read',
      args: { path: 'in.txt' },
      agent: { id: 'a', name: 'n', workdir: sub, shell: 's' },
    }),
    undefined,
    ctx,
  );
  assert.equal(relative.content, 'in\n');
  const denied = await refusal(executeRead(action('read', { path: path.join(root, 'top.txt') }), undefined, ctx));
  assert.equal(denied.errorId, 'PATH_DENIED');
  // an allowed root outside the window's folders is served (through a file:// Uri)
  assert.equal(
    (await executeRead(action('read', { path: path.join(outside, 'scratch.txt') }), undefined, ctx)).content,
    'scratch\n',
  );
});
