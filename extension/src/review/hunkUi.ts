/**
 * Per-hunk review in the diff editor (issue 39 item 2): a label after each hunk's first changed line on the
 * proposed side ("hunk 2 of 3: kept ✓"), the reviewed mark that stays while the proposal waits, and the
 * cursor moved to the next hunk to decide. The Keep / Undo buttons themselves are editor title actions
 * (package.json): a CodeLens provider on `oh-proposal:` renders nothing in the diff editor of code-server 1.99
 * (tried for real: the same provider's lens shows in a plain editor; `diffEditor.codeLens` is off by default),
 * while title actions show on every diff, next to Accept / Reject, with their names as tooltips.
 */
import * as vscode from 'vscode';
import { hunkLabel, HunkState, shownText, Split } from './hunks';

export interface HunkReview {
  split: Split;
  states: HunkState[];
}

const STATES: HunkState[] = ['pending', 'kept', 'undone'];

function normalized(text: string): string {
  return text.replace(/\r\n?/g, '\n');
}

export class HunkPainter implements vscode.Disposable {
  private readonly types = new Map<HunkState, vscode.TextEditorDecorationType>();
  /** Proposed-side URI -> the hunk the cursor goes to once the document shows the new text. */
  private readonly focus = new Map<string, number>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly scheme: string,
    private readonly reviewOf: (uri: vscode.Uri) => HunkReview | undefined,
  ) {
    const colours: Record<HunkState, string> = {
      pending: 'editorCodeLens.foreground',
      kept: 'gitDecoration.addedResourceForeground',
      undone: 'gitDecoration.deletedResourceForeground',
    };
    for (const state of STATES) {
      const type = vscode.window.createTextEditorDecorationType({
        after: { margin: '0 0 0 2em', color: new vscode.ThemeColor(colours[state]), fontStyle: 'italic' },
      });
      this.types.set(state, type);
      this.disposables.push(type);
    }
    this.disposables.push(
      vscode.window.onDidChangeVisibleTextEditors(() => this.paintAll()),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document.uri.scheme === scheme) this.paintAll();
      }),
    );
  }

  private editorFor(uri: vscode.Uri): vscode.TextEditor | undefined {
    const key = uri.toString();
    const mine = (e: vscode.TextEditor | undefined) => e?.document.uri.toString() === key;
    const active = vscode.window.activeTextEditor;
    return mine(active) ? active : vscode.window.visibleTextEditors.find(mine);
  }

  /** The cursor's line in the proposed side of a diff, if it is shown. */
  cursorLine(uri: vscode.Uri): number | undefined {
    return this.editorFor(uri)?.selection.active.line;
  }

  /** The hunk the cursor is about to go to (the document has not shown the new text yet), if any. */
  pendingFocus(uri: vscode.Uri): number | undefined {
    return this.focus.get(uri.toString());
  }

  focusOn(uri: vscode.Uri, hunk: number | undefined): void {
    if (hunk === undefined) this.focus.delete(uri.toString());
    else this.focus.set(uri.toString(), hunk);
  }

  paintAll(): void {
    for (const editor of vscode.window.visibleTextEditors)
      if (editor.document.uri.scheme === this.scheme) this.paint(editor);
  }

  private paint(editor: vscode.TextEditor): void {
    const doc = editor.document;
    const review = this.reviewOf(doc.uri);
    if (!review) {
      for (const type of this.types.values()) editor.setDecorations(type, []);
      return;
    }
    const shown = shownText(review.split, review.states);
    if (normalized(doc.getText()) !== normalized(shown.text)) return; // being updated: painted on its change event
    const total = review.states.length;
    const lineOf = (n: number) => Math.max(0, Math.min(shown.spans[n - 1].coreStart, doc.lineCount - 1));
    for (const state of STATES) {
      const marks = shown.spans
        .filter((s) => review.states[s.n - 1] === state)
        .map((s) => ({
          range: doc.lineAt(lineOf(s.n)).range.with({ start: doc.lineAt(lineOf(s.n)).range.end }),
          renderOptions: { after: { contentText: hunkLabel(s.n, total, state) } },
        }));
      editor.setDecorations(this.types.get(state)!, marks);
    }
    const key = doc.uri.toString();
    const target = this.focus.get(key);
    if (target === undefined) return;
    this.focus.delete(key);
    const at = new vscode.Position(lineOf(target), 0);
    editor.selection = new vscode.Selection(at, at);
    editor.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
