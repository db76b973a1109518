/**
 * Editor knowledge through VS Code's own services (docs/protocol.md §3.6): language-server
 * diagnostics that have settled after the agent's edit, showing a file, the open editors, and the
 * execute*Provider commands (workspace symbols, definition, references).
 *
 * Paths go through `resolveTarget` (PATH_DENIED outside the folders, as for read/write/edit).
 * Results that point outside them (a definition in a library) keep their path and position but not
 * their text: the agent learns where, without oh reading files it may not read.
 */
import * as vscode from 'vscode';
import {
  DiagnosticEntry,
  diagnosticsText,
  isSettled,
  knowledgeObservation,
  KnowledgeKind,
  LocationEntry,
  locationLine,
  Severity,
  severityAtLeast,
  SymbolEntry,
  symbolLine,
} from '../knowledge';
import { Action, JsonObject, nowIso, Observation, ToolError } from '../protocol';
import { isDirectory, resolveTarget, statOrNull, Target, workspaceRoots } from './files';

const QUIET_MS = 500; // no diagnostics change for this long = settled
const EXPECT_MS = 2500; // after the agent's edit: time a language server gets to publish a change
const EXPECT_OPEN_MS = 4000; // a document we had to open: the server may still be starting
const DEFAULT_WAIT_S = 10;
const TOUCH_FRESH_MS = 30_000; // older agent edits are no longer "just made"
const POLL_MS = 50;
const MAX_LOCATIONS = 500;
const MAX_SELECTION_CHARS = 2000;

const SEVERITY_NAMES: Severity[] = ['error', 'warning', 'info', 'hint']; // vscode.DiagnosticSeverity 0..3

function obs(kind: KnowledgeKind, action: Action, content: string, extras: JsonObject): Observation {
  return knowledgeObservation(kind, action.id, content, extras, nowIso()) as Observation;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

function inside(p: string, root: string): boolean {
  return p === root || p.startsWith(root.endsWith('/') ? root : root + '/');
}

export class KnowledgeExecutor implements vscode.Disposable {
  private readonly lastChange = new Map<string, number>();
  private lastAnyChange: number | undefined;
  /** uri -> when the agent last changed it (edit/write through oh), or we opened it to analyse. */
  private readonly touched = new Map<string, number>();
  private readonly sub: vscode.Disposable;

  constructor(private readonly now: () => number = Date.now) {
    this.sub = vscode.languages.onDidChangeDiagnostics((e) => {
      const t = this.now();
      this.lastAnyChange = t;
      for (const u of e.uris) this.lastChange.set(u.toString(), t);
    });
  }

  dispose(): void {
    this.sub.dispose();
  }

  /** The agent changed `path` (edit/write through oh): diagnostics asked for next wait for it. */
  async touch(path: string): Promise<void> {
    try {
      const { uri } = await resolveTarget(path);
      this.touched.set(uri.toString(), this.now());
    } catch {
      /* a path that does not resolve was not changed */
    }
  }

  /** After an edit/write: remember it, and with `args.diagnostics: true` append the file's diagnostics. */
  async afterChange(action: Action, o: Observation): Promise<Observation> {
    if (o.observation === 'error') return o;
    const path = String(action.args.path);
    if (!(action.kind === 'edit' && action.args.command === 'view')) await this.touch(path);
    if (action.args.diagnostics !== true) return o;
    const d = await this.diagnostics({ ...action, kind: 'diagnostics', args: { path } }, undefined);
    const extras = d.extras as JsonObject;
    o.extras = { ...(o.extras as JsonObject), diagnostics: extras.diagnostics };
    o.content = `${String(o.content ?? '')}${o.content ? '\n\n' : ''}Diagnostics after this change:\n${String(d.content)}`;
    return o;
  }

  // ------------------------------------------------------------------------------------ diagnostics
  async diagnostics(action: Action, signal: AbortSignal | undefined): Promise<Observation> {
    const a = action.args;
    const min = (typeof a.severity === 'string' ? a.severity : 'warning') as Severity;
    const waitMs = (typeof a.wait === 'number' ? a.wait : DEFAULT_WAIT_S) * 1000;
    const started = this.now();
    let uri: vscode.Uri | undefined;
    let shown: string | undefined;
    let since: number | undefined;
    let expectMs = EXPECT_MS;
    let justOpened = false;
    if (typeof a.path === 'string') {
      const target = await resolveTarget(a.path);
      uri = target.uri;
      shown = target.rp.shown;
      const key = uri.toString();
      const open = vscode.workspace.textDocuments.some((d) => !d.isClosed && d.uri.toString() === key);
      const doc = await openDoc(target); // language servers analyse open documents
      since = this.touched.get(key);
      if (since !== undefined && started - since > TOUCH_FRESH_MS) since = undefined;
      // Language servers such as TypeScript's only check files open in a tab: give it one, in the
      // background (the user's focus and active editor stay), then give the server time to report.
      const tabbed = inTab(key) || (doc.languageId !== 'plaintext' && (await openInBackground(uri)));
      if ((!open || tabbed === 'opened') && doc.languageId !== 'plaintext') {
        since = started;
        expectMs = EXPECT_OPEN_MS;
        justOpened = true;
      }
    } else {
      const recent = [...this.touched.values()].filter((t) => started - t <= TOUCH_FRESH_MS);
      since = recent.length ? Math.max(...recent) : undefined;
    }
    let settled = false;
    for (;;) {
      const now = this.now();
      const lastChange = uri ? this.lastChange.get(uri.toString()) : this.lastAnyChange;
      if (isSettled({ now, lastChange, since, quietMs: QUIET_MS, expectMs })) {
        settled = true;
        break;
      }
      if (now - started >= waitMs || signal?.aborted) break;
      await sleep(Math.min(POLL_MS, Math.max(1, waitMs - (now - started))), signal);
    }
    const { roots } = await workspaceRoots();
    const pairs: Array<[vscode.Uri, readonly vscode.Diagnostic[]]> = uri
      ? [[uri, vscode.languages.getDiagnostics(uri)]]
      : vscode.languages
          .getDiagnostics()
          .filter(
            ([u]) => u.scheme === 'file' && roots.some((r) => inside(u.fsPath, r.path) || inside(u.fsPath, r.real)),
          );
    const list: DiagnosticEntry[] = [];
    for (const [u, diags] of pairs) {
      const path = uri && shown ? shown : u.fsPath;
      for (const d of diags) {
        const severity = SEVERITY_NAMES[d.severity] ?? 'error';
        if (!severityAtLeast(severity, min)) continue;
        const code = typeof d.code === 'object' && d.code !== null ? d.code.value : d.code;
        list.push({
          path,
          line: d.range.start.line + 1,
          column: d.range.start.character + 1,
          end_line: d.range.end.line + 1,
          end_column: d.range.end.character + 1,
          severity,
          message: d.message,
          source: d.source ?? null,
          code: code ?? null,
        });
      }
    }
    list.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : x.line - y.line || x.column - y.column));
    const waited = this.now() - started;
    let text = diagnosticsText(list, shown ?? 'the workspace', settled, min, waited);
    const reported = uri !== undefined && (this.lastChange.get(uri.toString()) ?? -Infinity) >= started;
    if (justOpened && !reported && list.length === 0) {
      // Honest about the blind spot: a clean file and a language server still starting look the same.
      text += ` (No language server reported on this file in the ${(waited / 1000).toFixed(1)} s since oh opened it; one that is still starting may report later: ask again if this is the first question about this language.)`;
    }
    return obs('diagnostics', action, text, { path: shown ?? null, diagnostics: list, settled, severity: min });
  }

  // ------------------------------------------------------------------------------------ open
  async open(action: Action): Promise<Observation> {
    const a = action.args;
    const target = await resolveTarget(String(a.path));
    const doc = await openDoc(target);
    const clampLine = (n: number) => Math.min(Math.max(n, 1), Math.max(doc.lineCount, 1));
    const line = typeof a.line === 'number' ? clampLine(a.line) : undefined;
    const opts: vscode.TextDocumentShowOptions = { preview: false, preserveFocus: a.preserve_focus === true };
    let extras: JsonObject = {
      path: target.rp.shown,
      line: line ?? null,
      column: null,
      end_line: null,
      end_column: null,
    };
    if (line !== undefined) {
      const col = typeof a.column === 'number' ? a.column : 1;
      const endLine = typeof a.end_line === 'number' ? clampLine(a.end_line) : line;
      const endCol =
        typeof a.end_column === 'number'
          ? a.end_column
          : endLine === line
            ? col
            : doc.lineAt(endLine - 1).text.length + 1;
      const start = new vscode.Position(line - 1, Math.min(col - 1, doc.lineAt(line - 1).text.length));
      const end = new vscode.Position(endLine - 1, Math.min(endCol - 1, doc.lineAt(endLine - 1).text.length));
      opts.selection = new vscode.Range(start, end);
      extras = { ...extras, column: start.character + 1, end_line: end.line + 1, end_column: end.character + 1 };
    }
    const editor = await vscode.window.showTextDocument(doc, opts);
    if (opts.selection) editor.revealRange(opts.selection, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    const at = line !== undefined ? ` at line ${line}` : '';
    return obs('open', action, `Showing ${target.rp.shown}${at} to the user in VS Code.`, extras);
  }

  // ------------------------------------------------------------------------------------ editors
  async editors(action: Action): Promise<Observation> {
    const { roots } = await workspaceRoots();
    const allowed = (p: string) => roots.some((r) => inside(p, r.path) || inside(p, r.real));
    const visible = new Map<string, vscode.TextEditor>();
    for (const e of vscode.window.visibleTextEditors) visible.set(e.document.uri.toString(), e);
    const active = vscode.window.activeTextEditor;
    const seen = new Set<string>();
    const list: JsonObject[] = [];
    let others = 0;
    const add = (uri: vscode.Uri, dirty: boolean) => {
      const key = uri.toString();
      if (seen.has(key) || uri.scheme !== 'file') return;
      seen.add(key);
      if (!allowed(uri.fsPath)) {
        others++;
        return;
      }
      const ed = visible.get(key);
      const doc = ed?.document ?? vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
      let selection: JsonObject | null = null;
      if (ed) {
        const s = ed.selection;
        const text = ed.document.getText(new vscode.Range(s.start, s.end));
        selection = {
          line: s.start.line + 1,
          column: s.start.character + 1,
          end_line: s.end.line + 1,
          end_column: s.end.character + 1,
          text: text.length > MAX_SELECTION_CHARS ? text.slice(0, MAX_SELECTION_CHARS) : text,
          truncated: text.length > MAX_SELECTION_CHARS,
        };
      }
      list.push({
        path: uri.fsPath,
        language: doc?.languageId ?? null,
        dirty: doc?.isDirty ?? dirty,
        active: active?.document.uri.toString() === key,
        visible: !!ed,
        selection,
      });
    };
    if (active) add(active.document.uri, active.document.isDirty);
    for (const g of vscode.window.tabGroups?.all ?? []) {
      for (const tab of g.tabs) {
        if (tab.input instanceof vscode.TabInputText) add(tab.input.uri, tab.isDirty);
      }
    }
    for (const e of vscode.window.visibleTextEditors) add(e.document.uri, e.document.isDirty);
    const activePath = list.find((e) => e.active)?.path ?? null;
    const lines = list.map((e) => {
      const sel = e.selection as JsonObject | null;
      const flags = [
        e.active ? 'active' : '',
        e.dirty ? 'unsaved changes' : '',
        e.visible && !e.active ? 'visible' : '',
      ].filter(Boolean);
      const where = sel ? `:${sel.line}:${sel.column}` : '';
      const selected = sel && sel.text ? ` selection ${sel.line}:${sel.column}-${sel.end_line}:${sel.end_column}` : '';
      return `${e.path}${where}${flags.length ? ` [${flags.join(', ')}]` : ''}${selected}`;
    });
    if (!list.length) lines.push('No files of the workspace are open in the editor.');
    if (others) lines.push(`(${others} other editor${others === 1 ? '' : 's'} outside the workspace not listed.)`);
    const sel = list.find((e) => e.active)?.selection as JsonObject | null | undefined;
    if (sel && sel.text) lines.push('', `Selected text in ${String(activePath)}:`, String(sel.text));
    return obs('editors', action, lines.join('\n'), { active: activePath, editors: list, others });
  }

  // ------------------------------------------------------------------------------------ language features
  async symbols(action: Action): Promise<Observation> {
    const query = String(action.args.query);
    const limit = typeof action.args.limit === 'number' ? action.args.limit : 100;
    const found =
      (await vscode.commands.executeCommand<vscode.SymbolInformation[]>(
        'vscode.executeWorkspaceSymbolProvider',
        query,
      )) ?? [];
    const { roots } = await workspaceRoots();
    const list: SymbolEntry[] = [];
    for (const s of found) {
      const u = s.location.uri;
      if (u.scheme !== 'file' || !roots.some((r) => inside(u.fsPath, r.path) || inside(u.fsPath, r.real))) continue;
      list.push({
        name: s.name,
        kind: vscode.SymbolKind[s.kind]?.toLowerCase() ?? 'symbol',
        container: s.containerName || null,
        path: u.fsPath,
        line: s.location.range.start.line + 1,
        column: s.location.range.start.character + 1,
      });
      if (list.length >= limit) break;
    }
    const text = list.length
      ? list.map(symbolLine).join('\n')
      : `No symbols match ${JSON.stringify(query)}. Language servers index a project once one of its files is open: \`open\` a file of it (or ask \`diagnostics\` for one) and retry.`;
    return obs('symbols', action, text, {
      query,
      symbols: list,
      truncated: list.length >= limit && found.length > list.length,
    });
  }

  async definition(action: Action): Promise<Observation> {
    return this.locations(action, 'vscode.executeDefinitionProvider');
  }

  async references(action: Action): Promise<Observation> {
    return this.locations(action, 'vscode.executeReferenceProvider');
  }

  private async locations(action: Action, command: string): Promise<Observation> {
    const a = action.args;
    const target = await resolveTarget(String(a.path));
    const shown = target.rp.shown;
    const doc = await openDoc(target);
    const line = Number(a.line);
    const column = Number(a.column);
    if (line > doc.lineCount) throw new ToolError(`Line ${line} is past the end of ${shown} (${doc.lineCount} lines).`);
    const pos = new vscode.Position(line - 1, Math.min(column - 1, doc.lineAt(line - 1).text.length));
    const raw =
      (await vscode.commands.executeCommand<Array<vscode.Location | vscode.LocationLink>>(command, target.uri, pos)) ??
      [];
    let list = raw.map(toLocation);
    if (action.kind === 'references' && a.include_declaration === false) {
      const defs = (
        (await vscode.commands.executeCommand<Array<vscode.Location | vscode.LocationLink>>(
          'vscode.executeDefinitionProvider',
          target.uri,
          pos,
        )) ?? []
      ).map(toLocation);
      list = list.filter((l) => !defs.some((d) => d.path === l.path && d.line === l.line && d.column === l.column));
    }
    const truncated = list.length > MAX_LOCATIONS;
    list = list.slice(0, MAX_LOCATIONS);
    await this.addText(list);
    const what = action.kind === 'definition' ? 'definition' : 'reference';
    const text = list.length
      ? list.map(locationLine).join('\n') + (truncated ? `\n(Only the first ${MAX_LOCATIONS} are listed.)` : '')
      : `No ${what} found for the symbol at ${shown}:${line}:${column} (is there a name at that position? Lines and columns are 1-based).`;
    return obs(action.kind as KnowledgeKind, action, text, { path: shown, line, column, locations: list, truncated });
  }

  /** Each location's line text, for files inside the folders only. */
  private async addText(list: LocationEntry[]): Promise<void> {
    const { roots } = await workspaceRoots();
    const docs = new Map<string, vscode.TextDocument | null>();
    for (const l of list) {
      if (!roots.some((r) => inside(l.path, r.path) || inside(l.path, r.real))) {
        l.outside = true;
        continue;
      }
      if (!docs.has(l.path)) {
        docs.set(
          l.path,
          await Promise.resolve(vscode.workspace.openTextDocument(vscode.Uri.file(l.path))).catch(() => null),
        );
      }
      const doc = docs.get(l.path);
      if (doc && l.line <= doc.lineCount)
        l.text = doc
          .lineAt(l.line - 1)
          .text.trim()
          .slice(0, 200);
    }
  }
}

/** The file as a TextDocument, or the file editor's own refusal (missing, a directory, not text). */
async function openDoc(target: Target): Promise<vscode.TextDocument> {
  const p = target.rp.shown;
  const st = await statOrNull(target.uri);
  if (st === null)
    throw new ToolError(`Invalid \`path\` parameter: ${p}. The path ${p} does not exist. Please provide a valid path.`);
  if (isDirectory(st)) throw new ToolError(`The path ${p} is a directory; give a file.`);
  try {
    return await vscode.workspace.openTextDocument(target.uri);
  } catch (e) {
    throw new ToolError(`Cannot open ${p} in the editor: ${(e as Error)?.message ?? String(e)}`);
  }
}

function inTab(key: string): boolean {
  return (vscode.window.tabGroups?.all ?? []).some((g) =>
    g.tabs.some((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === key),
  );
}

/** A background preview tab for `uri` ('opened'), or false when VS Code refused. */
async function openInBackground(uri: vscode.Uri): Promise<'opened' | false> {
  try {
    // `background` opens the tab without activating it (vscode.open's options, like TextDocumentShowOptions).
    await vscode.commands.executeCommand('vscode.open', uri, { preview: true, preserveFocus: true, background: true });
    return 'opened';
  } catch {
    return false;
  }
}

function toLocation(l: vscode.Location | vscode.LocationLink): LocationEntry {
  const uri = 'targetUri' in l ? l.targetUri : l.uri;
  const range = 'targetUri' in l ? (l.targetSelectionRange ?? l.targetRange) : l.range;
  return {
    path: uri.fsPath,
    line: range.start.line + 1,
    column: range.start.character + 1,
    end_line: range.end.line + 1,
    end_column: range.end.character + 1,
  };
}
