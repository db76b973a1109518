/**
 * Proposal (review) mode, the pure part (docs/protocol.md §3.11; Python: src/oh/protocol/review.py).
 *
 * `computeProposal` works out what a `write` or `edit` would make of a file, with the same rules the
 * executors apply (../oheditor.ts), WITHOUT touching it: the proposal is shown as a diff and applied
 * only when the user accepts. The texts the agent gets for each decision mirror the Python side.
 * No `vscode` import: unit-tested with node.
 */
import {
  createdMessage,
  fileExistsMessage,
  insertAt,
  noHistoryMessage,
  notFoundMessage,
  strReplace,
  undoneMessage,
  writeRange,
} from '../oheditor';
import { Action, editObservation, JsonObject, Observation, ToolError, writeObservation } from '../protocol';
import { unifiedDiff } from '../udiff';
import { partialNote } from './hunks';

export const MAX_REASON = 2000;

/** Whether an action changes a file (and so is reviewed): every write, every edit but `view`. */
export function isProposal(kind: string, args: JsonObject): boolean {
  return kind === 'write' || (kind === 'edit' && args.command !== 'view');
}

export interface ProposedChange {
  kind: 'write' | 'edit';
  /** The edit command, or the write mode. */
  command: string;
  /** The file's text the proposal was computed on; null = the file does not exist (it is created). */
  before: string | null;
  after: string;
  /** The observation content the executor would have answered (the accepted note is added later). */
  content: string;
}

/** A change to review, or (`change` null) the answer at once: nothing would change. */
export interface Computed {
  change: ProposedChange | null;
  content: string;
}

/** The previous text `undo_edit` would restore (looked at, not taken: taken when accepted). */
export type HistoryPeek = (path: string) => string | undefined;

export function computeProposal(
  kind: string,
  args: JsonObject,
  shown: string,
  real: string,
  before: string | null,
  peek: HistoryPeek,
): Computed {
  const done = (after: string, content: string, command: string): Computed =>
    after === before
      ? { change: null, content }
      : { change: { kind: kind as 'write' | 'edit', command, before, after, content }, content };
  if (kind === 'write') {
    const enc = args.encoding;
    if (enc !== undefined && enc !== null && enc !== '' && !/^utf-?8$/i.test(String(enc))) {
      throw new ToolError(
        `Review mode in VS Code shows text changes as a diff: a write with encoding ${JSON.stringify(enc)} cannot be reviewed there. ` +
          'Write UTF-8 text, or use the local runtime (`oh review`) for other encodings.',
        'TOOL_UNSUPPORTED',
      );
    }
    const content = String(args.content ?? '');
    const mode = typeof args.mode === 'string' ? args.mode : 'overwrite';
    if (mode === 'create') {
      if (before !== null)
        return { change: null, content: `The file ${shown} already exists; it was not changed (mode create).` };
      return done(content, '', mode);
    }
    if (mode === 'append') return done((before ?? '') + content, '', mode);
    const start = typeof args.start === 'number' ? args.start : 0;
    const end = typeof args.end === 'number' ? args.end : -1;
    return done(start <= 0 && end === -1 ? content : writeRange(before, content, start, end), '', mode);
  }
  const command = String(args.command);
  switch (command) {
    case 'create': {
      if (typeof args.file_text !== 'string')
        throw new ToolError('Parameter `file_text` is required for command: create.');
      if (before !== null) throw new ToolError(fileExistsMessage(shown));
      return done(args.file_text, createdMessage(shown), command);
    }
    case 'str_replace':
    case 'insert': {
      if (before === null) throw new ToolError(notFoundMessage(shown));
      const outcome =
        command === 'str_replace'
          ? strReplace(shown, before, args.old_str as string, args.new_str as string | null)
          : insertAt(shown, before, args.insert_line as number, args.new_str as string);
      return done(outcome.newText, outcome.content, command);
    }
    case 'undo_edit': {
      if (before === null) throw new ToolError(notFoundMessage(shown));
      const previous = peek(real);
      if (previous === undefined) throw new ToolError(noHistoryMessage(shown));
      return done(previous, undoneMessage(shown, previous), command);
    }
    default:
      throw new ToolError(
        `Unrecognized command ${command}. The allowed commands for the edit tool are: view, create, str_replace, insert, undo_edit.`,
        'TOOL_UNSUPPORTED',
      );
  }
}

export function cleanReason(reason: unknown): string {
  if (typeof reason !== 'string') return '';
  const t = reason.trim();
  return t.length > MAX_REASON ? t.slice(0, MAX_REASON) + ' [...]' : t;
}

/** Some hunks kept (1-based numbers of `total`), and the text that was written. */
export interface PartialAccept {
  kept: number[];
  total: number;
  written: string;
}

/**
 * The observation of an accepted proposal: the normal `write`/`edit` one with the accepted note (and `unsaved`,
 * the unsaved-buffer note, when the user's buffer was not saved). Partly accepted: `new_content` and `diff` are
 * what was written, and the content ends with the partial note (the agent's cue to read the file again).
 */
export function acceptedObservation(
  action: Action,
  shown: string,
  change: ProposedChange,
  unsaved: string,
  partial?: PartialAccept,
): Observation {
  const note = partial
    ? (unsaved ? unsaved.trimStart() + '\n' : '') + partialNote(shown, partial.kept, partial.total)
    : acceptedNote(shown) + unsaved;
  if (action.kind === 'write') return { ...writeObservation(action.id, String(action.args.path)), content: note };
  const written = partial ? partial.written : change.after;
  const content = change.content ? change.content.replace(/\n+$/, '') + '\n' + note : note;
  return editObservation(action.id, String(action.args.path), {
    content,
    prevExist: change.before !== null,
    oldContent: change.command === 'create' ? null : change.before,
    newContent: written,
    diff: unifiedDiff(shown, change.before ?? '', written),
  });
}

export function acceptedNote(path: string): string {
  return `[Review mode: the user accepted this change to ${path}.]`;
}

export function rejectedMessage(path: string, reason: string): string {
  return (
    `The user rejected the proposed change to ${path}; nothing was written. ` +
    `Take the reason into account before proposing another change. Reason: ${reason || '(no reason given)'}`
  );
}

export function staleMessage(path: string): string {
  return (
    `The proposed change to ${path} was not applied: the file changed after the proposal was made ` +
    '(edited by the user or another tool), so the reviewed diff no longer describes what would be written. ' +
    'Read the file again and propose the change anew. Reason: file changed since the proposal'
  );
}

export function timeoutMessage(path: string, seconds: number): string {
  return (
    `Nobody reviewed the proposed change to ${path} within ${formatSeconds(seconds)} s (review mode); the proposal was ` +
    'withdrawn and nothing was written. Ask the user to review sooner (`oh review`, or the diff in VS Code), ' +
    'or propose it again.'
  );
}

/** Python's `f"{x:g}"` for the values we use (whole seconds print without ".0"). */
function formatSeconds(s: number): string {
  return Number.isInteger(s) ? String(s) : String(Number(s.toPrecision(6)));
}

/**
 * Agent-controlled text (paths, agent names) for a VS Code notification or tab title: control and
 * bidi/zero-width characters shown as escapes, and `](` broken up, since notifications turn
 * `[label](command:...)` into a clickable link (the agent must never plant a button).
 */
export function plainForUi(text: string): string {
  return text
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g, (c) => {
      const code = c.charCodeAt(0);
      return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
    })
    .replace(/\]\(/g, '] (');
}

/** The word a person uses for a change (issue 42): a new file is created, an edit command is an edit. */
export function changeWord(command: string, isNew: boolean): string {
  if (isNew) return 'create';
  if (command === 'str_replace' || command === 'insert' || command === 'undo_edit') return 'edit';
  return command; // overwrite, append, create
}

/** A path as the user reads it: relative to its workspace folder (`segments`), else as the agent named it. */
export function workspaceRelative(shown: string, segments: string[]): string {
  return segments.length ? segments.join('/') : shown;
}

export interface Pending {
  agent: string;
  word: string;
  path: string;
}

/**
 * The one grouped review notification (issue 42), updated in place as proposals come and go; undefined when
 * none waits (then it goes away). At most `max` changes are named.
 */
export function reviewSummary(pending: Pending[], max = 3): string | undefined {
  if (!pending.length) return undefined;
  const n = pending.length;
  const agents = [...new Set(pending.map((p) => p.agent))];
  const named = pending
    .slice(0, max)
    .map((p) => `${p.word} ${p.path}`)
    .join(', ');
  const more = n > max ? `, +${n - max} more` : '';
  const head = n === 1 ? '1 change waits for your review' : `${n} changes wait for your review`;
  return plainForUi(
    `${head}: ${named}${more} (by ${agents.join(', ')}). Accept ✓ or reject ✕ in each diff's title bar.`,
  );
}
