// Words shared by the plan renderers, so that text, markdown and the apply report name things alike.
import type { Change, Conflict, Dependency, FirmwareFields, Held, Plan, PlanError } from '../../model/index.js';
import { canonicalJson, compareStrings } from '../canonical.js';

export function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "firmware 2.4.1 (modem)" or "phase 2 "wave-2" on action 42". */
export function describeChange(change: Change): string {
  switch (change.kind) {
    case 'firmware':
      return `firmware ${change.key} (${change.component_name})`;
    case 'phase':
      return `phase ${change.index} ${JSON.stringify(change.after.name)} on action ${change.key}`;
  }
}

export function describeObject(item: Conflict | PlanError): string {
  return `${item.kind} ${item.key}`;
}

export function describeSource(item: { readonly source?: { file: string; line: number } }): string | undefined {
  return item.source ? `${item.source.file}:${item.source.line}` : undefined;
}

/** A managed field value as one line; a field absent from before was unknown (null) live. */
export function formatField(fields: FirmwareFields, name: 'is_deactivated' | 'uncompressed_size'): string {
  const value = fields[name];
  return value === undefined ? '(unknown)' : canonicalJson(value);
}

export const SCALAR_FIELDS = ['is_deactivated', 'uncompressed_size'] as const;

export interface DependencyEdit {
  readonly sign: '+' | '-' | '~';
  readonly component: string;
  readonly before?: string;
  readonly after?: string;
}

function byComponent(deps: readonly Dependency[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const d of deps) out.set(d.component_name, [...(out.get(d.component_name) ?? []), d.min_version]);
  return out;
}

/** Dependencies as set edits keyed by component: added, removed, or a changed min_version. */
export function dependencyEdits(before: readonly Dependency[], after: readonly Dependency[]): DependencyEdit[] {
  const was = byComponent(before);
  const will = byComponent(after);
  const components = [...new Set([...was.keys(), ...will.keys()])].sort(compareStrings);
  const edits: DependencyEdit[] = [];
  for (const component of components) {
    const from = was.get(component) ?? [];
    const to = will.get(component) ?? [];
    if (from.length === 1 && to.length === 1) {
      if (from[0] !== to[0]) edits.push({ sign: '~', component, before: from[0], after: to[0] });
      continue;
    }
    // Several entries for one component only happen with bad live data; show them as plain set edits.
    for (const v of from) if (!to.includes(v)) edits.push({ sign: '-', component, before: v });
    for (const v of to) if (!from.includes(v)) edits.push({ sign: '+', component, after: v });
  }
  return edits;
}

export interface TenantCounts {
  firmwareUpdates: number;
  phaseAppends: number;
  conflicts: number;
  errors: number;
}

export function countsOf(changes: readonly Change[], conflicts: number, errors: number): TenantCounts {
  return {
    firmwareUpdates: changes.filter((c) => c.kind === 'firmware').length,
    phaseAppends: changes.filter((c) => c.kind === 'phase').length,
    conflicts,
    errors,
  };
}

/** "Plan: 3 firmware updates, 3 phase appends, 1 conflict. 190 unchanged." or "No changes. 37 unchanged." */
/**
 * Said first when the config has `suspend: true`: the plan is what apply would do, but apply and
 * watch write nothing while it is set, and a plan that looks normal would say otherwise.
 */
export const SUSPENDED = 'apply and watch write nothing while the config has suspend: true; this plan is what they would do once it is removed.';

export function summaryLine(plan: Plan): string {
  const c = countsOf(plan.changes, plan.conflicts.length, plan.errors.length);
  const parts = [
    c.firmwareUpdates > 0 ? plural(c.firmwareUpdates, 'firmware update', 'firmware updates') : '',
    c.phaseAppends > 0 ? plural(c.phaseAppends, 'phase append', 'phase appends') : '',
    c.conflicts > 0 ? plural(c.conflicts, 'conflict', 'conflicts') : '',
    c.errors > 0 ? plural(c.errors, 'error', 'errors') : '',
    (plan.held?.length ?? 0) > 0 ? `${plan.held!.length} held` : '',
  ].filter((p) => p !== '');
  const unchanged = `${plan.summary.unchanged} unchanged.`;
  return parts.length === 0 ? `No changes. ${unchanged}` : c.firmwareUpdates + c.phaseAppends + c.conflicts + c.errors === 0 ? `No changes, ${parts.join(', ')}. ${unchanged}` : `Plan: ${parts.join(', ')}. ${unchanged}`;
}

/** Every tenant the plan mentions, sorted. */
export function tenantsOf(plan: Plan): string[] {
  const names = new Set<string>();
  for (const item of [...plan.changes, ...plan.conflicts, ...plan.errors, ...(plan.held ?? [])]) names.add(item.tenant);
  return [...names].sort(compareStrings);
}

/** The changes, conflicts and errors of one tenant, in plan order. */
export function sectionOf(plan: Plan, tenant: string) {
  return {
    changes: plan.changes.filter((c) => c.tenant === tenant),
    conflicts: plan.conflicts.filter((c) => c.tenant === tenant),
    errors: plan.errors.filter((e) => e.tenant === tenant),
    held: (plan.held ?? []).filter((h) => h.tenant === tenant),
  };
}

/** What a held object waits for, in one line: "held (paused) action 42: …". */
export function describeHeld(h: Held): string {
  return `held (${h.reason}) ${h.kind} ${h.key}: ${h.message}`;
}
