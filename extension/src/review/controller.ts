/**
 * Proposal (review) mode in VS Code (docs/protocol.md §3.11).
 *
 * When the backend's `registered` answer says `review: true`, a `write` or `edit` (not `view`) is not
 * applied: its result is computed (./proposal.ts, the executors' own rules), a diff editor opens
 * (current file vs a read-only `oh-proposal:` document holding the proposed text) with Accept / Reject
 * (and Accept all, when several wait) in the editor title bar; one grouped notification, updated in place,
 * says how many wait and goes when none does (issue 42). Reject asks for an optional reason, which the
 * agent gets with the REJECTED error.
 *
 * Accepting applies ONE WorkspaceEdit (for one proposal, or for all of them with "Accept all"), so a
 * single Undo reverts what was accepted together; documents that had no unsaved changes are saved.
 * Before applying, each file's current text is compared with the text the proposal was computed on:
 * if it changed (the user typed, another tool wrote), that proposal is not applied and the agent gets
 * REJECTED saying the file changed (the same rule as the local runtime's `oh review accept`).
 */
import * as vscode from 'vscode';
import { ActionContext } from '../connection';
import { EditHistory, minimalReplacement } from '../oheditor';
import { Action, editObservation, errorObservation, Observation, ToolError, writeObservation } from '../protocol';
import { createParents, currentContent, resolveTarget, statOrNull, Target, unsavedNote } from '../executors/files';
import {
  acceptedObservation,
  changeWord,
  cleanReason,
  computeProposal,
  isProposal,
  plainForUi,
  ProposedChange,
  rejectedMessage,
  reviewSummary,
  staleMessage,
  timeoutMessage,
  workspaceRelative,
} from './proposal';
import { Decision, ProposalStore } from './store';
import { HunkPainter, HunkReview } from './hunkUi';
import { hunkAt, keptText, nextPending, shownText, splitHunks } from './hunks';

export const SCHEME = 'oh-proposal';

interface Item {
  action: Action;
  agent: string;
  target: Target;
  change: ProposedChange;
  /** Per-hunk review (an existing text file's change; a new file or an undo_edit is one whole-file decision). */
  hunks?: HunkReview;
}

type Executor = (action: Action, signal: AbortSignal, ctx?: ActionContext) => Promise<Observation>;

/** `oh-proposal:/<path>?id=N&side=after|before`: the path gives the diff its language (syntax colours). */
function proposalUri(id: number, side: 'before' | 'after', shown: string): vscode.Uri {
  return vscode.Uri.from({
    scheme: SCHEME,
    path: shown.startsWith('/') ? shown : '/' + shown,
    query: `id=${id}&side=${side}`,
  });
}

function idOf(uri: vscode.Uri | undefined): number | undefined {
  if (!uri || uri.scheme !== SCHEME) return undefined;
  const m = /(?:^|&)id=(\d+)/.exec(uri.query);
  return m ? Number(m[1]) : undefined;
}

/** What the user reads for a proposal: the change's word and the workspace-relative path (issue 42). */
function described(item: Item): { word: string; path: string } {
  return {
    word: changeWord(item.change.command, item.change.before === null),
    path: workspaceRelative(item.target.rp.shown, item.target.rp.segments),
  };
}

/**
 * The one grouped notification for all waiting proposals (issue 42): a progress notification, because it is
 * the kind VS Code lets an extension update in place and take away (a message's buttons cannot be withdrawn,
 * and five writes made three of them over the diff). Accept / reject stay in each diff's title bar.
 */
class GroupNotice {
  private latest: string | undefined;
  private report: ((message: string) => void) | undefined;
  private end: (() => void) | undefined;
  private starting = false;

  update(message: string | undefined): void {
    this.latest = message;
    if (this.report) {
      if (message === undefined) this.finish();
      else this.report(message);
      return;
    }
    if (message === undefined || this.starting) return;
    this.starting = true;
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'oh', cancellable: false },
      (progress) =>
        new Promise<void>((resolve) => {
          this.starting = false;
          this.report = (m) => progress.report({ message: m });
          this.end = resolve;
          if (this.latest === undefined) this.finish();
          else this.report(this.latest);
        }),
    );
  }

  private finish(): void {
    const end = this.end;
    this.report = this.end = undefined;
    end?.();
  }

  dispose(): void {
    this.finish();
  }
}

export class ReviewController implements vscode.Disposable {
  readonly store: ProposalStore<Item>;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  /** "oh: N to review" while proposals wait: the way back to a diff the user closed. */
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 99);
  private readonly notice = new GroupNotice();
  private readonly painter: HunkPainter;

  constructor(
    private readonly history: EditHistory,
    private readonly log: (line: string) => void,
  ) {
    this.store = new ProposalStore<Item>(() => this.refresh());
    const store = this.store;
    this.painter = new HunkPainter(SCHEME, (uri) => {
      const p = store.get(idOf(uri) ?? -1);
      return p?.item.hunks && /side=after/.test(uri.query) ? p.item.hunks : undefined;
    });
    this.status.command = 'oh.review.open';
    this.status.tooltip = 'oh: proposals from the agent wait for your review (click to open one)';
    this.disposables.push(
      this.status,
      this.notice,
      this.painter,
      this.changed,
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, {
        onDidChange: this.changed.event,
        provideTextDocumentContent(uri: vscode.Uri): string {
          const p = store.get(idOf(uri) ?? -1);
          if (!p) return '';
          if (/side=before/.test(uri.query)) return p.item.change.before ?? '';
          const h = p.item.hunks;
          return h ? shownText(h.split, h.states).text : p.item.change.after;
        },
      }),
      vscode.commands.registerCommand('oh.review.accept', async (uri?: vscode.Uri) => {
        const id = await this.pick(uri, 'Accept which proposal?');
        if (id !== undefined) await this.accept([id]);
      }),
      vscode.commands.registerCommand('oh.review.reject', async (uri?: vscode.Uri) => {
        const id = await this.pick(uri, 'Reject which proposal?');
        if (id !== undefined) await this.reject(id);
      }),
      vscode.commands.registerCommand('oh.review.keepHunk', (uri?: vscode.Uri) => this.decideHunk(uri, 'kept')),
      vscode.commands.registerCommand('oh.review.undoHunk', (uri?: vscode.Uri) => this.decideHunk(uri, 'undone')),
      vscode.commands.registerCommand('oh.review.acceptAll', () => this.accept(this.store.list().map((p) => p.id))),
      vscode.commands.registerCommand('oh.review.open', async () => {
        const id = await this.pick(undefined, 'Open which proposal?', true);
        if (id !== undefined) await this.openDiff(id);
      }),
    );
  }

  private refresh(): void {
    const n = this.store.size;
    this.notice.update(reviewSummary(this.store.list().map((p) => ({ agent: p.item.agent, ...described(p.item) }))));
    void vscode.commands.executeCommand('setContext', 'oh.pendingProposals', n);
    // The Keep / Undo hunk buttons show on the diffs that can be reviewed hunk by hunk (`resourcePath in ...`).
    const hunkPaths = this.store
      .list()
      .flatMap((p) => (p.item.hunks ? [proposalUri(p.id, 'after', p.item.target.rp.shown).path] : []));
    void vscode.commands.executeCommand('setContext', 'oh.hunkProposalPaths', hunkPaths);
    if (n) {
      this.status.text = `$(git-pull-request) oh: ${n} to review`;
      this.status.show();
    } else {
      this.status.hide();
    }
  }

  /** Runs `execute` directly, or, when the backend is in review mode and the action changes a file, as a proposal. */
  route(action: Action, signal: AbortSignal, ctx: ActionContext | undefined, execute: Executor): Promise<Observation> {
    if (ctx?.review && isProposal(action.kind, action.args))
      return this.propose(action, signal, ctx, ctx.review.timeoutSeconds);
    return execute(action, signal, ctx);
  }

  private async propose(
    action: Action,
    signal: AbortSignal,
    ctx: ActionContext,
    timeoutSeconds: number,
  ): Promise<Observation> {
    const a = action.args;
    const target = await resolveTarget(String(a.path), action, ctx);
    const shown = target.rp.shown;
    const before = await this.currentOrNull(target);
    const computed = computeProposal(action.kind, a, shown, target.rp.real, before, (p) => this.history.peek(p));
    if (!computed.change) {
      // Nothing would change (e.g. write mode create on an existing file): answered at once.
      if (action.kind === 'write') return { ...writeObservation(action.id, String(a.path)), content: computed.content };
      return editObservation(action.id, String(a.path), {
        content: computed.content,
        prevExist: before !== null,
        oldContent: before,
        newContent: before,
        diff: '',
      });
    }
    const agent = (action.agent as { name?: string } | undefined)?.name ?? 'the agent';
    const item: Item = { action, agent, target, change: computed.change };
    if (computed.change.before !== null && computed.change.command !== 'undo_edit') {
      const split = splitHunks(computed.change.before, computed.change.after);
      item.hunks = { split, states: split.hunks.map(() => 'pending') };
    }
    const { id, decision } = this.store.add(item, timeoutSeconds * 1000, signal);
    const event = (name: string, extra: Record<string, unknown> = {}) =>
      ctx.sendFrame?.({
        type: 'proposal_event',
        event: name,
        proposal: { cause: action.id, path: shown, kind: action.kind, ...extra },
      });
    event('proposal_opened');
    this.log(`proposal ${id}: ${action.kind} ${computed.change.command} ${shown} by ${agent} awaits review`);
    void this.show(id).catch((e) => this.log(`proposal ${id}: could not show it: ${String(e)}`));
    const d = await decision;
    this.log(`proposal ${id}: ${d.kind}`);
    event('proposal_closed', { decision: d.kind });
    void this.closeTabs(id);
    return this.answer(item, d, timeoutSeconds);
  }

  private answer(item: Item, d: Decision, timeoutSeconds: number): Observation {
    const { action, target, change } = item;
    const shown = target.rp.shown;
    switch (d.kind) {
      case 'accepted': {
        // Applied to a buffer with the user's unsaved edits: not saved (§4.1), and the agent is told.
        const partial =
          d.kept && d.total && item.hunks
            ? { kept: d.kept, total: d.total, written: keptText(item.hunks.split, item.hunks.states) }
            : undefined;
        return acceptedObservation(action, shown, change, d.unsaved ? unsavedNote(shown) : '', partial);
      }
      case 'rejected':
        return errorObservation(action.id, 'REJECTED', rejectedMessage(shown, d.reason));
      case 'stale':
        return errorObservation(action.id, 'REJECTED', staleMessage(shown));
      case 'failed':
        return errorObservation(
          action.id,
          'TOOL_ERROR',
          `The user accepted the change to ${shown}, but VS Code could not apply it: ${d.message}`,
        );
      case 'timeout':
        return errorObservation(action.id, 'TIMEOUT', timeoutMessage(shown, timeoutSeconds));
      default:
        return errorObservation(
          action.id,
          'INTERRUPTED',
          `The review of the change to ${shown} was cancelled; nothing was written.`,
        );
    }
  }

  /** The text a proposal is computed on: the open document's (unsaved edits included), else the disk's; null = no file. */
  private async currentOrNull(t: Target): Promise<string | null> {
    if (
      !(await statOrNull(t.uri).catch(() => null)) &&
      !vscode.workspace.textDocuments.some((d) => d.uri.toString() === t.uri.toString())
    )
      return null;
    const c = await currentContent(t, 'edit');
    if (!c.fromDocument && c.encoding !== 'utf-8') {
      throw new ToolError(
        `Review mode in VS Code shows text changes as a diff, and ${t.rp.shown} is not UTF-8 (${c.encoding}): it cannot be reviewed here. ` +
          'Use the local runtime (`oh review`) for it.',
        'TOOL_UNSUPPORTED',
      );
    }
    return c.text;
  }

  /** The diff editor of proposal `id`: the file as it is vs the proposed text (read-only). */
  private async openDiff(id: number): Promise<void> {
    const p = this.store.get(id);
    if (!p) return;
    const { target, change, agent } = p.item;
    const shown = target.rp.shown;
    const name = shown.split('/').pop() || shown;
    const left = change.before === null ? proposalUri(id, 'before', shown) : target.uri;
    const title = plainForUi(`${name} ↔ oh proposal ${id} (${described(p.item).word} by ${agent})`);
    await vscode.commands.executeCommand('vscode.diff', left, proposalUri(id, 'after', shown), title, {
      preview: false,
    });
  }

  /** A new proposal: its diff opens; the grouped notification (refresh) says how many wait. */
  private async show(id: number): Promise<void> {
    await this.openDiff(id);
  }

  /** The proposal a title-bar button or palette command means: its diff's, the active one's, the only one, or asked. */
  private async pick(uri: vscode.Uri | undefined, question: string, always = false): Promise<number | undefined> {
    const id = always ? undefined : (idOf(uri) ?? idOf(vscode.window.activeTextEditor?.document.uri));
    if (id !== undefined) return id;
    const all = this.store.list();
    if (all.length <= 1) {
      if (!all.length) void vscode.window.showInformationMessage('oh: no proposal is waiting for review.');
      return all[0]?.id;
    }
    const chosen = await vscode.window.showQuickPick(
      all.map((p) => ({
        label: `proposal ${p.id}`,
        description: plainForUi(`${described(p.item).word} ${described(p.item).path}`),
        id: p.id,
      })),
      { title: question },
    );
    return chosen?.id;
  }

  /**
   * Rejects what is still pending of proposal `id`. With hunks already kept, the kept ones are written (a partial
   * accept); otherwise the whole proposal is rejected with the reason asked for. False when the user pressed Escape.
   */
  async reject(id: number): Promise<boolean> {
    const p = this.store.get(id);
    if (!p) return false;
    const h = p.item.hunks;
    if (h?.states.includes('kept')) {
      h.states = h.states.map((s) => (s === 'pending' ? 'undone' : s));
      await this.accept([id]);
      return true;
    }
    const reason = await vscode.window.showInputBox({
      title: `Reject oh proposal ${id}`,
      prompt: 'Why? The agent gets this reason (optional). Escape keeps the proposal pending.',
      ignoreFocusOut: true,
    });
    if (reason === undefined) return false;
    this.store.decide(id, { kind: 'rejected', reason: cleanReason(reason) });
    return true;
  }

  /**
   * Keep / Undo of one hunk of the active proposal's diff: the hunk under the cursor (else the next pending one).
   * The diff re-renders (an undone hunk leaves the proposed side) and the cursor goes to the next pending hunk;
   * once every hunk is decided the proposal is answered: all kept = accepted, none = rejected, some = partly written.
   */
  private async decideHunk(uri: vscode.Uri | undefined, verdict: 'kept' | 'undone'): Promise<void> {
    const id = await this.pick(
      uri,
      verdict === 'kept' ? 'Keep a hunk of which proposal?' : 'Undo a hunk of which proposal?',
    );
    const p = id === undefined ? undefined : this.store.get(id);
    if (id === undefined || !p) return;
    const h = p.item.hunks;
    if (!h) {
      void vscode.window.showInformationMessage(
        'oh: a new file (or an undo) is one decision: use Accept or Reject for the whole file.',
      );
      return;
    }
    const after = proposalUri(id, 'after', p.item.target.rp.shown);
    // A decision made before the cursor reached the next hunk (the diff was still re-rendering) means that hunk.
    const n =
      this.painter.pendingFocus(after) ??
      hunkAt(shownText(h.split, h.states).spans, h.states, this.painter.cursorLine(after) ?? 0);
    if (n === undefined) return;
    const previous = h.states;
    h.states = h.states.map((s, i) => (i === n - 1 ? verdict : s));
    if (h.states.includes('pending')) {
      this.redraw(id, nextPending(h.states, n));
      return;
    }
    if (h.states.includes('kept')) {
      await this.accept([id]);
      return;
    }
    if (!(await this.reject(id))) h.states = previous; // Escape at the reason: the last hunk is pending again
  }

  /** The proposed side of proposal `id` shows its hunks' new states; the cursor goes to hunk `focus`. */
  private redraw(id: number, focus: number | undefined): void {
    const p = this.store.get(id);
    if (!p) return;
    const uri = proposalUri(id, 'after', p.item.target.rp.shown);
    this.painter.focusOn(uri, focus);
    this.changed.fire(uri);
    this.painter.paintAll();
  }

  /** Applies the given proposals as ONE WorkspaceEdit (one Undo reverts them together). */
  async accept(ids: number[]): Promise<void> {
    const edit = new vscode.WorkspaceEdit();
    const ready: { id: number; item: Item; wasDirty: boolean }[] = [];
    const files = new Set<string>();
    for (const id of ids) {
      const p = this.store.get(id);
      if (!p) continue;
      const { target, change, hunks } = p.item;
      const key = target.uri.toString();
      let now: string | null | undefined;
      try {
        now = await this.currentOrNull(target);
      } catch {
        now = undefined;
      }
      // Changed since the proposal, or changed by an earlier proposal of this same batch: not applied.
      if (now !== change.before || files.has(key)) {
        this.store.decide(id, { kind: 'stale' });
        const where = workspaceRelative(target.rp.shown, target.rp.segments);
        void vscode.window.showWarningMessage(
          plainForUi(`oh: ${where} changed after proposal ${id} was made; it was not applied (the agent was told).`),
        );
        continue;
      }
      files.add(key);
      let wasDirty = false;
      if (change.before === null) {
        await createParents(target.uri, target.rp.shown).catch(() => {});
        edit.createFile(target.uri, { overwrite: false, ignoreIfExists: false });
        if (change.after) edit.insert(target.uri, new vscode.Position(0, 0), change.after);
      } else {
        const doc = await vscode.workspace.openTextDocument(target.uri);
        wasDirty = doc.isDirty;
        // Whole-file Accept keeps what is still pending; hunks undone before stay out.
        if (hunks) hunks.states = hunks.states.map((s) => (s === 'pending' ? 'kept' : s));
        const r = minimalReplacement(change.before, hunks ? keptText(hunks.split, hunks.states) : change.after);
        edit.replace(target.uri, new vscode.Range(doc.positionAt(r.start), doc.positionAt(r.end)), r.text);
      }
      ready.push({ id, item: p.item, wasDirty });
    }
    if (!ready.length) return;
    let ok = false;
    let why = 'VS Code refused the edit (is a file read-only?)';
    try {
      ok = await vscode.workspace.applyEdit(edit);
    } catch (e) {
      why = String((e as Error)?.message ?? e);
    }
    if (!ok) {
      for (const r of ready) this.store.decide(r.id, { kind: 'failed', message: why });
      void vscode.window.showErrorMessage(plainForUi(`oh: the accepted change could not be applied: ${why}`));
      return;
    }
    let first: vscode.TextDocument | undefined;
    for (const r of ready) {
      const { target, change } = r.item;
      const doc = await vscode.workspace.openTextDocument(target.uri);
      first ??= doc;
      // A document with the user's unsaved edits stays unsaved (saving would write their text too).
      if (!r.wasDirty && doc.isDirty) await doc.save();
      if (change.command === 'undo_edit') this.history.pop(target.rp.real);
      else if (r.item.action.kind === 'edit' && change.before !== null)
        this.history.push(target.rp.real, change.before);
      const states = r.item.hunks?.states ?? [];
      const kept = states.flatMap((s, i) => (s === 'kept' ? [i + 1] : []));
      const partial = kept.length < states.length ? { kept, total: states.length } : {};
      this.store.decide(r.id, { kind: 'accepted', unsaved: r.wasDirty, ...partial });
    }
    // Show what was accepted: the user sees the result and can Undo it there.
    if (first) await vscode.window.showTextDocument(first, { preview: false }).then(undefined, () => undefined);
  }

  private async closeTabs(id: number): Promise<void> {
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => {
        const input = t.input;
        return input instanceof vscode.TabInputTextDiff && idOf(input.modified) === id;
      });
    if (tabs.length) await vscode.window.tabGroups.close(tabs).then(undefined, () => false);
  }

  dispose(): void {
    this.store.cancelAll();
    for (const d of this.disposables) d.dispose();
  }
}
