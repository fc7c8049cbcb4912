import type { Held } from '../model/index.js';
import type { Revision } from '../load/revision.js';

// The contract between the watch loop (watch.ts) and the one reconcile pass (reconcile.ts).
// The loop never looks inside a pass: it is handed one and only reads its result.
import type { Located, PassDetail, PassOutcome } from '../core/status-detail.js';

export type { PassOutcome };

/** The desired objects of one tenant at a plan, by state: each object is in exactly one. */
export interface ObjectCounts {
  readonly in_sync: number;
  /** Objects with changes to apply (a firmware, or an action with phases to append), not changes. */
  readonly drift: number;
  readonly conflict: number;
  readonly error: number;
}

export const OBJECT_STATES = ['in_sync', 'drift', 'conflict', 'error'] as const satisfies readonly (keyof ObjectCounts)[];

export interface PassResult {
  readonly result: PassOutcome;
  /** One line summary; never holds a key. */
  readonly message: string;
  /** tenant → objects that differ before applying (every planned tenant, 0 when in sync). */
  readonly drift: ReadonlyMap<string, number>;
  /** tenant → conflicts (every planned tenant, 0 when none). */
  readonly conflicts: ReadonlyMap<string, number>;
  /** tenant → its objects by state at the plan; absent when the pass planned nothing. */
  readonly objects?: ReadonlyMap<string, ObjectCounts>;
  /**
   * tenant → its objects by state when a pass that wrote ended: the plan it executed, with each
   * object whose changes were all applied and verified moved from drift to in sync (one that
   * failed, was held back, diverged or is in doubt stays in drift). Absent when the pass wrote
   * nothing: then `objects` is the state after it too.
   */
  readonly after?: ReadonlyMap<string, ObjectCounts>;
  readonly applied: readonly { readonly tenant: string; readonly kind: 'firmware' | 'phase' }[];
  /** Changes tried and failed in this pass. */
  readonly failed?: readonly { readonly tenant: string; readonly kind: 'firmware' | 'phase' }[];
  /** The desired state's git revision this pass read (absent outside git). */
  readonly revision?: Revision;
  /** Tenants whose live state matched the desired state at `revision` when the pass ended. */
  readonly synced?: readonly string[];
  /** Journal intents sent to this API whose outcome is unknown, read at the end of the pass. */
  readonly inDoubt?: number;
  readonly configValid: boolean;
  readonly changedFiles?: readonly string[];
  /** Actions found diverged after this pass's writes (a phase twice, a foreign phase). */
  readonly diverged?: number;
  /** Per tenant state and rollout timelines, when the pass got as far as a plan (the status page). */
  readonly detail?: PassDetail;
  /** Objects whose writes were held at the plan (paused, gated, a sync window): docs/rollout-control.md. */
  readonly held?: readonly Held[];
  /** The first problems of an invalid configuration or desired state (issueTotal counts them all). */
  readonly issues?: readonly (Located & { readonly message: string })[];
  readonly issueTotal?: number;
  /** Appends waited for their file to be quiet (--append-quiet): the next pass runs this soon. */
  readonly againInMs?: number;
}

export type TriggerReason = 'start' | 'file-change' | 'interval' | 'retry';

export interface PassTrigger {
  readonly reason: TriggerReason;
  /** Absolute paths that changed since the last pass (file-change only), sorted. */
  readonly files?: string[];
  /** A file change coalesced with a start, retry or interval: the pass reads everything. */
  readonly full?: boolean;
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

/** One count of each tenant's objects by state (the drift, the conflicts), as a gauge takes it. */
export function mapOf(objects: ReadonlyMap<string, ObjectCounts>, pick: (c: ObjectCounts) => number): Map<string, number> {
  return new Map([...objects].map(([t, c]) => [t, pick(c)]));
}
