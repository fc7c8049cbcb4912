// Per-tenant adaptive concurrency (AIMD): a rate-limited server gets fewer requests in flight
// instead of the same burst again; the limit grows back one step at a time once it is quiet.

export class AimdLimiter {
  private limitNow: number;
  private inFlight = 0;
  private successes = 0;
  private generation = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`concurrency must be a positive integer, got ${max}`);
    this.limitNow = max;
  }

  get limit(): number { return this.limitNow; }
  get active(): number { return this.inFlight; }
  /** Changes on every decrease; a request remembers it when it starts. */
  get epoch(): number { return this.generation; }

  async acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.inFlight < this.limitNow) {
      this.inFlight++;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const wake = (): void => {
        signal?.removeEventListener('abort', onAbort);
        this.inFlight++;
        resolve();
      };
      const onAbort = (): void => {
        const i = this.waiters.indexOf(wake);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal?.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(wake);
    });
  }

  release(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.drain();
  }

  /** Additive increase: one more slot after `limit` consecutive successes, never above max. */
  onSuccess(): void {
    if (this.limitNow >= this.max) return;
    this.successes++;
    if (this.successes >= this.limitNow) {
      this.limitNow++;
      this.successes = 0;
      this.drain();
    }
  }

  /**
   * Multiplicative decrease on 429. A burst of requests that all started under the same limit
   * counts as one signal (pass the epoch the request started in), as TCP halves once per window:
   * eight parallel 429s halve the limit once, not down to 1.
   */
  onRateLimited(startedEpoch: number = this.generation): void {
    if (startedEpoch !== this.generation) return;
    this.limitNow = Math.max(1, Math.floor(this.limitNow / 2));
    this.successes = 0;
    this.generation++;
  }

  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(signal);
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private drain(): void {
    while (this.inFlight < this.limitNow && this.waiters.length > 0) this.waiters.shift()!();
  }
}
