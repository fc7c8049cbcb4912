// Fault injection that is the same on every run under the same seed: a small seeded PRNG per
// fault kind (so switching one kind on does not shift the others), a token bucket per tenant.
import type { HostileSettings } from './hostile.js';

export interface FaultSettings {
  latencyMs: number;
  /** 0..1: share of API requests answered with a transient 5xx (502/503/504 mixed). */
  failRate: number;
  /** Requests per second per tenant; 0 = off. Above it: 429 with Retry-After. */
  rateLimit: number;
  /** 0..1: append_phase stores the phase, then destroys the socket without a response. */
  dropAfterCommitRate: number;
  /** Deterministic alternative: drop every Nth committed append_phase (2 = every second). */
  dropEvery?: number;
  /**
   * GET /actions/{id} shows the action as it was this long ago (a read replica or a queue
   * behind the writer): a phase appended within the last readLagMs is not in the answer yet,
   * nor in the answer of the append_phase that stored it.
   */
  readLagMs?: number;
  /**
   * append_phase answers 504 at once and stores the phase this long afterwards: a gateway that
   * gave up while the server still works on the request. 0 = off.
   */
  lateCommitMs?: number;
  /** GET /actions/{asked} is answered with action {answered} (a cache keyed wrongly). */
  wrongAction?: Readonly<Record<number, number>>;
  /**
   * Every Nth append_phase finds the same phase appended by another actor a moment before its
   * own is stored (two runners racing): the action ends with the phase twice. 0 = off.
   */
  raceAppendEvery?: number;
  /** Seed of the fault PRNGs. */
  seed: number;
  /** Hostile answers (huge, endless, dripping, echoing the key) on some or all routes; see hostile.ts. */
  hostile?: HostileSettings;
}

export const DEFAULT_FAULTS: FaultSettings = { latencyMs: 0, failRate: 0, rateLimit: 0, dropAfterCommitRate: 0, seed: 1 };

/** mulberry32: tiny, fast and good enough to pick faults. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Transient faults only, as a gateway or an overloaded server gives them: a 500 is a bug of
// the server, which SPEC section 3 says not to retry, so injecting it would test nothing useful.
const FAIL_STATUSES = [502, 503, 504] as const;
const FAIL_DETAILS: Record<(typeof FAIL_STATUSES)[number], string> = {
  502: 'Bad gateway.',
  503: 'Service temporarily unavailable, try again later.',
  504: 'Gateway timeout.',
};

export type FaultDecision = { kind: 'none' } | { kind: 'fail'; status: number; detail: string } | { kind: 'rate-limited' };

export class FaultInjector {
  private seenSeed: number | undefined;
  private failRng: () => number = () => 0;
  private failKindRng: () => number = () => 0;
  private dropRng: () => number = () => 0;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private committedAppends = 0;
  private appendsSeen = 0;

  constructor(readonly settings: FaultSettings, private readonly now: () => number = () => performance.now()) {
    this.reseedIfChanged();
  }

  /** Rate limit first (a limited request does no work), then the random 5xx. */
  beforeRequest(tenant: string): FaultDecision {
    this.reseedIfChanged();
    if (!this.takeToken(tenant)) return { kind: 'rate-limited' };
    if (this.settings.failRate > 0 && this.failRng() < this.settings.failRate) {
      const status = FAIL_STATUSES[Math.floor(this.failKindRng() * FAIL_STATUSES.length)]!;
      return { kind: 'fail', status, detail: FAIL_DETAILS[status] };
    }
    return { kind: 'none' };
  }

  /** Before an append_phase is stored: whether another actor's identical append lands first. */
  raceBeforeAppend(): boolean {
    this.reseedIfChanged();
    this.appendsSeen += 1;
    const every = this.settings.raceAppendEvery ?? 0;
    return every > 0 && this.appendsSeen % every === 0;
  }

  /** After an append_phase was committed: whether to drop the connection instead of answering. */
  dropAfterCommit(): boolean {
    this.reseedIfChanged();
    this.committedAppends += 1;
    const every = this.settings.dropEvery ?? 0;
    if (every > 0) return this.committedAppends % every === 0;
    return this.settings.dropAfterCommitRate > 0 && this.dropRng() < this.settings.dropAfterCommitRate;
  }

  private takeToken(tenant: string): boolean {
    const rate = this.settings.rateLimit;
    if (!(rate > 0)) return true;
    const now = this.now();
    const b = this.buckets.get(tenant) ?? { tokens: rate, at: now };
    b.tokens = Math.min(rate, b.tokens + ((now - b.at) / 1000) * rate);
    b.at = now;
    this.buckets.set(tenant, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** Tests change `faults.seed` at runtime; a new seed restarts every sequence. */
  private reseedIfChanged(): void {
    const seed = this.settings.seed;
    if (seed === this.seenSeed) return;
    this.seenSeed = seed;
    this.failRng = mulberry32(seed);
    this.failKindRng = mulberry32(seed ^ 0x5bd1e995);
    this.dropRng = mulberry32(seed ^ 0x9e3779b9);
    this.committedAppends = 0;
    this.appendsSeen = 0;
  }
}
