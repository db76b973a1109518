// OHEditor semantics as pure string functions: uniqueness, insert, numbering, ranges, history (the diff: udiff.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  catN,
  decodeText,
  EditHistory,
  insertAt,
  minimalReplacement,
  numbered,
  readRange,
  sliceLines,
  splitLines,
  splitLinesKeepEnds,
  strReplace,
  viewFile,
  writeRange,
} from '../src/oheditor';
import { ToolError } from '../src/protocol';

function toolError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ToolError);
    assert.equal(e.errorId, 'TOOL_ERROR');
    return e.message;
  }
  assert.fail('expected a ToolError');
}

test('splitlines follows Python', () => {
  assert.deepEqual(splitLinesKeepEnds('a\nb\r\nc\rd'), ['a\n', 'b\r\n', 'c\r', 'd']);
  assert.deepEqual(splitLines('a\nb\n'), ['a', 'b']);
  assert.deepEqual(splitLines(''), []);
  assert.deepEqual(splitLines('x\x0cy\u2028z'), ['x', 'y', 'z']);
});

test('view numbering is cat -n style and a trailing newline adds no line', () => {
  assert.equal(numbered('a\nb\n'), '     1\ta\n     2\tb');
  assert.equal(numbered('a\n\tb', 9), '     9\ta\n    10\t\tb');
  assert.equal(numbered(''), '     1\t');
  assert.equal(catN('x\n', '/w/f'), "Here's the result of running `cat -n` on /w/f:\n     1\tx\n");
  assert.equal(
    viewFile('/w/f', 'a\nb\nc\nd\n', [2, 3]),
    "Here's the result of running `cat -n` on /w/f:\n     2\tb\n     3\tc\n",
  );
  assert.equal(
    viewFile('/w/f', 'a\nb\nc\n', [2, -1]),
    "Here's the result of running `cat -n` on /w/f:\n     2\tb\n     3\tc\n",
  );
  assert.match(viewFile('/w/f', 'x'.repeat(100), null, 20), /<response clipped>/);
});

test("view_range errors and notes are the OpenHands SDK file editor's", () => {
  assert.match(
    toolError(() => viewFile('/w/f', 'a\nb\n', [0, 1])),
    /Its first element `0` should be within the range of lines of the file: \[1, 2\]/,
  );
  // past the end: clamped with a NOTE (openhands-tools 1.58), not refused
  assert.equal(
    viewFile('/w/f', 'a\nb\n', [1, 5]),
    "NOTE: We only show up to 2 since there're only 2 lines in this file.\nHere's the result of running `cat -n` on /w/f:\n     1\ta\n     2\tb\n",
  );
  assert.equal(
    toolError(() => viewFile('/w/f', 'a\nb\n', [2, 1])),
    'Invalid `view_range` parameter: [2, 1]. Its second element `1` should be greater than or equal to the first element `2`.',
  );
});

test('read ranges: start/end are 0-based lines, view_range 1-based and wins', () => {
  const t = 'l0\nl1\nl2\nl3\n';
  assert.equal(readRange(t), t);
  assert.equal(readRange(t, 1, 3), 'l1\nl2\n');
  assert.equal(readRange(t, 2, -1), 'l2\nl3\n');
  assert.equal(readRange(t, 0, 99), t);
  assert.equal(readRange(t, 3, 1), '');
  assert.equal(readRange(t, 0, -1, [2, 3]), 'l1\nl2\n');
  assert.equal(sliceLines('no newline', 0, 1), 'no newline');
});

test('str_replace needs exactly one occurrence', () => {
  const text = 'alpha\nbeta\ngamma\nbeta\n';
  assert.equal(
    toolError(() => strReplace('/w/f', text, 'delta', 'x')),
    'No replacement was performed, old_str `delta` did not appear verbatim in /w/f.',
  );
  assert.equal(
    toolError(() => strReplace('/w/f', text, 'beta', 'x')),
    'No replacement was performed. Multiple occurrences of old_str `beta` in lines [2, 4]. Please ensure it is unique.',
  );
  assert.match(
    toolError(() => strReplace('/w/f', text, 'gamma', 'gamma')),
    /must be different/,
  );
  assert.match(
    toolError(() => strReplace('/w/f', text, '', 'x')),
    /`old_str` is required/,
  );
  const r = strReplace('/w/f', text, 'gamma', 'GAMMA\nmore');
  assert.equal(r.newText, 'alpha\nbeta\nGAMMA\nmore\nbeta\n');
  // whole files (the OpenHands SDK's FileEditorObservation wants them for its diff view)
  assert.equal(r.oldContent, text);
  assert.equal(r.newContent, r.newText);
  assert.equal(
    r.content,
    "The file /w/f has been edited. Here's the result of running `cat -n` on a snippet of /w/f:\n" +
      '     1\talpha\n     2\tbeta\n     3\tGAMMA\n     4\tmore\n     5\tbeta\n' +
      'Review the changes and make sure they are as expected. Edit the file again if necessary.',
  );
  // the SDK's snippet window: from 3 lines above the change (its 0-based max(0, line - 4), shown 1-based)
  const long = Array.from({ length: 12 }, (_, i) => `l${i + 1}`).join('\n') + '\n';
  const w = strReplace('/w/f', long, 'l8', 'L8');
  assert.match(w.content, /a snippet of \/w\/f:\n {5}5\tl5\n/);
  assert.match(w.content, /\n {4}12\tl12\nReview/);
  // new_str null/undefined deletes
  assert.equal(strReplace('/w/f', 'a-b', '-', null).newText, 'ab');
  // overlapping occurrences count once per non-overlapping match, like str.find stepping
  assert.match(
    toolError(() => strReplace('/w/f', 'aaaa', 'aa', 'b')),
    /Multiple occurrences of old_str `aa` in lines \[1\]/,
  );
});

test('insert after a line, 0 = top, out of range refused', () => {
  assert.equal(insertAt('/w/f', 'a\nb\n', 0, 'top').newText, 'top\na\nb\n');
  assert.equal(insertAt('/w/f', 'a\nb\n', 1, 'mid\n').newText, 'a\nmid\nb\n');
  assert.equal(insertAt('/w/f', 'a\nb\n', 2, 'end').newText, 'a\nb\nend\n');
  assert.equal(insertAt('/w/f', 'a\nb', 2, 'end').newText, 'a\nb\nend\n');
  assert.equal(insertAt('/w/f', '', 0, 'only').newText, 'only\n');
  assert.equal(
    toolError(() => insertAt('/w/f', 'a\nb\n', 3, 'x')),
    'Invalid `insert_line` parameter: 3. It should be within the range of allowed values: [0, 2]',
  );
  assert.match(
    toolError(() => insertAt('/w/f', 'a\n', -1, 'x')),
    /Invalid `insert_line` parameter: -1/,
  );
  const r = insertAt('/w/f', 'a\nb\n', 1, 'x');
  assert.equal(r.oldContent, 'a\nb\n');
  assert.equal(r.newContent, 'a\nx\nb\n');
  assert.match(
    r.content,
    /^The file \/w\/f has been edited\. Here's the result of running `cat -n` on a snippet of the edited file:\n {5}1\ta\n {5}2\tx\n {5}3\tb\n/,
  );
});

test('write ranges replace lines [start, end)', () => {
  assert.equal(writeRange('a\nb\nc\n', 'new'), 'new');
  assert.equal(writeRange(null, 'new', 1, 2), 'new');
  assert.equal(writeRange('a\nb\nc\n', 'X', 1, 2), 'a\nX\nc\n');
  assert.equal(writeRange('a\nb\nc\n', 'X\n', 1, -1), 'a\nX\n');
  assert.equal(writeRange('a', 'X', 1, -1), 'a\nX');
});

test('minimal replacement never splits \\r\\n or surrogate pairs', () => {
  const check = (o: string, n: string) => {
    const r = minimalReplacement(o, n);
    assert.equal(o.slice(0, r.start) + r.text + o.slice(r.end), n);
    return r;
  };
  assert.deepEqual(check('hello world', 'hello there world'), { start: 6, end: 6, text: 'there ' });
  assert.deepEqual(check('same', 'same'), { start: 4, end: 4, text: '' });
  check('', 'new');
  check('old', '');
  const crlf = check('a\r\nb', 'a\nb');
  assert.ok(crlf.start <= 1);
  const emoji = check('x😀y', 'x😃y');
  assert.equal(emoji.start, 1);
  assert.equal(emoji.end, 3);
});

test('edit history: newest first, bounded per file and in total', () => {
  const h = new EditHistory(2, 10);
  h.push('/a', 'v1');
  h.push('/a', 'v2');
  h.push('/a', 'v3');
  assert.equal(h.size('/a'), 2);
  assert.equal(h.pop('/a'), 'v3');
  assert.equal(h.pop('/a'), 'v2');
  assert.equal(h.pop('/a'), undefined);
  h.push('/b', '123456');
  h.push('/c', '123456'); // total 12 > 10: the least recently edited file's oldest entry goes
  assert.equal(h.pop('/b'), undefined);
  assert.equal(h.pop('/c'), '123456');
  h.push('/d', 'x'.repeat(11)); // bigger than the whole budget: not kept
  assert.equal(h.pop('/d'), undefined);
});

test('binary and non-UTF-8 files are refused', () => {
  assert.equal(decodeText('/w/t', new TextEncoder().encode('héllo')), 'héllo');
  assert.match(
    toolError(() => decodeText('/w/b', new Uint8Array([0x41, 0, 0x42]))),
    /binary file \(it contains NUL bytes\)/,
  );
  assert.match(
    toolError(() => decodeText('/w/l', new Uint8Array([0xff, 0xfe, 0x41]))),
    /not UTF-8 text/,
  );
});
