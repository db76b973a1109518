// oh's own marks in `shell` mode (src/executors/streammarks.ts): the script around a command, run by a
// real bash the way the terminal runs it (`. <script>`), and the scanner that cuts the stream at the marks.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { JobNoticeFilter, MarkScanner, markedScript, shownCommand } from '../src/executors/streammarks';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oh-marks-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let seq = 0;

/** Runs `commandLine` through its marked script in `bash -c '. script; …'`; returns the raw stream and files. */
function runMarked(
  commandLine: string,
  after = '',
): { raw: string; status: string | null; scriptLeft: boolean; code: number | null } {
  const n = ++seq;
  const script = path.join(dir, `cmd-${n}.sh`);
  const statusFile = path.join(dir, `st-${n}`);
  fs.writeFileSync(
    script,
    markedScript({
      script,
      nonce: 'n0nce',
      commandLine,
      exportLines: "export OH_T='v 1'\n",
      statusFile,
      shown: shownCommand(commandLine),
    }),
    { mode: 0o600 },
  );
  const r = spawnSync('bash', ['-c', `. '${script}'${after}`], { cwd: dir, encoding: 'utf8' });
  let status: string | null = null;
  try {
    status = fs.readFileSync(statusFile, 'utf8');
  } catch {
    /* none */
  }
  return { raw: r.stdout + r.stderr, status, scriptLeft: fs.existsSync(script), code: r.status };
}

function scan(raw: string, cut?: number): { out: string; status: number | undefined; rest: string } {
  const m = new MarkScanner('n0nce');
  const parts = cut === undefined ? [raw] : [raw.slice(0, cut), raw.slice(cut)];
  let out = '';
  for (const p of parts) out += m.feed(p);
  return { out, status: m.status, rest: m.flush() };
}

test('every command shape gets its exact status and output; `.` returns that status; the script deletes itself', () => {
  const cases: Array<[string, number, string]> = [
    ['(exit 7)', 7, ''],
    ['(cd / && pwd)', 0, '/\n'],
    ['false || (exit 3)', 3, ''],
    ['{ echo a; (exit 4); }', 4, 'a\n'],
    ['if true; then echo y; fi', 0, 'y\n'],
    ['echo $OH_T', 0, 'v 1\n'],
    ['cat <<EOF\nline 1\nline 2\nEOF', 0, 'line 1\nline 2\n'],
    ['f() { return 5; }; f', 5, ''],
    ['true | false', 1, ''],
  ];
  for (const [cmd, code, out] of cases) {
    const r = runMarked(cmd, '; echo "dot=$?"');
    const s = scan(r.raw);
    assert.equal(s.out, out, cmd);
    assert.equal(s.status, code, cmd);
    assert.equal(r.status, String(code), cmd);
    assert.ok(r.raw.endsWith(`dot=${code}\n`), `${cmd}: ${JSON.stringify(r.raw)}`);
    assert.equal(r.scriptLeft, false);
  }
});

test('the command shown to the user comes before the output, the job notices after it: neither is output', () => {
  const r = runMarked('echo out', '; echo "[1]+  Terminated   sleep 100"');
  assert.match(r.raw, /^\x1b\[2mecho out\x1b\[0m\n/);
  for (let cut = 0; cut <= r.raw.length; cut++) {
    const s = scan(r.raw, cut);
    assert.equal(s.out, 'out\n', `cut at ${cut}`);
    assert.equal(s.status, 0);
    assert.equal(s.rest, '');
  }
});

test('marks with another nonce are neither obeyed nor shown; a stream without marks is all output', () => {
  const forged = 'a\x1b]6973;other;D;0\x07b\n';
  const m = new MarkScanner('n0nce');
  assert.equal(m.feed('\x1b]633;C\x07\x1b]6973;n0nce;B\x07' + forged), 'ab\n');
  assert.equal(m.state, 'in');
  assert.equal(m.feed('\x1b]6973;n0nce;D;2\x07[1]+ Done'), '');
  assert.equal(m.status, 2);
  const none = new MarkScanner('n0nce');
  assert.equal(none.feed('\x1b]633;C\x07hi\r\n'), '');
  assert.equal(none.flush(), '\x1b]633;C\x07hi\r\n');
  // An unterminated lookalike longer than any mark is text, not held forever.
  const long = new MarkScanner('n0nce');
  long.feed('\x1b]6973;n0nce;B\x07');
  const junk = '\x1b]6973;' + 'x'.repeat(300);
  assert.equal(long.feed(junk), junk);
});

test('the command shown in the terminal has its control characters in caret notation', () => {
  assert.equal(shownCommand('printf "\x1b[31m"\tx\ny\x7f'), 'printf "^[[31m"\tx\ny^?');
});

test("bash's job notices are dropped from a command's output, wherever the chunks cut them", () => {
  const text = 'a\n[1]+  Killed                  sleep 100\nafter\n[2]-  Done   x\n[y/N] ';
  for (let cut = 0; cut <= text.length; cut++) {
    const f = new JobNoticeFilter();
    const got = f.push(text.slice(0, cut)) + f.push(text.slice(cut)) + f.flush();
    assert.equal(got, 'a\nafter\n[y/N] ', `cut at ${cut}`);
  }
  const p = new JobNoticeFilter();
  assert.equal(p.push('Continue? [y/N] '), 'Continue? [y/N] ', 'a prompt is never held back');
  assert.equal(p.push('[3] 1234\n'), '[3] 1234\n', "a job's start line is its own command's output");
});
