/**
 * The `oh.terminalMode` setting as the extension reads it. `fast` (a persistent bash on pipes, without
 * rc files and not a TTY) was retired in issue 26: oh's shell engine (`engine`) does what it did, on a
 * real pty, with the user's shell or the clean one. A settings file that still says `fast` gets `engine`,
 * and the user is told once (extension.ts). No `vscode`: unit-tested (test/terminalmode.test.ts).
 */

export type TerminalMode = 'engine' | 'shell';

/** The mode to use for `value`, and whether `value` named a retired mode. */
export function terminalMode(value: string | undefined): { mode: TerminalMode; retired: boolean } {
  if (value === 'shell') return { mode: 'shell', retired: false };
  return { mode: 'engine', retired: value === 'fast' };
}

/** The one-time message for a settings file that still names the retired `fast` mode. */
export const RETIRED_FAST_MESSAGE =
  'oh: the terminal mode "fast" was retired; agent terminals now use "engine" (oh\'s shell engine: your shell on a ' +
  'real terminal; for a shell without rc files set oh.userShell to false). Update the oh.terminalMode setting?';

/**
 * The log's words for the engine host's `rc` (enginehost.py sends whether the user's rc files were read: a
 * yes/no; a list of names is also accepted): issue 42, the log said "no rc files" although ~/.bashrc ran.
 */
export function rcWords(rc: unknown): string {
  if (Array.isArray(rc))
    return rc.length ? `rc files ${rc.map(String).join(' ')} read` : 'no rc files read (clean shell)';
  return rc === true ? "the user's rc files read" : 'no rc files read (clean shell)';
}
