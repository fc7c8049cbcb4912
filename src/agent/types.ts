// The contract between the watch loop (watch.ts) and the one reconcile pass (reconcile.ts).
// The loop never looks inside a pass: it is handed one and only reads its result.
import type { Located, PassDetail, PassOutcome } from '../core/status-detail.js';

export type { PassOutcome };

export interface PassResult {
  readonly result: PassOutcome;
  /** One line summary; never holds a key. */
  readonly message: string;
  /** tenant → objects that differ (the plan's change count) before applying. */
  readonly drift: ReadonlyMap<string, number>;
  /** tenant → conflicts. */
  readonly conflicts: ReadonlyMap<string, number>;
  readonly applied: readonly { readonly tenant: string; readonly kind: 'firmware' | 'phase' }[];
  readonly configValid: boolean;
  readonly changedFiles?: readonly string[];
  /** Actions found diverged after this pass's writes (a phase twice, a foreign phase). */
  readonly diverged?: number;
  /** Per tenant state and rollout timelines, when the pass got as far as a plan (the status page). */
  readonly detail?: PassDetail;
  /** The first problems of an invalid configuration or desired state (issueTotal counts them all). */
  readonly issues?: readonly (Located & { readonly message: string })[];
  readonly issueTotal?: number;
}

export type TriggerReason = 'start' | 'file-change' | 'interval' | 'retry';

export interface PassTrigger {
  readonly reason: TriggerReason;
  /** Absolute paths that changed since the last pass (file-change only), sorted. */
  readonly files?: string[];
}

/** The integrator's pass. It must honour the signal: abort means "stop starting requests". */
export type ReconcilePass = (trigger: PassTrigger, signal: AbortSignal) => Promise<PassResult>;

/** Timers the loop uses; tests pass a fake to step time by hand. */
export interface Timers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** A pass that counts as healthy for readiness and for the last-success metric. */
export function isHealthy(result: PassOutcome): boolean {
  // suspend is an operator's deliberate stop from git: the agent works, it just may not write.
  return result === 'success' || result === 'suspended';
}
