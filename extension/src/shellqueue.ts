/**
 * Where a new foreground `run` goes when its agent's terminals are all busy (issue 18 item 3;
 * docs/protocol.md §3.8): the mirror of src/oh/protocol/shellqueue.py, same rule and texts.
 *
 * A run beyond max_shells waits, in arrival order, for a terminal of its agent shell to come free
 * (at most QUEUE_LIMIT waiting; only a run finding the queue full is BUSY). The wait counts toward the
 * run's own timeout; one whose timeout passes while it waits is not executed (TIMEOUT); without a
 * timeout it waits at most MAX_WAIT_S.
 */

export const QUEUE_LIMIT = 64;

export type Placement = 'run' | 'wait' | 'busy';

export function place(inUse: number, maxShells: number, waiting: number, queueLimit = QUEUE_LIMIT): Placement {
  if (inUse < maxShells && waiting === 0) return 'run';
  if (waiting < queueLimit) return 'wait';
  return 'busy';
}

/** What remains of a run's timeout after `waitedS` in the queue (undefined: no timeout). */
export function left(timeoutS: number | undefined, waitedS: number): number | undefined {
  return timeoutS === undefined ? undefined : timeoutS - waitedS;
}

/** Python's `f"{x:.3g}"` for the waited seconds (enough for these messages). */
function g3(x: number): string {
  return String(Number(x.toPrecision(3)));
}

export function queueFullMessage(command: string, inUse: number, maxShells: number, waiting: number): string {
  return (
    `Your command "${command.slice(0, 200)}" was NOT executed: ${inUse} command(s) already run in this agent's shells ` +
    `(max_shells = ${maxShells}) and ${waiting} more wait for a free shell (the queue holds ${waiting}). ` +
    'Wait for some to finish, interrupt one (is_input "C-c" with its args.job_id, or job op cancel), ' +
    'or raise the max_shells setting.'
  );
}

export function waitedOutMessage(command: string, waitedS: number, maxShells: number): string {
  return (
    `Your command "${command.slice(0, 200)}" was NOT executed: it waited ${g3(waitedS)} s for one of this agent's ` +
    `${maxShells} shells (max_shells) to come free, which used up its timeout. Send it again with a longer ` +
    'timeout, or wait for the running commands first.'
  );
}

/** Wake-ups for runs waiting on one agent shell's terminals (a timer bounds every wait). */
export class Waiters {
  /** Runs in line, first = next. */
  readonly line: object[] = [];
  private readonly wakers = new Set<() => void>();

  /** Resolves on the next notify() or after `ms`, whichever comes first. */
  next(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.wakers.add(done);
    });
  }

  notify(): void {
    for (const w of [...this.wakers]) w();
  }
}
