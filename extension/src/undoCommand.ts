/**
 * "oh: Revert an Agent's Action…" (issue 29, docs/protocol.md §3.15.2): pick an entry of the backend's
 * timeline; the backend plans the undo with this window's unsaved buffers as the files' current text, and the
 * edits are applied here as ONE WorkspaceEdit, so each file's Ctrl+Z takes the revert back. Documents that had
 * unsaved changes keep them (merged, still unsaved); the others are saved.
 */

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { asText, entryItem, parseEdits, parseEntries, refusalText, relativeTo, UndoEdit } from './agentundo';
import { EditorConnection } from './connection';
import { JsonObject } from './protocol';

async function pickConnection(conns: EditorConnection[]): Promise<EditorConnection | undefined> {
  if (conns.length <= 1) return conns[0];
  const picked = await vscode.window.showQuickPick(
    conns.map((c) => ({ label: c.session.instance_id, description: c.session.workspace, conn: c })),
    { placeHolder: 'Which backend?' },
  );
  return picked?.conn;
}

/** The unsaved documents inside `root`: {relative path: text}. */
function unsavedBuffers(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const doc of vscode.workspace.textDocuments) {
    if (!doc.isDirty || doc.uri.scheme !== 'file') continue;
    const rel = relativeTo(root, doc.uri.fsPath);
    if (rel) out[rel] = doc.getText();
  }
  return out;
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

/** One WorkspaceEdit for all edits; returns the documents to save afterwards (those that were not dirty). */
async function buildEdit(
  root: string,
  edits: UndoEdit[],
): Promise<{ edit: vscode.WorkspaceEdit; save: vscode.TextDocument[] }> {
  const edit = new vscode.WorkspaceEdit();
  const save: vscode.TextDocument[] = [];
  for (const e of edits) {
    const uri = vscode.Uri.file(path.join(root, ...e.path.split('/')));
    if ('delete' in e) {
      edit.deleteFile(uri, { ignoreIfNotExists: true });
      continue;
    }
    const text = asText(e.content);
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    const doc =
      open ?? (text !== undefined && (await exists(uri)) ? await vscode.workspace.openTextDocument(uri) : undefined);
    if (doc && text !== undefined) {
      edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), text);
      if (!doc.isDirty) save.push(doc);
    } else {
      edit.createFile(uri, { overwrite: true, contents: e.content });
    }
  }
  return { edit, save };
}

async function applyUndo(
  conn: EditorConnection,
  root: string,
  answer: JsonObject,
  log: (l: string) => void,
): Promise<string> {
  const entry = Number(answer.entry);
  try {
    const edits = parseEdits(answer);
    const { edit, save } = await buildEdit(root, edits);
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error('VS Code did not apply the edit');
    for (const doc of save) await doc.save();
    for (const e of edits) {
      if ('mode' in e && e.mode !== undefined)
        await fs.promises.chmod(path.join(root, e.path), e.mode).catch(() => undefined);
    }
    return `oh: reverted ${edits.length} file${edits.length === 1 ? '' : 's'} (history entry ${entry}); Ctrl+Z in a file takes it back.`;
  } finally {
    await conn
      .request({ type: 'history', op: 'applied', entry })
      .catch((e) => log(`history applied ${entry}: ${String(e)}`));
  }
}

export async function revertAgentAction(conns: EditorConnection[], log: (line: string) => void): Promise<void> {
  const conn = await pickConnection(conns);
  if (!conn) {
    void vscode.window.showInformationMessage(
      'oh: not connected to a backend. Start one here: oh start --runtime vscode --history.',
    );
    return;
  }
  try {
    const listed = await conn.request({ type: 'history', op: 'list' });
    if (listed.type !== 'history') {
      void vscode.window.showWarningMessage(refusalText(listed));
      return;
    }
    const root = String(listed.workspace ?? '');
    const entries = parseEntries(listed);
    if (!entries.length) {
      void vscode.window.showInformationMessage('oh: no agent action changed a file yet.');
      return;
    }
    const picked = await vscode.window.showQuickPick(
      entries.map((e) => ({ ...entryItem(e), entry: e })),
      { placeHolder: 'Revert which action? (the newest first)', matchOnDetail: true },
    );
    if (!picked) return;
    const answer = await conn.request({
      type: 'history',
      op: 'undo',
      entry: picked.entry.id,
      buffers: unsavedBuffers(root),
    });
    if (answer.type !== 'history' || answer.ok !== true) {
      void vscode.window.showWarningMessage(refusalText(answer));
      return;
    }
    if (!answer.entry) {
      void vscode.window.showInformationMessage(`oh: ${String(answer.message ?? 'nothing to undo')}`);
      return;
    }
    const said = await applyUndo(conn, root, answer, log);
    log(said);
    void vscode.window.showInformationMessage(said);
  } catch (e) {
    log(`revert failed: ${String(e)}`);
    void vscode.window.showErrorMessage(`oh: the revert failed: ${String((e as Error).message ?? e)}`);
  }
}
