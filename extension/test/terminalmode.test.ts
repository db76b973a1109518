// The oh.terminalMode setting as read (src/executors/terminalmode.ts): the retired `fast` maps to `engine`,
// and package.json no longer offers it.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { rcWords, terminalMode } from '../src/executors/terminalmode';

test('every setting value maps to a mode that exists; fast is retired to engine', () => {
  assert.deepEqual(terminalMode('engine'), { mode: 'engine', retired: false });
  assert.deepEqual(terminalMode('shell'), { mode: 'shell', retired: false });
  assert.deepEqual(terminalMode('fast'), { mode: 'engine', retired: true });
  assert.deepEqual(terminalMode(undefined), { mode: 'engine', retired: false });
  assert.deepEqual(terminalMode('nonsense'), { mode: 'engine', retired: false });
});

test("package.json's enum lists exactly the modes the extension has", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const setting = pkg.contributes.configuration.properties['oh.terminalMode'];
  assert.deepEqual(setting.enum, ['engine', 'shell']);
  assert.equal(setting.enumDescriptions.length, 2);
  for (const value of setting.enum) assert.equal(terminalMode(value).mode, value);
});

test("the log says whether the user's rc files were read: the host sends a yes/no (issue 42)", () => {
  assert.equal(rcWords(true), "the user's rc files read");
  assert.equal(rcWords(false), 'no rc files read (clean shell)');
  assert.equal(rcWords(undefined), 'no rc files read (clean shell)');
  assert.equal(rcWords(['~/.bashrc']), 'rc files ~/.bashrc read');
});
