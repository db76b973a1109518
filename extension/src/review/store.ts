/**
 * Pending proposals of this window, each waiting for exactly one decision (docs/protocol.md §3.11).
 *
 * A proposal ends once: the user accepts or rejects it, its accept finds the file changed (`stale`),
 * applying fails, nobody decides within the review timeout, or its action is aborted (the backend
 * cancelled it or the connection dropped). Nothing waits forever. No `vscode` import.
 */

export type Decision =
  /** `kept` (1-based hunk numbers of `total`) when only some hunks were written. */
  | { kind: 'accepted'; unsaved?: boolean; kept?: number[]; total?: number }
  | { kind: 'rejected'; reason: string }
  | { kind: 'stale' }
  | { kind: 'failed'; message: string }
  | { kind: 'timeout' }
  | { kind: 'cancelled' };

const MAX_TIMER_MS = 2_147_483_647;

export interface Pending<T> {
  id: number;
  item: T;
  created: number;
}

interface Entry<T> extends Pending<T> {
  resolve: (d: Decision) => void;
  timer: ReturnType<typeof setTimeout>;
  onAbort?: () => void;
  signal?: AbortSignal;
}

export class ProposalStore<T> {
  private seq = 0;
  private readonly entries = new Map<number, Entry<T>>();

  /** `onChange` runs after every add and every decision (status bar, context keys). */
  constructor(private readonly onChange: () => void = () => {}) {}

  /** Park `item` until one decision; `timeoutMs` bounds the wait, `signal` ends it early. */
  add(item: T, timeoutMs: number, signal?: AbortSignal): { id: number; decision: Promise<Decision> } {
    const id = ++this.seq;
    let resolveFn!: (d: Decision) => void;
    const decision = new Promise<Decision>((r) => (resolveFn = r));
    const entry: Entry<T> = {
      id,
      item,
      created: Date.now(),
      resolve: resolveFn,
      // setTimeout fires at once beyond 2^31-1 ms (~24.8 days): clamp, never "no wait".
      timer: setTimeout(() => this.decide(id, { kind: 'timeout' }), Math.min(Math.max(0, timeoutMs), MAX_TIMER_MS)),
      signal,
    };
    if (signal) {
      if (signal.aborted) {
        clearTimeout(entry.timer);
        return { id, decision: Promise.resolve({ kind: 'cancelled' }) };
      }
      entry.onAbort = () => this.decide(id, { kind: 'cancelled' });
      signal.addEventListener('abort', entry.onAbort, { once: true });
    }
    this.entries.set(id, entry);
    this.onChange();
    return { id, decision };
  }

  /** Ends proposal `id` with `d`; false when it is not pending (already decided, timed out, ...). */
  decide(id: number, d: Decision): boolean {
    const e = this.entries.get(id);
    if (!e) return false;
    this.entries.delete(id);
    clearTimeout(e.timer);
    if (e.onAbort) e.signal?.removeEventListener('abort', e.onAbort);
    e.resolve(d);
    this.onChange();
    return true;
  }

  get(id: number): Pending<T> | undefined {
    const e = this.entries.get(id);
    return e && { id: e.id, item: e.item, created: e.created };
  }

  /** Oldest first. */
  list(): Pending<T>[] {
    return [...this.entries.values()].map((e) => ({ id: e.id, item: e.item, created: e.created }));
  }

  get size(): number {
    return this.entries.size;
  }

  /** Every pending proposal ends as cancelled (extension deactivated). */
  cancelAll(): void {
    for (const id of [...this.entries.keys()]) this.decide(id, { kind: 'cancelled' });
  }
}
