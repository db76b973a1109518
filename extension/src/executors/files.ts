/**
 * File access through VS Code, shared by `read`, `write` and `edit`.
 *
 * The rule that makes the agent and the user see the same file: when VS Code has a TextDocument for
 * the path, that document (with its unsaved changes) is the truth; otherwise the disk is, read
 * through `workspace.fs`. Paths are checked (PATH_DENIED) before any of this runs and mapped to a
 * Uri under the folder the user opened, so they match the documents VS Code already has.
 */

import * as vscode from 'vscode';
import { directoryOnlyViewMessage, minimalReplacement, notFoundMessage } from '../oheditor';
import { decodeBytes, TextEncodingName } from '../textenc';
import { ActionContext } from '../connection';
import { refuseHardLink, resolvePath, ResolvedPath, WorkspaceRoot } from '../paths';
import { Action, ToolError } from '../protocol';
import { pathContains, realpathOrSelf } from '../session';

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

/**
 * Where an action may reach: the backend's workspace + allowed roots from its `registered` answer
 * (a backend on A/sub in a window open on A is confined to A/sub), else (older backends) the
 * window's folders.
 */
export async function allowedRoots(ctx?: ActionContext): Promise<WorkspaceRoot[]> {
  if (ctx?.roots.length) {
    const out: WorkspaceRoot[] = [];
    for (const r of ctx.roots) out.push({ path: r, real: await realpathOrSelf(r) });
    return out;
  }
  return (await workspaceRoots()).roots;
}

/** What relative paths (and a relative run cwd) are relative to: the agent's workdir, else the backend's workspace. */
export function baseDir(action: Action, ctx?: ActionContext): string | null {
  return action.agent?.workdir || ctx?.workspace || null;
}

export async function resolveTarget(raw: string, action?: Action, ctx?: ActionContext): Promise<Target> {
  const roots = await allowedRoots(ctx);
  const rp = await resolvePath(raw, roots, action ? baseDir(action, ctx) : null);
  return { rp, uri: await uriFor(rp.real) };
}

/**
 * A Uri under the window folder that holds `real` (the deepest one), so it matches the documents
 * VS Code already has open even when the folder was opened through a symlink; a file:// Uri of the
 * real path outside the window's folders (an allowed root such as /tmp).
 */
async function uriFor(real: string): Promise<vscode.Uri> {
  const { roots, uris } = await workspaceRoots();
  let best = -1;
  roots.forEach((r, i) => {
    if (pathContains(r.real, real) && (best < 0 || r.real.length > roots[best].real.length)) best = i;
  });
  if (best < 0) return vscode.Uri.file(real);
  const rel = real.slice(roots[best].real.length).split(/[\\/]/).filter(Boolean);
  return rel.length ? vscode.Uri.joinPath(uris[best], ...rel) : uris[best];
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
    case 'ENAMETOOLONG':
      return new ToolError(`File name too long: ${shown}. Each path component must be at most 255 bytes.`);
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

export interface CurrentText {
  text: string;
  encoding: TextEncodingName;
  bom: boolean;
  /** From an open document (VS Code decoded it), rather than from the disk's bytes. */
  fromDocument: boolean;
}

/**
 * The file's current text: the open document's (unsaved edits included), else the disk's. Refuses
 * directories, binary files and oversized files.
 */
export async function currentText(t: Target, verb: 'read' | 'edit' | 'view'): Promise<string> {
  return (await currentContent(t, verb)).text;
}

/** The local runtime's text (src/oh/runtimes/local/files.py). */
function binaryError(shown: string, _verb: string): ToolError {
  return new ToolError(
    `The file ${shown} is a binary file (not text in UTF-8 or a detectable encoding); read it with args.encoding "base64" to get its bytes.`,
  );
}

export async function currentContent(t: Target, verb: 'read' | 'edit' | 'view'): Promise<CurrentText> {
  await refuseHardLink(t.rp.shown, t.rp.real);
  const doc = openDocument(t.uri);
  if (doc) {
    const text = doc.getText();
    if (text.slice(0, 8192).includes('\0')) throw binaryError(t.rp.shown, verb);
    return { text, encoding: 'utf-8', bom: false, fromDocument: true };
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
        : directoryOnlyViewMessage(t.rp.shown),
    );
  }
  if (st.size > MAX_FILE_BYTES) {
    throw new ToolError(
      `The file ${t.rp.shown} is too large to ${verb} (${st.size.toLocaleString('en-US')} bytes; the limit is ` +
        `${MAX_FILE_BYTES.toLocaleString('en-US')}). Read a part of it with a shell command such as \`head\`, \`tail\` or \`sed -n\`.`,
    );
  }
  const d = decodeBytes(await readBytes(t, verb));
  if (!d) throw binaryError(t.rp.shown, verb);
  return { ...d, fromDocument: false };
}

export async function readBytes(t: Target, verb: string): Promise<Uint8Array> {
  await refuseHardLink(t.rp.shown, t.rp.real);
  try {
    return await vscode.workspace.fs.readFile(t.uri);
  } catch (e) {
    throw fsError(e, t.rp.shown, verb);
  }
}

/** The encoding a file on disk has now (for writing it back the same way); null when absent, empty or binary. */
export async function diskEncoding(t: Target): Promise<{ encoding: TextEncodingName; bom: boolean } | null> {
  try {
    const st = await statOrNull(t.uri);
    // Sniffing means reading the file: past 64 MiB a write keeps the default (UTF-8) instead.
    if (!st || isDirectory(st) || st.size === 0 || st.size > 64 * 1024 * 1024) return null;
    const d = decodeBytes(await vscode.workspace.fs.readFile(t.uri));
    return d ? { encoding: d.encoding, bom: d.bom } : null;
  } catch {
    return null;
  }
}

/**
 * Changes an open document to `newText` with one minimal WorkspaceEdit (so it lands on VS Code's
 * undo stack as a single step the user can undo), then saves it to disk, unless `save` is false
 * (the document had the user's unsaved changes: saving would write them too, see edit.ts).
 */
export async function applyAndSave(
  doc: vscode.TextDocument,
  newText: string,
  shown: string,
  save = true,
): Promise<void> {
  const old = doc.getText();
  if (old !== newText) {
    const r = minimalReplacement(old, newText);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(doc.uri, new vscode.Range(doc.positionAt(r.start), doc.positionAt(r.end)), r.text);
    if (!(await vscode.workspace.applyEdit(edit))) {
      throw new ToolError(
        `VS Code refused the edit to ${shown} (is the file read-only, or was it changed meanwhile?).`,
      );
    }
  }
  if (save && doc.isDirty && !(await doc.save())) {
    throw new ToolError(`VS Code could not save ${shown}; the change is in the editor but not on disk.`);
  }
}

/** Appended to an edit's observation when the user's unsaved changes kept it from being saved. */
export function unsavedNote(shown: string): string {
  return (
    `\n[NOTE: ${shown} has unsaved changes by the user in VS Code. The edit was applied to the editor ` +
    '(what read and view show) but NOT saved: the file on disk still holds the last saved text until the user ' +
    'saves. Commands that read the file from disk see the old text.]'
  );
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
