// After an apply: read the touched objects again and compare them with what the run meant to
// leave. Pure: the caller fetches. A firmware the run wrote must hold the values it sent; an
// action must still be the YAML's first phases (a phase twice or a foreign phase is a divergence,
// a failure); a phase the API accepted must show in reads.
import type { ApplyReport, Change, DesiredState, LiveState, Phase, PhaseSpec, Plan } from '../model/index.js';
import { canonicalJson, clip, normalizePhase, sortDependencies } from '../core/canonical.js';
import { phaseDigestInput } from '../core/canonical.js';

export interface Verified {
  readonly unconverged: string[];
  readonly diverged: string[];
  /**
   * The objects (objectId) every change of which was applied and which the reads after the
   * apply show as written: a firmware with the values sent, an action with the YAML's first
   * phases and each appended one. Not an object with a change failed, skipped or in doubt.
   */
  readonly verified: string[];
}

/** One desired object of a plan: a firmware version or an action of a tenant (its changes, or its phase appends, are one object). */
export function objectId(tenant: string, kind: 'firmware' | 'action', key: string): string {
  return `${tenant}\0${kind}\0${key}`;
}

/** The object a change is made to. */
export function objectOf(c: Change): string {
  return objectId(c.tenant, c.kind === 'firmware' ? 'firmware' : 'action', c.key);
}

/** The objects a set of changes touches, as a desired state, so that exactly those are fetched again. */
export function touchedObjects(changes: readonly Change[]): DesiredState {
  const source = { file: '(apply)', line: 1, column: 1 };
  const firmwares = new Map<string, DesiredState['firmwares'][number]>();
  const actions = new Map<string, DesiredState['actions'][number]>();
  for (const c of changes) {
    if (c.kind === 'firmware') firmwares.set(`${c.tenant}\0${c.key}`, { kind: 'firmware', tenant: c.tenant, labels: {}, source, spec: { version_number: c.key } });
    else actions.set(`${c.tenant}\0${c.action_id}`, { kind: 'action', tenant: c.tenant, labels: {}, source, id: c.action_id, phases: [] });
  }
  return { firmwares: [...firmwares.values()], actions: [...actions.values()], files: [] };
}

/** The prefix of an action's diverged sentences, so that one action is named once. */
export function divergedPrefix(tenant: string, actionId: number): string {
  return `action ${actionId} in ${tenant}:`;
}

const text = (p: PhaseSpec | Phase): string => phaseDigestInput(normalizePhase(p));

export function verifyApplied(plan: Plan, report: ApplyReport, baseline: LiveState, after: LiveState): Verified {
  const unconverged: string[] = [];
  const diverged: string[] = [];
  const verified: string[] = [];
  const status = new Map(report.results.map((r) => [r.change, r.status] as const));
  // A firmware version is verified when each of its records the plan changed was written and reads back so.
  const firmwareOk = new Map<string, boolean>();
  for (const c of plan.changes) {
    if (c.kind !== 'firmware') continue;
    const id = objectOf(c);
    if (status.get(c) !== 'applied') { firmwareOk.set(id, false); continue; }
    const record = (after.tenants.get(c.tenant)?.firmwares.get(c.key) ?? []).find((r) => r.component_name === c.component_name);
    const ok = record !== undefined && record.is_deactivated === c.body.is_deactivated && record.uncompressed_size === c.body.uncompressed_size
      && canonicalJson(sortDependencies(record.dependencies)) === canonicalJson(sortDependencies(c.body.dependencies));
    if (!ok) unconverged.push(`firmware ${c.key} in ${c.tenant} does not have the values that were written`);
    firmwareOk.set(id, (firmwareOk.get(id) ?? true) && ok);
  }
  for (const [id, ok] of firmwareOk) if (ok) verified.push(id);
  const byAction = new Map<string, Extract<Change, { kind: 'phase' }>[]>();
  for (const c of plan.changes) {
    if (c.kind !== 'phase') continue;
    const key = `${c.tenant}\0${c.action_id}`;
    byAction.set(key, [...(byAction.get(key) ?? []), c]);
  }
  for (const appends of byAction.values()) {
    const { tenant, action_id: id } = appends[0]!;
    const base = baseline.tenants.get(tenant)?.actions.get(id);
    const now = after.tenants.get(tenant)?.actions.get(id);
    if (!base || !now) continue;
    const expected = [...base.phases, ...appends.sort((a, b) => a.index - b.index).map((a) => a.after)].map(text);
    const live = now.phases.map(text);
    const prefix = live.length <= expected.length && live.every((p, i) => p === expected[i]);
    if (!prefix) {
      if (report.diverged.some((d) => d.startsWith(divergedPrefix(tenant, id)))) continue;
      const twice = live.length > new Set(live).size;
      diverged.push(`${divergedPrefix(tenant, id)} no longer the YAML's first phases after apply: its ${live.length} live phases are ${clip(now.phases.map((p) => clip(JSON.stringify(p.name), 60)).join(', '), 400)}${twice ? ' (a phase twice)' : ''}; another actor appended at the same time, and phases cannot be removed: fix the action in the service and the YAML`);
      continue;
    }
    let shown = true;
    for (const c of appends) {
      if (status.get(c) !== 'applied') shown = false;
      else if (c.index >= live.length) {
        shown = false;
        unconverged.push(`phase ${c.index} "${c.after.name}" of action ${id} in ${tenant} was accepted by the API but its reads do not show it yet`);
      }
    }
    if (shown && !report.diverged.some((d) => d.startsWith(divergedPrefix(tenant, id)))) verified.push(objectOf(appends[0]!));
  }
  return { unconverged, diverged, verified };
}
