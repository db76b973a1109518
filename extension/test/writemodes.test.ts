// write modes create/append and the stat action (docs/protocol.md §3.9) against the vscode mock and a
// real temp folder: the local runtime's semantics and observation shapes (src/oh/runtimes/local/files.py).
import './vscodeMock'; // first: makes require('vscode') resolve to the mock
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { executeStat } from '../src/executors/stat';
import { executeWrite } from '../src/executors/write';
import { Action, JsonObject, Observation, parseAction, ProtocolError, ToolError } from '../src/protocol';
import { resetMock, TextDocument, Uri, workspace } from './vscodeMock';

let root: string;
let outside: string;

beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-wm-')));
  outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-wm-out-')));
  resetMock(root);
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

let nextId = 1;
const action = (kind: string, args: JsonObject): Action => parseAction({ id: nextId++, action: kind, args });
const extras = (o: Observation) => o.extras as JsonObject;

async function refusal(p: Promise<unknown>): Promise<ToolError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ToolError, `expected a ToolError, got ${e}`);
    return e;
  }
  assert.fail('expected a ToolError');
}

function badRequest(kind: string, args: JsonObject): ProtocolError {
  try {
    action(kind, args);
  } catch (e) {
    assert.ok(e instanceof ProtocolError && e.errorId === 'BAD_REQUEST', String(e));
    return e;
  }
  assert.fail(`accepted ${JSON.stringify(args)}`);
}

test('write mode create: writes a missing file (parents too); an existing one is left unchanged and the answer says so', async () => {
  const p = path.join(root, 'a', 'b', 'new.txt');
  const o = await executeWrite(action('write', { path: p, content: 'first\n', mode: 'create' }));
  assert.equal(o.observation, 'write');
  assert.equal(o.content, '');
  assert.equal(fs.readFileSync(p, 'utf8'), 'first\n');
  const again = await executeWrite(action('write', { path: p, content: 'second\n', mode: 'create' }));
  assert.equal(again.observation, 'write');
  assert.equal(again.content, `The file ${p} already exists; it was not changed (mode create).`);
  assert.equal(fs.readFileSync(p, 'utf8'), 'first\n');
  assert.deepEqual(fs.readdirSync(path.dirname(p)), ['new.txt'], 'no temporary file left behind');
  const bin = path.join(root, 'b.bin');
  await executeWrite(
    action('write', {
      path: bin,
      content: Buffer.from([0, 1, 255]).toString('base64'),
      mode: 'create',
      encoding: 'base64',
    }),
  );
  assert.deepEqual([...fs.readFileSync(bin)], [0, 1, 255]);
  const e = await refusal(executeWrite(action('write', { path: root, content: 'x', mode: 'create' })));
  assert.match(e.message, /is a directory/);
});

test('write mode create: concurrent creates of one name: exactly one writes, the others say it exists', async () => {
  const p = path.join(root, 'race.txt');
  const answers = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      executeWrite(action('write', { path: p, content: `writer ${i}\n`, mode: 'create' })),
    ),
  );
  const wrote = answers.filter((o) => o.content === '');
  assert.equal(wrote.length, 1);
  assert.match(fs.readFileSync(p, 'utf8'), /^writer \d\n$/);
  assert.deepEqual(fs.readdirSync(root), ['race.txt']);
});

test('write mode append: adds at the end, creates a missing file, keeps a legacy encoding, appends bytes for base64', async () => {
  const p = path.join(root, 'log', 'a.txt');
  await executeWrite(action('write', { path: p, content: 'one\n', mode: 'append' }));
  await executeWrite(action('write', { path: p, content: 'two\n', mode: 'append' }));
  assert.equal(fs.readFileSync(p, 'utf8'), 'one\ntwo\n');
  const l1 = path.join(root, 'latin.txt');
  fs.writeFileSync(l1, Buffer.from('caf\xe9\n', 'latin1'));
  await executeWrite(action('write', { path: l1, content: 'na\u00efve\n', mode: 'append' }));
  assert.deepEqual(fs.readFileSync(l1), Buffer.from('caf\xe9\nna\xefve\n', 'latin1'));
  await executeWrite(
    action('write', { path: l1, content: Buffer.from([0xff]).toString('base64'), mode: 'append', encoding: 'base64' }),
  );
  assert.equal(fs.readFileSync(l1).at(-1), 0xff);
  const bad = await refusal(
    executeWrite(action('write', { path: l1, content: 'not base64!', mode: 'append', encoding: 'base64' })),
  );
  assert.equal(bad.errorId, 'BAD_REQUEST');
});

test('write mode append: a hard-linked file is PATH_DENIED and unchanged; a directory is refused', async () => {
  const secret = path.join(outside, 'secret');
  fs.writeFileSync(secret, 'keep\n');
  const link = path.join(root, 'link.txt');
  fs.linkSync(secret, link);
  const e = await refusal(executeWrite(action('write', { path: link, content: 'x', mode: 'append' })));
  assert.equal(e.errorId, 'PATH_DENIED');
  assert.equal(fs.readFileSync(secret, 'utf8'), 'keep\n');
  assert.match(
    (await refusal(executeWrite(action('write', { path: root, content: 'x', mode: 'append' })))).message,
    /is a directory/,
  );
});

test('write mode append: an open document with unsaved text gets the text in its buffer, not saved', async () => {
  const p = path.join(root, 'open.txt');
  fs.writeFileSync(p, 'disk\n');
  const doc: TextDocument = await workspace.openTextDocument(Uri.file(p));
  doc.change(0, doc.getText().length, 'unsaved\n');
  const o = await executeWrite(action('write', { path: p, content: 'more\n', mode: 'append' }));
  assert.match(String(o.content), /NOTE/);
  assert.equal(doc.getText(), 'unsaved\nmore\n');
  assert.equal(fs.readFileSync(p, 'utf8'), 'disk\n');
});

test('write modes: bad mode, or create/append with a line range, are BAD_REQUEST', () => {
  assert.match(
    badRequest('write', { path: '/x', content: '', mode: 'replace' }).message,
    /args\.mode must be one of overwrite, create, append/,
  );
  assert.match(
    badRequest('write', { path: '/x', content: '', mode: 'append', start: 2 }).message,
    /drop args\.start\/args\.end/,
  );
  assert.match(
    badRequest('write', { path: '/x', content: '', mode: 'create', end: 3 }).message,
    /drop args\.start\/args\.end/,
  );
  action('write', { path: '/x', content: '', mode: 'overwrite', start: 2 }); // allowed
});

test('stat: a file, a directory, a missing path, a symlink; the local runtime shape', async () => {
  const p = path.join(root, 'notes.md');
  fs.writeFileSync(p, 'hello\n');
  fs.chmodSync(p, 0o640);
  const o = await executeStat(action('stat', { path: p }));
  assert.equal(o.observation, 'stat');
  const x = extras(o);
  assert.deepEqual(Object.keys(x).sort(), [
    'encoding',
    'exists',
    'link',
    'mime_type',
    'mode',
    'mtime',
    'path',
    'size',
    'type',
  ]);
  assert.equal(x.path, p);
  assert.equal(x.exists, true);
  assert.equal(x.type, 'file');
  assert.equal(x.size, 6);
  assert.equal(x.mode, '0640');
  assert.equal(x.encoding, 'utf-8');
  assert.equal(x.mime_type, 'text/markdown');
  assert.equal(x.link, false);
  assert.ok(Math.abs((x.mtime as number) - fs.statSync(p).mtimeMs / 1000) < 1e-3);
  assert.equal(o.content, `${p}: file, 6 bytes, mode 0640, utf-8.`);

  const d = extras(await executeStat(action('stat', { path: root })));
  assert.equal(d.type, 'directory');
  assert.equal(d.encoding, null);
  assert.equal(d.mime_type, null);

  const missing = path.join(root, 'nope', 'x');
  const m = await executeStat(action('stat', { path: missing }));
  assert.equal(m.content, `${missing} does not exist.`);
  assert.deepEqual(extras(m), {
    path: missing,
    exists: false,
    type: null,
    size: null,
    mtime: null,
    mode: null,
    encoding: null,
    mime_type: null,
    link: false,
  });

  const ln = path.join(root, 'ln');
  fs.symlinkSync(p, ln);
  const l = extras(await executeStat(action('stat', { path: ln })));
  assert.equal(l.link, true);
  assert.equal(l.type, 'file');
  assert.equal(l.mime_type, null, 'from the name given');
});

test('stat: encodings (binary, legacy, empty), a hard-linked file is not read, outside the roots is PATH_DENIED', async () => {
  const bin = path.join(root, 'x.png');
  fs.writeFileSync(bin, Buffer.from([0x89, 0x50, 0, 0, 1, 2]));
  const b = extras(await executeStat(action('stat', { path: bin })));
  assert.equal(b.encoding, 'binary');
  assert.equal(b.mime_type, 'image/png');
  const legacy = path.join(root, 'l.txt');
  fs.writeFileSync(legacy, Buffer.from('caf\xe9', 'latin1'));
  assert.equal(extras(await executeStat(action('stat', { path: legacy }))).encoding, 'latin-1');
  const empty = path.join(root, 'e.txt');
  fs.writeFileSync(empty, '');
  assert.equal(extras(await executeStat(action('stat', { path: empty }))).encoding, 'utf-8');
  // A UTF-8 character cut by the 64 KiB sample's end is still UTF-8.
  const big = path.join(root, 'big.txt');
  fs.writeFileSync(big, 'a'.repeat(64 * 1024 - 1) + '\u00e9'.repeat(10));
  assert.equal(extras(await executeStat(action('stat', { path: big }))).encoding, 'utf-8');
  const secret = path.join(outside, 's');
  fs.writeFileSync(secret, 'x');
  fs.linkSync(secret, path.join(root, 'hl'));
  const h = extras(await executeStat(action('stat', { path: path.join(root, 'hl') })));
  assert.equal(h.exists, true);
  assert.equal(h.encoding, null);
  const denied = await refusal(executeStat(action('stat', { path: secret })));
  assert.equal(denied.errorId, 'PATH_DENIED');
  badRequest('stat', { path: '' });
});
