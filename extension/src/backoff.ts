/**
 * Reconnect delays: 0.25 s doubling to a 5 s ceiling. Deterministic (no jitter): there is one
 * backend per workspace on loopback, so there is no thundering herd to spread out, and tests can
 * assert the exact sequence.
 */
export class Backoff {
  private current: number;

  constructor(
    private readonly initialMs = 250,
    private readonly maxMs = 5000,
    private readonly factor = 2,
  ) {
    this.current = initialMs;
  }

  /** The delay to wait now; the following call returns the next, longer one. */
  next(): number {
    const d = this.current;
    this.current = Math.min(this.current * this.factor, this.maxMs);
    return d;
  }

  /** After a successful registration the next failure starts again from the shortest delay. */
  reset(): void {
    this.current = this.initialMs;
  }
}
