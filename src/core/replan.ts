// Planning again after an edit without planning everything (watch, issue 15): only the objects
// the edit touched and those the last plan did not leave unchanged are planned; every other
// object was unchanged against the same live view and still is. Pure. The result equals
// plan(desired, live, options) when `live` differs from the last plan's live only in the touched
// objects (test/core/replan.property.test.ts holds it to that).
//
// It never walks the whole desired state: watch keeps an index of the declared objects by key,
// updated from the objects of the files that changed (a scan of 200,000 objects per plan, twice
// per pass, was most of a pass).
import type { Change, DesiredObject, DesiredState, LiveState, Plan } from '../model/index.js';
import { plan, sortBroken, sortHeld, type PlanOptions } from './plan.js';
import { sortChanges, sortConflicts, sortErrors } from './order.js';

type Kind = 'firmware' | 'action';
// The tenant-and-kind prefix made once: a template string per key was a chain of three joined
// strings over its own copy of the tenant (120 bytes a key, 23 MB of watch's index at 200,000).
const PREFIXES = { firmware: new Map<string, string>(), action: new Map<string, string>() };
const keyOf = (tenant: string, kind: Kind, key: string): string => {
  const known = PREFIXES[kind];
  let prefix = known.get(tenant);
  if (prefix === undefined) {
    if (known.size >= 4096) known.clear();
    prefix = `${tenant}\0${kind}\0`;
    known.set(tenant, prefix);
  }
  return prefix + key;
};
const changeKey = (c: Change): string => keyOf(c.tenant, c.kind === 'firmware' ? 'firmware' : 'action', c.key);

/** An object's key: tenant, kind and identity. */
export function objectKey(o: DesiredObject): string {
  return o.kind === 'firmware' ? keyOf(o.tenant, 'firmware', o.spec.version_number) : keyOf(o.tenant, 'action', String(o.id));
}

/** The declared objects by key. */
export type DesiredIndex = Map<string, DesiredObject>;

export function indexDesired(desired: DesiredState): DesiredIndex {
  const index: DesiredIndex = new Map();
  for (const f of desired.firmwares) index.set(objectKey(f), f);
  for (const a of desired.actions) index.set(objectKey(a), a);
  return index;
}

/** The objects a plan did not leave unchanged (a change, a conflict, an error, a hold). */
export function unsettled(p: Plan): Set<string> {
  const out = new Set<string>();
  for (const c of p.changes) out.add(changeKey(c));
  for (const c of p.conflicts) out.add(keyOf(c.tenant, 'action', c.key));
  for (const e of p.errors) out.add(keyOf(e.tenant, e.kind, e.key));
  for (const h of p.held ?? []) out.add(keyOf(h.tenant, h.kind, h.key));
  for (const b of p.broken_dependencies ?? []) out.add(keyOf(b.tenant, 'firmware', b.key));
  return out;
}

export interface Touched {
  readonly firmwares: readonly { readonly tenant: string; readonly version: string }[];
  readonly actions: readonly { readonly tenant: string; readonly id: number }[];
}

export interface Edit {
  /** The index of the objects declared before the edit (it is updated to after it). */
  readonly index: DesiredIndex;
  /** Objects the edit declared (new, or new declarations of known keys) and those it took away. */
  readonly added: readonly DesiredObject[];
  readonly removed: readonly DesiredObject[];
}

/**
 * The plan of the edited desired state against `live`, from the last plan (`before`, made
 * against a live view that differed only in `touched`): the touched objects, the added ones and
 * those `before` did not leave unchanged are planned; the objects no longer declared dropped;
 * the rest carried. Updates `edit.index` to the objects declared after the edit.
 */
export function replan(before: Plan, edit: Edit, live: LiveState, touched: Touched, options: PlanOptions = {}): Plan {
  const { index } = edit;
  const settledBefore = unsettled(before);
  const keys = new Set(settledBefore);
  for (const f of touched.firmwares) keys.add(keyOf(f.tenant, 'firmware', f.version));
  for (const a of touched.actions) keys.add(keyOf(a.tenant, 'action', String(a.id)));
  const addedKeys = new Set(edit.added.map(objectKey));
  for (const k of addedKeys) keys.add(k);
  const removedKeys = new Set(edit.removed.map(objectKey).filter((k) => !addedKeys.has(k)));
  // The unchanged objects whose outcome is planned again or dropped leave the carried count.
  const gone = new Map<string, number>();
  for (const k of new Set([...keys, ...removedKeys])) {
    const was = index.get(k);
    if (was !== undefined && !settledBefore.has(k)) gone.set(was.tenant, (gone.get(was.tenant) ?? 0) + 1);
  }
  for (const k of removedKeys) index.delete(k);
  for (const o of edit.added) index.set(objectKey(o), o);
  const firmwares: DesiredState['firmwares'][number][] = [];
  const actions: DesiredState['actions'][number][] = [];
  for (const k of keys) {
    const o = index.get(k);
    if (o === undefined) continue;
    if (o.kind === 'firmware') firmwares.push(o);
    else actions.push(o);
  }
  const sub = plan({ firmwares, actions, files: [] }, live, options);
  const drop = (k: string): boolean => keys.has(k) || removedKeys.has(k);
  const changes = sortChanges([...before.changes.filter((c) => !drop(changeKey(c))), ...sub.changes]);
  const conflicts = sortConflicts([...before.conflicts.filter((c) => !drop(keyOf(c.tenant, 'action', c.key))), ...sub.conflicts]);
  const errors = sortErrors([...before.errors.filter((e) => !drop(keyOf(e.tenant, e.kind, e.key))), ...sub.errors]);
  const held = sortHeld([...(before.held ?? []).filter((h) => !drop(keyOf(h.tenant, h.kind, h.key))), ...(sub.held ?? [])]);
  const broken = sortBroken([...(before.broken_dependencies ?? []).filter((b) => !drop(keyOf(b.tenant, 'firmware', b.key))), ...(sub.broken_dependencies ?? [])]);
  // The tenants stay those of the last plan: watch reads everything again when they change
  // (a precondition: the result then equals the whole plan).
  const unchangedByTenant: Record<string, number> = {};
  for (const t of Object.keys(before.summary.unchanged_by_tenant ?? {}).sort()) {
    unchangedByTenant[t] = (before.summary.unchanged_by_tenant?.[t] ?? 0) - (gone.get(t) ?? 0) + (sub.summary.unchanged_by_tenant?.[t] ?? 0);
  }
  const unchanged = Object.values(unchangedByTenant).reduce((a, b) => a + b, 0);
  return {
    format_version: 1,
    changes,
    conflicts,
    errors,
    summary: {
      changes: changes.length,
      conflicts: conflicts.length,
      errors: errors.length,
      unchanged,
      unchanged_by_tenant: unchangedByTenant,
      ...(held.length > 0 ? { held: held.length } : {}),
    },
    ...(held.length > 0 ? { held } : {}),
    ...(broken.length > 0 ? { broken_dependencies: broken } : {}),
  };
}

/**
 * The edit between two whole desired states, the slow way (every object compared by
 * identity): for callers that have no list of changed files, and for tests.
 */
export function editBetween(before: DesiredState, after: DesiredState): Edit {
  const was = new Set<DesiredObject>([...before.firmwares, ...before.actions]);
  const is = new Set<DesiredObject>([...after.firmwares, ...after.actions]);
  return {
    index: indexDesired(before),
    added: [...is].filter((o) => !was.has(o)),
    removed: [...was].filter((o) => !is.has(o)),
  };
}
