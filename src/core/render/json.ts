// The plan JSON of SPEC section 2 (format_version 1). Field order is fixed here, SPEC fields
// first and additions after them, so that the same plan always serialises to the same bytes.
import type { BrokenDependency, Change, Conflict, DesiredRevision, FirmwareFields, Held, Plan, PlanError, SourceLocation } from '../../model/index.js';
import { sortDependencies, sortKeysDeep } from '../canonical.js';

function fields(f: FirmwareFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (f.is_deactivated !== undefined) out.is_deactivated = f.is_deactivated;
  if (f.uncompressed_size !== undefined) out.uncompressed_size = f.uncompressed_size;
  if (f.dependencies !== undefined) out.dependencies = sortDependencies(f.dependencies);
  return out;
}

function source(s: SourceLocation | undefined): Record<string, unknown> {
  return s ? { source: { file: s.file, line: s.line, column: s.column } } : {};
}

function changeJson(change: Change): Record<string, unknown> {
  switch (change.kind) {
    case 'firmware':
      return {
        tenant: change.tenant,
        kind: change.kind,
        op: change.op,
        key: change.key,
        before: fields(change.before),
        after: fields(change.after),
        component_name: change.component_name,
        body: {
          is_deactivated: change.body.is_deactivated,
          uncompressed_size: change.body.uncompressed_size,
          dependencies: change.body.dependencies.map((d) => ({ component_name: d.component_name, min_version: d.min_version })),
        },
        ...source(change.source),
      };
    case 'phase':
      return {
        tenant: change.tenant,
        kind: change.kind,
        op: change.op,
        key: change.key,
        index: change.index,
        after: {
          name: change.after.name,
          trigger_on: sortKeysDeep(change.after.trigger_on),
          info: sortKeysDeep(change.after.info),
        },
        action_id: change.action_id,
        ...source(change.source),
      };
  }
}

function conflictJson(c: Conflict): Record<string, unknown> {
  return {
    tenant: c.tenant,
    kind: c.kind,
    key: c.key,
    message: c.message,
    ...(c.index !== undefined ? { index: c.index } : {}),
    ...source(c.source),
  };
}

function errorJson(e: PlanError): Record<string, unknown> {
  return { tenant: e.tenant, kind: e.kind, key: e.key, message: e.message, ...source(e.source) };
}

function heldJson(h: Held): Record<string, unknown> {
  return {
    tenant: h.tenant,
    kind: h.kind,
    key: h.key,
    reason: h.reason,
    message: h.message,
    pending: h.pending,
    ...(h.index !== undefined ? { index: h.index } : {}),
    ...(h.window !== undefined ? { window: h.window } : {}),
    ...(h.until !== undefined ? { until: h.until } : {}),
    ...source(h.source),
  };
}

function brokenJson(b: BrokenDependency): Record<string, unknown> {
  return { tenant: b.tenant, key: b.key, dependent: b.dependent, component_name: b.component_name, min_version: b.min_version };
}

/** The plan as a plain object in SPEC field order (for callers that add fields, e.g. saved plans). */
export function planToJson(plan: Plan): Record<string, unknown> {
  const s = plan.summary;
  return {
    format_version: 1,
    changes: plan.changes.map(changeJson),
    conflicts: plan.conflicts.map(conflictJson),
    errors: plan.errors.map(errorJson),
    summary: {
      changes: s.changes,
      conflicts: s.conflicts,
      errors: s.errors,
      unchanged: s.unchanged,
      ...(s.unchanged_by_tenant ? { unchanged_by_tenant: sortKeysDeep(s.unchanged_by_tenant) } : {}),
      ...(s.held !== undefined ? { held: s.held } : {}),
    },
    ...(plan.held && plan.held.length > 0 ? { held: plan.held.map(heldJson) } : {}),
    ...(plan.broken_dependencies && plan.broken_dependencies.length > 0 ? { broken_dependencies: plan.broken_dependencies.map(brokenJson) } : {}),
  };
}

/** The git revision of the desired state, as plan JSON and saved plans carry it. */
export function revisionJson(r: DesiredRevision | undefined): Record<string, unknown> {
  return r ? { desired_revision: { commit: r.commit, dirty: r.dirty } } : {};
}

/**
 * `suspended`: the config has `suspend: true` (the field is there only then, as `true`).
 * `revision`: the desired state's git commit (`desired_revision`, there only inside git).
 */
export function renderJson(plan: Plan, opts: { suspended?: boolean; revision?: DesiredRevision } = {}): string {
  return JSON.stringify({ ...planToJson(plan), ...(opts.suspended ? { suspended: true } : {}), ...revisionJson(opts.revision) }, null, 2) + '\n';
}
