/**
 * The `diff` text of an `edit` observation, byte for byte the backend's (src/oh/protocol/udiff.py), so an
 * agent sees the same diff whichever editor executed its edit.
 *
 * The rule: cut the lines both texts share at the start and at the end (keeping `context` of them), match
 * what is left with Python difflib's SequenceMatcher algorithm (no junk function, autojunk on: in a
 * sequence of 200+ lines, a line occurring more than 1% + 1 times is "popular" and never starts a
 * match), and print `diff -u` hunks numbered against the whole file. The matcher is a port of difflib's
 * documented algorithm (longest matching block, then recurse on both sides), not a minimal edit script:
 * a shortest-edit-script diff (Myers) picks different lines on ~20% of small edits.
 * Bounded work (issue 18), as in Python: each longest-match search is charged
 * `(ahi - alo) + sum of |where(a[i])|` over its range before it runs; once a search would take the total
 * past `budget` (WORK_BUDGET), that range and every range still queued are not searched and stay plain
 * replacements (a correct, coarser patch, the same in both languages).
 * tests/contract/diff-corpus.json (made by Python) is checked by both test suites.
 */

import { splitLinesKeepEnds } from './oheditor';

export type Tag = 'equal' | 'replace' | 'delete' | 'insert';
export type Opcode = [Tag, number, number, number, number];
/** A matching block: a[i..i+size) equals b[j..j+size). */
type Block = [number, number, number];

const NO_EOL = '\\ No newline at end of file\n';
/** Charge units one diff may spend searching (src/oh/protocol/udiff.py WORK_BUDGET: the same number). */
export const WORK_BUDGET = 12_000_000;

/** difflib.SequenceMatcher(None, a, b) with autojunk: matching blocks and opcodes. */
export class LineMatcher {
  /** Where each line of `b` occurs (ascending), popular lines left out. */
  private readonly where = new Map<string, number[]>();
  /** prefix[i] = the charge of a[0..i): one per line plus its (non-popular) occurrences in b. */
  private readonly prefix: number[];
  /** True once a search was skipped for want of budget: every later one is skipped too. */
  exhausted = false;

  constructor(
    private readonly a: readonly string[],
    private readonly b: readonly string[],
    private budget: number = WORK_BUDGET,
  ) {
    b.forEach((line, j) => {
      const js = this.where.get(line);
      if (js) js.push(j);
      else this.where.set(line, [j]);
    });
    if (b.length >= 200) {
      const limit = Math.floor(b.length / 100) + 1;
      for (const [line, js] of this.where) if (js.length > limit) this.where.delete(line);
    }
    this.prefix = [0];
    for (const line of a)
      this.prefix.push(this.prefix[this.prefix.length - 1] + 1 + (this.where.get(line)?.length ?? 0));
  }

  /** Whether the search over a[alo..ahi) may run: charges it, or marks the budget spent. */
  private afford(alo: number, ahi: number): boolean {
    const cost = this.prefix[ahi] - this.prefix[alo];
    if (this.exhausted || cost > this.budget) {
      this.exhausted = true;
      return false;
    }
    this.budget -= cost;
    return true;
  }

  /**
   * The longest a[i..i+k) == b[j..j+k) inside the ranges, earliest in `a`, then earliest in `b`, among
   * blocks that start on a non-popular line; then grown over equal (possibly popular) neighbours.
   */
  longestMatch(alo: number, ahi: number, blo: number, bhi: number): Block {
    const { a, b } = this;
    let bestI = alo;
    let bestJ = blo;
    let best = 0;
    // runs.get(j) = length of the match ending at a[i-1], b[j] (dynamic programming over one row).
    let runs = new Map<number, number>();
    for (let i = alo; i < ahi; i++) {
      const next = new Map<number, number>();
      for (const j of this.where.get(a[i]) ?? []) {
        if (j < blo) continue;
        if (j >= bhi) break;
        const k = (runs.get(j - 1) ?? 0) + 1;
        next.set(j, k);
        if (k > best) {
          bestI = i - k + 1;
          bestJ = j - k + 1;
          best = k;
        }
      }
      runs = next;
    }
    while (bestI > alo && bestJ > blo && a[bestI - 1] === b[bestJ - 1]) {
      bestI--;
      bestJ--;
      best++;
    }
    while (bestI + best < ahi && bestJ + best < bhi && a[bestI + best] === b[bestJ + best]) best++;
    return [bestI, bestJ, best];
  }

  /** Non-adjacent matching blocks in order, ending with the sentinel [len(a), len(b), 0]. */
  matchingBlocks(): Block[] {
    const blocks: Block[] = [];
    // A stack of ranges still to match, consumed last-in first-out like difflib's queue.
    const todo: Array<[number, number, number, number]> = [[0, this.a.length, 0, this.b.length]];
    while (todo.length) {
      const [alo, ahi, blo, bhi] = todo.pop()!;
      if (!this.afford(alo, ahi)) continue; // no search: the range stays one replacement
      const m = this.longestMatch(alo, ahi, blo, bhi);
      const [i, j, k] = m;
      if (!k) continue;
      blocks.push(m);
      if (alo < i && blo < j) todo.push([alo, i, blo, j]);
      if (i + k < ahi && j + k < bhi) todo.push([i + k, ahi, j + k, bhi]);
    }
    blocks.sort((x, y) => x[0] - y[0] || x[1] - y[1] || x[2] - y[2]);
    const merged: Block[] = [];
    for (const [i, j, k] of blocks) {
      const last = merged[merged.length - 1];
      if (last && last[0] + last[2] === i && last[1] + last[2] === j) last[2] += k;
      else merged.push([i, j, k]);
    }
    merged.push([this.a.length, this.b.length, 0]);
    return merged;
  }

  opcodes(): Opcode[] {
    const codes: Opcode[] = [];
    let i = 0;
    let j = 0;
    for (const [ai, bj, size] of this.matchingBlocks()) {
      if (i < ai || j < bj) codes.push([i < ai && j < bj ? 'replace' : i < ai ? 'delete' : 'insert', i, ai, j, bj]);
      i = ai + size;
      j = bj + size;
      if (size) codes.push(['equal', ai, i, bj, j]);
    }
    return codes;
  }

  /** Hunks: the changes with up to `n` equal lines around them; changes closer than 2n share a hunk. */
  groupedOpcodes(n = 3): Opcode[][] {
    const cs = this.opcodes();
    if (!cs.length) cs.push(['equal', 0, 1, 0, 1]);
    const head = cs[0];
    if (head[0] === 'equal')
      cs[0] = ['equal', Math.max(head[1], head[2] - n), head[2], Math.max(head[3], head[4] - n), head[4]];
    const tail = cs[cs.length - 1];
    if (tail[0] === 'equal')
      cs[cs.length - 1] = ['equal', tail[1], Math.min(tail[2], tail[1] + n), tail[3], Math.min(tail[4], tail[3] + n)];
    const groups: Opcode[][] = [];
    let group: Opcode[] = [];
    for (const [tag, i1, i2, j1, j2] of cs) {
      if (tag === 'equal' && i2 - i1 > 2 * n) {
        group.push([tag, i1, Math.min(i2, i1 + n), j1, Math.min(j2, j1 + n)]);
        groups.push(group);
        group = [[tag, Math.max(i1, i2 - n), i2, Math.max(j1, j2 - n), j2]];
        continue;
      }
      group.push([tag, i1, i2, j1, j2]);
    }
    if (group.length && !(group.length === 1 && group[0][0] === 'equal')) groups.push(group);
    return groups;
  }
}

/** `start,length` of a hunk side, 1-based; an empty side names the line before it. */
function hunkRange(start: number, stop: number): string {
  const length = stop - start;
  if (length === 1) return `${start + 1}`;
  return `${length === 0 ? start : start + 1},${length}`;
}

/** A hunk as line ranges over the whole texts: a[a0..a1) becomes b[b0..b1) (context included). */
export interface HunkRange {
  a0: number;
  a1: number;
  b0: number;
  b1: number;
  /** The opcodes of the hunk, in whole-text line numbers (context lines are `equal` ones). */
  ops: Opcode[];
}

/**
 * The hunks `unifiedDiff` prints, as whole-text line ranges: cut the shared head and tail (keeping `context`
 * lines), match the middle, group with `context` lines. One rule for the diff text and for per-hunk review.
 */
export function hunkRanges(a: readonly string[], b: readonly string[], context = 3, budget = WORK_BUDGET): HunkRange[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const skip = Math.max(head - context, 0);
  const cut = Math.max(tail - context, 0);
  const groups = new LineMatcher(a.slice(skip, a.length - cut), b.slice(skip, b.length - cut), budget).groupedOpcodes(
    context,
  );
  return groups.map((group) => {
    const ops = group.map(([tag, i1, i2, j1, j2]): Opcode => [tag, skip + i1, skip + i2, skip + j1, skip + j2]);
    const first = ops[0];
    const last = ops[ops.length - 1];
    return { a0: first[1], a1: last[2], b0: first[3], b1: last[4], ops };
  });
}

/** `diff -u`-style text from `oldText` to `newText` (`''` when equal); see the module comment. */
export function unifiedDiff(path: string, oldText: string, newText: string, context = 3, budget = WORK_BUDGET): string {
  if (oldText === newText) return '';
  const a = splitLinesKeepEnds(oldText);
  const b = splitLinesKeepEnds(newText);
  const label = (side: string) => (path.startsWith('/') ? `${side}${path}` : `${side}/${path}`);
  const out: string[] = [`--- ${label('a')}\n`, `+++ ${label('b')}\n`];
  const emit = (mark: string, lines: readonly string[]) => {
    for (const l of lines) out.push(l.endsWith('\n') ? mark + l : mark + l + '\n' + NO_EOL);
  };
  for (const h of hunkRanges(a, b, context, budget)) {
    out.push(`@@ -${hunkRange(h.a0, h.a1)} +${hunkRange(h.b0, h.b1)} @@\n`);
    for (const [tag, i1, i2, j1, j2] of h.ops) {
      if (tag === 'equal') {
        emit(' ', a.slice(i1, i2));
        continue;
      }
      if (tag !== 'insert') emit('-', a.slice(i1, i2));
      if (tag !== 'delete') emit('+', b.slice(j1, j2));
    }
  }
  return out.join('');
}
