/**
 * A small stand-in for the `vscode` module, so the executors (src/executors/*) run under `node --test`.
 *
 * Importing this file makes `require('vscode')` (in the compiled executors) resolve to this module.
 * It is not a simulation of VS Code: it keeps the parts the executors rely on honest and observable —
 * `workspace.fs` on the real disk (errors carry VS Code's FileSystemError codes), text documents with
 * unsaved text that only `save()` writes, WorkspaceEdits applied to documents (recorded, and refusable),
 * change events, and terminals whose Pseudoterminal is opened the way VS Code opens it. Tests reset it
 * with `resetMock(root)` and steer it through `mock`.
 */
import * as fs from 'node:fs';
import Module from 'node:module';
import * as path from 'node:path';

// --------------------------------------------------------------------------------------- module hook
type Resolve = (request: string, ...rest: unknown[]) => string;
const loader = Module as unknown as { _resolveFilename: Resolve };
const resolveFilename = loader._resolveFilename;
loader._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
  return request === 'vscode' ? __filename : resolveFilename.call(this, request, ...rest);
};

// --------------------------------------------------------------------------------------- basics
export class Disposable {
  constructor(private readonly fn: () => void = () => {}) {}
  dispose(): void {
    this.fn();
  }
}

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.add(listener);
    return new Disposable(() => this.listeners.delete(listener));
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  get size(): number {
    return this.listeners.size;
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  get path(): string {
    return this.fsPath;
  }
  static file(p: string): Uri {
    return new Uri('file', path.resolve(p));
  }
  static joinPath(base: Uri, ...segments: string[]): Uri {
    return new Uri(base.scheme, path.join(base.fsPath, ...segments));
  }
  toString(): string {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export class ThemeIcon {
  constructor(readonly id: string) {}
}

export enum FileType {
  Unknown = 0,
  File = 1,
  Directory = 2,
  SymbolicLink = 64,
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}

/** A file system error as VS Code's workspace.fs throws it: `code` names the kind. */
export class FileSystemError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const FS_CODES: Record<string, string> = {
  ENOENT: 'FileNotFound',
  EEXIST: 'FileExists',
  EISDIR: 'FileIsADirectory',
  ENOTDIR: 'FileNotADirectory',
  EACCES: 'NoPermissions',
  EPERM: 'NoPermissions',
};

async function vsfs<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new FileSystemError(FS_CODES[err.code ?? ''] ?? 'Unknown', err.message);
  }
}

// --------------------------------------------------------------------------------------- documents
export class TextDocument {
  isClosed = false;
  isDirty = false;
  saves = 0;

  constructor(
    readonly uri: Uri,
    private text: string,
  ) {}

  getText(range?: Range): string {
    if (!range) return this.text;
    return this.text.slice(this.offsetAt(range.start), this.offsetAt(range.end));
  }

  /** Knowledge executors: language id from the extension, line access as in VS Code. */
  get languageId(): string {
    const ext = path.extname(this.uri.fsPath);
    return ext === '.ts' ? 'typescript' : ext === '.py' ? 'python' : 'plaintext';
  }

  get lineCount(): number {
    return this.lineStarts().length;
  }

  lineAt(line: number): { text: string } {
    const starts = this.lineStarts();
    const end = line + 1 < starts.length ? starts[line + 1] : this.text.length;
    return { text: this.text.slice(starts[line], end).replace(/\r?\n$|\r$/, '') };
  }

  /** Line starts: \r\n, \n and \r end a line, as in VS Code's text model. */
  private lineStarts(): number[] {
    const starts = [0];
    for (const m of this.text.matchAll(/\r\n|\n|\r/g)) starts.push(m.index! + m[0].length);
    return starts;
  }

  positionAt(offset: number): Position {
    const starts = this.lineStarts();
    let line = 0;
    while (line + 1 < starts.length && starts[line + 1] <= offset) line++;
    return new Position(line, offset - starts[line]);
  }

  offsetAt(p: Position): number {
    return this.lineStarts()[p.line] + p.character;
  }

  /** What a keystroke or an edit does: the text changes, the file on disk does not. */
  change(start: number, end: number, text: string): void {
    this.text = this.text.slice(0, start) + text + this.text.slice(end);
    this.isDirty = true;
    mock.changes.fire({ document: this });
  }

  /** What VS Code does when the file changes on disk under a clean document. */
  reload(): void {
    this.text = fs.readFileSync(this.uri.fsPath, 'utf8');
    mock.changes.fire({ document: this });
  }

  async save(): Promise<boolean> {
    if (mock.failSave) return false;
    fs.writeFileSync(this.uri.fsPath, this.text);
    this.isDirty = false;
    this.saves++;
    return true;
  }
}

type EditOp =
  | { kind: 'replace'; uri: Uri; range: Range; text: string }
  | { kind: 'insert'; uri: Uri; position: Position; text: string }
  | { kind: 'createFile'; uri: Uri; overwrite: boolean };

export class WorkspaceEdit {
  readonly ops: EditOp[] = [];
  replace(uri: Uri, range: Range, text: string): void {
    this.ops.push({ kind: 'replace', uri, range, text });
  }
  insert(uri: Uri, position: Position, text: string): void {
    this.ops.push({ kind: 'insert', uri, position, text });
  }
  createFile(uri: Uri, options: { overwrite?: boolean } = {}): void {
    this.ops.push({ kind: 'createFile', uri, overwrite: !!options.overwrite });
  }
}

function findDocument(uri: Uri): TextDocument | undefined {
  return workspace.textDocuments.find((d) => !d.isClosed && d.uri.toString() === uri.toString());
}

async function openTextDocument(uri: Uri): Promise<TextDocument> {
  const open = findDocument(uri);
  if (open) return open;
  const text = await vsfs(() => fs.promises.readFile(uri.fsPath, 'utf8'));
  const doc = new TextDocument(uri, text);
  workspace.textDocuments.push(doc);
  return doc;
}

async function applyEdit(edit: WorkspaceEdit): Promise<boolean> {
  mock.appliedEdits.push(edit);
  if (mock.refuseEdits) return false;
  for (const op of edit.ops) {
    if (op.kind === 'createFile') {
      if (fs.existsSync(op.uri.fsPath) && !op.overwrite) return false;
      fs.writeFileSync(op.uri.fsPath, ''); // VS Code creates the file at once; inserted text stays unsaved
      continue;
    }
    const doc = await openTextDocument(op.uri);
    if (op.kind === 'insert') {
      const at = doc.offsetAt(op.position);
      doc.change(at, at, op.text);
    } else {
      doc.change(doc.offsetAt(op.range.start), doc.offsetAt(op.range.end), op.text);
    }
  }
  return true;
}

// --------------------------------------------------------------------------------------- workspace
export const workspace = {
  workspaceFolders: undefined as Array<{ uri: Uri; name: string; index: number }> | undefined,
  textDocuments: [] as TextDocument[],
  fs: {
    async stat(uri: Uri): Promise<{ type: FileType; size: number; ctime: number; mtime: number }> {
      const st = await vsfs(() => fs.promises.stat(uri.fsPath));
      const link = (await vsfs(() => fs.promises.lstat(uri.fsPath))).isSymbolicLink() ? FileType.SymbolicLink : 0;
      const type = (st.isDirectory() ? FileType.Directory : st.isFile() ? FileType.File : FileType.Unknown) | link;
      return { type, size: st.size, ctime: st.ctimeMs, mtime: st.mtimeMs };
    },
    readFile: (uri: Uri): Promise<Uint8Array> =>
      vsfs(async () => new Uint8Array(await fs.promises.readFile(uri.fsPath))),
    async writeFile(uri: Uri, bytes: Uint8Array): Promise<void> {
      await vsfs(() => fs.promises.writeFile(uri.fsPath, bytes));
      if (mock.reloadOnWrite) setImmediate(() => findDocument(uri)?.reload());
    },
    createDirectory: (uri: Uri): Promise<void> =>
      vsfs(async () => void (await fs.promises.mkdir(uri.fsPath, { recursive: true }))),
  },
  openTextDocument,
  applyEdit,
  onDidChangeTextDocument: (l: Listener<{ document: TextDocument }>) => mock.changes.event(l),
};

// --------------------------------------------------------------------------------------- window
export interface Pseudoterminal {
  onDidWrite: (l: Listener<string>) => Disposable;
  onDidClose?: (l: Listener<number | void>) => Disposable;
  open(dims: unknown): void;
  close(): void;
  handleInput?(data: string): void;
}

export class Terminal {
  /** What the terminal displayed (Pseudoterminal output). */
  screen = '';
  shellIntegration: unknown = undefined;
  exitStatus: { code: number | undefined } | undefined;
  processId = Promise.resolve(undefined as number | undefined);
  shown = 0;
  sent: Array<[string, boolean]> = [];

  constructor(readonly options: { name?: string; cwd?: string; pty?: Pseudoterminal }) {
    const pty = options.pty;
    if (pty) {
      pty.onDidWrite((s) => (this.screen += s));
      setImmediate(() => pty.open(undefined)); // VS Code opens it once the panel exists
    }
  }
  show(): void {
    this.shown++;
  }
  /** What the terminal's shell does with typed text (a fake shell integration sets it). */
  onSendText: ((text: string, addNewLine: boolean) => void) | undefined;
  sendText(text: string, addNewLine = true): void {
    this.sent.push([text, addNewLine]);
    this.onSendText?.(text, addNewLine);
  }
  dispose(): void {
    this.options.pty?.close();
    mock.closedTerminals.fire(this);
  }
}

export const window = {
  createTerminal(options: { name?: string; cwd?: string; pty?: Pseudoterminal }): Terminal {
    const t = new Terminal(options);
    mock.terminals.push(t);
    mock.onTerminal(t);
    return t;
  },
  onDidCloseTerminal: (l: Listener<Terminal>) => mock.closedTerminals.event(l),
  onDidChangeTerminalShellIntegration: (l: Listener<{ terminal: Terminal; shellIntegration: unknown }>) =>
    mock.shellIntegrationChanged.event(l),
  onDidEndTerminalShellExecution: (l: Listener<{ execution: unknown; exitCode: number | undefined }>) =>
    mock.executionEnded.event(l),
  onDidStartTerminalShellExecution: (l: Listener<{ terminal: Terminal; execution: unknown }>) =>
    mock.executionStarted.event(l),
  async showWarningMessage(message: string, _options: unknown, ...items: string[]): Promise<string | undefined> {
    mock.warnings.push(message);
    return mock.warningAnswer ?? items[0];
  },
};

// --------------------------------------------------------------------------------------- control
export const mock = {
  changes: new EventEmitter<{ document: TextDocument }>(),
  closedTerminals: new EventEmitter<Terminal>(),
  shellIntegrationChanged: new EventEmitter<{ terminal: Terminal; shellIntegration: unknown }>(),
  executionEnded: new EventEmitter<{ execution: unknown; exitCode: number | undefined }>(),
  executionStarted: new EventEmitter<{ terminal: Terminal; execution: unknown }>(),
  appliedEdits: [] as WorkspaceEdit[],
  terminals: [] as Terminal[],
  warnings: [] as string[],
  warningAnswer: undefined as string | undefined,
  refuseEdits: false,
  failSave: false,
  reloadOnWrite: true,
  onTerminal: (_t: Terminal): void => {},
};

/** A fresh window with `root` as its only folder. */
export function resetMock(root: string): void {
  workspace.workspaceFolders = [{ uri: Uri.file(root), name: path.basename(root), index: 0 }];
  workspace.textDocuments = [];
  mock.changes = new EventEmitter();
  mock.closedTerminals = new EventEmitter();
  mock.shellIntegrationChanged = new EventEmitter();
  mock.executionEnded = new EventEmitter();
  mock.executionStarted = new EventEmitter();
  mock.appliedEdits = [];
  mock.terminals = [];
  mock.warnings = [];
  mock.warningAnswer = undefined;
  mock.refuseEdits = false;
  mock.failSave = false;
  mock.reloadOnWrite = true;
  mock.onTerminal = () => {};
}

// --------------------------------------------------------------------------------------- knowledge (§3.6)
// Diagnostics, editors/tabs, showTextDocument and the execute*Provider commands, steered by tests.
export enum DiagnosticSeverity {
  Error = 0,
  Warning = 1,
  Information = 2,
  Hint = 3,
}

export enum SymbolKind {
  File = 0,
  Module = 1,
  Namespace = 2,
  Package = 3,
  Class = 4,
  Method = 5,
  Property = 6,
  Field = 7,
  Constructor = 8,
  Enum = 9,
  Interface = 10,
  Function = 11,
  Variable = 12,
}

export enum TextEditorRevealType {
  Default = 0,
  InCenter = 1,
  InCenterIfOutsideViewport = 2,
  AtTop = 3,
}

export class Selection extends Range {}

export class Location {
  constructor(
    readonly uri: Uri,
    readonly range: Range,
  ) {}
}

export class TabInputText {
  constructor(readonly uri: Uri) {}
}

export class Diagnostic {
  source?: string;
  code?: string | number | { value: string | number; target: Uri };
  constructor(
    readonly range: Range,
    readonly message: string,
    readonly severity: DiagnosticSeverity = DiagnosticSeverity.Error,
  ) {}
}

export class TextEditor {
  revealed: Range[] = [];
  constructor(
    readonly document: TextDocument,
    public selection: Selection,
  ) {}
  revealRange(range: Range): void {
    this.revealed.push(range);
  }
}

export const knowledgeMock = {
  diagnostics: new Map<string, { uri: Uri; list: Diagnostic[] }>(),
  diagnosticsChanged: new EventEmitter<{ uris: Uri[] }>(),
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  tabs: [] as Array<{ input: unknown; isDirty: boolean; isActive: boolean }>,
  shown: [] as Array<{ uri: Uri; options: unknown }>,
  opened: [] as Array<{ uri: Uri; options: unknown }>,
  /** What a language server does: set a file's diagnostics and fire the change event. */
  setDiagnostics(uri: Uri, list: Diagnostic[]): void {
    this.diagnostics.set(uri.toString(), { uri, list });
    this.diagnosticsChanged.fire({ uris: [uri] });
  },
  reset(): void {
    this.diagnostics = new Map();
    this.diagnosticsChanged = new EventEmitter();
    this.commands = new Map();
    this.commands.set('vscode.open', (uri: unknown, options: unknown) => {
      // a background tab: listed in tabGroups, not active, not a visible editor
      this.opened.push({ uri: uri as Uri, options });
      this.tabs.push({ input: new TabInputText(uri as Uri), isDirty: false, isActive: false });
    });
    this.opened = [];
    this.tabs = [];
    this.shown = [];
    windowExtras.visibleTextEditors = [];
    windowExtras.activeTextEditor = undefined;
  },
};

export const languages = {
  onDidChangeDiagnostics: (l: Listener<{ uris: Uri[] }>) => knowledgeMock.diagnosticsChanged.event(l),
  getDiagnostics(uri?: Uri): unknown {
    if (uri) return knowledgeMock.diagnostics.get(uri.toString())?.list ?? [];
    return [...knowledgeMock.diagnostics.values()].map((e) => [e.uri, e.list]);
  },
};

export const commands = {
  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    const fn = knowledgeMock.commands.get(command);
    if (!fn) throw new Error(`command '${command}' not found`);
    return fn(...args);
  },
};

const windowExtras = {
  visibleTextEditors: [] as TextEditor[],
  activeTextEditor: undefined as TextEditor | undefined,
  tabGroups: {
    get all() {
      return [{ isActive: true, tabs: knowledgeMock.tabs }];
    },
  },
  async showTextDocument(doc: TextDocument, options: { selection?: Range } = {}): Promise<TextEditor> {
    knowledgeMock.shown.push({ uri: doc.uri, options });
    const sel = options.selection ?? new Range(new Position(0, 0), new Position(0, 0));
    const ed = new TextEditor(doc, new Selection(sel.start, sel.end));
    windowExtras.visibleTextEditors = [ed, ...windowExtras.visibleTextEditors.filter((e) => e.document !== doc)];
    windowExtras.activeTextEditor = ed;
    return ed;
  },
};
Object.assign(window, windowExtras);
Object.defineProperty(window, 'visibleTextEditors', { get: () => windowExtras.visibleTextEditors });
Object.defineProperty(window, 'activeTextEditor', { get: () => windowExtras.activeTextEditor });
