// The semantic difference between two desired states (a git ref and the working tree), for
// review without the API: what a pull request changes, and which of those edits are risky.
// Pure: no I/O, no clock. Sorted by tenant, kind (firmware, then action), key.
import type {
  DesiredAction,
  DesiredFirmware,
  DesiredState,
  Dependency,
  PhaseSpec,
  SourceLocation,
} from '../model/index.js';

/** The scalar firmware fields; `null` means absent (unmanaged, or no guard). */
export type FirmwareScalarField = 'component_name' | 'bundle_version' | 'is_deactivated' | 'uncompressed_size' | 'labels';

export interface FieldDiff {
  readonly field: FirmwareScalarField;
  readonly before: string | number | boolean | Readonly<Record<string, string>> | null;
  readonly after: string | number | boolean | Readonly<Record<string, string>> | null;
}

export interface DependencyDiff {
  /** add: a new dependency; remove: dropped; change: another min_version. */
  readonly op: 'add' | 'remove' | 'change';
  readonly component_name: string;
  readonly before: string | null;
  readonly after: string | null;
}

export interface DependenciesDiff {
  /** null when the list is absent (unmanaged) on that side. */
  readonly before: readonly Dependency[] | null;
  readonly after: readonly Dependency[] | null;
  readonly items: readonly DependencyDiff[];
}

export interface FirmwareAdded {
  readonly tenant: string;
  readonly kind: 'firmware';
  readonly op: 'add';
  readonly key: string;
  readonly spec: DesiredFirmware['spec'];
  readonly source: SourceLocation;
}

export interface FirmwareRemoved {
  readonly tenant: string;
  readonly kind: 'firmware';
  readonly op: 'remove';
  readonly key: string;
  readonly spec: DesiredFirmware['spec'];
  /** Where it was at the base ref. */
  readonly source: SourceLocation;
}

export interface FirmwareChanged {
  readonly tenant: string;
  readonly kind: 'firmware';
  readonly op: 'change';
  readonly key: string;
  readonly component_name: string | null;
  readonly fields: readonly FieldDiff[];
  readonly dependencies: DependenciesDiff | null;
  readonly source: SourceLocation;
}

export interface IndexedPhase {
  readonly index: number;
  readonly phase: PhaseSpec;
}

export interface ActionAdded {
  readonly tenant: string;
  readonly kind: 'action';
  readonly op: 'add';
  readonly key: string;
  readonly id: number;
  readonly phases: readonly PhaseSpec[];
  readonly source: SourceLocation;
}

export interface ActionRemoved {
  readonly tenant: string;
  readonly kind: 'action';
  readonly op: 'remove';
  readonly key: string;
  readonly id: number;
  readonly phases: readonly PhaseSpec[];
  readonly source: SourceLocation;
}

export interface ActionChanged {
  readonly tenant: string;
  readonly kind: 'action';
  readonly op: 'change';
  readonly key: string;
  readonly id: number;
  /** The whole list at the head, oldest first. */
  readonly phases: readonly PhaseSpec[];
  /** The new tail: what apply will append (when the base is what is live). */
  readonly appended: readonly IndexedPhase[];
  /** Phases at the same index that differ: a conflict at plan time once they are live. */
  readonly rewritten: readonly { readonly index: number; readonly before: PhaseSpec; readonly after: PhaseSpec }[];
  /** Phases cut from the end of the list: a conflict at plan time once they are live. */
  readonly removed: readonly IndexedPhase[];
  readonly source: SourceLocation;
}

export type FirmwareDiff = FirmwareAdded | FirmwareRemoved | FirmwareChanged;
export type ActionDiff = ActionAdded | ActionRemoved | ActionChanged;
export type DiffEntry = FirmwareDiff | ActionDiff;

export type DiffWarningCode =
  | 'base-invalid'
  | 'base-submodule'
  | 'historical-phase-changed'
  | 'phase-removed'
  | 'deactivations'
  | 'firmware-unmanaged'
  | 'action-unmanaged';

export interface DiffWarning {
  readonly code: DiffWarningCode;
  /** '' for warnings about the whole base (base-invalid). */
  readonly tenant: string;
  readonly kind: 'firmware' | 'action' | 'tenant' | 'base';
  readonly key: string;
  readonly message: string;
}

export interface DesiredDiffSummary {
  readonly firmwares_added: number;
  readonly firmwares_removed: number;
  readonly firmwares_changed: number;
  readonly actions_added: number;
  readonly actions_removed: number;
  readonly actions_changed: number;
  readonly phases_appended: number;
  readonly deactivations: number;
  readonly warnings: number;
}

export interface DesiredDiff {
  readonly format_version: 1;
  readonly entries: readonly DiffEntry[];
  readonly warnings: readonly DiffWarning[];
  readonly summary: DesiredDiffSummary;
}

// ---------------------------------------------------------------- helpers

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const KIND_ORDER = { base: 0, tenant: 1, firmware: 2, action: 3 } as const;

function entryOrder(a: DiffEntry, b: DiffEntry): number {
  return cmp(a.tenant, b.tenant)
    || KIND_ORDER[a.kind] - KIND_ORDER[b.kind]
    || (a.kind === 'action' && b.kind === 'action' ? a.id - b.id : cmp(a.key, b.key));
}

function warningOrder(a: DiffWarning, b: DiffWarning): number {
  const numeric = a.kind === 'action' && b.kind === 'action' ? Number(a.key) - Number(b.key) : 0;
  return cmp(a.tenant, b.tenant) || KIND_ORDER[a.kind] - KIND_ORDER[b.kind] || numeric || cmp(a.key, b.key)
    || cmp(a.code, b.code) || cmp(a.message, b.message);
}

/** Deep equality of JSON values, key order ignored. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  const ak = Object.keys(a).sort();
  const bk = Object.keys(b).sort();
  return ak.length === bk.length && ak.every((k, i) => k === bk[i]
    && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function phaseEqual(a: PhaseSpec, b: PhaseSpec): boolean {
  return a.name === b.name && jsonEqual(a.trigger_on, b.trigger_on) && jsonEqual(a.info, b.info);
}

/** The first definition of each identity wins; duplicates are the loader's error to report. */
function byIdentity<T>(items: readonly T[], key: (t: T) => string): Map<string, T> {
  const out = new Map<string, T>();
  for (const item of items) {
    const k = key(item);
    if (!out.has(k)) out.set(k, item);
  }
  return out;
}

const firmwareId = (f: DesiredFirmware): string => `${f.tenant}\u0000${f.spec.version_number}`;
const actionId = (a: DesiredAction): string => `${a.tenant}\u0000${a.id}`;

// ---------------------------------------------------------------- firmware

function scalar(f: DesiredFirmware, field: FirmwareScalarField): FieldDiff['before'] {
  if (field === 'labels') return Object.keys(f.labels).length > 0 ? f.labels : null;
  return f.spec[field] ?? null;
}

const SCALAR_FIELDS: readonly FirmwareScalarField[] = ['component_name', 'bundle_version', 'is_deactivated', 'uncompressed_size', 'labels'];

export function diffDependencies(
  before: readonly Dependency[] | undefined,
  after: readonly Dependency[] | undefined,
): DependenciesDiff | null {
  const b = new Map((before ?? []).map((d) => [d.component_name, d.min_version] as const));
  const a = new Map((after ?? []).map((d) => [d.component_name, d.min_version] as const));
  const names = [...new Set([...b.keys(), ...a.keys()])].sort(cmp);
  const items: DependencyDiff[] = [];
  for (const name of names) {
    const was = b.get(name) ?? null;
    const now = a.get(name) ?? null;
    if (was === now) continue;
    const op = was === null ? 'add' : now === null ? 'remove' : 'change';
    items.push({ op, component_name: name, before: was, after: now });
  }
  const managedChanged = (before === undefined) !== (after === undefined);
  if (items.length === 0 && !managedChanged) return null;
  return { before: before ?? null, after: after ?? null, items };
}

function diffFirmware(base: DesiredFirmware, head: DesiredFirmware): FirmwareChanged | null {
  const fields: FieldDiff[] = [];
  for (const field of SCALAR_FIELDS) {
    const before = scalar(base, field);
    const after = scalar(head, field);
    if (!jsonEqual(before, after)) fields.push({ field, before, after });
  }
  const dependencies = diffDependencies(base.spec.dependencies, head.spec.dependencies);
  if (fields.length === 0 && dependencies === null) return null;
  return {
    tenant: head.tenant,
    kind: 'firmware',
    op: 'change',
    key: head.spec.version_number,
    component_name: head.spec.component_name ?? base.spec.component_name ?? null,
    fields,
    dependencies,
    source: head.source,
  };
}

/** A firmware that ends up deactivated by this change (and was not meant to be before). */
function deactivates(entry: DiffEntry): boolean {
  if (entry.kind !== 'firmware') return false;
  switch (entry.op) {
    case 'add': return entry.spec.is_deactivated === true;
    case 'remove': return false;
    case 'change': return entry.fields.some((f) => f.field === 'is_deactivated' && f.after === true);
  }
}

// ---------------------------------------------------------------- action

function diffAction(base: DesiredAction, head: DesiredAction): ActionChanged | null {
  const shared = Math.min(base.phases.length, head.phases.length);
  const rewritten: { index: number; before: PhaseSpec; after: PhaseSpec }[] = [];
  for (let i = 0; i < shared; i++) {
    const before = base.phases[i]!;
    const after = head.phases[i]!;
    if (!phaseEqual(before, after)) rewritten.push({ index: i, before, after });
  }
  const appended = head.phases.slice(shared).map((phase, i) => ({ index: shared + i, phase }));
  const removed = base.phases.slice(shared).map((phase, i) => ({ index: shared + i, phase }));
  if (rewritten.length === 0 && appended.length === 0 && removed.length === 0) return null;
  return {
    tenant: head.tenant, kind: 'action', op: 'change', key: String(head.id), id: head.id,
    phases: head.phases, appended, rewritten, removed, source: head.source,
  };
}

// ---------------------------------------------------------------- warnings

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

function warningsFor(entry: DiffEntry): DiffWarning[] {
  const at = { tenant: entry.tenant, kind: entry.kind, key: entry.key };
  if (entry.op === 'remove') {
    return entry.kind === 'firmware'
      ? [{ ...at, code: 'firmware-unmanaged', message: `firmware ${entry.key} was removed from git: dus-sync will stop managing it (nothing is deleted or changed live).` }]
      : [{ ...at, code: 'action-unmanaged', message: `action ${entry.key} was removed from git: dus-sync will stop managing its phases (nothing is deleted live).` }];
  }
  if (entry.kind !== 'action' || entry.op !== 'change') return [];
  const out: DiffWarning[] = [];
  for (const r of entry.rewritten) {
    out.push({
      ...at, code: 'historical-phase-changed',
      message: `action ${entry.key} phase ${r.index} "${r.before.name}" was changed: phases are append-only, so plan will report a conflict if it is already live.`,
    });
  }
  if (entry.removed.length > 0) {
    const names = entry.removed.map((p) => `${p.index} "${p.phase.name}"`).join(', ');
    out.push({
      ...at, code: 'phase-removed',
      message: `action ${entry.key} lost ${plural(entry.removed.length, 'phase')} (${names}): phases cannot be removed, so plan will report a conflict if they are already live.`,
    });
  }
  return out;
}

function deactivationWarnings(entries: readonly DiffEntry[]): DiffWarning[] {
  const perTenant = new Map<string, number>();
  for (const e of entries) if (deactivates(e)) perTenant.set(e.tenant, (perTenant.get(e.tenant) ?? 0) + 1);
  return [...perTenant].map(([tenant, n]) => ({
    code: 'deactivations' as const, tenant, kind: 'tenant' as const, key: tenant,
    message: `${plural(n, 'firmware')} of tenant ${tenant} will be deactivated: devices stop being offered ${n === 1 ? 'it' : 'them'}.`,
  }));
}

/** The warning added when the base ref does not load: everything at the head counts as added. */
export function baseInvalidWarning(ref: string, issues: number): DiffWarning {
  return {
    code: 'base-invalid', tenant: '', kind: 'base', key: ref,
    message: `the desired state at ${ref} is invalid (${plural(issues, 'problem')}): everything in the working tree counts as added.`,
  };
}

export function baseSubmoduleWarning(ref: string, path: string): DiffWarning {
  return {
    code: 'base-submodule', tenant: '', kind: 'base', key: path,
    message: `the resources reach into the submodule ${path}, whose files are another repository's: diff --base does not read them at ${ref}, so those in the working tree count as added.`,
  };
}

// ---------------------------------------------------------------- diff

export function diffDesired(base: DesiredState, head: DesiredState, extraWarnings: readonly DiffWarning[] = []): DesiredDiff {
  const entries: DiffEntry[] = [];

  const baseFw = byIdentity(base.firmwares, firmwareId);
  const headFw = byIdentity(head.firmwares, firmwareId);
  for (const [id, h] of headFw) {
    const b = baseFw.get(id);
    if (!b) entries.push({ tenant: h.tenant, kind: 'firmware', op: 'add', key: h.spec.version_number, spec: h.spec, source: h.source });
    else {
      const changed = diffFirmware(b, h);
      if (changed) entries.push(changed);
    }
  }
  for (const [id, b] of baseFw) {
    if (!headFw.has(id)) entries.push({ tenant: b.tenant, kind: 'firmware', op: 'remove', key: b.spec.version_number, spec: b.spec, source: b.source });
  }

  const baseAc = byIdentity(base.actions, actionId);
  const headAc = byIdentity(head.actions, actionId);
  for (const [id, h] of headAc) {
    const b = baseAc.get(id);
    if (!b) entries.push({ tenant: h.tenant, kind: 'action', op: 'add', key: String(h.id), id: h.id, phases: h.phases, source: h.source });
    else {
      const changed = diffAction(b, h);
      if (changed) entries.push(changed);
    }
  }
  for (const [id, b] of baseAc) {
    if (!headAc.has(id)) entries.push({ tenant: b.tenant, kind: 'action', op: 'remove', key: String(b.id), id: b.id, phases: b.phases, source: b.source });
  }

  entries.sort(entryOrder);
  const warnings = [...extraWarnings, ...entries.flatMap(warningsFor), ...deactivationWarnings(entries)].sort(warningOrder);
  return { format_version: 1, entries, warnings, summary: summarize(entries, warnings) };
}

function summarize(entries: readonly DiffEntry[], warnings: readonly DiffWarning[]): DesiredDiffSummary {
  const count = (kind: DiffEntry['kind'], op: DiffEntry['op']) => entries.filter((e) => e.kind === kind && e.op === op).length;
  let phases = 0;
  for (const e of entries) {
    if (e.kind === 'action' && e.op === 'change') phases += e.appended.length;
  }
  return {
    firmwares_added: count('firmware', 'add'),
    firmwares_removed: count('firmware', 'remove'),
    firmwares_changed: count('firmware', 'change'),
    actions_added: count('action', 'add'),
    actions_removed: count('action', 'remove'),
    actions_changed: count('action', 'change'),
    phases_appended: phases,
    deactivations: entries.filter(deactivates).length,
    warnings: warnings.length,
  };
}

export function hasDifferences(diff: DesiredDiff): boolean {
  return diff.entries.length > 0;
}

/** The tenants that appear in the diff (entries or warnings), sorted. */
export function diffTenants(diff: DesiredDiff): string[] {
  const set = new Set<string>();
  for (const e of diff.entries) set.add(e.tenant);
  for (const w of diff.warnings) if (w.tenant !== '') set.add(w.tenant);
  return [...set].sort(cmp);
}
