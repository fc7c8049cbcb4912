// plan(desired, live) → Plan: the whole difference, pure and deterministic (SPEC section 1).
// Every problem with one object (not found, ambiguous, guard, conflict) stays with that object,
// so that one bad document never hides the changes of the others.
import type {
  BrokenDependency,
  Change,
  Conflict,
  Dependency,
  DesiredAction,
  DesiredFirmware,
  DesiredState,
  FirmwareChange,
  FirmwareFields,
  FirmwareUpdate,
  Held,
  LiveFirmware,
  LiveState,
  Phase,
  PhaseChange,
  PhaseSpec,
  Plan,
  PlanError,
  SourceLocation,
} from '../model/index.js';
import { canonicalJson, clip, compareStrings, deepEqual, normalizePhase, sortDependencies } from './canonical.js';
import { sortChanges, sortConflicts, sortErrors } from './order.js';
import { atLeast, compareVersions } from './version-order.js';
import { isValidTime, windowHold, type SyncWindow } from './windows.js';
import { UNKNOWN_DEPENDENCIES } from '../intern.js';

export interface PlanOptions {
  /** Restrict to these tenants (desired is usually filtered already; this is a belt). */
  readonly tenants?: readonly string[];
  /** Let deactivations through that leave an active firmware's dependency unsatisfied (--allow-broken-dependencies). */
  readonly allowBrokenDependencies?: boolean;
  /** The time of the plan (ms since the epoch): gated pacing and sync windows need it; without it, neither holds. */
  readonly now?: number;
  /** When dus-sync first saw phase `index` of an action triggered (ms since the epoch), where it has seen it. */
  readonly triggeredSince?: (tenant: string, actionId: number, index: number) => number | undefined;
  /** Sync windows of the config; ignored when empty or without `now` (--ignore-windows passes none). */
  readonly windows?: readonly SyncWindow[];
}

/** What the planning of one object needs beside the object and live. */
interface Context {
  readonly options: PlanOptions;
}

/** What planning one object produced: changes, or a conflict, or an error, or nothing. */
interface ObjectOutcome {
  readonly changes: readonly Change[];
  readonly conflict?: Conflict;
  readonly error?: PlanError;
  readonly held?: Held;
}

const NOTHING: ObjectOutcome = { changes: [] };

export function plan(desired: DesiredState, live: LiveState, options: PlanOptions = {}): Plan {
  const wanted = options.tenants ? new Set(options.tenants) : undefined;
  const inScope = (tenant: string) => wanted === undefined || wanted.has(tenant);

  const changes: Change[] = [];
  const conflicts: Conflict[] = [];
  const errors: PlanError[] = [];
  const held: Held[] = [];
  const unchangedCount = new Map<string, number>();
  const count = (tenant: string, unchanged: number) => { unchangedCount.set(tenant, (unchangedCount.get(tenant) ?? 0) + unchanged); };
  const record = (tenant: string, outcome: ObjectOutcome) => {
    for (const c of outcome.changes) changes.push(c);
    if (outcome.conflict) conflicts.push(outcome.conflict);
    if (outcome.error) errors.push(outcome.error);
    if (outcome.held) held.push(outcome.held);
    count(tenant, outcome.changes.length === 0 && !outcome.conflict && !outcome.error && !outcome.held ? 1 : 0);
  };
  const ctx: Context = { options };

  // Most firmwares are as desired: counted here, not carried through the dependency check
  // (which looks only at changes) and the windows (which hold only changes).
  const firmwareOutcomes: FirmwareOutcome[] = [];
  for (const fw of desired.firmwares) {
    if (!inScope(fw.tenant)) continue;
    const outcome = planFirmware(fw, live);
    if (outcome === NOTHING) count(fw.tenant, 1);
    else firmwareOutcomes.push({ fw, outcome });
  }
  const integrity = checkDependencies(firmwareOutcomes, live, options.allowBrokenDependencies === true);
  for (const { fw, outcome } of integrity.outcomes) record(fw.tenant, withWindow(outcome, fw.tenant, 'firmware', fw.spec.version_number, fw.source, ctx));
  for (const action of desired.actions) {
    if (inScope(action.tenant)) record(action.tenant, withWindow(planAction(action, live, ctx), action.tenant, 'action', String(action.id), action.source, ctx));
  }

  const unchangedByTenant = Object.fromEntries(unchangedCount);
  const unchanged = Object.values(unchangedByTenant).reduce((a, b) => a + b, 0);
  return {
    format_version: 1,
    changes: sortChanges(changes),
    conflicts: sortConflicts(conflicts),
    errors: sortErrors(errors),
    summary: {
      changes: changes.length,
      conflicts: conflicts.length,
      errors: errors.length,
      unchanged,
      unchanged_by_tenant: sortedRecord(unchangedByTenant),
      ...(held.length > 0 ? { held: held.length } : {}),
    },
    ...(held.length > 0 ? { held: sortHeld(held) } : {}),
    ...(integrity.broken.length > 0 ? { broken_dependencies: integrity.broken } : {}),
  };
}

export function sortHeld(held: readonly Held[]): Held[] {
  return [...held].sort((a, b) => compareStrings(a.tenant, b.tenant) || compareStrings(a.kind, b.kind)
    || (a.kind === 'action' ? Number(a.key) - Number(b.key) : compareStrings(a.key, b.key)));
}

/** Holds the writes of an object while a sync window says no (docs/rollout-control.md). */
function withWindow(outcome: ObjectOutcome, tenant: string, kind: 'firmware' | 'action', key: string, source: SourceLocation, ctx: Context): ObjectOutcome {
  const { windows, now } = ctx.options;
  if (outcome.changes.length === 0 || !windows || windows.length === 0 || now === undefined) return outcome;
  const hold = windowHold(windows, tenant, kind, now);
  if (!hold) return outcome;
  const first = outcome.changes[0]!;
  return {
    ...outcome,
    changes: [],
    held: {
      tenant, kind, key, reason: 'window',
      message: `${kind === 'firmware' ? `firmware ${key}` : `action ${key}: ${plural(outcome.changes.length, 'phase append')}`} ${hold.message}`,
      pending: outcome.changes.length,
      ...(first.kind === 'phase' ? { index: first.index } : {}),
      window: hold.window,
      ...(isValidTime(hold.until) ? { until: new Date(hold.until).toISOString() } : {}),
      source,
    },
  };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function sortedRecord(rec: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of Object.keys(rec).sort(compareStrings)) out[key] = rec[key] ?? 0;
  return out;
}

// ---------------------------------------------------------------- firmware

function firmwareError(fw: DesiredFirmware, message: string): ObjectOutcome {
  return {
    changes: [],
    error: { tenant: fw.tenant, kind: 'firmware', key: fw.spec.version_number, message, source: fw.source },
  };
}

function planFirmware(fw: DesiredFirmware, live: LiveState): ObjectOutcome {
  const version = fw.spec.version_number;
  const records = live.tenants.get(fw.tenant)?.firmwares.get(version) ?? [];
  // Not `[only, ...others] = records`: that copies an array per firmware (0.3 s at 200,000).
  const only = records[0];
  if (only === undefined) {
    return firmwareError(
      fw,
      `firmware ${version} was not found in tenant ${fw.tenant}; the API cannot create firmware records: upload it first or remove the document`,
    );
  }
  if (records.length > 1) return firmwareError(fw, ambiguityMessage(fw, records));
  const guard = guardMessage(fw, only);
  if (guard) return firmwareError(fw, guard);
  return diffFirmware(fw, only);
}

/**
 * The PUT body of these managed fields over the live record: each managed field as given, the
 * rest as read (null where live does not know it). Dependencies: the live list as read when they
 * are not managed, every field of each entry (a server may keep more than the two the API
 * document names: they are not the YAML's to drop); else the managed list, each entry that live
 * holds too sent as live holds it, extra fields included.
 */
export function putBodyOver(managed: { readonly is_deactivated?: boolean; readonly uncompressed_size?: number; readonly dependencies?: readonly Dependency[] }, record: LiveFirmware): { is_deactivated: boolean | null; uncompressed_size: number | null; dependencies: Dependency[] } {
  return {
    is_deactivated: managed.is_deactivated ?? record.is_deactivated,
    uncompressed_size: managed.uncompressed_size ?? record.uncompressed_size,
    dependencies: managed.dependencies !== undefined ? withLiveFields(managed.dependencies, record.dependencies) : record.dependencies.map((d) => ({ ...d })),
  };
}

/** The YAML's dependencies, each one live holds too (same component and minimum) as live holds it. */
function withLiveFields(desired: readonly Dependency[], live: readonly Dependency[]): Dependency[] {
  const unused = [...live];
  return desired.map((d) => {
    const i = unused.findIndex((l) => l.component_name === d.component_name && l.min_version === d.min_version);
    if (i === -1) return { component_name: d.component_name, min_version: d.min_version };
    const [l] = unused.splice(i, 1);
    return { ...l! };
  });
}

function ambiguityMessage(fw: DesiredFirmware, records: readonly LiveFirmware[]): string {
  const version = fw.spec.version_number;
  const names = records.map((r) => clip(r.component_name, 60)).sort(compareStrings);
  const components = names.length > 10 ? `${names.slice(0, 10).join(', ')} and ${names.length - 10} more` : names.join(', ');
  const wanted = fw.spec.component_name;
  if (new Set(names).size < names.length && (wanted === undefined || records.some((r) => r.component_name === wanted))) {
    // One component listed as records that differ (another firmware_id, size, state or dependencies).
    const each = records.map((r) => `${clip(r.component_name, 60)}${r.firmware_id != null ? ` ${clip(r.firmware_id, 60)}` : ''} in ${clip(r.bundles.join(', ') || 'no bundle', 100)}`).sort(compareStrings);
    const shown = each.length > 5 ? `${each.slice(0, 5).join('; ')} and ${each.length - 5} more` : each.join('; ');
    return `version ${version} is listed as ${records.length} firmware records that differ (${shown}); the PUT addresses firmware by version number only and would write one record's fields over the others, so dus-sync will not change it: make the records agree in the service, or remove the document`;
  }
  if (wanted === undefined) {
    return `version ${version} is ambiguous: it matches firmware of components ${components}; the API updates by version number only, so dus-sync cannot address one`;
  }
  if (!records.some((r) => r.component_name === wanted)) {
    return `version ${version} matches firmware of components ${components}, none of them ${wanted}; the API updates by version number only, so dus-sync cannot address one: fix component_name or remove the document`;
  }
  return `version ${version} matches firmware of components ${components}; component_name ${wanted} picks one, but the PUT addresses firmware by version number only and cannot update a single record, so dus-sync will not change it`;
}

function guardMessage(fw: DesiredFirmware, record: LiveFirmware): string | undefined {
  const { version_number: version, component_name: component, bundle_version: bundle } = fw.spec;
  if (component !== undefined && component !== record.component_name) {
    return `firmware ${version} belongs to component ${clip(record.component_name, 60)}, not ${component}; fix component_name in the YAML or remove the document`;
  }
  if (bundle !== undefined && !record.bundles.includes(bundle)) {
    const where = record.bundles.length > 0 ? `it is in ${clip(record.bundles.join(', '), 200)}` : 'it is in no bundle';
    return `firmware ${version} is not in bundle ${bundle} (${where}); fix bundle_version in the YAML or remove the document`;
  }
  return undefined;
}

/** As deepEqual of the sorted lists, field by field: it runs for every declared firmware. */
function sameDependencies(a: readonly Dependency[], b: readonly Dependency[]): boolean {
  if (a.length !== b.length) return false;
  if (a.length === 0) return true;
  // One each (the common case beside none): no sorted copies.
  if (a.length === 1) return a[0]!.component_name === b[0]!.component_name && a[0]!.min_version === b[0]!.min_version;
  const x = sortDependencies(a);
  const y = sortDependencies(b);
  return x.every((d, i) => d.component_name === y[i]!.component_name && d.min_version === y[i]!.min_version);
}

/** The managed fields that differ: before as live has them (absent when live is unknown), after as desired. */
function differingFields(fw: DesiredFirmware, record: LiveFirmware): { before: FirmwareFields; after: FirmwareFields } {
  const spec = fw.spec;
  const before: FirmwareFields = {};
  const after: FirmwareFields = {};
  if (spec.is_deactivated !== undefined && spec.is_deactivated !== record.is_deactivated) {
    if (record.is_deactivated !== null) before.is_deactivated = record.is_deactivated;
    after.is_deactivated = spec.is_deactivated;
  }
  if (spec.uncompressed_size !== undefined && spec.uncompressed_size !== record.uncompressed_size) {
    if (record.uncompressed_size !== null) before.uncompressed_size = record.uncompressed_size;
    after.uncompressed_size = spec.uncompressed_size;
  }
  if (spec.dependencies !== undefined && !sameDependencies(spec.dependencies, record.dependencies)) {
    before.dependencies = sortDependencies(record.dependencies);
    after.dependencies = sortDependencies(spec.dependencies);
  }
  return { before, after };
}

/** Whether the managed fields are as desired: differingFields without its two objects, for the many that are. */
function unchanged(fw: DesiredFirmware, record: LiveFirmware): boolean {
  const spec = fw.spec;
  return (spec.is_deactivated === undefined || spec.is_deactivated === record.is_deactivated)
    && (spec.uncompressed_size === undefined || spec.uncompressed_size === record.uncompressed_size)
    && (spec.dependencies === undefined || sameDependencies(spec.dependencies, record.dependencies));
}

function diffFirmware(fw: DesiredFirmware, record: LiveFirmware): ObjectOutcome {
  if (unchanged(fw, record)) return NOTHING;
  const { before, after } = differingFields(fw, record);
  if (Object.keys(after).length === 0) return NOTHING;

  // The PUT must send all three fields; an unmanaged one has to come from live, so it must be known.
  const put = putBodyOver(fw.spec, record);
  const isDeactivated = put.is_deactivated;
  const uncompressedSize = put.uncompressed_size;
  const unknown = [
    ...(isDeactivated === null ? ['is_deactivated'] : []),
    ...(uncompressedSize === null ? ['uncompressed_size'] : []),
    ...(fw.spec.dependencies === undefined && record.dependencies === UNKNOWN_DEPENDENCIES ? ['dependencies'] : []),
  ];
  if (unknown.length > 0 || isDeactivated === null || uncompressedSize === null) {
    const [verb, them] = unknown.length === 1 ? ['is', 'it'] : ['are', 'them'];
    const list = unknown.length === 1 ? unknown[0]! : `${unknown.slice(0, -1).join(', ')} and ${unknown.at(-1)!}`;
    return firmwareError(
      fw,
      `firmware ${fw.spec.version_number}: live ${list} ${verb} unknown and not managed; set ${them} in the YAML so the PUT can send ${them}`,
    );
  }
  const body: FirmwareUpdate = { is_deactivated: isDeactivated, uncompressed_size: uncompressedSize, dependencies: put.dependencies };
  const change: FirmwareChange = {
    tenant: fw.tenant,
    kind: 'firmware',
    op: 'update',
    key: fw.spec.version_number,
    component_name: record.component_name,
    before,
    after,
    body,
    source: fw.source,
  };
  return { changes: [change] };
}

// ---------------------------------------------------------------- actions

function planAction(action: DesiredAction, live: LiveState, ctx: Context): ObjectOutcome {
  const key = String(action.id);
  const liveTenant = live.tenants.get(action.tenant);
  const unusable = liveTenant?.actionErrors?.get(action.id);
  if (unusable !== undefined) {
    return { changes: [], error: { tenant: action.tenant, kind: 'action', key, message: `action ${action.id}: ${unusable}; nothing is appended to it`, source: action.source } };
  }
  const liveAction = liveTenant?.actions.get(action.id);
  if (!liveAction) {
    return {
      changes: [],
      error: {
        tenant: action.tenant,
        kind: 'action',
        key,
        message: `action ${action.id} was not found in tenant ${action.tenant}; the API cannot create actions: create it in the service first or remove the document`,
        source: action.source,
      },
    };
  }
  const conflict = phaseConflict(action, liveAction.phases);
  if (conflict) return { changes: [], conflict };

  const appends: PhaseChange[] = action.phases.slice(liveAction.phases.length).map((phase, i) => ({
    tenant: action.tenant,
    kind: 'phase',
    op: 'append',
    key,
    action_id: action.id,
    index: liveAction.phases.length + i,
    after: normalizePhase(phase),
    source: phaseSource(action, liveAction.phases.length + i),
  }));
  if (appends.length === 0) return NOTHING;
  const first = appends[0]!;
  const hold = (reason: Held['reason'], message: string, until?: number): ObjectOutcome => ({
    changes: [],
    held: {
      tenant: action.tenant, kind: 'action', key, reason, message, pending: appends.length, index: first.index,
      ...(until !== undefined ? { until: new Date(until).toISOString() } : {}),
      source: first.source ?? action.source,
    },
  });
  if (action.paused === true) {
    return hold('paused', `action ${action.id} is paused (spec.paused): ${plural(appends.length, 'phase append')} from phase ${first.index} wait; remove spec.paused to resume`);
  }
  if (action.pacing !== 'gated' || first.index === 0) return { changes: action.pacing === 'gated' ? [first] : appends };
  // Gated: the next phase only once the one before it triggered live and has soaked.
  const previous = first.index - 1;
  const previousName = clip(JSON.stringify(String(liveAction.phases[previous]?.name ?? '')), 100);
  if (liveAction.phases_triggered?.[previous] !== true) {
    return hold('gated', `action ${action.id} is gated: phase ${first.index} waits until phase ${previous} ${previousName} has triggered`);
  }
  const soak = action.minSoakMs ?? 0;
  if (soak > 0) {
    const now = ctx.options.now;
    // A first-seen time that is no date (a damaged triggered.json) counts as not known: it must
    // neither end the soak nor stop the whole plan with a library error.
    const recorded = ctx.options.triggeredSince?.(action.tenant, action.id, previous);
    const since = isValidTime(recorded) ? recorded : undefined;
    if (now === undefined || since === undefined) {
      return hold('gated', `action ${action.id} is gated: phase ${previous} ${previousName} has triggered but when it was first seen triggered is not known yet; phase ${first.index} waits for min_soak ${formatMs(soak)} from now`);
    }
    if (now < since + soak) {
      const until = since + soak;
      const when = isValidTime(until) ? `, until ${new Date(until).toISOString()}` : '';
      return hold('gated', `action ${action.id} is gated: phase ${first.index} waits for min_soak ${formatMs(soak)} after phase ${previous} ${previousName} triggered (first seen ${new Date(since).toISOString()})${when}`, isValidTime(until) ? until : undefined);
    }
  }
  return { changes: [first] };
}

/** 90000 → "90s", 3600000 → "1h": the shortest exact way to write a duration. */
function formatMs(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/**
 * Where the phase at `index` was written; past the YAML's list (live has more), its last phase,
 * after which the missing ones go; the document when positions are unknown.
 */
function phaseSource(action: DesiredAction, index: number): SourceLocation {
  const sources = action.phaseSources ?? [];
  return sources[Math.min(index, sources.length - 1)] ?? action.source;
}

/** The first way live departs from the desired list, or undefined when desired begins with live. */
function phaseConflict(action: DesiredAction, livePhases: readonly Phase[]): Conflict | undefined {
  const base = { tenant: action.tenant, kind: 'action' as const, key: String(action.id) };
  for (let i = 0; i < livePhases.length && i < action.phases.length; i++) {
    const message = phaseDifference(action.id, i, normalizePhase(livePhases[i]!), normalizePhase(action.phases[i]!));
    if (message) return { ...base, index: i, message, source: phaseSource(action, i) };
  }
  if (livePhases.length > action.phases.length) {
    return {
      ...base,
      source: phaseSource(action, action.phases.length),
      index: action.phases.length,
      message: `action ${action.id} has ${livePhases.length} live phases but the YAML declares ${action.phases.length}; phases cannot be removed: add the missing phase(s) to the YAML`,
    };
  }
  return undefined;
}

function phaseDifference(actionId: number, index: number, live: PhaseSpec, desired: PhaseSpec): string | undefined {
  const fields = (['trigger_on', 'info'] as const).filter((f) => !deepEqual(live[f], desired[f]));
  const nameDiffers = live.name !== desired.name;
  if (!nameDiffers && fields.length === 0) return undefined;
  const what = [...(nameDiffers ? ['name'] : []), ...fields].join(', ');
  const side = (p: PhaseSpec) => [clip(JSON.stringify(p.name), 100), ...fields.map((f) => `${f} ${clip(canonicalJson(p[f]), 200)}`)].join(' ');
  return `phase ${index} of action ${actionId} differs in ${what}: live ${side(live)} but desired ${side(desired)}; phases are append-only: restore it in the YAML`;
}

// ---------------------------------------------------------------- dependency integrity

interface FirmwareOutcome {
  readonly fw: DesiredFirmware;
  readonly outcome: ObjectOutcome;
}

/** A firmware record as it will be once the plan's firmware changes are applied. */
export interface Effective {
  readonly record: LiveFirmware;
  readonly active: boolean;
  readonly dependencies: readonly Dependency[];
}

function recordKey(component: string, version: string): string {
  return `${component}\u0000${version}`;
}

/**
 * A deactivation that leaves an active firmware's dependency (component_name, min_version)
 * without any active firmware of that component at min_version or later, in the same tenant,
 * is an error on the deactivated firmware (its change is not planned), unless allowed: then it
 * is listed in broken_dependencies. Unknown is_deactivated counts as active.
 */
function checkDependencies(items: readonly FirmwareOutcome[], live: LiveState, allow: boolean): { outcomes: FirmwareOutcome[]; broken: BrokenDependency[] } {
  const broken: BrokenDependency[] = [];
  const deactivating = items.filter(({ outcome }) => outcome.changes.some((c) => c.kind === 'firmware' && c.after.is_deactivated === true));
  if (deactivating.length === 0) return { outcomes: [...items], broken };
  const tenants = [...new Set(deactivating.map((d) => d.fw.tenant))].sort(compareStrings);
  const problems = new Map<DesiredFirmware, string[]>();
  for (const tenant of tenants) {
    const changed = new Map<string, FirmwareChange>();
    for (const { fw, outcome } of items) {
      if (fw.tenant !== tenant) continue;
      for (const c of outcome.changes) if (c.kind === 'firmware') changed.set(recordKey(c.component_name, c.key), c);
    }
    // The dependencies left unsatisfied once the plan is applied, by the component they need:
    // found in one pass (each component's highest active version), not per deactivation and
    // record (that was quadratic: minutes at 200,000 records with deactivations declared).
    const unsatisfied = unsatisfiedAfter(tenant, live, [...changed.values()]);
    for (const { fw, outcome } of deactivating) {
      if (fw.tenant !== tenant) continue;
      const change = outcome.changes.find((c): c is FirmwareChange => c.kind === 'firmware')!;
      const lost: string[] = [];
      // By the dependent's version, as before (unsatisfiedAfter keeps the live state's order).
      const entries = [...(unsatisfied.get(change.component_name) ?? [])].sort((a, b) => compareStrings(a.e.record.version_number, b.e.record.version_number));
      for (const { e, dep } of entries) {
        if (!atLeast(change.key, dep.min_version)) continue;
        const dependent = `${e.record.component_name} ${e.record.version_number}`;
        lost.push(`${clip(dependent, 120)} (needs ${clip(dep.component_name, 60)} >= ${clip(dep.min_version, 60)})`);
        broken.push({ tenant, key: change.key, dependent: e.record.version_number, component_name: dep.component_name, min_version: dep.min_version });
      }
      if (lost.length > 0) problems.set(fw, lost);
    }
  }
  if (allow) return { outcomes: [...items], broken: sortBroken(broken) };
  const outcomes = items.map((item) => {
    const lost = problems.get(item.fw);
    if (!lost) return item;
    const shown = lost.length > 3 ? `${lost.slice(0, 3).join(', ')} and ${lost.length - 3} more` : lost.join(', ');
    return {
      fw: item.fw,
      outcome: firmwareError(item.fw, `deactivating firmware ${item.fw.spec.version_number} leaves no active firmware to satisfy the dependency of ${shown}; keep another active firmware of that component at that version or later, change the dependency, or pass --allow-broken-dependencies`),
    };
  });
  return { outcomes, broken: [] };
}

/** The dependencies left unsatisfied by component, once `changes` are applied to `tenant` as `live` read it. */
export type Unsatisfied = ReadonlyMap<string, readonly { readonly e: Effective; readonly dep: Dependency }[]>;

/**
 * The dependencies of `tenant` left unsatisfied, by the component they need, once `changes`
 * (firmware changes of the tenant) are applied to it as `live` read it: the executor asks, once
 * per tenant, before the deactivations, when another firmware change of the tenant was not
 * applied (an activation the plan counted on may have failed).
 */
export function unsatisfiedAfter(tenant: string, live: LiveState, changes: readonly FirmwareChange[]): Unsatisfied {
  // By version number, then component: a record's number is already hashed (the index is keyed
  // by it), where a key joined from both was a new string per record (200,000 of them).
  const done = new Map<string, Map<string, FirmwareChange>>();
  for (const c of changes) {
    if (c.tenant !== tenant) continue;
    let byComponent = done.get(c.key);
    if (byComponent === undefined) done.set(c.key, byComponent = new Map());
    byComponent.set(c.component_name, c);
  }
  const changeOf = (record: LiveFirmware): FirmwareChange | undefined => done.get(record.version_number)?.get(record.component_name);
  const lists = live.tenants.get(tenant)?.firmwares;
  // The highest active version of each component, then the dependencies of active records that
  // it does not satisfy: two passes over the records, an object only for what is unsatisfied.
  const highest = new Map<string, string>();
  for (const list of lists?.values() ?? []) {
    for (const record of list) {
      const c = changeOf(record);
      if (!(c ? !c.body.is_deactivated : record.is_deactivated !== true)) continue;
      const top = highest.get(record.component_name);
      if (top === undefined || compareVersions(record.version_number, top) > 0) highest.set(record.component_name, record.version_number);
    }
  }
  const out = new Map<string, { e: Effective; dep: Dependency }[]>();
  for (const list of lists?.values() ?? []) {
    for (const record of list) {
      const c = changeOf(record);
      const dependencies = c ? c.body.dependencies : record.dependencies;
      if (dependencies.length === 0) continue;
      const active = c ? !c.body.is_deactivated : record.is_deactivated !== true;
      if (!active) continue;
      let e: Effective | undefined;
      for (const dep of dependencies) {
        const top = highest.get(dep.component_name);
        if (top !== undefined && atLeast(top, dep.min_version)) continue;
        e ??= { record, active, dependencies };
        const entries = out.get(dep.component_name) ?? [];
        entries.push({ e, dep });
        out.set(dep.component_name, entries);
      }
    }
  }
  return out;
}

/** What deactivating `change` leaves unsatisfied, in `unsatisfied` (made with the change applied): "modem 2.4.1 (needs boot >= 1.1.0)". */
export function dependentsLeft(change: FirmwareChange, unsatisfied: Unsatisfied): string[] {
  const lost: string[] = [];
  for (const { e, dep } of unsatisfied.get(change.component_name) ?? []) {
    if (!atLeast(change.key, dep.min_version)) continue;
    lost.push(`${clip(`${e.record.component_name} ${e.record.version_number}`, 120)} (needs ${clip(dep.component_name, 60)} >= ${clip(dep.min_version, 60)})`);
  }
  return lost.sort(compareStrings);
}

export function sortBroken(list: readonly BrokenDependency[]): BrokenDependency[] {
  return [...list].sort((a, b) => compareStrings(a.tenant, b.tenant) || compareStrings(a.key, b.key)
    || compareStrings(a.dependent, b.dependent) || compareStrings(a.component_name, b.component_name));
}
