// One copy of each short string that repeats across many objects: component names, tenants,
// dependencies' names and minimum versions. A YAML or JSON parser makes a new string for every
// occurrence (200,000 copies of "modem" at 200,000 records, some 12 MB), and the desired and live
// states hold them for the whole run. Bounded: cleared when full, so a stream of unique values
// (version numbers are not passed here) cannot grow it; a pure cache, values are unchanged.
const TABLE = new Map<string, string>();
const MAX_ENTRIES = 4096;
const MAX_LENGTH = 64;

export function intern(s: string): string {
  if (s.length > MAX_LENGTH) return s;
  const known = TABLE.get(s);
  if (known !== undefined) return known;
  if (TABLE.size >= MAX_ENTRIES) TABLE.clear();
  TABLE.set(s, s);
  return s;
}

/** The one empty list of dependencies (most firmware has none): never written to, as every DesiredState and LiveState is readonly. */
export const NO_DEPENDENCIES: readonly never[] = Object.freeze([]);

/**
 * The dependencies of a live record the server gave as null or left out: unknown, not none. Empty
 * to every reader, but a PUT must not send it as [] for a YAML that does not manage dependencies
 * (a list the server keeps would be wiped): plan refuses that, as for the other unknown fields.
 */
export const UNKNOWN_DEPENDENCIES: readonly never[] = Object.freeze([]);
