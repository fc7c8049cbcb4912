// Canonical JSON: one spelling per value, so that equality, digests and golden files do not
// depend on the key order a YAML file or an API response happened to use.
import type { Dependency, LiveFirmware, LiveState, Phase, PhaseSpec } from '../model/index.js';

/** JSON with object keys sorted (by code unit, locale-free) and no whitespace. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeysDeep(value)) ?? 'null';
}

/** Canonical equality: key order is ignored, array order is not. */
export function deepEqual(a: unknown, b: unknown): boolean {
  return a === b || canonicalJson(a) === canonicalJson(b);
}

/**
 * A copy of a JSON value with every object's keys in sorted order. Values JSON cannot hold
 * (undefined, functions) are dropped the way JSON.stringify drops them.
 */
export function sortKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : sortKeysDeep(v)));
  if (value !== null && typeof value === 'object') {
    // No prototype: a "__proto__" key from a server is then an own key like any other (on a
    // plain object the assignment would set the prototype, and the key would vanish).
    const out = Object.create(null) as Record<string, unknown>;
    for (const key of Object.keys(value).sort(compareStrings)) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined && typeof v !== 'function') out[key] = sortKeysDeep(v);
    }
    return out;
  }
  return value;
}

/** The first `max` characters, with "…" when something was cut: messages quote live data, which a server may make huge. */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** Locale-independent string order (localeCompare would vary by machine). */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A live phase as the desired state would write it: a missing trigger_on or info is {}. */
export function normalizePhase(phase: Phase | PhaseSpec): PhaseSpec {
  return { name: phase.name, trigger_on: phase.trigger_on ?? {}, info: phase.info ?? {} };
}

/** Canonical string of a phase, for the intent journal's digest. */
export function phaseDigestInput(phase: PhaseSpec): string {
  return canonicalJson(normalizePhase(phase));
}

/**
 * Dependency entries as a set, each entry whole (every field a server gave it, nested ones too):
 * in the order of their canonical text, so that the order they came in never counts.
 */
export function sortEntries<T extends object>(entries: readonly T[]): T[] {
  return entries.map((d) => [canonicalJson(d), d] as const).sort((a, b) => compareStrings(a[0], b[0])).map(([, d]) => d);
}

/** sortEntries as text: equal for the same entries, whole, in any order. */
export function entriesText(entries: readonly object[]): string {
  return canonicalJson(sortEntries(entries));
}

/** Dependencies in set order (by component, then version) so that order never counts. */
export function sortDependencies(deps: readonly Dependency[]): Dependency[] {
  return deps
    .map((d) => ({ component_name: d.component_name, min_version: d.min_version }))
    .sort((a, b) => compareStrings(a.component_name, b.component_name) || compareStrings(a.min_version, b.min_version));
}

function firmwareState(record: LiveFirmware): unknown {
  return {
    component_name: record.component_name,
    is_deactivated: record.is_deactivated,
    uncompressed_size: record.uncompressed_size,
    // Every field of each entry, nested ones included: a saved plan sends the entries the YAML
    // does not manage as they were read, so a change to any of them since makes it stale.
    dependencies: sortEntries(record.dependencies),
    bundles: [...record.bundles].sort(compareStrings),
  };
}

/**
 * The canonical managed state of one live object, for saved-plan fingerprints: a firmware is
 * every record with that version number; an action is its phases. null when it is absent.
 */
export function liveObjectState(
  live: LiveState,
  tenant: string,
  kind: 'firmware' | 'action',
  key: string,
): string | null {
  const liveTenant = live.tenants.get(tenant);
  if (!liveTenant) return null;
  switch (kind) {
    case 'firmware': {
      const records = liveTenant.firmwares.get(key);
      if (!records || records.length === 0) return null;
      const sorted = [...records].sort((a, b) => compareStrings(a.component_name, b.component_name));
      return canonicalJson(sorted.map(firmwareState));
    }
    case 'action': {
      const action = liveTenant.actions.get(Number(key));
      if (!action) return null;
      return canonicalJson({ phases: action.phases.map(normalizePhase) });
    }
  }
}
