// The containment rule, one table for both languages: tests/contract/path_within.json is also run by
// tests/protocol/test_paths.py against Python's oh.protocol.paths.within.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { pathContains } from '../src/session';

interface Case {
  root: string;
  path: string;
  within: boolean;
}

const TABLE: Case[] = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', '..', '..', 'tests', 'contract', 'path_within.json'), 'utf8'),
).cases;

test('the shared containment table has both answers', () => {
  assert.ok(TABLE.length >= 20);
  assert.deepEqual(new Set(TABLE.map((c) => c.within)), new Set([true, false]));
});

test('pathContains gives every case of the shared table its answer (linux)', () => {
  const wrong = TABLE.filter((c) => pathContains(c.root, c.path, 'linux') !== c.within);
  assert.deepEqual(wrong, []);
});
