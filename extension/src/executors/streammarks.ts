/**
 * oh's own marks in a shell-integrated terminal's stream (`shell` mode, ./integrated.ts), so that no
 * command shape depends on VS Code's shell integration for its output boundaries or its exit code.
 *
 * Every command is typed as `. <script>`: a simple command, so bash's DEBUG trap (which VS Code's
 * integration uses to send "command started") fires before anything the command prints, whatever the
 * command's shape (`( … )`, `{ …; }`, `if`, heredocs, several lines). The script prints, around the
 * command:
 *
 *   ESC ] 6973 ; <nonce> ; B BEL             the command's output starts here
 *   ESC ] 6973 ; <nonce> ; D ; <status> BEL  the command ended with <status> (`$?` after it)
 *
 * (the OSC number and layout of the shell engine's markers, docs/protocol.md §3.4.1). A command the
 * shell aborts (C-c, a syntax error) never reaches the D line; for those, the script also puts a hook
 * first in the user's PROMPT_COMMAND as VS Code's bash integration keeps it
 * (`__vsc_original_prompt_command`, run before VS Code's own end sequence), which prints
 *
 *   ESC ] 6973 ; <nonce> ; P ; <status> BEL  at the next prompt, before the user's prompt hooks
 *
 * so their output never lands in the command's. xterm.js ignores OSC numbers it does not know, so the marks are invisible in the terminal. What
 * comes before B (VS Code's own marks, the command shown to the user) and after D (bash's job notices
 * such as `[1]+ Terminated`, printed after a command and before the next prompt) is not the command's
 * output. The nonce is random per terminal and lives only in the 0600 script, which deletes itself
 * first, so a program cannot end a command by printing a mark.
 *
 * Pure, no `vscode`: unit-tested on its own (test/streammarks.test.ts).
 */

import { quoteSh } from '../runstate';

export const MARK_OSC = '6973';
const PREFIX = `\x1b]${MARK_OSC};`;
const BEL = '\x07';
/** A mark is short; an unterminated `ESC ] 6973 ;` longer than this is someone else's text. */
const MAX_MARK = 128;

/** Where the scanner is in the command's stream. */
export type MarkState = 'before' | 'in' | 'after';

/** The shell text around a command that prints oh's marks and records its status (see the header). */
export function markedScript(opts: {
  script: string;
  nonce: string;
  commandLine: string;
  /** `export NAME=value` lines (named so: a local `exports` would shadow CommonJS's in the compiled code). */
  exportLines: string;
  statusFile: string;
  /** What the terminal shows before the command runs (the typed line is only `. <script>`). */
  shown: string;
}): string {
  const { script, nonce, commandLine, exportLines, statusFile, shown } = opts;
  return (
    // `$?` as the command line starts is the previous command's status, as in a terminal (saved first,
    // given back right before the command line; `&& :` keeps a non-zero one from tripping `set -e`).
    `__oh_prev=$?\n` +
    `builtin command rm -f -- ${quoteSh(script)}\n` +
    // At the prompt, before the user's PROMPT_COMMAND (only when VS Code keeps one for it to run).
    `__oh_mark_nonce=${nonce}\n` +
    `if [[ -n "\${__vsc_original_prompt_command[*]-}" && " \${__vsc_original_prompt_command[*]} " != *" __oh_prompt_mark "* ]]; then ` +
    `__oh_prompt_mark() { builtin printf '\\033]${MARK_OSC};%s;P;%s\\007' "$__oh_mark_nonce" "$?"; }; ` +
    `__vsc_original_prompt_command=(__oh_prompt_mark "\${__vsc_original_prompt_command[@]}"); fi\n` +
    `builtin printf '\\033[2m%s\\033[0m\\n' ${quoteSh(shown)}\n` +
    `builtin printf '\\033]${MARK_OSC};${nonce};B\\007'\n` +
    exportLines +
    `__oh_ret() { builtin return "$1"; }\n` +
    `builtin eval "builtin unset __oh_prev; __oh_ret $__oh_prev" && :\n` +
    `${commandLine}\n` +
    // $? of the command line; the script then returns it, so `.` (and VS Code) end with it too.
    `__oh_st=$?; builtin printf '\\033]${MARK_OSC};${nonce};D;%s\\007' "$__oh_st"; ` +
    `builtin printf '%s' "$__oh_st" 2>/dev/null >| ${quoteSh(statusFile)}; ` +
    // Under `set -e` a non-zero return would end the shell (a terminal's `false && true` does not): 0
    // then, and the D mark above carries the real status.
    `case $- in *e*) builtin unset __oh_st; builtin return 0;; esac; ` +
    `builtin eval "builtin unset __oh_st; builtin return $__oh_st"\n`
  );
}

/**
 * Control characters in caret notation (`^[`), so the command shown to the user in the terminal is
 * never obeyed by it; newlines and tabs stay.
 */
export function shownCommand(commandLine: string): string {
  return commandLine.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (c) =>
    c === '\x7f' ? '^?' : '^' + String.fromCharCode(c.charCodeAt(0) + 64),
  );
}

/**
 * Splits one command's terminal stream at its marks. Chunks may cut a mark anywhere; a partial mark
 * at a chunk's end is held back until the next chunk.
 */
export class MarkScanner {
  state: MarkState = 'before';
  /** The status the D mark carried. */
  status: number | undefined;
  /** Text seen before any B mark: the command's output after all if the mark never comes. */
  private pre = '';
  private held = '';

  constructor(private readonly nonce: string) {}

  /** Feeds terminal data; returns the part that is the command's output. */
  feed(data: string): string {
    if (this.state === 'after') return '';
    let s = this.held + data;
    this.held = '';
    let out = '';
    for (;;) {
      const at = s.indexOf(PREFIX);
      if (at < 0) {
        const keep = partialPrefix(s);
        out += this.take(s.slice(0, s.length - keep));
        this.held = s.slice(s.length - keep);
        return out;
      }
      out += this.take(s.slice(0, at));
      const end = s.indexOf(BEL, at);
      if (end < 0) {
        if (s.length - at <= MAX_MARK) {
          this.held = s.slice(at);
          return out;
        }
        out += this.take(s.slice(at, at + 1)); // not a mark of ours
        s = s.slice(at + 1);
        continue;
      }
      const body = s.slice(at + PREFIX.length, end).split(';');
      s = s.slice(end + 1);
      if (body[0] !== this.nonce) continue; // someone else's (or a forged) mark: never obeyed, never shown
      if (body[1] === 'B' && this.state === 'before') {
        this.state = 'in';
        this.pre = '';
      } else if ((body[1] === 'D' || body[1] === 'P') && this.state === 'in' && /^\d+$/.test(body[2] ?? '')) {
        this.state = 'after';
        this.status = Number(body[2]);
        return out;
      }
    }
  }

  private take(text: string): string {
    if (this.state === 'in') return text;
    if (this.state === 'before') this.pre += text;
    return '';
  }

  /**
   * At the command's end: what is left to report. Without any B mark (the script never ran) the whole
   * stream is the output, as VS Code delivered it; a held partial mark is output too.
   */
  flush(): string {
    const held = this.held;
    this.held = '';
    if (this.state === 'in') return held;
    if (this.state === 'before') {
      const pre = this.pre + held;
      this.pre = '';
      return pre;
    }
    return '';
  }
}

/** Length of the longest tail of `s` that could start a mark (a proper prefix of `ESC ] 6973 ;`). */
function partialPrefix(s: string): number {
  for (let k = Math.min(PREFIX.length - 1, s.length); k > 0; k--) {
    if (PREFIX.startsWith(s.slice(s.length - k))) return k;
  }
  return 0;
}

/**
 * A job-control notice bash prints itself (`[1]+  Killed   sleep 100`, `[2]-  Done  …`): it reports a
 * job's end inside whatever command runs when bash notices it, i.e. in another command's output. The
 * terminal shows it; the agent's output never holds it (the engine's rule, docs/protocol.md §3.4.1;
 * the same pattern as src/oh/runtimes/local/render.py). `jobs` still reports.
 */
const JOB_NOTICE =
  /^\[\d+\][ +-]+ *(?:Done|Exit \d+|Killed|Terminated|Stopped|Hangup|Interrupt|Quit|Aborted|Broken pipe)\b.*(?:\n|$)/gm;
const NOTICE_WORDS = [
  'Done',
  'Exit ',
  'Killed',
  'Terminated',
  'Stopped',
  'Hangup',
  'Interrupt',
  'Quit',
  'Aborted',
  'Broken pipe',
];

/** Whether the start of a line may still become a notice (then it is held until its end arrives). */
function mayBeNotice(tail: string): boolean {
  if (tail.length > 300) return false;
  if (/^\[\d*\]?[ +-]*$/.test(tail)) return true;
  const m = /^\[\d+\][ +-]+ *(.*)$/.exec(tail);
  return !!m && NOTICE_WORDS.some((w) => w.startsWith(m[1]) || m[1].startsWith(w));
}

/** Drops job notices from cleaned command output (`\n` line ends), chunk by chunk. */
export class JobNoticeFilter {
  private held = '';

  push(text: string): string {
    let t = this.held + text;
    this.held = '';
    const nl = t.lastIndexOf('\n');
    const tail = t.slice(nl + 1);
    if (tail && mayBeNotice(tail)) {
      this.held = tail;
      t = t.slice(0, nl + 1);
    }
    return t.includes('[') ? t.replace(JOB_NOTICE, '') : t;
  }

  flush(): string {
    const t = this.held;
    this.held = '';
    return t.replace(JOB_NOTICE, '');
  }
}
