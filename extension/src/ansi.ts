/**
 * Turns what a terminal shows into what the command printed.
 *
 * Pure. `TerminalShellExecution.read()` yields raw terminal data: VS Code's own shell-integration
 * marks (`ESC ] 633 ; ... BEL`), colours and cursor movement (CSI), titles (OSC), and `\r\n` line ends
 * produced by the pty. The agent must see the exact output, so every escape sequence is removed and
 * `\r\n` becomes `\n`. Data arrives in chunks that may cut a sequence (or a `\r\n`) in two, so the
 * cleaner is incremental and holds back an unfinished tail until the next chunk.
 */

const ESC = '\x1b';
const BEL = '\x07';
/** An unterminated sequence longer than this is not a sequence: let it through rather than hold it forever. */
const MAX_HOLD = 1 << 20;

function code(s: string, i: number): number {
  return s.charCodeAt(i);
}

/**
 * Index just after the escape sequence starting at `p` (where `s[p]` is ESC), or -1 when the data
 * ends before the sequence does.
 */
export function sequenceEnd(s: string, p: number): number {
  const n = s.length;
  if (p + 1 >= n) return -1;
  const c = s[p + 1];
  if (c === '[') {
    // CSI: parameter bytes 0x30-0x3F, intermediate bytes 0x20-0x2F, one final byte 0x40-0x7E.
    let j = p + 2;
    while (j < n && code(s, j) >= 0x20 && code(s, j) <= 0x3f) j++;
    if (j >= n) return -1;
    const f = code(s, j);
    return f >= 0x40 && f <= 0x7e ? j + 1 : j; // malformed: drop the introducer, keep the byte
  }
  if (c === ']' || c === 'P' || c === 'X' || c === '^' || c === '_') {
    // OSC / DCS / SOS / PM / APC: a string ended by BEL or ST (ESC \). VS Code's 633 marks are OSC.
    for (let j = p + 2; j < n; j++) {
      const ch = s[j];
      if (ch === BEL) return j + 1;
      if (ch === ESC) {
        if (j + 1 >= n) return -1;
        return s[j + 1] === '\\' ? j + 2 : j; // an ESC that is not ST starts the next sequence
      }
    }
    return -1;
  }
  const k = code(s, p + 1);
  if (k >= 0x20 && k <= 0x2f) {
    // nF escape (charset designation such as ESC ( B): intermediates, then a final byte.
    let j = p + 1;
    while (j < n && code(s, j) >= 0x20 && code(s, j) <= 0x2f) j++;
    if (j >= n) return -1;
    const f = code(s, j);
    return f >= 0x30 && f <= 0x7e ? j + 1 : j;
  }
  if (k >= 0x30 && k <= 0x7e) return p + 2; // ESC 7, ESC =, ESC M, ESC c ...
  return p + 1; // a lone ESC
}

export class TerminalTextCleaner {
  private pending = ''; // an escape sequence cut by the chunk boundary
  private crHold = ''; // trailing '\r's: a '\n' may follow in the next chunk

  push(chunk: string): string {
    let s = this.pending + chunk;
    this.pending = '';
    if (!s.includes(ESC)) return this.normalize(s);
    let out = '';
    let i = 0;
    while (i < s.length) {
      const esc = s.indexOf(ESC, i);
      if (esc < 0) {
        out += s.slice(i);
        break;
      }
      out += s.slice(i, esc);
      const end = sequenceEnd(s, esc);
      if (end < 0) {
        if (s.length - esc > MAX_HOLD) {
          i = esc + 1;
          continue;
        }
        this.pending = s.slice(esc);
        s = '';
        break;
      }
      i = end;
    }
    return this.normalize(out);
  }

  /** The rest at the end of the output: an unfinished sequence is dropped, held `\r`s are kept. */
  flush(): string {
    this.pending = '';
    const rest = this.crHold;
    this.crHold = '';
    return rest;
  }

  private normalize(text: string): string {
    let t = this.crHold + text;
    this.crHold = '';
    if (!t) return t;
    let end = t.length;
    while (end > 0 && t[end - 1] === '\r') end--;
    if (end < t.length) {
      this.crHold = t.slice(end);
      t = t.slice(0, end);
    }
    // The pty turns every '\n' into '\r\n' (onlcr); a program's own '\r\n' arrives as '\r\r\n'.
    // BEL and NUL outside sequences are terminal noise, not output anyone means to read.
    return t.replace(/\r+\n/g, '\n').replace(/[\x00\x07]/g, '');
  }
}

/** One-shot version for text already complete. */
export function stripTerminalControl(text: string): string {
  const c = new TerminalTextCleaner();
  return c.push(text) + c.flush();
}
