/**
 * "oh: Revert an Agent's Action…" (issue 29, docs/protocol.md §3.15.2), the pure part: the timeline's entries
 * as quick-pick items, the backend's edits checked before anything is applied, workspace-relative paths.
 * No `vscode` import (unit-tested); undoCommand.ts applies the edits as one WorkspaceEdit.
 */

import * as path from 'path';
import { JsonObject } from './protocol';

export interface HistoryEntry {
  id: number;
  agent: string;
  kind: string;
  what: string;
  files: number;
  status: string;
}

export type UndoEdit = { path: string; delete: true } | { path: string; content: Uint8Array; mode?: number };

const KINDS_TO_REVERT = new Set(['run', 'job', 'write', 'edit', 'ensure', 'undo', 'user']);

/** The list answer's entries that changed files, newest first (malformed rows are skipped). */
export function parseEntries(answer: JsonObject): HistoryEntry[] {
  const rows = Array.isArray(answer.entries) ? answer.entries : [];
  const out: HistoryEntry[] = [];
  for (const r of rows as JsonObject[]) {
    if (!r || typeof r !== 'object') continue;
    const id = r.id;
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 1) continue;
    const kind = String(r.kind ?? '');
    const files = typeof r.files === 'number' ? r.files : 0;
    if (!KINDS_TO_REVERT.has(kind) || files < 1) continue;
    out.push({
      id,
      agent: String(r.agent ?? '?'),
      kind,
      what: String(r.what ?? ''),
      files,
      status: String(r.status ?? ''),
    });
  }
  return out.sort((a, b) => b.id - a.id);
}

export function entryItem(e: HistoryEntry): { label: string; description: string; detail: string } {
  const what = e.what.replace(/\s+/g, ' ').trim();
  return {
    label: `#${e.id} ${e.agent}: ${e.kind}`,
    description: `${e.files} file${e.files === 1 ? '' : 's'}${e.status && e.status !== 'done' ? `, ${e.status}` : ''}`,
    detail: what.length > 200 ? `${what.slice(0, 199)}…` : what,
  };
}

/** `file` relative to `root` with '/' separators, or undefined when it is not inside `root`. */
export function relativeTo(root: string, file: string): string | undefined {
  const rel = path.relative(root, file);
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  return rel.split(path.sep).join('/');
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The undo answer's edits, every one checked (a relative path inside the workspace, base64 content): one bad
 * edit refuses them all, before anything is applied. */
export function parseEdits(answer: JsonObject): UndoEdit[] {
  const edits = Array.isArray(answer.edits) ? (answer.edits as JsonObject[]) : null;
  if (!edits) throw new Error('the backend sent no edits');
  return edits.map((e) => {
    const p = e && typeof e === 'object' ? e.path : undefined;
    if (typeof p !== 'string' || !p || p.startsWith('/') || p.split('/').some((part) => part === '..' || part === '')) {
      throw new Error(`the backend sent an edit with a bad path (${JSON.stringify(p).slice(0, 80)})`);
    }
    if (e.delete === true) return { path: p, delete: true as const };
    if (typeof e.content !== 'string' || e.content.length % 4 !== 0 || !BASE64.test(e.content)) {
      throw new Error(`the backend sent bad content for ${p}`);
    }
    const mode =
      typeof e.mode === 'number' && Number.isInteger(e.mode) && e.mode >= 0 && e.mode <= 0o7777 ? e.mode : undefined;
    return { path: p, content: new Uint8Array(Buffer.from(e.content, 'base64')), mode };
  });
}

/** The bytes as text when they are UTF-8 without NUL (what an editor can hold and save back byte for byte). */
export function asText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return Buffer.from(text, 'utf-8').equals(Buffer.from(bytes)) ? text : undefined;
  } catch {
    return undefined;
  }
}

/** What the user reads after a refused undo (a conflict names the file; nothing was changed). */
export function refusalText(answer: JsonObject): string {
  if (answer.type === 'error')
    return `oh: ${String(answer.message ?? answer.error_id ?? 'the backend refused the undo')}`;
  return `oh: ${String(answer.message ?? 'the undo was refused')}`;
}
