// The one pipeline shared by `plan`, `apply` and every pass of `watch`:
//   load → validate → fetch → plan → (render) → safety → (stop on dry-run) → apply → verify.
// Each step is a small function so the commands compose the same steps; nothing here diffs
// while applying (the plan is built first, then acted on).
import { dirname, join, resolve } from 'node:path';
import type {
  ApiLimits, ApplyReport, ChangeResult, Clock, DesiredState, LiveState, Logger, Plan, ResolvedConfig,
} from '../model/index.js';
import { ConfigError, UnsafePlanError, UserError } from '../errors.js';
import { loadDesiredState, type LoadFilter, type LoadResult } from '../load/index.js';
import { readApiKeys } from '../load/keys.js';
import { createApiClient, type ApiClient, type RequestEvent } from '../api/client.js';
import { effectiveLimits } from '../api/limits.js';
import { fetchLive } from '../api/fetch-live.js';
import { plan as computePlan } from '../core/plan.js';
import { checkSafety } from '../core/safety.js';
import { executePlan } from '../apply/executor.js';
import { Journal, recoverJournal } from '../apply/journal.js';
import { acquireLock } from '../apply/lock.js';

export interface ConnectOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly log: Logger;
  readonly insecureHttp?: boolean;
  readonly caFile?: string;
  readonly concurrency?: number;
  /** From the flags; each one left out comes from the config's api.* or the client's default. */
  readonly limits?: ApiLimits;
  readonly onRequest?: (e: RequestEvent) => void;
}

/** Loads the desired state; any issue is a ConfigError (nothing gets written on invalid input). */
export async function loadOrThrow(config: ResolvedConfig, filter: LoadFilter): Promise<DesiredState> {
  const result: LoadResult = await loadDesiredState(config, filter);
  if (result.issues.length > 0) throw new ConfigError(result.issues);
  return result.desired;
}

/** The tenants a desired state touches, sorted. */
export function tenantsOf(desired: DesiredState): string[] {
  const set = new Set<string>();
  for (const f of desired.firmwares) set.add(f.tenant);
  for (const a of desired.actions) set.add(a.tenant);
  return [...set].sort();
}

/** Reads the keys of exactly these tenants and opens the one client. */
export async function connect(config: ResolvedConfig, tenants: readonly string[], opts: ConnectOptions): Promise<ApiClient> {
  if (!config.baseUrl) {
    throw new UserError('no API base URL: set base_url in dus-sync.yaml or the DUS_BASE_URL environment variable');
  }
  const keys = await readApiKeys(config, tenants, opts.env);
  return createApiClient({
    baseUrl: config.baseUrl,
    keys,
    insecureHttp: opts.insecureHttp,
    caFile: opts.caFile,
    concurrency: opts.concurrency,
    ...effectiveLimits(config, opts.limits),
    log: opts.log,
    onRequest: opts.onRequest,
  });
}

export interface Planned {
  readonly live: LiveState;
  readonly plan: Plan;
}

export async function fetchAndPlan(client: ApiClient, desired: DesiredState, concurrency: number, signal?: AbortSignal): Promise<Planned> {
  const live = await fetchLive(client, desired, { concurrency, signal });
  return { live, plan: computePlan(desired, live) };
}

/** Refuses a plan over the safety limits unless allowed. */
export function enforceSafety(plan: Plan, config: ResolvedConfig, overrides: { maxChanges?: number; maxDeactivations?: number; allowLarge?: boolean }): void {
  if (overrides.allowLarge) return;
  const violations = checkSafety(plan, {
    maxChanges: overrides.maxChanges ?? config.safety.maxChanges,
    maxDeactivations: overrides.maxDeactivations ?? config.safety.maxDeactivations,
  });
  if (violations.length > 0) throw new UnsafePlanError(`${violations.join('; ')}. Nothing was written.`);
}

/** Default journal: .dus-sync/journal.jsonl beside the config file (or in the resources folder). */
export function journalPathFor(config: ResolvedConfig, flag?: string): string {
  if (flag) return resolve(flag);
  const base = config.file ? dirname(config.file) : config.dir;
  return join(base, '.dus-sync', 'journal.jsonl');
}

export interface ApplyOptions {
  readonly journalPath: string;
  readonly log: Logger;
  readonly clock: Clock;
  readonly concurrency: number;
  readonly failFast?: boolean;
  readonly signal?: AbortSignal;
  readonly onResult?: (r: ChangeResult, done: number, total: number) => void;
}

/**
 * Takes the lock, resolves what a crashed run left in the journal, then executes the plan.
 * `replan` is called after recovery: when the journal held in-doubt appends, the plan is
 * computed again from the live state so that nothing is appended twice.
 */
export async function withApplyLock<T>(opts: Pick<ApplyOptions, 'journalPath' | 'log'> & { readonly tenants: readonly string[] }, client: ApiClient,
  body: (journal: Journal, recovered: number) => Promise<T>): Promise<T> {
  const lock = await acquireLock(dirname(opts.journalPath), { log: opts.log });
  let journal: Journal | undefined;
  try {
    journal = await Journal.open(opts.journalPath);
    const recovery = await recoverJournal(journal, client, opts.log, { tenants: new Set(opts.tenants) });
    if (recovery.resolved > 0) {
      opts.log.info(`resolved ${recovery.resolved} in-doubt phase append(s) left by an earlier run: ${recovery.applied} had been applied, ${recovery.notApplied} had not`);
    }
    const result = await body(journal, recovery.resolved);
    await journal.compact();
    return result;
  } finally {
    await journal?.close();
    await lock.release();
  }
}

export async function execute(plan: Plan, client: ApiClient, journal: Journal, opts: ApplyOptions): Promise<ApplyReport> {
  return executePlan(plan, {
    client,
    journal,
    log: opts.log,
    clock: opts.clock,
    concurrency: opts.concurrency,
    failFast: opts.failFast,
    signal: opts.signal,
    onResult: opts.onResult,
  });
}

/** After applying: fetch again and plan again; whatever is left did not converge. */
export async function verifyConverged(client: ApiClient, desired: DesiredState, concurrency: number): Promise<string[]> {
  const { plan } = await fetchAndPlan(client, desired, concurrency);
  return plan.changes.map((c) => c.kind === 'firmware'
    ? `firmware ${c.key} in ${c.tenant} still differs (${Object.keys(c.after).join(', ')})`
    : `phase ${c.index} "${c.after.name}" of action ${c.key} in ${c.tenant} is still missing`);
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => new Promise<void>((resolvePromise, reject) => {
    if (signal?.aborted) { reject(signal.reason as Error); return; }
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolvePromise(); }, ms);
    const onAbort = () => { clearTimeout(timer); reject(signal?.reason as Error); };
    signal?.addEventListener('abort', onAbort, { once: true });
  }),
};

