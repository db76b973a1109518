/**
 * `edit` with OpenHands' OHEditor semantics (view, create, str_replace, insert, undo_edit).
 *
 * Every modification is a `vscode.WorkspaceEdit` on the TextDocument (opened with
 * `workspace.openTextDocument`, which does not show it), followed by `document.save()`: the change is
 * on VS Code's undo stack, so the user's own Undo (Ctrl+Z) reverts an agent's edit, and the editor
 * shows the new text at once. The text rules (uniqueness, numbering) are in ../oheditor.ts, the diff in ../udiff.ts.
 * `undo_edit` reverts the last edit made through oh to that file (this window's own history).
 *
 * Unsaved changes: when the user has the file open with unsaved changes, the edit is
 * applied to that buffer (the agent computed it on the text read returned, which is the buffer's)
 * and NOT saved, because saving would silently write the user's unsaved text too. The observation
 * says so. A clean document is saved as before. Files that are not UTF-8 and not open are edited
 * on disk in their own encoding (../textenc.ts), never through a TextDocument that would re-encode them.
 */
import * as vscode from 'vscode';
import { listDirectory } from '../listing';
import {
  createdMessage,
  EditHistory,
  EditOutcome,
  fileExistsMessage,
  insertAt,
  noHistoryMessage,
  notFoundMessage,
  strReplace,
  undoneMessage,
  viewFile,
} from '../oheditor';
import { ActionContext } from '../connection';
import { Action, editObservation, EditResult, Observation, ToolError } from '../protocol';
import { encodeText } from '../textenc';
import {
  allowedRoots,
  applyAndSave,
  createParents,
  currentContent,
  currentText,
  fsError,
  isDirectory,
  resolveTarget,
  statOrNull,
  Target,
  unsavedNote,
} from './files';

/** The OpenHands SDK file editor's image extensions. */
const IMAGE_EXTENSIONS = new Set(['.png', '.jpg', '.jpeg', '.gif', '.webp', '.bmp']);
import { unifiedDiff } from '../udiff';

export class EditExecutor {
  /** Public for review mode (../review/controller.ts): an accepted proposal records its undo entry here. */
  readonly history = new EditHistory();

  async execute(action: Action, _signal?: AbortSignal, ctx?: ActionContext): Promise<Observation> {
    const a = action.args;
    const command = String(a.command);
    const target = await resolveTarget(String(a.path), action, ctx);
    let r: EditResult;
    switch (command) {
      case 'view':
        r = await this.view(target, Array.isArray(a.view_range) ? (a.view_range as number[]) : null, ctx);
        break;
      case 'create':
        r = await this.create(target, typeof a.file_text === 'string' ? a.file_text : null);
        break;
      case 'str_replace':
        r = await this.modify(target, (text) =>
          strReplace(target.rp.shown, text, a.old_str as string, a.new_str as string | null),
        );
        break;
      case 'insert':
        r = await this.modify(target, (text) =>
          insertAt(target.rp.shown, text, a.insert_line as number, a.new_str as string),
        );
        break;
      case 'undo_edit':
        r = await this.undo(target);
        break;
      default:
        throw new ToolError(
          `Unrecognized command ${command}. The allowed commands for the edit tool are: view, create, str_replace, insert, undo_edit.`,
          'TOOL_UNSUPPORTED',
        );
    }
    return editObservation(action.id, String(a.path), r);
  }

  private async stat(t: Target): Promise<vscode.FileStat | null> {
    try {
      return await statOrNull(t.uri);
    } catch (e) {
      throw fsError(e, t.rp.shown, 'edit');
    }
  }

  private async view(t: Target, viewRange: number[] | null, ctx?: ActionContext): Promise<EditResult> {
    const st = await this.stat(t);
    if (!st) throw new ToolError(notFoundMessage(t.rp.shown));
    if (isDirectory(st)) {
      if (viewRange) {
        throw new ToolError(
          `Invalid \`view_range\` parameter: [${viewRange.join(', ')}]. The \`view_range\` parameter is not allowed when \`path\` points to a directory.`,
        );
      }
      const roots = (await allowedRoots(ctx)).map((r) => r.real);
      return result(await listDirectory(t.rp.shown, t.rp.real, undefined, roots));
    }
    if (IMAGE_EXTENSIONS.has((/\.[^./\\]+$/.exec(t.rp.shown)?.[0] ?? '').toLowerCase())) {
      // The SDK answers with image content, which an edit observation cannot carry: say how to get it.
      throw new ToolError(
        `The file ${t.rp.shown} is an image; get its bytes with the read action and args.encoding "base64" (the observation then names its mime_type).`,
      );
    }
    return result(viewFile(t.rp.shown, await currentText(t, 'view'), viewRange));
  }

  private async create(t: Target, fileText: string | null): Promise<EditResult> {
    if (fileText === null) throw new ToolError('Parameter `file_text` is required for command: create.');
    const st = await this.stat(t);
    if (st) throw new ToolError(fileExistsMessage(t.rp.shown, isDirectory(st)));
    await createParents(t.uri, t.rp.shown);
    // createFile + insert in one WorkspaceEdit: the new file's text is an undoable edit like any other.
    const edit = new vscode.WorkspaceEdit();
    edit.createFile(t.uri, { overwrite: false, ignoreIfExists: false });
    if (fileText) edit.insert(t.uri, new vscode.Position(0, 0), fileText);
    if (!(await vscode.workspace.applyEdit(edit))) {
      throw new ToolError(`VS Code could not create ${t.rp.shown}.`);
    }
    const doc = await vscode.workspace.openTextDocument(t.uri);
    if (doc.isDirty && !(await doc.save())) {
      throw new ToolError(`VS Code created ${t.rp.shown} but could not save its content.`);
    }
    return {
      content: createdMessage(t.rp.shown),
      prevExist: false,
      oldContent: null,
      newContent: fileText,
      diff: unifiedDiff(t.rp.shown, '', doc.getText()),
    };
  }

  /** str_replace / insert: compute on the current text (the open buffer's), apply, save if it was clean. */
  private async modify(t: Target, change: (text: string) => EditOutcome): Promise<EditResult> {
    // Refuses missing, directory, binary files before VS Code opens them.
    const current = await currentContent(t, 'edit');
    if (!current.fromDocument && current.encoding !== 'utf-8') {
      const outcome = change(current.text);
      await this.writeEncoded(t, outcome.newText, current.encoding, current.bom);
      this.history.push(t.rp.real, current.text);
      return {
        content: outcome.content,
        prevExist: true,
        oldContent: current.text,
        newContent: outcome.newText,
        diff: unifiedDiff(t.rp.shown, current.text, outcome.newText),
      };
    }
    const doc = await this.document(t);
    const wasDirty = doc.isDirty;
    const text = doc.getText();
    const outcome = change(text);
    await applyAndSave(doc, outcome.newText, t.rp.shown, !wasDirty);
    this.history.push(t.rp.real, text);
    const after = doc.getText();
    return {
      content: outcome.content + (wasDirty ? unsavedNote(t.rp.shown) : ''),
      prevExist: true,
      oldContent: text,
      newContent: after,
      diff: unifiedDiff(t.rp.shown, text, after),
    };
  }

  private async writeEncoded(
    t: Target,
    text: string,
    encoding: Parameters<typeof encodeText>[1],
    bom: boolean,
  ): Promise<void> {
    const bytes = encodeText(text, encoding, bom, t.rp.shown);
    try {
      await vscode.workspace.fs.writeFile(t.uri, bytes);
    } catch (e) {
      throw fsError(e, t.rp.shown, 'edit');
    }
  }

  private async undo(t: Target): Promise<EditResult> {
    const previous = this.history.pop(t.rp.real);
    if (previous === undefined) throw new ToolError(noHistoryMessage(t.rp.shown));
    let doc: vscode.TextDocument | null = null;
    let current: Awaited<ReturnType<typeof currentContent>>;
    try {
      current = await currentContent(t, 'edit');
      if (current.fromDocument || current.encoding === 'utf-8') doc = await this.document(t);
    } catch (e) {
      this.history.push(t.rp.real, previous); // nothing was undone: keep the entry
      throw e;
    }
    if (!doc) {
      await this.writeEncoded(t, previous, current.encoding, current.bom);
      return {
        content: undoneMessage(t.rp.shown, previous),
        prevExist: true,
        oldContent: current.text,
        newContent: previous,
        diff: unifiedDiff(t.rp.shown, current.text, previous),
      };
    }
    const wasDirty = doc.isDirty;
    const before = doc.getText();
    await applyAndSave(doc, previous, t.rp.shown, !wasDirty);
    return {
      content: undoneMessage(t.rp.shown, previous) + (wasDirty ? unsavedNote(t.rp.shown) : ''),
      prevExist: true,
      oldContent: before,
      newContent: doc.getText(),
      diff: unifiedDiff(t.rp.shown, before, doc.getText()),
    };
  }

  private async document(t: Target): Promise<vscode.TextDocument> {
    try {
      return await vscode.workspace.openTextDocument(t.uri);
    } catch (e) {
      throw fsError(e, t.rp.shown, 'edit');
    }
  }
}

function result(content: string): EditResult {
  return { content, prevExist: true, oldContent: null, newContent: null, diff: null };
}
