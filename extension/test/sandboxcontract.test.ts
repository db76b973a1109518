// One sandbox spec for both runtimes (docs/protocol.md §3.17): the spec the backend resolves and sends in
// `registered` becomes the engine host's argv unchanged (tests/contract/sandbox-spec.json; the Python half,
// tests/contract/test_sandbox_contract.py, checks the backend's spec and that the engine host builds from this
// argv the local runtime's very bubblewrap command line).
import './vscodeMock'; // first: makes require('vscode') resolve to the mock
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { parseSandbox } from '../src/connection';
import { sandboxArgs } from '../src/executors/engineshell';

interface Case {
  name: string;
  roots: string[];
  wire: unknown;
  engine_args: string[];
}

const FIXTURE = path.join(__dirname, '..', '..', '..', 'tests', 'contract', 'sandbox-spec.json');
const cases = (JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) as { cases: Case[] }).cases;

for (const c of cases) {
  test(`sandbox contract: ${c.name}: the backend's spec is the engine host's argv as it is`, () => {
    const sb = parseSandbox(c.wire);
    assert.ok(sb, 'the spec is accepted whole');
    assert.deepEqual(sandboxArgs(sb, c.roots), c.engine_args);
  });
}

test('sandbox contract: a spec with a relative path or a missing field is not used (the host keeps its own default)', () => {
  const good = cases[0].wire as Record<string, unknown>;
  assert.equal(parseSandbox({ ...good, writable: ['~/.cache'] }), undefined);
  assert.equal(parseSandbox({ ...good, hidden: undefined }), undefined);
  assert.equal(parseSandbox({ ...good, network: 'yes' }), undefined);
});
