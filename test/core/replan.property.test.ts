// watch's incremental plan (src/core/replan.ts) against the whole plan: after an edit and a
// live view that moved only in the touched objects, replan() must give exactly plan().
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { plan } from '../../src/core/plan.js';
import { editBetween, replan } from '../../src/core/replan.js';
import type { DesiredAction, DesiredFirmware, LiveFirmware, Action } from '../../src/model/index.js';
import { action, dep, desired, firmware, live, liveAction, liveFirmware } from './builders.js';

const VERSIONS = ['1.0.0', '1.1.0', '1.2.0', '2.0.0', '2.1.0'];
const TENANTS = ['acme', 'beta'];
const NOW = Date.parse('2025-03-03T10:00:00Z');

const liveRecord = fc.record({
  version_number: fc.constantFrom(...VERSIONS),
  component_name: fc.constantFrom('boot', 'modem'),
  is_deactivated: fc.boolean(),
  uncompressed_size: fc.constantFrom(1000, 2000),
  dependencies: fc.array(fc.record({ component_name: fc.constantFrom('boot', 'modem'), min_version: fc.constantFrom(...VERSIONS) }), { maxLength: 1 }),
});
const desiredFw = fc.record({
  tenant: fc.constantFrom(...TENANTS),
  version: fc.constantFrom(...VERSIONS),
  is_deactivated: fc.option(fc.boolean(), { nil: undefined }),
  uncompressed_size: fc.option(fc.constantFrom(1000, 2000), { nil: undefined }),
  dependencies: fc.option(fc.array(fc.record({ component_name: fc.constantFrom('boot', 'modem'), min_version: fc.constantFrom(...VERSIONS) }), { maxLength: 1 }), { nil: undefined }),
});
const desiredAct = fc.record({
  tenant: fc.constantFrom(...TENANTS),
  id: fc.integer({ min: 1, max: 3 }),
  phases: fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 3 }),
  paused: fc.boolean(),
  gated: fc.boolean(),
});
const liveAct = fc.record({ id: fc.integer({ min: 1, max: 3 }), phases: fc.array(fc.constantFrom('a', 'b', 'x'), { maxLength: 3 }), triggered: fc.boolean() });

type Fw = { tenant: string; version: string; is_deactivated?: boolean; uncompressed_size?: number; dependencies?: { component_name: string; min_version: string }[] };
type Act = { tenant: string; id: number; phases: string[]; paused: boolean; gated: boolean };
const toFw = (f: Fw): DesiredFirmware => firmware({
  version_number: f.version,
  ...(f.is_deactivated !== undefined ? { is_deactivated: f.is_deactivated } : {}),
  ...(f.uncompressed_size !== undefined ? { uncompressed_size: f.uncompressed_size } : {}),
  ...(f.dependencies !== undefined ? { dependencies: f.dependencies.map((d) => dep(d.component_name, d.min_version)) } : {}),
}, { tenant: f.tenant });
const toAct = (a: Act): DesiredAction => ({ ...action(a.id, a.phases, { tenant: a.tenant }), ...(a.paused ? { paused: true } : {}), ...(a.gated ? { pacing: 'gated' as const } : {}) });
const uniq = <T,>(xs: T[], key: (x: T) => string): T[] => [...new Map(xs.map((x) => [key(x), x])).values()];
const fwKey = (f: Fw) => `${f.tenant}/${f.version}`;
const actKey = (a: Act) => `${a.tenant}/${a.id}`;

function liveOf(records: Record<string, Omit<LiveFirmware, 'firmware_id' | 'bundles'>[]>, actions: Record<string, { id: number; phases: string[]; triggered: boolean }[]>) {
  return live(Object.fromEntries(TENANTS.map((t) => [t, {
    firmwares: uniq(records[t] ?? [], (r) => r.version_number).map((r) => liveFirmware(r)),
    actions: uniq(actions[t] ?? [], (a) => String(a.id)).map((a): Action => liveAction(a.id, a.phases, { phases_triggered: a.phases.map(() => a.triggered) } as Partial<Action>)),
  }])));
}

describe('replan', () => {
  it('equals the whole plan after an edit, when live moved only in the touched objects', () => {
    fc.assert(fc.property(
      fc.array(desiredFw, { maxLength: 6 }), fc.array(desiredAct, { maxLength: 3 }),
      fc.dictionary(fc.constantFrom(...TENANTS), fc.array(liveRecord, { maxLength: 5 })),
      fc.dictionary(fc.constantFrom(...TENANTS), fc.array(liveAct, { maxLength: 3 })),
      fc.array(desiredFw, { maxLength: 3 }), fc.array(desiredAct, { maxLength: 2 }), fc.array(fc.nat(8), { maxLength: 3 }),
      fc.dictionary(fc.constantFrom(...TENANTS), fc.array(liveRecord, { maxLength: 3 })),
      fc.dictionary(fc.constantFrom(...TENANTS), fc.array(liveAct, { maxLength: 2 })),
      fc.boolean(),
      (fws0, acts0, recs0, lacts0, newFws, newActs, removals, recsMoved, lactsMoved, allow) => {
        const fws1 = uniq(fws0, fwKey);
        const acts1 = uniq(acts0, actKey);
        const options = { now: NOW, allowBrokenDependencies: allow, triggeredSince: () => NOW - 1000 };
        // Objects of files the edit did not touch are the very same objects in both loads (watch's cache).
        const objects1 = new Map<string, DesiredFirmware | DesiredAction>([...fws1.map((f) => [fwKey(f), toFw(f)] as const), ...acts1.map((a) => [actKey(a), toAct(a)] as const)]);
        const d1 = desired(...objects1.values());
        const l1 = liveOf(recs0, lacts0);
        const before = plan(d1, l1, options);
        // The edit: some objects replaced or added, some removed.
        const removed = new Set(removals.map((i) => [...objects1.keys()][i]).filter((k) => k !== undefined));
        const objects2 = new Map([...objects1].filter(([k]) => !removed.has(k)));
        for (const f of uniq(newFws, fwKey)) objects2.set(fwKey(f), toFw(f));
        for (const a of uniq(newActs, actKey)) objects2.set(actKey(a), toAct(a));
        const d2 = desired(...objects2.values());
        // watch reads everything when the tenants change (its view is per set of tenants).
        const tenantsOf = (d: typeof d1) => [...new Set([...d.firmwares, ...d.actions].map((o) => o.tenant))].sort().join();
        fc.pre(tenantsOf(d1) === tenantsOf(d2));
        const touched = {
          firmwares: newFws.map((f) => ({ tenant: f.tenant, version: f.version })),
          actions: newActs.map((a) => ({ tenant: a.tenant, id: a.id })),
        };
        // Live moves only in touched objects (re-read by the targeted reads).
        const recs2: Record<string, Omit<LiveFirmware, 'firmware_id' | 'bundles'>[]> = {};
        const lacts2: Record<string, { id: number; phases: string[]; triggered: boolean }[]> = {};
        for (const t of TENANTS) {
          const moved = (recsMoved[t] ?? []).filter((r) => touched.firmwares.some((f) => f.tenant === t && f.version === r.version_number));
          recs2[t] = uniq([...(recs0[t] ?? []).filter((r) => !moved.some((m) => m.version_number === r.version_number)), ...moved], (r) => r.version_number);
          const movedA = (lactsMoved[t] ?? []).filter((a) => touched.actions.some((x) => x.tenant === t && x.id === a.id));
          lacts2[t] = uniq([...(lacts0[t] ?? []).filter((a) => !movedA.some((m) => m.id === a.id)), ...movedA], (a) => String(a.id));
        }
        // uniq keeps the last: put the moved ones last so that they win (done above).
        const l2 = liveOf(recs2, lacts2);
        expect(replan(before, editBetween(d1, d2), l2, touched, options)).toEqual(plan(d2, l2, options));
      },
    ), { numRuns: 500 });
  });
});
