/**
 * Where an action's path really points, and whether this window may touch it (PATH_DENIED).
 *
 * Every path is made absolute (relative -> against the first workspace folder), resolved through
 * symlinks and `..` (a path that does not exist yet resolves through its nearest existing parent; a
 * dangling symlink resolves to its target, so it cannot smuggle a write outside), and must land in
 * one of the window's folders. The check runs before anything is opened or created.
 *
 * No `vscode`: the executors turn the result into a Uri under the folder the user opened, so the
 * file matches the TextDocument VS Code already has open even when the folder is reached through a
 * symlink.
 */

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ToolError } from './protocol';
import { pathContains } from './session';

export interface WorkspaceRoot {
  /** The folder as VS Code knows it (Uri.fsPath). */
  path: string;
  /** Its real path. */
  real: string;
}

export interface ResolvedPath {
  /** Absolute and normalised, as the agent named it: what messages show. */
  shown: string;
  /** Symlinks resolved: what the check is about. */
  real: string;
  /** Index of the folder that contains `real` (the deepest one). */
  folderIndex: number;
  /** `real` relative to that folder's real path, as path segments ([] = the folder itself). */
  segments: string[];
}

const MAX_SYMLINKS = 40;

/** realpath that also works for paths that do not exist (yet). */
export async function realpathLenient(p: string, depth = 0): Promise<string> {
  try {
    return await fs.promises.realpath(p);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENAMETOOLONG') {
      // A plain tool error, never SERVER_ERROR.
      throw new ToolError(`File name too long: ${p}. Each path component must be at most 255 bytes.`);
    }
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw e;
  }
  if (depth > MAX_SYMLINKS) throw new ToolError(`Too many levels of symbolic links in ${p}.`);
  try {
    const st = await fs.promises.lstat(p);
    if (st.isSymbolicLink()) {
      // Dangling symlink: where a write would land is its target.
      const target = await fs.promises.readlink(p);
      return realpathLenient(path.resolve(path.dirname(p), target), depth + 1);
    }
  } catch {
    // does not exist at all: resolve the parent
  }
  const parent = path.dirname(p);
  if (parent === p) return p;
  return path.join(await realpathLenient(parent, depth), path.basename(p));
}

/**
 * `roots`: where this action may go (the backend's workspace + allowed roots, else the window's
 * folders). `base`: what a relative path is relative to (the agent's workdir; default the first root).
 */
export async function resolvePath(raw: string, roots: WorkspaceRoot[], base?: string | null): Promise<ResolvedPath> {
  if (raw.includes('\0')) throw new ToolError('The path must not contain NUL bytes.', 'BAD_REQUEST');
  if (!roots.length) {
    throw new ToolError(
      'This VS Code window has no folder open on this machine; open the workspace folder first.',
      'PATH_DENIED',
    );
  }
  let expanded = raw;
  if (raw === '~' || raw.startsWith('~/')) expanded = path.join(os.homedir(), raw.slice(1));
  const joined = path.isAbsolute(expanded) ? expanded : path.join(base || roots[0].path, expanded);
  const shown = path.normalize(joined);
  const real = await realpathLenient(shown);
  let best = -1;
  roots.forEach((r, i) => {
    if (pathContains(r.real, real) && (best < 0 || r.real.length > roots[best].real.length)) best = i;
  });
  if (best < 0) {
    const via = real === shown ? '' : ` (it resolves to ${real})`;
    throw new ToolError(
      `Path ${shown} is outside the workspace and allowed roots (${roots.map((r) => r.real).join(', ')})${via}; nothing was done.`,
      'PATH_DENIED',
    );
  }
  const rel = path.relative(roots[best].real, real);
  return { shown, real, folderIndex: best, segments: rel ? rel.split(path.sep) : [] };
}

/** Whether a real path lies in one of `roots` (real paths). */
export function insideRoots(real: string, roots: string[]): boolean {
  return roots.some((r) => pathContains(r, real));
}

/**
 * A regular file with more than one name may be the very inode of a file outside the allowed roots
 * (a hard link has no real path to check): its content is refused, as the local runtime does
 * (docs/security.md, "Hard links"). A whole-file write is still allowed: it replaces the name.
 */
export async function refuseHardLink(shown: string, real: string): Promise<void> {
  let st: fs.Stats;
  try {
    st = await fs.promises.stat(real);
  } catch {
    return; // missing: the caller reports it
  }
  if (st.isFile() && st.nlink > 1) {
    throw new ToolError(
      `The file ${shown} has ${st.nlink} hard links; oh cannot tell whether another of them is outside the ` +
        'allowed roots, so it does not read or edit it. If its content is yours to use, give it a name of its own ' +
        `(\`cp -p ${shown} ${shown}.tmp && mv ${shown}.tmp ${shown}\`) or read it from the shell.`,
      'PATH_DENIED',
    );
  }
}
