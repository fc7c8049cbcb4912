// Request body checks with Django REST Framework's error shapes ({field: [messages]}), so the
// client meets the same kind of 400 it would meet from the real service.
import type { FirmwarePatch, PhaseObject } from './store.js';

export type Checked<T> = { ok: true; value: T } | { ok: false; errors: Record<string, unknown> };

/** DRF names types the Python way in its messages. */
function pyType(v: unknown): string {
  if (v === null) return 'NoneType';
  if (Array.isArray(v)) return 'list';
  switch (typeof v) {
    case 'string': return 'str';
    case 'boolean': return 'bool';
    case 'number': return Number.isInteger(v) ? 'int' : 'float';
    default: return 'dict';
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const notDict = (v: unknown) => ({ non_field_errors: [`Invalid data. Expected a dictionary, but got ${pyType(v)}.`] });

function stringField(v: unknown, required: boolean): string[] | undefined {
  if (v === undefined) return required ? ['This field is required.'] : undefined;
  if (v === null) return ['This field may not be null.'];
  if (typeof v !== 'string') return ['Not a valid string.'];
  if (v === '') return ['This field may not be blank.'];
  return undefined;
}

function dependencyErrors(v: unknown): Record<string, unknown> {
  if (!isObject(v)) return notDict(v);
  const errors: Record<string, unknown> = {};
  for (const key of ['component_name', 'min_version']) {
    const e = stringField(v[key], true);
    if (e) errors[key] = e;
  }
  return errors;
}

function dependenciesField(v: unknown): unknown {
  if (v === null) return ['This field may not be null.'];
  if (!Array.isArray(v)) return [`Expected a list of items but got type "${pyType(v)}".`];
  const each = v.map(dependencyErrors);
  return each.some((e) => Object.keys(e).length > 0) ? each : undefined;
}

/** PUT /firmwares/{version-number}: every field optional (an omitted field is kept), typed strictly. */
export function checkFirmwarePatch(body: unknown): Checked<FirmwarePatch> {
  if (!isObject(body)) return { ok: false, errors: notDict(body) };
  const errors: Record<string, unknown> = {};
  const { is_deactivated: deact, uncompressed_size: size, dependencies: deps } = body;
  if (deact !== undefined && typeof deact !== 'boolean') {
    errors.is_deactivated = [deact === null ? 'This field may not be null.' : 'Must be a valid boolean.'];
  }
  if (size !== undefined) {
    if (size === null) errors.uncompressed_size = ['This field may not be null.'];
    else if (typeof size !== 'number' || !Number.isSafeInteger(size)) errors.uncompressed_size = ['A valid integer is required.'];
    else if (size < 0) errors.uncompressed_size = ['Ensure this value is greater than or equal to 0.'];
  }
  if (deps !== undefined) {
    const e = dependenciesField(deps);
    if (e) errors.dependencies = e;
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  const patch: FirmwarePatch = {};
  if (typeof deact === 'boolean') patch.is_deactivated = deact;
  if (typeof size === 'number') patch.uncompressed_size = size;
  if (Array.isArray(deps)) {
    patch.dependencies = (deps as Record<string, string>[]).map((d) => ({ component_name: d.component_name!, min_version: d.min_version! }));
  }
  return { ok: true, value: patch };
}

function dictField(v: unknown): string[] | undefined {
  if (v === undefined || isObject(v)) return undefined;
  if (v === null) return ['This field may not be null.'];
  return [`Expected a dictionary of items but got type "${pyType(v)}".`];
}

/** POST /actions/{id}/append_phase: name required; trigger_on and info objects, {} when omitted. */
export function checkPhase(body: unknown): Checked<PhaseObject> {
  if (!isObject(body)) return { ok: false, errors: notDict(body) };
  const errors: Record<string, unknown> = {};
  const name = stringField(body.name, true);
  if (name) errors.name = name;
  const trigger = dictField(body.trigger_on);
  if (trigger) errors.trigger_on = trigger;
  const info = dictField(body.info);
  if (info) errors.info = info;
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return {
    ok: true,
    value: {
      name: body.name as string,
      trigger_on: (body.trigger_on ?? {}) as Record<string, unknown>,
      info: (body.info ?? {}) as Record<string, unknown>,
    },
  };
}
