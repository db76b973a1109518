// Path resolution and the workspace check (PATH_DENIED), with real symlinks; and directory listings.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { listDirectory } from '../src/listing';
import { resolvePath, WorkspaceRoot } from '../src/paths';
import { ToolError } from '../src/protocol';

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oh-paths-')));
after(() => fs.rmSync(base, { recursive: true, force: true }));
const ws = path.join(base, 'ws');
const ws2 = path.join(base, 'ws2');
const outside = path.join(base, 'outside');
for (const d of [ws, path.join(ws, 'src'), ws2, outside]) fs.mkdirSync(d, { recursive: true });
fs.writeFileSync(path.join(ws, 'src', 'a.py'), 'x');
fs.writeFileSync(path.join(outside, 'secret'), 's');
fs.symlinkSync(outside, path.join(ws, 'escape'));
fs.symlinkSync(path.join(outside, 'new-file'), path.join(ws, 'dangling'));
fs.symlinkSync(path.join(ws, 'src'), path.join(ws, 'inner-link'));
fs.symlinkSync(ws, path.join(base, 'ws-link'));

const roots: WorkspaceRoot[] = [
  { path: path.join(base, 'ws-link'), real: ws },
  { path: ws2, real: ws2 },
];

async function denied(raw: string): Promise<string> {
  try {
    await resolvePath(raw, roots);
  } catch (e) {
    assert.ok(e instanceof ToolError);
    assert.equal(e.errorId, 'PATH_DENIED', raw);
    return e.message;
  }
  assert.fail(`${raw} should be denied`);
}

test('relative paths resolve against the first folder, as VS Code knows it', async () => {
  const r = await resolvePath('src/a.py', roots);
  assert.equal(r.shown, path.join(base, 'ws-link', 'src', 'a.py'));
  assert.equal(r.real, path.join(ws, 'src', 'a.py'));
  assert.equal(r.folderIndex, 0);
  assert.deepEqual(r.segments, ['src', 'a.py']);
});

test('files that do not exist yet resolve through their nearest existing parent', async () => {
  const r = await resolvePath(path.join(ws2, 'new', 'deep', 'f.txt'), roots);
  assert.equal(r.folderIndex, 1);
  assert.deepEqual(r.segments, ['new', 'deep', 'f.txt']);
  const root = await resolvePath(ws2, roots);
  assert.deepEqual(root.segments, []);
});

test('escapes through .., symlinks and dangling symlinks are PATH_DENIED', async () => {
  assert.match(await denied(path.join(ws, '..', 'outside', 'secret')), /outside the workspace and allowed roots/);
  assert.match(await denied(path.join(ws, 'escape', 'secret')), /it resolves to/);
  await denied(path.join(ws, 'escape', 'brand-new'));
  await denied(path.join(ws, 'dangling'));
  await denied('/etc/passwd');
  await denied('../outside/secret');
});

test('a symlink that stays inside is fine', async () => {
  const r = await resolvePath(path.join(ws, 'inner-link', 'a.py'), roots);
  assert.equal(r.real, path.join(ws, 'src', 'a.py'));
});

test('no folders: nothing is allowed', async () => {
  await assert.rejects(resolvePath('/x', []), (e: unknown) => e instanceof ToolError && e.errorId === 'PATH_DENIED');
});

test('directory listing: two levels, hidden excluded and counted, sorted', async () => {
  const d = path.join(base, 'listing');
  for (const p of ['b/inner/deep', 'a', '.git/objects']) fs.mkdirSync(path.join(d, p), { recursive: true });
  fs.writeFileSync(path.join(d, 'z.txt'), '');
  fs.writeFileSync(path.join(d, '.env'), '');
  fs.writeFileSync(path.join(d, 'b', 'inner', 'deep', 'x'), '');
  fs.writeFileSync(path.join(d, 'b', '.hidden'), '');
  const out = await listDirectory('/shown/listing', d);
  assert.equal(
    out,
    "Here's the files and directories up to 2 levels deep in /shown/listing, excluding hidden items:\n" +
      '/shown/listing/\n/shown/listing/a/\n/shown/listing/b/\n/shown/listing/b/inner/\n/shown/listing/z.txt\n\n' +
      "2 hidden files/directories in this directory are excluded. You can use 'ls -la /shown/listing' to see them.",
  );
  const capped = await listDirectory('/s', d, 2);
  assert.match(capped, /listing truncated after 2 entries/);
});

test('a nested backend confines to ITS workspace; relative paths resolve against the agent workdir (issue 9 #14)', async () => {
  // window open on ws, backend on ws/src: ws itself (and ws/escape...) is outside
  const backendRoots: WorkspaceRoot[] = [{ path: path.join(ws, 'src'), real: path.join(ws, 'src') }];
  for (const raw of [ws, path.join(ws, 'src', '..'), '..']) {
    await assert.rejects(
      resolvePath(raw, backendRoots, path.join(ws, 'src')),
      (e: unknown) => e instanceof ToolError && e.errorId === 'PATH_DENIED',
      raw,
    );
  }
  const rel = await resolvePath('a.py', backendRoots, path.join(ws, 'src'));
  assert.equal(rel.real, path.join(ws, 'src', 'a.py'));
  // an allowed root outside the window's folders is reachable
  const withScratch = [...backendRoots, { path: outside, real: outside }];
  assert.equal((await resolvePath(path.join(outside, 'secret'), withScratch)).real, path.join(outside, 'secret'));
});

test('listing never shows entries of a symlinked folder outside the allowed roots (issue 9 #7)', async () => {
  const out = await listDirectory(ws, ws, undefined, [ws]);
  assert.doesNotMatch(out, /escape/); // -> outside/
  assert.doesNotMatch(out, /secret/);
  assert.match(out, /inner-link\//); // a link that stays inside is listed
  assert.match(out, /inner-link\/a\.py/);
  // without roots (the old behaviour) the outside folder's entries leaked
  assert.match(await listDirectory(ws, ws), /escape\/secret/);
});

test('a path component over 255 bytes is a TOOL_ERROR, not a crash', async () => {
  await assert.rejects(
    resolvePath(path.join(ws, 'x'.repeat(300)), roots),
    (e: unknown) => e instanceof ToolError && e.errorId === 'TOOL_ERROR' && /File name too long/.test(e.message),
  );
});

test('a hard-linked file is not read or edited (it may be an outside file), like the local runtime', async () => {
  const { refuseHardLink } = await import('../src/paths');
  const single = path.join(ws, 'single.txt');
  fs.writeFileSync(single, 'x');
  await refuseHardLink(single, single); // one name: fine
  fs.linkSync(path.join(outside, 'secret'), path.join(ws, 'hard'));
  await assert.rejects(
    refuseHardLink(path.join(ws, 'hard'), path.join(ws, 'hard')),
    (e: unknown) => e instanceof ToolError && e.errorId === 'PATH_DENIED' && /has 2 hard links/.test(e.message),
  );
});
