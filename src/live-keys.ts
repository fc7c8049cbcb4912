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
import { REDACTED, redactDeep } from './redact.js';

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

/** The live objects of the declared firmwares and actions (what plan and apply compare and show). */
export function keysInLive(live: LiveState, desired: DesiredState): KeyLocation[] {
  const out: KeyLocation[] = [];
  const seen = new Set<string>();
  for (const f of desired.firmwares) {
    const records = live.tenants.get(f.tenant)?.firmwares.get(f.spec.version_number) ?? [];
    for (const r of records) {
      const id = `${f.tenant}\0f\0${r.version_number}\0${r.component_name}`;
      if (seen.has(id)) continue;
      seen.add(id);
      out.push(...keysIn(f.tenant, firmwareName(r), r));
    }
  }
  for (const a of desired.actions) {
    const action = live.tenants.get(a.tenant)?.actions.get(a.id);
    const id = `${a.tenant}\0a\0${a.id}`;
    if (!action || seen.has(id)) continue;
    seen.add(id);
    out.push(...keysIn(a.tenant, `action ${a.id}`, action));
  }
  return out;
}

/** Every live firmware record and action that export writes. */
export function keysInExport(tenant: string, firmwares: ReadonlyMap<string, readonly LiveFirmware[]>, actions: readonly Action[]): KeyLocation[] {
  const out: KeyLocation[] = [];
  for (const records of firmwares.values()) for (const r of records) out.push(...keysIn(tenant, firmwareName(r), r));
  for (const a of actions) out.push(...keysIn(tenant, `action ${a.id}`, a));
  return out;
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
  const out: string[] = [];
  plan.changes.forEach((c, i) => {
    const writes = c.kind === 'firmware' ? { body: c.body } : { after: c.after };
    for (const [field, value] of Object.entries(writes)) {
      walkStrings(value, `changes[${i}].${field}`, (path, text) => { if (text.includes(REDACTED)) out.push(path); });
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

function walkStrings(value: unknown, path: string, visit: (path: string, text: string) => void): void {
  if (typeof value === 'string') visit(path, value);
  else if (Array.isArray(value)) value.forEach((v, i) => walkStrings(v, `${path}[${i}]`, visit));
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k.includes(REDACTED)) visit(`${path}[${JSON.stringify(k)}]`, k);
      walkStrings(v, `${path}.${k}`, visit);
    }
  }
}
