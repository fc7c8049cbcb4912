// Saved plans (`plan --out`, `apply PLANFILE`): the plan plus a fingerprint of every live
// object it was computed from, so that applying it after the live state moved is refused
// before any write.
import { readRegularFile } from '../load/read-file.js';
import { MAX_FILE_SIZE } from '../limits.js';
import type {
  Change, DesiredRevision, DesiredState, LiveFingerprint, LiveState, Plan, SavedPlan,
} from '../model/index.js';
import { UserError } from '../errors.js';
import { canonicalJson, compareStrings, entriesText, liveObjectState } from '../core/canonical.js';
import { putBodyOver } from '../core/plan.js';
import { sha256 } from './digest.js';

export function toSavedPlan(
  p: Plan,
  desired: DesiredState,
  live: LiveState,
  meta: { toolVersion: string; createdAt: string; revision?: DesiredRevision },
): SavedPlan {
  return {
    format_version: 1,
    changes: p.changes,
    conflicts: p.conflicts,
    errors: p.errors,
    summary: p.summary,
    tool_version: meta.toolVersion,
    created_at: meta.createdAt,
    desired_digest: desiredDigest(desired),
    live_fingerprints: fingerprints(desired, live),
    ...(meta.revision ? { desired_revision: { commit: meta.revision.commit, dirty: meta.revision.dirty } } : {}),
  };
}

/** The desired state without where it was written: moving a document between files changes nothing. */
export function desiredDigest(desired: DesiredState): string {
  const firmwares = desired.firmwares.map(({ source: _s, ...rest }) => rest);
  const actions = desired.actions.map(({ source: _s, phaseSources: _p, ...rest }) => rest);
  return sha256(canonicalJson({ firmwares, actions }));
}

/** Every desired object of the tenants that were read, whether it is changed, unchanged or missing. */
function fingerprints(desired: DesiredState, live: LiveState): LiveFingerprint[] {
  const out: LiveFingerprint[] = [];
  for (const f of desired.firmwares) {
    if (!live.tenants.has(f.tenant)) continue;
    out.push({ tenant: f.tenant, kind: 'firmware', key: f.spec.version_number, digest: liveDigest(live, f.tenant, 'firmware', f.spec.version_number)! });
  }
  for (const a of desired.actions) {
    if (!live.tenants.has(a.tenant)) continue;
    out.push({ tenant: a.tenant, kind: 'action', key: String(a.id), digest: liveDigest(live, a.tenant, 'action', String(a.id))! });
  }
  return dedupe(out).sort(compareFingerprints);
}

/** sha256 of the object's canonical live state; undefined when its tenant was not read. */
function liveDigest(live: LiveState, tenant: string, kind: 'firmware' | 'action', key: string): string | undefined {
  if (!live.tenants.has(tenant)) return undefined;
  return sha256(liveObjectState(live, tenant, kind, key) ?? 'null');
}

function dedupe(list: LiveFingerprint[]): LiveFingerprint[] {
  const seen = new Set<string>();
  return list.filter((f) => {
    const k = `${f.tenant}\0${f.kind}\0${f.key}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function compareFingerprints(a: LiveFingerprint, b: LiveFingerprint): number {
  return compareStrings(a.tenant, b.tenant) || compareStrings(a.kind, b.kind) || compareStrings(a.key, b.key);
}

/** The objects whose live state is not what the plan was computed from, one sentence each, sorted. */
export function staleObjects(saved: SavedPlan, live: LiveState): string[] {
  const out: string[] = [];
  for (const f of saved.live_fingerprints) {
    const now = liveDigest(live, f.tenant, f.kind, f.key);
    if (now === undefined) out.push(`${f.kind} ${f.key} in ${f.tenant} was not read again`);
    else if (now !== f.digest) out.push(`${f.kind} ${f.key} in ${f.tenant} changed since the plan was made`);
  }
  return out;
}

/**
 * The writes of a saved plan that are not what its own changes and the live state it was made
 * from give, one sentence each: a change of an object the plan did not read, or a PUT body that
 * is not the change's `after` over the live record (a plan file edited after it was made, or
 * made by a tool that does not keep unmanaged fields). Checked once `staleObjects` found the
 * live state as the plan read it: the body is then exactly what plan would build.
 */
export function writesNotFromPlan(saved: SavedPlan, live: LiveState): string[] {
  const read = new Set(saved.live_fingerprints.map((f) => `${f.tenant}\0${f.kind}\0${f.key}`));
  const out: string[] = [];
  for (const c of saved.changes) {
    const what = c.kind === 'firmware' ? `firmware ${c.key} in ${c.tenant}` : `phase ${c.index} of action ${c.action_id} in ${c.tenant}`;
    // What is shown (key) must be what is written (action_id): a plan edited to say one and do another.
    if (c.kind !== 'firmware' && c.key !== String(c.action_id)) {
      out.push(`${what} is shown as action ${JSON.stringify(c.key)}`);
      continue;
    }
    if (!read.has(c.kind === 'firmware' ? `${c.tenant}\0firmware\0${c.key}` : `${c.tenant}\0action\0${c.action_id}`)) {
      out.push(`${what} is not among the objects the plan read`);
      continue;
    }
    if (c.kind !== 'firmware') continue;
    const records = live.tenants.get(c.tenant)?.firmwares.get(c.key) ?? [];
    const record = records.length === 1 && records[0]!.component_name === c.component_name ? records[0]! : undefined;
    const body = c.body as unknown as Record<string, unknown>;
    const expected = record === undefined ? undefined : putBodyOver(c.after, record);
    const fine = expected !== undefined
      && Object.keys(body).sort().join() === 'dependencies,is_deactivated,uncompressed_size'
      && body.is_deactivated === expected.is_deactivated
      && body.uncompressed_size === expected.uncompressed_size
      && Array.isArray(body.dependencies)
      && entriesText(body.dependencies as object[]) === entriesText(expected.dependencies);
    if (!fine) out.push(`the PUT body of ${what} is not its change over the live record (was the plan file edited?)`);
  }
  return out;
}

/** Stable text of a saved plan file (what `readSavedPlan` reads back). */
export function serializeSavedPlan(p: SavedPlan): string {
  return JSON.stringify(p, null, 2) + '\n';
}

export async function readSavedPlan(path: string): Promise<SavedPlan> {
  // Only a regular file, bounded while reading: a FIFO or /dev/zero given as the plan must not hang apply.
  const read = readRegularFile(path, { maxBytes: MAX_FILE_SIZE.max });
  if (!read.ok) throw new UserError(`cannot read the plan file ${path}: ${read.message.replace(/desired-state files are small, so this is probably not one: .*$/, 'this is not a saved plan')}; check the path given to apply`);
  const text = read.text;
  let value: unknown;
  try {
    value = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    throw notAPlan(path, 'it is not JSON');
  }
  return checkSavedPlan(path, value);
}

function notAPlan(path: string, why: string): UserError {
  return new UserError(`${path} is not a dus-sync saved plan: ${why}; make one with dus-sync plan --out FILE`);
}

function checkSavedPlan(path: string, value: unknown): SavedPlan {
  if (!isObject(value)) throw notAPlan(path, 'it is not a JSON object');
  if (!('format_version' in value)) throw notAPlan(path, 'it has no format_version');
  if (value.format_version !== 1) {
    throw new UserError(`${path} has format_version ${JSON.stringify(value.format_version)} but this dus-sync reads format_version 1; make the plan again with this version`);
  }
  for (const field of ['tool_version', 'created_at', 'desired_digest'] as const) {
    if (typeof value[field] !== 'string') throw notAPlan(path, `it has no ${field} (a plan printed with --format json is not a saved plan)`);
  }
  for (const field of ['changes', 'conflicts', 'errors', 'live_fingerprints'] as const) {
    if (!Array.isArray(value[field])) throw notAPlan(path, `${field} is not a list`);
  }
  if (!isObject(value.summary)) throw notAPlan(path, 'it has no summary');
  if ('desired_revision' in value) {
    const r = value.desired_revision;
    if (!isObject(r) || typeof r.commit !== 'string' || !/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(r.commit) || typeof r.dirty !== 'boolean') {
      throw notAPlan(path, 'its desired_revision is not a commit id and a dirty flag');
    }
  }
  const changes = (value.changes as unknown[]).map((c, i) => checkChange(path, c, i));
  (value.live_fingerprints as unknown[]).forEach((f, i) => {
    if (!isObject(f) || typeof f.tenant !== 'string' || (f.kind !== 'firmware' && f.kind !== 'action')
      || typeof f.key !== 'string' || typeof f.digest !== 'string') {
      throw notAPlan(path, `live_fingerprints[${i}] is malformed`);
    }
  });
  return { ...(value as unknown as SavedPlan), changes };
}

function checkChange(path: string, c: unknown, i: number): Change {
  const bad = (why: string): UserError => notAPlan(path, `changes[${i}] ${why}`);
  if (!isObject(c) || typeof c.tenant !== 'string' || typeof c.key !== 'string') throw bad('has no tenant or key');
  if (c.kind === 'firmware' && c.op === 'update') {
    const b = c.body;
    if (!isObject(b) || typeof b.is_deactivated !== 'boolean' || typeof b.uncompressed_size !== 'number' || !Array.isArray(b.dependencies)) {
      throw bad('has no complete body (is_deactivated, uncompressed_size, dependencies)');
    }
    if (typeof c.component_name !== 'string') throw bad('has no component_name');
    return c as unknown as Change;
  }
  if (c.kind === 'phase' && c.op === 'append') {
    const a = c.after;
    if (!isObject(a) || typeof a.name !== 'string') throw bad('has no phase to append');
    if (typeof c.index !== 'number' || !Number.isInteger(c.index) || c.index < 0) throw bad('has no valid index');
    const actionId = typeof c.action_id === 'number' ? c.action_id : Number(c.key);
    if (!Number.isInteger(actionId)) throw bad('has no valid action id');
    const after = { name: a.name, trigger_on: isObject(a.trigger_on) ? a.trigger_on : {}, info: isObject(a.info) ? a.info : {} };
    return { ...(c as unknown as Change), action_id: actionId, after } as Change;
  }
  throw bad('is neither a firmware update nor a phase append');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
