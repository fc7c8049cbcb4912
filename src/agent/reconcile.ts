// The one pipeline shared by `plan`, `apply` and every pass of `watch`:
//   load → validate → fetch → plan → (render) → safety → (stop on dry-run) → apply → verify.
// Each step is a small function so the commands compose the same steps; nothing here diffs
// while applying (the plan is built first, then acted on).
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type {
  ApiLimits, ApplyReport, Change, ChangeResult, Clock, DesiredObject, DesiredState, LiveFirmware, LiveState, LiveTenant, Logger, Plan, ResolvedConfig,
} from '../model/index.js';
import { ConfigError, UnsafePlanError, UserError } from '../errors.js';
import { displayPath, loadAssembled, type LoadFilter } from '../load/index.js';
import { checkSelection } from '../load/selection.js';
import { fallbackKeyUsable, readAllKeys, readApiKeys } from '../load/keys.js';
import { createApiClient, type ApiClient, type PageEvent, type RequestEvent, type RequestStart } from '../api/client.js';
import { effectiveLimits } from '../api/limits.js';
import { parseBaseUrl } from '../api/url.js';
import { fetchLive, recordsBudget, refreshLive, type RecordsBudget, type RefreshTargets } from '../api/fetch-live.js';
import { indexAhead, type IndexAhead } from '../api/prefetch.js';
import { plan as computePlan, type PlanOptions } from '../core/plan.js';
import { windowHold } from '../core/windows.js';
import { checkSafety, type LimitSource } from '../core/safety.js';
import { settingLocation } from '../load/config-source.js';
import { MAX_FILE_SIZE } from '../limits.js';
import { executePlan } from '../apply/executor.js';
import { DEFAULT_SETTLE_MS, Journal, monotonicMs, otherJournalsInDoubt, settleJournal, type Settled } from '../apply/journal.js';
import { acquireLock, type ApplyLock } from '../apply/lock.js';
import { touchedObjects, verifyApplied } from '../apply/verify.js';
import { observeTriggers, triggerTimesPath } from '../apply/trigger-times.js';
import type { Revision } from '../load/revision.js';

export interface ConnectOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly log: Logger;
  readonly insecureHttp?: boolean;
  readonly caFile?: string;
  /** Where the per-tenant limit of requests in flight starts; it adapts between the floor and the ceiling. */
  readonly concurrency?: number;
  readonly minConcurrency?: number;
  readonly maxConcurrency?: number;
  /** From the flags; each one left out comes from the config's api.* or the client's default. */
  readonly limits?: ApiLimits;
  readonly onRequest?: (e: RequestEvent) => void;
  /** Progress of the reads (the CLI's progress line). */
  readonly onRequestStart?: (e: RequestStart) => void;
  readonly onPage?: (e: PageEvent) => void;
}

/**
 * Loads the desired state; any issue is a ConfigError (nothing gets written on invalid input),
 * and no files, or a --tenant or --selector that matches nothing, is a UserError.
 */
export async function loadOrThrow(config: ResolvedConfig, filter: LoadFilter, onObject?: (o: DesiredObject) => void): Promise<DesiredState> {
  const { result, facts } = await loadAssembled(config, filter, onObject ? { onObject } : {});
  if (result.issues.length > 0) throw new ConfigError(result.issues);
  checkSelection(facts, config, filter);
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
  return clientWith(config.baseUrl, config, await readApiKeys(config, tenants, opts.env), opts);
}

function clientWith(baseUrl: string, config: ResolvedConfig, keys: ReadonlyMap<string, string>, opts: ConnectOptions): ApiClient {
  return createApiClient({
    baseUrl,
    keys,
    tenantIds: tenantIdsOf(config),
    insecureHttp: opts.insecureHttp,
    caFile: opts.caFile,
    concurrency: opts.concurrency,
    minConcurrency: opts.minConcurrency,
    maxConcurrency: opts.maxConcurrency,
    ...effectiveLimits(config, opts.limits),
    log: opts.log,
    onRequest: opts.onRequest,
    onRequestStart: opts.onRequestStart,
    onPage: opts.onPage,
  });
}

/** tenants.NAME.tenant_id where the config sets one. */
export function tenantIdsOf(config: ResolvedConfig): Map<string, string> {
  return new Map(Object.entries(config.tenants).flatMap(([name, t]) => (t.tenantId !== undefined ? [[name, t.tenantId] as const] : [])));
}

/** Tenants read ahead at most: a config that lists more reads nothing ahead (most would be reads for nothing). */
const MAX_READ_AHEAD_TENANTS = 8;

/** The bundle lists being read and indexed while the desired state loads, and the client that reads them. */
export interface ReadAhead {
  readonly client: ApiClient;
  /** For fetchAndPlan: the indexes read ahead, and the records budget they spend from. */
  readonly read: EarlyRead;
  /** The tenants read ahead: the client holds their keys. */
  readonly tenants: readonly string[];
  /** Stops the reads and closes the client. */
  close(): Promise<void>;
}

/**
 * plan's read-ahead: the bundle lists of the tenants the config names (tenants:, default_tenant,
 * narrowed by --tenant) start before the desired state is loaded. Only when every key the run
 * could need is there and usable: a key problem is still one sentence before any request is
 * sent. Nothing is read ahead when anything is unclear (no base URL, a key missing or unusable,
 * a client that cannot be made, too many tenants): connect() then says what is wrong, after the
 * load, as before.
 */
export async function readAhead(config: ResolvedConfig, filter: LoadFilter, opts: ConnectOptions): Promise<ReadAhead | undefined> {
  if (!config.baseUrl) return undefined;
  const listed = Object.keys(config.tenants);
  const named = new Set(listed);
  if (config.defaultTenant !== undefined) named.add(config.defaultTenant);
  const only = filter.tenants !== undefined && filter.tenants.length > 0 ? [...new Set(filter.tenants)] : undefined;
  const tenants = (only ?? [...named]).sort();
  if (tenants.length === 0 || tenants.length > MAX_READ_AHEAD_TENANTS) return undefined;
  // Without a tenants: list, a document may name any tenant, and its key is DUS_API_KEY.
  if (only === undefined && listed.length === 0 && !fallbackKeyUsable(opts.env)) return undefined;
  const keys = await readAllKeys(config, tenants, opts.env);
  if (keys === undefined) return undefined;
  let client: ApiClient;
  try {
    client = clientWith(config.baseUrl, config, keys, opts);
  } catch {
    return undefined;
  }
  // The records budget of the read (2 x --max-response-size), shared with fetchLive; what the
  // lists hold before the desired state tells what to keep stays well under it, so that holding
  // everything early never ends a read that the filtered index would have finished.
  const budget = recordsBudget(client.limits.maxResponseBytes);
  const ahead = indexAhead(client, tenants, { budget, heldEarly: Math.floor((budget.limit * 0.9) / tenants.length) });
  return {
    client, read: { ahead, recordsBudget: budget }, tenants,
    async close() {
      await ahead.stop();
      await client.close();
    },
  };
}

/** What fetchAndPlan takes of a read-ahead. */
export interface EarlyRead {
  readonly ahead: IndexAhead;
  readonly recordsBudget: RecordsBudget;
}

export interface Planned {
  readonly live: LiveState;
  readonly plan: Plan;
}

/** What rollout control (docs/rollout-control.md) needs from the edges: the time, the state folder, the flags. */
export interface RolloutControl {
  readonly config: ResolvedConfig;
  /** The journal's path: the first-seen trigger times are kept beside it. */
  readonly journalPath: string;
  readonly log: Logger;
  readonly now: () => number;
  /** The API the plan reads (its normalized base URL): first-seen trigger times are kept per API. */
  readonly api?: string;
  /** --allow-broken-dependencies */
  readonly allowBrokenDependencies?: boolean;
  /** --ignore-windows: sync windows hold nothing (logged on every plan that they would have). */
  readonly ignoreWindows?: boolean;
}

export async function fetchAndPlan(client: ApiClient, desired: DesiredState, concurrency: number, signal?: AbortSignal, control?: RolloutControl, early?: EarlyRead): Promise<Planned> {
  const live = await fetchLive(client, desired, { concurrency, signal, ...(early ?? {}) });
  return { live, plan: await planLive(desired, live, control) };
}

/** How a plan is computed: the whole one, or watch's incremental one (src/core/replan.ts). */
export type Planner = (desired: DesiredState, live: LiveState, options?: PlanOptions) => Plan;

/** The plan of a desired state against a live state already read, with rollout control when given. */
export async function planLive(desired: DesiredState, live: LiveState, control?: RolloutControl, planner: Planner = computePlan): Promise<Plan> {
  if (!control) return planner(desired, live);
  const now = control.now();
  const triggeredSince = await observeTriggers(triggerTimesPath(control.journalPath), control.api ?? '', desired, live, now, control.log);
  const windows = control.config.windows ?? [];
  const options = { now, triggeredSince, allowBrokenDependencies: control.allowBrokenDependencies === true };
  const plan = planner(desired, live, { ...options, windows: control.ignoreWindows ? [] : windows });
  if (control.ignoreWindows && windows.length > 0) {
    const wouldHold = (computePlan(desired, live, { ...options, windows }).held ?? []).filter((h) => h.reason === 'window');
    const what = wouldHold.length > 0 ? `: writes to ${wouldHold.map((h) => `${h.tenant} ${h.kind} ${h.key}`).join(', ')} go ahead although ${wouldHold[0]!.message}` : '; none of them holds a write now';
    control.log.warn(`--ignore-windows: the ${windows.length} sync window(s) of the config are ignored${what}`);
  }
  if (control.allowBrokenDependencies) {
    for (const b of plan.broken_dependencies ?? []) {
      control.log.warn(`--allow-broken-dependencies: deactivating firmware ${b.key} in ${b.tenant} leaves firmware ${b.dependent} without ${b.component_name} >= ${b.min_version}`);
    }
  }
  return plan;
}

/** The rollout control of a command: the system clock, the journal's folder, its flags. */
export function rolloutControl(config: ResolvedConfig, log: Logger, flags: { journal?: string; allowBrokenDependencies?: boolean; ignoreWindows?: boolean }): RolloutControl {
  return {
    config, log, now: () => Date.now(), journalPath: journalPathFor(config, flags.journal), api: apiIdOf(config),
    allowBrokenDependencies: flags.allowBrokenDependencies === true, ignoreWindows: flags.ignoreWindows === true,
  };
}

/** Refuses a plan over the safety limits unless allowed, naming where each limit was set. */
export function enforceSafety(plan: Plan, config: ResolvedConfig, overrides: { maxChanges?: number; maxDeactivations?: number; allowLarge?: boolean }): void {
  if (overrides.allowLarge) return;
  const limits = {
    maxChanges: overrides.maxChanges ?? config.safety.maxChanges,
    maxDeactivations: overrides.maxDeactivations ?? config.safety.maxDeactivations,
  };
  if (checkSafety(plan, limits).length === 0) return;
  const source = (flag: string, setting: string, fromFlag: boolean): LimitSource => {
    if (fromFlag || !config.file) return { name: fromFlag ? flag : setting };
    const at = settingLocation(config.file, displayPath(config, relative(config.dir, config.file)), setting.split('.'), config.reading?.maxFileBytes ?? MAX_FILE_SIZE.default);
    return { name: setting, ...(at ? { at: `${at.file}:${at.line}` } : {}) };
  };
  const violations = checkSafety(plan, limits, {
    maxChanges: source('--max-changes', 'safety.max_changes', overrides.maxChanges !== undefined),
    maxDeactivations: source('--max-deactivations', 'safety.max_deactivations', overrides.maxDeactivations !== undefined),
  });
  throw new UnsafePlanError(`${violations.join('; ')}. Nothing was written.`);
}

/** The API a config writes to, as the client names it (normalized base URL); '' when it has none that parses. */
export function apiIdOf(config: ResolvedConfig): string {
  try {
    if (!config.baseUrl) return '';
    const base = parseBaseUrl(config.baseUrl, true);
    return `${base.origin}${base.prefix}`;
  } catch {
    return '';
  }
}

/**
 * Where the intent journal (and the apply lock and the history beside it) live: `--journal FILE`,
 * else `DUS_SYNC_STATE_DIR/journal.jsonl`, else a folder of the API it writes to under
 * `$XDG_STATE_HOME/dus-sync/` (`~/.local/state/dus-sync/`). Not in the repository: a checkout
 * swapped by git-sync took the journal of the old revision with it (an append in doubt was then
 * sent again), and a lock or journal committed to git wedged every run in CI. Named by the API
 * (its normalized base URL), not by the config's path: the lock and the journal guard writes to
 * a service, and every checkout, link or spelling of a path that writes to one service must meet
 * the same lock and journal (a folder per config path let `-c link/dus-sync.yaml` and `cd link`
 * hold two locks and append twice).
 */
export function journalPathFor(config: ResolvedConfig, flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return resolve(flag);
  const stateDir = env.DUS_SYNC_STATE_DIR?.trim();
  if (stateDir) return join(resolve(stateDir), 'journal.jsonl');
  const home = env.XDG_STATE_HOME?.trim() || join(homedir(), '.local', 'state');
  let api: string | undefined;
  let host = '';
  try {
    if (config.baseUrl) {
      const base = parseBaseUrl(config.baseUrl, true);
      api = `${base.origin}${base.prefix}`;
      host = base.host;
    }
  } catch {
    api = undefined; // connect() says what is wrong with it
  }
  const anchor = api ?? config.file ?? config.dir;
  const name = (api ? host : basename(config.file ? dirname(config.file) : config.dir)).replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 40) || 'root';
  const id = createHash('sha256').update(anchor).digest('hex').slice(0, 12);
  return join(resolve(home), 'dus-sync', `${name}-${id}`, 'journal.jsonl');
}

export interface ApplyOptions {
  readonly journalPath: string;
  readonly log: Logger;
  readonly clock: Clock;
  readonly concurrency: number;
  readonly failFast?: boolean;
  readonly signal?: AbortSignal;
  /** How long reads must show an unknown append absent before it may be sent again (default 30 s). */
  readonly settleMs?: number;
  readonly onResult?: (r: ChangeResult, done: number, total: number) => void;
  /** Asked before each write; a reason holds it back (see ExecutorDeps.beforeWrite). */
  readonly beforeWrite?: (change: Change) => string | undefined;
  /**
   * Given what the verification read, after it was checked (watch puts it into its view of the
   * live state): the touched tenants only; complete when it holds every record of each touched
   * version and every action of each touched tenant (put in as it is), else only the touched
   * objects as a full read of them gives them (to be merged).
   */
  readonly onVerified?: (after: LiveState, complete: boolean) => void;
}

/** What a locked run holds: the journal, the lock (checked before every write), and what the journal settled. */
export interface Locked {
  readonly journal: Journal;
  readonly lock: ApplyLock;
  readonly settled: Settled;
}

/**
 * Takes the lock, settles what earlier runs left open in the journal, then runs `body`: the
 * plan that gets executed must be made inside it, from a read taken after the lock.
 */
export async function withApplyLock<T>(
  opts: Pick<ApplyOptions, 'journalPath' | 'log' | 'clock' | 'settleMs' | 'signal'> & {
    readonly tenants: readonly string[];
    /** The desired state's git revision: stamped on each intent the journal records. */
    readonly revision?: Revision;
    /** Told when the lock is taken and when it is let go (the lock-held gauge of watch). */
    readonly onLockHeld?: (held: boolean) => void;
  },
  client: ApiClient,
  body: (locked: Locked) => Promise<T>,
): Promise<T> {
  const lock = await acquireLock(dirname(opts.journalPath), { log: opts.log });
  opts.onLockHeld?.(true);
  let journal: Journal | undefined;
  try {
    const others = await otherJournalsInDoubt(opts.journalPath);
    if (others.length > 0) {
      const list = others.map((o) => `${o.path} (${o.open < 0 ? 'unreadable' : `${o.open} append(s) in doubt`})`).join(', ');
      throw new UserError(`the state folder ${dirname(opts.journalPath)} also holds ${list}: one folder has one lock, so it must have one journal; run with --journal ${others[0]!.path} to settle it first, or give this journal a folder of its own`);
    }
    journal = await Journal.open(opts.journalPath, client.api);
    journal.revision = opts.revision;
    const settled = await settleJournal(journal, client, opts.log, {
      tenants: new Set(opts.tenants), clock: opts.clock, settleMs: opts.settleMs ?? DEFAULT_SETTLE_MS, signal: opts.signal,
    });
    if (settled.resolved > 0) {
      opts.log.info(`settled ${settled.resolved} phase append(s) left in doubt by an earlier run: ${settled.applied} had been applied, ${settled.notApplied} had not`);
    }
    for (const why of settled.blocked.values()) opts.log.warn(`journal: ${why}`);
    const result = await body({ journal, lock, settled });
    // Rewritten only by the holder: a process that lost the lock would pull the journal from
    // under the one that holds it now.
    await lock.assertHeld().then(() => journal!.compact(), (err: unknown) => {
      opts.log.error(`${err instanceof Error ? err.message : String(err)}; the journal is left as it is`);
    });
    return result;
  } finally {
    await journal?.close();
    await lock.release();
    opts.onLockHeld?.(false);
  }
}

/** Executes a plan made (inside the lock) from `live`, then reads the touched objects again to verify. */
export async function execute(plan: Plan, live: LiveState, client: ApiClient, locked: Locked, opts: ApplyOptions): Promise<ApplyReport> {
  const report = await executePlan(plan, {
    client,
    journal: locked.journal,
    live,
    log: opts.log,
    clock: opts.clock,
    concurrency: opts.concurrency,
    failFast: opts.failFast,
    signal: opts.signal,
    assertLockHeld: () => locked.lock.assertHeld(),
    beforeWrite: opts.beforeWrite,
    blocked: locked.settled.blocked,
    settleMs: opts.settleMs ?? DEFAULT_SETTLE_MS,
    onResult: opts.onResult,
  });
  if (report.applied === 0 && report.diverged.length === 0) return report;
  return verify(plan, report, live, client, locked.journal, opts);
}

/**
 * After applying: read the touched objects again; a written firmware must hold its values, an
 * action must still be the YAML's first phases. Acknowledged appends the reads now show are
 * settled in the journal. The touched records are read one by one through their bundles (a
 * handful of requests, not the whole bundle list), unless there are too many or a targeted read
 * cannot tell (then the touched objects are read the full way).
 */
async function verify(plan: Plan, report: ApplyReport, live: LiveState, client: ApiClient, journal: Journal, opts: ApplyOptions): Promise<ApplyReport> {
  let after: LiveState;
  let complete = false;
  try {
    const targets = refreshTargetsOf(plan.changes);
    const targeted = await refreshLive(client, liveFor(live, targets), targets, { concurrency: opts.concurrency });
    if ('fallback' in targeted) opts.log.debug(`verifying with a full read: ${targeted.fallback}`);
    complete = 'live' in targeted;
    after = 'live' in targeted ? targeted.live : await fetchLive(client, touchedObjects(plan.changes), { concurrency: opts.concurrency });
  } catch (err) {
    opts.log.warn(`could not read the changed objects again to verify them: ${err instanceof Error ? err.message : String(err)}`);
    return report;
  }
  const confirmed = new Set<string>();
  for (const c of plan.changes) {
    if (c.kind !== 'phase' || confirmed.has(`${c.tenant}\0${c.action_id}`)) continue;
    confirmed.add(`${c.tenant}\0${c.action_id}`);
    const action = after.tenants.get(c.tenant)?.actions.get(c.action_id);
    if (action) await journal.confirm(c.tenant, action);
  }
  const v = verifyApplied(plan, report, live, after);
  // After the check: the receiver may put `after` into `live` itself (watch's view).
  opts.onVerified?.(after, complete);
  return { ...report, unconverged: [...report.unconverged, ...v.unconverged], diverged: [...report.diverged, ...v.diverged], verified: v.verified };
}

/**
 * The part of `live` a targeted read of `targets` (refreshLive) looks at: of each targeted
 * tenant, the records of the targeted versions, and the actions. refreshLive reads nothing else
 * of its base, so its answer is the same, but holds only these (it copied each targeted
 * tenant's map of every version: 200,000 entries, three times a watch pass).
 */
export function liveFor(live: LiveState, targets: RefreshTargets): LiveState {
  const tenants = new Map<string, LiveTenant>();
  const tenant = (name: string): LiveTenant | undefined => {
    let t = tenants.get(name);
    const held = live.tenants.get(name);
    if (t === undefined && held !== undefined) tenants.set(name, t = { firmwares: new Map(), actions: held.actions, ...(held.actionErrors ? { actionErrors: held.actionErrors } : {}) });
    return t;
  };
  for (const f of targets.firmwares) {
    const records = live.tenants.get(f.tenant)?.firmwares.get(f.version);
    const t = tenant(f.tenant);
    if (t !== undefined && records !== undefined) (t.firmwares as Map<string, readonly LiveFirmware[]>).set(f.version, records);
  }
  for (const a of targets.actions) tenant(a.tenant);
  return { tenants };
}

/**
 * Puts a complete targeted read of part of `live` (refreshLive on liveFor(live, …): each of its
 * versions with every record, each of its tenants with all of its actions) into `live` itself,
 * in place: for watch's view, which nothing else holds, instead of a copy of every version's entry.
 */
export function putLive(live: LiveState, part: LiveState): void {
  const tenants = live.tenants as Map<string, LiveTenant>;
  for (const [name, t] of part.tenants) {
    const held = tenants.get(name);
    if (held === undefined) { tenants.set(name, t); continue; }
    const firmwares = held.firmwares as Map<string, readonly LiveFirmware[]>;
    for (const [v, list] of t.firmwares) firmwares.set(v, list);
    tenants.set(name, { firmwares, actions: t.actions, ...(t.actionErrors ? { actionErrors: t.actionErrors } : {}) });
  }
}

/** The records and actions a set of changes writes, as targets of a targeted read. */
export function refreshTargetsOf(changes: readonly Change[], extra: RefreshTargets = { firmwares: [], actions: [] }): RefreshTargets {
  const firmwares = new Map<string, RefreshTargets['firmwares'][number]>();
  const actions = new Map<string, RefreshTargets['actions'][number]>();
  for (const f of extra.firmwares) firmwares.set(`${f.tenant}\0${f.version}`, f);
  for (const a of extra.actions) actions.set(`${a.tenant}\0${a.id}`, a);
  for (const c of changes) {
    if (c.kind === 'firmware') {
      if (!firmwares.has(`${c.tenant}\0${c.key}`)) firmwares.set(`${c.tenant}\0${c.key}`, { tenant: c.tenant, version: c.key });
    } else actions.set(`${c.tenant}\0${c.action_id}`, { tenant: c.tenant, id: c.action_id });
  }
  return { firmwares: [...firmwares.values()], actions: [...actions.values()] };
}

/**
 * The sync windows checked again before each write, at the time of the write: a plan made
 * before a deny window opened (or an allow window closed) must not go on writing into it.
 * Nothing with --ignore-windows or without windows.
 */
export function windowGuard(config: ResolvedConfig, ignoreWindows: boolean | undefined, now: () => number): ((change: Change) => string | undefined) | undefined {
  const windows = config.windows ?? [];
  if (ignoreWindows === true || windows.length === 0) return undefined;
  // Asked once a second at most per tenant and kind: thousands of writes must not each walk the schedules.
  const recent = new Map<string, { at: number; why: string | undefined }>();
  return (c) => {
    const kind = c.kind === 'firmware' ? 'firmware' : 'action';
    const t = now();
    const key = `${c.tenant}\0${kind}`;
    const seen = recent.get(key);
    if (seen !== undefined && t >= seen.at && t - seen.at < 1000) return seen.why;
    const hold = windowHold(windows, c.tenant, kind, t);
    const why = hold ? `${hold.message}: the windows changed during the run, so it was not written; it is written when they allow` : undefined;
    recent.set(key, { at: t, why });
    return why;
  };
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: monotonicMs,
  sleep: (ms, signal) => new Promise<void>((resolvePromise, reject) => {
    if (signal?.aborted) { reject(signal.reason as Error); return; }
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolvePromise(); }, ms);
    const onAbort = () => { clearTimeout(timer); reject(signal?.reason as Error); };
    signal?.addEventListener('abort', onAbort, { once: true });
  }),
};

