// What the status page (`watch --listen`, GET /) shows of one reconcile pass, per tenant: the
// sync state, drift, conflicts and errors with where they were written, and each declared
// action's rollout timeline. Built once per pass from what the pass already holds (desired,
// live, plan, apply results), so that serving the page never calls the API. Bounded: a pass over
// thousands of objects keeps at most a few dozen of each list, with the total, and clips every
// text, so the agent's memory and the page stay small whatever the repository or server holds.
import type {
  Action, ChangeResult, DesiredAction, DesiredState, LiveState, Plan, SourceLocation,
} from '../model/index.js';
import { clip, compareStrings } from './canonical.js';

/** How a reconcile pass ended (the agent's vocabulary; here so the pure renderers can name it). */
export type PassOutcome =
  | 'success'
  | 'invalid-config'
  | 'api-error'
  | 'state-error'
  | 'locked'
  | 'unsafe'
  | 'conflict'
  | 'partial-failure'
  | 'suspended';

export const DETAIL_LIMITS = {
  tenants: 100,
  /** Conflicts, plan errors and failed changes, per tenant. */
  problems: 25,
  actions: 50,
  /** Phases of one action's timeline (a window around the next phase). */
  phases: 30,
  /** Characters of a name (tenant, phase, status). */
  name: 200,
  /** Characters of a message (a server's words may be long). */
  message: 500,
} as const;

/** A file position as shown: file:line[:column]. */
export interface Located {
  readonly file: string;
  readonly line: number;
  readonly column?: number;
}

export type ProblemKind = 'conflict' | 'error' | 'failed';

export interface StatusProblem {
  readonly kind: ProblemKind;
  /** e.g. `action 42`, `firmware 2.4.1`. */
  readonly subject: string;
  readonly message: string;
  readonly at?: Located;
}

/**
 * triggered: the server triggered it; next: the one the server will trigger next; waiting: live,
 * not yet triggered; declared: in the YAML but not yet appended (dry run, suspend, a failed or
 * refused append).
 */
export type PhaseState = 'triggered' | 'next' | 'waiting' | 'declared';

export interface PhaseRow {
  readonly index: number;
  readonly name: string;
  readonly state: PhaseState;
  /** Appended by this pass. */
  readonly appended?: boolean;
  readonly at?: Located;
}

export interface ActionTimeline {
  readonly id: number;
  /** false: the API does not know the action (404). */
  readonly found: boolean;
  readonly status?: string;
  readonly livePhases: number;
  readonly declaredPhases: number;
  /** Index of the next phase to trigger, when there is one. */
  readonly nextIndex?: number;
  /** A window of the timeline, phasesBefore rows left out before it and phasesAfter after. */
  readonly phases: readonly PhaseRow[];
  readonly phasesBefore: number;
  readonly phasesAfter: number;
  readonly at?: Located;
  /** Why the live answer was not used (not the action asked for). */
  readonly note?: string;
  /** Why its appends wait (paused, gated, a sync window), in one sentence (docs/rollout-control.md). */
  readonly held?: string;
}

export type SyncState = 'in-sync' | 'applied' | 'held' | 'drift' | 'conflict' | 'error';

export interface TenantDetail {
  readonly tenant: string;
  readonly state: SyncState;
  /** Objects that differ from the YAML (the plan's changes). */
  readonly drift: number;
  readonly applied: number;
  /** Changes planned but not written (dry run, suspend, refused as unsafe, skipped). */
  readonly pending: number;
  /** Objects whose writes are held back (paused, gated, outside a sync window): not in sync. */
  readonly held: number;
  /** The first held object's sentence: what waits and why. */
  readonly heldWhy?: string;
  readonly problems: readonly StatusProblem[];
  readonly problemTotal: number;
  readonly actions: readonly ActionTimeline[];
  readonly actionTotal: number;
}

export interface PassDetail {
  readonly tenants: readonly TenantDetail[];
  readonly tenantTotal: number;
}

export interface DetailInput {
  readonly desired: DesiredState;
  /** The live state the plan was made from. */
  readonly live: LiveState;
  readonly plan: Plan;
  /** The apply's results; absent when nothing was written (dry run, suspend, unsafe, in sync). */
  readonly results?: readonly ChangeResult[];
  /** The desired state's tenants, sorted, when the caller knows them (saves a walk of every object). */
  readonly tenants?: readonly string[];
}

export function locatedOf(source: SourceLocation | undefined): Located | undefined {
  return source ? { file: clip(source.file, DETAIL_LIMITS.message), line: source.line, column: source.column } : undefined;
}

function tenantsOf(desired: DesiredState): string[] {
  const set = new Set<string>();
  for (const f of desired.firmwares) set.add(f.tenant);
  for (const a of desired.actions) set.add(a.tenant);
  return [...set].sort(compareStrings);
}

function byTenant<T>(items: readonly T[], tenant: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const i of items) {
    const list = out.get(tenant(i));
    if (list) list.push(i);
    else out.set(tenant(i), [i]);
  }
  return out;
}

/** The plan and results grouped once: a pass may hold thousands of objects in hundreds of tenants. */
interface Grouped {
  readonly changes: Map<string, DetailInput['plan']['changes'][number][]>;
  readonly conflicts: Map<string, DetailInput['plan']['conflicts'][number][]>;
  readonly errors: Map<string, DetailInput['plan']['errors'][number][]>;
  readonly results: Map<string, ChangeResult[]>;
  readonly actions: Map<string, DesiredAction[]>;
}

export function passDetail(input: DetailInput): PassDetail {
  const tenants = input.tenants ?? tenantsOf(input.desired);
  const grouped: Grouped = {
    changes: byTenant(input.plan.changes, (c) => c.tenant),
    conflicts: byTenant(input.plan.conflicts, (c) => c.tenant),
    errors: byTenant(input.plan.errors, (e) => e.tenant),
    results: byTenant(input.results ?? [], (r) => r.change.tenant),
    actions: byTenant(input.desired.actions, (a) => a.tenant),
  };
  return {
    tenants: tenants.slice(0, DETAIL_LIMITS.tenants).map((t) => tenantDetail(t, input, grouped)),
    tenantTotal: tenants.length,
  };
}

function tenantDetail(tenant: string, input: DetailInput, g: Grouped): TenantDetail {
  const { results } = input;
  const changes = g.changes.get(tenant) ?? [];
  const mine = g.results.get(tenant) ?? [];
  const applied = mine.filter((r) => r.status === 'applied').length;
  const failed = mine.filter((r) => r.status === 'failed');
  const problems: StatusProblem[] = [
    ...(g.conflicts.get(tenant) ?? []).map((c): StatusProblem => ({
      kind: 'conflict', subject: `action ${c.key}`, message: clip(c.message, DETAIL_LIMITS.message), ...at(c.source),
    })),
    ...(g.errors.get(tenant) ?? []).map((e): StatusProblem => ({
      kind: 'error', subject: `${e.kind} ${clip(e.key, DETAIL_LIMITS.name)}`, message: clip(e.message, DETAIL_LIMITS.message), ...at(e.source),
    })),
    ...failed.map((r): StatusProblem => ({
      kind: 'failed',
      subject: r.change.kind === 'phase' ? `phase ${r.change.index} of action ${r.change.key}` : `firmware ${clip(r.change.key, DETAIL_LIMITS.name)}`,
      message: clip(r.message ?? 'failed', DETAIL_LIMITS.message),
      ...at(r.change.source),
    })),
  ];
  const conflicts = problems.filter((p) => p.kind === 'conflict').length;
  const errors = problems.length - conflicts;
  const pending = results ? mine.filter((r) => r.status === 'skipped').length : changes.length;
  const held = (input.plan.held ?? []).filter((h) => h.tenant === tenant);
  const state: SyncState = errors > 0 ? 'error' : conflicts > 0 ? 'conflict' : pending > 0 ? 'drift' : held.length > 0 ? 'held' : applied > 0 ? 'applied' : 'in-sync';

  const appendedNow = new Map<number, Map<number, string>>();
  for (const r of mine) {
    if (r.status !== 'applied' || r.change.kind !== 'phase') continue;
    const m = appendedNow.get(r.change.action_id) ?? new Map<number, string>();
    m.set(r.change.index, r.change.after.name);
    appendedNow.set(r.change.action_id, m);
  }
  const declared = [...(g.actions.get(tenant) ?? [])].sort((a, b) => a.id - b.id);
  const liveTenant = input.live.tenants.get(tenant);
  const heldActions = new Map((input.plan.held ?? []).filter((h) => h.tenant === tenant && h.kind === 'action').map((h) => [h.key, h.message]));
  const actions = declared.slice(0, DETAIL_LIMITS.actions).map((a) => {
    const row = timeline(a, liveTenant?.actions.get(a.id), liveTenant?.actionErrors?.get(a.id), appendedNow.get(a.id) ?? new Map<number, string>());
    const held = heldActions.get(String(a.id));
    return held !== undefined ? { ...row, held: clip(held, DETAIL_LIMITS.message) } : row;
  });
  return {
    tenant: clip(tenant, DETAIL_LIMITS.name),
    state,
    drift: changes.length,
    applied,
    pending,
    held: held.length,
    ...(held.length > 0 ? { heldWhy: clip(held[0]!.message, DETAIL_LIMITS.message) } : {}),
    problems: problems.slice(0, DETAIL_LIMITS.problems),
    problemTotal: problems.length,
    actions,
    actionTotal: declared.length,
  };
}

function at(source: SourceLocation | undefined): { at?: Located } {
  const l = locatedOf(source);
  return l ? { at: l } : {};
}

/**
 * The action's phases as they stand after the pass: the live ones (with those this pass
 * appended), then the YAML's that are still to be appended.
 */
function timeline(a: DesiredAction, live: Action | null | undefined, note: string | undefined, appended: ReadonlyMap<number, string>): ActionTimeline {
  const livePhases = live?.phases ?? [];
  const triggered = live?.phases_triggered ?? [];
  const rows: { name: string; triggered: boolean; live: boolean; appended: boolean; index: number }[] = livePhases.map((p, i) => ({
    index: i, name: String(p.name), triggered: triggered[i] === true, live: true, appended: false,
  }));
  for (let i = rows.length; i < a.phases.length; i++) {
    const now = appended.get(i);
    // An append this pass made shows as live; one it did not make stops the run of live phases.
    if (now !== undefined && rows.length === i) rows.push({ index: i, name: now, triggered: false, live: true, appended: true });
    else rows.push({ index: i, name: a.phases[i]!.name, triggered: false, live: false, appended: false });
  }
  const liveCount = rows.filter((r) => r.live).length;
  const serverNext = typeof live?.next_phase_index === 'number' ? live.next_phase_index : undefined;
  const firstUntriggered = rows.findIndex((r) => r.live && !r.triggered);
  const next = serverNext !== undefined && serverNext >= 0 && serverNext < liveCount && !rows[serverNext]!.triggered
    ? serverNext
    : firstUntriggered >= 0 ? firstUntriggered : undefined;
  const phaseRows: PhaseRow[] = rows.map((r) => {
    const state: PhaseState = !r.live ? 'declared' : r.triggered ? 'triggered' : r.index === next ? 'next' : 'waiting';
    const where = locatedOf(a.phaseSources?.[r.index]);
    return {
      index: r.index,
      name: clip(r.name, DETAIL_LIMITS.name),
      state,
      ...(r.appended ? { appended: true } : {}),
      ...(where && r.index < a.phases.length ? { at: where } : {}),
    };
  });
  // A long rollout shows a window that starts a little before the next phase.
  const cap = DETAIL_LIMITS.phases;
  const focus = next ?? phaseRows.findIndex((r) => r.state === 'declared');
  const start = phaseRows.length <= cap ? 0 : Math.max(0, Math.min((focus < 0 ? phaseRows.length : focus) - 3, phaseRows.length - cap));
  const shown = phaseRows.slice(start, start + cap);
  return {
    id: a.id,
    found: live !== null,
    ...(live?.status !== undefined && live.status !== null ? { status: clip(String(live.status), DETAIL_LIMITS.name) } : {}),
    livePhases: liveCount,
    declaredPhases: a.phases.length,
    ...(next !== undefined ? { nextIndex: next } : {}),
    phases: shown,
    phasesBefore: start,
    phasesAfter: phaseRows.length - start - shown.length,
    ...at(a.source),
    ...(note !== undefined ? { note: clip(note, DETAIL_LIMITS.message) } : live === undefined ? { note: 'not read in this pass' } : {}),
  };
}
