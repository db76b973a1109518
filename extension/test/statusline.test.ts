// The status bar's words (./src/statusline.ts, issue 42): what is connected, and a backend that ended.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionStatus } from '../src/manager';
import { statusLine } from '../src/statusline';

const LINK: ConnectionStatus = { instanceId: 'i1', port: 32801, workspace: '/home/u/proj', state: 'connected' };

test('connected: the workspace it serves, not a port', () => {
  const line = statusLine({ connections: [LINK], runningCount: 0 });
  assert.equal(line.text, '$(plug) oh: connected to proj');
  assert.ok(!line.text.includes('32801'));
  assert.ok(line.tooltip.includes('/home/u/proj (port 32801)'));
  assert.equal(line.level, undefined);
});

test('the backend ended: said, with how to start it, until one connects again', () => {
  const ended = { workspace: '/home/u/proj', pid: 4242 };
  const gone = statusLine({ connections: [], runningCount: 0, ended });
  assert.equal(gone.text, '$(debug-disconnect) oh: backend ended');
  assert.ok(gone.tooltip.includes('oh start --runtime vscode') && gone.tooltip.includes('pid 4242'));
  assert.equal(gone.level, 'warning');
  assert.equal(statusLine({ connections: [], runningCount: 0 }).text, 'oh: idle');
  assert.equal(statusLine({ connections: [LINK], runningCount: 0, ended }).text, '$(plug) oh: connected to proj');
});

test('a running action and a version problem keep their words', () => {
  const run = statusLine({ connections: [LINK], runningCount: 2, latest: { kind: 'run', summary: 'make test' } });
  assert.equal(run.text, '$(sync~spin) oh: run make test');
  assert.ok(run.tooltip.includes('(+1 more)'));
  const write = statusLine({
    connections: [LINK],
    runningCount: 1,
    latest: { kind: 'write', summary: '/home/u/proj/src/a.txt' },
  });
  assert.equal(write.text, '$(sync~spin) oh: write src/a.txt');
  const root = statusLine({
    connections: [{ ...LINK, workspace: '/' }],
    runningCount: 1,
    latest: { kind: 'write', summary: '/etc/x' },
  });
  assert.equal(root.text, '$(sync~spin) oh: write /etc/x');
  const refused = statusLine({
    connections: [{ ...LINK, state: 'refused', problem: { level: 'error', text: 'upgrade oh' } }],
    runningCount: 0,
  });
  assert.equal(refused.text, '$(error) oh: version mismatch');
  assert.equal(refused.level, 'error');
});
