/**
 * The VS Code face of consent (./consent.ts decides what is asked and sent; this only shows it).
 *
 * - The question is a QuickPick with `ignoreFocusOut`: it stays over the editor until answered, while the user
 *   can still scroll the whole command beside it, and -- unlike a modal dialog, which no API can close -- it
 *   goes away when the question is decided elsewhere (the terminal, `oh approve`, the timeout).
 * - A status bar item (`oh: 1 waits for you`, warning colours) shows while any question waits, and brings the
 *   question back after Escape.
 * - "Show command" / "Show change" open a read-only virtual document (scheme `oh-consent`), never an Untitled
 *   one that asks to be saved; commands open in the `oh-command` language, which wraps long lines
 *   (package.json's configurationDefaults). The question's documents close with it.
 */
import * as vscode from 'vscode';
import { ConsentUi, Question, ruleRows, waitingLabel } from './consent';

export const CONSENT_SCHEME = 'oh-consent';
export const OPEN_COMMAND = 'oh.consent.open';

type Row = vscode.QuickPickItem & { value?: string };

export class ConsentView implements ConsentUi, vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('oh.consent', vscode.StatusBarAlignment.Left, 100);
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  private shown: { id: string; box: vscode.QuickPick<Row> | vscode.InputBox } | undefined;
  private readonly registration: vscode.Disposable;

  constructor() {
    this.item.name = 'oh: consent';
    this.item.command = OPEN_COMMAND;
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    const texts = this.texts;
    this.registration = vscode.workspace.registerTextDocumentContentProvider(CONSENT_SCHEME, {
      onDidChange: this.changed.event,
      provideTextDocumentContent: (uri) => texts.get(uri.toString()) ?? '(this question was decided; its text is gone)',
    });
  }

  ask(q: Question): Promise<string | undefined> {
    const rows: Row[] = q.choices.map((c) => ({ label: c.label, description: c.description, value: c.label }));
    return this.pick(q.id, q.title, q.what, rows);
  }

  async confirmAlways(id: string, rules: string[], title: string): Promise<boolean | undefined> {
    const n = rules.length;
    const rows: Row[] = [
      { label: `$(check) Save ${n === 1 ? 'this rule' : `these ${n} rules`} and allow`, value: 'save' },
      { label: '$(arrow-left) Back to the question', value: 'back' },
      { label: n === 1 ? 'the rule it saves' : 'the rules it saves', kind: vscode.QuickPickItemKind.Separator },
      ...ruleRows(rules).map((r) => ({ label: r.label, detail: r.detail })),
    ];
    const answer = await this.pick(
      id,
      title,
      'Each rule is shown whole; nothing is saved until you choose "Save"',
      rows,
    );
    return answer === undefined ? undefined : answer === 'save';
  }

  /** The reason box; like the question, it goes away when the question is decided elsewhere. */
  reason(id: string, title: string): Promise<string | undefined> {
    return new Promise((resolve) => {
      const box = vscode.window.createInputBox();
      box.title = title;
      box.prompt = 'Why? The agent gets this reason (optional). Escape goes back to the question.';
      box.ignoreFocusOut = true;
      let answer: string | undefined;
      box.onDidAccept(() => {
        answer = box.value;
        box.hide();
      });
      box.onDidHide(() => {
        if (this.shown?.box === box) this.shown = undefined;
        box.dispose();
        resolve(answer);
      });
      this.shown = { id, box };
      box.show();
    });
  }

  info(message: string): void {
    void vscode.window.showInformationMessage(message);
  }

  async show(id: string, text: string, language?: string): Promise<void> {
    const name = language === 'diff' ? 'change.diff' : 'whole command';
    const uri = vscode.Uri.from({ scheme: CONSENT_SCHEME, path: `/${id}/${name} (${id})` });
    this.texts.set(uri.toString(), text);
    this.changed.fire(uri);
    let doc = await vscode.workspace.openTextDocument(uri);
    if (language !== 'diff')
      doc = await vscode.languages.setTextDocumentLanguage(doc, 'oh-command').then(
        (d) => d,
        () => doc,
      );
    await vscode.window.showTextDocument(doc, {
      preview: true,
      preserveFocus: true,
      viewColumn: vscode.ViewColumn.Beside,
    });
  }

  waiting(count: number): void {
    const label = waitingLabel(count);
    if (!label) {
      this.item.hide();
      return;
    }
    this.item.text = `$(bell-dot) ${label}`;
    this.item.tooltip = `${label}: an agent waits for your consent before it acts. Click to answer.`;
    this.item.show();
  }

  dismiss(id: string): void {
    if (this.shown?.id === id) this.shown.box.hide();
    const mine = (uri: vscode.Uri) => uri.scheme === CONSENT_SCHEME && uri.path.startsWith(`/${id}/`);
    for (const key of [...this.texts.keys()]) if (mine(vscode.Uri.parse(key))) this.texts.delete(key);
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputText && mine(t.input.uri));
    if (tabs.length) void Promise.resolve(vscode.window.tabGroups.close(tabs)).catch(() => undefined);
  }

  /** A question box that focus changes do not hide: resolves to the chosen row's value, undefined when hidden. */
  private pick(id: string, title: string, placeholder: string, rows: Row[]): Promise<string | undefined> {
    return new Promise((resolve) => {
      const box = vscode.window.createQuickPick<Row>();
      box.title = title;
      box.placeholder = placeholder;
      box.ignoreFocusOut = true;
      box.items = rows;
      let answer: string | undefined;
      box.onDidAccept(() => {
        const chosen = box.selectedItems[0]?.value;
        if (chosen === undefined) return; // a rule row: read, not chosen
        answer = chosen;
        box.hide();
      });
      box.onDidHide(() => {
        if (this.shown?.box === box) this.shown = undefined;
        box.dispose();
        resolve(answer);
      });
      this.shown = { id, box };
      box.show();
    });
  }

  dispose(): void {
    this.shown?.box.hide();
    this.item.dispose();
    this.registration.dispose();
    this.changed.dispose();
  }
}
