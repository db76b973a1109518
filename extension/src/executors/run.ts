/**
 * `run`: the agent's commands in dedicated, visible terminals: one per agent shell (SPEC-wave2 E:
 * `agent.shell`), named `oh · <agent name>` and started in the agent's workdir; one terminal named
 * "oh" per backend when the backend sends no `agent` (older backends).
 *
 * Preferred path: VS Code's shell integration. `executeCommand` runs the command in the terminal's
 * shell (so `cd`, exports and aliases persist between commands, as in OpenHands' bash session),
 * `execution.read()` streams exactly what the command printed (escape sequences stripped, see
 * ../ansi.ts) and `onDidEndTerminalShellExecution` gives the real exit code (./integrated.ts). Fallback, when shell
 * integration does not come up within a few seconds: ./pty.ts. The default, `oh.terminalMode: engine`, is
 * ./engineshell.ts (oh's shell engine; the retired `fast` mode maps to it: ./terminalmode.ts). The action
 * rules (timeouts, input, one command at a time) live in ../runstate.ts.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { ActionContext, SandboxSettings } from '../connection';
import { DEFAULT_RETENTION_S, ForegroundRecord, Job, jobFingerprint, JobTable, privateSpoolDir, Spool } from '../jobs';
import { resolvePath } from '../paths';
import {
  Action,
  Escalation,
  jobObservation,
  Observation,
  RunArgs,
  runArgs,
  runObservation,
  ToolError,
} from '../protocol';
import { CommandShell, MAX_WAIT_S, RunController, RunningCommand } from '../runstate';
import type { RunResult } from '../protocol';
import { left, place, QUEUE_LIMIT, queueFullMessage, Waiters, waitedOutMessage } from '../shellqueue';
import { allowedRoots, baseDir, workspaceRoots } from './files';
import { EngineShell, sandboxRefusal } from './engineshell';
import { IntegratedShell, waitForShellIntegration } from './integrated';
import { PtyShell } from './pty';
import { terminalMode } from './terminalmode';
import { hostMetadata } from './shellenv';

export const SHELL_INTEGRATION_WAIT_MS = 5000;
/** The shell engine host: Python start + the user's rc files (the host's own startup timeout is 5 s). */
const ENGINE_START_MS = 30_000;
const SECRET_ENV = /^OH_.*(TOKEN|SECRET)$|^OH_TOKEN$/;

/** Environment changes for the agent's shell: no `oh` secrets, and pagers that never wait for a key. */
function terminalEnv(): Record<string, string | null> {
  const env: Record<string, string | null> = { PAGER: 'cat', GIT_PAGER: 'cat' };
  for (const k of Object.keys(process.env)) if (SECRET_ENV.test(k)) env[k] = null;
  return env;
}

function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PAGER: 'cat', GIT_PAGER: 'cat', TERM: 'dumb' };
  for (const k of Object.keys(env)) if (SECRET_ENV.test(k)) delete env[k];
  return env;
}

/** A private directory for multi-line command scripts and the fallback's cwd file. */
function privateTmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'oh-vscode-'));
}

export interface RunExecutorDeps {
  log: (line: string) => void;
  confirmCommands: () => boolean;
  /**
   * The `oh.terminalMode` setting, read at each new agent terminal: `engine` (default) = ./engineshell.ts,
   * `shell` = VS Code's shell integration (./integrated.ts); the retired `fast` is read as `engine`.
   */
  terminalMode?: () => string;
  /** `oh.userShell` (default true): the engine runs the user's shell with their rc files; false: the clean shell. */
  userShell?: () => boolean;
  /** `oh.sandbox`: '' (default: the backend's `sandbox` setting) or a level that overrides it for this window (§3.17). */
  sandbox?: () => string;
  /** Asks the user what to do with a command left running by a backend that went away. */
  askInterrupt?: (terminalName: string, command: string) => Promise<boolean>;
}

/** One agent shell: its terminal (created lazily), and the rules of the command running there. */
class Slot {
  shell: IntegratedShell | PtyShell | EngineShell | null = null;
  preferPty = false;
  /** The backend's interpreter (session file `python`), which runs the shell engine host. */
  python: string | undefined;
  /** The backend's `user_shell` / `shell_startup_timeout` settings, when it sent them (§3.4.1). */
  backendUserShell: boolean | undefined;
  startupTimeoutS: number | undefined;
  /** The backend's sandbox settings and allowed roots (§3.17): the engine host's flags. */
  backendSandbox: SandboxSettings | undefined;
  roots: string[] | undefined;
  /** The engine could not start for this terminal: it uses the fallback from now on. */
  engineFailed = false;
  /** Sentences for the next observation of a command run here (e.g. why the engine is not used). */
  readonly notes: string[] = [];
  starting: Promise<CommandShell> | null = null;
  lastCwd: string | null = null;
  controller: RunController;
  /** Id of the command started here last (the backend's top-level job_id). */
  jobId: string | null = null;
  /** When that command started (executor-wide order): follow-ups without job_id go to the newest running one. */
  startedSeq = 0;
  /** Extra terminals of this agent shell, by the id of the one command each runs (main slots only). */
  readonly extras = new Map<string, Slot>();
  /** `#N` in an extra terminal's name (0 = the main terminal). */
  num = 0;
  /** When its current command started (for `job list`). */
  startedAt = 0;
  /** What an extra terminal shows first: why it exists (the live view says where the command went). */
  banner: string | undefined;
  /** Where an extra terminal started. */
  startDir: string | null = null;
  /** An extra terminal's start: the main shell's exports (asked of its engine host when the extra was made). */
  initEnv: Promise<Record<string, string>> | undefined;
  /** The background job this extra terminal runs (job terminals only). */
  job: Job | null = null;
  /** A one-shot terminal for a command the consent gate allowed out of the sandbox or onto the network (§3.17). */
  escalation: Escalation | null = null;
  /** The backend's job_retention (s), as its latest action context said. */
  retentionS = DEFAULT_RETENTION_S;
  /** Background jobs of this agent shell (used on main slots). */
  readonly jobs = new JobTable(() => this.retentionS);
  /** Runs waiting for a free terminal of this agent shell (main slots; ../shellqueue.ts). */
  readonly waiters = new Waiters();

  constructor(
    readonly key: string,
    readonly backend: string,
    readonly shellKey: string,
    readonly name: string,
    readonly workdir: string | null,
    ensure: (slot: Slot) => Promise<CommandShell>,
  ) {
    this.controller = new RunController(
      () => ensure(this),
      () => this.shell,
    );
  }
}

const LEGACY_BACKEND = 'window';
function mainBusyMessage(command: string): string {
  return (
    `Your command "${command.slice(0, 200)}" was NOT executed: the previous command is still running. ` +
    'Wait for it (send an empty command), send it input (is_input), interrupt it (is_input "C-c"), or reset the shell.'
  );
}

/** Terminals per agent shell (main + extra) when the backend's registered answer does not say (its default). */
export const DEFAULT_MAX_SHELLS = 8;

export function allBusyMessage(command: string, maxShells: number): string {
  return (
    `Your command "${command.slice(0, 200)}" was NOT executed: this agent's terminal and its ${maxShells - 1} extra terminals ` +
    `are all busy (max_shells = ${maxShells}). Wait for a command to finish (send an empty command with args.job_id), ` +
    'interrupt one (is_input "C-c" with args.job_id), or raise the backend setting max_shells.'
  );
}

/** The first line of an escalated command's observation (the local runtime's sentences, docs/protocol.md §3.17). */
export function escalationNote(esc: Escalation): string {
  return esc.sandbox === 'off'
    ? `[This command ran OUTSIDE the sandbox, as the user, in a shell of its own (reason: ${esc.reason}).]\n`
    : `[This command ran in the sandbox WITH THE NETWORK, in a shell of its own (reason: ${esc.reason}).]\n`;
}

function escalationBanner(esc: Escalation): string {
  const what = esc.sandbox === 'off' ? 'OUTSIDE the sandbox' : 'in the sandbox WITH THE NETWORK';
  return `you allowed this command to run ${what} (reason: ${terminalLabel(esc.reason)}); this terminal ends with it.`;
}

/** Finished background jobs whose terminals stay open for the user to read (the oldest closes first). */
const KEPT_JOB_TERMINALS = 5;

function terminalLabel(command: string): string {
  const one = command.replace(/[\x00-\x1f\x7f-\x9f]+/g, ' ').trim();
  return one.length <= 40 ? one : one.slice(0, 39) + '…';
}

export class RunExecutor implements vscode.Disposable {
  private readonly slots = new Map<string, Slot>();
  private seq = 0;
  private tmpDir: string | null = null;
  private spoolDir: string | null = null;
  private readonly finishedJobTerminals: Slot[] = [];
  private engineNoteSaid = false;
  private readonly subs: vscode.Disposable[] = [];
  /** Runs per agent shell that may wait for a free terminal (then BUSY): ../shellqueue.ts. */
  queueLimit = QUEUE_LIMIT;

  constructor(private readonly deps: RunExecutorDeps) {
    this.subs.push(
      vscode.window.onDidCloseTerminal((t) => {
        for (const slot of [...this.slots.values()].flatMap((m) => [m, ...m.extras.values()])) {
          if (slot.shell instanceof IntegratedShell && t === slot.shell.terminal) {
            slot.lastCwd = slot.shell.cwd();
            slot.shell.dispose();
            slot.shell = null;
            slot.controller.shellClosed(t.exitStatus?.code);
            this.deps.log(`the "${slot.name}" terminal was closed; the next command opens a new one`);
          }
        }
      }),
    );
  }

  private tmp(): string {
    if (!this.tmpDir || !fs.existsSync(this.tmpDir)) this.tmpDir = privateTmpDir();
    return this.tmpDir;
  }

  /** The slot of the action's agent shell on its backend (agents presenting the same key share it). */
  private slotFor(action: Action, ctx?: ActionContext): Slot {
    const backend = ctx?.backend ?? LEGACY_BACKEND;
    const shellKey = action.agent?.shell ?? 'default';
    const key = `${backend}|${shellKey}`;
    let slot = this.slots.get(key);
    if (!slot) {
      const name = action.agent ? `oh · ${action.agent.name}` : 'oh';
      const workdir = action.agent?.workdir || ctx?.workspace || null;
      slot = new Slot(key, backend, shellKey, name, workdir, (s) => this.ensureShell(s));
      this.slots.set(key, slot);
    }
    if (ctx?.python) slot.python = ctx.python;
    if (ctx) {
      slot.backendUserShell = ctx.userShell;
      slot.startupTimeoutS = ctx.shellStartupTimeoutS;
      slot.backendSandbox = ctx.sandbox;
      slot.roots = ctx.roots;
    }
    return slot;
  }

  /** The slot's terminal, created lazily on the first command and reused afterwards. */
  private ensureShell(slot: Slot): Promise<CommandShell> {
    if (slot.shell) return Promise.resolve(slot.shell);
    if (!slot.starting) {
      slot.starting = this.createShell(slot).finally(() => (slot.starting = null));
    }
    return slot.starting;
  }

  private async startDir(slot: Slot): Promise<string> {
    if (slot.lastCwd && fs.existsSync(slot.lastCwd)) return slot.lastCwd;
    if (slot.workdir && fs.existsSync(slot.workdir)) return slot.workdir;
    const { roots } = await workspaceRoots();
    return roots[0]?.path ?? os.homedir();
  }

  private async createShell(slot: Slot): Promise<CommandShell> {
    const cwd = await this.startDir(slot);
    if (slot.escalation) return this.createEscalatedShell(slot, cwd);
    if (this.mode() === 'engine' && !slot.engineFailed) {
      let why = this.engineUnavailable(slot);
      if (!why) {
        try {
          return await this.createEngineShell(slot, cwd);
        } catch (e) {
          const message = e instanceof Error ? e.message : String(e);
          // The shell cannot be sandboxed and the settings refuse to run it unconfined: never fall back to an
          // unconfined terminal; the command fails with the host's message (it names the fix).
          if (sandboxRefusal(message))
            throw new ToolError(message.replace(/^.*?oh engine: /s, ''), 'SANDBOX_UNAVAILABLE');
          why = `its host did not start (${message})`;
        }
      }
      slot.engineFailed = true;
      this.fallbackNote(slot, why);
    }
    if (!slot.preferPty) {
      const t0 = Date.now();
      // bash on POSIX: agents (OpenHands' CmdRunAction) write bash, and VS Code's bash integration is its most reliable.
      const shellPath = process.platform !== 'win32' && fs.existsSync('/bin/bash') ? '/bin/bash' : undefined;
      const terminal = vscode.window.createTerminal({
        name: slot.name,
        cwd,
        shellPath,
        env: terminalEnv(),
        isTransient: true,
        iconPath: new vscode.ThemeIcon('hubot'),
      });
      terminal.show(true); // visible, without taking the keyboard focus from the user
      const si = await waitForShellIntegration(terminal, SHELL_INTEGRATION_WAIT_MS);
      if (si) {
        this.deps.log(`"${slot.name}" terminal ready with shell integration in ${Date.now() - t0} ms (in ${cwd})`);
        slot.shell = new IntegratedShell(
          terminal,
          this.tmp(),
          cwd,
          process.env.OH_VSCODE_TRACE ? this.deps.log : undefined,
        );
        return slot.shell;
      }
      this.deps.log(
        `shell integration did not start within ${SHELL_INTEGRATION_WAIT_MS / 1000} s; ` +
          `running commands in a pseudoterminal instead (still visible in the "${slot.name}" terminal)`,
      );
      terminal.dispose();
      slot.preferPty = true;
    }
    const pty: PtyShell = new PtyShell(
      cwd,
      childEnv(),
      this.tmp(),
      () => {
        if (slot.shell === pty) {
          slot.lastCwd = pty.cwd();
          slot.shell = null;
          slot.preferPty = false; // closed by the user: the next terminal tries shell integration again
          slot.controller.shellClosed(undefined);
          this.deps.log(`the "${slot.name}" terminal was closed; the next command opens a new one`);
        }
      },
      slot.name,
      slot.banner,
    );
    pty.terminal.show(true);
    slot.shell = pty;
    return pty;
  }

  private mode(): string {
    return terminalMode(this.deps.terminalMode?.()).mode;
  }

  /** Why the shell engine cannot run here, or null when it can. */
  private engineUnavailable(slot: Slot): string | null {
    if (process.platform === 'win32') return 'it needs a POSIX pseudo-terminal, which Windows does not have';
    if (!slot.python)
      return 'the backend did not name its Python interpreter (its session file has no `python`: an older oh)';
    if (!fs.existsSync(slot.python))
      return `the backend's interpreter ${slot.python} is not on this machine (a backend on another host?)`;
    return null;
  }

  /** The engine fell back: logged every time, said once in an observation (never silently). */
  private fallbackNote(slot: Slot, why: string): void {
    const instead = slot.preferPty
      ? 'a pseudoterminal running each command in a bash of its own'
      : "VS Code's shell-integrated terminal";
    this.deps.log(`"${slot.name}": oh's shell engine is not used: ${why}; ${instead} instead`);
    if (this.engineNoteSaid) return;
    this.engineNoteSaid = true;
    slot.notes.push(
      `[oh: this agent's terminal is ${instead} (oh.terminalMode "shell") instead of oh's shell engine: ${why}. ` +
        "The user's rc files may print into outputs there, and some command shapes are slower.]",
    );
  }

  /** The sandbox for a new engine shell: this window's `oh.sandbox` level if set, else the backend's settings. */
  private sandboxFor(slot: Slot): SandboxSettings | undefined {
    const level = this.deps.sandbox?.() ?? '';
    if (level === 'workspace-write' || level === 'read-only' || level === 'off') {
      return { ...(slot.backendSandbox ?? { network: false }), level };
    }
    return slot.backendSandbox;
  }

  /**
   * The one-shot engine host of an approved escalation: never a fallback terminal (an unconfined one would give a
   * network-only escalation more than the user allowed), so a host that does not start fails the command.
   */
  private async createEscalatedShell(slot: Slot, cwd: string): Promise<CommandShell> {
    const why = this.engineUnavailable(slot);
    try {
      if (why) throw new Error(why);
      return await this.createEngineShell(slot, cwd);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      throw new ToolError(
        `The command was NOT executed: the shell engine host for it did not start (${message.replace(/^.*?oh engine: /s, '')}).`,
        sandboxRefusal(message) ? 'SANDBOX_UNAVAILABLE' : 'TOOL_ERROR',
      );
    }
  }

  /** `oh.terminalMode: engine` (./engineshell.ts): the user's shell on a pty, run by the backend's Python. */
  private async createEngineShell(slot: Slot, cwd: string): Promise<CommandShell> {
    const t0 = Date.now();
    const engine: EngineShell = new EngineShell({
      python: slot.python!,
      cwd,
      // The clean shell when the backend says so (`oh start --clean-shell`) or this window's setting does.
      clean: slot.backendUserShell === false || !(this.deps.userShell?.() ?? true),
      startupTimeoutS: slot.startupTimeoutS,
      sandbox: this.sandboxFor(slot),
      roots: slot.roots,
      escalation: slot.escalation?.sandbox,
      // The main terminal keeps its exports for its extra and one-shot terminals, which start with them.
      keepExports: slot.num === 0,
      initEnv: slot.initEnv,
      name: slot.name,
      banner: slot.banner,
      log: this.deps.log,
      onClosed: () => {
        if (slot.shell === engine) {
          slot.lastCwd = engine.cwd();
          slot.shell = null;
          slot.controller.shellClosed(undefined);
          this.deps.log(`the "${slot.name}" terminal was closed; the next command opens a new one`);
        }
      },
    });
    engine.terminal.show(true);
    let timer: NodeJS.Timeout | undefined;
    try {
      const ready = await Promise.race([
        engine.ready,
        new Promise<never>(
          (_, rej) => (timer = setTimeout(() => rej(new Error('no answer within 30 s')), ENGINE_START_MS)),
        ),
      ]);
      this.deps.log(
        `"${slot.name}" terminal ready in ${Date.now() - t0} ms (shell engine: ${ready.shell} ${ready.path}, pid ${ready.pid}` +
          `, ${ready.rc}, in ${cwd})`,
      );
    } catch (e) {
      engine.terminal.dispose();
      engine.dispose();
      throw e;
    } finally {
      clearTimeout(timer);
    }
    slot.shell = engine;
    return engine;
  }

  /** args.cwd: relative to the agent's workdir, and inside the backend's workspace + allowed roots (PATH_DENIED). */
  private async checkedCwd(raw: string, action: Action, ctx?: ActionContext): Promise<string> {
    const rp = await resolvePath(raw, await allowedRoots(ctx), baseDir(action, ctx));
    let isDir = false;
    try {
      isDir = fs.statSync(rp.real).isDirectory();
    } catch {
      /* missing */
    }
    if (!isDir) throw new ToolError(`The working directory ${rp.shown} does not exist or is not a directory.`);
    return rp.shown;
  }

  /** Kills what runs in the slot's terminal and disposes it; the next command gets a fresh shell. */
  private async resetSlot(slot: Slot): Promise<void> {
    const shell = slot.shell;
    if (slot.controller.busy && shell) await shell.killRunning();
    slot.shell = null;
    slot.lastCwd = null; // a fresh shell starts in the agent's workdir
    slot.controller.shellClosed(undefined);
    slot.controller = new RunController(
      () => this.ensureShell(slot),
      () => slot.shell,
    );
    if (shell instanceof IntegratedShell) {
      shell.dispose();
      shell.terminal.dispose();
    } else if (shell) {
      shell.dispose();
      shell.terminal.dispose();
    }
  }

  async execute(action: Action, signal: AbortSignal, ctx?: ActionContext): Promise<Observation> {
    const args = runArgs(action);
    const slot = this.slotFor(action, ctx);
    const cwd = args.cwd ? await this.checkedCwd(args.cwd, action, ctx) : null;
    if (ctx?.jobRetentionS !== undefined) slot.retentionS = ctx.jobRetentionS;
    const newCommand = !args.is_input && args.command.trim() !== '';
    if (newCommand && typeof action.args.job_id === 'string') {
      throw new ToolError(
        'args.job_id names the running command an empty command or is_input belongs to; a new command takes none (it gets its own id).',
        'BAD_REQUEST',
      );
    }
    const reset = await this.resetAndConfirm(slot, action, args);
    if (reset) return reset;
    if (args.env) this.deps.log(`run exports ${Object.keys(args.env).join(', ')} (values not logged)`);
    // §3.17: a run asking to leave the sandbox runs only with the backend's `escalation` (its consent gate's yes).
    const escalation = this.escalationOf(action);
    const asUsual = escalation ? this.escalationNeedless(slot, escalation) : null;
    const escalate = escalation && asUsual === null ? escalation : undefined;
    if (action.args.background === true) return this.startJob(slot, action, args, cwd, ctx, escalate, asUsual ?? '');
    if (escalate) return this.runEscalated(slot, action, args, cwd, ctx, escalate, signal);
    // While the agent's main terminal is starting (its shell integration not up yet), new commands
    // wait for it instead of opening extra terminals: terminals created in a burst next to a starting
    // shell-integrated one made its first command come back empty in a real VS Code (issue 11).
    while (newCommand && slot.starting) await slot.starting.catch(() => undefined);
    // No await unless it must wait in line: a tick here would let two commands pick the same idle terminal.
    const inLine =
      newCommand && action.args.exclusive !== true ? this.lineUp(slot, action, args.command, signal, ctx) : null;
    const queued = inLine ? await inLine : null;
    const timeoutS = queued ? queued.timeoutS : action.timeout;
    const note = queued ? queued.note : '';
    // No await between choosing the terminal and controller.run claiming it: two commands arriving
    // together never pick the same idle terminal.
    let target: Slot;
    try {
      target = this.laneFor(slot, action, args.is_input || args.command.trim() === '', ctx);
    } catch (e) {
      if (note) {
        slot.waiters.line.shift(); // it waited and is first in line: let the next one look
        slot.waiters.notify();
      }
      throw e;
    }
    let r: RunResult;
    try {
      const running = target.controller.run(args, { timeoutS, signal }, cwd);
      if (note) {
        slot.waiters.line.shift(); // claimed: leave the line, the next may look now
        slot.waiters.notify();
      }
      r = await running;
    } finally {
      if (target !== slot && !target.controller.busy) this.retire(slot, target);
      if (!slot.controller.busy) slot.waiters.notify();
    }
    if (target !== slot && newCommand) r = { ...r, prefix: this.extraNote(slot, target) + (r.prefix ?? '') };
    if (target.notes.length) r = { ...r, suffix: (r.suffix ?? '') + '\n' + target.notes.splice(0).join('\n') };
    if (note) r = { ...r, prefix: note + (r.prefix ?? '') };
    if (asUsual) r = { ...r, prefix: asUsual + (r.prefix ?? '') };
    const o = runObservation(action.id, args.command, { ...r, ...hostMetadata() }, args.hidden);
    // The command's id: always for an extra terminal's command, and for one still running (soft timeout).
    const jid = target.jobId;
    if (jid && (target !== slot || (r.exitCode === -1 && target.controller.busy))) {
      ((o.extras as Record<string, unknown>).metadata as Record<string, unknown>).job_id = jid;
    }
    return o;
  }

  /** `args.reset` (a reset alone answers at once) and the user's own confirmation setting, before anything runs. */
  private async resetAndConfirm(slot: Slot, action: Action, args: RunArgs): Promise<Observation | null> {
    if (args.reset) {
      await this.resetSlot(slot);
      this.deps.log(`"${slot.name}" terminal reset`);
      if (args.command.trim() === '' && !args.is_input) {
        return runObservation(
          action.id,
          args.command,
          {
            content: 'Terminal session has been reset.',
            exitCode: 0,
            workingDir: await this.startDir(slot),
            ...hostMetadata(),
          },
          args.hidden,
        );
      }
    }
    if (!args.is_input && args.command.trim() !== '' && this.deps.confirmCommands()) {
      const choice = await vscode.window.showWarningMessage(
        `The agent wants to run a command in the "${slot.name}" terminal.`,
        { modal: true, detail: args.command },
        'Run',
      );
      if (choice !== 'Run') throw new ToolError(`The user declined to run \`${args.command}\`.`, 'INTERRUPTED');
    }
    return null;
  }

  /**
   * Beyond max_shells: wait in line for a free terminal (issue 18; ../shellqueue.ts). Null, synchronously, when the
   * command need not wait; BUSY thrown when the line is full.
   */
  private lineUp(
    slot: Slot,
    action: Action,
    command: string,
    signal: AbortSignal,
    ctx?: ActionContext,
  ): Promise<{ timeoutS: number | undefined; note: string }> | null {
    if (!slot.controller.busy && !slot.waiters.line.length) return null;
    const max = ctx?.maxShells ?? DEFAULT_MAX_SHELLS;
    const inUse = slot.controller.busy ? 1 + slot.extras.size : 0;
    const verdict = place(inUse, max, slot.waiters.line.length, this.queueLimit);
    if (verdict === 'busy')
      throw new ToolError(queueFullMessage(command, inUse, max, slot.waiters.line.length), 'BUSY');
    if (verdict !== 'wait') return null;
    return this.waitForTerminal(slot, max, command, action.timeout, signal).then((waitedS) => ({
      timeoutS: left(action.timeout, waitedS),
      note: `[This command waited ${waitedS.toFixed(1)} s for a free shell: ${max} (max_shells) were busy.]\n`,
    }));
  }

  /**
   * The backend's `escalation` of a run that asks to leave the sandbox (`args.sandbox`). Without it the run was not
   * allowed to leave (an agent's frame reaching us some other way, an older backend): REJECTED, nothing runs. It
   * must never run confined by accident either: the agent asked for more and would read a confined failure.
   */
  private escalationOf(action: Action): Escalation | undefined {
    const asked = action.args.sandbox;
    if (asked === undefined || asked === null) return undefined;
    if (!action.escalation) {
      throw new ToolError(
        `This command asks to run with args.sandbox ${JSON.stringify(asked)}, and the backend did not say its consent gate ` +
          'allowed it (no `escalation`): it was NOT executed.',
        'REJECTED',
      );
    }
    return action.escalation;
  }

  /**
   * Why an allowed escalation needs no shell of its own, as the prefix of its observation (the local runtime's
   * sentences); null when it does. VS Code's integrated terminal (`oh.terminalMode: shell`, or the engine's fallback)
   * is the user's own terminal, never sandboxed; the sandbox may be off already, or have the network on.
   */
  private escalationNeedless(slot: Slot, esc: Escalation): string | null {
    if (this.mode() !== 'engine' || slot.engineFailed || this.engineUnavailable(slot)) {
      return "[The agent's terminal is VS Code's own terminal, which is not sandboxed: the command ran as usual.]\n";
    }
    const sb = this.sandboxFor(slot);
    if (sb?.level === 'off') return "[The agent's shell is not sandboxed: the command ran as usual.]\n";
    if (esc.sandbox === 'network' && sb?.network)
      return "[The agent's shell has the network already: the command ran as usual.]\n";
    return null;
  }

  /**
   * An allowed escalation in the foreground: a one-shot engine host with the escalated sandbox, started where the
   * agent's shell is (or args.cwd), streamed in a terminal of its own; that host ends with the command (retire).
   */
  private async runEscalated(
    slot: Slot,
    action: Action,
    args: RunArgs,
    cwd: string | null,
    ctx: ActionContext | undefined,
    esc: Escalation,
    signal: AbortSignal,
  ): Promise<Observation> {
    const max = ctx?.maxShells ?? DEFAULT_MAX_SHELLS;
    if (1 + slot.extras.size >= max) throw new ToolError(allBusyMessage(args.command, max), 'BUSY');
    const lane = this.newExtra(slot, action, undefined, esc);
    lane.jobId = action.jobId ?? null;
    lane.startedSeq = ++this.seq;
    lane.startedAt = Date.now();
    let r: RunResult;
    try {
      r = await lane.controller.run(args, { timeoutS: action.timeout, signal }, cwd);
    } finally {
      if (!lane.controller.busy) this.retire(slot, lane);
    }
    if (lane.notes.length) r = { ...r, suffix: (r.suffix ?? '') + '\n' + lane.notes.splice(0).join('\n') };
    r = { ...r, prefix: escalationNote(esc) + (r.prefix ?? '') };
    const o = runObservation(action.id, args.command, { ...r, ...hostMetadata() }, args.hidden);
    if (lane.jobId) ((o.extras as Record<string, unknown>).metadata as Record<string, unknown>).job_id = lane.jobId;
    return o;
  }

  /**
   * Waits until this run is first in line and a terminal of the agent shell is free; the seconds it
   * waited. Throws TIMEOUT (not executed) when its timeout (or MAX_WAIT_S) runs out first.
   */
  private async waitForTerminal(
    slot: Slot,
    max: number,
    command: string,
    timeoutS: number | undefined,
    signal: AbortSignal,
  ): Promise<number> {
    const t0 = Date.now();
    const limitMs = (timeoutS ?? MAX_WAIT_S) * 1000;
    const token = {};
    const q = slot.waiters;
    q.line.push(token);
    const wake = () => q.notify();
    signal.addEventListener('abort', wake, { once: true });
    // The main terminal's command ending frees it: wake the line then.
    void slot.controller.idle().then(wake);
    try {
      while (!(q.line[0] === token && (!slot.controller.busy || 1 + slot.extras.size < max))) {
        if (signal.aborted)
          throw new ToolError(
            'The action was cancelled while it waited for a free terminal; it was NOT executed.',
            'INTERRUPTED',
          );
        const remaining = limitMs - (Date.now() - t0);
        if (remaining <= 0) throw new ToolError(waitedOutMessage(command, (Date.now() - t0) / 1000, max), 'TIMEOUT');
        await q.next(remaining);
      }
    } catch (e) {
      q.line.splice(q.line.indexOf(token), 1);
      q.notify(); // not taking a terminal: the next in line looks again
      throw e;
    } finally {
      signal.removeEventListener('abort', wake);
    }
    // Still first in line: the caller leaves the line only once it has claimed a terminal (an async
    // return resumes it a microtask later; meanwhile the next in line must not see the place as free).
    return (Date.now() - t0) / 1000;
  }

  /**
   * Which terminal of the agent's shell serves this action (docs/protocol.md §3.8). Follow-ups go to
   * the command `args.job_id` names, else to the most recently started one still running. A new
   * command goes to the main terminal when it is idle, else to a new extra terminal started in the
   * main one's directory, up to max_shells terminals in all (then BUSY).
   */
  private laneFor(slot: Slot, action: Action, followUp: boolean, ctx?: ActionContext): Slot {
    const lanes = [slot, ...slot.extras.values()];
    if (followUp) {
      const jid = typeof action.args.job_id === 'string' ? action.args.job_id : null;
      if (jid) {
        const hit = lanes.find((l) => l.jobId === jid && l.controller.busy);
        if (!hit)
          throw new ToolError(
            `No running command ${jid} in this agent's shell (it ended, or the id is unknown).`,
            'NO_COMMAND',
          );
        return hit;
      }
      // Background jobs are followed by naming them; the rest of the flow is the foreground commands'.
      const running = lanes.filter((l) => l.controller.busy && !l.job).sort((a, b) => b.startedSeq - a.startedSeq);
      return running[0] ?? slot;
    }
    let lane = slot;
    if (slot.controller.busy) {
      const max = ctx?.maxShells ?? DEFAULT_MAX_SHELLS;
      // args.exclusive: one terminal, as the OpenHands SDK's (a new command while one runs is an error it sees).
      if (action.args.exclusive === true)
        throw new ToolError(mainBusyMessage(String(action.args.command ?? '')), 'BUSY');
      if (lanes.length >= max) throw new ToolError(allBusyMessage(String(action.args.command ?? ''), max), 'BUSY');
      lane = this.newExtra(slot, action);
    }
    lane.jobId = action.jobId ?? null;
    lane.startedSeq = ++this.seq;
    lane.startedAt = Date.now();
    return lane;
  }

  /**
   * The observation of a command that ran in an extra terminal says so, and why (the local runtime's
   * sentence, §3.8): a stuck main terminal never silently sends commands elsewhere.
   */
  private extraNote(slot: Slot, extra: Slot): string {
    const busy = slot.controller.runningCommand;
    const exports = extra.initEnv ? 'with' : 'without';
    return (
      `[The agent's terminal was busy${busy ? ` (running ${terminalLabel(busy)})` : ''}: this command ran in an extra terminal ` +
      `"${extra.name}" (${extra.jobId ?? 'no id'}) started in ${extra.startDir ?? 'the workspace folder'}, ${exports} the agent ` +
      "terminal's exports; its cd and exports do not carry over. Wait for the busy command (an empty command), interrupt it " +
      '(is_input "C-c") or reset the terminal to run in the agent\'s terminal again.]\n'
    );
  }

  /** An extra terminal; `label` names a background job's terminal (else `#N`); `escalation`: a one-shot escalated one. */
  private newExtra(slot: Slot, action: Action, label?: string, escalation?: Escalation): Slot {
    const used = new Set([...slot.extras.values()].map((e) => e.num));
    let num = 2;
    while (used.has(num)) num++;
    const id = action.jobId ?? `x${++this.seq}`;
    const what = escalation ? (escalation.sandbox === 'off' ? 'outside the sandbox' : 'with the network') : '';
    const name = label ? `${slot.name} · ${label}` : what ? `${slot.name} · ${what}` : `${slot.name} #${num}`;
    const extra = new Slot(`${slot.key}#${num}`, slot.backend, slot.shellKey, name, slot.workdir, (s) =>
      this.ensureShell(s),
    );
    extra.num = num;
    extra.python = slot.python;
    extra.backendUserShell = slot.backendUserShell;
    extra.startupTimeoutS = slot.startupTimeoutS;
    extra.backendSandbox = slot.backendSandbox;
    extra.roots = slot.roots;
    // Started where the main terminal is now; its own `cd`s and exports stay in it.
    extra.lastCwd = slot.shell?.cwd() ?? slot.lastCwd;
    extra.startDir = extra.lastCwd;
    // ... and with its exports, as the local runtime's extra shells (group.py): asked of the main engine host now, one
    // answer per extra terminal (no cost per command), exported before the extra's command. VS Code's own terminal
    // (`oh.terminalMode: shell`) cannot say them: its extras start without.
    if (slot.shell instanceof EngineShell) extra.initEnv = slot.shell.exports();
    extra.escalation = escalation ?? null;
    if (label) extra.banner = `the agent's background ${label}; its whole output is also kept for the job action.`;
    else if (!escalation) {
      // Never silently elsewhere: the live view (and the observation, see execute) says why it runs here.
      const busy = slot.controller.runningCommand;
      extra.banner =
        `the agent's terminal "${slot.name}" is busy${busy ? ` running ${terminalLabel(busy)}` : ''}: this command runs here, ` +
        'in a shell of its own (its cd and exports do not carry over).';
    }
    if (escalation) extra.banner = escalationBanner(escalation) + (extra.banner ? ` ${extra.banner}` : '');
    // A pseudoterminal (./pty.ts): it serves one command, so shell state need not persist, it is ready at
    // once, and in the e2e suite terminals created in a burst with shell integration sometimes never
    // reported their command's end (the pseudoterminal reports it itself).
    extra.preferPty = true;
    slot.extras.set(id, extra);
    // An extra terminal serves one command: closed when that command ends, whether or not anyone is waiting on it.
    // (A microtask later: the caller claims the terminal for its command right after this returns.)
    void Promise.resolve()
      .then(() => extra.controller.idle())
      .then(() => setTimeout(() => this.retire(slot, extra), 50));
    return extra;
  }

  /** Disposes an extra terminal whose command ended (the main terminal is kept). */
  private retire(slot: Slot, extra: Slot): void {
    if (extra.controller.busy) return;
    let found = false;
    for (const [id, e] of slot.extras) {
      if (e === extra) {
        slot.extras.delete(id);
        found = true;
      }
    }
    if (!found) return;
    slot.waiters.notify(); // a place under max_shells came free
    if (!extra.job) {
      void this.resetSlot(extra);
      return;
    }
    // A finished job's terminal stays open so the user can read what it printed; only the newest few.
    this.finishedJobTerminals.push(extra);
    while (this.finishedJobTerminals.length > KEPT_JOB_TERMINALS)
      void this.resetSlot(this.finishedJobTerminals.shift()!);
  }

  // ------------------------------------------------------------------ background jobs (§3.8)

  private spool(jobId: string): Spool {
    if (!this.spoolDir || !fs.existsSync(this.spoolDir)) this.spoolDir = privateSpoolDir();
    return new Spool(
      path.join(this.spoolDir, `${jobId}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}.out`),
    );
  }

  /** `run` with args.background: the command starts in a terminal of its own and the answer returns at once. */
  private async startJob(
    slot: Slot,
    action: Action,
    args: RunArgs,
    cwd: string | null,
    ctx?: ActionContext,
    escalation?: Escalation,
    note = '',
  ): Promise<Observation> {
    const where = cwd ?? slot.shell?.cwd() ?? slot.lastCwd ?? (await this.startDir(slot));
    slot.jobs.purge();
    const fp = jobFingerprint(args.command, where, args.env);
    if (action.args.force !== true) {
      const dup = slot.jobs.duplicate(fp);
      if (dup) {
        return this.jobRunObservation(
          action,
          args,
          dup,
          `\n[Job ${dup.jobId} with the same command, directory and environment is already running (pid ${dup.pid}); it was not started ` +
            'again. Follow it with the job action (op poll, wait, output, cancel), or set args.force to start another.]',
        );
      }
    }
    const max = ctx?.maxShells ?? DEFAULT_MAX_SHELLS;
    if (1 + slot.extras.size >= max) throw new ToolError(allBusyMessage(args.command, max), 'BUSY');
    const jid = action.jobId ?? `x${++this.seq}`;
    const job = new Job(jid, args.command, where, args.env, fp, this.spool(jid));
    const lane = this.newExtra(slot, action, `job ${jid}: ${terminalLabel(args.command)}`, escalation);
    lane.lastCwd = where;
    lane.job = job;
    lane.jobId = jid;
    lane.startedSeq = ++this.seq;
    lane.startedAt = Date.now();
    slot.jobs.add(job);
    let started: { cmd: RunningCommand; shell: CommandShell };
    try {
      started = await lane.controller.startDetached(args, null, (text) => job.onOutput(text));
    } catch (e) {
      slot.extras.delete(jid);
      slot.jobs.jobs.delete(jid);
      job.spool.close();
      void this.resetSlot(lane);
      throw e;
    }
    job.pid = started.shell.pid() ?? -1;
    this.deps.log(`job ${jid} started in the "${lane.name}" terminal`);
    ctx?.sendFrame?.({
      type: 'job_event',
      event: 'job_started',
      job: job.record() as unknown as Record<string, unknown>,
    });
    void started.cmd.whenDone().then(() => this.jobEnded(slot, lane, job, started.cmd, ctx));
    return this.jobRunObservation(
      action,
      args,
      job,
      `\n[Started in the background as job ${jid} (pid ${job.pid}). Follow it with the job action and args.job_id "${jid}": ` +
        'op poll (state and output tail), wait (until it ends), output (all of it, from an offset), cancel.]',
      escalation ? escalationNote(escalation) : note,
    );
  }

  /** A background job's command ended: its final state to the backend, and its terminal's place freed. */
  private jobEnded(slot: Slot, lane: Slot, job: Job, cmd: RunningCommand, ctx?: ActionContext): void {
    const code = cmd.exitCode ?? null;
    // A job whose shell ended with a status (`exit 5` in the engine's shell) simply finished; LOST is a
    // terminal that went away without one (closed by the user, its engine gone).
    const state =
      cmd.shellExited && code === null ? 'LOST' : job.cancelled ? 'CANCELLED' : code === 0 ? 'SUCCEEDED' : 'FAILED';
    job.finish(state, code);
    this.deps.log(`job ${job.jobId} ${job.state}${code === null ? '' : ` (exit ${code})`}`);
    ctx?.sendFrame?.({
      type: 'job_event',
      event: 'job_finished',
      job: job.record() as unknown as Record<string, unknown>,
    });
    setTimeout(() => this.retire(slot, lane), 50); // frees its place under max_shells; the terminal stays a while
  }

  private jobRunObservation(action: Action, args: RunArgs, job: Job, suffix: string, prefix = ''): Observation {
    const o = runObservation(
      action.id,
      args.command,
      {
        content: '',
        exitCode: job.exitCode ?? -1,
        workingDir: job.cwd,
        pid: job.pid,
        suffix,
        prefix,
        ...hostMetadata(),
      },
      args.hidden,
    );
    ((o.extras as Record<string, unknown>).metadata as Record<string, unknown>).job_id = job.jobId;
    return o;
  }

  /** The `job` action: list, poll, wait, output, cancel on this agent shell's jobs. */
  async executeJob(action: Action, signal: AbortSignal, ctx?: ActionContext): Promise<Observation> {
    const slot = this.slotFor(action, ctx);
    if (ctx?.jobRetentionS !== undefined) slot.retentionS = ctx.jobRetentionS;
    const lanes = () => [slot, ...slot.extras.values()];
    const laneOf = (job: Job) => [...slot.extras.values()].find((l) => l.job === job);
    const answer = await slot.jobs.op(action.args, {
      timeoutS: action.timeout,
      signal,
      foreground: () =>
        lanes()
          .filter((l) => !l.job && l.jobId && l.controller.busy)
          .map((l): ForegroundRecord => ({
            job_id: l.jobId!,
            command: l.controller.runningCommand ?? '',
            cwd: l.shell?.cwd() ?? null,
            state: 'RUNNING',
            exit_code: null,
            pid: l.shell?.pid() ?? -1,
            background: false,
            duration_s: Math.round(Date.now() - l.startedAt) / 1000,
          })),
      isForeground: (jid) => lanes().some((l) => !l.job && l.jobId === jid && l.controller.busy),
      interrupt: (job) => void laneOf(job)?.shell?.sendKey('C-c'),
      kill: async (job) => {
        await laneOf(job)?.shell?.killRunning();
      },
    });
    return jobObservation(action.id, answer.op, answer.content, answer.extras);
  }

  /** agent_gone: that agent's private shell ends with it (shared-key shells are never named here). */
  agentGone(shellKey: string, ctx: ActionContext): void {
    const slot = this.slots.get(`${ctx.backend}|${shellKey}`);
    if (!slot) return;
    this.slots.delete(slot.key);
    this.deps.log(`agent gone: closing the "${slot.name}" terminal`);
    for (const extra of slot.extras.values()) void this.resetSlot(extra);
    slot.extras.clear();
    slot.jobs.closeAll(); // their terminals were just closed: LOST
    void this.resetSlot(slot);
  }

  /**
   * The backend died or stopped: its shells die with it. An idle terminal is closed; a command
   * still running is the user's call (it may be a build worth keeping): we ask, and meanwhile it
   * blocks nobody, since the next backend's agents get terminals of their own.
   */
  backendGone(backend: string): void {
    const mains = [...this.slots.values()].filter((m) => m.backend === backend);
    for (const m of mains) this.slots.delete(m.key);
    for (const slot of mains.flatMap((m) => [m, ...m.extras.values()])) {
      if (!slot.controller.busy || !slot.shell) {
        void this.resetSlot(slot);
        continue;
      }
      const command = slot.controller.runningCommand ?? 'a command';
      this.deps.log(`the backend went away while "${slot.name}" was running a command; asking whether to interrupt it`);
      void (async () => {
        const interrupt = (await this.deps.askInterrupt?.(slot.name, command)) ?? false;
        if (interrupt && slot.controller.busy) {
          await slot.controller.interrupt();
          this.deps.log(`interrupted the orphaned command in "${slot.name}"`);
        }
        if (interrupt) await this.resetSlot(slot);
      })();
    }
    // Nobody can follow those jobs any more (the backend marks them LOST on its side too).
    for (const m of mains) m.jobs.closeAll();
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    for (const m of this.slots.values()) {
      for (const slot of [m, ...m.extras.values()]) {
        if (slot.shell instanceof PtyShell || slot.shell instanceof EngineShell) slot.shell.dispose();
      }
    }
    for (const m of this.slots.values()) m.jobs.closeAll();
    if (this.tmpDir) fs.rm(this.tmpDir, { recursive: true, force: true }, () => {});
    if (this.spoolDir) fs.rm(this.spoolDir, { recursive: true, force: true }, () => {});
  }
}
