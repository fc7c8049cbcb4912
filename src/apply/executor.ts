// The executor: runs a plan's changes against the API. Different objects in parallel, the
// phases of one action strictly in order, and every append_phase guarded by the intent
// journal so that no phase is ever appended twice (SPEC section 3).
import type {
  Action, ApplyReport, Change, ChangeResult, ChangeStatus, Clock, FirmwareChange, Logger, PhaseChange, Plan,
} from '../model/index.js';
import type { TenantClient } from '../api/types.js';
import { ApiError } from '../errors.js';
import { redact } from '../redact.js';
import type { Journal } from './journal.js';
import { phaseDigest } from './digest.js';
import { chainsOf, describe, assertNever } from './order.js';
import type { Chain } from './order.js';

export interface ExecutorDeps {
  client: { tenant(name: string): TenantClient };
  journal: Journal;
  log: Logger;
  clock: Clock;
  /** Most changes in flight at once, over all tenants (the client also adapts per tenant on 429). */
  concurrency: number;
  failFast?: boolean;
  /** When aborted, no new change starts; the running ones finish. */
  signal?: AbortSignal;
  /**
   * Read each action before its first append to make sure the plan's index is still the next
   * one (default true): an append to an action that moved would land at the wrong index, and
   * appends cannot be undone. One GET per action, not per phase.
   */
  checkIndex?: boolean;
  /**
   * Before a phase whose answer was lost is sent again, the action is read a second time this
   * long after the first read showed it absent (default 1 s): a 504 from a proxy can mean the
   * server is still working on the first request.
   */
  settleMs?: number;
  onResult?: (r: ChangeResult, done: number, total: number) => void;
}

/** Sends of one phase, counting the first, when each earlier one is proven not to have landed. */
export const MAX_SENDS = 3;
/** Reads of an action after an append whose outcome is unknown. */
export const READ_BACK_TRIES = 5;
const READ_BACK_BASE_MS = 200;
export const DEFAULT_RESEND_SETTLE_MS = 1_000;

interface Outcome {
  readonly status: ChangeStatus;
  readonly message?: string;
}

interface Run {
  readonly deps: ExecutorDeps;
  readonly total: number;
  readonly results: Map<Change, ChangeResult>;
  done: number;
  anyFailed: boolean;
}

export async function executePlan(plan: Plan, deps: ExecutorDeps): Promise<ApplyReport> {
  const chains = chainsOf(plan.changes);
  const run: Run = { deps, total: plan.changes.length, results: new Map(), done: 0, anyFailed: false };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < chains.length) {
      const chain = chains[next++]!;
      await runChain(chain, run);
    }
  };
  const width = Math.max(1, Math.min(Math.floor(deps.concurrency) || 1, chains.length));
  await Promise.all(Array.from({ length: width }, worker));
  return report(plan.changes.map((c) => run.results.get(c)!));
}

function report(results: ChangeResult[]): ApplyReport {
  const count = (s: ChangeStatus): number => results.filter((r) => r.status === s).length;
  return { results, applied: count('applied'), failed: count('failed'), skipped: count('skipped'), unconverged: [] };
}

async function runChain(chain: Chain, run: Run): Promise<void> {
  let broken: Change | undefined;
  // The length of the action as last seen by this chain; a mismatch with the next index means
  // someone else appended meanwhile, so the action is read before sending.
  const state: ChainState = { knownLength: undefined, first: true };
  for (const change of chain.changes) {
    const started = run.deps.clock.now();
    const stop = stopReason(run, broken);
    const outcome: Outcome = stop !== undefined
      ? { status: 'skipped', message: stop }
      : await applyChange(change, run.deps, state).catch((err: unknown) => ({ status: 'failed' as const, message: sentence(err) }));
    if (outcome.status !== 'applied' && broken === undefined) broken = change;
    finish(run, { change, status: outcome.status, ...(outcome.message !== undefined ? { message: outcome.message } : {}), durationMs: Math.max(0, run.deps.clock.now() - started) });
  }
}

function stopReason(run: Run, broken: Change | undefined): string | undefined {
  if (run.deps.signal?.aborted) return 'skipped because the apply was interrupted';
  if (broken !== undefined) return `skipped because ${describe(broken)} did not apply`;
  if (run.deps.failFast && run.anyFailed) return 'skipped because another change failed and --fail-fast is set';
  return undefined;
}

function finish(run: Run, r: ChangeResult): void {
  run.results.set(r.change, r);
  run.done++;
  if (r.status === 'failed') run.anyFailed = true;
  const line = `${describe(r.change)}: ${r.status}${r.message !== undefined ? ` (${r.message})` : ''}`;
  if (r.status === 'failed') run.deps.log.warn(line);
  else run.deps.log.debug(line);
  try {
    run.deps.onResult?.(r, run.done, run.total);
  } catch (err) {
    // Progress output failing (a closed stderr) must not abandon writes that are under way.
    run.deps.log.debug(`progress callback failed: ${sentence(err)}`);
  }
}

interface ChainState {
  knownLength: number | undefined;
  first: boolean;
}

async function applyChange(change: Change, deps: ExecutorDeps, state: ChainState): Promise<Outcome> {
  switch (change.kind) {
    case 'firmware': return applyFirmware(change, deps);
    case 'phase': return applyPhase(change, deps, state);
    default: return assertNever(change);
  }
}

async function applyFirmware(c: FirmwareChange, deps: ExecutorDeps): Promise<Outcome> {
  // Not given the abort signal: a write that has started is let to finish.
  await deps.client.tenant(c.tenant).putFirmware(c.key, c.body);
  return { status: 'applied' };
}

type Verdict = 'present' | 'absent' | 'conflict' | 'short';

/** What the live action says about the phase we mean to have at `index`. */
export function judge(action: Action | null, index: number, digest: string): Verdict {
  if (action === null) return 'short';
  const live = action.phases[index];
  if (live !== undefined) return phaseDigest(live) === digest ? 'present' : 'conflict';
  return action.phases.length === index ? 'absent' : 'short';
}

function verdictFailure(v: 'conflict' | 'short', c: PhaseChange, action: Action | null): Outcome {
  if (action === null) return { status: 'failed', message: `action ${c.action_id} was not found when it was read back` };
  if (v === 'conflict') {
    return { status: 'failed', message: `action ${c.action_id} already has a different phase at index ${c.index}, so someone else changed it; plan again` };
  }
  return { status: 'failed', message: `action ${c.action_id} has ${action.phases.length} phases where the plan expected ${c.index}; plan again` };
}

async function applyPhase(c: PhaseChange, deps: ExecutorDeps, state: ChainState): Promise<Outcome> {
  const tc = deps.client.tenant(c.tenant);
  const digest = phaseDigest(c.after);
  const mustCheck = (state.first && deps.checkIndex !== false) || (state.knownLength !== undefined && state.knownLength !== c.index);
  state.first = false;
  if (mustCheck) {
    const action = await readBack(tc, c.action_id, deps);
    state.knownLength = action?.phases.length;
    const v = judge(action, c.index, digest);
    if (v === 'present') {
      state.knownLength = c.index + 1;
      return { status: 'applied', message: 'the phase was already there' };
    }
    if (v !== 'absent') return verdictFailure(v, c, action);
  }
  let lastError: unknown;
  for (let send = 1; send <= MAX_SENDS; send++) {
    const intent = await deps.journal.recordIntent({ tenant: c.tenant, action_id: c.action_id, index: c.index, name: c.after.name, digest });
    try {
      const action = await tc.appendPhase(c.action_id, c.after);
      await deps.journal.recordOutcome(intent.id, 'applied');
      state.knownLength = action.phases.length;
      return landed(action, c, digest);
    } catch (err) {
      lastError = err;
    }
    if (certainlyNotApplied(lastError)) {
      await deps.journal.recordOutcome(intent.id, 'not-applied');
      if (!(lastError instanceof ApiError && lastError.retryable) || send === MAX_SENDS) break;
      await deps.clock.sleep(backoff(send));
      continue;
    }
    deps.log.warn(`the outcome of appending ${describe(c)} is unknown (${sentence(lastError)}); reading the action back`);
    const decided = await settleUnknown(tc, c, digest, deps);
    if (decided.kind === 'unreadable') {
      // The intent stays pending in the journal: the next apply settles it before planning.
      return { status: 'failed', message: `the outcome of the append is unknown and action ${c.action_id} could not be read back (${sentence(decided.error)}); the next apply settles it from the journal` };
    }
    const { verdict: v, action } = decided;
    state.knownLength = action?.phases.length;
    await deps.journal.recordOutcome(intent.id, v === 'present' ? 'applied' : 'not-applied');
    if (v === 'present') return { status: 'applied' };
    if (v !== 'absent') return verdictFailure(v, c, action);
    deps.log.info(`${describe(c)} did not land; sending it again`);
  }
  return { status: 'failed', message: `the append did not go through after ${MAX_SENDS} tries: ${sentence(lastError)}` };
}

type Settled = { kind: 'read'; verdict: Verdict; action: Action | null } | { kind: 'unreadable'; error: unknown };

/** Reads the action after an unknown outcome; "absent" is believed only when a second, later read agrees. */
async function settleUnknown(tc: TenantClient, c: PhaseChange, digest: string, deps: ExecutorDeps): Promise<Settled> {
  try {
    let action = await readBack(tc, c.action_id, deps);
    if (judge(action, c.index, digest) === 'absent') {
      await deps.clock.sleep(deps.settleMs ?? DEFAULT_RESEND_SETTLE_MS);
      action = await readBack(tc, c.action_id, deps);
    }
    return { kind: 'read', verdict: judge(action, c.index, digest), action };
  } catch (error) {
    return { kind: 'unreadable', error };
  }
}

function landed(action: Action, c: PhaseChange, digest: string): Outcome {
  const live = action.phases[c.index];
  if (live !== undefined && phaseDigest(live) === digest) return { status: 'applied' };
  return { status: 'failed', message: `the phase was appended but is not at index ${c.index}, so someone else changed action ${c.action_id} at the same time; plan again` };
}

/** A failed write the API certainly did not perform: the client says so, or the server answered 4xx. */
function certainlyNotApplied(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  if (err.details.outcome === 'not-sent') return true;
  if (err.details.outcome === 'unknown') return false;
  const s = err.status;
  return s !== undefined && s >= 400 && s < 500 && s !== 408;
}

/** GET the action, retrying the read (it is safe) a few times with backoff. */
async function readBack(tc: TenantClient, id: number, deps: ExecutorDeps): Promise<Action | null> {
  let last: unknown;
  for (let i = 0; i < READ_BACK_TRIES; i++) {
    if (i > 0) await deps.clock.sleep(backoff(i));
    try {
      return await tc.getAction(id);
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

function backoff(attempt: number): number {
  return READ_BACK_BASE_MS * 2 ** (attempt - 1);
}

/** One sentence, on one line, with every registered key replaced. */
export function sentence(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return redact(text).replace(/\s+/g, ' ').trim().replace(/\.$/, '');
}
