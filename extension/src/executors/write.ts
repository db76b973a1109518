/**
 * `write`: the file's new content through `workspace.fs` (parent folders created), and open editors
 * kept in sync so a following `read` (which prefers the open document) sees the new text:
 * - open with unsaved changes: the document is replaced with one WorkspaceEdit and saved (the
 *   user's unsaved text would otherwise hide the write, or be saved over it later);
 * - open and clean: VS Code reloads it from disk; we wait for that (bounded) and, if the reload does
 *   not arrive in time, apply the text to the document ourselves.
 * - a line-range write into a document with unsaved changes is applied to the buffer and not saved
 *   (the result holds the user's unsaved lines; saving would write them silently), and says so.
 *
 * `encoding`: "utf-8" (default), "base64" (content is the bytes, base64), or a codec (../textenc.ts).
 * Without one, an existing non-UTF-8 text file keeps its encoding. Parent folders are created.
 */
import * as vscode from 'vscode';
import { notFoundMessage, writeRange } from '../oheditor';
import { ActionContext } from '../connection';
import { Action, Observation, ToolError, writeObservation } from '../protocol';
import { canonicalEncoding, encodeText, TextEncodingName } from '../textenc';
import {
  applyAndSave,
  createParents,
  currentText,
  diskEncoding,
  fsError,
  isDirectory,
  openDocument,
  resolveTarget,
  statOrNull,
  Target,
  unsavedNote,
  waitForDocumentText,
} from './files';
import { writeAppend, writeCreate } from './writemodes';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The bytes to write, or null for plain UTF-8 text (which goes through the open-document rules). */
async function encodedBytes(
  target: Target,
  content: string,
  encoding: unknown,
  whole: boolean,
): Promise<Uint8Array | null> {
  if (encoding === 'base64') {
    const compact = content.replace(/\s+/g, '');
    if (compact.length % 4 === 1 || !BASE64.test(compact)) {
      throw new ToolError(
        'args.content is not valid base64 (encoding: "base64" wants the file\'s bytes, base64-encoded).',
        'BAD_REQUEST',
      );
    }
    if (!whole) throw new ToolError('A base64 write replaces the whole file: drop start/end.', 'BAD_REQUEST');
    return Buffer.from(compact, 'base64');
  }
  let enc: TextEncodingName | null = null;
  let bom = false;
  if (typeof encoding === 'string' && encoding !== '') {
    enc = canonicalEncoding(encoding);
    if (!enc) {
      throw new ToolError(
        `The encoding ${JSON.stringify(encoding)} is not supported by the VS Code extension: use utf-8, latin-1, cp1252, utf-16-le, utf-16-be or base64.`,
      );
    }
  } else if (!openDocument(target.uri)) {
    const disk = await diskEncoding(target); // keep an existing file's encoding
    if (disk) ({ encoding: enc, bom } = disk);
  }
  if (!enc || enc === 'utf-8') return null;
  return encodeText(content, enc, bom, target.rp.shown);
}

const RELOAD_WAIT_MS = 1500;

export async function executeWrite(action: Action, _signal?: AbortSignal, ctx?: ActionContext): Promise<Observation> {
  const a = action.args;
  if (a.mode === 'create') return writeCreate(action, ctx);
  if (a.mode === 'append') return writeAppend(action, ctx);
  const content = String(a.content);
  const start = typeof a.start === 'number' ? a.start : 0;
  const end = typeof a.end === 'number' ? a.end : -1;
  const target = await resolveTarget(String(a.path), action, ctx);
  const { rp, uri } = target;
  const whole = start <= 0 && end === -1;

  if (a.encoding === 'base64' || (whole && (typeof a.encoding === 'string' || !openDocument(uri)))) {
    const bytes = await encodedBytes(target, content, a.encoding, whole);
    if (bytes) {
      let st0: vscode.FileStat | null;
      try {
        st0 = await statOrNull(uri);
      } catch (e) {
        throw fsError(e, rp.shown, 'write');
      }
      if (st0 && isDirectory(st0))
        throw new ToolError(`The path ${rp.shown} is a directory; cannot write it as a file.`);
      if (!st0) await createParents(uri, rp.shown);
      try {
        await vscode.workspace.fs.writeFile(uri, bytes);
      } catch (e) {
        throw fsError(e, rp.shown, 'write');
      }
      return writeObservation(action.id, String(a.path));
    }
  }

  let oldText: string | null = null;
  if (!(start <= 0 && end === -1)) {
    try {
      oldText = await currentText(target, 'edit');
    } catch (e) {
      if (!(e instanceof ToolError && e.message === notFoundMessage(rp.shown))) throw e;
    }
  }
  const newText = writeRange(oldText, content, start, end);

  const doc = openDocument(uri);
  if (doc && doc.isDirty) {
    // A whole-file write replaces the user's unsaved text (it is not written); a range write keeps it, so it is not saved.
    await applyAndSave(doc, newText, rp.shown, whole);
    const o = writeObservation(action.id, String(a.path));
    if (!whole) o.content = unsavedNote(rp.shown).trim();
    return o;
  }
  let st: vscode.FileStat | null;
  try {
    st = await statOrNull(uri);
  } catch (e) {
    throw fsError(e, rp.shown, 'write');
  }
  if (st && isDirectory(st)) throw new ToolError(`The path ${rp.shown} is a directory; cannot write it as a file.`);
  if (!st) await createParents(uri, rp.shown);
  try {
    await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(newText));
  } catch (e) {
    throw fsError(e, rp.shown, 'write');
  }
  if (doc && !doc.isClosed) {
    const synced = await waitForDocumentText(doc, newText, RELOAD_WAIT_MS);
    if (!synced && !doc.isDirty) await applyAndSave(doc, newText, rp.shown);
  }
  return writeObservation(action.id, String(a.path));
}
