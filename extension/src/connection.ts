/**
 * One WebSocket connection from this window to one `oh` backend's editor leg (docs/protocol.md §4).
 *
 * Registers, then receives actions and answers each with exactly one observation (`cause` = the
 * action's id, `id` = our own monotonic counter), many in flight. Bad frames never throw: they are
 * answered with a BAD_REQUEST error observation and the connection stays open. Reconnecting is not
 * this class's business: it reports how it ended and SessionManager decides.
 *
 * No `vscode` import: tests drive it against a real `ws` server.
 */

import WebSocket from 'ws';
import {
  Action,
  Close,
  decodeFrame,
  errorFrom,
  BINARY_BODY,
  errorObservation,
  isControlFrame,
  JsonObject,
  Observation,
  ORPHANED,
  packBinary,
  parseAction,
  ProtocolError,
  readId,
} from './protocol';
import { SessionInfo } from './session';

/** Which backend an action came from, and what it allows (the `registered` answer). */
export interface ActionContext {
  /** Identity of the backend process (instance id, pid, start time, port): terminals are keyed by it. */
  backend: string;
  instanceId: string;
  /** The backend's workspace (real path as it reported it), '' when unknown. */
  workspace: string;
  /** workspace + allowed_roots as the backend reported them; [] = unknown (use the window's folders). */
  roots: string[];
  /** Proposal mode (§3.11, `registered.review`): write/edit become proposals the user decides on. */
  review?: { timeoutSeconds: number };
  /** The backend's `max_shells` (terminals per agent shell, extra ones included) when its answer carries it. */
  maxShells?: number;
  /** The backend's `job_retention` (s) when its answer carries it: how long finished jobs are kept. */
  jobRetentionS?: number;
  /** The backend's `user_shell` setting when it names one (`oh start --clean-shell`: false), §3.4.1. */
  userShell?: boolean;
  /** The backend's `shell_startup_timeout` (s) when it names one. */
  shellStartupTimeoutS?: number;
  /** The backend's sandbox settings for the agent's shell (docs/protocol.md §3.17), when it sent them. */
  sandbox?: SandboxSettings;
  /** The backend's interpreter (session file `python`): runs the shell engine host; absent from older backends. */
  python?: string;
  /** Sends a frame of our own to this backend (job events, §4); dropped when the connection is closed. */
  sendFrame?: (frame: JsonObject) => void;
}

export function backendKey(s: SessionInfo): string {
  return `${s.instance_id}:${s.pid}:${s.start_time ?? ''}:${s.port}`;
}

export interface ActionHandler {
  /** Must resolve to one observation; the connection guards against a throw anyway. */
  execute(action: Action, signal: AbortSignal, ctx?: ActionContext): Promise<Observation>;
  /** `{"type": "agent_gone", "shell": key}`: the agent owning that private shell disconnected. */
  agentGone?(shell: string, ctx: ActionContext): void;
  /** Consent (§3.13): `{"type": "approval_request", "approval": row}`: ask the user; answer with ctx.sendFrame. */
  approvalRequested?(row: unknown, ctx: ActionContext): void;
  /** `{"type": "approval_closed", "id"}`: decided elsewhere (or timed out). */
  approvalClosed?(id: unknown, ctx: ActionContext): void;
}

export interface CloseInfo {
  /** WebSocket close code (1006 when the socket died without a close frame), or undefined if never opened. */
  code?: number;
  reason: string;
  /** HTTP status when the upgrade was refused (401 = token, 403 = origin/host, 404...). */
  httpStatus?: number;
  /** `{"type":"error"}` refusal of the register frame. */
  refusal?: { error_id: string; message: string };
  registered: boolean;
  error?: string;
}

export interface RegisteredInfo {
  editor_id: string;
  instance_id: string;
  workspace: string;
  /** Absent from older backends. */
  allowed_roots?: string[];
  /** The whole answer: its version fields (`oh_version`, `protocol_range`, `version_check`) for versions.ts. */
  raw?: JsonObject;
}

export interface ConnectionOptions {
  session: SessionInfo;
  registerFrame: JsonObject;
  handler: ActionHandler;
  log: (line: string) => void;
  onRegistered: (info: RegisteredInfo) => void;
  onClose: (info: CloseInfo) => void;
  registerTimeoutMs?: number;
  pingIntervalMs?: number;
  maxPayload?: number;
}

export const EDITOR_PATH = '/v1/editor';

/** What this window presents on /v1/editor: the session's `editor_token` (the agent token opens every
 * other role, never this one); only a backend older than the editor credential has none. */
export function editorCredential(session: SessionInfo): string {
  return session.editor_token ?? session.token;
}
/** The backend's own limit (protocol.md §1): room for a 64 MiB file, JSON-escaped. */
const MAX_PAYLOAD = 128 * 1024 * 1024;

export class EditorConnection {
  readonly session: SessionInfo;
  private ws: WebSocket;
  private registered = false;
  private closedReported = false;
  private obsIds = 1;
  private readonly inflight = new Map<number, AbortController>();
  /** Our own requests on this leg (history, docs/protocol.md §3.15.2), by `rid`. */
  private readonly requests = new Map<string, { resolve: (a: JsonObject) => void; reject: (e: Error) => void }>();
  private rids = 1;
  private registerTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private pongSeen = true;
  private httpStatus?: number;
  private refusal?: { error_id: string; message: string };
  private lastError?: string;
  editorId?: string;
  context: ActionContext;

  constructor(private readonly opts: ConnectionOptions) {
    this.session = opts.session;
    const s = opts.session;
    this.context = {
      backend: backendKey(s),
      instanceId: s.instance_id,
      workspace: '',
      roots: [],
      python: s.python,
      sendFrame: (f) => this.sendJson(f),
    };
    // The editor credential goes in the Authorization header, never in the URL (the backend ignores
    // query tokens). `ws` sends no Origin header unless asked to, which the backend requires (an
    // Origin means a browser page: refused with 403). Host is 127.0.0.1:<port> from the URL.
    this.ws = new WebSocket(opts.session.url + EDITOR_PATH, {
      headers: { Authorization: `Bearer ${editorCredential(opts.session)}` },
      perMessageDeflate: false,
      handshakeTimeout: 10_000,
      maxPayload: opts.maxPayload ?? MAX_PAYLOAD,
      followRedirects: false,
    });
    this.ws.on('open', () => this.onOpen());
    this.ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    this.ws.on('pong', () => (this.pongSeen = true));
    this.ws.on('unexpected-response', (_req, res) => {
      // The upgrade was answered with a plain HTTP status (401 bad token, 403 origin/host...).
      this.httpStatus = res.statusCode;
      res.resume();
      this.ws.terminate();
    });
    this.ws.on('error', (err) => {
      this.lastError = (err as NodeJS.ErrnoException).code || err.message;
    });
    this.ws.on('close', (code, reason) => this.onClosed(code, reason.toString()));
  }

  get isRegistered(): boolean {
    return this.registered;
  }

  get inFlight(): number {
    return this.inflight.size;
  }

  private onOpen(): void {
    this.sendJson(this.opts.registerFrame);
    this.registerTimer = setTimeout(() => {
      this.lastError = 'no answer to the register frame within 10 s';
      this.ws.terminate();
    }, this.opts.registerTimeoutMs ?? 10_000);
    // Loopback peers rarely vanish silently, but a suspended backend would otherwise hold us forever.
    this.pingTimer = setInterval(() => {
      if (!this.pongSeen) {
        this.lastError = 'no pong within 20 s';
        this.ws.terminate();
        return;
      }
      this.pongSeen = false;
      try {
        this.ws.ping();
      } catch {
        /* closing */
      }
    }, this.opts.pingIntervalMs ?? 20_000);
  }

  private onMessage(data: WebSocket.RawData, isBinary: boolean): void {
    if (isBinary) {
      this.answer(
        errorObservation(
          undefined,
          'BAD_REQUEST',
          'Binary frames are not accepted: send one JSON object per text frame.',
        ),
      );
      return;
    }
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.isBuffer(data)
        ? data.toString('utf8')
        : Buffer.from(data).toString('utf8');
    let obj: JsonObject;
    try {
      obj = decodeFrame(text);
    } catch (e) {
      if (!this.registered) return this.registrationViolation('a non-JSON frame');
      this.answer(errorFrom(e as ProtocolError));
      return;
    }
    if (!this.registered) {
      this.onRegistrationAnswer(obj);
      return;
    }
    if (isControlFrame(obj)) {
      this.onControl(obj);
      return;
    }
    let action: Action;
    try {
      action = parseAction(obj);
    } catch (e) {
      if (e instanceof ProtocolError) this.answer(errorFrom(e));
      else this.answer(errorObservation(readId(obj), 'SERVER_ERROR', `Frame handling failed: ${String(e)}`));
      return;
    }
    if (this.inflight.has(action.id)) {
      this.answer(
        errorObservation(
          action.id,
          'BAD_REQUEST',
          `Action id ${action.id} is already in flight on this connection; use a new id.`,
        ),
      );
      return;
    }
    void this.execute(action);
  }

  private onRegistrationAnswer(obj: JsonObject): void {
    if (obj.type === 'registered') {
      this.registered = true;
      if (this.registerTimer) clearTimeout(this.registerTimer);
      this.editorId = String(obj.editor_id ?? '');
      const workspace = typeof obj.workspace === 'string' ? obj.workspace : '';
      const allowed = Array.isArray(obj.allowed_roots)
        ? obj.allowed_roots.filter(
            (r): r is string => typeof r === 'string' && r.length > 1 && /^(\/|[A-Za-z]:[\\/])/.test(r),
          )
        : undefined;
      // Paths and run cwds are confined to what THIS backend serves, not to the window's folders.
      const roots = allowed?.length ? allowed : workspace ? [workspace] : [];
      const wait = typeof obj.review_timeout === 'number' && obj.review_timeout > 0 ? obj.review_timeout : 600;
      const review = obj.review === true ? { timeoutSeconds: wait } : undefined;
      const ms = obj.max_shells;
      const maxShells = typeof ms === 'number' && Number.isInteger(ms) && ms >= 1 && ms <= 256 ? ms : undefined;
      const jr = obj.job_retention;
      const jobRetentionS = typeof jr === 'number' && Number.isFinite(jr) && jr >= 0 ? jr : undefined;
      const userShell = typeof obj.user_shell === 'boolean' ? obj.user_shell : undefined;
      const st = obj.shell_startup_timeout;
      const shellStartupTimeoutS =
        typeof st === 'number' && Number.isFinite(st) && st > 0 && st <= 600 ? st : undefined;
      const sandbox = parseSandbox(obj.sandbox);
      this.context = {
        ...this.context,
        workspace,
        roots,
        maxShells,
        jobRetentionS,
        review,
        userShell,
        shellStartupTimeoutS,
        sandbox,
      };
      this.opts.onRegistered({
        editor_id: this.editorId,
        instance_id: String(obj.instance_id ?? ''),
        workspace,
        allowed_roots: allowed,
        raw: obj,
      });
      return;
    }
    if (obj.type === 'error') {
      // The backend closes with 4400 right after; keep the reason for the log and the decision to retry.
      this.refusal = { error_id: String(obj.error_id ?? ''), message: String(obj.message ?? '') };
      return;
    }
    this.registrationViolation(`a frame of type ${JSON.stringify(obj.type ?? obj.action ?? null)}`);
  }

  private registrationViolation(what: string): void {
    this.lastError = `the backend answered the register frame with ${what}`;
    this.ws.close(1002, 'expected registered');
  }

  /** Sends a request frame of ours (it gets a `rid`) and resolves to the backend's answer with the same `rid`
   * (a refusal is `{"type": "error", ...}`); rejects after `timeoutMs` or when the connection closes. */
  request(frame: JsonObject, timeoutMs = 30_000): Promise<JsonObject> {
    if (!this.registered || this.ws.readyState !== WebSocket.OPEN)
      return Promise.reject(new Error('not connected to the backend'));
    const rid = `r${this.rids++}`;
    return new Promise<JsonObject>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.requests.delete(rid);
        reject(new Error(`the backend did not answer within ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      const done = (f: () => void) => {
        clearTimeout(timer);
        this.requests.delete(rid);
        f();
      };
      this.requests.set(rid, { resolve: (a) => done(() => resolve(a)), reject: (e) => done(() => reject(e)) });
      this.sendJson({ ...frame, rid });
    });
  }

  private onControl(obj: JsonObject): void {
    const waiting = typeof obj.rid === 'string' ? this.requests.get(obj.rid) : undefined;
    if (waiting) {
      waiting.resolve(obj);
      return;
    }
    if (obj.type === 'cancel') {
      const id = readId(obj);
      const ctl = id === undefined ? undefined : this.inflight.get(id);
      if (ctl) {
        this.opts.log(`action ${id} cancelled by the backend`);
        ctl.abort();
      }
      return;
    }
    if (obj.type === 'agent_gone') {
      const shell = obj.shell;
      if (typeof shell === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(shell))
        this.opts.handler.agentGone?.(shell, this.context);
      return;
    }
    if (obj.type === 'approval_request') {
      this.opts.handler.approvalRequested?.(obj.approval, this.context);
      return;
    }
    if (obj.type === 'approval_closed') {
      this.opts.handler.approvalClosed?.(obj.id, this.context);
      return;
    }
    if (obj.type === 'approval_result') {
      const r = Array.isArray(obj.results) ? (obj.results[0] as JsonObject | undefined) : undefined;
      this.opts.log(`consent answer: ${String(r?.id ?? '?')} ${String(r?.outcome ?? obj.error_id ?? '?')}`);
      return;
    }
    if (obj.type === 'error') {
      // The backend refused one of our observations: a bug on our side, worth a log line, never an answer.
      this.opts.log(`backend refused a frame: ${String(obj.error_id)}: ${String(obj.message).slice(0, 300)}`);
      return;
    }
    this.opts.log(`ignored control frame of type ${JSON.stringify(String(obj.type).slice(0, 40))}`);
  }

  private async execute(action: Action): Promise<void> {
    const ctl = new AbortController();
    this.inflight.set(action.id, ctl);
    let o: Observation;
    try {
      o = await this.opts.handler.execute(action, ctl.signal, this.context);
    } catch (e) {
      o = errorObservation(
        action.id,
        'SERVER_ERROR',
        `The oh extension failed on this ${action.kind} action: ${String((e as Error)?.message ?? e)}`,
      );
    } finally {
      this.inflight.delete(action.id);
    }
    if (ctl.signal.aborted) return; // cancelled: the backend no longer waits for an answer
    o.cause = action.id;
    this.answer(o);
  }

  private answer(o: Observation): void {
    o.id = this.obsIds++;
    const body = (o as Record<symbol, unknown>)[BINARY_BODY];
    if (body instanceof Uint8Array) {
      // A binary read (§3.7): one binary frame; the backend lists us as able to (capability "binary").
      if (this.ws.readyState !== WebSocket.OPEN) return;
      try {
        this.ws.send(packBinary(o, body), { binary: true });
      } catch (e) {
        this.lastError = String(e);
      }
      return;
    }
    this.sendJson(o);
  }

  private sendJson(obj: JsonObject): void {
    if (this.ws.readyState !== WebSocket.OPEN) return; // the backend reports EDITOR_DISCONNECTED itself
    try {
      this.ws.send(JSON.stringify(obj));
    } catch (e) {
      this.lastError = String(e);
    }
  }

  private onClosed(code: number, reason: string): void {
    if (this.registerTimer) clearTimeout(this.registerTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    if (this.closedReported) return;
    this.closedReported = true;
    // In-flight actions stop waiting (their answers have nowhere to go, and the status bar must not
    // spin on them); a running command stays in its terminal, untouched: nobody asked to kill it.
    for (const ctl of this.inflight.values()) ctl.abort(ORPHANED);
    for (const r of [...this.requests.values()]) r.reject(new Error(`the connection closed (${reason || code})`));
    this.opts.onClose({
      code: this.httpStatus === undefined ? code : undefined,
      reason,
      httpStatus: this.httpStatus,
      refusal: this.refusal,
      registered: this.registered,
      error: this.lastError,
    });
  }

  /** Closes politely (1000); terminates if the backend does not complete the close handshake. */
  close(reason = 'editor disconnecting'): void {
    if (this.ws.readyState === WebSocket.CONNECTING) {
      this.ws.terminate();
      return;
    }
    if (this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.close(1000, reason);
    const t = setTimeout(() => this.ws.terminate(), 2000);
    t.unref?.();
  }
}

export function describeClose(info: CloseInfo): string {
  if (info.httpStatus !== undefined) {
    const why =
      info.httpStatus === 401 ? 'token refused' : info.httpStatus === 403 ? 'forbidden (origin/host check)' : 'refused';
    return `HTTP ${info.httpStatus} (${why})`;
  }
  if (info.refusal) return `registration refused: ${info.refusal.error_id}: ${info.refusal.message}`;
  if (info.code === undefined || (!info.registered && info.code === 1006 && info.error))
    return info.error ?? 'connection failed';
  const names: Record<number, string> = {
    1000: 'normal close',
    [Close.GOING_AWAY]: 'backend shutting down',
    1006: 'connection lost',
    1009: 'frame too big',
    [Close.TOKEN_ROTATED]: 'token rotated',
    [Close.BAD_REGISTRATION]: 'bad registration',
  };
  return `${info.code} ${names[info.code] ?? ''}${info.reason ? ` (${info.reason})` : ''}${info.error ? ` [${info.error}]` : ''}`
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The agent shell's sandbox as the backend resolved it (docs/protocol.md §3.17): absolute paths, everything the
 * engine host needs to build the same bubblewrap command line as the local runtime. Passed on as it is. Only a
 * level and the network (no backend's spec, this window's `oh.sandbox` level): the engine host's own defaults.
 */
export interface SandboxSettings {
  level: 'workspace-write' | 'read-only' | 'off';
  network: boolean;
  writable?: string[];
  fallback?: 'refuse' | 'unconfined';
  bwrap?: string;
  hidden?: string[];
}

const absolutePaths = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((p) => typeof p === 'string' && p.startsWith('/'));

/** The registered frame's `sandbox`, checked whole (anything malformed: undefined, the engine's own default). */
export function parseSandbox(raw: unknown): SandboxSettings | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const o = raw as Record<string, unknown>;
  if (o.level !== 'workspace-write' && o.level !== 'read-only' && o.level !== 'off') return undefined;
  if (typeof o.network !== 'boolean' || (o.fallback !== 'refuse' && o.fallback !== 'unconfined')) return undefined;
  if (!absolutePaths(o.writable) || !absolutePaths(o.hidden) || typeof o.bwrap !== 'string') return undefined;
  return {
    level: o.level,
    network: o.network,
    writable: o.writable,
    fallback: o.fallback,
    bwrap: o.bwrap,
    hidden: o.hidden,
  };
}
