/**
 * `read`: the text the user sees. An open document's current text (unsaved edits included), else
 * the file through `workspace.fs`; `start`/`end` (0-based lines) or `view_range` (1-based, wins).
 */
import { readRange } from '../oheditor';
import { Action, Observation, readObservation } from '../protocol';
import { currentText, resolveTarget } from './files';

export async function executeRead(action: Action): Promise<Observation> {
  const a = action.args;
  const target = await resolveTarget(String(a.path));
  const text = await currentText(target, 'read');
  const content = readRange(
    text,
    typeof a.start === 'number' ? a.start : 0,
    typeof a.end === 'number' ? a.end : -1,
    Array.isArray(a.view_range) ? (a.view_range as number[]) : null,
  );
  return readObservation(action.id, String(a.path), content);
}
