/**
 * File access through VS Code, shared by `read`, `write` and `edit`.
 *
 * The rule that makes the agent and the user see the same file: when VS Code has a TextDocument for
 * the path, that document (with its unsaved changes) is the truth; otherwise the disk is, read
 * through `workspace.fs`. Paths are checked (PATH_DENIED) before any of this runs and mapped to a
 * Uri under the folder the user opened, so they match the documents VS Code already has.
 */

import * as vscode from 'vscode';
import { minimalReplacement, decodeText, notFoundMessage } from '../oheditor';
import { resolvePath, ResolvedPath, WorkspaceRoot } from '../paths';
import { ToolError } from '../protocol';
import { realpathOrSelf } from '../session';

export const MAX_FILE_BYTES = 256 * 1024 * 1024; // bigger files are refused, never half-read

export interface Target {
  rp: ResolvedPath;
  uri: vscode.Uri;
}

/** The window's local folders with their real paths (folders of other schemes cannot be served). */
export async function workspaceRoots(): Promise<{ roots: WorkspaceRoot[]; uris: vscode.Uri[] }> {
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
  const roots: WorkspaceRoot[] = [];
  for (const f of folders) roots.push({ path: f.uri.fsPath, real: await realpathOrSelf(f.uri.fsPath) });
  return { roots, uris: folders.map((f) => f.uri) };
}

export async function resolveTarget(raw: string): Promise<Target> {
  const { roots, uris } = await workspaceRoots();
  const rp = await resolvePath(raw, roots);
  const uri = rp.segments.length ? vscode.Uri.joinPath(uris[rp.folderIndex], ...rp.segments) : uris[rp.folderIndex];
  return { rp, uri };
}

export function openDocument(uri: vscode.Uri): vscode.TextDocument | undefined {
  const key = uri.toString();
  return vscode.workspace.textDocuments.find((d) => !d.isClosed && d.uri.toString() === key);
}

/** A VS Code file system error as the agent should read it. */
export function fsError(e: unknown, shown: string, verb: string): ToolError {
  if (e instanceof ToolError) return e;
  const code = (e as { code?: string })?.code ?? '';
  switch (code) {
    case 'FileNotFound':
    case 'ENOENT':
      return new ToolError(notFoundMessage(shown));
    case 'FileIsADirectory':
    case 'EISDIR':
      return new ToolError(`The path ${shown} is a directory; cannot ${verb} it as a file.`);
    case 'FileNotADirectory':
    case 'ENOTDIR':
      return new ToolError(`Cannot ${verb} ${shown}: a parent path exists and is not a directory.`);
    case 'NoPermissions':
    case 'EACCES':
    case 'EPERM':
      return new ToolError(`Permission denied: cannot ${verb} ${shown}.`);
    default:
      return new ToolError(`Cannot ${verb} ${shown}: ${(e as Error)?.message ?? String(e)}`);
  }
}

export async function statOrNull(uri: vscode.Uri): Promise<vscode.FileStat | null> {
  try {
    return await vscode.workspace.fs.stat(uri);
  } catch (e) {
    const code = (e as { code?: string })?.code;
    if (code === 'FileNotFound' || code === 'ENOENT' || code === 'FileNotADirectory') return null;
    throw e;
  }
}

export const isDirectory = (st: vscode.FileStat) => (st.type & vscode.FileType.Directory) !== 0;

/**
 * The file's current text: the open document's (unsaved edits included), else the disk's. Refuses
 * directories, binary files (NUL in the first 8 KiB), non-UTF-8 and oversized files.
 */
export async function currentText(t: Target, verb: 'read' | 'edit' | 'view'): Promise<string> {
  const doc = openDocument(t.uri);
  if (doc) {
    const text = doc.getText();
    if (text.slice(0, 8192).includes('\0')) {
      throw new ToolError(`The file ${t.rp.shown} is a binary file (it contains NUL bytes); only text files can be read or edited.`);
    }
    return text;
  }
  let st: vscode.FileStat | null;
  try {
    st = await statOrNull(t.uri);
  } catch (e) {
    throw fsError(e, t.rp.shown, verb);
  }
  if (!st) throw new ToolError(notFoundMessage(t.rp.shown));
  if (isDirectory(st)) {
    throw new ToolError(
      verb === 'read'
        ? `The path ${t.rp.shown} is a directory, not a file. Use the edit \`view\` command to list a directory.`
        : `The path ${t.rp.shown} is a directory and only the \`view\` command can be used on directories.`,
    );
  }
  if (st.size > MAX_FILE_BYTES) {
    throw new ToolError(
      `The file ${t.rp.shown} is too large to ${verb} (${st.size.toLocaleString('en-US')} bytes; the limit is ` +
        `${MAX_FILE_BYTES.toLocaleString('en-US')}). Read a part of it with a shell command such as \`head\`, \`tail\` or \`sed -n\`.`,
    );
  }
  let bytes: Uint8Array;
  try {
    bytes = await vscode.workspace.fs.readFile(t.uri);
  } catch (e) {
    throw fsError(e, t.rp.shown, verb);
  }
  return decodeText(t.rp.shown, bytes);
}

/**
 * Changes an open document to `newText` with one minimal WorkspaceEdit (so it lands on VS Code's
 * undo stack as a single step the user can undo), then saves it to disk.
 */
export async function applyAndSave(doc: vscode.TextDocument, newText: string, shown: string): Promise<void> {
  const old = doc.getText();
  if (old !== newText) {
    const r = minimalReplacement(old, newText);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(doc.uri, new vscode.Range(doc.positionAt(r.start), doc.positionAt(r.end)), r.text);
    if (!(await vscode.workspace.applyEdit(edit))) {
      throw new ToolError(`VS Code refused the edit to ${shown} (is the file read-only, or was it changed meanwhile?).`);
    }
  }
  if (doc.isDirty && !(await doc.save())) {
    throw new ToolError(`VS Code could not save ${shown}; the change is in the editor but not on disk.`);
  }
}

/** mkdir -p of the file's parent through workspace.fs. */
export async function createParents(uri: vscode.Uri, shown: string): Promise<void> {
  const parent = vscode.Uri.joinPath(uri, '..');
  try {
    await vscode.workspace.fs.createDirectory(parent);
  } catch (e) {
    throw fsError(e, shown, 'create');
  }
}

/** Waits until an open (clean) document shows `text` after a write to disk, up to `ms`. */
export function waitForDocumentText(doc: vscode.TextDocument, text: string, ms: number): Promise<boolean> {
  if (doc.getText() === text) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      sub.dispose();
      resolve(ok);
    };
    const sub = vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document === doc && doc.getText() === text) done(true);
    });
    const timer = setTimeout(() => done(doc.getText() === text), ms);
  });
}
