// The fast terminal's marker records (src/executors/markers.ts) and its persistent bash
// (src/executors/bashloop.ts) with a real bash: output, exit codes, cwd/exports, C-c, kill, exit.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { BashLoop, caretNotation, sourceFileIn } from '../src/executors/bashloop';
import { MarkerParser } from '../src/executors/markers';
import { RunningCommand } from '../src/runstate';

test('records split anywhere are reassembled in order', () => {
  const bytes = Buffer.from('D0\0/tmp\0D130\0/home/a b\0X3\0/\0', 'utf8');
  for (let cut = 0; cut <= bytes.length; cut++) {
    const p = new MarkerParser();
    const got = [...p.push(bytes.subarray(0, cut)), ...p.push(bytes.subarray(cut))];
    assert.deepEqual(got, [
      { kind: 'D', status: 0, cwd: '/tmp' },
      { kind: 'D', status: 130, cwd: '/home/a b' },
      { kind: 'X', status: 3, cwd: '/' },
    ]);
  }
});

test('a directory name in UTF-8 cut mid-character survives; malformed records are skipped', () => {
  const p = new MarkerParser();
  const b = Buffer.from('Zx\0y\0D1\0/tmp/é\0', 'utf8');
  const out = [...p.push(b.subarray(0, b.length - 3)), ...p.push(b.subarray(b.length - 3))];
  assert.deepEqual(out, [{ kind: 'D', status: 1, cwd: '/tmp/é' }]);
  assert.deepEqual(p.push(Buffer.from('Dx\0/\0', 'utf8')), []);
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oh-bashloop-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function loop(): { shell: BashLoop; seen: string[]; exited: Array<number | undefined> } {
  const seen: string[] = [];
  const exited: Array<number | undefined> = [];
  const shell = new BashLoop(dir, { PATH: process.env.PATH, HOME: dir }, sourceFileIn(dir), {
    echo: (t) => seen.push(t),
    exited: (s) => exited.push(s),
  });
  return { shell, seen, exited };
}

async function done(cmd: RunningCommand): Promise<{ out: string; code: number | undefined; exited: boolean }> {
  const end = Date.now() + 20000;
  while (!cmd.done && Date.now() < end) await cmd.changed(1000);
  assert.ok(cmd.done, 'the command did not end within 20 s');
  return { out: cmd.buffer.text(), code: cmd.exitCode, exited: cmd.shellExited };
}

test('commands run in one bash: exact output, exit codes, cd and exports persist, env never echoed', async () => {
  const { shell, seen } = loop();
  try {
    assert.deepEqual(await done(await shell.start('echo out; echo err >&2; false')), { out: 'out\nerr\n', code: 1, exited: false });
    assert.equal((await done(await shell.start('mkdir -p sub && cd sub && export KEEP=1'))).code, 0);
    assert.equal((await done(await shell.start('echo $KEEP $SECRET; pwd', { env: { SECRET: 's3cr3t' } }))).out, `1 s3cr3t\n${path.join(dir, 'sub')}\n`);
    assert.equal(shell.cwd(), path.join(dir, 'sub'));
    assert.equal((await done(await shell.start('(exit 7)'))).code, 7);
    const missing = await done(await shell.start('no_such_cmd_oh'));
    assert.equal(missing.code, 127);
    assert.match(missing.out, /^bash: line 1: no_such_cmd_oh: command not found\n$/, 'no private file name in bash messages');
    assert.equal((await done(await shell.start("printf '%s' x # \x1b]0;title\x07"))).out, 'x');
    const shown = seen.join('');
    assert.ok(shown.includes('# ^[]0;title^G'), 'escape sequences in the command are shown, not obeyed');
    assert.equal(shown.includes('\x1b]0;'), false);
    assert.match(shown, /echo \$KEEP \$SECRET; pwd/);
    assert.equal(shown.includes('export SECRET'), false, 'exported values are never shown in the terminal');
  } finally {
    shell.dispose();
  }
});

test('input reaches the command; C-c aborts the command line with 130 and the shell survives; kill ends a C-c-proof one', async () => {
  const { shell } = loop();
  try {
    const reader = await shell.start('read x; echo got $x');
    shell.sendLine('hello');
    assert.deepEqual(await done(reader), { out: 'got hello\n', code: 0, exited: false });
    // Output ending like the start of the private file's name is held back only briefly.
    const partial = await shell.start("printf 'p/'; sleep 30");
    const until = Date.now() + 5000;
    while (partial.buffer.text() !== 'p/' && Date.now() < until) await partial.changed(200);
    assert.equal(partial.buffer.text(), 'p/');
    shell.sendKey('C-c');
    assert.equal((await done(partial)).code, 130);
    const sleeper = await shell.start('sleep 30; echo not reached');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(shell.sendKey('C-c'), true);
    assert.deepEqual(await done(sleeper), { out: '', code: 130, exited: false });
    const stubborn = await shell.start("bash -c \"trap '' INT; sleep 30\"");
    await new Promise((r) => setTimeout(r, 300));
    await shell.killRunning();
    assert.equal((await done(stubborn)).code, 137);
    assert.equal((await done(await shell.start('echo alive'))).out, 'alive\n');
    assert.equal(shell.sendKey('C-z'), false);
    // Output of a background job printed between commands goes to the next command.
    assert.equal((await done(await shell.start('(sleep 0.3; echo from-bg) &'))).code, 0);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await done(await shell.start('echo next'))).out, 'from-bg\nnext\n');
    // Keys the user types into the terminal: refused while idle (the caller shows a note), else the command's stdin.
    assert.equal(shell.userInput('ignored\r'), false);
    const typed = await shell.start('read t; echo typed $t');
    assert.equal(shell.userInput('from-user\r'), true);
    assert.deepEqual(await done(typed), { out: 'typed from-user\n', code: 0, exited: false });
    // C-d: the reading command sees end-of-file; later commands get a fresh stdin that input reaches.
    const cat = await shell.start('cat; echo eof');
    shell.sendLine('line');
    assert.equal(shell.sendKey('C-d'), true);
    assert.deepEqual(await done(cat), { out: 'line\neof\n', code: 0, exited: false });
    const again = await shell.start('read y; echo again $y');
    shell.sendLine('yes');
    assert.deepEqual(await done(again), { out: 'again yes\n', code: 0, exited: false });
    assert.deepEqual(fs.readdirSync(dir).filter((f) => f.includes('-in-')), [], 'the FIFO is unlinked once open');
  } finally {
    shell.dispose();
  }
});

test('`exit 3` ends the shell: the command reports 3 and that the shell exited', async () => {
  const { shell, exited } = loop();
  const r = await done(await shell.start('cd / && exit 3'));
  assert.deepEqual(r, { out: '', code: 3, exited: true });
  const end = Date.now() + 5000;
  while (!exited.length && Date.now() < end) await new Promise((res) => setTimeout(res, 20));
  assert.equal(exited.length, 1);
  assert.equal(shell.cwd(), '/');
  shell.dispose();
});

test('caret notation: control characters visible, newlines and tabs kept', () => {
  assert.equal(caretNotation('a\x1b[31mb\x07\x7f\n\tc\x9b'), 'a^[[31mb^G^?\n\tc\\u{9b}');
});
