/**
 * Session files (docs/protocol.md §7): where they live, what is in them, which ones target this
 * window, and whether their backend is still alive.
 *
 * No `vscode` here: the directory rule takes the environment and platform as arguments and the
 * matching takes real paths, so the rules are unit-tested (multi-root, symlinks resolved by the
 * caller, sibling-prefix traps such as /work/a vs /work/ab).
 */

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { checkSessionsDir, readOwnedFile, UnsafePath } from './owned';

export interface SessionInfo {
  instance_id: string;
  pid: number;
  start_time?: number;
  host: string;
  port: number;
  url: string;
  runtime?: string;
  workspace: string;
  token: string;
  /** The editor leg's own credential (docs/security.md §2): /v1/editor accepts only this one. Absent in
   * session files of backends older than it, which still take `token` there. */
  editor_token?: string;
  protocol?: number;
  /** The interpreter running the backend (absolute path): the shell engine host runs with it (§3.4.1). */
  python?: string;
}

/** Same rule as the CLI (src/oh/config/paths.py, platformdirs with appauthor=False). */
export function sessionsDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  home: string = os.homedir(),
): string {
  const p = platform === 'win32' ? path.win32 : path.posix;
  if (env.OH_HOME) {
    let h = env.OH_HOME;
    if (h === '~' || h.startsWith('~/')) h = p.join(home, h.slice(1));
    return p.join(p.resolve(h), 'sessions');
  }
  if (platform === 'darwin') return p.join(home, 'Library', 'Application Support', 'oh', 'sessions');
  if (platform === 'win32') {
    const local = env.LOCALAPPDATA || p.join(home, 'AppData', 'Local');
    return p.join(local, 'oh', 'sessions');
  }
  const state =
    env.XDG_STATE_HOME && p.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : p.join(home, '.local', 'state');
  return p.join(state, 'oh', 'sessions');
}

/** A session file's JSON, or null when it is not a usable session (partial write, garbage, wrong types). */
export function parseSession(text: string): SessionInfo | null {
  let d: Record<string, unknown>;
  try {
    const v = JSON.parse(text);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
    d = v as Record<string, unknown>;
  } catch {
    return null;
  }
  const str = (k: string) => typeof d[k] === 'string' && (d[k] as string) !== '';
  const int = (k: string) => typeof d[k] === 'number' && Number.isInteger(d[k]);
  if (!str('instance_id') || !int('pid') || !int('port') || !str('token') || !str('workspace')) return null;
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(d.instance_id as string)) return null;
  const port = d.port as number;
  if (port <= 0 || port > 65535) return null;
  const host = str('host') ? (d.host as string) : '127.0.0.1';
  // Loopback only: a session file pointing elsewhere would hand the token to another machine.
  if (!isLoopbackHost(host)) return null;
  const hostPart = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return {
    instance_id: d.instance_id as string,
    pid: d.pid as number,
    start_time: typeof d.start_time === 'number' ? d.start_time : undefined,
    host,
    port,
    url: `ws://${hostPart}:${port}`,
    runtime: typeof d.runtime === 'string' ? d.runtime : undefined,
    workspace: d.workspace as string,
    token: d.token as string,
    editor_token: str('editor_token') ? (d.editor_token as string) : undefined,
    protocol: typeof d.protocol === 'number' ? d.protocol : undefined,
    python: str('python') && path.isAbsolute(d.python as string) ? (d.python as string) : undefined,
  };
}

/** 127.0.0.0/8, ::1 or localhost: the only hosts a backend binds to (protocol.md §1-2). */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host === '::1' || host === '[::1]') return true;
  const m = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  return !!m && m.slice(1).every((o) => Number(o) <= 255);
}

/**
 * `child` equals `parent` or is inside it; never a sibling sharing a prefix (/a/b vs /a/bc).
 * The extension's one containment rule, mirroring Python's `oh.protocol.paths.within`: lexical
 * (`.`, `..`, repeated and trailing separators normalised; symlinks are resolved by the caller),
 * relative paths are never inside. Both run tests/contract/path_within.json.
 */
export function pathContains(parent: string, child: string, platform: NodeJS.Platform = process.platform): boolean {
  const sep = platform === 'win32' ? '\\' : '/';
  const flavour = platform === 'win32' ? path.win32 : path.posix;
  if (!flavour.isAbsolute(parent) || !flavour.isAbsolute(child)) return false;
  let p = flavour.normalize(parent);
  let c = flavour.normalize(child);
  if (platform === 'win32' || platform === 'darwin') {
    // Default file systems there are case-insensitive; a false "inside" is still checked by realpath.
    p = p.toLowerCase();
    c = c.toLowerCase();
  }
  if (platform === 'win32') {
    p = p.replace(/\//g, '\\');
    c = c.replace(/\//g, '\\');
  }
  while (p.length > 1 && p.endsWith(sep) && !/^[a-z]:\\$/i.test(p)) p = p.slice(0, -1);
  if (c === p) return true;
  return c.startsWith(p.endsWith(sep) ? p : p + sep);
}

/**
 * A session targets this window when its workspace is one of the window's folders or inside one
 * (multi-root: any folder). Both sides must already be real paths (symlinks resolved).
 */
export function sessionTargets(
  sessionWorkspaceReal: string,
  folderReals: string[],
  platform: NodeJS.Platform = process.platform,
): boolean {
  return folderReals.some((f) => pathContains(f, sessionWorkspaceReal, platform));
}

/** realpath, or the path itself when it cannot be resolved (a missing workspace never matches a real folder by accident). */
export async function realpathOrSelf(p: string): Promise<string> {
  try {
    return await fs.promises.realpath(p);
  } catch {
    return path.resolve(p);
  }
}

let bootTimeCache: number | null | undefined;

/** Linux boot time (epoch seconds) from /proc/stat, for process start times. */
function linuxBootTime(): number | null {
  if (bootTimeCache !== undefined) return bootTimeCache;
  try {
    const m = /^btime (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'utf8'));
    bootTimeCache = m ? Number(m[1]) : null;
  } catch {
    bootTimeCache = null;
  }
  return bootTimeCache;
}

/** The one-letter state from /proc/<pid>/stat (R, S, Z...) on Linux, or null when unknown. */
export function linuxProcessState(pid: number): string | null {
  if (process.platform !== 'linux') return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] || null;
  } catch {
    return null;
  }
}

/** Process creation time in epoch seconds on Linux (what psutil reports), or null when unknown. */
export function linuxProcessStartTime(pid: number): number | null {
  if (process.platform !== 'linux') return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces and parentheses) start after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (rest[0] === 'Z') return null; // a zombie serves nothing
    const ticks = Number(rest[19]); // field 22 (starttime), in clock ticks since boot
    const boot = linuxBootTime();
    if (!Number.isFinite(ticks) || boot === null) return null;
    return boot + ticks / 100; // USER_HZ is 100 on every Linux ABI Node runs on
  } catch {
    return null;
  }
}

/**
 * The backend process is alive (signal 0 reaches it, or it exists but is not ours: EPERM). On Linux a
 * reused pid is told apart by its start time (the session file records it; > 1 s off = stale).
 */
export function pidAlive(pid: number, startTime?: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A zombie (exited, not yet reaped: kill -9 of a detached backend under a PID 1 that does not
  // reap) answers signal 0 but serves nothing; the Python side treats it as dead too.
  if (linuxProcessState(pid) === 'Z') return false;
  if (startTime !== undefined && process.platform === 'linux') {
    const actual = linuxProcessStartTime(pid);
    if (actual !== null && Math.abs(actual - startTime) > 1.0) return false;
  }
  return true;
}

export interface SessionFile {
  file: string;
  session: SessionInfo;
}

/** Called with each refusal of the trust rule (src/owned.ts); the caller logs it. */
export type OnRefused = (refusal: UnsafePath) => void;

/** The sessions directory passes the trust rule; a refusal is reported, never thrown. */
function sessionsDirTrusted(dir: string, onRefused?: OnRefused): boolean {
  try {
    checkSessionsDir(dir);
    return true;
  } catch (e) {
    if (!(e instanceof UnsafePath)) throw e;
    onRefused?.(e);
    return false;
  }
}

/** One session file through the trust rule: its parsed content, or null (missing, refused, unusable). */
async function readTrusted(file: string, onRefused?: OnRefused): Promise<SessionInfo | null> {
  try {
    const text = await readOwnedFile(file, 'session file');
    return text === null ? null : parseSession(text);
  } catch (e) {
    if (e instanceof UnsafePath) onRefused?.(e);
    return null; // refused, or vanished/unreadable between readdir and read
  }
}

/**
 * Every parseable `<instance_id>.json` in `dir` (temp files and dotfiles skipped). Stale ones are left
 * to the CLI to delete. A directory or file another user could control (src/owned.ts) yields nothing
 * and is passed to `onRefused`.
 */
export async function readSessions(dir: string, onRefused?: OnRefused): Promise<SessionFile[]> {
  if (!sessionsDirTrusted(dir, onRefused)) return [];
  let names: string[];
  try {
    names = await fs.promises.readdir(dir);
  } catch {
    return [];
  }
  const out: SessionFile[] = [];
  for (const name of names) {
    if (!name.endsWith('.json') || name.startsWith('.')) continue;
    const file = path.join(dir, name);
    const s = await readTrusted(file, onRefused);
    if (s && `${s.instance_id}.json` === name) out.push({ file, session: s });
  }
  return out;
}

export async function readSession(dir: string, instanceId: string, onRefused?: OnRefused): Promise<SessionInfo | null> {
  if (!sessionsDirTrusted(dir, onRefused)) return null;
  const s = await readTrusted(path.join(dir, `${instanceId}.json`), onRefused);
  return s && s.instance_id === instanceId ? s : null;
}
