// Non-UTF-8 text files: the documented detection heuristic, byte-exact round trips, base64 mime types.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envScript, findPython } from '../src/executors/shellenv';
import { ToolError } from '../src/protocol';
import { canonicalEncoding, decodeBytes, encodeText, guessMimeType } from '../src/textenc';

test('UTF-8, latin-1, cp1252, UTF-16 with BOM, binary', () => {
  assert.deepEqual(decodeBytes(Buffer.from('héllo\n')), { text: 'héllo\n', encoding: 'utf-8', bom: false });
  assert.deepEqual(decodeBytes(Buffer.from('caf\xe9\n', 'latin1')), {
    text: 'café\n',
    encoding: 'latin-1',
    bom: false,
  });
  const cp = Buffer.from([0x93, 0x71, 0x94, 0x20, 0x80, 0x0a]); // “q” €
  assert.deepEqual(decodeBytes(cp), { text: '\u201cq\u201d \u20ac\n', encoding: 'cp1252', bom: false });
  const u16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('hi\n', 'utf16le')]);
  assert.deepEqual(decodeBytes(u16), { text: 'hi\n', encoding: 'utf-16-le', bom: true });
  assert.equal(decodeBytes(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d])), null);
  assert.equal(decodeBytes(Buffer.from([1, 2, 3, 4, 5, 6, 0x41])), null); // control bytes only
});

test('writing back in the same encoding is byte-exact outside the change', () => {
  for (const bytes of [
    Buffer.from('caf\xe9 \xff\n', 'latin1'),
    Buffer.from([0x93, 0x71, 0x94, 0x20, 0x80, 0x81, 0x0a]),
    Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from('hi', 'utf16le').swap16()]),
  ]) {
    const d = decodeBytes(bytes)!;
    assert.deepEqual(Buffer.from(encodeText(d.text, d.encoding, d.bom)), bytes, d.encoding);
  }
  const d = decodeBytes(Buffer.from('caf\xe9\n', 'latin1'))!;
  assert.deepEqual(
    Buffer.from(encodeText(d.text.replace('café', 'thé'), d.encoding)),
    Buffer.from('th\xe9\n', 'latin1'),
  );
  assert.throws(
    () => encodeText('€', 'latin-1', false, '/w/f'),
    (e: unknown) => e instanceof ToolError && /U\+20AC/.test(e.message),
  );
});

test('encoding names, mime types, env exports, python lookup', () => {
  assert.equal(canonicalEncoding('ISO-8859-1'), 'latin-1');
  assert.equal(canonicalEncoding('utf_8'), 'utf-8');
  assert.equal(canonicalEncoding('Windows-1252'), 'cp1252');
  assert.equal(canonicalEncoding('shift_jis'), null);
  assert.equal(guessMimeType('/a/B.PNG'), 'image/png');
  assert.equal(guessMimeType('/a/blob'), 'application/octet-stream');
  assert.equal(envScript({ A: "it's", B: '$(rm -rf /)' }), `export A='it'\\''s'\nexport B='$(rm -rf /)'\n`);
  assert.equal(findPython('/nonexistent-dir'), null);
});
