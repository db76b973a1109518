/**
 * Background jobs of one agent shell in the extension (docs/protocol.md §3.8): their records, states,
 * de-duplication, retention, and their whole output in a bounded spool with absolute byte offsets.
 * The `job` action's ops (list, poll, wait, output, cancel) are answered here too.
 *
 * No `vscode`: the terminals that run the jobs are ./executors/run.ts's business; this module only
 * needs callbacks (cancel a job, list the running foreground commands), so it is unit-tested with
 * node --test. Same numbers and wording as the local runtime (src/oh/runtimes/local/jobs.py).
 */
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ToolError } from './protocol';

export const SPOOL_CAP = 16 * 1024 * 1024; // bytes of output kept per job (the newest ones)
export const OUTPUT_LIMIT = 1024 * 1024; // default bytes per `job output` answer
export const OUTPUT_MAX = 16 * 1024 * 1024; // largest `limit` honoured
export const POLL_TAIL = 2000;
export const WAIT_TAIL = 30000;
export const CANCEL_GRACE_MS = 2000; // between C-c and killing the job's process group
export const MAX_FINISHED = 200; // finished jobs kept per shell besides the retention time
export const DEFAULT_RETENTION_S = 3600;
export const DEFAULT_WAIT_S = 240;

export type JobState = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'LOST';

/** What de-duplication compares: a hash, so env values (secrets) are never kept in clear. */
export function jobFingerprint(command: string, cwd: string, env: Record<string, string> | undefined): string {
  const h = createHash('sha256');
  h.update(command + '\0' + cwd + '\0');
  for (const name of Object.keys(env ?? {}).sort()) h.update(name + '\0' + env![name] + '\0');
  return h.digest('hex');
}

/** Bytes to skip so `b` starts on a UTF-8 character (not on a continuation byte). */
function charStart(b: Buffer): number {
  let i = 0;
  while (i < b.length && i < 4 && (b[i] & 0xc0) === 0x80) i++;
  return i;
}

/** Length of `b` without a UTF-8 sequence cut at its end. */
function completePrefix(b: Buffer): number {
  for (let back = 1; back <= Math.min(4, b.length); back++) {
    const c = b[b.length - back];
    if ((c & 0xc0) === 0x80) continue;
    const need = (c & 0xe0) === 0xc0 ? 2 : (c & 0xf0) === 0xe0 ? 3 : (c & 0xf8) === 0xf0 ? 4 : 1;
    return need > back ? b.length - back : b.length;
  }
  return b.length;
}

/** A private (0700) directory for the spools of this extension host; files in it are 0600. */
export function privateSpoolDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'oh-vscode-jobs-'));
}

/** Append-only UTF-8 output of one job with absolute byte offsets, bounded by `cap` (newest kept). */
export class Spool {
  private fd: number;
  /** Absolute offset of the file's first byte (what was dropped before it). */
  base = 0;
  size = 0;
  error: string | null = null;
  readonly cap: number;

  constructor(
    readonly file: string,
    cap = SPOOL_CAP,
  ) {
    this.cap = Math.max(cap, 4096);
    this.fd = fs.openSync(
      file,
      fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_APPEND,
      0o600,
    );
  }

  get total(): number {
    return this.base + this.size;
  }

  write(text: string): void {
    if (this.fd < 0 || !text) return;
    const data = Buffer.from(text, 'utf8');
    try {
      let off = 0;
      while (off < data.length) off += fs.writeSync(this.fd, data, off, data.length - off);
      this.size += data.length;
      if (this.size > this.cap) this.compact();
    } catch (e) {
      // A full disk must not break the job's terminal: the spool stops, the record says why.
      this.error = `output spool stopped: ${(e as Error).message}`;
      try {
        this.size = fs.fstatSync(this.fd).size;
      } catch {
        /* closed */
      }
    }
  }

  private compact(): void {
    const keep = Math.floor(this.cap / 2);
    const b = Buffer.alloc(keep);
    const n = fs.readSync(this.fd, b, 0, keep, this.size - keep);
    let data = b.subarray(0, n);
    data = data.subarray(charStart(data));
    fs.ftruncateSync(this.fd, 0);
    fs.writeSync(this.fd, data);
    this.base += this.size - data.length;
    this.size = data.length;
  }

  /** Text from absolute `offset` (moved up to what is still kept), at most `limit` bytes, never splitting a character. */
  read(offset: number, limit: number): { text: string; start: number; next: number } {
    const start = Math.max(offset, this.base);
    if (this.fd < 0 || start >= this.total || limit <= 0) {
      const at = Math.min(start, this.total);
      return { text: '', start: at, next: at };
    }
    const len = Math.min(limit, this.total - start);
    const b = Buffer.alloc(len);
    const n = fs.readSync(this.fd, b, 0, len, start - this.base);
    let data = b.subarray(0, n);
    const skip = charStart(data); // an offset inside a character (given by hand): start at the next one
    data = data.subarray(skip);
    if (start + skip + data.length < this.total) data = data.subarray(0, completePrefix(data));
    return { text: data.toString('utf8'), start: start + skip, next: start + skip + data.length };
  }

  tail(nbytes: number): string {
    return nbytes > 0 ? this.read(Math.max(this.total - nbytes, 0), nbytes).text : '';
  }

  close(): void {
    if (this.fd >= 0) {
      try {
        fs.closeSync(this.fd);
      } catch {
        /* already closed */
      }
      this.fd = -1;
    }
    try {
      fs.rmSync(this.file, { force: true });
    } catch {
      /* its directory is gone already */
    }
  }
}

function isoLocal(ms: number | null): string | null {
  if (ms === null) return null;
  // Local time without offset, seconds precision: what the local runtime writes (Python isoformat).
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export interface JobRecord {
  job_id: string;
  command: string;
  cwd: string;
  state: JobState;
  exit_code: number | null;
  pid: number;
  background: boolean;
  started_at: string | null;
  finished_at: string | null;
  duration_s: number;
  output_bytes: number;
  env_names: string[];
  warning?: string;
}

export class Job {
  state: JobState = 'RUNNING';
  exitCode: number | null = null;
  pid = -1;
  cancelled = false;
  readonly startedAt = Date.now();
  finishedAt: number | null = null;
  readonly envNames: string[];
  private doneWaiters: Array<() => void> = [];
  private growWaiters: Array<() => void> = [];

  constructor(
    readonly jobId: string,
    readonly command: string,
    readonly cwd: string,
    env: Record<string, string> | undefined,
    readonly fingerprint: string,
    readonly spool: Spool,
  ) {
    this.envNames = Object.keys(env ?? {}).sort();
  }

  onOutput(text: string): void {
    this.spool.write(text);
    this.wake();
  }

  private wake(): void {
    const ws = this.growWaiters;
    this.growWaiters = [];
    for (const w of ws) w();
  }

  finish(state: JobState, exitCode: number | null): void {
    if (this.state !== 'RUNNING') return;
    this.state = state;
    this.exitCode = exitCode;
    this.finishedAt = Date.now();
    const ws = this.doneWaiters;
    this.doneWaiters = [];
    for (const w of ws) w();
    this.wake();
  }

  /** Resolves when the job ends, or after `ms` (or when `signal` aborts). */
  waitDone(ms: number, signal?: AbortSignal): Promise<void> {
    return this.waitFor(this.doneWaiters, () => this.state !== 'RUNNING', ms, signal);
  }

  /** Resolves when there is output past `offset`, the job ends, or `ms` passes. */
  async waitOutput(offset: number, ms: number, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.state === 'RUNNING' && this.spool.total <= offset && Date.now() < deadline && !signal?.aborted) {
      await this.waitFor(this.growWaiters, () => false, deadline - Date.now(), signal);
    }
  }

  private waitFor(list: Array<() => void>, already: () => boolean, ms: number, signal?: AbortSignal): Promise<void> {
    if (already() || ms <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      list.push(done);
    });
  }

  record(now = Date.now()): JobRecord {
    const end = this.finishedAt ?? now;
    const r: JobRecord = {
      job_id: this.jobId,
      command: this.command,
      cwd: this.cwd,
      state: this.state,
      exit_code: this.exitCode,
      pid: this.pid,
      background: true,
      started_at: isoLocal(this.startedAt),
      finished_at: isoLocal(this.finishedAt),
      duration_s: Math.round(end - this.startedAt) / 1000,
      output_bytes: this.spool.total,
      env_names: this.envNames,
    };
    if (this.spool.error) r.warning = this.spool.error;
    return r;
  }
}

/** A foreground command still running, as `job list` shows it (background: false). */
export interface ForegroundRecord {
  job_id: string;
  command: string;
  cwd: string | null;
  state: 'RUNNING';
  exit_code: null;
  pid: number;
  background: false;
  duration_s: number;
}

export interface JobAnswer {
  op: string;
  content: string;
  extras: Record<string, unknown>;
}

export interface JobOpOptions {
  /** The action's timeout (s), for `wait`. */
  timeoutS?: number;
  signal?: AbortSignal;
  /** Running foreground commands of the same agent shell, for `list`. */
  foreground?: () => ForegroundRecord[];
  /** Interrupts the job's process group (C-c / SIGINT). */
  interrupt: (job: Job) => void;
  /** Kills the job's process group and every descendant found. */
  kill: (job: Job) => Promise<void>;
  /** Whether `jobId` is a running foreground command (for a clearer NO_JOB message). */
  isForeground?: (jobId: string) => boolean;
  /** Grace between C-c and the kill (tests shorten it). */
  graceMs?: number;
}

function lineOf(r: JobRecord | ForegroundRecord): string {
  const code = r.exit_code === null ? '' : ` exit ${r.exit_code}`;
  return `${r.job_id}  ${r.state}${code}  ${r.background ? 'background' : 'foreground'}  ${r.command.slice(0, 120)}`;
}

/** The background jobs of one agent shell. */
export class JobTable {
  readonly jobs = new Map<string, Job>();

  constructor(private readonly retentionS: () => number = () => DEFAULT_RETENTION_S) {}

  add(job: Job): void {
    this.jobs.set(job.jobId, job);
  }

  /** A running job with the same command, directory and environment (de-duplication), if any. */
  duplicate(fingerprint: string): Job | undefined {
    for (const j of this.jobs.values()) if (j.state === 'RUNNING' && j.fingerprint === fingerprint) return j;
    return undefined;
  }

  running(): Job[] {
    return [...this.jobs.values()].filter((j) => j.state === 'RUNNING');
  }

  /** Drops finished jobs older than the retention time, and the oldest beyond MAX_FINISHED. */
  purge(now = Date.now()): void {
    const finished = [...this.jobs.values()]
      .filter((j) => j.finishedAt !== null)
      .sort((a, b) => a.finishedAt! - b.finishedAt!);
    const excess = finished.length - MAX_FINISHED;
    finished.forEach((j, i) => {
      if (i < excess || now - j.finishedAt! > this.retentionS() * 1000) {
        this.jobs.delete(j.jobId);
        j.spool.close();
      }
    });
  }

  /** Every job LOST (their backend went away) and their spools deleted. */
  closeAll(): Job[] {
    const lost: Job[] = [];
    for (const j of this.jobs.values()) {
      if (j.state === 'RUNNING') {
        j.finish('LOST', null);
        lost.push(j);
      }
      j.spool.close();
    }
    this.jobs.clear();
    return lost;
  }

  /** Answers one `job` action (op list, poll, wait, output, cancel). */
  async op(args: Record<string, unknown>, o: JobOpOptions): Promise<JobAnswer> {
    this.purge();
    const op = String(args.op);
    if (op === 'list') {
      const records: Array<JobRecord | ForegroundRecord> = [...this.jobs.values()].map((j) => j.record());
      records.push(...(o.foreground?.() ?? []));
      return { op, content: records.length ? records.map(lineOf).join('\n') : 'No jobs.', extras: { jobs: records } };
    }
    const jid = String(args.job_id ?? '');
    const job = this.jobs.get(jid);
    if (!job) {
      if (o.isForeground?.(jid)) {
        throw new ToolError(
          `${jid} is a foreground command, not a background job: follow it with run (an empty command, or is_input; ` +
            `"C-c" interrupts it) and args.job_id "${jid}".`,
          'NO_JOB',
        );
      }
      throw new ToolError(
        `No job ${jid} in this agent's shell: the id is unknown, or the job finished more than job_retention ` +
          `(${this.retentionS()} s) ago. List the jobs with the job action op list.`,
        'NO_JOB',
      );
    }
    const tailArg = typeof args.tail === 'number' ? args.tail : undefined;
    if (op === 'poll') return { op, content: job.spool.tail(tailArg ?? POLL_TAIL), extras: { job: job.record() } };
    if (op === 'wait') {
      await job.waitDone((o.timeoutS ?? DEFAULT_WAIT_S) * 1000, o.signal);
      return {
        op,
        content: job.spool.tail(tailArg ?? WAIT_TAIL),
        extras: { job: job.record(), timed_out: job.state === 'RUNNING' },
      };
    }
    if (op === 'output') {
      const offset = typeof args.offset === 'number' ? args.offset : 0;
      const limit = typeof args.limit === 'number' ? Math.min(args.limit, OUTPUT_MAX) : OUTPUT_LIMIT;
      const wait = typeof args.wait === 'number' ? args.wait : 0;
      if (wait > 0) await job.waitOutput(offset, Math.min(wait, DEFAULT_WAIT_S) * 1000, o.signal);
      const r = job.spool.read(offset, limit);
      const total = job.spool.total;
      return {
        op,
        content: r.text,
        extras: {
          job: job.record(),
          offset: r.start,
          next_offset: r.next,
          size: total,
          dropped: job.spool.base,
          eof: job.state !== 'RUNNING' && r.next >= total,
        },
      };
    }
    if (op === 'cancel') return this.cancel(job, o);
    throw new ToolError(
      `args.op must be one of list, poll, wait, output, cancel (got ${op.slice(0, 40)}).`,
      'BAD_REQUEST',
    );
  }

  private async cancel(job: Job, o: JobOpOptions): Promise<JobAnswer> {
    if (job.state !== 'RUNNING') {
      return {
        op: 'cancel',
        content: `Job ${job.jobId} already ended (${job.state}); nothing to cancel.`,
        extras: { job: job.record() },
      };
    }
    job.cancelled = true;
    const grace = o.graceMs ?? CANCEL_GRACE_MS;
    // C-c first (the program may clean up), twice: one landing while bash still reads the command line is lost.
    for (let i = 0; i < 2 && job.state === 'RUNNING'; i++) {
      o.interrupt(job);
      await job.waitDone(grace / 2);
    }
    if (job.state === 'RUNNING') {
      await o.kill(job);
      await job.waitDone(5000);
    }
    job.finish('CANCELLED', job.exitCode); // still running after the kill: it is cancelled all the same
    return {
      op: 'cancel',
      content: `Job ${job.jobId} cancelled (exit code ${job.exitCode}).`,
      extras: { job: job.record() },
    };
  }
}
