// Per-tenant adaptive concurrency (AIMD). The limit starts at `start` and moves between a floor
// and a ceiling: until the first decrease one more request in flight per answer whose latency
// held (slow start: it doubles each round trip), then one more after `limit` consecutive such
// answers (additive increase), half as many after a 429 or a 5xx, three quarters after an answer
// whose latency grew well past the best seen (multiplicative decrease). With 20 ms of latency a
// fixed 8 in flight is a ceiling of 400 requests a second however fast the server is; a
// rate-limited or struggling server gets fewer requests instead of the same burst again.

export interface AimdOptions {
  /** The floor: the limit never goes below it (default 1). */
  readonly min?: number;
  /** The ceiling: the limit never grows above it (default `start`: only adapts down, as before). */
  readonly max?: number;
}

/** An answer slower than LATENCY_FACTOR × the baseline plus LATENCY_SLACK_MS means the server (or this process) queues. */
export const LATENCY_FACTOR = 2;
export const LATENCY_SLACK_MS = 10;
/** How fast the baseline follows latencies above it (1/64 of the gap per answer): a changed network is learnt, a queue is not. */
const BASELINE_DRIFT = 1 / 64;

export class AimdLimiter {
  private limitNow: number;
  private inFlight = 0;
  private successes = 0;
  private generation = 0;
  private baselineMs: number | undefined;
  private readonly waiters: Array<() => void> = [];
  readonly min: number;
  readonly max: number;

  constructor(start: number, opts: AimdOptions = {}) {
    const positive = (what: string, n: number): number => {
      if (!Number.isInteger(n) || n < 1) throw new RangeError(`${what} must be a positive integer, got ${n}`);
      return n;
    };
    positive('concurrency', start);
    this.min = positive('the concurrency floor', opts.min ?? 1);
    this.max = positive('the concurrency ceiling', opts.max ?? start);
    if (this.min > this.max) throw new RangeError(`the concurrency floor (${this.min}) is above the ceiling (${this.max})`);
    this.limitNow = Math.min(this.max, Math.max(this.min, start));
  }

  get limit(): number { return this.limitNow; }
  get active(): number { return this.inFlight; }
  /** Changes on every decrease; a request remembers it when it starts. */
  get epoch(): number { return this.generation; }
  /** The latency the limit is judged against: the best seen, drifting up slowly; undefined before any answer. */
  get baseline(): number | undefined { return this.baselineMs; }

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

  /**
   * An answer that was not a 429 or a 5xx, which took `latencyMs` (unknown: counted as held).
   * Additive increase: one more slot after `limit` consecutive answers whose latency held,
   * never above the ceiling. An answer slower than LATENCY_FACTOR × the baseline (plus
   * LATENCY_SLACK_MS) takes the limit down to three quarters, once per epoch like a 429.
   */
  onSuccess(latencyMs?: number, startedEpoch: number = this.generation): void {
    if (latencyMs !== undefined && Number.isFinite(latencyMs) && latencyMs >= 0) {
      const base = this.baselineMs;
      if (base === undefined || latencyMs < base) this.baselineMs = latencyMs;
      else this.baselineMs = base + (latencyMs - base) * BASELINE_DRIFT;
      if (base !== undefined && latencyMs > LATENCY_FACTOR * base + LATENCY_SLACK_MS) {
        this.decrease(startedEpoch, (n) => Math.floor((n * 3) / 4));
        return;
      }
    }
    if (this.limitNow >= this.max) return;
    this.successes++;
    // Slow start (as TCP's): until the first decrease, one more slot per answer that held, so the
    // limit doubles every round trip (8 to 64 in three), then one more per round trip.
    if (this.generation === 0 || this.successes >= this.limitNow) {
      this.limitNow++;
      this.successes = 0;
      this.drain();
    }
  }

  /**
   * Multiplicative decrease on 429. A burst of requests that all started under the same limit
   * counts as one signal (pass the epoch the request started in), as TCP halves once per window:
   * eight parallel 429s halve the limit once, not down to the floor.
   */
  onRateLimited(startedEpoch: number = this.generation): void {
    this.decrease(startedEpoch, (n) => Math.floor(n / 2));
  }

  /** A 5xx (or no answer at all): the server struggles, as with a 429. */
  onServerError(startedEpoch: number = this.generation): void {
    this.decrease(startedEpoch, (n) => Math.floor(n / 2));
  }

  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(signal);
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private decrease(startedEpoch: number, to: (limit: number) => number): void {
    if (startedEpoch !== this.generation) return;
    this.limitNow = Math.max(this.min, to(this.limitNow));
    this.successes = 0;
    this.generation++;
  }

  private drain(): void {
    while (this.inFlight < this.limitNow && this.waiters.length > 0) this.waiters.shift()!();
  }
}
