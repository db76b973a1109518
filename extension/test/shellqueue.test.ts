// The run queue's rule (issue 18 item 3): the mirror of src/oh/protocol/shellqueue.py.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { left, place, queueFullMessage, Waiters, waitedOutMessage } from '../src/shellqueue';

test('place: run while a shell is free and nobody waits, then wait, then busy when the line is full', () => {
  const table: Array<[number, number, number, number, string]> = [
    [0, 8, 0, 64, 'run'],
    [7, 8, 0, 64, 'run'],
    [8, 8, 0, 64, 'wait'],
    [3, 8, 1, 64, 'wait'], // someone waits already: no overtaking
    [8, 8, 63, 64, 'wait'],
    [8, 8, 64, 64, 'busy'],
    [1, 1, 0, 0, 'busy'],
  ];
  for (const [inUse, max, waiting, limit, want] of table)
    assert.equal(place(inUse, max, waiting, limit), want, `${inUse}/${max} ${waiting}/${limit}`);
});

test('left and the texts', () => {
  assert.equal(left(undefined, 3), undefined);
  assert.equal(left(10, 2.5), 7.5);
  assert.match(queueFullMessage('make', 8, 8, 64), /NOT executed: 8 command\(s\).*max_shells = 8.*64 more wait/);
  assert.equal(
    waitedOutMessage('echo hi', 0.30012, 1),
    'Your command "echo hi" was NOT executed: it waited 0.3 s for one of this agent\'s 1 shells (max_shells) to come free, which used up its timeout. Send it again with a longer timeout, or wait for the running commands first.',
  );
});

test('Waiters: notify wakes every waiter; a timer bounds each wait', async () => {
  const w = new Waiters();
  let woke = 0;
  const a = w.next(10_000).then(() => woke++);
  const b = w.next(10_000).then(() => woke++);
  w.notify();
  await Promise.all([a, b]);
  assert.equal(woke, 2);
  await w.next(5); // nobody notifies: the timer ends it
});
