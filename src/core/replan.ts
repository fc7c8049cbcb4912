// Planning again after an edit without planning everything (watch, issue 15): only the objects
// the edit touched and those the last plan did not leave unchanged are planned; every other
// object was unchanged against the same live view and still is. Pure. The result equals
// plan(desired, live, options) when `live` differs from the last plan's live only in objects of
// `touched` (test/core/replan.property.test.ts holds it to that).
import type { Change, DesiredFirmware, DesiredState, LiveState, Plan } from '../model/index.js';
import { plan, sortBroken, sortHeld, type PlanOptions } from './plan.js';
import { sortChanges, sortConflicts, sortErrors } from './order.js';

type Kind = 'firmware' | 'action';
const keyOf = (tenant: string, kind: Kind, key: string): string => `${tenant}\0${kind}\0${key}`;
const changeKey = (c: Change): string => keyOf(c.tenant, c.kind === 'firmware' ? 'firmware' : 'action', c.key);
const firmwareKey = (f: DesiredFirmware): string => keyOf(f.tenant, 'firmware', f.spec.version_number);

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

/**
 * The plan of `desired` against `live`, from the last one (`before`, of `beforeDesired` against
 * a live view that differed only in `touched`): the touched objects, the objects `before` did not
 * leave unchanged and the objects no longer declared are planned or dropped; the rest is carried.
 */
export function replan(before: Plan, beforeDesired: DesiredState, desired: DesiredState, live: LiveState, touched: Touched, options: PlanOptions = {}): Plan {
  const keys = unsettled(before);
  for (const f of touched.firmwares) keys.add(keyOf(f.tenant, 'firmware', f.version));
  for (const a of touched.actions) keys.add(keyOf(a.tenant, 'action', String(a.id)));
  // Objects no longer declared: their unchanged count goes.
  const now = new Set<string>();
  for (const f of desired.firmwares) now.add(firmwareKey(f));
  for (const a of desired.actions) now.add(keyOf(a.tenant, 'action', String(a.id)));
  const gone = new Map<string, number>();
  const wasSettled = unsettled(before);
  const dropUnchanged = (tenant: string, key: string): void => {
    if (!wasSettled.has(key)) gone.set(tenant, (gone.get(tenant) ?? 0) + 1);
  };
  const counted = new Set<string>();
  for (const f of beforeDesired.firmwares) {
    const k = firmwareKey(f);
    if ((!now.has(k) || keys.has(k)) && !counted.has(k)) { counted.add(k); dropUnchanged(f.tenant, k); }
  }
  for (const a of beforeDesired.actions) {
    const k = keyOf(a.tenant, 'action', String(a.id));
    if ((!now.has(k) || keys.has(k)) && !counted.has(k)) { counted.add(k); dropUnchanged(a.tenant, k); }
  }
  const sub = plan({
    firmwares: desired.firmwares.filter((f) => keys.has(firmwareKey(f))),
    actions: desired.actions.filter((a) => keys.has(keyOf(a.tenant, 'action', String(a.id)))),
    files: desired.files,
  }, live, options);
  const drop = (k: string): boolean => keys.has(k) || !now.has(k);
  const changes = sortChanges([...before.changes.filter((c) => !drop(changeKey(c))), ...sub.changes]);
  const conflicts = sortConflicts([...before.conflicts.filter((c) => !drop(keyOf(c.tenant, 'action', c.key))), ...sub.conflicts]);
  const errors = sortErrors([...before.errors.filter((e) => !drop(keyOf(e.tenant, e.kind, e.key))), ...sub.errors]);
  const held = sortHeld([...(before.held ?? []).filter((h) => !drop(keyOf(h.tenant, h.kind, h.key))), ...(sub.held ?? [])]);
  const broken = sortBroken([...(before.broken_dependencies ?? []).filter((b) => !drop(keyOf(b.tenant, 'firmware', b.key))), ...(sub.broken_dependencies ?? [])]);
  const tenants = new Set<string>();
  for (const f of desired.firmwares) tenants.add(f.tenant);
  for (const a of desired.actions) tenants.add(a.tenant);
  if (options.tenants) for (const t of [...tenants]) if (!options.tenants.includes(t)) tenants.delete(t);
  const unchangedByTenant: Record<string, number> = {};
  for (const t of [...tenants].sort()) {
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
