// Proposal (review) mode, the pure parts: what a proposal would make of a file (./src/review/proposal.ts)
// and the store that gives each proposal exactly one decision (./src/review/store.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EditHistory } from '../src/oheditor';
import { ToolError } from '../src/protocol';
import {
  acceptedNote,
  changeWord,
  reviewSummary,
  workspaceRelative,
  cleanReason,
  computeProposal,
  isProposal,
  plainForUi,
  rejectedMessage,
  staleMessage,
  timeoutMessage,
} from '../src/review/proposal';
import { ProposalStore } from '../src/review/store';

const none = () => undefined;

test('write and every edit command but view are proposals', () => {
  assert.ok(isProposal('write', { path: '/a', content: '' }));
  for (const c of ['create', 'str_replace', 'insert', 'undo_edit']) assert.ok(isProposal('edit', { command: c }), c);
  assert.ok(!isProposal('edit', { command: 'view' }));
  assert.ok(!isProposal('read', { path: '/a' }) && !isProposal('run', { command: 'ls' }));
});

test('str_replace and insert are computed on the current text without touching it', () => {
  const r = computeProposal(
    'edit',
    { command: 'str_replace', old_str: 'b = 2', new_str: 'b = 3' },
    '/w/f.py',
    '/w/f.py',
    'a = 1\nb = 2\n',
    none,
  );
  assert.equal(r.change?.after, 'a = 1\nb = 3\n');
  assert.equal(r.change?.before, 'a = 1\nb = 2\n');
  assert.match(r.change!.content, /has been edited/);
  const ins = computeProposal(
    'edit',
    { command: 'insert', insert_line: 0, new_str: '# top' },
    '/w/f.py',
    '/w/f.py',
    'a = 1\n',
    none,
  );
  assert.equal(ins.change?.after, '# top\na = 1\n');
  // The executors' refusals stay refusals (no proposal for an edit that cannot apply).
  assert.throws(
    () => computeProposal('edit', { command: 'str_replace', old_str: 'zz', new_str: 'y' }, '/w/f', '/w/f', 'abc', none),
    ToolError,
  );
  assert.throws(
    () => computeProposal('edit', { command: 'str_replace', old_str: 'a', new_str: 'b' }, '/w/f', '/w/f', null, none),
    /does not exist/,
  );
  assert.throws(
    () => computeProposal('edit', { command: 'create', file_text: 'x' }, '/w/f', '/w/f', 'there', none),
    /already exists/,
  );
});

test('write modes: overwrite, line range, append, create', () => {
  const w = (args: Record<string, unknown>, before: string | null) =>
    computeProposal('write', { path: '/w/f', ...args }, '/w/f', '/w/f', before, none);
  assert.equal(w({ content: 'new\n' }, 'old\n').change?.after, 'new\n');
  assert.equal(w({ content: 'B\n', start: 1, end: 2 }, 'a\nb\nc\n').change?.after, 'a\nB\nc\n');
  assert.equal(w({ content: 'more\n', mode: 'append' }, 'one\n').change?.after, 'one\nmore\n');
  assert.equal(w({ content: 'x', mode: 'create' }, null).change?.before, null);
  const exists = w({ content: 'x', mode: 'create' }, 'there');
  assert.equal(exists.change, null);
  assert.match(exists.content, /already exists; it was not changed/);
  // Same text: nothing to review.
  assert.equal(w({ content: 'same' }, 'same').change, null);
  // Only text changes can be shown as a diff in VS Code.
  assert.throws(
    () => w({ content: 'AAAA', encoding: 'base64' }, null),
    (e: unknown) => e instanceof ToolError && e.errorId === 'TOOL_UNSUPPORTED',
  );
});

test('undo_edit looks at the history without taking the entry', () => {
  const h = new EditHistory();
  h.push('/w/f', 'before\n');
  const r = computeProposal('edit', { command: 'undo_edit' }, '/w/f', '/w/f', 'after\n', (p) => h.peek(p));
  assert.equal(r.change?.after, 'before\n');
  assert.equal(h.size('/w/f'), 1);
  assert.throws(
    () => computeProposal('edit', { command: 'undo_edit' }, '/w/g', '/w/g', 'x', (p) => h.peek(p)),
    /No edit history/,
  );
});

test("the agent texts are the Python side's (src/oh/protocol/review.py)", () => {
  assert.equal(
    rejectedMessage('/w/a.txt', 'too long'),
    'The user rejected the proposed change to /w/a.txt; nothing was written. Take the reason into account before proposing another change. Reason: too long',
  );
  assert.ok(rejectedMessage('/w/a.txt', '').endsWith('Reason: (no reason given)'));
  assert.ok(staleMessage('/w/a.txt').endsWith('Reason: file changed since the proposal'));
  assert.ok(timeoutMessage('/w/a.txt', 600).includes('within 600 s (review mode)'));
  assert.ok(timeoutMessage('/w/a.txt', 1.5).includes('within 1.5 s'));
  assert.equal(acceptedNote('/w/a.txt'), '[Review mode: the user accepted this change to /w/a.txt.]');
  assert.equal(cleanReason('  why  '), 'why');
  assert.equal(cleanReason(42), '');
  assert.ok(cleanReason('x'.repeat(5000)).endsWith(' [...]'));
});

test('agent text in notifications cannot plant links or control characters', () => {
  assert.equal(
    plainForUi('[run](command:workbench.action.terminal.new)'),
    '[run] (command:workbench.action.terminal.new)',
  );
  assert.equal(plainForUi('a\u001b[2Jb\u202ec'), 'a\\x1b[2Jb\\u202ec');
});

test('a proposal gets exactly one decision; later ones are refused', async () => {
  let changes = 0;
  const store = new ProposalStore<string>(() => changes++);
  const { id, decision } = store.add('p', 60_000);
  assert.equal(store.size, 1);
  assert.deepEqual(
    store.list().map((p) => p.item),
    ['p'],
  );
  assert.ok(store.decide(id, { kind: 'rejected', reason: 'no' }));
  assert.ok(!store.decide(id, { kind: 'accepted' }));
  assert.deepEqual(await decision, { kind: 'rejected', reason: 'no' });
  assert.equal(store.size, 0);
  assert.equal(changes, 2);
});

test('no decision within the timeout ends the proposal as timeout', async () => {
  const store = new ProposalStore<string>();
  const { decision } = store.add('p', 5);
  assert.deepEqual(await decision, { kind: 'timeout' });
  assert.equal(store.size, 0);
});

test('a huge review_timeout does not fire at once (setTimeout overflow)', async () => {
  const store = new ProposalStore<string>();
  const { id, decision } = store.add('p', 1e12);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(store.size, 1);
  store.decide(id, { kind: 'accepted' });
  assert.deepEqual(await decision, { kind: 'accepted' });
});

test('an aborted action (backend cancel, editor disconnect) ends its proposal', async () => {
  const store = new ProposalStore<string>();
  const ctl = new AbortController();
  const { decision } = store.add('p', 60_000, ctl.signal);
  ctl.abort();
  assert.deepEqual(await decision, { kind: 'cancelled' });
  const pre = new AbortController();
  pre.abort();
  assert.deepEqual(await store.add('q', 60_000, pre.signal).decision, { kind: 'cancelled' });
  const a = store.add('a', 60_000);
  const b = store.add('b', 60_000);
  store.cancelAll();
  assert.deepEqual([await a.decision, await b.decision], [{ kind: 'cancelled' }, { kind: 'cancelled' }]);
});

test('review wording (issue 42): the change word, workspace-relative paths, one grouped summary', () => {
  assert.equal(changeWord('str_replace', false), 'edit');
  assert.equal(changeWord('insert', false), 'edit');
  assert.equal(changeWord('overwrite', true), 'create'); // a new file's tab no longer says "overwrite"
  assert.equal(changeWord('append', false), 'append');
  assert.equal(workspaceRelative('/home/u/proj/src/a.py', ['src', 'a.py']), 'src/a.py');
  assert.equal(workspaceRelative('/home/u/proj', []), '/home/u/proj');
  assert.equal(reviewSummary([]), undefined);
  const five = ['a', 'b', 'c', 'd', 'e'].map((f) => ({ agent: 'claude', word: 'edit', path: `${f}.txt` }));
  assert.equal(
    reviewSummary(five.slice(0, 1)),
    "1 change waits for your review: edit a.txt (by claude). Accept ✓ or reject ✕ in each diff's title bar.",
  );
  assert.equal(
    reviewSummary(five),
    "5 changes wait for your review: edit a.txt, edit b.txt, edit c.txt, +2 more (by claude). Accept ✓ or reject ✕ in each diff's title bar.",
  );
  assert.ok(!reviewSummary([{ agent: 'x\u202e', word: 'edit', path: 'a\nb' }])!.match(/[\u202e\n]/));
});
