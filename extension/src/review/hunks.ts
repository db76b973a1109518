/**
 * Per-hunk review of a proposal (issue 39 item 2; docs/protocol.md §3.11), the pure part. No `vscode` import.
 *
 * The hunks are those of the unified diff with 3 lines of context between the text the proposal was computed
 * on and the proposed text (../udiff.ts `hunkRanges`, the rule of the edit observation's `diff` and of the
 * backend's `oh review --hunks`), numbered 1.. in order. Hunks never overlap, and the lines between them are
 * the same in both texts, so any subset can be applied on its own: each hunk's lines come from the proposed
 * text when it is taken, from the old text otherwise.
 */
import { splitLinesKeepEnds } from '../oheditor';
import { hunkRanges } from '../udiff';

export const HUNK_CONTEXT = 3;

export type HunkState = 'pending' | 'kept' | 'undone';

export interface Hunk {
  /** 1-based, in order. */
  n: number;
  /** The hunk's lines (context included) in the old text `a` and the proposed text `b`. */
  a0: number;
  a1: number;
  b0: number;
  b1: number;
  /** The changed lines only (no context): where the user's eye goes. */
  ca0: number;
  ca1: number;
  cb0: number;
  cb1: number;
}

export interface Split {
  a: string[];
  b: string[];
  hunks: Hunk[];
}

/** The hunks from `before` to `after` (none when equal). */
export function splitHunks(before: string, after: string): Split {
  const a = splitLinesKeepEnds(before);
  const b = splitLinesKeepEnds(after);
  if (before === after) return { a, b, hunks: [] };
  const hunks = hunkRanges(a, b, HUNK_CONTEXT).map((r, i): Hunk => {
    const changes = r.ops.filter((op) => op[0] !== 'equal');
    const first = changes[0];
    const last = changes[changes.length - 1];
    return {
      n: i + 1,
      a0: r.a0,
      a1: r.a1,
      b0: r.b0,
      b1: r.b1,
      ca0: first[1],
      ca1: last[2],
      cb0: first[3],
      cb1: last[4],
    };
  });
  return { a, b, hunks };
}

/** Where hunk `n` sits in a composed text: all its lines, and its changed lines (0-based, end exclusive). */
export interface Span {
  n: number;
  start: number;
  end: number;
  coreStart: number;
  coreEnd: number;
}

/** The text with the hunks for which `take(hunk)` holds applied and the others left as they were. */
export function compose(split: Split, take: (h: Hunk) => boolean): { text: string; spans: Span[] } {
  const out: string[] = [];
  const spans: Span[] = [];
  let pos = 0;
  for (const h of split.hunks) {
    for (let i = pos; i < h.a0; i++) out.push(split.a[i]);
    const start = out.length;
    const taken = take(h);
    const lines = taken ? split.b.slice(h.b0, h.b1) : split.a.slice(h.a0, h.a1);
    out.push(...lines);
    const coreStart = start + (taken ? h.cb0 - h.b0 : h.ca0 - h.a0);
    const coreEnd = start + (taken ? h.cb1 - h.b0 : h.ca1 - h.a0);
    spans.push({ n: h.n, start, end: out.length, coreStart, coreEnd });
    pos = h.a1;
  }
  for (let i = pos; i < split.a.length; i++) out.push(split.a[i]);
  return { text: out.join(''), spans };
}

/** The file's text once the review is over: only the kept hunks written. */
export function keptText(split: Split, states: readonly HunkState[]): string {
  return compose(split, (h) => states[h.n - 1] === 'kept').text;
}

/** What the diff shows as the proposed side while the review goes on: every hunk but the undone ones. */
export function shownText(split: Split, states: readonly HunkState[]): { text: string; spans: Span[] } {
  return compose(split, (h) => states[h.n - 1] !== 'undone');
}

/**
 * The hunk a Keep / Undo at `line` of the shown text means: the one under the cursor, else the next pending
 * one after it, else the first pending one; undefined when none is left to decide.
 */
export function hunkAt(spans: readonly Span[], states: readonly HunkState[], line: number): number | undefined {
  const under = spans.find((s) => line >= s.start && line < Math.max(s.end, s.start + 1));
  if (under) return under.n;
  const pending = spans.filter((s) => states[s.n - 1] === 'pending');
  return (pending.find((s) => s.start >= line) ?? pending[0])?.n;
}

/** The next pending hunk after `n` (wrapping round), undefined when none is. */
export function nextPending(states: readonly HunkState[], n: number): number | undefined {
  const count = states.length;
  for (let k = 1; k <= count; k++) {
    const m = ((n - 1 + k) % count) + 1;
    if (states[m - 1] === 'pending') return m;
  }
  return undefined;
}

/** "1, 3" */
function numbers(ns: readonly number[]): string {
  return ns.join(', ');
}

/**
 * The note ending the agent's observation when the user kept some hunks and not others (the backend's
 * `oh review --hunks` says the same, word for word).
 */
export function partialNote(path: string, kept: readonly number[], total: number): string {
  const rejected: number[] = [];
  for (let n = 1; n <= total; n++) if (!kept.includes(n)) rejected.push(n);
  const word = (ns: readonly number[]) => (ns.length === 1 ? 'hunk' : 'hunks');
  const verb = (ns: readonly number[]) => (ns.length === 1 ? 'was' : 'were');
  return (
    `[Review mode: the user accepted part of this change to ${path}: ${word(kept)} ${numbers(kept)} of ${total} ${verb(kept)} written; ` +
    `${word(rejected)} ${numbers(rejected)} ${verb(rejected)} rejected and not written. Read the file again before building on it.]`
  );
}

/** A one-line label for hunk `n`, shown after its first changed line in the diff. */
export function hunkLabel(n: number, total: number, state: HunkState): string {
  if (state === 'kept') return `hunk ${n} of ${total}: kept ✓`;
  if (state === 'undone') return `hunk ${n} of ${total}: undone ↶`;
  return `hunk ${n} of ${total}: Keep or Undo (title bar)`;
}
