/**
 * Consent in VS Code (issue 19, docs/protocol.md §3.13): the backend asks this window, on its editor leg
 * (`{"type": "approval_request", "approval": row}`), before an agent's action runs; the user answers in a
 * notification -- Allow once / Always allow <rule> / Reject (with a reason) -- and the answer goes back on
 * the same leg (`{"type": "approval", "op": "allow" | "reject", "id", "always"?, "reason"?}`). The editor
 * leg is authenticated with the editor token, which agents never get: that is what makes this answer the
 * user's. `{"type": "approval_closed"}` says someone else (the terminal, a timeout) decided first.
 *
 * No `vscode` import: the notification and the reason box are injected, so it is unit-tested.
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

export interface ConsentUi {
  /** A notification with buttons; resolves to the clicked one, undefined when dismissed. */
  ask(message: string, buttons: string[]): Promise<string | undefined>;
  /** The reason for a rejection; undefined = Escape (keep it waiting). */
  reason(title: string): Promise<string | undefined>;
  info(message: string): void;
  /** Opens text (a change's diff, or a whole command) in a read-only document beside the notification. */
  show?(text: string, language?: string): Promise<void>;
}

export const ALLOW_ONCE = 'Allow once';
export const REJECT = 'Reject…';
export const SHOW = 'Show change';
export const SHOW_COMMAND = 'Show whole command';
/** Longer than this (or on several lines), a command does not fit a notification: it is opened whole. */
export const FITS = 200;
const ID = /^c[0-9]{1,12}$/;

/** The row from a request frame, or undefined when it is malformed (never throws). */
export function parseApproval(obj: unknown): ApprovalRow | undefined {
  if (!obj || typeof obj !== 'object') return undefined;
  const o = obj as JsonObject;
  if (typeof o.id !== 'string' || !ID.test(o.id)) return undefined;
  const text = (v: unknown, max: number) => (typeof v === 'string' ? plainForUi(v).slice(0, max) : '');
  const always = Array.isArray(o.always) ? o.always.filter((r): r is string => typeof r === 'string').map((r) => plainForUi(r).slice(0, 100)) : [];
  const risk = typeof o.security_risk === 'string' && o.security_risk ? plainForUi(o.security_risk).slice(0, 10).toUpperCase() : undefined;
  // The detail is shown in a document, not in the notification: only NULs and bidi/format controls are dropped.
  const detail = typeof o.detail === 'string' && o.detail ? o.detail.replace(/[\u0000\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, '').slice(0, 8000) : undefined;
  // The whole command, never cut (the backend refuses commands over 64 KiB instead of asking about them).
  const command = typeof o.command === 'string' && o.command ? o.command.replace(/[\u0000\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, '') : undefined;
  return { id: o.id, agent: text(o.agent, 60) || 'agent', kind: text(o.kind, 20), what: text(o.what, 500), reason: text(o.reason, 300), securityRisk: risk, always, detail, command };
}

/** Whether the notification alone cannot show the whole command (then it is opened in a document). */
export function commandTooBig(row: ApprovalRow): boolean {
  return row.command !== undefined && (row.command.length > FITS || row.command.includes('\n'));
}

export function alwaysLabel(row: ApprovalRow): string | undefined {
  return row.always.length ? `Always allow ${row.always.join(', ')}` : undefined;
}

export function message(row: ApprovalRow): string {
  const verb = row.kind === 'run' ? 'run' : row.kind;
  const risk = row.securityRisk ? ` [security_risk ${row.securityRisk}]` : '';
  const what = commandTooBig(row) ? `${row.what.slice(0, FITS)}… (the whole command, ${row.command?.split('\n').length} line(s), is open beside this)` : row.what;
  return `oh: ${row.agent} wants to ${verb}: ${what}${risk}. ${row.reason ? `(${row.reason})` : ''}`.trim();
}

export class ConsentPrompter {
  private readonly open = new Map<string, ApprovalRow>();

  constructor(private readonly ui: ConsentUi, private readonly log: (line: string) => void = () => undefined) {}

  get pending(): number {
    return this.open.size;
  }

  /** A request arrived: show it; the answer goes back through `ctx.sendFrame`. */
  async request(raw: unknown, ctx: ActionContext): Promise<void> {
    const row = parseApproval(raw);
    if (!row) {
      this.log('ignored a malformed approval request');
      return;
    }
    this.open.set(row.id, row);
    const always = alwaysLabel(row);
    const whole = commandTooBig(row) && this.ui.show !== undefined;
    const buttons = [ALLOW_ONCE, ...(always ? [always] : []), REJECT, ...(row.detail && this.ui.show ? [SHOW] : []), ...(whole ? [SHOW_COMMAND] : [])];
    if (whole) await this.ui.show?.(row.command ?? '', 'shellscript'); // what is approved is what is seen
    let choice: string | undefined;
    for (;;) {
      choice = await this.ui.ask(message(row), buttons);
      if (!this.open.has(row.id)) {
        if (choice !== undefined) this.ui.info(`oh: ${row.id} was already decided (or timed out); nothing was sent.`);
        return;
      }
      if (choice === undefined) {
        // Dismissed: it keeps waiting (the terminal or `oh approve` can still answer); not answered here.
        this.log(`approval ${row.id} dismissed; it keeps waiting`);
        return;
      }
      if (choice === SHOW) {
        await this.ui.show?.(row.detail ?? '');
        continue; // the question again, next to the change
      }
      if (choice === SHOW_COMMAND) {
        await this.ui.show?.(row.command ?? '', 'shellscript');
        continue;
      }
      if (choice !== REJECT) break;
      const reason = await this.ui.reason(`Reject: ${row.what.slice(0, 80)}`);
      if (reason === undefined) continue; // Escape: ask again
      if (!this.open.has(row.id)) return;
      this.open.delete(row.id);
      ctx.sendFrame?.({ type: 'approval', op: 'reject', id: row.id, reason: reason.trim().slice(0, 2000) });
      return;
    }
    this.open.delete(row.id);
    ctx.sendFrame?.({ type: 'approval', op: 'allow', id: row.id, ...(choice === always ? { always: true } : {}) });
  }

  /** Decided elsewhere (the terminal, `oh approve`, a rule, the timeout): a late click sends nothing. */
  closed(id: unknown): void {
    if (typeof id === 'string') this.open.delete(id);
  }
}
