// What an edit of the desired state touched, for watch's incremental pass: the objects whose
// declaration changed between two loads of the repository. Pure. Watch keeps the parse of every
// file that did not change, so only the objects of re-read files are compared, by value.
import type { DesiredAction, DesiredFirmware, DesiredObject } from '../model/index.js';
import { canonicalJson } from './canonical.js';
import { objectKey } from './replan.js';

export interface Edited {
  /** Declared firmwares that are new or whose declaration changed (with their declared bundle_version). */
  readonly firmwares: readonly { readonly tenant: string; readonly version: string; readonly bundle?: string }[];
  /** Declared actions that are new or whose declaration changed. */
  readonly actions: readonly { readonly tenant: string; readonly id: number }[];
  /** Tenants with more declared deactivations than before (what the last read kept for the dependency check may not do). */
  readonly moreDeactivations: readonly string[];
}

const actionText = (a: DesiredAction): string => canonicalJson({ phases: a.phases, paused: a.paused ?? null, pacing: a.pacing ?? null, minSoakMs: a.minSoakMs ?? null });

/** What the edit touched, from the objects it declared (`added`) and took away (`removed`). */
export function editedObjects(edit: { readonly added: readonly DesiredObject[]; readonly removed: readonly DesiredObject[] }): Edited {
  const firmwares: { tenant: string; version: string; bundle?: string }[] = [];
  const actions: { tenant: string; id: number }[] = [];
  const deactivations = new Map<string, number>();
  const count = (f: DesiredFirmware, by: number): void => {
    if (f.spec.is_deactivated === true) deactivations.set(f.tenant, (deactivations.get(f.tenant) ?? 0) + by);
  };
  const oldF = edit.removed.filter((o): o is DesiredFirmware => o.kind === 'firmware');
  const oldByKey = new Map(oldF.map((f) => [objectKey(f), f] as const));
  for (const f of oldF) count(f, -1);
  for (const f of edit.added) {
    if (f.kind !== 'firmware') continue;
    count(f, 1);
    const old = oldByKey.get(objectKey(f));
    if (old !== undefined && canonicalJson(old.spec) === canonicalJson(f.spec)) continue;
    firmwares.push({ tenant: f.tenant, version: f.spec.version_number, ...(f.spec.bundle_version !== undefined ? { bundle: f.spec.bundle_version } : {}) });
  }
  const oldActions = new Map(edit.removed.filter((o): o is DesiredAction => o.kind === 'action').map((a) => [objectKey(a), a] as const));
  for (const a of edit.added) {
    if (a.kind !== 'action') continue;
    const old = oldActions.get(objectKey(a));
    if (old !== undefined && actionText(old) === actionText(a)) continue;
    actions.push({ tenant: a.tenant, id: a.id });
  }
  return { firmwares, actions, moreDeactivations: [...deactivations].filter(([, n]) => n > 0).map(([t]) => t).sort() };
}
