// The one order of a plan: tenant, kind, key, index. Firmware keys compare as plain strings
// (deterministic on every machine); action keys compare as numbers so that 9 comes before 10.
import type { Change, Conflict, PlanError } from '../model/index.js';
import { canonicalJson, compareStrings } from './canonical.js';

const KIND_RANK: Readonly<Record<string, number>> = { firmware: 0, phase: 1, action: 1 };

export function compareKeys(kind: string, a: string, b: string): number {
  if (kind === 'firmware') return compareStrings(a, b);
  const na = Number(a);
  const nb = Number(b);
  if (Number.isFinite(na) && Number.isFinite(nb) && na !== nb) return na - nb;
  return compareStrings(a, b);
}

interface Sortable {
  readonly tenant: string;
  readonly kind: string;
  readonly key: string;
  readonly index?: number;
}

function compareSortable(a: Sortable, b: Sortable): number {
  return (
    compareStrings(a.tenant, b.tenant) ||
    (KIND_RANK[a.kind] ?? 9) - (KIND_RANK[b.kind] ?? 9) ||
    compareKeys(a.kind, a.key, b.key) ||
    (a.index ?? -1) - (b.index ?? -1)
  );
}

/** Ties (the same object twice) are broken by content so that the output never depends on input order. */
function byOrderThenContent<T extends Sortable>(a: T, b: T): number {
  return compareSortable(a, b) || compareStrings(canonicalJson(a), canonicalJson(b));
}

export function compareChanges(a: Change, b: Change): number {
  return byOrderThenContent(a, b);
}

export function sortChanges(changes: readonly Change[]): Change[] {
  return [...changes].sort(byOrderThenContent);
}

export function sortConflicts(conflicts: readonly Conflict[]): Conflict[] {
  return [...conflicts].sort(byOrderThenContent);
}

export function sortErrors(errors: readonly PlanError[]): PlanError[] {
  return [...errors].sort(byOrderThenContent);
}
