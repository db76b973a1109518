/**
 * `read`: the text the user sees. An open document's current text (unsaved edits included), else
 * the file through `workspace.fs` (UTF-8, else a single-byte or UTF-16 text, see ../textenc.ts);
 * `start`/`end` (0-based lines) or `view_range` (1-based, wins). `encoding: "base64"`: the raw bytes
 * on disk, base64, with `encoding` and `mime_type` in the extras (ranges ignored).
 */
import { ActionContext } from '../connection';
import { notFoundMessage, readRange } from '../oheditor';
import { Action, BINARY_BODY, Observation, readObservation, ToolError } from '../protocol';
import { guessMimeType } from '../textenc';
import { currentText, fsError, isDirectory, readBytes, resolveTarget, statOrNull } from './files';

/** 85 MiB once base64-encoded: fits the 128 MiB frame limit (same cap as the local runtime). */
export const MAX_BASE64_BYTES = 64 * 1024 * 1024;
/** A binary read is one frame of raw bytes (§3.7): the local runtime's limit. */
export const MAX_BINARY_BYTES = 120 * 1024 * 1024;

export async function executeRead(action: Action, _signal?: AbortSignal, ctx?: ActionContext): Promise<Observation> {
  const a = action.args;
  const target = await resolveTarget(String(a.path), action, ctx);
  if (a.encoding === 'base64' || a.encoding === 'binary') {
    const binary = a.encoding === 'binary';
    const max = binary ? MAX_BINARY_BYTES : MAX_BASE64_BYTES;
    let st;
    try {
      st = await statOrNull(target.uri);
    } catch (e) {
      throw fsError(e, target.rp.shown, 'read');
    }
    if (!st) throw new ToolError(notFoundMessage(target.rp.shown));
    if (isDirectory(st))
      throw new ToolError(
        `The path ${target.rp.shown} is a directory, not a file. Use the edit \`view\` command to list a directory.`,
      );
    if (st.size > max) {
      throw new ToolError(
        `The file ${target.rp.shown} is too large to read (${st.size.toLocaleString('en-US')} bytes; the limit is ${max.toLocaleString('en-US')}). ` +
          'Read a part of it with a shell command such as `head`, `tail` or `sed -n`.',
      );
    }
    const bytes = await readBytes(target, 'read');
    if (binary) {
      // No base64, no JSON escaping: the connection sends these bytes after the observation's header.
      const o = readObservation(action.id, String(a.path), '', {
        encoding: 'binary',
        mimeType: guessMimeType(target.rp.real),
      });
      delete o.content;
      (o as Record<symbol, unknown>)[BINARY_BODY] = bytes;
      return o;
    }
    return readObservation(action.id, String(a.path), Buffer.from(bytes).toString('base64'), {
      encoding: 'base64',
      mimeType: guessMimeType(target.rp.real),
    });
  }
  const text = await currentText(target, 'read');
  const content = readRange(
    text,
    typeof a.start === 'number' ? a.start : 0,
    typeof a.end === 'number' ? a.end : -1,
    Array.isArray(a.view_range) ? (a.view_range as number[]) : null,
  );
  return readObservation(action.id, String(a.path), content);
}
