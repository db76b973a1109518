// Stripping VS Code's shell-integration marks (OSC 633) and other escapes from terminal data.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sequenceEnd, stripTerminalControl, TerminalTextCleaner } from '../src/ansi';

test('633 marks (BEL and ST terminated) disappear', () => {
  assert.equal(stripTerminalControl('\x1b]633;C\x07hi\r\n\x1b]633;D;0\x07'), 'hi\n');
  assert.equal(stripTerminalControl('\x1b]633;E;echo hi;nonce\x1b\\out\r\n'), 'out\n');
  assert.equal(stripTerminalControl('\x1b]633;P;Cwd=/tmp\x07'), '');
});

test('colours, cursor moves, titles, charsets and private modes disappear', () => {
  assert.equal(stripTerminalControl('\x1b[31mred\x1b[0m \x1b[1;32mgreen\x1b[m'), 'red green');
  assert.equal(stripTerminalControl('\x1b[?25l\x1b[2K\x1b[1Gx\x1b[?2004h'), 'x');
  assert.equal(stripTerminalControl('\x1b]0;title\x07text'), 'text');
  assert.equal(stripTerminalControl('\x1b(Bplain\x1b=\x1b>'), 'plain');
  assert.equal(stripTerminalControl('\x1bPdcs stuff\x1b\\after'), 'after');
  assert.equal(stripTerminalControl('bell\x07 and nul\x00'), 'bell and nul');
});

test('line ends: \\r\\n -> \\n, a lone \\r stays (progress output is what the program printed)', () => {
  assert.equal(stripTerminalControl('a\r\nb\r\n'), 'a\nb\n');
  assert.equal(stripTerminalControl('a\rb\r\n'), 'a\rb\n');
  assert.equal(stripTerminalControl('crlf from program\r\r\n'), 'crlf from program\n');
  assert.equal(stripTerminalControl('tab\there'), 'tab\there');
  assert.equal(stripTerminalControl('ünïcödé ✓ 😀\r\n'), 'ünïcödé ✓ 😀\n');
});

test('sequences and \\r\\n cut by chunk boundaries are reassembled', () => {
  const raw = '\x1b]633;C\x07line1\r\n\x1b[31mred\x1b[0m\r\nlast\r\n\x1b]633;D;0\x07';
  const expected = stripTerminalControl(raw);
  assert.equal(expected, 'line1\nred\nlast\n');
  for (let cut = 0; cut <= raw.length; cut++) {
    const c = new TerminalTextCleaner();
    const out = c.push(raw.slice(0, cut)) + c.push(raw.slice(cut)) + c.flush();
    assert.equal(out, expected, `cut at ${cut}`);
  }
  // one character at a time
  const c = new TerminalTextCleaner();
  let out = '';
  for (const ch of raw) out += c.push(ch);
  assert.equal(out + c.flush(), expected);
});

test('an unfinished sequence at the very end is dropped, held \\r is kept', () => {
  const c = new TerminalTextCleaner();
  assert.equal(c.push('x\x1b]633;D'), 'x');
  assert.equal(c.flush(), '');
  const d = new TerminalTextCleaner();
  assert.equal(d.push('y\r'), 'y');
  assert.equal(d.flush(), '\r');
});

test('sequenceEnd', () => {
  assert.equal(sequenceEnd('\x1b[0m', 0), 4);
  assert.equal(sequenceEnd('\x1b[', 0), -1);
  assert.equal(sequenceEnd('\x1b', 0), -1);
  assert.equal(sequenceEnd('\x1b]633;A', 0), -1);
  assert.equal(sequenceEnd('\x1b]633;A\x1b', 0), -1);
  assert.equal(sequenceEnd('\x1b]633;A\x07z', 0), 8);
  assert.equal(sequenceEnd('\x1b7', 0), 2);
});
