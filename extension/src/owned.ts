/**
 * The trust rule for oh's own files, the same one the CLI applies (src/oh/config/paths.py,
 * docs/security.md §2 "a shared OH_HOME"): a session file hands over a backend's address and its
 * editor token, so one that another local user could have written must not be used. Otherwise this
 * window would register as the editor of *their* backend and run the actions it sends.
 *
 * - the oh directory (OH_HOME, or the platform state dir) and its `sessions` directory: owned by
 *   you, not writable by group or others (`checkOwned`);
 * - every directory above the oh directory: owned by you or root, and a world-writable one only
 *   with the sticky bit, like /tmp (`checkParents`), so nobody can rename ours away and put theirs
 *   in its place;
 * - each session file: a regular file (not a symlink, FIFO...), owned by you, not group/other
 *   writable (`readOwnedFile`).
 *
 * A refusal is an `UnsafePath` naming the path, the problem and the fix, worded as the CLI words it.
 * Missing paths are not refusals (nothing to trust). On Windows there is no uid and no POSIX mode
 * bits (ACLs decide, and the per-user LOCALAPPDATA is not shared), so only the regular-file rule
 * applies there, as in the CLI.
 *
 * No `vscode` import: unit-tested with real files (test/owned.test.ts).
 */

import * as fs from 'fs';
import * as path from 'path';

export class UnsafePath extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
    readonly fix: string,
  ) {
    super(`refusing to use ${path}: ${problem}. Fix: ${fix}`);
    this.name = 'UnsafePath';
  }
}

/** The POSIX uid checks apply (false on Windows, where process.getuid does not exist). */
function myUid(): number | null {
  return typeof process.getuid === 'function' && process.platform !== 'win32' ? process.getuid() : null;
}

/** "uid 65534 (nobody)" as the CLI prints it; the name is best effort (/etc/passwd only, no NSS). */
export function ownerLabel(uid: number): string {
  try {
    for (const line of fs.readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (f.length > 2 && Number(f[2]) === uid && f[2] !== '') return `uid ${uid} (${f[0]})`;
    }
  } catch {
    // no /etc/passwd (or unreadable): the number alone says enough
  }
  return `uid ${uid}`;
}

const modeStr = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

/** Refuse `p` unless you own it and group/others cannot write it. `st` defaults to stat (follows links, as the CLI). */
export function checkOwned(p: string, what: string, st?: fs.Stats): fs.Stats | null {
  if (!st) {
    try {
      st = fs.statSync(p);
    } catch {
      return null; // missing (or unreachable): nothing to trust
    }
  }
  const me = myUid();
  if (me === null) return st;
  if (st.uid !== me) {
    throw new UnsafePath(
      p,
      `this ${what} is owned by ${ownerLabel(st.uid)}, not by you (${ownerLabel(me)}): that user could have planted ` +
        'a token or session file and would then run commands as you',
      'use a directory of your own: unset OH_HOME, or point it at one you create (e.g. `export OH_HOME=~/.oh`)',
    );
  }
  if (st.mode & 0o022) {
    let fix = `chmod ${st.isDirectory() ? '700' : '600'} ${p}`;
    if (!st.isDirectory())
      fix += ' and replace the token it holds (`oh token rotate`): another user could have written theirs';
    throw new UnsafePath(p, `this ${what} is writable by other users (mode ${modeStr(st.mode)})`, fix);
  }
  return st;
}

/** Every directory above `p` is owned by you or root; a world-writable one must be sticky (/tmp). */
export function checkParents(p: string): void {
  const me = myUid();
  if (me === null) return;
  let parent = path.dirname(p);
  for (let prev = p; parent !== prev; prev = parent, parent = path.dirname(parent)) {
    let st: fs.Stats;
    try {
      st = fs.statSync(parent);
    } catch {
      continue;
    }
    if (st.uid !== 0 && st.uid !== me) {
      throw new UnsafePath(
        p,
        `its parent directory ${parent} is owned by ${ownerLabel(st.uid)}, who could replace it`,
        "keep oh's files in a directory tree you own (unset OH_HOME, or e.g. `export OH_HOME=~/.oh`)",
      );
    }
    if (st.mode & 0o002 && !(st.mode & 0o1000)) {
      throw new UnsafePath(
        p,
        `its parent directory ${parent} is writable by everyone (mode ${modeStr(st.mode)}) without the sticky bit`,
        `chmod o-w ${parent}, or keep oh's files elsewhere`,
      );
    }
  }
}

/**
 * The sessions directory may be trusted: its oh directory (the parent: OH_HOME or the state dir)
 * and the directories above it pass, and so does the sessions directory itself. Throws UnsafePath.
 */
export function checkSessionsDir(dir: string): void {
  const ohDir = path.dirname(dir);
  if (checkOwned(ohDir, 'oh directory') !== null) checkParents(ohDir);
  checkOwned(dir, 'sessions directory');
}

/**
 * The content of an oh file we are about to trust, or null when it does not exist. Throws UnsafePath
 * for a symlink, a non-regular file, or one that fails `checkOwned`.
 *
 * The checks run on the opened descriptor (O_NOFOLLOW, then fstat), so a file swapped in between
 * the check and the read is the one checked; O_NONBLOCK keeps a planted FIFO from hanging the open.
 */
export async function readOwnedFile(p: string, what: string): Promise<string | null> {
  const notRegular = () =>
    new UnsafePath(p, `this ${what} is not a regular file (a symlink or something else)`, `remove it: rm ${p}`);
  let lst: fs.Stats;
  try {
    lst = await fs.promises.lstat(p);
  } catch {
    return null;
  }
  if (!lst.isFile()) throw notRegular();
  const flags = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);
  let fh: fs.promises.FileHandle;
  try {
    fh = await fs.promises.open(p, flags);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') throw notRegular(); // became a symlink since the lstat
    return null; // vanished (or unreadable): not a file we can use
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw notRegular();
    checkOwned(p, what, st);
    return await fh.readFile('utf8');
  } finally {
    await fh.close();
  }
}
