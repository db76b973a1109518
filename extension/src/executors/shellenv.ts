/**
 * Small facts about the agent's shell that `run` observations carry (metadata), and the `export`
 * lines for `args.env`. No `vscode`.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { quoteSh } from '../runstate';

/** `export NAME='value'` lines; names were validated by parseAction. Never logged: values are secrets. */
export function envScript(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([k, v]) => `export ${k}=${quoteSh(v)}\n`)
    .join('');
}

/** `command -v python` (else python3) on PATH, as the local runtime reports it; relative entries ignored. */
export function findPython(pathVar = process.env.PATH ?? ''): string | null {
  const dirs = pathVar.split(path.delimiter).filter(Boolean);
  for (const name of process.platform === 'win32' ? ['python.exe', 'python3.exe'] : ['python', 'python3']) {
    for (const d of dirs) {
      if (!path.isAbsolute(d)) continue;
      const p = path.join(d, name);
      try {
        fs.accessSync(p, fs.constants.X_OK);
        if (fs.statSync(p).isFile()) return p;
      } catch {
        /* not here */
      }
    }
  }
  return null;
}

let cached: {
  at: number;
  value: { username: string | null; hostname: string | null; pyInterpreterPath: string | null };
} | null = null;

/**
 * username, hostname, py_interpreter_path for run metadata. The terminal inherits the extension
 * host's environment (plus pager settings), so its PATH decides the interpreter; re-read every 10 s.
 */
export function hostMetadata(): { username: string | null; hostname: string | null; pyInterpreterPath: string | null } {
  if (cached && Date.now() - cached.at < 10_000) return cached.value;
  let username: string | null = null;
  try {
    username = os.userInfo().username;
  } catch {
    username = process.env.USER ?? null;
  }
  // The short host name, as bash's \h shows it (and the local runtime reports).
  const value = { username, hostname: os.hostname().split('.')[0] || null, pyInterpreterPath: findPython() };
  cached = { at: Date.now(), value };
  return value;
}
