/**
 * Finding and killing what a terminal's shell started, for the hard timeout when C-c was not
 * enough. No `vscode`. Linux reads /proc; macOS asks `ps`; elsewhere nothing is killed.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';

async function parentMap(): Promise<Map<number, number[]>> {
  const children = new Map<number, number[]>();
  const add = (pid: number, ppid: number) => {
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid)!.push(pid);
  };
  if (process.platform === 'linux') {
    for (const name of await fs.promises.readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = await fs.promises.readFile(`/proc/${name}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        add(Number(name), ppid);
      } catch {
        /* exited meanwhile */
      }
    }
  } else if (process.platform === 'darwin') {
    const out = await new Promise<string>((resolve) =>
      execFile('ps', ['-A', '-o', 'pid=,ppid='], (err, stdout) => resolve(err ? '' : stdout)),
    );
    for (const line of out.split('\n')) {
      const m = /^\s*(\d+)\s+(\d+)/.exec(line);
      if (m) add(Number(m[1]), Number(m[2]));
    }
  }
  return children;
}

/** Every descendant of `pid` (not `pid` itself), children before grandchildren. */
export async function descendants(pid: number): Promise<number[]> {
  const children = await parentMap();
  const out: number[] = [];
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length) {
    const p = queue.shift()!;
    if (out.includes(p)) continue;
    out.push(p);
    queue.push(...(children.get(p) ?? []));
  }
  return out;
}

export async function killDescendants(pid: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<number> {
  let n = 0;
  for (const p of await descendants(pid)) {
    try {
      process.kill(p, signal);
      n++;
    } catch {
      /* gone already */
    }
  }
  return n;
}

/**
 * A process's current directory as the kernel sees it (Linux /proc/<pid>/cwd), or null elsewhere.
 * Exact and immediate, unlike a terminal's reported cwd, which arrives with the next prompt.
 */
export function processCwd(pid: number): string | null {
  if (process.platform !== 'linux') return null;
  try {
    const p = fs.readlinkSync(`/proc/${pid}/cwd`);
    return p.endsWith(' (deleted)') ? null : p;
  } catch {
    return null;
  }
}

/**
 * Whether an interactive shell is waiting at its prompt: nothing runs in its terminal's foreground
 * but the shell, and the shell is asleep (reading its next line), not running a builtin loop. Linux
 * only (/proc); false elsewhere, where nothing is concluded from it.
 */
export function shellAtPrompt(shellPid: number): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const stat = fs.readFileSync(`/proc/${shellPid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = f[0];
    const pgrp = Number(f[2]);
    const tpgid = Number(f[5]);
    return state === 'S' && tpgid === pgrp;
  } catch {
    return false;
  }
}

/**
 * Kills the job running in the foreground of a terminal's shell (its foreground process group, from
 * /proc on Linux), leaving the shell and the agent's background jobs alone. Elsewhere, or when
 * the group cannot be told apart from the shell's, kills the shell's descendants instead.
 */
export async function killForegroundJob(shellPid: number): Promise<void> {
  if (process.platform === 'linux') {
    try {
      const stat = fs.readFileSync(`/proc/${shellPid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const pgrp = Number(f[2]);
      const tpgid = Number(f[5]); // the terminal's foreground process group
      if (tpgid > 0 && tpgid !== pgrp) {
        process.kill(-tpgid, 'SIGKILL');
        return;
      }
    } catch {
      /* fall through */
    }
  }
  await killDescendants(shellPid);
}
