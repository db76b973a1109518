// The job table of the extension (src/jobs.ts, docs/protocol.md §3.8): spool offsets and bounds on a real
// file system, de-duplication, retention, and the `job` ops (list, poll, wait, output, cancel).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { Job, jobFingerprint, JobTable, MAX_FINISHED, privateSpoolDir, Spool } from '../src/jobs';
import { ToolError } from '../src/protocol';

let dir: string;
let n = 0;
beforeEach(() => {
  dir = privateSpoolDir();
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function newJob(id: string, command = 'sleep 1', env?: Record<string, string>, cap?: number): Job {
  const spool = new Spool(path.join(dir, `${id}-${n++}.out`), cap);
  return new Job(id, command, '/w', env, jobFingerprint(command, '/w', env), spool);
}

const noKill = { interrupt: () => {}, kill: async () => {} };

test('the spool directory is private (0700) and a spool file is 0600', () => {
  assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
  const s = new Spool(path.join(dir, 'a.out'));
  assert.equal(fs.statSync(s.file).mode & 0o777, 0o600);
  s.close();
});

test('spool: absolute offsets survive compaction; dropped bytes are reported; characters are never split', () => {
  const s = new Spool(path.join(dir, 'b.out'), 4096);
  s.write('é'.repeat(1000)); // 2000 bytes
  assert.equal(s.total, 2000);
  const part = s.read(1, 10); // offset 1 is inside a character: starts at the next one
  assert.equal(part.start, 2);
  assert.equal(part.text, 'éééé');
  assert.equal(part.next, 10);
  s.write('x'.repeat(3000)); // 5000 > cap: the oldest half is dropped
  assert.equal(s.total, 5000);
  assert.ok(s.base > 0 && s.size <= 4096, `base ${s.base} size ${s.size}`);
  const from0 = s.read(0, 100000);
  assert.equal(from0.start, s.base, 'a read from a dropped offset starts at what is kept');
  assert.equal(from0.next, 5000);
  assert.equal(from0.text, 'x'.repeat(2048), 'the newest half of the cap is kept');
  assert.equal(s.base, 5000 - 2048);
  assert.equal(s.tail(5), 'xxxxx');
  const cut = s.read(4990, 4);
  assert.deepEqual([cut.start, cut.next, cut.text], [4990, 4994, 'xxxx']);
  assert.deepEqual(s.read(5000, 10), { text: '', start: 5000, next: 5000 });
  s.close();
  assert.equal(fs.existsSync(s.file), false, 'closing deletes the spool');
});

test('fingerprint: same command, directory and env match; env values are hashed, not kept', () => {
  const a = jobFingerprint('make', '/w', { TOKEN: 's3cret' });
  assert.equal(a, jobFingerprint('make', '/w', { TOKEN: 's3cret' }));
  assert.notEqual(a, jobFingerprint('make', '/w', { TOKEN: 'other' }));
  assert.notEqual(a, jobFingerprint('make', '/x', { TOKEN: 's3cret' }));
  assert.ok(!a.includes('s3cret'));
  const job = newJob('j1', 'make', { TOKEN: 's3cret' });
  assert.deepEqual(job.record().env_names, ['TOKEN']);
  assert.ok(!JSON.stringify(job.record()).includes('s3cret'));
  job.spool.close();
});

test('duplicate finds only a running job with the same fingerprint', () => {
  const t = new JobTable();
  const a = newJob('j1', 'make');
  t.add(a);
  assert.equal(t.duplicate(a.fingerprint), a);
  a.finish('SUCCEEDED', 0);
  assert.equal(t.duplicate(a.fingerprint), undefined);
  t.closeAll();
});

test('list, poll, output with offsets and eof, wait with exit code and timed_out', async () => {
  const t = new JobTable();
  const job = newJob('j7', 'build');
  t.add(job);
  job.onOutput('line 1\n');
  const listed = await t.op({ op: 'list' }, { ...noKill, foreground: () => [] });
  assert.match(listed.content, /^j7 {2}RUNNING {2}background {2}build$/);
  assert.equal((listed.extras.jobs as unknown[]).length, 1);
  const poll = await t.op({ op: 'poll', job_id: 'j7' }, noKill);
  assert.equal(poll.content, 'line 1\n');
  const waited = await t.op({ op: 'wait', job_id: 'j7' }, { ...noKill, timeoutS: 0.05 });
  assert.equal(waited.extras.timed_out, true);
  const out1 = await t.op({ op: 'output', job_id: 'j7', offset: 0, limit: 4 }, noKill);
  assert.deepEqual([out1.content, out1.extras.offset, out1.extras.next_offset, out1.extras.eof], ['line', 0, 4, false]);
  // output with wait: returns as soon as there is output past the offset
  setTimeout(() => job.onOutput('line 2\n'), 30);
  const out2 = await t.op({ op: 'output', job_id: 'j7', offset: 7, wait: 10 }, noKill);
  assert.equal(out2.content, 'line 2\n');
  setTimeout(() => job.finish('FAILED', 3), 30);
  const done = await t.op({ op: 'wait', job_id: 'j7' }, { ...noKill, timeoutS: 10 });
  assert.equal(done.extras.timed_out, false);
  const rec = done.extras.job as Record<string, unknown>;
  assert.deepEqual([rec.state, rec.exit_code, rec.output_bytes], ['FAILED', 3, 14]);
  const tail = await t.op({ op: 'output', job_id: 'j7', offset: 7 }, noKill);
  assert.deepEqual([tail.content, tail.extras.eof, tail.extras.size, tail.extras.dropped], ['line 2\n', true, 14, 0]);
  t.closeAll();
});

test('list shows running foreground commands too', async () => {
  const t = new JobTable();
  const fg = {
    job_id: 'j2',
    command: 'pytest',
    cwd: '/w',
    state: 'RUNNING' as const,
    exit_code: null,
    pid: 5,
    background: false as const,
    duration_s: 1,
  };
  const listed = await t.op({ op: 'list' }, { ...noKill, foreground: () => [fg] });
  assert.equal(listed.content, 'j2  RUNNING  foreground  pytest');
  const empty = await new JobTable().op({ op: 'list' }, noKill);
  assert.equal(empty.content, 'No jobs.');
});

test('unknown ids are NO_JOB; a foreground command id says how to follow it', async () => {
  const t = new JobTable();
  await assert.rejects(
    t.op({ op: 'poll', job_id: 'j9' }, noKill),
    (e: unknown) => e instanceof ToolError && e.errorId === 'NO_JOB' && /op list/.test(e.message),
  );
  await assert.rejects(
    t.op({ op: 'wait', job_id: 'j3' }, { ...noKill, isForeground: (id) => id === 'j3' }),
    (e: unknown) => e instanceof ToolError && e.errorId === 'NO_JOB' && /foreground command/.test(e.message),
  );
});

test('cancel: C-c first; a job that ignores it is killed after the grace period', async () => {
  const t = new JobTable();
  const polite = newJob('j1');
  const stubborn = newJob('j2');
  t.add(polite);
  t.add(stubborn);
  const calls: string[] = [];
  const answer = await t.op(
    { op: 'cancel', job_id: 'j1' },
    {
      interrupt: (j) => (calls.push(`int ${j.jobId}`), j.finish('CANCELLED', 130)),
      kill: async (j) => void calls.push(`kill ${j.jobId}`),
      graceMs: 100,
    },
  );
  assert.equal(answer.content, 'Job j1 cancelled (exit code 130).');
  const answer2 = await t.op(
    { op: 'cancel', job_id: 'j2' },
    {
      interrupt: (j) => void calls.push(`int ${j.jobId}`),
      kill: async (j) => (calls.push(`kill ${j.jobId}`), j.finish('CANCELLED', 137)),
      graceMs: 100,
    },
  );
  assert.equal((answer2.extras.job as Record<string, unknown>).state, 'CANCELLED');
  assert.deepEqual(calls, ['int j1', 'int j2', 'int j2', 'kill j2']);
  const again = await t.op({ op: 'cancel', job_id: 'j1' }, noKill);
  assert.match(again.content, /already ended \(CANCELLED\)/);
  t.closeAll();
});

test('retention: finished jobs go after job_retention, and beyond MAX_FINISHED the oldest go', () => {
  let retention = 3600;
  const t = new JobTable(() => retention);
  const old = newJob('j1');
  t.add(old);
  old.finish('SUCCEEDED', 0);
  const running = newJob('j2');
  t.add(running);
  t.purge(Date.now() + 10_000);
  assert.ok(t.jobs.has('j1'));
  retention = 5;
  t.purge(Date.now() + 10_000);
  assert.ok(!t.jobs.has('j1') && t.jobs.has('j2'), 'a running job is never purged');
  assert.equal(fs.existsSync(old.spool.file), false);
  for (let i = 0; i < MAX_FINISHED + 3; i++) {
    const j = newJob(`j${100 + i}`);
    t.add(j);
    j.finish('SUCCEEDED', 0);
  }
  retention = 3600;
  t.purge();
  assert.equal([...t.jobs.values()].filter((j) => j.state !== 'RUNNING').length, MAX_FINISHED);
  assert.ok(!t.jobs.has('j100') && t.jobs.has(`j${100 + MAX_FINISHED + 2}`));
  const lost = t.closeAll();
  assert.deepEqual(
    lost.map((j) => j.state),
    ['LOST'],
  );
  assert.equal(t.jobs.size, 0);
});
