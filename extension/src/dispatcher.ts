/**
 * Routes each action to its executor and guarantees the contract around it: exactly one
 * observation per action, never an exception (a bug becomes SERVER_ERROR with the message), an
 * untrusted workspace refuses everything, unknown kinds are TOOL_UNSUPPORTED.
 *
 * No `vscode`: the executors and the trust check are injected, so the guarantees are unit-tested.
 */

import { ActionContext, ActionHandler } from './connection';
import {
  Action,
  errorObservation,
  exitCodeOf,
  Observation,
  outcomeOf,
  ProtocolError,
  summarize,
  ToolError,
} from './protocol';

export type Executor = (action: Action, signal: AbortSignal, ctx?: ActionContext) => Promise<Observation>;

export interface DispatchHooks {
  isTrusted: () => boolean;
  onStart?: (action: Action, summary: string) => void;
  onFinish?: (action: Action, summary: string, outcome: string, exitCode: number | undefined, ms: number) => void;
  agentGone?: (shell: string, ctx: ActionContext) => void;
  approvalRequested?: (row: unknown, ctx: ActionContext) => void;
  approvalClosed?: (id: unknown, ctx: ActionContext) => void;
}

export const UNTRUSTED_MESSAGE =
  'This VS Code workspace is not trusted, so the oh extension refuses to run commands or touch files in it. ' +
  'Trust the workspace (command "Workspaces: Manage Workspace Trust") and retry.';

export class Dispatcher implements ActionHandler {
  constructor(
    private readonly executors: Partial<Record<string, Executor>>,
    private readonly hooks: DispatchHooks,
  ) {}

  agentGone(shell: string, ctx: ActionContext): void {
    try {
      this.hooks.agentGone?.(shell, ctx);
    } catch {
      /* never breaks the connection */
    }
  }

  approvalRequested(row: unknown, ctx: ActionContext): void {
    try {
      this.hooks.approvalRequested?.(row, ctx);
    } catch {
      /* never breaks the connection */
    }
  }

  approvalClosed(id: unknown, ctx: ActionContext): void {
    try {
      this.hooks.approvalClosed?.(id, ctx);
    } catch {
      /* never breaks the connection */
    }
  }

  async execute(action: Action, signal: AbortSignal, ctx?: ActionContext): Promise<Observation> {
    const started = Date.now();
    const summary = summarize(action);
    try {
      this.hooks.onStart?.(action, summary);
    } catch {
      /* UI problems never cost an observation */
    }
    let o: Observation;
    try {
      const executor = this.executors[action.kind];
      if (!this.hooks.isTrusted()) {
        o = errorObservation(action.id, 'UNTRUSTED_WORKSPACE', UNTRUSTED_MESSAGE);
      } else if (!executor) {
        o = errorObservation(
          action.id,
          'TOOL_UNSUPPORTED',
          `The oh extension does not execute '${action.kind}' actions.`,
        );
      } else {
        o = await executor(action, signal, ctx);
      }
    } catch (e) {
      if (e instanceof ToolError || e instanceof ProtocolError) {
        o = errorObservation(action.id, e.errorId, e.message);
      } else {
        const msg = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
        o = errorObservation(
          action.id,
          'SERVER_ERROR',
          `The oh extension failed on this ${action.kind} action (${msg.slice(0, 300)}). See the "oh" output channel in VS Code.`,
        );
      }
    }
    o.cause = action.id;
    try {
      this.hooks.onFinish?.(action, summary, outcomeOf(o), exitCodeOf(o), Date.now() - started);
    } catch {
      /* idem */
    }
    return o;
  }
}
