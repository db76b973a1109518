/**
 * The `oh` wire protocol as the editor leg sees it (docs/protocol.md §3-4).
 *
 * Pure: decoding and validating frames, building observations. No `vscode`, no I/O, so every rule
 * here is unit-tested with node's test runner. Observation shapes are exactly OpenHands 1.6's
 * `event_to_dict` output: an extra key in `extras` would make OpenHands' deserializer raise, so the
 * builders below are the only place observations are made.
 */

import { pathKey, pythonFloatPaths } from './jsonnum';
import { isKnowledgeKind, KNOWLEDGE_KINDS, KnowledgeKind, knowledgeArgsProblem, summarizeKnowledge } from './knowledge';

export const PROTOCOL_VERSION = 1;
/** The protocol versions this extension speaks, sent in `register` (docs/protocol.md §4 "Versions"). */
export const PROTOCOL_RANGE: [number, number] = [1, 1];
/** WebSocket close codes the backend sends (src/oh/protocol/codes.py `Close`, docs/protocol.md). */
export const Close = { GOING_AWAY: 1001, TOKEN_ROTATED: 4001, BAD_REGISTRATION: 4400 } as const;
export const ACTION_KINDS = ['run', 'read', 'write', 'edit', 'stat', 'job'] as const;
export const JOB_OPS = ['list', 'poll', 'wait', 'output', 'cancel'] as const;
export const WRITE_MODES = ['overwrite', 'create', 'append'] as const;
/** What this extension advertises in `register` (docs/protocol.md §4): kinds and opt-in features. */
export const CAPABILITIES = ['write_modes', 'binary', 'escalate'] as const; // + 'stat' and 'job' as kinds (ACTION_KINDS)
export const EDIT_COMMANDS = ['view', 'create', 'str_replace', 'insert', 'undo_edit'] as const;
export const MAX_OUTPUT_CHARS = 30000;
/** Ids survive JSON numbers on both sides (Python ints, JavaScript doubles). */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

export type ActionKind = (typeof ACTION_KINDS)[number] | KnowledgeKind | 'branch'; // + §3.6 knowledge kinds, §3.12 branch (backend only)
export type EditCommand = (typeof EDIT_COMMANDS)[number];

export type ErrorId =
  | 'BAD_REQUEST'
  | 'PATH_DENIED'
  | 'TOOL_UNSUPPORTED'
  | 'TOOL_ERROR'
  | 'TIMEOUT'
  | 'NO_EDITOR'
  | 'EDITOR_DISCONNECTED'
  | 'INTERRUPTED'
  | 'BUSY'
  | 'REJECTED'
  | 'NO_COMMAND'
  | 'NO_JOB'
  | 'UNTRUSTED_WORKSPACE'
  | 'BRANCH_FAILED'
  | 'SANDBOX_UNAVAILABLE'
  | 'STALE'
  | 'CLAIMED'
  | 'SERVER_ERROR';

export type JsonObject = Record<string, unknown>;

/** A frame or action that cannot be honoured: it becomes exactly one error observation. */
export class ProtocolError extends Error {
  constructor(
    readonly errorId: ErrorId,
    message: string,
    readonly cause?: number,
  ) {
    super(message);
  }
}

/** An executor refused (file not found, old_str not unique, path outside the workspace...). */
export class ToolError extends Error {
  constructor(
    message: string,
    readonly errorId: ErrorId = 'TOOL_ERROR',
  ) {
    super(message);
  }
}

export interface RunArgs {
  command: string;
  is_input: boolean;
  blocking: boolean;
  cwd: string | null;
  hidden: boolean;
  /** Kill what runs in the agent's shell and start a fresh one first. */
  reset?: boolean;
  /** Exported in the shell before the command. Values are secrets: never logged. */
  env?: Record<string, string>;
  /** Output limit in characters (0 = up to MAX_OUTPUT_CAP). */
  maxOutput?: number;
}

/** Who sent an action (docs/protocol.md, the `agent` field): the backend adds it to every action it forwards. */
export interface AgentInfo {
  id: string;
  name: string;
  /** Absolute; the agent's shell starts there and relative paths resolve against it. */
  workdir: string;
  /** Agents with the same key share one terminal. */
  shell: string;
}

export interface Action {
  id: number;
  kind: ActionKind;
  args: JsonObject;
  /** Top-level `timeout` in seconds, when set (`0` = none given). */
  timeout?: number;
  agent?: AgentInfo;
  /** Top-level `job_id` the backend gives every new command (§4): the command's id in `metadata.job_id`. */
  jobId?: string;
  /**
   * Top-level `escalation` (§3.17): the backend's consent gate allowed this `run` to leave the sandbox ("off") or
   * to have the network ("network"). Set only when it names the same value as `args.sandbox`.
   */
  escalation?: Escalation;
}

export interface Escalation {
  sandbox: 'off' | 'network';
  reason: string;
}

/** The backend's `escalation` of a `run` frame, when it matches `args.sandbox` (else undefined: not allowed to leave). */
export function parseEscalation(obj: JsonObject): Escalation | undefined {
  const esc = obj.escalation as JsonObject | undefined;
  const args = obj.args as JsonObject | undefined;
  if (!esc || typeof esc !== 'object' || Array.isArray(esc) || !args || typeof args !== 'object') return undefined;
  const wanted = esc.sandbox;
  if ((wanted !== 'off' && wanted !== 'network') || args.sandbox !== wanted) return undefined;
  return { sandbox: wanted, reason: typeof esc.reason === 'string' ? esc.reason.slice(0, 500) : '' };
}

/** Abort reason when the connection went away under an action: stop waiting, but do not kill anything. */
export const ORPHANED = 'oh:connection-lost';

/** `max_output: 0` means "no oh truncation" up to this many characters (16 MiB). */
export const MAX_OUTPUT_CAP = 16 * 1024 * 1024;
export const SHELL_KEY = /^[A-Za-z0-9._-]{1,64}$/;
export const JOB_ID = /^[A-Za-z0-9._-]{1,64}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

// ---------------------------------------------------------------------------------------------
// Frames

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

/** Per decoded frame: where a number stands that the backend reads as a float (`2.0`), see jsonnum.ts. */
const floatPaths = new WeakMap<object, Set<string>>();

/** An integer as the backend sees it: not only integral, but written as a JSON integer. */
function isIntAt(obj: JsonObject, v: unknown, ...path: Array<string | number>): v is number {
  return isInt(v) && !floatPaths.get(obj)?.has(pathKey(path));
}

/** The action id when one can be read, so even a refusal can carry `cause`. */
export function readId(obj: unknown): number | undefined {
  if (obj !== null && typeof obj === 'object' && !Array.isArray(obj)) {
    const v = (obj as JsonObject).id;
    if (isIntAt(obj as JsonObject, v, 'id') && v >= 0 && v <= MAX_ID) return v;
  }
  return undefined;
}

/** Text frame -> JSON object, or ProtocolError(BAD_REQUEST). */
export function decodeFrame(data: string): JsonObject {
  let obj: unknown;
  try {
    obj = JSON.parse(data);
  } catch (e) {
    throw new ProtocolError('BAD_REQUEST', `Frame is not valid JSON (${String((e as Error).message).slice(0, 120)}).`);
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    const what = obj === null ? 'null' : Array.isArray(obj) ? 'array' : typeof obj;
    throw new ProtocolError('BAD_REQUEST', `Frame must be a JSON object, got ${what}.`);
  }
  try {
    floatPaths.set(obj, pythonFloatPaths(data));
  } catch (e) {
    throw new ProtocolError('BAD_REQUEST', `Frame is not valid JSON (${(e as Error).message}).`);
  }
  return obj as JsonObject;
}

/**
 * Control frames carry `type` (register/registered/error/cancel); OpenHands events carry
 * `action`/`observation`. The editor never answers a control frame with an observation: the backend
 * answers a bad observation with `{"type":"error"}`, and replying to that would ping-pong forever.
 */
export function isControlFrame(obj: JsonObject): boolean {
  return typeof obj.type === 'string';
}

function check(cond: boolean, message: string, cause: number | undefined): asserts cond {
  if (!cond) throw new ProtocolError('BAD_REQUEST', message, cause);
}

function optType(
  args: JsonObject,
  key: string,
  valid: (v: unknown) => boolean,
  what: string,
  cause: number | undefined,
): void {
  if (!(key in args) || args[key] === null || args[key] === undefined) return;
  check(valid(args[key]), `args.${key} must be ${what}.`, cause);
}

const isBool = (v: unknown) => typeof v === 'boolean';
const isStr = (v: unknown) => typeof v === 'string';

/**
 * Validates an OpenHands action the way the backend does (src/oh/protocol/events.py), so an editor
 * never executes something the backend would have refused; throws ProtocolError with `cause` set
 * whenever the id was readable.
 */
export function parseAction(obj: JsonObject): Action {
  const { cause, kind } = parseEnvelope(obj);
  if (kind === 'branch') {
    // §3.12: sent by the backend (never an agent) before an agent's first change; branch.ts checks the args.
    const args = obj.args;
    check(args !== null && typeof args === 'object' && !Array.isArray(args), "'args' must be a JSON object.", cause);
    return { id: cause, kind, args: args as JsonObject, agent: parseAgent(obj.agent) };
  }
  if (!(ACTION_KINDS as readonly string[]).includes(kind) && !isKnowledgeKind(kind)) {
    throw new ProtocolError(
      'TOOL_UNSUPPORTED',
      `Unknown action '${kind.slice(0, 40)}': this editor executes ${[...ACTION_KINDS, ...KNOWLEDGE_KINDS].join(', ')}.`,
      cause,
    );
  }
  const args = obj.args === undefined ? {} : obj.args;
  check(args !== null && typeof args === 'object' && !Array.isArray(args), "'args' must be a JSON object.", cause);
  const a = args as JsonObject;
  const timeout = parseTimeout(obj.timeout, cause);
  const agent = parseAgent(obj.agent);
  if (isKnowledgeKind(kind)) {
    const problem = knowledgeArgsProblem(kind, a, (v, key) => isIntAt(obj, v, 'args', key));
    check(problem === undefined, problem ?? '', cause);
    return { id: cause, kind, args: a, timeout, agent };
  }
  const jobId = typeof obj.job_id === 'string' && JOB_ID.test(obj.job_id) ? obj.job_id : undefined;
  ARG_CHECKS[kind as (typeof ACTION_KINDS)[number]](a, cause, obj);
  const escalation = kind === 'run' ? parseEscalation(obj) : undefined;
  return { id: cause, kind: kind as ActionKind, args: a, timeout, agent, jobId, ...(escalation ? { escalation } : {}) };
}

/** The checks every action passes first: an integer id and a kind string (as `_envelope` in protocol/events.py). */
function parseEnvelope(obj: JsonObject): { cause: number; kind: string } {
  const cause = readId(obj);
  if (!('id' in obj)) {
    throw new ProtocolError(
      'BAD_REQUEST',
      "Action has no 'id': every action needs an integer id (its observation's cause).",
    );
  }
  check(cause !== undefined, `Action 'id' must be an integer between 0 and ${MAX_ID}.`, undefined);
  if ('observation' in obj && !('action' in obj)) {
    throw new ProtocolError('BAD_REQUEST', 'This connection receives actions, not observations.', cause);
  }
  const kind = obj.action;
  check(typeof kind === 'string', "Action has no 'action' string (one of run, read, write, edit).", cause);
  return { cause, kind };
}

function parseTimeout(t: unknown, cause: number): number | undefined {
  if (t === undefined || t === null) return undefined;
  check(
    typeof t === 'number' && Number.isFinite(t) && t >= 0,
    "'timeout' must be a number of seconds >= 0 (0 = no timeout given).",
    cause,
  );
  // 0 means "no timeout given", as in the OpenHands SDK (docs/protocol.md §3.1): the no-new-output rule applies.
  return t > 0 ? t : undefined;
}

/** The args checks of one action kind; `obj` is the whole action (for exact integer reading). */
type ArgCheck = (a: JsonObject, cause: number, obj: JsonObject) => void;

function checkRunArgs(a: JsonObject, cause: number): void {
  check(typeof a.command === 'string', 'args.command must be a string.', cause);
  for (const key of ['is_input', 'blocking', 'hidden', 'reset', 'exclusive', 'background', 'force'])
    optType(a, key, isBool, 'a boolean', cause);
  optType(a, 'job_id', (v) => typeof v === 'string' && JOB_ID.test(v), 'a command id such as "j3"', cause);
  optType(a, 'cwd', isStr, 'a string or null', cause);
  optType(a, 'max_output', (v) => isInt(v) && v >= 0, 'an integer >= 0', cause);
  if (a.env !== undefined && a.env !== null) {
    const env = a.env;
    check(
      env !== null && typeof env === 'object' && !Array.isArray(env),
      'args.env must be an object of names to string values.',
      cause,
    );
    for (const [k, v] of Object.entries(env as JsonObject)) {
      // Names only in messages: values are secrets.
      check(
        ENV_NAME.test(k),
        `args.env: ${JSON.stringify(k.slice(0, 64))} is not a valid environment variable name.`,
        cause,
      );
      check(
        typeof v === 'string' && !v.includes('\0'),
        `args.env.${k} must be a string without NUL characters.`,
        cause,
      );
    }
  }
  check(
    !(a.background === true && (a.is_input === true || a.reset === true || String(a.command).trim() === '')),
    'args.background needs a non-empty command and cannot be combined with is_input or reset.',
    cause,
  );
}

function checkJobArgs(a: JsonObject, cause: number): void {
  check(
    (JOB_OPS as readonly string[]).includes(a.op as string),
    `args.op must be one of ${JOB_OPS.join(', ')}.`,
    cause,
  );
  if (a.op !== 'list' || (a.job_id !== undefined && a.job_id !== null)) {
    check(
      typeof a.job_id === 'string' && JOB_ID.test(a.job_id),
      'args.job_id must be a job id string such as "j3" (from an earlier observation or `job list`).',
      cause,
    );
  }
  for (const key of ['offset', 'limit', 'tail']) optType(a, key, (v) => isInt(v) && v >= 0, 'an integer >= 0', cause);
  optType(a, 'wait', (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0, 'a number of seconds >= 0', cause);
}

/** What read, write, edit and stat share: the path, a line range, the diagnostics flag. */
function checkPathArgs(a: JsonObject, cause: number, obj: JsonObject): void {
  check(typeof a.path === 'string' && a.path !== '', 'args.path must be a non-empty string.', cause);
  check(!(a.path as string).includes('\0'), 'args.path must not contain NUL bytes.', cause);
  for (const key of ['start', 'end']) optType(a, key, (v) => isIntAt(obj, v, 'args', key), 'an integer', cause);
  if (a.view_range !== undefined && a.view_range !== null) {
    const vr = a.view_range;
    check(
      Array.isArray(vr) && vr.length === 2 && vr.every((v, k) => isIntAt(obj, v, 'args', 'view_range', k)),
      'args.view_range must be [first_line, last_line] (integers, last -1 = end of file).',
      cause,
    );
  }
  optType(a, 'diagnostics', isBool, 'a boolean', cause); // §3.6: the changed file's diagnostics (write/edit)
}

function checkReadArgs(a: JsonObject, cause: number, obj: JsonObject): void {
  optType(
    a,
    'encoding',
    (v) => v === 'auto' || v === 'base64' || v === 'binary',
    '"auto", "base64" or "binary"',
    cause,
  );
  checkPathArgs(a, cause, obj);
}

function checkWriteArgs(a: JsonObject, cause: number, obj: JsonObject): void {
  optType(a, 'encoding', (v) => typeof v === 'string' && /^[A-Za-z0-9._:-]{1,40}$/.test(v), 'an encoding name', cause);
  optType(
    a,
    'mode',
    (v) => (WRITE_MODES as readonly string[]).includes(v as string),
    `one of ${WRITE_MODES.join(', ')} (default overwrite)`,
    cause,
  );
  checkPathArgs(a, cause, obj);
  check(typeof a.content === 'string', 'args.content must be a string.', cause);
  const ranged =
    (typeof a.start === 'number' && a.start > 0) || (a.end !== undefined && a.end !== null && a.end !== -1);
  check(
    !((a.mode === 'create' || a.mode === 'append') && ranged),
    `args.mode ${String(a.mode)} writes the whole file: drop args.start/args.end.`,
    cause,
  );
}

function checkEditArgs(a: JsonObject, cause: number, obj: JsonObject): void {
  checkPathArgs(a, cause, obj);
  const cmd = a.command;
  check(
    typeof cmd === 'string' && (EDIT_COMMANDS as readonly string[]).includes(cmd),
    `args.command must be one of ${EDIT_COMMANDS.join(', ')}.`,
    cause,
  );
  const argInt = (key: string) => (v: unknown) => isIntAt(obj, v, 'args', key);
  for (const key of ['file_text', 'old_str', 'new_str']) optType(a, key, isStr, 'a string or null', cause);
  optType(a, 'insert_line', argInt('insert_line'), 'an integer or null', cause);
  if (cmd === 'create') {
    check(typeof a.file_text === 'string', 'edit create needs args.file_text (a string).', cause);
  } else if (cmd === 'str_replace') {
    check(typeof a.old_str === 'string' && a.old_str !== '', 'edit str_replace needs a non-empty args.old_str.', cause);
  } else if (cmd === 'insert') {
    check(argInt('insert_line')(a.insert_line), 'edit insert needs args.insert_line (an integer).', cause);
    check(typeof a.new_str === 'string', 'edit insert needs args.new_str (a string).', cause);
  }
}

/** Per action kind, its args checks: the table protocol/events.py keeps too (`_check_*_args`, `_FILE_CHECKS`). */
const ARG_CHECKS: Record<(typeof ACTION_KINDS)[number], ArgCheck> = {
  run: checkRunArgs,
  job: checkJobArgs,
  read: checkReadArgs,
  write: checkWriteArgs,
  edit: checkEditArgs,
  stat: checkPathArgs,
};

/**
 * The optional top-level `agent` object, read as the headless editor reads it
 * (src/oh/protocol/frames.py parse_agent_field): absent or malformed (an older backend) = undefined,
 * and the editor uses one default shell in the backend's workspace. Never a refusal: the backend
 * built this field, the agent did not.
 */
function parseAgent(v: unknown): AgentInfo | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const o = v as JsonObject;
  const shell = o.shell;
  const workdir = o.workdir;
  if (typeof shell !== 'string' || !SHELL_KEY.test(shell) || typeof workdir !== 'string' || !workdir.startsWith('/'))
    return undefined;
  return {
    id: (typeof o.id === 'string' ? o.id : shell).slice(0, 64),
    // Shown as a terminal name: printable characters only, bounded.
    name: (typeof o.name === 'string' ? o.name : 'agent').replace(/[\x00-\x1f\x7f-\x9f]/g, '').slice(0, 64) || 'agent',
    workdir,
    shell,
  };
}

/** `run` arguments with the protocol defaults applied. */
export function runArgs(action: Action): RunArgs {
  const a = action.args;
  return {
    command: String(a.command ?? ''),
    is_input: a.is_input === true,
    blocking: a.blocking === true,
    cwd: typeof a.cwd === 'string' && a.cwd !== '' ? a.cwd : null,
    hidden: a.hidden === true,
    reset: a.reset === true,
    env: a.env && typeof a.env === 'object' ? (a.env as Record<string, string>) : undefined,
    maxOutput:
      typeof a.max_output === 'number'
        ? a.max_output === 0
          ? MAX_OUTPUT_CAP
          : Math.min(a.max_output, MAX_OUTPUT_CAP)
        : undefined,
  };
}

/** Kinds whose summary is a path: cut only past PATH_SUMMARY_LIMIT, from the left, so the file name stays
 * (the backend's `path_summary`, src/oh/protocol/kinds.py; tests/contract/action-kinds.json checks both). */
export const PATH_SUMMARY_KINDS: ReadonlySet<string> = new Set(['read', 'write', 'edit', 'stat']);
export const PATH_SUMMARY_LIMIT = 300;
/** The summary of an empty `run` (`oh run --wait`, a follow-up): not an empty cell. */
export const WAIT_SUMMARY = 'wait for output';

/** A present argument as text, an absent one as '' (Python's `args.get(k) or ''`). */
function argText(v: unknown): string {
  return v === undefined || v === null || v === false ? '' : String(v);
}

function summaryOf(action: Action): string {
  const a = action.args;
  if (isKnowledgeKind(action.kind)) return summarizeKnowledge(action.kind, a);
  const kind: string = action.kind; // also the kinds the backend answers itself (ensure): the shared table's
  switch (kind) {
    case 'run': {
      const command = argText(a.command);
      if (a.is_input !== true && command.trim() === '' && a.reset !== true) return WAIT_SUMMARY;
      return (a.is_input === true ? 'input: ' : '') + (a.background === true ? 'background: ' : '') + command;
    }
    case 'read':
    case 'write':
      return argText(a.path);
    case 'edit':
      return `${argText(a.command)} ${argText(a.path)}`;
    case 'job':
      return `job ${argText(a.op)} ${argText(a.job_id)}`;
    case 'stat':
      return `stat ${argText(a.path)}`;
    case 'ensure': {
      const targets = Array.isArray(a.targets) && a.targets.length > 0 ? a.targets.map(String) : ['environment'];
      return `ensure ${targets.join(' ')}` + (a.path ? ` in ${argText(a.path)}` : '');
    }
    case 'claim': // several agents (§3.18): answered by the backend, like ensure
      return `claim ${Array.isArray(a.paths) ? a.paths.map(String).join(' ') : ''}`;
    case 'release':
      return `release ${argText(a.claim_id)}`;
    case 'branch': // the editor leg's own frame (no agent kind): the backend never summarizes it
      return `git branch ${argText(a.name)}`;
    default:
      return kind;
  }
}

/** One line for humans (status bar, log): the command, or the kind and path. Never file contents. The same
 * line as the backend's (`oh.protocol.events.summarize`): tests/contract/action-kinds.json `summaries`. */
export function summarize(action: Action, limit = 80): string {
  const line = summaryOf(action).split(/\s+/).filter(Boolean).join(' ');
  if (PATH_SUMMARY_KINDS.has(action.kind)) {
    const max = Math.max(limit, PATH_SUMMARY_LIMIT);
    return line.length <= max ? line : '…' + line.slice(line.length - (max - 1));
  }
  return line.length <= limit ? line : line.slice(0, limit - 1) + '…';
}

// ---------------------------------------------------------------------------------------------
// Observations. Builders return frames without `id`: the connection numbers what it sends.

export type Observation = JsonObject & { observation: string; cause?: number };

/** Local time without a zone, like Python's `datetime.now().isoformat()` on the backend side. */
export function nowIso(d = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return (
    `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}000`
  );
}

function obs(
  kind: string,
  cause: number | undefined,
  content: string,
  message: string,
  extras: JsonObject,
): Observation {
  const o: Observation = {
    timestamp: nowIso(),
    source: 'environment',
    message,
    observation: kind,
    content,
    extras,
  };
  if (cause !== undefined) o.cause = cause;
  return o;
}

export interface RunResult {
  content: string;
  exitCode: number;
  workingDir: string | null;
  pid?: number;
  prefix?: string;
  suffix?: string;
  /** Filled by the executor (protocol: metadata for every run observation). */
  username?: string | null;
  hostname?: string | null;
  pyInterpreterPath?: string | null;
}

export function runObservation(cause: number | undefined, command: string, r: RunResult, hidden = false): Observation {
  const o = obs('run', cause, r.content, `Command \`${command}\` executed with exit code ${r.exitCode}.`, {
    command,
    metadata: {
      exit_code: r.exitCode,
      pid: r.pid ?? -1,
      username: r.username ?? null,
      hostname: r.hostname ?? null,
      working_dir: r.workingDir,
      py_interpreter_path: r.pyInterpreterPath ?? null,
      prefix: r.prefix ?? '',
      suffix: r.suffix ?? '',
    },
    hidden,
  });
  o.success = r.exitCode === 0;
  return o;
}

/**
 * The file bytes of a binary read (docs/protocol.md §3.7), kept off the JSON: the connection sends such
 * an observation as one binary frame (header JSON without `content`, then these bytes).
 */
export const BINARY_BODY = Symbol('oh binary body');

/** Frame for an observation carrying BINARY_BODY: uint32 BE header length, the header JSON, the bytes. */
export function packBinary(o: Observation, body: Uint8Array): Buffer {
  const header = Buffer.from(
    JSON.stringify(Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'content'))),
    'utf8',
  );
  if (header.length > 65536) throw new Error(`binary frame header of ${header.length} bytes (limit 65536)`);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(header.length, 0);
  return Buffer.concat([len, header, body]);
}

export function readObservation(
  cause: number | undefined,
  path: string,
  content: string,
  binary?: { encoding: 'base64' | 'binary'; mimeType: string },
): Observation {
  const extras: JsonObject = { path, impl_source: 'oh_aci' };
  // Only when asked (encoding: base64): OpenHands 1.6's deserializer refuses unknown extras.
  if (binary) Object.assign(extras, { encoding: binary.encoding, mime_type: binary.mimeType });
  return obs('read', cause, content, `I read the file ${path}.`, extras);
}

/** `content`: a note for the agent (write mode create found the file already there). */
export function writeObservation(cause: number | undefined, path: string, content = ''): Observation {
  return obs('write', cause, content, `I wrote to the file ${path}.`, { path });
}

/** oh's own kind (§3.9): `info` = exists, type, size, mtime, mode, encoding, mime_type, link. */
/** Our own kind: the answer to a `job` action (docs/protocol.md §3.8). */
export function jobObservation(
  cause: number | undefined,
  op: string,
  content: string,
  extras: JsonObject,
): Observation {
  return obs('job', cause, content, `Job ${op}.`, { op, ...extras });
}

export function statObservation(
  cause: number | undefined,
  path: string,
  content: string,
  info: JsonObject,
): Observation {
  return obs('stat', cause, content, `I checked the path ${path}.`, { path, ...info });
}

export interface EditResult {
  content: string;
  prevExist: boolean;
  oldContent: string | null;
  newContent: string | null;
  diff: string | null;
}

export function editObservation(cause: number | undefined, path: string, r: EditResult): Observation {
  return obs('edit', cause, r.content, `I edited the file ${path}.`, {
    path,
    prev_exist: r.prevExist,
    old_content: r.oldContent,
    new_content: r.newContent,
    impl_source: 'oh_aci',
    diff: r.diff,
    _diff_cache: null,
  });
}

export function errorObservation(cause: number | undefined, errorId: ErrorId, message: string): Observation {
  return obs('error', cause, message, message, { error_id: errorId });
}

/** Our own kind, answer to the backend's `branch` frame (docs/protocol.md §3.12). */
export function branchObservation(cause: number | undefined, content: string, extras: JsonObject): Observation {
  return obs('branch', cause, content, 'Branch mode prepared the git branch.', extras);
}

export function errorFrom(e: ProtocolError): Observation {
  return errorObservation(e.cause, e.errorId, e.message);
}

/** `ok` or the error id: what the log shows per action. */
export function outcomeOf(o: Observation): string {
  if (o.observation === 'error') return String((o.extras as JsonObject | undefined)?.error_id ?? 'ERROR');
  return 'ok';
}

export function exitCodeOf(o: Observation): number | undefined {
  if (o.observation !== 'run') return undefined;
  const md = (o.extras as JsonObject | undefined)?.metadata as JsonObject | undefined;
  return isInt(md?.exit_code) ? (md!.exit_code as number) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Registration (§4)

export interface RegisterInfo {
  session: string | null;
  workspaceFolders: string[];
  editorName: string;
  editorVersion: string;
  editorPid: number;
  extensionVersion: string;
}

export function registerFrame(info: RegisterInfo): JsonObject {
  return {
    type: 'register',
    protocol: PROTOCOL_VERSION,
    protocol_range: [...PROTOCOL_RANGE],
    session: info.session,
    workspace_folders: info.workspaceFolders,
    editor: { name: info.editorName, version: info.editorVersion, pid: info.editorPid },
    extension_version: info.extensionVersion,
    // review: write/edit become proposals when the backend asks (§3.11); branch: git-branch mode (§3.12);
    // consent: this window asks the user before an agent's action runs, when the backend's policy says so (§3.13).
    capabilities: [...ACTION_KINDS, ...KNOWLEDGE_KINDS, ...CAPABILITIES, 'branch', 'review', 'consent'],
  };
}

// ---------------------------------------------------------------------------------------------
// Output bounds

export function truncationMarker(dropped: number): string {
  return `\n[... ${dropped} characters truncated ...]\n`;
}

/** Head + marker + tail when over `limit`: the agent sees how the output started and ended. */
export function truncateMiddle(text: string, limit = MAX_OUTPUT_CHARS): string {
  if (text.length <= limit) return text;
  const head = Math.floor(limit / 2);
  const tail = limit - head;
  return text.slice(0, head) + truncationMarker(text.length - limit) + text.slice(text.length - tail);
}

/**
 * Output appended in chunks with O(limit) memory however much a command prints: keeps the first
 * half and a rolling last half, counting what was dropped in between. Same result as
 * truncateMiddle over the concatenation.
 */
export class OutputBuffer {
  private parts: string[] = [];
  private size = 0;
  private head: string | null = null;
  private tail = '';
  private dropped = 0;
  private readonly headN: number;
  private readonly tailN: number;

  constructor(readonly limit = MAX_OUTPUT_CHARS) {
    this.headN = Math.floor(limit / 2);
    this.tailN = limit - this.headN;
  }

  get length(): number {
    return this.head === null ? this.size : this.head.length + this.dropped + this.tail.length;
  }

  add(text: string): void {
    if (!text) return;
    if (this.head === null) {
      this.parts.push(text);
      this.size += text.length;
      if (this.size <= this.limit) return;
      const whole = this.parts.join('');
      this.parts = [];
      this.head = whole.slice(0, this.headN);
      this.appendTail(whole.slice(this.headN));
      return;
    }
    this.appendTail(text);
  }

  private appendTail(text: string): void {
    const t = this.tail + text;
    if (t.length > this.tailN) {
      this.dropped += t.length - this.tailN;
      this.tail = t.slice(t.length - this.tailN);
    } else {
      this.tail = t;
    }
  }

  text(): string {
    if (this.head === null) return this.parts.join('');
    if (!this.dropped) return this.head + this.tail;
    return this.head + truncationMarker(this.dropped) + this.tail;
  }

  /** The text so far, and start over (a soft timeout hands out what was printed until then). */
  take(): string {
    const t = this.text();
    this.parts = [];
    this.size = 0;
    this.head = null;
    this.tail = '';
    this.dropped = 0;
    return t;
  }
}
