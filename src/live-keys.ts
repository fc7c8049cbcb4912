// An API key found in live data (a phase's info, a dependency's min_version, any field a server
// returns) is a leak that already happened: whoever can read the data can read the key. dus-sync
// must not copy it further, into a terminal, a CI log, a saved plan or a YAML file meant for git.
//
// How this meets planning: plan() compares the real values (a placeholder would make a phase
// that holds a key differ from itself). Only the copies that are shown or written are redacted:
// the plan printed in every format, the saved plan, the exported YAML, the status. Each place is
// named in one warning on standard error (tenant, object, field path), never the key itself.
// Writing a placeholder back is refused: apply refuses a saved plan whose writes hold one, and
// validate/plan refuse a desired-state file that holds one (src/load/documents.ts).
import type { Action, DesiredState, LiveFirmware, LiveState, Logger, Plan } from './model/index.js';
import { UserError } from './errors.js';
import { holdsWholeKey, redact, REDACTED, redactDeep, secretsGeneration, textMayHoldKey } from './redact.js';

export interface KeyLocation {
  readonly tenant: string;
  /** "firmware 2.4.1 (modem)" or "action 42". */
  readonly object: string;
  /** Inside the object, e.g. "phases[1].info.token" or "dependencies[0].min_version". */
  readonly path: string;
}

function firmwareName(f: LiveFirmware): string {
  return `firmware ${f.version_number} (${f.component_name})`;
}

/** Where registered keys appear in one live object; `value` is what is shown or written of it. */
export function keysIn(tenant: string, object: string, value: unknown): KeyLocation[] {
  const out: KeyLocation[] = [];
  redactDeep(value, (path) => out.push({ tenant, object, path: path === '' ? '(the value)' : path }));
  // The name itself may hold the key (a version number, a component name): it is shown redacted.
  return out.map((l) => ({ ...l, object: redactDeep(l.object) }));
}

/** What keysInAll is given: each live object once, with its tenant; a firmware record or an action. */
type Visit = (add: (tenant: string, value: LiveFirmware | Action, kind: 'firmware' | 'action') => void) => void;

/** Objects looked at together: one search over their strings instead of a walk of each. */
const BATCH = 1024;
const DEEP = 100;

/**
 * The strings and object keys in `value`, added to `into` (repeats are searched once); false when the search over them
 * could differ from redactDeep's (anything but JSON-like data), so that the exact walk must decide.
 */
function collectStrings(value: unknown, into: Set<string>, depth = 0): boolean {
  if (typeof value === 'string') {
    into.add(value);
    return true;
  }
  if (value === null || typeof value !== 'object') return true;
  if (depth > DEEP) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!collectStrings(value[i], into, depth + 1)) return false;
    return true;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    into.add(k);
    if (!collectStrings((value as Record<string, unknown>)[k], into, depth + 1)) return false;
  }
  return true;
}

const RECORD_FIELDS = ['version_number', 'component_name', 'firmware_id', 'is_deactivated', 'uncompressed_size', 'dependencies', 'bundles'];

/**
 * collectStrings for a firmware record as the index builds it (those seven fields, strings
 * where strings belong, dependencies of two strings): its strings without the generic walk,
 * a third of keysInLive at 200,000 records. Anything else is walked as any value.
 */
export function collectRecord(r: LiveFirmware, into: Set<string>): boolean {
  if (Object.getPrototypeOf(r) !== Object.prototype) return collectStrings(r, into);
  let n = 0;
  for (const k in r) {
    if (k !== RECORD_FIELDS[n]) return collectStrings(r, into);
    n++;
  }
  if (n !== RECORD_FIELDS.length || typeof r.version_number !== 'string' || typeof r.component_name !== 'string'
    || (r.firmware_id !== null && typeof r.firmware_id !== 'string') || !Array.isArray(r.dependencies) || !Array.isArray(r.bundles)) return collectStrings(r, into);
  for (const k of RECORD_FIELDS) into.add(k);
  if (r.dependencies.length > 0) { into.add('component_name'); into.add('min_version'); }
  into.add(r.version_number);
  into.add(r.component_name);
  if (r.firmware_id !== null) into.add(r.firmware_id);
  for (const d of r.dependencies) {
    if (Object.getPrototypeOf(d) !== Object.prototype || typeof d.component_name !== 'string' || typeof d.min_version !== 'string') return collectStrings(r, into);
    let m = 0;
    for (const k in d) { if (k !== 'component_name' && k !== 'min_version') return collectStrings(r, into); m++; }
    if (m !== 2) return collectStrings(r, into);
    into.add(d.component_name);
    into.add(d.min_version);
  }
  for (const b of r.bundles) {
    if (typeof b !== 'string') return collectStrings(r, into);
    into.add(b);
  }
  return true;
}

/**
 * Whether strings gathered by collectStrings or collectRecord (all of them plain: `plain` true)
 * may hold a key: the search over them as one text, as keysInAll does.
 */
export function stringsMayHoldKey(strings: ReadonlySet<string>, plain: boolean): boolean {
  if (!plain) return true;
  if (strings.size === 0) return false;
  const text = [...strings].join('\n');
  return textMayHoldKey(text);
}

/**
 * Live objects searched as they were read (the index searches each page's records while they are
 * at hand, src/api/fetch-live.ts) and found without any key, under this generation of the keys:
 * a record, or a whole index (every record in it). keysInLive skips them; a key registered since
 * (another generation) makes them be searched again.
 */
const SEARCHED = new WeakMap<object, number>();

export function markSearched(value: object): void {
  SEARCHED.set(value, secretsGeneration());
}

function searched(value: object): boolean {
  return SEARCHED.get(value) === secretsGeneration();
}

/**
 * keysIn over many objects. Nearly always none holds a key, so a batch is first searched as
 * one text: its distinct strings and object keys, one per line. Without a character that
 * starts an escape (%, \\, &), redact searches a string as it is written, so a key the walk
 * of an object would find stands in that text too (a hit that straddles two lines only costs
 * the exact walk of that batch); a batch with such a character is walked. At 200,000 records
 * the walk of each (and a Set of 200,000 composite ids) took 1.6 s of a 13 s plan.
 */
function keysInAll(visit: Visit): KeyLocation[] {
  const out: KeyLocation[] = [];
  // Parallel arrays, reused: no object per live record.
  const tenants: string[] = [];
  const values: Array<LiveFirmware | Action> = [];
  const kinds: Array<'firmware' | 'action'> = [];
  const strings = new Set<string>();
  let plain = true;
  const flush = (): void => {
    const text = plain ? [...strings].join('\n') : '';
    if (!plain || textMayHoldKey(text)) {
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        const name = kinds[i] === 'firmware' ? firmwareName(v as LiveFirmware) : `action ${(v as Action).id}`;
        out.push(...keysIn(tenants[i]!, name, v));
      }
    }
    tenants.length = 0;
    values.length = 0;
    kinds.length = 0;
    strings.clear();
    plain = true;
  };
  visit((tenant, value, kind) => {
    tenants.push(tenant);
    values.push(value);
    kinds.push(kind);
    if (plain) plain = kind === 'firmware' ? collectRecord(value as LiveFirmware, strings) : collectStrings(value, strings);
    if (values.length >= BATCH) flush();
  });
  if (values.length > 0) flush();
  return out;
}

/** The live objects of the declared firmwares and actions (what plan and apply compare and show). */
export function keysInLive(live: LiveState, desired: DesiredState): KeyLocation[] {
  return keysInAll((add) => {
    // One (tenant, version number) is one list of records: each list is looked at once. The
    // desired firmwares are sorted by tenant and number, so a repeat is the previous one (a Set
    // of 200,000 lists cost more than the search).
    let previous: readonly LiveFirmware[] | undefined;
    let tenant: string | undefined;
    let firmwares: ReadonlyMap<string, readonly LiveFirmware[]> | undefined;
    let skip = false;
    for (const f of desired.firmwares) {
      if (f.tenant !== tenant) {
        tenant = f.tenant;
        firmwares = live.tenants.get(tenant)?.firmwares;
        // Every record of the index was searched as it was read: none of them to look at.
        skip = firmwares !== undefined && searched(firmwares);
      }
      if (skip) continue;
      const records = firmwares?.get(f.spec.version_number);
      if (records === undefined || records === previous) continue;
      previous = records;
      for (const r of records) if (!searched(r)) add(f.tenant, r, 'firmware');
    }
    const seenActions = new Set<string>();
    for (const a of desired.actions) {
      const action = live.tenants.get(a.tenant)?.actions.get(a.id);
      const id = `${a.tenant}\0${a.id}`;
      if (!action || seenActions.has(id)) continue;
      seenActions.add(id);
      add(a.tenant, action, 'action');
    }
  });
}

/** Every live firmware record and action that export writes. */
export function keysInExport(tenant: string, firmwares: ReadonlyMap<string, readonly LiveFirmware[]>, actions: readonly Action[]): KeyLocation[] {
  return keysInAll((add) => {
    if (!searched(firmwares)) for (const records of firmwares.values()) for (const r of records) if (!searched(r)) add(tenant, r, 'firmware');
    for (const a of actions) add(tenant, a, 'action');
  });
}

/** One warning per place; `consequence` says what was done there. */
export function warnKeysInLive(log: Logger, found: readonly KeyLocation[], consequence: string): void {
  for (const l of found) {
    log.warn(`the live data of tenant ${l.tenant} holds an API key: ${l.object}, at ${l.path}. ${consequence} `
      + 'Rotate the key: whoever can read this data can read it.');
  }
}

export const SHOWN = `It is shown as ${REDACTED}.`;
export const SHOWN_IN_PLAN = `It is shown as ${REDACTED}; the plan compares the real value.`;
export const EXPORTED = `It is written as ${REDACTED}, which validate and plan refuse: `
  + 'write the value that belongs there, or leave that field (or object) out of the YAML.';

/**
 * Where a saved plan's writes (a PUT body, a phase to append) hold the placeholder: applying it
 * would write "[REDACTED]" to the service. `before` values and messages are only shown.
 */
export function placeholdersInWrites(plan: Plan): string[] {
  return writesWhere(plan, (text) => text.includes(REDACTED));
}

/** Where a saved plan's writes hold an API key known to redaction: applying it would send the key. */
export function keysInWrites(plan: Plan): string[] {
  return writesWhere(plan, holdsWholeKey).map(redact);
}

/** The paths of the strings and field names of a plan's writes that `holds`. */
function writesWhere(plan: Plan, holds: (text: string) => boolean): string[] {
  const out: string[] = [];
  plan.changes.forEach((c, i) => {
    const writes = c.kind === 'firmware' ? { body: c.body } : { after: c.after };
    for (const [field, value] of Object.entries(writes)) {
      walkAll(value, `changes[${i}].${field}`, (path, text) => { if (holds(text)) out.push(path); });
    }
  });
  return out;
}

/** Refuses, before any write, a saved plan that would write the placeholder. */
export function refusePlaceholders(file: string, plan: Plan): void {
  const at = placeholdersInWrites(plan);
  if (at.length === 0) return;
  throw new UserError(`${file} holds ${REDACTED} where the live data held an API key (${at.slice(0, 3).join(', ')}${at.length > 3 ? `, and ${at.length - 3} more` : ''}); `
    + 'applying it would write the placeholder to the service, so nothing was written. Run dus-sync apply without a plan file');
}

/** Every string of the value and every field name, with its path. */
function walkAll(value: unknown, path: string, visit: (path: string, text: string) => void): void {
  if (typeof value === 'string') visit(path, value);
  else if (Array.isArray(value)) value.forEach((v, i) => walkAll(v, `${path}[${i}]`, visit));
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      visit(`${path}[${JSON.stringify(k)}]`, k);
      walkAll(v, `${path}.${k}`, visit);
    }
  }
}

