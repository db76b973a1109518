/**
 * The control records a `fast` terminal's persistent bash writes on its marker pipe (./fastshell.ts),
 * one per finished command, never mixed with the command's output (so output needs no scrubbing):
 *
 *   D<status>\0<cwd>\0   the command ended with <status>; the shell now stands in <cwd>
 *   X<status>\0<cwd>\0   the shell itself exited (`exit 3`, `set -e`) with <status>, in <cwd>
 *
 * The same record layout as the local runtime's (src/oh/runtimes/local/shell.py), minus its PATH
 * field. No `vscode`: unit-tested on its own (test/markers.test.ts).
 */

export interface Marker {
  /** `D`: a command finished; `X`: the shell exited. */
  kind: 'D' | 'X';
  status: number;
  cwd: string;
}

/** Splits a byte stream of marker records into records; chunks may cut a record anywhere. */
export class MarkerParser {
  private pending: Buffer = Buffer.alloc(0);

  /** Feeds bytes read from the pipe; returns every record they complete, in order. */
  push(chunk: Buffer): Marker[] {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: Marker[] = [];
    for (;;) {
      const first = this.pending.indexOf(0);
      if (first < 0) break;
      const second = this.pending.indexOf(0, first + 1);
      if (second < 0) break;
      const head = this.pending.subarray(0, first).toString('utf8');
      const cwd = this.pending.subarray(first + 1, second).toString('utf8');
      this.pending = this.pending.subarray(second + 1);
      const kind = head[0];
      const status = Number(head.slice(1));
      // Only our own loop writes this pipe; a malformed record would be a bug there: skip it rather than guess.
      if ((kind !== 'D' && kind !== 'X') || !/^\d+$/.test(head.slice(1))) continue;
      out.push({ kind, status, cwd });
    }
    return out;
  }
}
