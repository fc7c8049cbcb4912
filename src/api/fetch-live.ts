// The live state the desired state needs, read in one pass per tenant: the bundle pages
// (only for tenants that declare firmwares) and only the actions that are declared.
import { setMaxListeners } from 'node:events';
import { entriesText } from '../core/canonical.js';
import { compareVersions } from '../core/version-order.js';
import { collectRecord, markSearched, stringsMayHoldKey } from '../live-keys.js';
import { FirmwareIndex } from '../live-firmwares.js';
import { intern, internDependencies, NO_DEPENDENCIES, UNKNOWN_DEPENDENCIES } from '../intern.js';
import type { Action, DesiredState, FirmwareBundle, LiveFirmware, LiveState, LiveTenant } from '../model/index.js';
import { ApiError } from '../errors.js';
import type { ApiClient } from './client.js';
import { ACTIONS_BUDGET_FACTOR, BUNDLES_KEPT_PER_RECORD, formatDuration, formatSize, RECORD_OVERHEAD, RECORDS_BUDGET_FACTOR } from './limits.js';
import type { TenantClient } from './types.js';
import { prefetchBundles, type BundlePrefetch, type IndexAhead } from './prefetch.js';
import { lowerBound } from '../sorted.js';

export interface FetchLiveOptions {
  /** Action reads in flight per tenant (the client's limiter bounds them further). */
  readonly concurrency?: number;
  readonly signal?: AbortSignal;
  /** Bundle lists already being read and indexed (plan reads them while the desired state loads). */
  readonly ahead?: IndexAhead;
  /** The records budget of the read, when the read-ahead already spends from it. */
  readonly recordsBudget?: RecordsBudget;
}

interface Wanted {
  /** The declared version numbers; empty: the bundle list is not read at all. */
  versions: Set<string>;
  /** The declared bundle_version values: kept on every record that is in them. */
  bundles: Set<string>;
  actionIds: Set<number>;
  /**
   * Declared deactivations: each is checked against the dependencies of the tenant's active
   * firmware (docs/rollout-control.md), so the dependents and the highest versions of each
   * component are kept too (IndexOptions.satisfiers), not the whole tenant.
   */
  deactivations: number;
}

export async function fetchLive(client: ApiClient, desired: DesiredState, opts: FetchLiveOptions = {}): Promise<LiveState> {
  const wanted = wantedByTenant(desired);
  const names = [...wanted.keys()].sort();
  // Resolve every tenant first: a missing key is a user error before any request is sent.
  const clients = names.map((name) => client.tenant(name));
  // One deadline for the whole read: each answer has its own, but pages sent each just in time
  // could otherwise hold the run (and the apply lock) for days.
  const { fetchTimeoutMs, maxResponseBytes } = client.limits;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new ApiError(
    `reading the live state of ${names.join(', ')} took longer than ${formatDuration(fetchTimeoutMs)}; raise --fetch-timeout (or api.fetch_timeout) if the API is this slow`,
    { retryable: true },
  )), fetchTimeoutMs);
  timer.unref();
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal;
  // Every read of the fetch listens on it (up to --max-concurrency at once, 64 by default): by
  // design, so Node's leak warning ("11 abort listeners") would only be noise on standard error.
  setMaxListeners(0, signal);
  const budget = { actionBytes: ACTIONS_BUDGET_FACTOR * maxResponseBytes, records: opts.recordsBudget ?? recordsBudget(maxResponseBytes) };
  // The indexes read ahead get their filter now; a list read ahead for a tenant that declares no firmware is stopped.
  const early = new Map<string, Promise<ReadonlyMap<string, readonly LiveFirmware[]>>>();
  for (const name of names) {
    const w = wanted.get(name)!;
    if (w.versions.size === 0) { opts.ahead?.drop(name); continue; }
    const index = opts.ahead?.take(name, filterOf(w), signal);
    if (index !== undefined) early.set(name, index);
  }
  // The other lists still read their next page while the index takes one.
  const own = prefetchBundles(client, names.filter((n) => wanted.get(n)!.versions.size > 0 && !early.has(n)), { maxHeld: 1 });
  try {
    const settled = await Promise.allSettled(clients.map((c) => fetchTenant(c, wanted.get(c.tenant)!, {
      ...opts, signal, prefetched: own, early: early.get(c.tenant), earlyActions: opts.ahead?.takeActions(c.tenant, signal),
    }, budget)));
    // When several tenants fail, the first one by name is said, whichever failed first: the same
    // error for the same answers, however the timing goes.
    const tenants = settled.map((r) => {
      if (r.status === 'rejected') throw r.reason;
      return r.value;
    });
    return { tenants: new Map(names.map((name, i) => [name, tenants[i]!])) };
  } finally {
    clearTimeout(timer);
    await own.stop();
  }
}

/** What the index keeps for a tenant's declared firmware. */
function filterOf(w: Wanted): IndexFilter {
  return { versions: w.versions, bundles: w.bundles, ...(w.deactivations > 0 ? { satisfiers: w.deactivations + 1 } : {}) };
}

function wantedByTenant(desired: DesiredState): Map<string, Wanted> {
  const out = new Map<string, Wanted>();
  const get = (t: string): Wanted => {
    let w = out.get(t);
    if (!w) {
      w = { versions: new Set(), bundles: new Set(), actionIds: new Set(), deactivations: 0 };
      out.set(t, w);
    }
    return w;
  };
  for (const f of desired.firmwares) {
    const w = get(f.tenant);
    w.versions.add(f.spec.version_number);
    if (f.spec.bundle_version !== undefined) w.bundles.add(f.spec.bundle_version);
    if (f.spec.is_deactivated === true) w.deactivations += 1;
  }
  for (const a of desired.actions) get(a.tenant).actionIds.add(a.id);
  return out;
}

interface Budget {
  /** Bytes of actions the tenant may still keep (each is held whole in memory). */
  actionBytes: number;
  /** Firmware records all tenants of the fetch may still keep. */
  readonly records?: RecordsBudget;
}

interface TenantRead extends FetchLiveOptions {
  /** The tenant's pages, read one ahead of the index. */
  readonly prefetched?: BundlePrefetch;
  /** The tenant's index, read ahead. */
  readonly early?: Promise<ReadonlyMap<string, readonly LiveFirmware[]>>;
  /** The tenant's declared actions already being read, and the budget they spend from. */
  readonly earlyActions?: EarlyActions;
}

/** Action reads started while the desired state loaded (plan's read-ahead): by id, and what their answers spent. */
export interface EarlyActions {
  readonly reads: ReadonlyMap<number, Promise<Action | null>>;
  readonly budget: ActionsBudget;
}

/** Bytes of actions a tenant may still keep, of `limit` (ACTIONS_BUDGET_FACTOR × --max-response-size). */
export interface ActionsBudget {
  actionBytes: number;
  readonly limit?: number;
}

async function fetchTenant(client: TenantClient, wanted: Wanted, opts: TenantRead, budget: Budget): Promise<LiveTenant> {
  // The list and the actions are read at once; when both fail, the list's failure is the one
  // said (it would come first read one after the other), whichever came first: plan reads the
  // actions as it loads the files, and which of two failures won a race is no way to report.
  // A failed list stops the actions (nothing they say would be used).
  const stopActions = new AbortController();
  const actionsSignal = opts.signal ? AbortSignal.any([opts.signal, stopActions.signal]) : stopActions.signal;
  setMaxListeners(0, actionsSignal);
  const list = wanted.versions.size === 0 ? Promise.resolve(new FirmwareIndex())
    : opts.early ?? indexFirmwares(opts.prefetched?.take(client.tenant, opts.signal) ?? client.bundlePages(opts.signal), {
      ...filterOf(wanted), tenant: client.tenant,
      ...(budget.records ? { budget: budget.records } : {}),
    });
  list.catch(() => { stopActions.abort(new Error('the bundle list failed')); });
  const read = readActions(client, [...wanted.actionIds].sort((a, b) => a - b), { ...opts, signal: actionsSignal }, opts.earlyActions?.budget ?? { actionBytes: budget.actionBytes }, opts.earlyActions?.reads);
  const [firmwares, actions] = await Promise.allSettled([list, read]);
  if (firmwares.status === 'rejected') throw firmwares.reason;
  if (actions.status === 'rejected') throw actions.reason;
  const { actions: byId, errors } = actions.value;
  return { firmwares: firmwares.value, actions: byId, ...(errors.size > 0 ? { actionErrors: errors } : {}) };
}

/**
 * A record while the index is built: two fields made with it (a wrapper of five was 64 bytes a
 * record, held while the load and the reads overlap); `top` and `declared` are added to the few
 * that need them.
 */
interface Accumulated {
  /**
   * The record as it is returned. Until the end its `bundles` holds the first
   * BUNDLES_KEPT_PER_RECORD bundle versions in sorted order (declared ones are merged in at the
   * end); a record in one bundle (nearly all) shares that bundle's frozen list (`alone`) until a
   * second bundle comes: a list each was 11 MB at 200,000 records.
   */
  readonly record: { -readonly [K in keyof LiveFirmware]: LiveFirmware[K] } & { bundles: string[] };
  /** Made as the how-manieth record of the list: the order of the numbers, should records be dropped later. */
  readonly seq: number;
  /** Kept only as one of its component's highest versions: dropped when higher ones come. */
  top?: boolean;
  /** Declared bundle versions the record is in (the guard of plan asks for them by name); made when first needed. */
  declared?: Set<string>;
}

/** Records kept per version number: more than one is an ambiguity the planner reports, and a server must not make it unbounded. */
export const MAX_RECORDS_PER_VERSION = 64;

export interface IndexOptions {
  /** Keep only the records of these version numbers (the declared firmwares); all when absent (export). */
  readonly versions?: ReadonlySet<string>;
  /** Bundle versions kept on a record whenever it is in them, beyond the first few: the declared bundle_version values. */
  readonly bundles?: ReadonlySet<string>;
  /** What may be kept, shared by the tenants of one fetch; none: no bound (tests of small inputs). */
  readonly budget?: RecordsBudget;
  /** Named in the message when the budget runs out. */
  readonly tenant?: string;
  /**
   * With `versions`: also keep what the dependency check of a declared deactivation needs,
   * without keeping the whole tenant: every active record that has dependencies, and per
   * component the `satisfiers` highest active versions (the deactivations of the tenant plus
   * one: if those are deactivated, the next one still satisfies, or none does).
   */
  readonly satisfiers?: number;
  /**
   * The filter (versions, bundles, satisfiers) when it is not known yet: plan reads the list
   * while the desired state loads. Until it comes, every record is kept with all its bundle
   * versions, at most `heldEarly` characters of them (then the list waits for the filter);
   * when it comes, what it would not have kept is dropped, as if it had been known from the
   * start (property-tested), and the rest of the list is read with it.
   */
  readonly later?: Promise<IndexFilter>;
  /** With `later`: the characters (as the budget counts them) kept before the filter comes, at most. */
  readonly heldEarly?: number;
}

/** What a declared desired state asks the index to keep (IndexOptions). */
export interface IndexFilter {
  readonly versions?: ReadonlySet<string>;
  readonly bundles?: ReadonlySet<string>;
  readonly satisfiers?: number;
}

/** Characters of records and bundle versions that may still be kept, of `limit`. */
export interface RecordsBudget {
  left: number;
  readonly limit: number;
}

export function recordsBudget(maxResponseBytes: number): RecordsBudget {
  const limit = RECORDS_BUDGET_FACTOR * maxResponseBytes;
  return { left: limit, limit };
}

/** About what a kept record costs in memory: its strings, and the objects that hold them. */
function recordSize(r: Omit<LiveFirmware, 'bundles'>): number {
  let n = RECORD_OVERHEAD + r.version_number.length + r.component_name.length + (r.firmware_id?.length ?? 0);
  for (const d of r.dependencies) n += 32 + d.component_name.length + d.min_version.length;
  return n;
}

/** Inserts `version` into the sorted, bounded list; the characters it added (less any it pushed out). */
function keepFirst(list: string[], version: string, cap = BUNDLES_KEPT_PER_RECORD): number {
  const lo = lowerBound(list, version);
  if (list[lo] === version || lo >= cap) return 0;
  list.splice(lo, 0, version);
  const dropped = list.length > cap ? list.pop()!.length : 0;
  return version.length - dropped;
}

/** Several records under one version number (rare): looked up by firmware_id, then by component. */
interface Slot {
  readonly list: Accumulated[];
  readonly byId: Map<string, Accumulated>;
  readonly byComponent: Map<string, Accumulated>;
}

function slotOf(acc: Accumulated): Slot {
  const slot: Slot = { list: [acc], byId: new Map(), byComponent: new Map([[acc.record.component_name, acc]]) };
  if (acc.record.firmware_id != null) slot.byId.set(acc.record.firmware_id, acc);
  return slot;
}

type Listed = FirmwareBundle['firmwares'][number];

/**
 * Whether a listing is the record `r` again (the same firmware listed in another bundle): the
 * same component and fields, and the same firmware_id when both have one. Records that differ
 * (one firmware_id listed with two sizes is two records to dus-sync too) stay apart, and plan reports the number as ambiguous: the PUT addresses firmware by
 * version number only, and one record's fields written back over the other's would change what
 * the YAML does not manage (a breaker found twins merged, and the second one's size rewritten).
 */
function sameFirmware(r: Accumulated['record'], fw: Listed): boolean {
  if (r.component_name !== fw.component_name) return false;
  if (r.firmware_id != null && fw.firmware_id != null && r.firmware_id !== fw.firmware_id) return false;
  return r.is_deactivated === (fw.is_deactivated ?? null) && r.uncompressed_size === (fw.uncompressed_size ?? null)
    && sameDependencyLists(r.dependencies, fw.dependencies ?? []);
}

/** The same dependencies, in any order, every field of each compared, nested ones included. */
function sameDependencyLists(a: readonly object[], b: readonly object[]): boolean {
  return a === b || (a.length === b.length && (a.length === 0 || entriesText(a) === entriesText(b)));
}

function byComponentName(a: LiveFirmware, b: LiveFirmware): number {
  return a.component_name < b.component_name ? -1 : a.component_name > b.component_name ? 1 : 0;
}

/**
 * version_number → records. The same firmware in several bundles (same firmware_id, or the
 * same number for the same component) is one record; several components under one number
 * stay several records (at most MAX_RECORDS_PER_VERSION), and the planner reports the
 * ambiguity. One pass, constant work per record: a page of 100,000 records under one number
 * took minutes with a linear search per record. Records of other numbers are dropped as each
 * page is read, and a record keeps only its first bundle versions (and the declared ones), so
 * what is kept grows with the desired state, not with the server's answers; the budget bounds
 * the rest (export, which keeps every record, and a server that answers with many ambiguous ones).
 *
 * A number with one record (nearly all of them) holds it directly: two Maps per number were
 * most of the garbage of plan at 200,000 records. The record is built once, as it is returned
 * (no copy at the end), and the map is in the order the list gave the numbers: the callers look
 * numbers up, and export sorts them itself.
 */
export async function indexFirmwares(pages: AsyncIterable<readonly FirmwareBundle[]>, opts: IndexOptions = {}): Promise<FirmwareIndex> {
  const byNumber = new Map<string, Accumulated | Slot>();
  const budget = opts.budget;
  // Until a `later` filter comes (early), everything is kept: no versions, no declared bundles, no satisfiers.
  let early = opts.later !== undefined;
  let versions = early ? undefined : opts.versions;
  const bundlesOf = (f: IndexFilter): ReadonlySet<string> | undefined => (f.bundles !== undefined && f.bundles.size > 0 ? f.bundles : undefined);
  let declaredBundles = early ? undefined : bundlesOf(opts);
  let came: { filter: IndexFilter } | undefined;
  const later = opts.later?.then((filter) => { came = { filter }; });
  // Awaited where it is needed; a load that fails after the list stopped must not be an unhandled rejection.
  later?.catch(() => undefined);
  let heldEarly = 0;
  let pageCount = 0;
  let made = 0;
  const spend = (n: number): void => {
    if (early) heldEarly += n;
    if (budget === undefined) return;
    budget.left -= n;
    if (budget.left < 0) {
      const whose = opts.tenant === undefined ? '' : ` of tenant ${opts.tenant}`;
      throw new ApiError(`the firmware records${whose} read from the bundle list (GET /api/v1/firmware-bundles) passed ${formatSize(budget.limit)} in memory (${RECORDS_BUDGET_FACTOR} × --max-response-size) after ${pageCount} page${pageCount === 1 ? '' : 's'}, so reading stopped: if the tenant is that large, raise --max-response-size (api.max_response_size); otherwise check the API (its next links may never end)`, { retryable: false });
    }
  };
  const addBundle = (acc: Accumulated, version: string): void => {
    if (declaredBundles?.has(version) === true) {
      acc.declared ??= new Set();
      if (!acc.declared.has(version)) {
        acc.declared.add(version);
        spend(version.length);
      }
      return;
    }
    // Early, every bundle version is kept: which are declared, and so which are the first few, is not known yet.
    const first = acc.record.bundles;
    if (Object.isFrozen(first)) {
      if (first[0] === version) return;
      acc.record.bundles = first.slice();
    }
    spend(keepFirst(acc.record.bundles, version, early ? Infinity : BUNDLES_KEPT_PER_RECORD));
  };
  /** The frozen list of one bundle, shared by the records in it alone (see Accumulated.record). */
  const aloneLists = new Map<string, string[]>();
  const alone = (bundle: string): string[] => {
    let list = aloneLists.get(bundle);
    if (list === undefined) aloneLists.set(bundle, (list = Object.freeze([bundle]) as string[]));
    return list;
  };
  // component → its highest active versions kept for the dependency check, highest first.
  const tops = new Map<string, string[]>();
  let N = early ? 0 : opts.satisfiers ?? 0;
  // All a record holds, its declared bundles included: a record evicted after the filter moved a
  // bundle of it to `declared` gave back all of it (the property test found 4 bytes kept).
  const sizeOf = (a: Accumulated): number => recordSize(a.record) + a.record.bundles.reduce((n, v) => n + v.length, 0)
    + (a.declared === undefined ? 0 : [...a.declared].reduce((n, v) => n + v.length, 0));
  // Told of each record evicted (settle counts the records each number holds).
  let evicted: ((version: string) => void) | undefined;
  const evict = (component: string, version: string): void => {
    const held = byNumber.get(version);
    if (held === undefined) return;
    if ('record' in held) {
      if (held.top === true && held.record.component_name === component) {
        byNumber.delete(version);
        spend(-sizeOf(held));
        evicted?.(version);
      }
      return;
    }
    // Every record of that component under that number (twins, rare, are all of them).
    for (let i = held.list.findIndex((a) => a.top === true && a.record.component_name === component); i !== -1;
      i = held.list.findIndex((a) => a.top === true && a.record.component_name === component)) {
      const [gone] = held.list.splice(i, 1);
      spend(-sizeOf(gone!));
      if (gone!.record.firmware_id != null && held.byId.get(gone!.record.firmware_id) === gone) held.byId.delete(gone!.record.firmware_id);
      if (held.byComponent.get(component) === gone) held.byComponent.delete(component);
      if (held.list.length === 0) byNumber.delete(version);
      evicted?.(version);
    }
    if (!held.byComponent.has(component)) {
      const next = held.list.find((a) => a.record.component_name === component);
      if (next !== undefined) held.byComponent.set(component, next);
    }
  };
  /** Whether a record of a version not declared is kept for the dependency check, making room for it. */
  const keepForDependencies = (fw: { readonly version_number: string; readonly component_name: string; readonly is_deactivated?: boolean | null; readonly dependencies?: readonly unknown[] | null }): 'dependent' | 'top' | undefined => {
    if (N === 0 || fw.is_deactivated === true) return undefined;
    if ((fw.dependencies ?? []).length > 0) return 'dependent';
    const top = tops.get(fw.component_name) ?? [];
    if (top.includes(fw.version_number)) return 'top';
    let at = top.findIndex((v) => compareVersions(fw.version_number, v) > 0);
    if (at === -1) at = top.length;
    if (at >= N) return undefined;
    top.splice(at, 0, fw.version_number);
    tops.set(fw.component_name, top);
    if (top.length > N) evict(fw.component_name, top.pop()!);
    return 'top';
  };
  /** A record and its first bundle (as addBundle would put it in), the list made at its size: a list grown from empty has room for 16 more. */
  const create = (fw: FirmwareBundle['firmwares'][number], bundle: string, why?: 'dependent' | 'top'): Accumulated => {
    const declared = declaredBundles?.has(bundle) === true;
    const acc: Accumulated = {
      record: {
        version_number: fw.version_number,
        component_name: intern(fw.component_name),
        firmware_id: fw.firmware_id ?? null,
        is_deactivated: fw.is_deactivated ?? null,
        uncompressed_size: fw.uncompressed_size ?? null,
        dependencies: fw.dependencies == null ? UNKNOWN_DEPENDENCIES : fw.dependencies.length === 0 ? NO_DEPENDENCIES : internDependencies(fw.dependencies),
        bundles: declared ? [] : alone(bundle),
      },
      seq: made++,
    };
    if (why === 'top') acc.top = true;
    if (declared) acc.declared = new Set([bundle]);
    spend(recordSize(acc.record) + bundle.length);
    return acc;
  };
  // The records of each page are searched for API keys while they are at hand (keysInLive then
  // skips them): the strings each page adds to a kept record, searched as one text at the end of
  // the page; a hit makes every record the page touched be searched on its own later.
  const pageStrings = new Set<string>();
  let pagePlain = true;
  const touched: Accumulated[] = [];
  const suspects = new Set<Accumulated>();
  const touch = (acc: Accumulated, bundle?: string): void => {
    touched.push(acc);
    if (bundle !== undefined) pageStrings.add(bundle);
  };
  const created = (acc: Accumulated, bundle: string): void => {
    touched.push(acc);
    if (pagePlain) pagePlain = collectRecord(acc.record, pageStrings);
    pageStrings.add(bundle);
  };
  /**
   * The filter came: what it would not have kept is dropped, in the order the records were read
   * (the order the dependency check's highest versions were chosen and evicted in, as the list
   * went), the numbers end in the order the list would have left them, and each record keeps its
   * declared bundles and its first few others, as addBundle keeps them. One difference, for a
   * number listed under more than MAX_RECORDS_PER_VERSION components: early, the first that many
   * of all of them were kept, not of those the filter keeps.
   */
  const settle = (filter: IndexFilter): void => {
    early = false;
    versions = filter.versions;
    declaredBundles = bundlesOf(filter);
    N = filter.satisfiers ?? 0;
    const trim = (acc: Accumulated): void => {
      const all = acc.record.bundles;
      // Nothing to move or drop (nearly every record): the list, shared or not, stays.
      if (all.length <= BUNDLES_KEPT_PER_RECORD && (declaredBundles === undefined || !all.some((v) => declaredBundles!.has(v)))) return;
      const kept: string[] = [];
      acc.record.bundles = kept;
      for (const v of all) {
        if (declaredBundles?.has(v) === true) (acc.declared ??= new Set()).add(v);
        else if (kept.length < BUNDLES_KEPT_PER_RECORD) kept.push(v);
        else spend(-v.length);
      }
    };
    const drop = (number: string, acc: Accumulated): void => {
      const held = byNumber.get(number);
      if (held === undefined) return;
      spend(-sizeOf(acc));
      if ('record' in held) {
        if (held === acc) byNumber.delete(number);
        return;
      }
      const i = held.list.indexOf(acc);
      if (i === -1) return;
      held.list.splice(i, 1);
      const r = acc.record;
      if (r.firmware_id != null && held.byId.get(r.firmware_id) === acc) {
        // The list would have pointed at the last record of that id it made: the last one left.
        const last = held.list.findLast((a) => a.record.firmware_id === r.firmware_id);
        if (last === undefined) held.byId.delete(r.firmware_id);
        else held.byId.set(r.firmware_id, last);
      }
      if (held.byComponent.get(r.component_name) === acc) {
        held.byComponent.delete(r.component_name);
        const next = held.list.find((a) => a.record.component_name === r.component_name);
        if (next !== undefined) held.byComponent.set(r.component_name, next);
      }
      if (held.list.length === 0) byNumber.delete(number);
    };
    // The records in the order they were read, each decided as the list would have decided it
    // then: the highest versions of a component are chosen, and evicted, in that order. (A
    // record's number is its version_number. Nothing here is made per record: at 200,000 records
    // an object per record and two Maps by number were some 40 MB more at plan's peak.)
    const all: Accumulated[] = [];
    for (const held of byNumber.values()) {
      if ('record' in held) all.push(held);
      else for (const acc of held.list) all.push(acc);
    }
    let sorted = true;
    for (let i = 1; i < all.length && sorted; i++) sorted = all[i - 1]!.seq < all[i]!.seq;
    if (!sorted) all.sort((a, b) => a.seq - b.seq);
    // A number comes where the list would have put it: at the record that made it held again
    // after it last held none (the record that first put it there may have been evicted since).
    // A number of one record is held from that record on; only numbers of several are counted.
    const holds = new Map<string, number>();
    const since = new Map<string, number>();
    evicted = (version) => { const n = holds.get(version); if (n !== undefined) holds.set(version, n - 1); };
    for (const acc of all) {
      const number = acc.record.version_number;
      trim(acc);
      if (versions !== undefined && !versions.has(number)) {
        // (evict drops only records marked top, which are records this loop passed already.)
        const why = keepForDependencies(acc.record);
        if (why === undefined) { drop(number, acc); continue; }
        if (why === 'top') acc.top = true;
      }
      const held = byNumber.get(number);
      if (held === undefined || 'record' in held) continue;
      const n = holds.get(number) ?? 0;
      if (n === 0) since.set(number, acc.seq);
      holds.set(number, n + 1);
    }
    evicted = undefined;
    const sinceOf = (number: string, held: Accumulated | Slot): number => ('record' in held ? held.seq : since.get(number)!);
    let inOrder = true;
    let last = -1;
    for (const [number, held] of byNumber) {
      const at = sinceOf(number, held);
      if (at < last) { inOrder = false; break; }
      last = at;
    }
    if (!inOrder) {
      const entries = [...byNumber].sort((a, b) => sinceOf(a[0], a[1]) - sinceOf(b[0], b[1]));
      byNumber.clear();
      for (const [number, held] of entries) byNumber.set(number, held);
    }
  };
  for await (const page of pages) {
    if (early && came !== undefined) settle(came.filter);
    pageCount++;
    for (const bundle of page) {
      for (const fw of bundle.firmwares) {
        let why: 'dependent' | 'top' | undefined;
        if (versions !== undefined && !versions.has(fw.version_number)) {
          why = keepForDependencies(fw);
          if (why === undefined) continue;
        }
        const held = byNumber.get(fw.version_number);
        if (held === undefined) {
          const acc = create(fw, bundle.version, why);
          created(acc, bundle.version);
          byNumber.set(fw.version_number, acc);
          continue;
        }
        if ('record' in held) {
          const r = held.record;
          if (sameFirmware(r, fw)) {
            addBundle(held, bundle.version);
            touch(held, bundle.version);
            continue;
          }
        }
        const slot = 'record' in held ? slotOf(held) : held;
        if (slot !== held) byNumber.set(fw.version_number, slot);
        const byId = fw.firmware_id != null ? slot.byId.get(fw.firmware_id) : undefined;
        let same = byId !== undefined && sameFirmware(byId.record, fw) ? byId : undefined;
        if (same === undefined) {
          const first = slot.byComponent.get(fw.component_name);
          // Twins of one component (rare): the one this listing is, if any.
          same = first === undefined ? undefined : sameFirmware(first.record, fw) ? first : slot.list.find((a) => sameFirmware(a.record, fw));
        }
        if (same) {
          addBundle(same, bundle.version);
          touch(same, bundle.version);
          continue;
        }
        if (slot.list.length >= MAX_RECORDS_PER_VERSION) continue;
        const acc = create(fw, bundle.version, why);
        created(acc, bundle.version);
        slot.list.push(acc);
        if (fw.firmware_id != null) slot.byId.set(fw.firmware_id, acc);
        if (!slot.byComponent.has(fw.component_name)) slot.byComponent.set(fw.component_name, acc);
      }
    }
    if (stringsMayHoldKey(pageStrings, pagePlain)) for (const acc of touched) suspects.add(acc);
    pageStrings.clear();
    pagePlain = true;
    touched.length = 0;
    // Held as much as may be held before the filter: the next page waits for it.
    if (early && came === undefined && heldEarly >= (opts.heldEarly ?? Infinity)) await later;
  }
  if (early) {
    await later;
    settle(came!.filter);
  }
  const out = new FirmwareIndex();
  // Most records are in one bundle: they share one frozen list per bundle (a bundle holds many
  // records; a list each was 10 MB at 200,000 records). No reader changes a record's list.
  const done = (acc: Accumulated): LiveFirmware => {
    // A list grown by splice has room for 16 more (V8's growth): kept as a copy of its length.
    const first = acc.record.bundles;
    if (acc.declared !== undefined) acc.record.bundles = [...new Set([...first, ...acc.declared])].sort();
    else if (first.length > 1) acc.record.bundles = first.slice();
    else if (first.length === 1) acc.record.bundles = alone(first[0]!);
    return acc.record;
  };
  for (const [number, held] of byNumber) {
    out.set(number, 'record' in held ? [done(held)] : held.list.map(done).sort(byComponentName));
  }
  // The whole index when no record may hold a key (one entry, not 200,000 in the WeakMap: 8 MB);
  // else each record found without one, so that only the suspects are searched again.
  if (suspects.size === 0) markSearched(out);
  else {
    for (const held of byNumber.values()) {
      if ('record' in held) { if (!suspects.has(held)) markSearched(held.record); } else for (const acc of held.list) if (!suspects.has(acc)) markSearched(acc.record);
    }
  }
  return out;
}

interface ReadActions {
  actions: Map<number, Action | null>;
  /** Answers that were not the object asked for: an error for that action, not for the run. */
  errors: Map<number, string>;
}

/** Bytes of an action as the actions budget counts them. */
export function actionBytes(action: Action): number {
  return JSON.stringify(action).length;
}

async function readActions(client: TenantClient, ids: readonly number[], opts: FetchLiveOptions, budget: ActionsBudget, early?: ReadonlyMap<number, Promise<Action | null>>): Promise<ReadActions> {
  const limit = budget.limit ?? budget.actionBytes;
  const results = new Array<Action | null>(ids.length);
  const errors = new Map<number, string>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ids.length) {
      const i = next++;
      try {
        // An action read ahead spent its bytes when it came (plan's read-ahead).
        const started = early?.get(ids[i]!);
        const action = started !== undefined ? await started : await client.getAction(ids[i]!, opts.signal);
        // Each answer is bounded on its own; their sum must be too, as every one is kept.
        if (action !== null && started === undefined) budget.actionBytes -= actionBytes(action);
        if (budget.actionBytes < 0) {
          throw new ApiError(`the declared actions of tenant ${client.tenant} total more than ${formatSize(limit)} (${ACTIONS_BUDGET_FACTOR} × --max-response-size); that is not a rollout: check the API, or raise --max-response-size`, { retryable: false });
        }
        results[i] = action;
      } catch (err) {
        if (!(err instanceof ApiError && err.details.wrongObject)) throw err;
        errors.set(ids[i]!, err.message);
        results[i] = null;
      }
    }
  };
  const width = Math.max(1, Math.min(opts.concurrency ?? 8, ids.length));
  await Promise.all(Array.from({ length: ids.length === 0 ? 0 : width }, worker));
  return { actions: new Map(ids.map((id, i) => [id, results[i]!] as const)), errors };
}

// ---------------------------------------------------------------- targeted reads

/** What to read again: firmware records by version number (with a declared bundle to check), actions by id. */
export interface RefreshTargets {
  readonly firmwares: readonly { readonly tenant: string; readonly version: string; readonly bundle?: string }[];
  readonly actions: readonly { readonly tenant: string; readonly id: number }[];
}

/** Either the live state with the targets read again, or why only a full read will do. */
export type Refreshed =
  | { readonly live: LiveState; readonly reads: number }
  | { readonly fallback: string };

/**
 * Bundles read one by one beyond which a full read of the list is the cheaper way: a page of
 * the list holds about a hundred bundles.
 */
export const MAX_TARGETED_BUNDLES = 256;

/**
 * Reads again only the given records and actions, on top of an earlier full read (`base`): a
 * record through the first bundle it was seen in (GET /api/v1/firmware-bundles/version/{v}, the
 * read the executor makes before each PUT) and through its declared bundle_version, an action by
 * id. Used by watch after a file change and by the verification after apply: a full read lists
 * every bundle of the tenant (2,000 pages at 200,000 records) to look at a handful.
 *
 * Whatever a targeted read cannot establish sends the caller back to the full read, with the
 * reason: a record the base does not hold (new, or a version nobody had declared), a record no
 * longer where the base saw it, a new record under the same number, an answer that is not the
 * object asked for, any failed request, or more bundles than MAX_TARGETED_BUNDLES.
 */
export async function refreshLive(client: ApiClient, base: LiveState, targets: RefreshTargets, opts: FetchLiveOptions = {}): Promise<Refreshed> {
  const byTenant = new Map<string, { versions: Map<string, Set<string>>; actions: Set<number> }>();
  const entry = (t: string) => {
    let e = byTenant.get(t);
    if (!e) byTenant.set(t, e = { versions: new Map(), actions: new Set() });
    return e;
  };
  for (const f of targets.firmwares) {
    const set = entry(f.tenant).versions.get(f.version) ?? new Set<string>();
    if (f.bundle !== undefined) set.add(f.bundle);
    entry(f.tenant).versions.set(f.version, set);
  }
  for (const a of targets.actions) entry(a.tenant).actions.add(a.id);

  // Which bundles to read, per tenant: each record's first bundle, and the declared ones.
  const plans = new Map<string, { bundles: Set<string>; records: Map<string, readonly LiveFirmware[]> }>();
  let bundleCount = 0;
  for (const [tenant, want] of byTenant) {
    const held = base.tenants.get(tenant);
    if (held === undefined) return { fallback: `tenant ${tenant} was not in the last full read` };
    const bundles = new Set<string>();
    const records = new Map<string, readonly LiveFirmware[]>();
    for (const [version, declared] of want.versions) {
      const list = held.firmwares.get(version);
      if (list === undefined || list.length === 0) return { fallback: `firmware ${version} of tenant ${tenant} was not in the last full read` };
      for (const r of list) {
        const first = r.bundles[0];
        if (first === undefined) return { fallback: `firmware ${version} of tenant ${tenant} was in no bundle` };
        bundles.add(first);
      }
      for (const b of declared) bundles.add(b);
      records.set(version, list);
    }
    bundleCount += bundles.size;
    plans.set(tenant, { bundles, records });
  }
  if (bundleCount > MAX_TARGETED_BUNDLES) return { fallback: `${bundleCount} bundles to read one by one` };

  let reads = 0;
  const tenants = new Map(base.tenants);
  try {
    for (const [tenant, want] of byTenant) {
      const tc = client.tenant(tenant);
      const plan = plans.get(tenant)!;
      const bundleList = [...plan.bundles];
      const actionIds = [...want.actions];
      const answers = new Map<string, FirmwareBundle | null>();
      const actions = new Map<number, Action | null>();
      const jobs: (() => Promise<void>)[] = [
        ...bundleList.map((v) => async () => {
          answers.set(v, await tc.getBundle(v, opts.signal).catch((err: unknown) => {
            // A declared bundle that does not exist: the record is simply not in it.
            if (err instanceof ApiError && err.status === 404 && !isFirstBundle(plan.records, v)) return null;
            throw err;
          }));
        }),
        ...actionIds.map((id) => async () => { actions.set(id, await tc.getAction(id, opts.signal)); }),
      ];
      reads += jobs.length;
      await runLimited(jobs, opts.concurrency ?? 8);
      const held = base.tenants.get(tenant)!;
      const firmwares = plan.records.size > 0 ? FirmwareIndex.copyOf(held.firmwares) : held.firmwares;
      for (const [version, list] of plan.records) {
        const fresh: LiveFirmware[] = [];
        for (const r of list) {
          const primary = answers.get(r.bundles[0]!);
          const found = primary?.firmwares.find((f) => f.version_number === version && f.component_name === r.component_name);
          if (found === undefined) return { fallback: `firmware ${version} of tenant ${tenant} is no longer in bundle ${r.bundles[0]}` };
          const bundles = new Set(r.bundles);
          const record: Accumulated['record'] = {
            version_number: version,
            component_name: r.component_name,
            firmware_id: found.firmware_id ?? null,
            is_deactivated: found.is_deactivated ?? null,
            uncompressed_size: found.uncompressed_size ?? null,
            dependencies: found.dependencies == null ? UNKNOWN_DEPENDENCIES : found.dependencies.length === 0 ? NO_DEPENDENCIES : internDependencies(found.dependencies),
            bundles: [],
          };
          for (const [b, answer] of answers) {
            const listed = answer?.firmwares.filter((f) => f.version_number === version && f.component_name === r.component_name) ?? [];
            // The same component listed as another record (sameFirmware): the full read decides.
            if (listed.some((f) => !sameFirmware(record, f))) return { fallback: `firmware ${version} of tenant ${tenant} is listed as records that differ` };
            if (listed.length > 0) bundles.add(b);
            else bundles.delete(b);
          }
          record.bundles = [...bundles].sort();
          fresh.push(record);
        }
        // Another component under the same number, in a bundle read now: the base no longer describes it.
        for (const answer of answers.values()) {
          if (answer?.firmwares.some((f) => f.version_number === version && !list.some((r) => r.component_name === f.component_name))) {
            return { fallback: `firmware ${version} of tenant ${tenant} has a record the last full read did not` };
          }
        }
        (firmwares as FirmwareIndex).set(version, fresh);
      }
      let liveActions = held.actions;
      let actionErrors = held.actionErrors;
      if (actions.size > 0) {
        const next = new Map(held.actions);
        for (const [id, a] of actions) next.set(id, a);
        liveActions = next;
        if (actionErrors !== undefined && actionIds.some((id) => actionErrors!.has(id))) {
          const left = new Map(actionErrors);
          for (const id of actionIds) left.delete(id);
          actionErrors = left.size > 0 ? left : undefined;
        }
      }
      tenants.set(tenant, { firmwares, actions: liveActions, ...(actionErrors !== undefined ? { actionErrors } : {}) });
    }
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    return { fallback: `a targeted read failed: ${err instanceof Error ? err.message : String(err)}` };
  }
  return { live: { tenants }, reads };
}

function isFirstBundle(records: ReadonlyMap<string, readonly LiveFirmware[]>, bundle: string): boolean {
  for (const list of records.values()) if (list.some((r) => r.bundles[0] === bundle)) return true;
  return false;
}

async function runLimited(jobs: readonly (() => Promise<void>)[], width: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length) await jobs[next++]!();
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(width, jobs.length)) }, worker));
}

/** `base` with every record and action of `part` (a read of some objects only) put in. */
export function mergeLive(base: LiveState, part: LiveState): LiveState {
  const tenants = new Map(base.tenants);
  for (const [name, t] of part.tenants) {
    const held = base.tenants.get(name);
    if (held === undefined) { tenants.set(name, t); continue; }
    const firmwares = t.firmwares.size > 0 ? FirmwareIndex.copyOf(held.firmwares) : held.firmwares;
    for (const [v, list] of t.firmwares) {
      // A partial read keeps a record's first bundles only: the declared ones the base kept stay.
      const before = held.firmwares.get(v) ?? [];
      (firmwares as FirmwareIndex).set(v, list.map((r) => {
        const old = before.find((o) => o.component_name === r.component_name);
        return old === undefined ? r : { ...r, bundles: [...new Set([...r.bundles, ...old.bundles])].sort() };
      }));
    }
    const actions = t.actions.size > 0 ? new Map(held.actions) : held.actions;
    for (const [id, a] of t.actions) (actions as Map<number, Action | null>).set(id, a);
    const errors = new Map(held.actionErrors ?? []);
    for (const id of t.actions.keys()) errors.delete(id);
    for (const [id, why] of t.actionErrors ?? []) errors.set(id, why);
    tenants.set(name, { firmwares, actions, ...(errors.size > 0 ? { actionErrors: errors } : {}) });
  }
  return { tenants };
}
