// The edit observation's diff: byte for byte the backend's (src/oh/protocol/udiff.py) on the shared corpus.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { splitLinesKeepEnds } from '../src/oheditor';
import { LineMatcher, WORK_BUDGET, unifiedDiff } from '../src/udiff';

interface DiffCase {
  path: string;
  context: number;
  old: string;
  new: string;
  diff: string;
  budget?: number;
}

// Written by tests/contract/gen_diff_corpus.py from Python's rule; out/test/ -> repo/tests/contract/.
const CORPUS = path.join(__dirname, '..', '..', '..', 'tests', 'contract', 'diff-corpus.json');

/** Applies a unified diff to `old`: a correct patch, not only the expected text. */
function applyDiff(old: string, diff: string): string {
  const a = splitLinesKeepEnds(old);
  const lines = diff.split('\n');
  const out: string[] = [];
  let ai = 0;
  let i = 2;
  while (i < lines.length && lines[i] !== '') {
    const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$/.exec(lines[i]);
    assert.ok(m, `hunk header: ${lines[i]}`);
    const start = m[2] === '0' ? Number(m[1]) : Number(m[1]) - 1;
    while (ai < start) out.push(a[ai++]);
    i++;
    while (i < lines.length && lines[i] !== '' && !lines[i].startsWith('@@')) {
      const l = lines[i];
      const noEol = lines[i + 1] === '\\ No newline at end of file';
      const text = l.slice(1) + (noEol ? '' : '\n');
      if (l[0] !== '+') assert.equal(a[ai++], text);
      if (l[0] !== '-') out.push(text);
      i += noEol ? 2 : 1;
    }
  }
  while (ai < a.length) out.push(a[ai++]);
  return out.join('');
}

test('shared corpus: every diff equals the one Python wrote', () => {
  const cases: DiffCase[] = JSON.parse(fs.readFileSync(CORPUS, 'utf8'));
  assert.ok(cases.length >= 3000, `corpus has ${cases.length} cases`);
  const wrong = cases.flatMap((c, k) =>
    unifiedDiff(c.path, c.old, c.new, c.context, c.budget ?? WORK_BUDGET) === c.diff ? [] : [k],
  );
  assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} of ${cases.length} cases differ`);
});

test('known shapes: labels, ranges, missing final newline, empty sides', () => {
  assert.equal(
    unifiedDiff('/w/a', 'a\nb\nc\n', 'a\nB\nc\n'),
    '--- a/w/a\n+++ b/w/a\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n',
  );
  assert.equal(unifiedDiff('rel', '', 'x\ny\n'), '--- a/rel\n+++ b/rel\n@@ -0,0 +1,2 @@\n+x\n+y\n');
  assert.equal(
    unifiedDiff('r', 'x\ny', 'x\nz'),
    '--- a/r\n+++ b/r\n@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+z\n\\ No newline at end of file\n',
  );
  assert.equal(unifiedDiff('/w/s', 'same', 'same'), '');
});

test('difflib choices a shortest edit script would not make', () => {
  // difflib matches the longest block first ("b c" here), then recurses left and right of it.
  assert.deepEqual(new LineMatcher(['a', 'b', 'c', 'a'], ['b', 'c', 'a', 'b']).opcodes(), [
    ['delete', 0, 1, 0, 0],
    ['equal', 1, 4, 0, 3],
    ['insert', 4, 4, 3, 4],
  ]);
  // autojunk: in 200+ lines a line seen more than 1% + 1 times never starts a match.
  const b = Array.from({ length: 200 }, (_, i) => (i % 2 ? 'x' : `u${i}`));
  const [, , size] = new LineMatcher(['x'], b).longestMatch(0, 1, 0, 200);
  assert.equal(size, 0);
});

test('large files: one-line edits stay cheap and correct, whole rewrites stay correct', () => {
  const old = Array.from({ length: 50000 }, (_, i) => `line ${i}\n`).join('');
  const neu = old.replace('line 25000\n', 'changed\n').replace('line 10\n', '');
  const d = unifiedDiff('/w/big', old, neu);
  assert.equal(applyDiff(old, d), neu);
  assert.equal((d.match(/^@@/gm) ?? []).length, 2);
  const a = Array.from({ length: 3000 }, (_, i) => `a${i}\n`).join('');
  const b = Array.from({ length: 3000 }, (_, i) => `b${i}\n`).join('');
  assert.equal(applyDiff(a, unifiedDiff('/w/x', a, b)), b);
});
