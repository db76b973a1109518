// Per-hunk review, the pure part (./src/review/hunks.ts): split, apply any subset, the agent's note.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { splitLinesKeepEnds } from '../src/oheditor';
import {
  compose,
  hunkAt,
  HunkState,
  keptText,
  nextPending,
  partialNote,
  shownText,
  splitHunks,
} from '../src/review/hunks';
import { acceptedObservation } from '../src/review/proposal';
import { unifiedDiff } from '../src/udiff';

/** A small seeded generator (mulberry32): the same cases on every run, and a failing seed can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A text of `n` lines from a small vocabulary (repeats make the matcher's choices matter). */
function text(rand: () => number, n: number): string {
  const words = ['a', 'b', 'c', 'def f():', '    return 1', '', '}', 'x = 1'];
  const lines = Array.from({ length: n }, () => words[Math.floor(rand() * words.length)] + '\n');
  const body = lines.join('');
  return rand() < 0.2 ? body.replace(/\n$/, '') : body; // sometimes no newline at the end
}

/** `before` with random lines changed, inserted and deleted. */
function mutate(rand: () => number, before: string): string {
  const lines = splitLinesKeepEnds(before);
  const out: string[] = [];
  for (const l of lines) {
    const r = rand();
    if (r < 0.08) continue;
    if (r < 0.16) out.push(`changed ${Math.floor(rand() * 100)}\n`);
    else out.push(l);
    if (rand() < 0.06) out.push(`inserted ${Math.floor(rand() * 100)}\n`);
  }
  return out.join('');
}

test('hunks are the unified diff hunks, numbered in order', () => {
  const before = Array.from({ length: 30 }, (_, i) => `line ${i}\n`).join('');
  const after = before.replace('line 2\n', 'LINE 2\n').replace('line 15\n', 'LINE 15\n').replace('line 28\n', '');
  const split = splitHunks(before, after);
  assert.deepEqual(
    split.hunks.map((h) => h.n),
    [1, 2, 3],
  );
  const headers = unifiedDiff('f', before, after).match(/^@@ .* @@$/gm);
  assert.equal(headers?.length, 3);
  assert.deepEqual(
    split.hunks.map((h) => [h.ca0, h.ca1, h.cb0, h.cb1]),
    [
      [2, 3, 2, 3],
      [15, 16, 15, 16],
      [28, 29, 28, 28],
    ],
  );
  assert.equal(
    keptText(split, ['kept', 'undone', 'kept']),
    before.replace('line 2\n', 'LINE 2\n').replace('line 28\n', ''),
  );
});

test('random subsets: the kept subset, then the rest, gives the proposal; nothing kept gives the original', () => {
  for (let seed = 1; seed <= 400; seed++) {
    const rand = rng(seed);
    const before = text(rand, 5 + Math.floor(rand() * 60));
    const after = mutate(rand, before);
    const split = splitHunks(before, after);
    const n = split.hunks.length;
    const all: HunkState[] = Array(n).fill('kept');
    const none: HunkState[] = Array(n).fill('undone');
    assert.equal(keptText(split, all), after, `seed ${seed}: all kept`);
    assert.equal(keptText(split, none), before, `seed ${seed}: none kept`);
    const subset: HunkState[] = split.hunks.map(() => (rand() < 0.5 ? 'kept' : 'undone'));
    const partial = keptText(split, subset);
    // Applying the complement on top of the partial text (the hunks' lines located through its spans)...
    const spans = compose(split, (h) => subset[h.n - 1] === 'kept').spans;
    const lines = splitLinesKeepEnds(partial);
    const rest = (take: boolean) => {
      const out: string[] = [];
      let pos = 0;
      for (const h of split.hunks) {
        const s = spans[h.n - 1];
        out.push(...lines.slice(pos, s.start));
        const kept = subset[h.n - 1] === 'kept';
        // take = apply the complement (=> the proposal); !take = revert the subset (=> the original).
        out.push(
          ...(take || !kept
            ? take
              ? split.b.slice(h.b0, h.b1)
              : lines.slice(s.start, s.end)
            : split.a.slice(h.a0, h.a1)),
        );
        pos = s.end;
      }
      out.push(...lines.slice(pos));
      return out.join('');
    };
    assert.equal(rest(true), after, `seed ${seed}: subset then complement`);
    assert.equal(rest(false), before, `seed ${seed}: subset reverted`);
    // The shown proposed side: every hunk but the undone ones, so the same text as the kept subset here.
    assert.equal(shownText(split, subset).text, partial, `seed ${seed}: shown text`);
    // Re-splitting the partial text against the proposal leaves exactly the undone changes to make.
    assert.equal(
      splitHunks(partial, after).hunks.length === 0,
      subset.every((s) => s === 'kept'),
      `seed ${seed}`,
    );
  }
});

test('the hunk a Keep / Undo means: under the cursor, else the next pending, else the first pending', () => {
  const spans = [
    { n: 1, start: 0, end: 5, coreStart: 2, coreEnd: 3 },
    { n: 2, start: 10, end: 15, coreStart: 12, coreEnd: 13 },
    { n: 3, start: 20, end: 25, coreStart: 22, coreEnd: 23 },
  ];
  const pending: HunkState[] = ['pending', 'pending', 'pending'];
  assert.equal(hunkAt(spans, pending, 12), 2);
  assert.equal(hunkAt(spans, pending, 7), 2);
  assert.equal(hunkAt(spans, ['pending', 'kept', 'pending'], 7), 3);
  assert.equal(hunkAt(spans, ['pending', 'kept', 'kept'], 30), 1);
  assert.equal(hunkAt(spans, ['kept', 'kept', 'kept'], 30), undefined);
  assert.equal(nextPending(['kept', 'pending', 'pending'], 2), 3);
  assert.equal(nextPending(['pending', 'kept', 'kept'], 2), 1);
  assert.equal(nextPending(['kept', 'undone', 'kept'], 1), undefined);
});

test("the agent's note names the written and the rejected hunks", () => {
  assert.equal(
    partialNote('src/a.py', [1, 3], 4),
    '[Review mode: the user accepted part of this change to src/a.py: hunks 1, 3 of 4 were written; hunks 2, 4 were ' +
      'rejected and not written. Read the file again before building on it.]',
  );
  assert.match(partialNote('f', [2], 3), /hunk 2 of 3 was written; hunks 1, 3 were rejected/);
});

test('a partly accepted edit: new_content and diff are what was written, the note ends the content', () => {
  const before = Array.from({ length: 20 }, (_, i) => `l${i}\n`).join('');
  const after = before.replace('l1\n', 'L1\n').replace('l18\n', 'L18\n');
  const split = splitHunks(before, after);
  assert.equal(split.hunks.length, 2);
  const written = keptText(split, ['undone', 'kept']);
  const change = {
    kind: 'edit' as const,
    command: 'str_replace',
    before,
    after,
    content: 'The file /w/f has been edited.\n',
  };
  const action = { id: 7, kind: 'edit' as const, args: { command: 'str_replace', path: '/w/f' } };
  const obs = acceptedObservation(action, '/w/f', change, '\n[NOTE: unsaved]', { kept: [2], total: 2, written });
  const extras = obs.extras as Record<string, unknown>;
  assert.equal(extras.new_content, before.replace('l18\n', 'L18\n'));
  assert.equal(extras.diff, unifiedDiff('/w/f', before, written));
  assert.match(
    String(obs.content),
    /^The file \/w\/f has been edited\.\n\[NOTE: unsaved\]\n\[Review mode: the user accepted part/,
  );
  assert.ok(
    String(obs.content).endsWith(
      'hunk 2 of 2 was written; hunk 1 was rejected and not written. Read the file again before building on it.]',
    ),
  );
  // Accepted whole: the note as before, the unsaved note after it.
  const whole = acceptedObservation({ ...action, kind: 'write', args: { path: '/w/f' } }, '/w/f', change, '');
  assert.equal(whole.content, '[Review mode: the user accepted this change to /w/f.]');
});
