/**
 * `write`: the file's new content through `workspace.fs` (parent folders created), and open editors
 * kept in sync so a following `read` (which prefers the open document) sees the new text:
 * - open with unsaved changes: the document is replaced with one WorkspaceEdit and saved (the
 *   user's unsaved text would otherwise hide the write, or be saved over it later);
 * - open and clean: VS Code reloads it from disk; we wait for that (bounded) and, if the reload does
 *   not arrive in time, apply the text to the document ourselves.
 */
import * as vscode from 'vscode';
import { notFoundMessage, writeRange } from '../oheditor';
import { Action, Observation, ToolError, writeObservation } from '../protocol';
import {
  applyAndSave,
  createParents,
  currentText,
  fsError,
  isDirectory,
  openDocument,
  resolveTarget,
  statOrNull,
  waitForDocumentText,
} from './files';

const RELOAD_WAIT_MS = 1500;

export async function executeWrite(action: Action): Promise<Observation> {
  const a = action.args;
  const content = String(a.content);
  const start = typeof a.start === 'number' ? a.start : 0;
  const end = typeof a.end === 'number' ? a.end : -1;
  const target = await resolveTarget(String(a.path));
  const { rp, uri } = target;

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
    await applyAndSave(doc, newText, rp.shown);
    return writeObservation(action.id, String(a.path));
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
