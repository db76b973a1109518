/**
 * The edit `view` of a directory: entries up to two levels deep, hidden ones excluded (and counted
 * at the first level), sorted by name, capped so a huge tree cannot flood the agent.
 *
 * Node's fs on the real path (no `vscode`): the extension runs beside the workspace
 * (extensionKind "workspace"), and this stays unit-testable.
 *
 * With `roots`, an entry whose real path is outside them (a symlink to /etc, or to a folder
 * outside the workspace) is not listed, and nothing under it either: reading it would
 * be refused, so listing it would leak names the agent may not see.
 */
import * as fs from 'fs';
import * as path from 'path';
import { formatListing, ListingEntry } from './oheditor';
import { insideRoots } from './paths';

export const MAX_LISTING = 1000;

export async function listDirectory(
  shownRoot: string,
  realRoot: string,
  maxEntries = MAX_LISTING,
  roots?: string[],
): Promise<string> {
  const root = shownRoot.replace(/[\\/]+$/, '') || shownRoot;
  const entries: ListingEntry[] = [];
  let hidden = 0;
  let truncated = false;

  async function scan(realDir: string, shownDir: string, depth: number): Promise<void> {
    let items: fs.Dirent[];
    try {
      items = await fs.promises.readdir(realDir, { withFileTypes: true });
    } catch {
      return;
    }
    items.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of items) {
      if (e.name.startsWith('.')) {
        if (depth === 1) hidden++;
        continue;
      }
      if (entries.length >= maxEntries) {
        truncated = true;
        return;
      }
      const shown = shownDir + '/' + e.name;
      let full = path.join(realDir, e.name);
      let isDir = e.isDirectory();
      if (e.isSymbolicLink()) {
        try {
          const target = await fs.promises.realpath(full);
          if (roots && !insideRoots(target, roots)) continue;
          full = target;
          isDir = (await fs.promises.stat(target)).isDirectory(); // follow links, like `find -L`
        } catch {
          isDir = false; // dangling: listed as a file, nothing to read through it
        }
      }
      entries.push({ shown, isDir });
      if (isDir && depth < 2) await scan(full, shown, depth + 1);
    }
  }

  await scan(realRoot, root, 1);
  return formatListing(root, entries, hidden, truncated ? maxEntries : undefined);
}
