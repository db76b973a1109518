/**
 * Consent in VS Code (issue 19, docs/protocol.md §3.13): the backend asks this window, on its editor leg
 * (`{"type": "approval_request", "approval": row}`), before an agent's action runs; the user answers in a
 * question box -- Allow once / Always… / Reject… (with a reason) -- and the answer goes back on
 * the same leg (`{"type": "approval", "op": "allow" | "reject", "id", "always"?, "reason"?}`). The editor
 * leg is authenticated with the editor token, which agents never get: that is what makes this answer the
 * user's. `{"type": "approval_closed"}` says someone else (the terminal, a timeout) decided first: the
 * question's UI then goes away.
 *
 * Issue 42: the question stays until it is answered (a question box that focus changes do not hide, and a
 * status bar count that brings it back after Escape), with short fixed choices: Allow once / Always… (lists
 * the exact rules it saves, then asks) / Reject… / Show command (a read-only document).
 *
 * No `vscode` import: the question box, the documents and the status bar are injected (./consentUi.ts).
 */

import { ActionContext } from './connection';
import { JsonObject } from './protocol';
import { plainForUi } from './review/proposal';

export interface ApprovalRow {
  id: string;
  agent: string;
  kind: string;
  what: string;
  reason: string;
  securityRisk?: string;
  always: string[];
  /** A change's content or diff (asked outside review mode), shown on "Show change". */
  detail?: string;
  /** A run's whole command (issue 25: what the user approves is what they see), opened in a document
   * when the notification cannot show all of it. */
  command?: string;
}

/** One choice of a question: a short fixed label and what it does. */
export interface Choice {
  label: string;
  description: string;
}

/** What the question UI shows: a title (who wants what, the risk, why), the command or change, the choices. */
export interface Question {
  id: string;
  title: string;
  /** The command (or change) asked about, on one line; "Show command" opens it whole. */
  what: string;
  choices: Choice[];
}

export interface ConsentUi {
  /** Shows the question until it is answered; resolves to the chosen label, undefined when it was hidden
   * (Escape, another question box took its place, or `dismiss`). */
  ask(question: Question): Promise<string | undefined>;
  /** Takes a question's UI away (answered, or decided elsewhere): its box when shown, its documents. */
  dismiss?(id: string): void;
  /** "Always…": the exact rules it would save, each whole; true = save them and allow, else back to the question. */
  confirmAlways(id: string, rules: string[], title: string): Promise<boolean | undefined>;
  /** The reason for a rejection; undefined = Escape (keep it waiting). */
  reason(id: string, title: string): Promise<string | undefined>;
  info(message: string): void;
  /** Opens text (a change's diff, or a whole command) in a read-only document beside the question. */
  show?(id: string, text: string, language?: string): Promise<void>;
  /** How many questions wait (0 = none): the status bar item that brings the question back. */
  waiting?(count: number): void;
}

export const ALLOW_ONCE = 'Allow once';
export const ALWAYS = 'Always…';
export const REJECT = 'Reject…';
export const SHOW = 'Show change';
export const SHOW_COMMAND = 'Show command';
/** Longer than this (or on several lines), a command does not fit the question: it is opened whole. */
export const FITS = 200;
const ID = /^c[0-9]{1,12}$/;

/** The row from a request frame, or undefined when it is malformed (never throws). */
export function parseApproval(obj: unknown): ApprovalRow | undefined {
  if (!obj || typeof obj !== 'object') return undefined;
  const o = obj as JsonObject;
  if (typeof o.id !== 'string' || !ID.test(o.id)) return undefined;
  const text = (v: unknown, max: number) => (typeof v === 'string' ? plainForUi(v).slice(0, max) : '');
  const always = Array.isArray(o.always)
    ? o.always.filter((r): r is string => typeof r === 'string').map((r) => plainForUi(r).slice(0, 400))
    : [];
  const risk =
    typeof o.security_risk === 'string' && o.security_risk
      ? plainForUi(o.security_risk).slice(0, 10).toUpperCase()
      : undefined;
  // The detail is shown in a document, not in the notification: only NULs and bidi/format controls are dropped.
  const detail =
    typeof o.detail === 'string' && o.detail
      ? o.detail.replace(/[\u0000\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, '').slice(0, 8000)
      : undefined;
  // The whole command, never cut (the backend refuses commands over 64 KiB instead of asking about them).
  const command =
    typeof o.command === 'string' && o.command
      ? o.command.replace(/[\u0000\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, '')
      : undefined;
  return {
    id: o.id,
    agent: text(o.agent, 60) || 'agent',
    kind: text(o.kind, 20),
    what: text(o.what, 500),
    reason: text(o.reason, 300),
    securityRisk: risk,
    always,
    detail,
    command,
  };
}

/** Whether the notification alone cannot show the whole command (then it is opened in a document). */
export function commandTooBig(row: ApprovalRow): boolean {
  return row.command !== undefined && (row.command.length > FITS || row.command.includes('\n'));
}

/**
 * Rules as pick-list rows, each shown whole (a pick-list row is one line, cut with "…" when too wide): a rule
 * longer than `width` goes on in the row's detail line, then in continuation rows ("↳ …") of the same rule.
 */
export function ruleRows(rules: string[], width = 70): { label: string; detail?: string; rule: number }[] {
  const rows: { label: string; detail?: string; rule: number }[] = [];
  rules.forEach((r, rule) => {
    const parts: string[] = [];
    for (let i = 0; i < r.length; i += width) parts.push(r.slice(i, i + width));
    rows.push({ label: parts[0] ?? '', ...(parts[1] !== undefined ? { detail: parts[1] } : {}), rule });
    for (const more of parts.slice(2)) rows.push({ label: `↳ ${more}`, rule });
  });
  return rows;
}

/** The status bar's words while questions wait ("oh: 1 waits for you"); undefined when none does. */
export function waitingLabel(count: number): string | undefined {
  if (count <= 0) return undefined;
  return `oh: ${count} ${count === 1 ? 'waits' : 'wait'} for you`;
}

/** The question's title: who wants to do what, the agent's risk, and why it is asked. */
export function message(row: ApprovalRow): string {
  const verb = row.kind === 'run' ? 'run' : row.kind;
  const risk = row.securityRisk ? ` [security_risk ${row.securityRisk}]` : '';
  return `oh: ${row.agent} wants to ${verb}${risk}${row.reason ? ` (${row.reason})` : ''}`;
}

/**
 * A file change as the user reads it (issue 42): `edit str_replace /ws/src/a.py` -> `edit src/a.py`. Commands
 * are never rewritten: what is approved is what is seen.
 */
export function changeWhat(row: ApprovalRow, workspace?: string): string {
  if (row.kind === 'run' || row.command !== undefined) return row.what;
  let what = row.what.replace(/^edit (str_replace|insert|undo_edit|create) /, (_m, c: string) =>
    c === 'create' ? 'create ' : 'edit ',
  );
  if (workspace && workspace !== '/') {
    const base = workspace.endsWith('/') ? workspace : workspace + '/';
    const at = what.indexOf(' ' + base);
    if (at >= 0 && at === what.lastIndexOf(' ' + base)) what = what.slice(0, at + 1) + what.slice(at + 1 + base.length);
  }
  return what;
}

/** The question for a row: short fixed labels (issue 42), each with a description that says what it does. */
export function question(row: ApprovalRow, canShow: boolean, workspace?: string): Question {
  const n = row.always.length;
  const choices: Choice[] = [{ label: ALLOW_ONCE, description: 'this time only' }];
  if (n)
    choices.push({
      label: ALWAYS,
      description: `allow, and save ${n} rule${n > 1 ? 's' : ''} (listed next, before anything is saved)`,
    });
  choices.push({ label: REJECT, description: 'the agent gets your reason' });
  if (row.detail && canShow) choices.push({ label: SHOW, description: 'open the change, read-only' });
  if (row.command && canShow) choices.push({ label: SHOW_COMMAND, description: 'open the whole command, read-only' });
  const oneLine = (row.command ?? changeWhat(row, workspace)).replace(/\s*\n\s*/g, ' ⏎ ');
  const what = oneLine.length > FITS ? `${oneLine.slice(0, FITS)}… (the whole command is open beside this)` : oneLine;
  return { id: row.id, title: message(row), what, choices };
}

interface Open {
  row: ApprovalRow;
  ctx: ActionContext;
  /** Shown once and hidden by the user: it waits behind the status bar item instead of popping up again. */
  hidden: boolean;
}

/**
 * The questions of this window, one shown at a time (VS Code shows one question box at a time), the others
 * behind the status bar count. A question stays until it is answered here or decided elsewhere.
 */
export class ConsentPrompter {
  private readonly open = new Map<string, Open>();
  private current: string | undefined;

  constructor(
    private readonly ui: ConsentUi,
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  get pending(): number {
    return this.open.size;
  }

  /** A request arrived: show it (or queue it behind the shown one); the answer goes back through `ctx.sendFrame`. */
  async request(raw: unknown, ctx: ActionContext): Promise<void> {
    const row = parseApproval(raw);
    if (!row) {
      this.log('ignored a malformed approval request');
      return;
    }
    this.open.set(row.id, { row, ctx, hidden: false });
    this.ui.waiting?.(this.open.size);
    if (this.current === undefined) await this.present(row.id);
  }

  /** The status bar item: bring back the oldest waiting question (the shown one stays as it is). */
  async reopen(): Promise<void> {
    if (this.current !== undefined) return;
    const first = this.open.keys().next();
    if (!first.done) await this.present(first.value);
  }

  /** Decided elsewhere (the terminal, `oh approve`, a rule, the timeout): its UI goes away, a late click sends nothing. */
  closed(id: unknown): void {
    if (typeof id !== 'string' || !this.open.delete(id)) return;
    this.ui.waiting?.(this.open.size);
    this.ui.dismiss?.(id); // the question box (when shown) and its documents go away
  }

  private async present(id: string): Promise<void> {
    this.current = id;
    try {
      await this.converse(id);
    } finally {
      this.current = undefined;
    }
    const next = [...this.open.entries()].find(([, o]) => !o.hidden);
    if (next) await this.present(next[0]);
  }

  /** The question and its follow-ups (the rules, the reason, the whole command) until answered or hidden. */
  private async converse(id: string): Promise<void> {
    const entry = this.open.get(id);
    if (!entry) return;
    const { row } = entry;
    const canShow = this.ui.show !== undefined;
    if (commandTooBig(row) && canShow) await this.ui.show?.(row.id, row.command ?? '', 'shellscript'); // what is approved is what is seen
    for (;;) {
      const choice = await this.ui.ask(question(row, canShow, entry.ctx.workspace ?? undefined));
      if (!this.open.has(id)) {
        if (choice !== undefined) this.ui.info(`oh: ${row.id} was already decided (or timed out); nothing was sent.`);
        return;
      }
      if (choice === undefined) {
        // Hidden: it keeps waiting (the status bar item brings it back; the terminal or `oh approve` can answer).
        entry.hidden = true;
        this.log(`approval ${row.id} hidden; it keeps waiting (status bar: ${waitingLabel(this.open.size)})`);
        return;
      }
      if (choice === SHOW || choice === SHOW_COMMAND) {
        await this.ui.show?.(
          row.id,
          choice === SHOW ? (row.detail ?? '') : (row.command ?? ''),
          choice === SHOW ? 'diff' : 'shellscript',
        );
        continue; // the question again, next to the text
      }
      const answer = await this.followUp(row, choice);
      if (answer === undefined) continue; // Escape or Back: ask again
      if (!this.open.has(id)) return;
      this.open.delete(id);
      this.ui.waiting?.(this.open.size);
      this.ui.dismiss?.(id); // its documents go with it
      entry.ctx.sendFrame?.(answer);
      return;
    }
  }

  /** The frame a choice sends, after its follow-up question; undefined = back to the question. */
  private async followUp(row: ApprovalRow, choice: string): Promise<JsonObject | undefined> {
    if (choice === ALLOW_ONCE) return { type: 'approval', op: 'allow', id: row.id };
    if (choice === ALWAYS && row.always.length) {
      const save = await this.ui.confirmAlways(
        row.id,
        row.always,
        `Always allow (${row.agent}): these rules are saved, then it runs`,
      );
      return save ? { type: 'approval', op: 'allow', id: row.id, always: true } : undefined;
    }
    if (choice === REJECT) {
      const reason = await this.ui.reason(row.id, `Reject: ${row.what.slice(0, 80)}`);
      return reason === undefined
        ? undefined
        : { type: 'approval', op: 'reject', id: row.id, reason: reason.trim().slice(0, 2000) };
    }
    return undefined; // an unknown label: ask again
  }
}
