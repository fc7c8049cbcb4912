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

type Dependency = { readonly component_name: string; readonly min_version: string };
const LISTS = new Map<string, readonly Dependency[]>();

/**
 * One copy of each short list of dependencies whose entries are exactly a component and a
 * minimum version (most firmware of a product line depends on the same few: at 200,000 records
 * the copies were some 12 MB of the desired and live states). Any other list (an entry with more
 * fields, long lists) is returned as it is. The shared list and its entries are frozen: no
 * reader may change them (every DesiredState and LiveState is readonly).
 */
export function internDependencies<T>(list: T[]): T[] {
  if (list.length > 4) return list;
  let key = '';
  for (const d of list) {
    if (typeof d !== 'object' || d === null || Array.isArray(d)) return list;
    const e = d as Record<string, unknown>;
    let n = 0;
    for (const _ in e) n++;
    if (n !== 2 || typeof e.component_name !== 'string' || typeof e.min_version !== 'string'
      || e.component_name.length > MAX_LENGTH || e.min_version.length > MAX_LENGTH) return list;
    key += `${e.component_name}\0${e.min_version}\0`;
  }
  const known = LISTS.get(key);
  if (known !== undefined) return known as unknown as T[];
  if (LISTS.size >= MAX_ENTRIES) LISTS.clear();
  const shared = Object.freeze(list.map((d) => {
    const e = d as unknown as Dependency;
    return Object.freeze({ component_name: intern(e.component_name), min_version: intern(e.min_version) });
  }));
  LISTS.set(key, shared);
  return shared as unknown as T[];
}
