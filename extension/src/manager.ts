/**
 * Decides which backends this window talks to, and keeps those connections alive.
 *
 * On demand, never before: nothing connects until a live session file targets one of this window's
 * folders (or the user asks through the command / URI handler, which triggers the same scan). A
 * session stays connected while its file exists and its pid lives; drops are retried with backoff;
 * a token rotation (close 4001) re-reads the file and reconnects at once; a backend that says it is
 * shutting down (1001) is not retried, so `oh stop` ends with no new connection attempt.
 *
 * No `vscode` import: the window's folders, the action handler and the UI hooks are injected.
 */

import { Backoff } from './backoff';
import { ActionHandler, backendKey, CloseInfo, describeClose, EditorConnection, RegisteredInfo } from './connection';
import { DirectoryWatcher } from './dirwatch';
import { Close, JsonObject } from './protocol';
import { UnsafePath } from './owned';
import { problemFromRefusal, problemFromRegistered, VersionProblem } from './versions';
import {
  pidAlive as realPidAlive,
  readSession,
  readSessions,
  realpathOrSelf,
  SessionInfo,
  sessionTargets,
} from './session';

export interface ManagerDeps {
  dir: string;
  /** Real paths of this window's file-system workspace folders. */
  folders: () => Promise<string[]>;
  registerFrame: (session: SessionInfo) => JsonObject;
  handler: ActionHandler;
  log: (line: string) => void;
  onStatus?: (status: ConnectionStatus[]) => void;
  /** Something the user should see (protocol mismatch...). */
  warn?: (message: string) => void;
  /** This extension's version: compared with the backend's in `registered` (versions.ts). */
  extensionVersion?: string;
  pidAlive?: (pid: number, startTime?: number) => boolean;
  /** The backend process behind a session is gone (stopped, killed): its terminals are orphans now. */
  onBackendGone?: (backend: string, session: SessionInfo) => void;
  pollMs?: number;
  backoff?: () => Backoff;
}

export interface ConnectionStatus {
  instanceId: string;
  port: number;
  workspace: string;
  state: 'connecting' | 'connected' | 'waiting' | 'refused';
  editorId?: string;
  /** oh and this extension are different releases ('warn') or cannot talk ('error', state 'refused'). */
  problem?: VersionProblem;
}

interface Entry {
  id: string;
  session: SessionInfo;
  conn: EditorConnection | null;
  timer: NodeJS.Timeout | null;
  backoff: Backoff;
  /** Retrying cannot help until the session file changes (shutting down, replaced, refused). */
  ended: boolean;
  /** The user disconnected; only an explicit connect (or a new backend) brings it back. */
  suppressed: boolean;
  /** Identity of the backend process behind the file: a new one clears `ended`. */
  fingerprint: string;
  /** The last failed attempt's reason: the same failure every 5 s is logged once. */
  lastFailure: string;
  /** The version verdict for this backend (versions.ts); notified once per backend process. */
  problem?: VersionProblem;
  warned?: string;
}

const fingerprint = (s: SessionInfo) => `${s.pid}:${s.start_time ?? ''}:${s.port}`;

export class SessionManager {
  private readonly entries = new Map<string, Entry>();
  private watcher: DirectoryWatcher | null = null;
  private scanning: Promise<void> | null = null;
  private rescan = false;
  private disposed = false;
  private readonly pidAlive: (pid: number, startTime?: number) => boolean;
  /** Trust-rule refusals already logged and still current: each is logged once, not every poll. */
  private loggedRefusals = new Set<string>();

  constructor(private readonly deps: ManagerDeps) {
    this.pidAlive = deps.pidAlive ?? realPidAlive;
  }

  /** Activation: a watcher only. The first scan may connect if a session is already waiting. */
  start(): void {
    this.watcher = new DirectoryWatcher(this.deps.dir, () => void this.scan(), this.deps.pollMs ?? 2000);
    this.watcher.start();
    void this.scan();
  }

  /** The registered connections (one per backend this window serves), for requests of our own. */
  connections(): EditorConnection[] {
    return [...this.entries.values()].flatMap((e) =>
      e.conn?.isRegistered && !e.suppressed && !e.ended ? [e.conn] : [],
    );
  }

  status(): ConnectionStatus[] {
    const out: ConnectionStatus[] = [];
    for (const e of this.entries.values()) {
      if (e.ended && e.problem?.level === 'error' && !e.suppressed) {
        out.push({
          instanceId: e.id,
          port: e.session.port,
          workspace: e.session.workspace,
          state: 'refused',
          problem: e.problem,
        });
        continue;
      }
      if (e.suppressed || e.ended) continue;
      out.push({
        instanceId: e.id,
        port: e.session.port,
        workspace: e.session.workspace,
        state: e.conn?.isRegistered ? 'connected' : e.conn ? 'connecting' : 'waiting',
        editorId: e.conn?.editorId,
        problem: e.problem,
      });
    }
    return out;
  }

  /** Remembers the verdict; the user is notified once per backend process and verdict (not on every reconnect). */
  private setProblem(e: Entry, problem: VersionProblem | undefined): void {
    e.problem = problem;
    if (!problem) return;
    this.deps.log(problem.text);
    const key = `${e.fingerprint}:${problem.text}`;
    if (e.warned !== key) {
      e.warned = key;
      this.deps.warn?.(problem.text);
    }
  }

  private emitStatus(): void {
    this.deps.onStatus?.(this.status());
  }

  /** Re-reads the directory; serialised so overlapping watcher events cannot race each other. */
  scan(): Promise<void> {
    if (this.scanning) {
      this.rescan = true;
      return this.scanning;
    }
    this.scanning = (async () => {
      try {
        do {
          this.rescan = false;
          await this.scanOnce();
        } while (this.rescan && !this.disposed);
      } catch (e) {
        this.deps.log(`session scan failed: ${String(e)}`);
      } finally {
        this.scanning = null;
      }
    })();
    return this.scanning;
  }

  /** Sessions whose file exists, whose pid lives and whose workspace is in this window. */
  async targetingSessions(): Promise<{ targeting: SessionInfo[]; others: SessionInfo[]; refused: string[] }> {
    const folders = await this.deps.folders();
    const refused: string[] = [];
    const files = await readSessions(this.deps.dir, (r) => refused.push(this.logRefusal(r)));
    const targeting: SessionInfo[] = [];
    const others: SessionInfo[] = [];
    for (const { session } of files) {
      if (!this.pidAlive(session.pid, session.start_time)) continue;
      const real = await realpathOrSelf(session.workspace);
      (folders.length && sessionTargets(real, folders) ? targeting : others).push(session);
    }
    return { targeting, others, refused };
  }

  /** A directory or session file another user could control (src/owned.ts): logged once while it lasts. */
  private logRefusal(r: UnsafePath): string {
    if (!this.loggedRefusals.has(r.message)) {
      this.loggedRefusals.add(r.message);
      this.deps.log(`not connecting: ${r.message}`);
    }
    return r.message;
  }

  private async scanOnce(): Promise<void> {
    if (this.disposed) return;
    const { targeting, refused } = await this.targetingSessions();
    // Forget refusals that are gone (fixed, file removed), so a new one at the same path is logged again.
    this.loggedRefusals = new Set(refused);
    const seen = new Set<string>();
    for (const s of targeting) {
      seen.add(s.instance_id);
      let e = this.entries.get(s.instance_id);
      if (!e) {
        e = {
          id: s.instance_id,
          session: s,
          conn: null,
          timer: null,
          backoff: this.deps.backoff?.() ?? new Backoff(),
          ended: false,
          suppressed: false,
          fingerprint: fingerprint(s),
          lastFailure: '',
        };
        this.entries.set(s.instance_id, e);
        this.deps.log(`session ${s.instance_id} found for ${s.workspace} (port ${s.port}, pid ${s.pid})`);
      } else if (fingerprint(s) !== e.fingerprint) {
        // Same instance id, another backend process: whatever ended the old one does not apply.
        e.fingerprint = fingerprint(s);
        e.ended = false;
        e.suppressed = false;
      }
      e.session = s;
      this.ensure(e);
    }
    for (const e of [...this.entries.values()]) {
      if (!seen.has(e.id)) this.drop(e, 'session ended (file removed, backend gone or workspace no longer open here)');
    }
    this.emitStatus();
  }

  private ensure(e: Entry): void {
    if (e.ended || e.suppressed || e.conn || e.timer || this.disposed) return;
    this.connect(e);
  }

  private connect(e: Entry): void {
    const s = e.session;
    if (!e.lastFailure)
      this.deps.log(`connecting to oh ${s.instance_id} at ${s.host}:${s.port} (workspace ${s.workspace})`);
    const conn: EditorConnection = new EditorConnection({
      session: s,
      registerFrame: this.deps.registerFrame(s),
      handler: this.deps.handler,
      log: (line) => this.deps.log(`[${s.instance_id}] ${line}`),
      onRegistered: (info) => this.onRegistered(e, conn, info),
      onClose: (info) => this.onClose(e, conn, info),
    });
    e.conn = conn;
    this.emitStatus();
  }

  private onRegistered(e: Entry, conn: EditorConnection, info: RegisteredInfo): void {
    if (e.conn !== conn) return;
    e.lastFailure = '';
    e.backoff.reset();
    const roots = info.allowed_roots ? `, allowed roots ${info.allowed_roots.join(', ')}` : '';
    this.deps.log(
      `connected to oh ${e.id} on port ${e.session.port} as editor ${info.editor_id} (backend workspace ${info.workspace}${roots})`,
    );
    this.setProblem(e, problemFromRegistered(info.raw ?? {}, this.deps.extensionVersion ?? ''));
    this.emitStatus();
  }

  private onClose(e: Entry, conn: EditorConnection, info: CloseInfo): void {
    if (e.conn !== conn) return; // a connection we already replaced or dropped
    e.conn = null;
    const why = describeClose(info);
    if (info.registered) {
      this.deps.log(`disconnected from oh ${e.id}: ${why}`);
      e.lastFailure = '';
    } else if (why !== e.lastFailure) {
      this.deps.log(
        `could not connect to oh ${e.id}: ${why}${e.lastFailure ? '' : ' (retrying while the session lasts)'}`,
      );
      e.lastFailure = why;
    }
    if (this.disposed || !this.entries.has(e.id) || e.suppressed) {
      this.emitStatus();
      return;
    }
    const refusal = info.refusal?.error_id;
    if (info.code === Close.GOING_AWAY || refusal === 'WRONG_SESSION' || refusal === 'PROTOCOL_MISMATCH') {
      // Shutting down, or a registration no retry can fix.
      e.ended = true;
      if (info.code === 1001) this.backendGone(e.session);
      if (refusal === 'PROTOCOL_MISMATCH') this.setProblem(e, problemFromRefusal(info.refusal?.message ?? ''));
      this.emitStatus();
      return;
    }
    if (info.code === Close.TOKEN_ROTATED) {
      // Token rotated: the backend rewrote its session file; read the new token and come back at once.
      this.retry(e, 0);
      return;
    }
    this.retry(e, e.backoff.next());
  }

  /** Reconnects after `delayMs` if the session file still exists, its pid lives and it still targets us. */
  private retry(e: Entry, delayMs: number): void {
    if (e.timer) clearTimeout(e.timer);
    this.emitStatus();
    e.timer = setTimeout(async () => {
      e.timer = null;
      if (this.disposed || this.entries.get(e.id) !== e || e.suppressed || e.ended || e.conn) return;
      const fresh = await readSession(this.deps.dir, e.id, (r) => this.logRefusal(r));
      if (!fresh || !this.pidAlive(fresh.pid, fresh.start_time)) {
        this.drop(e, 'session ended');
        this.emitStatus();
        return;
      }
      const folders = await this.deps.folders();
      if (!sessionTargets(await realpathOrSelf(fresh.workspace), folders)) {
        this.drop(e, 'the session no longer targets this window');
        this.emitStatus();
        return;
      }
      if (this.entries.get(e.id) !== e || e.conn || e.suppressed || e.ended) return;
      e.session = fresh;
      this.connect(e);
    }, delayMs);
  }

  private backendGone(s: SessionInfo): void {
    try {
      this.deps.onBackendGone?.(backendKey(s), s);
    } catch (err) {
      this.deps.log(`cleaning up after oh ${s.instance_id} failed: ${String(err)}`);
    }
  }

  private drop(e: Entry, why: string): void {
    if (!this.disposed && !this.pidAlive(e.session.pid, e.session.start_time)) this.backendGone(e.session);
    if (e.timer) clearTimeout(e.timer);
    e.timer = null;
    this.entries.delete(e.id);
    if (e.conn) {
      this.deps.log(`disconnecting from oh ${e.id}: ${why}`);
      const c = e.conn;
      e.conn = null;
      c.close(why.slice(0, 100));
    } else if (!e.ended && !e.suppressed) {
      this.deps.log(`forgetting oh ${e.id}: ${why}`);
    }
  }

  /**
   * The "Connect" command and the URI handler: forget earlier user disconnects and ended states,
   * scan now, and connect without waiting for a backoff timer. With `instanceId`, only that session.
   */
  async connectNow(
    instanceId?: string,
  ): Promise<{ matched: SessionInfo[]; elsewhere: SessionInfo[]; refused: string[] }> {
    const { targeting, others, refused } = await this.targetingSessions();
    const matched = targeting.filter((s) => !instanceId || s.instance_id === instanceId);
    const elsewhere = others.filter((s) => !instanceId || s.instance_id === instanceId);
    for (const s of matched) {
      const e = this.entries.get(s.instance_id);
      if (!e) continue;
      e.suppressed = false;
      e.ended = false;
      e.backoff.reset();
      if (e.timer) {
        clearTimeout(e.timer);
        e.timer = null;
      }
    }
    await this.scan();
    return { matched, elsewhere, refused };
  }

  /** The "Disconnect" command: close everything and stay away until asked again. */
  disconnectAll(): number {
    let n = 0;
    for (const e of this.entries.values()) {
      if (e.timer) clearTimeout(e.timer);
      e.timer = null;
      if (!e.suppressed) n++;
      e.suppressed = true;
      if (e.conn) {
        const c = e.conn;
        e.conn = null;
        this.deps.log(`disconnecting from oh ${e.id} (asked by the user)`);
        c.close('disconnected by the user');
      }
    }
    this.emitStatus();
    return n;
  }

  /** Workspace folders changed: registrations carry the folder list, so reconnect everything. */
  async foldersChanged(): Promise<void> {
    for (const e of this.entries.values()) {
      if (e.timer) clearTimeout(e.timer);
      e.timer = null;
      if (e.conn) {
        const c = e.conn;
        e.conn = null; // its close event is ignored: scan() decides whether to come back
        this.deps.log(`disconnecting from oh ${e.id}: workspace folders changed`);
        c.close('workspace folders changed');
      }
    }
    await this.scan();
  }

  dispose(): void {
    this.disposed = true;
    this.watcher?.dispose();
    for (const e of [...this.entries.values()]) this.drop(e, 'extension deactivated');
  }
}
