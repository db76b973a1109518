/**
 * OpenHands' OHEditor semantics as pure string functions: `view` numbering, `str_replace` with a
 * unique match, `insert`, `undo_edit` history, line ranges for `read`/`write` (the diff is ../udiff.ts).
 *
 * Pure (no `vscode`, no I/O) so the rules are unit-tested; the `edit` executor only fetches the text
 * from VS Code and applies the result as a WorkspaceEdit. Messages and numbering follow the backend's
 * local runtime (src/oh/runtimes/local/editor.py) so an agent sees the same text whichever runtime
 * executes it: `cat -n` style `%6d\t%s`, a file's trailing newline adds no empty numbered line, tabs
 * are not expanded (a snippet copied into `old_str` still matches).
 */

import { MAX_OUTPUT_CHARS, ToolError, truncateMiddle } from './protocol';

export const SNIPPET_CONTEXT = 4;
export const BINARY_SNIFF_BYTES = 8192;
export const CLIPPED_NOTE =
  '<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you. ' +
  'You should retry this tool after you have searched inside the file with `grep -n` in order to find the ' +
  'line numbers of what you are looking for.</NOTE>';

// ---------------------------------------------------------------------------------------------
// Lines. Python's str.splitlines() is the reference (the backend and OpenHands use it), so the same
// separators count as line breaks: \n \r \r\n \v \f \x1c \x1d \x1e \x85 \u2028 \u2029.

const LINE_BREAK = /\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]/g;

/** `text.splitlines(keepends=True)`. */
export function splitLinesKeepEnds(text: string): string[] {
  const out: string[] = [];
  let last = 0;
  LINE_BREAK.lastIndex = 0;
  for (let m = LINE_BREAK.exec(text); m; m = LINE_BREAK.exec(text)) {
    out.push(text.slice(last, m.index + m[0].length));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** `text.splitlines()`. */
export function splitLines(text: string): string[] {
  return splitLinesKeepEnds(text).map((l) => l.replace(/(\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])$/, ''));
}

function count(text: string, sub: string, end = text.length): number {
  let n = 0;
  for (let i = text.indexOf(sub); i >= 0 && i < end; i = text.indexOf(sub, i + sub.length)) n++;
  return n;
}

/** Python's list repr for integers, as OHEditor's messages print them: `[1, 2]`. */
function pyList(xs: number[]): string {
  return `[${xs.join(', ')}]`;
}

// ---------------------------------------------------------------------------------------------
// view / cat -n

export function numbered(text: string, firstLine = 1): string {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines.map((line, i) => `${String(i + firstLine).padStart(6, ' ')}\t${line}`).join('\n');
}

export function catN(snippet: string, description: string, firstLine = 1, limit?: number): string {
  let body = numbered(snippet, firstLine);
  if (limit !== undefined && body.length > limit) body = body.slice(0, limit) + CLIPPED_NOTE;
  return `Here's the result of running \`cat -n\` on ${description}:\n${body}\n`;
}

/**
 * Validates a 1-based `[first, last]` (last -1 = EOF) the way the OpenHands SDK's file editor does
 * (openhands-tools 1.58): a `last` past the end is clamped with a NOTE, not refused. Returns 0-based
 * [begin, stop) and the note, if any.
 */
export function viewRangeLines(text: string, viewRange: number[]): [number, number, string?] {
  const n = splitLines(text).length;
  const [first, last] = viewRange;
  const vr = pyList(viewRange);
  if (first < 1 || first > Math.max(n, 1)) {
    throw new ToolError(
      `Invalid \`view_range\` parameter: ${vr}. Its first element \`${first}\` should be within the range of lines of the file: ${pyList([1, n])}.`,
    );
  }
  let stop = last;
  let note: string | undefined;
  if (last === -1) stop = n;
  else if (last > n) {
    note = `We only show up to ${n} since there're only ${n} lines in this file.`;
    stop = n;
  }
  if (stop < first) {
    throw new ToolError(
      `Invalid \`view_range\` parameter: ${vr}. Its second element \`${stop}\` should be greater than or equal to the first element \`${first}\`.`,
    );
  }
  return [first - 1, stop, note];
}

/** Lines `start` (0-based, inclusive) to `end` (exclusive; -1 = end of file), line ends kept. */
export function sliceLines(text: string, start = 0, end = -1): string {
  if (start <= 0 && end === -1) return text;
  const lines = splitLinesKeepEnds(text);
  const s = Math.max(start, 0);
  const stop = end === -1 || end > lines.length ? lines.length : Math.max(end, s);
  return lines.slice(s, stop).join('');
}

/** The `read` action's content: raw text; `view_range` wins over `start`/`end`. */
export function readRange(
  text: string,
  start?: number | null,
  end?: number | null,
  viewRange?: number[] | null,
): string {
  if (viewRange && viewRange.length === 2) {
    const [begin, stop] = viewRangeLines(text, viewRange);
    return sliceLines(text, begin, stop);
  }
  return sliceLines(text, start ?? 0, end ?? -1);
}

export function viewFile(shown: string, text: string, viewRange?: number[] | null, limit = MAX_OUTPUT_CHARS): string {
  if (viewRange && viewRange.length === 2) {
    const [begin, stop, note] = viewRangeLines(text, viewRange);
    const snippet = splitLines(text).slice(begin, stop).join('\n');
    const out = catN(snippet, shown, begin + 1, limit);
    return note ? `NOTE: ${note}\n${out}` : out;
  }
  return catN(text, shown, 1, limit);
}

export interface ListingEntry {
  /** Path as shown: root + '/' + relative path. */
  shown: string;
  isDir: boolean;
}

export function formatListing(root: string, entries: ListingEntry[], hidden: number, truncatedAfter?: number): string {
  const lines = [root + '/', ...entries.map((e) => (e.isDir ? e.shown + '/' : e.shown))];
  let out =
    `Here's the files and directories up to 2 levels deep in ${root}, excluding hidden items:\n` + lines.join('\n');
  if (truncatedAfter !== undefined) {
    out += `\n[... listing truncated after ${truncatedAfter} entries; use \`ls\` or \`find\` in the shell to see more ...]`;
  }
  if (hidden) {
    out += `\n\n${hidden} hidden files/directories in this directory are excluded. You can use 'ls -la ${root}' to see them.`;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Modifications: each returns the new text and the observation's fields; nothing is written here.

export interface EditOutcome {
  newText: string;
  content: string;
  oldContent: string | null;
  newContent: string | null;
}

export function strReplace(
  shown: string,
  text: string,
  oldStr: string | null | undefined,
  newStr: string | null | undefined,
): EditOutcome {
  if (!oldStr) throw new ToolError('Parameter `old_str` is required for command: str_replace.');
  const replacement = newStr ?? '';
  if (replacement === oldStr) {
    throw new ToolError(
      `Invalid \`new_str\` parameter: ${replacement}. No replacement was performed. \`new_str\` and \`old_str\` must be different.`,
    );
  }
  const first = text.indexOf(oldStr);
  if (first < 0) {
    throw new ToolError(`No replacement was performed, old_str \`${oldStr}\` did not appear verbatim in ${shown}.`);
  }
  const positions = [first];
  for (let p = text.indexOf(oldStr, first + oldStr.length); p >= 0; p = text.indexOf(oldStr, p + oldStr.length)) {
    positions.push(p);
  }
  if (positions.length > 1) {
    const lines = [...new Set(positions.map((p) => count(text, '\n', p) + 1))].sort((a, b) => a - b);
    throw new ToolError(
      `No replacement was performed. Multiple occurrences of old_str \`${oldStr}\` in lines ${pyList(lines)}. Please ensure it is unique.`,
    );
  }
  const newText = text.slice(0, first) + replacement + text.slice(first + oldStr.length);
  const line = count(text, '\n', first) + 1;
  // The SDK's window: from line - SNIPPET_CONTEXT + 1 (its 0-based start, shown 1-based).
  const start = Math.max(1, line - SNIPPET_CONTEXT + 1);
  const stop = line + SNIPPET_CONTEXT + count(replacement, '\n');
  const snippet = newText
    .split('\n')
    .slice(start - 1, stop)
    .join('\n');
  const content =
    `The file ${shown} has been edited. ` +
    catN(snippet, `a snippet of ${shown}`, start) +
    'Review the changes and make sure they are as expected. Edit the file again if necessary.';
  // Whole files, as the OpenHands SDK's FileEditorObservation wants them (its diff view).
  return { newText, content, oldContent: text, newContent: newText };
}

export function insertAt(
  shown: string,
  text: string,
  insertLine: number | null | undefined,
  newStr: string | null | undefined,
): EditOutcome {
  if (insertLine === null || insertLine === undefined)
    throw new ToolError('Parameter `insert_line` is required for command: insert.');
  if (newStr === null || newStr === undefined)
    throw new ToolError('Parameter `new_str` is required for command: insert.');
  const lines = splitLinesKeepEnds(text);
  const n = lines.length;
  if (insertLine < 0 || insertLine > n) {
    throw new ToolError(
      `Invalid \`insert_line\` parameter: ${insertLine}. It should be within the range of allowed values: ${pyList([0, n])}`,
    );
  }
  const block = newStr.endsWith('\n') ? newStr : newStr + '\n';
  const before = lines.slice(0, insertLine);
  if (before.length && !before[before.length - 1].endsWith('\n')) before[before.length - 1] += '\n';
  const newText = before.join('') + block + lines.slice(insertLine).join('');
  const newLines = splitLines(newText);
  const start = Math.max(1, insertLine - SNIPPET_CONTEXT + 1);
  const stop = insertLine + count(block, '\n') + SNIPPET_CONTEXT;
  const snippet = newLines.slice(start - 1, stop).join('\n');
  const content =
    `The file ${shown} has been edited. ` +
    catN(snippet, 'a snippet of the edited file', start) +
    'Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). ' +
    'Edit the file again if necessary.';
  return { newText, content, oldContent: text, newContent: newText };
}

export function createdMessage(shown: string): string {
  return `File created successfully at: ${shown}`;
}

/** The SDK's texts for a bad `path` (EditorToolParameterInvalidError). */
export function invalidPath(shown: string, hint: string): string {
  return `Invalid \`path\` parameter: ${shown}. ${hint}`;
}

export function fileExistsMessage(shown: string, _isDirectory = false): string {
  return invalidPath(shown, `File already exists at: ${shown}. Cannot overwrite files using command \`create\`.`);
}

export function directoryOnlyViewMessage(shown: string): string {
  return invalidPath(
    shown,
    `The path ${shown} is a directory and only the \`view\` command can be used on directories.`,
  );
}

export function undoneMessage(shown: string, previous: string, limit = MAX_OUTPUT_CHARS): string {
  return `Last edit to ${shown} undone successfully. ` + catN(truncateMiddle(previous, limit), shown);
}

export function noHistoryMessage(shown: string): string {
  return `No edit history found for ${shown}.`;
}

export function notFoundMessage(shown: string): string {
  return invalidPath(shown, `The path ${shown} does not exist. Please provide a valid path.`);
}

/** The `write` action: the whole file is `content`, or lines [start, end) are replaced by it. */
export function writeRange(
  oldText: string | null,
  content: string,
  start?: number | null,
  end?: number | null,
): string {
  const s0 = start ?? 0;
  const e0 = end ?? -1;
  if ((s0 <= 0 && e0 === -1) || oldText === null) return content;
  const old = splitLinesKeepEnds(oldText);
  const s = Math.min(Math.max(s0, 0), old.length);
  const stop = e0 === -1 || e0 > old.length ? old.length : Math.max(e0, s);
  const before = old.slice(0, s);
  const after = old.slice(stop);
  if (before.length && !before[before.length - 1].endsWith('\n')) before[before.length - 1] += '\n';
  let middle = content;
  if (after.length && middle && !middle.endsWith('\n')) middle += '\n';
  return before.join('') + middle + after.join('');
}

// ---------------------------------------------------------------------------------------------
// Bytes -> text

/** NUL in the first 8 KiB means binary, as git and the backend decide. */
export function looksBinary(bytes: Uint8Array): boolean {
  const n = Math.min(bytes.length, BINARY_SNIFF_BYTES);
  for (let i = 0; i < n; i++) if (bytes[i] === 0) return true;
  return false;
}

export function decodeText(shown: string, bytes: Uint8Array): string {
  if (looksBinary(bytes)) {
    throw new ToolError(
      `The file ${shown} is a binary file (it contains NUL bytes); only text files can be read or edited.`,
    );
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new ToolError(
      `The file ${shown} is a binary file or not UTF-8 text; only UTF-8 text files can be read or edited.`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Minimal replacement: the smallest single range edit turning `oldText` into `newText`, so the
// WorkspaceEdit touches only what changed (cursor, folding and the user's undo stay meaningful).

export interface Replacement {
  start: number; // offset in oldText
  end: number; // offset in oldText (exclusive)
  text: string;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

export function minimalReplacement(oldText: string, newText: string): Replacement {
  const max = Math.min(oldText.length, newText.length);
  let p = 0;
  while (p < max && oldText.charCodeAt(p) === newText.charCodeAt(p)) p++;
  let s = 0;
  while (s < max - p && oldText.charCodeAt(oldText.length - 1 - s) === newText.charCodeAt(newText.length - 1 - s)) s++;
  // Never cut a surrogate pair or a \r\n in two: a document cannot address the middle of either.
  const cutsPair = (t: string, i: number) =>
    i > 0 && i < t.length && (isLowSurrogate(t.charCodeAt(i)) || (t[i - 1] === '\r' && t[i] === '\n'));
  while (p > 0 && (cutsPair(oldText, p) || cutsPair(newText, p))) p--;
  while (s > 0 && (cutsPair(oldText, oldText.length - s) || cutsPair(newText, newText.length - s))) s--;
  return { start: p, end: oldText.length - s, text: newText.slice(p, newText.length - s) };
}

// ---------------------------------------------------------------------------------------------
// undo_edit history: previous contents per file, newest last; bounded per file and in total.

export class EditHistory {
  private byPath = new Map<string, string[]>();
  private chars = 0;

  constructor(
    private readonly perFile = 10,
    private readonly maxChars = 64 * 1024 * 1024,
  ) {}

  push(path: string, content: string): void {
    if (content.length > this.maxChars) return;
    const q = this.byPath.get(path) ?? [];
    this.byPath.delete(path); // re-insert: Map order is least recently edited first
    this.byPath.set(path, q);
    q.push(content);
    this.chars += content.length;
    if (q.length > this.perFile) this.chars -= q.shift()!.length;
    while (this.chars > this.maxChars && this.byPath.size) {
      const [oldestPath, oldest] = this.byPath.entries().next().value as [string, string[]];
      this.chars -= oldest.shift()!.length;
      if (!oldest.length) this.byPath.delete(oldestPath);
    }
  }

  pop(path: string): string | undefined {
    const q = this.byPath.get(path);
    if (!q || !q.length) return undefined;
    const content = q.pop()!;
    this.chars -= content.length;
    if (!q.length) this.byPath.delete(path);
    return content;
  }

  /** The entry `pop` would return, left in place (a proposal's undo_edit, taken when accepted). */
  peek(path: string): string | undefined {
    const q = this.byPath.get(path);
    return q && q.length ? q[q.length - 1] : undefined;
  }

  size(path: string): number {
    return this.byPath.get(path)?.length ?? 0;
  }
}
