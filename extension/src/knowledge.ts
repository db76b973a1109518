/**
 * Editor knowledge actions (docs/protocol.md §3.6): `diagnostics`, `open`, `editors`, `symbols`,
 * `definition`, `references`. oh's own kinds, not OpenHands ones.
 *
 * Pure (no `vscode`, no import of ./protocol so protocol.ts can import this): argument validation
 * mirroring src/oh/protocol/knowledge.py, the settle rule for diagnostics, and the text the agent
 * reads. The VS Code side is ./executors/knowledge.ts. Positions on the wire are 1-based.
 */

export const KNOWLEDGE_KINDS = ['diagnostics', 'open', 'editors', 'symbols', 'definition', 'references'] as const;
export type KnowledgeKind = (typeof KNOWLEDGE_KINDS)[number];
export const SEVERITIES = ['error', 'warning', 'info', 'hint'] as const;
export type Severity = (typeof SEVERITIES)[number];
export const MAX_SYMBOL_LIMIT = 1000;
export const MAX_SETTLE_WAIT_S = 60;

type Args = Record<string, unknown>;

export function isKnowledgeKind(kind: string): kind is KnowledgeKind {
  return (KNOWLEDGE_KINDS as readonly string[]).includes(kind);
}

/**
 * What is wrong with a knowledge action's args (the message the agent reads), or undefined.
 * `isInt(value, key)` says whether args[key] was written as a JSON integer (see jsonnum.ts).
 */
export function knowledgeArgsProblem(
  kind: KnowledgeKind,
  a: Args,
  isInt: (v: unknown, key: string) => boolean,
): string | undefined {
  const path = (required: boolean): string | undefined => {
    if ((a.path === undefined || a.path === null) && !required) return undefined;
    if (typeof a.path !== 'string' || a.path === '') return 'args.path must be a non-empty string.';
    if (a.path.includes('\0')) return 'args.path must not contain NUL bytes.';
    return undefined;
  };
  const pos = (key: string, required: boolean): string | undefined => {
    const v = a[key];
    if ((v === undefined || v === null) && !required) return undefined;
    return isInt(v, key) && (v as number) >= 1
      ? undefined
      : `args.${key} must be an integer >= 1 (1-based)${required ? '' : ' or null'}.`;
  };
  const bool = (key: string): string | undefined =>
    a[key] === undefined || a[key] === null || typeof a[key] === 'boolean'
      ? undefined
      : `args.${key} must be a boolean.`;
  switch (kind) {
    case 'diagnostics': {
      const sev = a.severity;
      if (sev !== undefined && sev !== null && !(SEVERITIES as readonly unknown[]).includes(sev)) {
        return `args.severity must be one of ${SEVERITIES.join(', ')} (the least severe level to report).`;
      }
      const w = a.wait;
      if (
        w !== undefined &&
        w !== null &&
        !(typeof w === 'number' && Number.isFinite(w) && w >= 0 && w <= MAX_SETTLE_WAIT_S)
      ) {
        return `args.wait must be a number of seconds between 0 and ${MAX_SETTLE_WAIT_S} (how long to wait for language servers at most).`;
      }
      return path(false);
    }
    case 'open':
      if (a.end_line !== undefined && a.end_line !== null && (a.line === undefined || a.line === null))
        return 'args.end_line needs args.line.';
      return (
        path(true) ??
        pos('line', false) ??
        pos('column', false) ??
        pos('end_line', false) ??
        pos('end_column', false) ??
        bool('preserve_focus')
      );
    case 'editors':
      return undefined;
    case 'symbols': {
      if (typeof a.query !== 'string' || a.query.length > 500) {
        return 'args.query must be a string (up to 500 characters; "" lists what the language servers offer).';
      }
      const lim = a.limit;
      if (
        lim !== undefined &&
        lim !== null &&
        !(isInt(lim, 'limit') && (lim as number) >= 1 && (lim as number) <= MAX_SYMBOL_LIMIT)
      ) {
        return `args.limit must be an integer between 1 and ${MAX_SYMBOL_LIMIT}.`;
      }
      return undefined;
    }
    case 'definition':
    case 'references':
      return path(true) ?? pos('line', true) ?? pos('column', true) ?? bool('include_declaration');
  }
}

export function summarizeKnowledge(kind: KnowledgeKind, a: Args): string {
  if (kind === 'symbols') return `symbols ${String(a.query ?? '')}`;
  if (kind === 'editors') return 'editors';
  let where = typeof a.path === 'string' ? a.path : kind === 'diagnostics' ? 'workspace' : '';
  if (typeof a.line === 'number') where += `:${a.line}` + (typeof a.column === 'number' ? `:${a.column}` : '');
  return `${kind} ${where}`;
}

// ---------------------------------------------------------------------------------------------
// Settling: when are a file's diagnostics "after the agent's edit"?

export interface SettleInput {
  now: number;
  /** Last onDidChangeDiagnostics for the file (or any file, workspace-wide), ms. */
  lastChange: number | undefined;
  /** When the agent last changed (or we just opened) the file, ms; undefined = nothing to wait for. */
  since: number | undefined;
  /** Quiet period that counts as settled. */
  quietMs: number;
  /** How long a language server gets to report after `since` before "no report" means "unchanged". */
  expectMs: number;
}

/**
 * Settled = no diagnostics change for `quietMs`, and, after the agent's own change, either the
 * language server reported since then or it had `expectMs` to do so. (Servers such as TypeScript's
 * only publish when the list changes, so silence after an edit is a valid answer, not a hang.)
 */
export function isSettled(s: SettleInput): boolean {
  const last = s.lastChange ?? -Infinity;
  if (s.now - last < s.quietMs) return false;
  if (s.since !== undefined && last < s.since && s.now - s.since < s.expectMs) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Shapes and text

export interface DiagnosticEntry {
  path: string;
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  severity: Severity;
  message: string;
  source: string | null;
  code: string | number | null;
}

export interface LocationEntry {
  path: string;
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  /** The line's text (trimmed, cut at 200 characters); absent outside the allowed roots. */
  text?: string;
  /** The location is outside the workspace/allowed roots: its text is not read. */
  outside?: boolean;
}

export interface SymbolEntry {
  name: string;
  kind: string;
  container: string | null;
  path: string;
  line: number;
  column: number;
}

export function severityAtLeast(s: Severity, min: Severity): boolean {
  return SEVERITIES.indexOf(s) <= SEVERITIES.indexOf(min);
}

export function diagnosticLine(d: DiagnosticEntry): string {
  const tag = [d.source, d.code].filter((x) => x !== null && x !== '').join(' ');
  return `${d.path}:${d.line}:${d.column}: ${d.severity}: ${d.message.replace(/\s*\n\s*/g, ' ')}${tag ? ` (${tag})` : ''}`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function countBySeverity(list: DiagnosticEntry[]): Record<Severity, number> {
  const c: Record<Severity, number> = { error: 0, warning: 0, info: 0, hint: 0 };
  for (const d of list) c[d.severity]++;
  return c;
}

export const MAX_DIAGNOSTICS = 500;

export function diagnosticsText(
  list: DiagnosticEntry[],
  where: string,
  settled: boolean,
  min: Severity,
  waitedMs: number,
): string {
  const c = countBySeverity(list);
  const shown = list.slice(0, MAX_DIAGNOSTICS).map(diagnosticLine);
  const files = new Set(list.map((d) => d.path)).size;
  const levels = SEVERITIES.slice(0, SEVERITIES.indexOf(min) + 1);
  let summary = list.length
    ? `${levels.map((l) => plural(c[l], l === 'info' ? 'info' : l)).join(', ')} in ${plural(files, 'file')}.`
    : `No problems (${levels.join('/')}) in ${where}.`;
  if (list.length > MAX_DIAGNOSTICS) summary += ` Only the first ${MAX_DIAGNOSTICS} are listed.`;
  if (!settled) {
    summary += ` (The language servers were still reporting after ${(waitedMs / 1000).toFixed(1)} s; ask again, or pass a longer wait.)`;
  }
  return [...shown, summary].join('\n');
}

export function locationLine(l: LocationEntry): string {
  return (
    `${l.path}:${l.line}:${l.column}` +
    (l.text !== undefined ? `: ${l.text}` : l.outside ? ' (outside the workspace)' : '')
  );
}

export function symbolLine(s: SymbolEntry): string {
  return `${s.path}:${s.line}:${s.column}: ${s.kind} ${s.name}${s.container ? ` (in ${s.container})` : ''}`;
}

/** The observation of a knowledge action: kind = the action's, `content` the agent's text, `extras` the data. */
export function knowledgeObservation(
  kind: KnowledgeKind,
  cause: number | undefined,
  content: string,
  extras: Args,
  timestamp: string,
): Args {
  const o: Args = {
    timestamp,
    source: 'environment',
    message: content.split('\n', 1)[0].slice(0, 200),
    observation: kind,
    content,
    extras,
  };
  if (cause !== undefined) o.cause = cause;
  return o;
}
