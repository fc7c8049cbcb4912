// The executor: runs a plan's changes against the API. Different objects in parallel, the
// phases of one action strictly in order. Every write is decided on a fresh read of its object,
// taken inside the lock just before the write (SPEC section 3):
//
// - phase k of an action is sent only when a read shows exactly the first k phases the action
//   must end with (the live list the plan was made from, then the plan's appends); a longer list
//   that still matches means someone else appended it (nothing sent); anything else stops the
//   action as a conflict. The intent is journaled (fsync) before that read, so the gap between
//   the read and the send holds no disk write.
// - a 2xx answer to an append is final: journaled as acknowledged, never sent again.
// - an append whose outcome is unknown is read back; if the phase does not show, it is not sent
//   again in this run (a later run sends it once reads have shown it absent for the settle window).
// - a PUT is sent only when a read of the record shows every field as the plan saw it; a record
//   that moved is stale (reported, not written), one that already has the values is left alone.
import type {
  Action, ApplyReport, Change, ChangeResult, ChangeStatus, Clock, FirmwareBundle, FirmwareChange, FirmwareUpdate,
  LiveFirmware, LiveState, Logger, PhaseChange, PhaseSpec, Plan,
} from '../model/index.js';
import type { TenantClient } from '../api/types.js';
import { ApiError } from '../errors.js';
import { redact } from '../redact.js';
import { canonicalJson, clip, entriesText, normalizePhase, sortDependencies } from '../core/canonical.js';
import { actionKey, type Journal } from './journal.js';
import { phaseDigest } from './digest.js';
import { chainsOf, describe, assertNever } from './order.js';
import { dependentsLeft, unsatisfiedAfter, type Unsatisfied } from '../core/plan.js';
import { divergedPrefix } from './verify.js';
import type { Chain } from './order.js';

export interface ExecutorDeps {
  client: { tenant(name: string): TenantClient };
  journal: Journal;
  log: Logger;
  clock: Clock;
  /**
   * The live state the plan was made from (or, for a saved plan, checked against): the baseline
   * every fresh read before a write is compared with.
   */
  live: LiveState;
  /** Most changes in flight at once, over all tenants (the client also adapts per tenant on 429). */
  concurrency: number;
  failFast?: boolean;
  /** When aborted, no new change starts; the running ones finish. */
  signal?: AbortSignal;
  /** Checked before every write: a holder that lost the lock sends nothing more. */
  assertLockHeld?: () => Promise<void>;
  /**
   * Asked just before each write (after the fresh read and the lock check): a reason holds the
   * write back (a sync window that opened during the run, a desired-state file that changed
   * under watch). A held phase append holds the rest of its action too.
   */
  beforeWrite?: (change: Change) => string | undefined;
  /** tenant\0action → why nothing may be appended to it (an append still in doubt from a run before). */
  blocked?: ReadonlyMap<string, string>;
  /**
   * After an append whose outcome is unknown, the action is read back at once and again this long
   * later (default 1 s): a server behind a gateway may finish a moment after the gateway gave up.
   */
  readBackPauseMs?: number;
  /** Told in messages: how long reads must show an unknown append absent before a later run re-sends it. */
  settleMs?: number;
  onResult?: (r: ChangeResult, done: number, total: number) => void;
}

const ALREADY_THERE = 'it already has the desired values';

/** Sends of one phase, counting the first, while each earlier one was certainly refused (429, connection refused). */
export const MAX_SENDS = 3;
/** Reads of an object before a write, retried on failure (reads are safe). */
export const READ_TRIES = 3;
const READ_BACKOFF_MS = 200;
export const DEFAULT_READ_BACK_PAUSE_MS = 1_000;

interface Outcome {
  readonly status: ChangeStatus;
  readonly message?: string;
  /** The action's phases are no longer the YAML's first ones (a duplicate, a foreign phase): one sentence. */
  readonly diverged?: string;
  /** Stop the rest of this chain (later phases of the action), with this reason. */
  readonly stopChain?: string;
  /** The journal keeps the append in doubt (ChangeResult.inDoubt). */
  readonly inDoubt?: true;
  /** The lock was taken over: no further write of this run may be sent. */
  readonly lockLost?: string;
}

interface Run {
  readonly deps: ExecutorDeps;
  readonly plan: Plan;
  /** Per tenant, made at its first deactivation: the writes missed and, if any, what stays unsatisfied. */
  readonly deactivationChecks: Map<string, { readonly missed: readonly FirmwareChange[]; readonly unsatisfied?: Unsatisfied }>;
  readonly total: number;
  readonly results: Map<Change, ChangeResult>;
  readonly diverged: string[];
  done: number;
  anyFailed: boolean;
  lockLost: string | undefined;
}

export async function executePlan(plan: Plan, deps: ExecutorDeps): Promise<ApplyReport> {
  let chains = chainsOf(plan.changes);
  const run: Run = { deps, plan, deactivationChecks: new Map(), total: plan.changes.length, results: new Map(), diverged: [], done: 0, anyFailed: false, lockLost: undefined };
  let next = 0;
  // Chains of a tenant running at once follow its client's adaptive limit (deps.concurrency is
  // the ceiling): more workers than the limit would read objects long before their writes get a
  // slot. A chain is one object's changes, in order (an action's appends one after another),
  // whatever the limit does.
  const running = new Map<string, number>();
  let waiting: Array<() => void> = [];
  const wakeAll = (): void => {
    const w = waiting;
    waiting = [];
    for (const wake of w) wake();
  };
  const worker = async (): Promise<void> => {
    while (next < chains.length) {
      const chain = chains[next]!;
      const tenant = chain.changes[0]?.tenant ?? '';
      const limit = deps.client.tenant(tenant).concurrencyNow?.() ?? Infinity;
      const now = running.get(tenant) ?? 0;
      if (now >= limit) {
        await new Promise<void>((resolve) => waiting.push(resolve));
        continue;
      }
      next++;
      running.set(tenant, now + 1);
      try {
        await runChain(chain, run);
      } finally {
        running.set(tenant, (running.get(tenant) ?? 1) - 1);
        wakeAll();
      }
    }
  };
  // Deactivations go last, once every other write of the plan is done: the dependency check of
  // the plan may count on an activation (or a dependency change) of the same run, and if that
  // was not applied, the deactivation is checked again against what was (checkDeactivation).
  // A deactivation is a change whose `after` sets is_deactivated to true: from false, and from a
  // live value that is unknown (null counts as active; `before` then has no is_deactivated).
  const isDeactivation = (ch: Chain): boolean => ch.changes.every((c) => c.kind === 'firmware' && c.after.is_deactivated === true);
  // Among the deactivations, those of firmware that has dependencies of its own go first and one
  // at a time: if one fails, what it depends on must stay (the check of each later one sees it).
  const hasDependencies = (ch: Chain): boolean => ch.changes.some((c) => c.kind === 'firmware'
    && (deps.live.tenants.get(c.tenant)?.firmwares.get(c.key) ?? []).some((r) => r.component_name === c.component_name && r.dependencies.length > 0));
  // Except those of a component nothing depends on (no record read, no write of the plan names
  // it in a dependency): whether they fail or not, no dependency check can change, so they go at
  // once, before the others. One at a time, 80 such deactivations at 20 ms of latency were most
  // of an apply of 12,000 changes.
  const dependedOn = new Map<string, Set<string>>();
  const componentsDependedOn = (tenant: string): Set<string> => {
    let set = dependedOn.get(tenant);
    if (set !== undefined) return set;
    set = new Set();
    for (const list of deps.live.tenants.get(tenant)?.firmwares.values() ?? []) for (const r of list) for (const d of r.dependencies) set.add(d.component_name);
    for (const c of plan.changes) if (c.kind === 'firmware' && c.tenant === tenant) for (const d of c.body.dependencies) set.add(d.component_name);
    dependedOn.set(tenant, set);
    return set;
  };
  const nothingDependsOn = (ch: Chain): boolean => ch.changes.every((c) => c.kind === 'firmware' && !componentsDependedOn(c.tenant).has(c.component_name));
  const deactivations = chains.filter(isDeactivation);
  const withDependencies = deactivations.filter(hasDependencies);
  const waves: { chains: Chain[]; oneByOne: boolean }[] = [
    { chains: chains.filter((ch) => !isDeactivation(ch)), oneByOne: false },
    { chains: withDependencies.filter(nothingDependsOn), oneByOne: false },
    { chains: withDependencies.filter((ch) => !nothingDependsOn(ch)), oneByOne: true },
    { chains: deactivations.filter((ch) => !hasDependencies(ch)), oneByOne: false },
  ];
  for (const wave of waves) {
    if (wave.chains.length === 0) continue;
    chains = wave.chains;
    next = 0;
    const width = wave.oneByOne ? 1 : Math.max(1, Math.min(Math.floor(deps.concurrency) || 1, wave.chains.length));
    await Promise.all(Array.from({ length: width }, worker));
  }
  return report(plan.changes.map((c) => run.results.get(c)!), run.diverged);
}

/**
 * Before a deactivation: when another firmware change of its tenant in this plan was not
 * applied, the dependency check is made again with only what was; a deactivation that now
 * leaves an active firmware's dependency unsatisfied is not sent. Deactivations the plan let
 * through with --allow-broken-dependencies are not checked again.
 */
function checkDeactivation(c: FirmwareChange, run: Run, plan: Plan): string | undefined {
  if (c.after.is_deactivated !== true) return undefined;
  if ((plan.broken_dependencies ?? []).some((b) => b.tenant === c.tenant && b.key === c.key)) return undefined;
  // Deactivations run one at a time, after every other write: what was missed so far (another
  // write, or a deactivation before this one, that was not applied), and with it what stays
  // unsatisfied once what was applied and the deactivations still to come are done. Made again
  // only when something more was missed.
  const firmware = plan.changes.filter((o): o is FirmwareChange => o.kind === 'firmware' && o.tenant === c.tenant && o !== c);
  const missed = firmware.filter((o) => {
    const r = run.results.get(o);
    return r !== undefined && r.status !== 'applied' && !(r.message ?? '').startsWith(ALREADY_THERE);
  });
  if (missed.length === 0) return undefined;
  let check = run.deactivationChecks.get(c.tenant);
  if (check === undefined || check.missed.length !== missed.length) {
    check = { missed, unsatisfied: unsatisfiedAfter(c.tenant, run.deps.live, [c, ...firmware.filter((o) => !missed.includes(o))]) };
    run.deactivationChecks.set(c.tenant, check);
  }
  const lost = dependentsLeft(c, check.unsatisfied!);
  if (lost.length === 0) return undefined;
  const shown = lost.length > 3 ? `${lost.slice(0, 3).join(', ')} and ${lost.length - 3} more` : lost.join(', ');
  return `firmware ${c.key} was not deactivated: the plan counted on ${missed.map((o) => `firmware ${o.key}`).slice(0, 3).join(', ')}${missed.length > 3 ? ` and ${missed.length - 3} more` : ''}, which ${missed.length === 1 ? 'was' : 'were'} not applied, and without ${missed.length === 1 ? 'it' : 'them'} deactivating it leaves ${shown} unsatisfied; plan again`;
}

function report(results: ChangeResult[], diverged: string[]): ApplyReport {
  const count = (s: ChangeStatus): number => results.filter((r) => r.status === s).length;
  return {
    results, applied: count('applied'), failed: count('failed'), skipped: count('skipped'),
    unconverged: [], diverged: [...diverged].sort(),
  };
}

async function runChain(chain: Chain, run: Run): Promise<void> {
  const first = chain.changes[0]!;
  const prepared = first.kind === 'phase' ? prepareActionChain(chain.changes as readonly PhaseChange[], run.deps) : undefined;
  let stop: string | undefined;
  let refused = prepared?.refused;
  for (const change of chain.changes) {
    const started = run.deps.clock.now();
    const reason = stopReason(run) ?? stop;
    let outcome: Outcome;
    if (reason !== undefined) {
      outcome = { status: 'skipped', message: reason };
    } else if (refused !== undefined) {
      outcome = { status: 'failed', message: refused };
      refused = undefined;
    } else {
      outcome = await applyChange(change, run, prepared ?? NO_CHAIN).catch((err: unknown) => ({ status: 'failed' as const, message: sentence(err) }));
    }
    if (outcome.diverged !== undefined) run.diverged.push(outcome.diverged);
    if (outcome.lockLost !== undefined) run.lockLost ??= outcome.lockLost;
    if (stop === undefined) {
      if (outcome.stopChain !== undefined) stop = outcome.stopChain;
      else if (outcome.status === 'failed') stop = `skipped because ${describe(change)} did not apply`;
    }
    finish(run, { change, status: outcome.status, ...(outcome.message !== undefined ? { message: outcome.message } : {}), ...(outcome.inDoubt === true ? { inDoubt: true as const } : {}), durationMs: Math.max(0, run.deps.clock.now() - started) });
  }
}

const INTERRUPTED = 'skipped because the apply was interrupted';

function stopReason(run: Run): string | undefined {
  if (run.lockLost !== undefined) return `skipped because ${run.lockLost}`;
  if (run.deps.signal?.aborted) return INTERRUPTED;
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

async function applyChange(change: Change, run: Run, chain: PreparedChain): Promise<Outcome> {
  try {
    await run.deps.assertLockHeld?.();
  } catch (err) {
    run.lockLost ??= sentence(err);
    return { status: 'failed', message: sentence(err) };
  }
  switch (change.kind) {
    case 'firmware': {
      const broken = checkDeactivation(change, run, run.plan);
      return broken !== undefined ? { status: 'failed', message: broken } : applyFirmware(change, run.deps);
    }
    case 'phase': return applyPhase(change, run.deps, chain);
    default: return assertNever(change);
  }
}

/**
 * The lock, checked again after the fresh read and just before the send (nothing is awaited in
 * between): a run stopped (SIGSTOP, a frozen VM, a held answer) while another took the lock over
 * and settled its intent must not send what it decided on before.
 */
async function stillHeld(deps: ExecutorDeps): Promise<string | undefined> {
  try {
    await deps.assertLockHeld?.();
    return undefined;
  } catch (err) {
    return sentence(err);
  }
}

// ---------------------------------------------------------------- firmware

const FIELDS = ['is_deactivated', 'uncompressed_size', 'dependencies'] as const;
type Fields = Pick<LiveFirmware, (typeof FIELDS)[number]>;

/**
 * A field as text. `whole`: each dependency with every field a server gave it (two reads of the
 * live record compared: a change to a field of an entry the YAML does not manage is a change);
 * else only the two the YAML can set (what was sent, against what a read shows).
 */
function fieldText(f: Fields, name: (typeof FIELDS)[number], whole = false): string {
  if (name !== 'dependencies') return JSON.stringify(f[name]);
  return whole ? entriesText(f.dependencies) : canonicalJson(sortDependencies(f.dependencies));
}

/** The fields that differ between two states of a record (dependencies as a set). */
function moved(a: Fields, b: Fields, whole = false): (typeof FIELDS)[number][] {
  return FIELDS.filter((name) => fieldText(a, name, whole) !== fieldText(b, name, whole));
}

function asFields(body: FirmwareUpdate): Fields {
  return { is_deactivated: body.is_deactivated, uncompressed_size: body.uncompressed_size, dependencies: body.dependencies };
}

async function applyFirmware(c: FirmwareChange, deps: ExecutorDeps): Promise<Outcome> {
  const baseline = (deps.live.tenants.get(c.tenant)?.firmwares.get(c.key) ?? []).find((r) => r.component_name === c.component_name);
  const bundle = baseline?.bundles[0];
  if (baseline === undefined || bundle === undefined) {
    return { status: 'failed', message: `firmware ${c.key} was not in the live state the plan was checked against; plan again` };
  }
  const tc = deps.client.tenant(c.tenant);
  // Each try is decided on its own read: the client never retries a PUT with a body built from
  // an older read, which would revert a field someone changed between two tries.
  let lastError: unknown;
  for (let attempt = 1; attempt <= PUT_TRIES; attempt++) {
    const fresh = await readWithRetry(() => tc.getBundle(bundle, deps.signal), deps).catch((err: unknown) => err as Error);
    if (fresh instanceof Error) {
      if (deps.signal?.aborted) return { status: 'skipped', message: INTERRUPTED };
      return { status: 'failed', message: `firmware ${c.key} could not be read before writing it, so nothing was sent: ${sentence(fresh)}` };
    }
    const record = recordIn(fresh, c);
    if (record === undefined) {
      return { status: 'failed', message: `firmware ${c.key} (${c.component_name}) is no longer in bundle ${clip(bundle, 100)}; nothing was written: plan again` };
    }
    const now: Fields = { is_deactivated: record.is_deactivated ?? null, uncompressed_size: record.uncompressed_size ?? null, dependencies: record.dependencies ?? [] };
    const drift = moved(baseline, now, true);
    if (drift.length > 0) {
      // Our earlier try may have landed after all: then the record holds exactly what we sent.
      if (moved(asFields(c.body), now).length === 0) {
        return attempt > 1 ? { status: 'applied' } : { status: 'skipped', message: `${ALREADY_THERE}; nothing sent` };
      }
      const detail = drift.map((f) => `${f} ${clip(fieldText(baseline, f, true), 100)} → ${clip(fieldText(now, f, true), 100)}`).join(', ');
      return { status: 'failed', message: `firmware ${c.key} changed since the plan was made (${detail}); it was not written, so nothing it does not manage is overwritten: plan again` };
    }
    const lost = await stillHeld(deps);
    if (lost !== undefined) return { status: 'failed', message: lost, lockLost: lost };
    const hold = deps.beforeWrite?.(c);
    if (hold !== undefined) return { status: 'skipped', message: hold };
    try {
      // Not given the abort signal: a write that has started is let to finish.
      await tc.putFirmware(c.key, c.body, undefined, { once: true });
      return { status: 'applied' };
    } catch (err) {
      lastError = err;
      if (!worthAnotherPut(err) || attempt === PUT_TRIES) break;
      if (deps.signal?.aborted) return { status: 'failed', message: `the PUT failed (${sentence(err)}) and the apply was interrupted before trying again` };
      await deps.clock.sleep(Math.max(READ_BACKOFF_MS * 2 ** (attempt - 1), (err as ApiError).details.retryAfterMs ?? 0));
    }
  }
  throw lastError;
}

/** Tries of one PUT, each after its own read (the client's own retries are off for it). */
export const PUT_TRIES = 6;

/** A failed PUT worth another try (after another read): 429, 502-504, a timeout, a reset, a refused connection. */
function worthAnotherPut(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  if (err.retryable || err.details.outcome === 'unknown') return true;
  return err.details.outcome === 'not-sent' && err.status === undefined;
}

function recordIn(bundle: FirmwareBundle, c: FirmwareChange): FirmwareBundle['firmwares'][number] | undefined {
  return bundle.firmwares.find((f) => f.version_number === c.key && f.component_name === c.component_name);
}

// ---------------------------------------------------------------- phases

interface PreparedChain {
  /** The whole list the action must end with: the live phases the plan saw, then its appends. */
  readonly expected: readonly PhaseSpec[];
  /** Why the chain must not start at all. */
  readonly refused?: string;
  /** Indices this run appended and the API answered 2xx to: a read not showing them yet is lag, not a conflict. */
  readonly acknowledged: Set<number>;
}

const NO_CHAIN: PreparedChain = { expected: [], acknowledged: new Set() };

function prepareActionChain(changes: readonly PhaseChange[], deps: ExecutorDeps): PreparedChain {
  const c = changes[0]!;
  const blocked = deps.blocked?.get(actionKey(c.tenant, c.action_id));
  if (blocked !== undefined) return { expected: [], acknowledged: new Set(), refused: `nothing is appended to action ${c.action_id} while ${blocked}` };
  const live = deps.live.tenants.get(c.tenant)?.actions.get(c.action_id);
  if (!live) return { expected: [], acknowledged: new Set(), refused: `action ${c.action_id} was not in the live state the plan was checked against; plan again` };
  const base = live.phases.map(normalizePhase);
  const expected = [...base, ...changes.map((x) => x.after)];
  // A phase dus-sync saw stored cannot have left (phases are append-only): if the plan wants it
  // again, the read it was made from went backwards, and appending would make it twice.
  for (const x of changes) {
    const at = deps.journal.storedBefore(x.tenant, x.action_id, x.index, phaseDigest(x.after));
    if (at !== undefined) {
      return { expected, acknowledged: new Set(), refused: `dus-sync appended phase ${x.index} ${clip(JSON.stringify(x.after.name), 60)} to action ${x.action_id} and a read showed it stored at ${at}, but the live state now shows the action without it: the API's reads go backwards (a lagging replica?); it is not appended again` };
    }
  }
  const contiguous = changes.every((x, i) => x.index === base.length + i);
  if (!contiguous) {
    return { expected, acknowledged: new Set(), refused: `the plan appends to action ${c.action_id} from index ${c.index} but the action had ${base.length} phases; plan again` };
  }
  return { expected, acknowledged: new Set() };
}

const same = (a: PhaseSpec, b: PhaseSpec): boolean => phaseDigest(a) === phaseDigest(b);

/** How the live list compares with the expected one: how many leading phases agree. */
function agreeing(live: readonly PhaseSpec[], expected: readonly PhaseSpec[]): number {
  let n = 0;
  while (n < live.length && n < expected.length && same(live[n]!, expected[n]!)) n++;
  return n;
}

function names(list: readonly PhaseSpec[]): string {
  const shown = list.slice(-6).map((p) => clip(JSON.stringify(p.name), 60));
  return `[${list.length > 6 ? '…, ' : ''}${shown.join(', ')}]`;
}

/** How a live list departs from the YAML's first phases, as "has …" (the action is named by the caller). */
function departure(live: readonly PhaseSpec[], expected: readonly PhaseSpec[]): string {
  const seen = new Set<string>();
  const twice = live.find((p) => { const d = phaseDigest(p); if (seen.has(d)) return true; seen.add(d); return false; });
  const also = twice ? `, phase ${clip(JSON.stringify(twice.name), 60)} twice` : '';
  const n = agreeing(live, expected);
  if (n < live.length && n < expected.length) {
    return `has phase ${n} ${clip(JSON.stringify(live[n]!.name), 60)} where the YAML has ${clip(JSON.stringify(expected[n]!.name), 60)}${also} (live ${names(live)})`;
  }
  if (live.length > expected.length) return `has ${live.length} phases where the YAML has ${expected.length}${also} (live ${names(live)})`;
  return `has ${live.length} phases, fewer than expected (live ${names(live)})`;
}

async function applyPhase(c: PhaseChange, deps: ExecutorDeps, chain: PreparedChain): Promise<Outcome> {
  const { expected, acknowledged } = chain;
  const tc = deps.client.tenant(c.tenant);
  const digest = phaseDigest(c.after);
  const k = c.index;
  let lastRefusal: unknown;
  let sends = 0;
  for (let send = 1; send <= MAX_SENDS; send++) {
    // Journaled before the read, so that nothing slow sits between the read and the send.
    const intent = await deps.journal.recordIntent({ tenant: c.tenant, action_id: c.action_id, index: k, name: c.after.name, digest });
    const read = await readWithRetry(() => tc.getAction(c.action_id, deps.signal), deps).catch((err: unknown) => err as Error);
    if (read instanceof Error || read === null) {
      await deps.journal.recordOutcome(intent.id, 'not-applied');
      if (deps.signal?.aborted) return { status: 'skipped', message: INTERRUPTED };
      const why = read === null ? 'it was not found' : sentence(read);
      return { status: 'failed', message: `action ${c.action_id} could not be read before appending, so nothing was sent: ${why}` };
    }
    await deps.journal.confirm(c.tenant, read);
    const live = read.phases.map(normalizePhase);
    const n = agreeing(live, expected);
    if (!(live.length === k && n === k)) {
      await deps.journal.recordOutcome(intent.id, 'not-applied');
      if (n === live.length && live.length > k) return { status: 'skipped', message: 'it was already there (another actor appended it); nothing sent' };
      if (n === live.length && live.length < k) {
        const ours = Array.from({ length: k - live.length }, (_, j) => live.length + j).every((i) => acknowledged.has(i));
        if (ours) {
          const why = `action ${c.action_id} shows ${live.length} phases: the API accepted phase ${live.length} but its reads do not show it yet; the rest waits for a later run`;
          return { status: 'skipped', message: why, stopChain: `skipped because ${why}` };
        }
        // Fewer phases than a read before showed, and not because of our own appends: the
        // API's reads go backwards (a lagging replica behind a load balancer?).
        const why = `action ${c.action_id} shows ${live.length} phases, fewer than the ${k} an earlier read showed: the API's reads go backwards (a lagging replica?); nothing was appended`;
        return { status: 'failed', message: why, stopChain: `skipped because ${why}` };
      }
      const why = `action ${c.action_id} ${departure(live, expected)}`;
      return { status: 'failed', message: `${why}; nothing was appended: fix the action or the YAML, then plan again`, stopChain: `skipped because action ${c.action_id} is in conflict` };
    }
    const lost = await stillHeld(deps);
    if (lost !== undefined) {
      await deps.journal.recordOutcome(intent.id, 'not-applied');
      return { status: 'failed', message: lost, lockLost: lost, stopChain: `skipped because ${lost}` };
    }
    const hold = deps.beforeWrite?.(c);
    if (hold !== undefined) {
      await deps.journal.recordOutcome(intent.id, 'not-applied');
      return { status: 'skipped', message: hold, stopChain: `skipped because ${hold}` };
    }
    let answer: Action;
    sends = send;
    try {
      answer = await tc.appendPhase(c.action_id, c.after);
    } catch (err) {
      if (isAcknowledged(err)) {
        await deps.journal.recordOutcome(intent.id, 'acknowledged');
        acknowledged.add(k);
        return { status: 'applied', message: `the API accepted it (${(err as ApiError).status}) but its answer could not be used: ${sentence(err)}` };
      }
      if (certainlyNotApplied(err)) {
        // A 4xx says "not done"; a read makes sure a server that stored it and said 4xx anyway
        // does not get it again. Only a request the client never sent is certain; after a 4xx
        // the append stays in doubt, since its reads may lag: after a 429 it is sent again only
        // once reads have shown it absent for the settle window (this run waits for it), after
        // any other it is not sent again in this run, and a later run sends it only after reads
        // have shown it absent for the settle window.
        if (err instanceof ApiError && err.status !== undefined && err.details.outcome !== 'not-sent') {
          const check = await readWithRetry(() => tc.getAction(c.action_id), deps).catch(() => null);
          const stored = await shownStored(c, check, err.status, intent.id, expected, deps);
          if (stored !== undefined) return stored;
          const settle = Math.round((deps.settleMs ?? 30_000) / 1000);
          if (check && err.status === 429 && err.retryable && send < MAX_SENDS) {
            await deps.journal.recordAbsent(intent.id, deps.clock.now());
            try {
              await deps.clock.sleep(Math.max(deps.settleMs ?? 30_000, READ_BACKOFF_MS * 2 ** (send - 1)), deps.signal);
            } catch {
              // Interrupted: the intent stays open, absent; the next run settles it from the journal.
              return { status: 'skipped', message: INTERRUPTED };
            }
            const again = await readWithRetry(() => tc.getAction(c.action_id), deps).catch(() => null);
            const late = await shownStored(c, again, err.status, intent.id, expected, deps);
            if (late !== undefined) return late;
            if (again === null) {
              return { status: 'failed', message: `the API answered 429 and action ${c.action_id} could not be read back; it is not sent again now, and the next run settles it from the journal`, stopChain: `skipped because the outcome of appending phase ${c.index} is unknown`, inDoubt: true };
            }
            await deps.journal.recordOutcome(intent.id, 'not-applied');
            lastRefusal = err;
            continue;
          }
          if (check) await deps.journal.recordAbsent(intent.id, deps.clock.now());
          return {
            status: 'failed',
            message: `the API refused the append: ${sentence(err)}; it is not sent again in this run, and a later run sends it only after reads have shown it absent for ${settle} s (a server may store an append and still answer ${err.status})`,
            stopChain: `skipped because the API refused phase ${k}`,
            inDoubt: true,
          };
        }
        await deps.journal.recordOutcome(intent.id, 'not-applied');
        lastRefusal = err;
        if (!(err instanceof ApiError && err.retryable) || send === MAX_SENDS) break;
        await deps.clock.sleep(READ_BACKOFF_MS * 2 ** (send - 1));
        continue;
      }
      return unknownOutcome(c, err, intent.id, expected, deps);
    }
    await deps.journal.recordOutcome(intent.id, 'acknowledged');
    acknowledged.add(k);
    return afterAnswer(c, answer, expected);
  }
  return { status: 'failed', message: `the API refused the append${sends > 1 ? ` ${sends} times` : ''}: ${sentence(lastRefusal)}` };
}

/** A 2xx whose body was not usable (malformed, another object): the append is done all the same. */
function isAcknowledged(err: unknown): boolean {
  return err instanceof ApiError && err.status !== undefined && err.status >= 200 && err.status < 300;
}

/** The answer to our own append: the action must now be exactly the YAML's first k+1 phases. */
function afterAnswer(c: PhaseChange, answer: Action, expected: readonly PhaseSpec[]): Outcome {
  const live = answer.phases.map(normalizePhase);
  const n = agreeing(live, expected);
  if (n === live.length && live.length === c.index + 1) return { status: 'applied' };
  // Behind a queue the answer may not show the phase yet: the next read decides.
  if (n === live.length && live.length <= c.index) return { status: 'applied', message: 'the API accepted it; its answer does not show it yet' };
  const why = departure(live, expected);
  return {
    status: 'applied',
    message: `appended, but the action is no longer the YAML's first phases: it ${why}; another actor appended at the same time`,
    diverged: `${divergedPrefix(c.tenant, c.action_id)} no longer the YAML's first phases after phase ${c.index} ${JSON.stringify(c.after.name)} was appended: it ${why}; another actor appended at the same time, and phases cannot be removed: fix the action in the service and the YAML`,
    stopChain: `skipped because action ${c.action_id} is no longer the YAML's first phases`,
  };
}

async function unknownOutcome(c: PhaseChange, err: unknown, intentId: string, expected: readonly PhaseSpec[], deps: ExecutorDeps): Promise<Outcome> {
  const tc = deps.client.tenant(c.tenant);
  deps.log.warn(`the outcome of appending ${describe(c)} is unknown (${sentence(err)}); reading the action back`);
  const pause = deps.readBackPauseMs ?? DEFAULT_READ_BACK_PAUSE_MS;
  let action: Action | null = null;
  for (const wait of [0, pause]) {
    if (wait > 0) await deps.clock.sleep(wait);
    try {
      action = await readWithRetry(() => tc.getAction(c.action_id), deps);
    } catch (readErr) {
      return { status: 'failed', message: `the outcome of the append is unknown and action ${c.action_id} could not be read back (${sentence(readErr)}); it is not sent again now, and the next run settles it from the journal`, inDoubt: true };
    }
    if (action === null) break;
    const live = action.phases.map(normalizePhase);
    if (live.length > c.index && same(live[c.index]!, c.after)) {
      await deps.journal.recordOutcome(intentId, 'applied');
      return afterAnswer(c, action, expected);
    }
    if (agreeing(live, expected) !== live.length || live.length > c.index) break;
  }
  if (action !== null) {
    await deps.journal.recordAbsent(intentId, deps.clock.now());
  }
  const settle = Math.round((deps.settleMs ?? 30_000) / 1000);
  const stop = `skipped because the outcome of appending phase ${c.index} is unknown`;
  return {
    status: 'failed',
    message: `the outcome of the append is unknown (${sentence(err)}) and reads do not show it; it is not sent again in this run: a later run sends it only after reads have shown it absent for ${settle} s (the settle window)`,
    stopChain: stop,
    inDoubt: true,
  };
}

/** The read after a refused append shows the phase stored at its index: applied after all. */
async function shownStored(c: PhaseChange, check: Action | null, status: number, intentId: string, expected: readonly PhaseSpec[], deps: ExecutorDeps): Promise<Outcome | undefined> {
  const shown = check?.phases[c.index];
  if (!check || shown === undefined || !same(normalizePhase(shown), c.after)) return undefined;
  await deps.journal.recordOutcome(intentId, 'applied');
  const after = afterAnswer(c, check, expected);
  return { ...after, message: `the API answered ${status} but a read shows the phase stored${after.message ? `; ${after.message}` : ''}` };
}

/** A failed write the API certainly did not perform: the client says so, or the server answered 4xx. */
function certainlyNotApplied(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  if (err.details.outcome === 'not-sent') return true;
  if (err.details.outcome === 'unknown') return false;
  const s = err.status;
  return s !== undefined && s >= 400 && s < 500 && s !== 408;
}

/** A read, retried a few times with backoff on failure (a 404 is an answer, not a failure). */
async function readWithRetry<T>(read: () => Promise<T>, deps: ExecutorDeps): Promise<T> {
  let last: unknown;
  for (let i = 0; i < READ_TRIES; i++) {
    if (i > 0) await deps.clock.sleep(READ_BACKOFF_MS * 2 ** (i - 1));
    try {
      return await read();
    } catch (err) {
      last = err;
      // An answer that is not the object asked for does not get better by asking again.
      if (err instanceof ApiError && err.details.wrongObject) break;
    }
  }
  throw last;
}

/** One sentence, on one line, with every registered key replaced. */
export function sentence(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return redact(text).replace(/\s+/g, ' ').trim().replace(/\.$/, '');
}
