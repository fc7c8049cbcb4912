// Rollout control in the planner (docs/rollout-control.md): pause, gated pacing, sync windows,
// dependency integrity. Pure: the time and the first-seen trigger times are passed in.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { atLeast } from '../../src/core/version-order.js';
import { plan } from '../../src/core/plan.js';
import { windowHold } from '../../src/core/windows.js';
import type { DesiredAction } from '../../src/model/index.js';
import { action, dep, desired, firmware, live, liveAction, liveFirmware } from './builders.js';

const T0 = Date.parse('2025-03-03T10:00:00Z'); // a Monday

function gated(a: DesiredAction, minSoakMs?: number): DesiredAction {
  return { ...a, pacing: 'gated', ...(minSoakMs !== undefined ? { minSoakMs } : {}) };
}

describe('pause', () => {
  it('holds every append of a paused action and says so; resumes when unpaused', () => {
    const d = desired({ ...action(42, ['canary', 'wave-1', 'wave-2']), paused: true });
    const l = live({ acme: { actions: [liveAction(42, ['canary'])] } });
    const p = plan(d, l);
    expect(p.changes).toEqual([]);
    expect(p.held).toEqual([expect.objectContaining({ tenant: 'acme', kind: 'action', key: '42', reason: 'paused', pending: 2, index: 1 })]);
    expect(p.summary).toMatchObject({ changes: 0, unchanged: 0, held: 1 });
    expect(plan(desired(action(42, ['canary', 'wave-1', 'wave-2'])), l).changes.map((c) => c.kind === 'phase' && c.index)).toEqual([1, 2]);
  });

  it('a paused action in sync is unchanged, and a conflict is still a conflict', () => {
    expect(plan(desired({ ...action(42, ['canary']), paused: true }), live({ acme: { actions: [liveAction(42, ['canary'])] } })).summary).toMatchObject({ unchanged: 1 });
    const p = plan(desired({ ...action(42, ['other', 'x']), paused: true }), live({ acme: { actions: [liveAction(42, ['canary'])] } }));
    expect(p.conflicts).toHaveLength(1);
    expect(p.held).toBeUndefined();
  });
});

describe('gated pacing', () => {
  const d = (soak?: number) => desired(gated(action(7, ['canary', 'wave-1', 'wave-2']), soak));

  it('appends only the first phase of an empty action', () => {
    const p = plan(d(), live({ acme: { actions: [liveAction(7, [])] } }), { now: T0 });
    expect(p.changes.map((c) => c.kind === 'phase' && c.index)).toEqual([0]);
  });

  it('waits while the previous phase has not triggered', () => {
    const p = plan(d(), live({ acme: { actions: [liveAction(7, ['canary'], { phases_triggered: [false] })] } }), { now: T0 });
    expect(p.changes).toEqual([]);
    expect(p.held![0]).toMatchObject({ reason: 'gated', index: 1, pending: 2 });
    expect(p.held![0]!.message).toContain('waits until phase 0 "canary" has triggered');
  });

  it('appends one phase once the previous triggered and soaked, not before', () => {
    const l = live({ acme: { actions: [liveAction(7, ['canary'], { phases_triggered: [true] })] } });
    const since = () => T0;
    const early = plan(d(3_600_000), l, { now: T0 + 60_000, triggeredSince: since });
    expect(early.changes).toEqual([]);
    expect(early.held![0]).toMatchObject({ reason: 'gated', until: '2025-03-03T11:00:00.000Z' });
    const later = plan(d(3_600_000), l, { now: T0 + 3_600_000, triggeredSince: since });
    expect(later.changes.map((c) => c.kind === 'phase' && c.index)).toEqual([1]);
    expect(plan(d(), l, { now: T0 }).changes).toHaveLength(1);
  });

  it('a first-seen time that is no date counts as unknown, and one at the end of the dates holds without until; the plan goes on', () => {
    const l = live({ acme: { actions: [liveAction(7, ['canary'], { phases_triggered: [true] }), liveAction(8, [])] } });
    const both = desired(gated(action(7, ['canary', 'wave-1']), 3_600_000), action(8, ['unrelated']));
    for (const bad of [NaN, Infinity, -Infinity, 1e20, -8.64e15 - 1]) {
      const p = plan(both, l, { now: T0, triggeredSince: () => bad });
      expect(p.changes.map((c) => c.kind === 'phase' && `${c.key}:${c.index}`)).toEqual(['8:0']);
      expect(p.held![0]!.message).toContain('is not known yet');
    }
    const edge = plan(both, l, { now: T0, triggeredSince: () => 8.64e15 });
    expect(edge.changes).toHaveLength(1);
    expect(edge.held![0]).toMatchObject({ reason: 'gated' });
    expect(edge.held![0]!.until).toBeUndefined();
  });
});

describe('sync windows', () => {
  const change = () => desired(action(42, ['canary', 'wave-1']));
  const l = live({ acme: { actions: [liveAction(42, ['canary'])] } });

  it('a deny window that is open holds the writes until it closes', () => {
    const windows = [{ name: 'freeze', kind: 'deny' as const, schedule: '0 9 * * 1', durationMs: 2 * 3_600_000 }];
    const p = plan(change(), l, { now: T0, windows });
    expect(p.changes).toEqual([]);
    expect(p.held![0]).toMatchObject({ reason: 'window', window: 'freeze', until: '2025-03-03T11:00:00.000Z' });
    expect(p.held![0]!.message).toContain('held by deny window freeze until 2025-03-03T11:00:00.000Z');
    expect(plan(change(), l, { now: T0 + 2 * 3_600_000, windows }).changes).toHaveLength(1);
  });

  it('outside every allow window, writes wait for the next opening (in its time zone)', () => {
    const windows = [{ name: 'nightly', kind: 'allow' as const, schedule: '0 22 * * *', durationMs: 3_600_000, timezone: 'Europe/Berlin' }];
    const hold = windowHold(windows, 'acme', 'action', T0);
    expect(hold).toMatchObject({ window: 'nightly', until: Date.parse('2025-03-03T21:00:00Z') });
    expect(windowHold(windows, 'acme', 'action', Date.parse('2025-03-03T21:30:00Z'))).toBeUndefined();
    expect(windowHold([{ ...windows[0]!, tenants: ['other'] }], 'acme', 'action', T0)).toBeUndefined();
    expect(windowHold([{ ...windows[0]!, kinds: ['firmware'] }], 'acme', 'action', T0)).toBeUndefined();
  });
});

describe('dependency integrity', () => {
  const records = [
    liveFirmware({ version_number: '1.0.0', component_name: 'bootloader' }),
    liveFirmware({ version_number: '1.2.0', component_name: 'bootloader' }),
    liveFirmware({ version_number: '2.4.1', component_name: 'modem', dependencies: [dep('bootloader', '1.1.0')] }),
  ];

  it('deactivating the only firmware that satisfies an active dependency is an error on it', () => {
    const p = plan(desired(firmware({ version_number: '1.2.0', is_deactivated: true })), live({ acme: { firmwares: records } }));
    expect(p.changes).toEqual([]);
    expect(p.errors[0]).toMatchObject({ kind: 'firmware', key: '1.2.0' });
    expect(p.errors[0]!.message).toContain('modem 2.4.1 (needs bootloader >= 1.1.0)');
    expect(p.errors[0]!.message).toContain('--allow-broken-dependencies');
  });

  it('is allowed with allowBrokenDependencies, and listed', () => {
    const p = plan(desired(firmware({ version_number: '1.2.0', is_deactivated: true })), live({ acme: { firmwares: records } }), { allowBrokenDependencies: true });
    expect(p.changes).toHaveLength(1);
    expect(p.broken_dependencies).toEqual([{ tenant: 'acme', key: '1.2.0', dependent: '2.4.1', component_name: 'bootloader', min_version: '1.1.0' }]);
  });

  it('is fine when another active firmware still satisfies it, or when the dependent is deactivated too', () => {
    expect(plan(desired(firmware({ version_number: '1.0.0', is_deactivated: true })), live({ acme: { firmwares: records } })).errors).toEqual([]);
    const both = desired(firmware({ version_number: '1.2.0', is_deactivated: true }), firmware({ version_number: '2.4.1', is_deactivated: true }));
    const p = plan(both, live({ acme: { firmwares: records } }));
    expect(p.errors).toEqual([]);
    expect(p.changes).toHaveLength(2);
  });
});

describe('dependency integrity, against the plain definition', () => {
  // The check runs in one pass per tenant (the highest active version of each component); here it
  // is held equal to the definition, record by record, over random small tenants.
  const versions = ['1.0.0', '1.1.0', '1.2.0-rc.1', '1.2.0', '2.0', 'v3'];
  const components = ['boot', 'modem', 'radio'];
  const record = fc.record({
    version_number: fc.constantFrom(...versions),
    component_name: fc.constantFrom(...components),
    is_deactivated: fc.boolean(),
    dependencies: fc.array(fc.record({ component_name: fc.constantFrom(...components), min_version: fc.constantFrom(...versions) }), { maxLength: 2 }),
  });
  it('lists exactly the dependencies each deactivation leaves unsatisfied', () => {
    fc.assert(fc.property(fc.uniqueArray(record, { selector: (r) => r.version_number, maxLength: 6 }), fc.array(fc.nat(5), { maxLength: 3 }), (records, picks) => {
      const deactivate = [...new Set(picks.map((i) => records[i]).filter((r) => r !== undefined && !r.is_deactivated).map((r) => r!.version_number))];
      const p = plan(desired(...deactivate.map((v) => firmware({ version_number: v, is_deactivated: true }))),
        live({ acme: { firmwares: records.map((r) => liveFirmware(r)) } }), { allowBrokenDependencies: true });
      const after = records.map((r) => ({ ...r, active: !r.is_deactivated && !deactivate.includes(r.version_number) }));
      const expected: string[] = [];
      for (const v of deactivate) {
        const gone = records.find((r) => r.version_number === v)!;
        for (const e of after) {
          if (!e.active) continue;
          for (const d of e.dependencies) {
            if (d.component_name !== gone.component_name || !atLeast(v, d.min_version)) continue;
            if (after.some((o) => o.active && o.component_name === d.component_name && atLeast(o.version_number, d.min_version))) continue;
            expected.push(`${v}>${e.version_number}:${d.component_name}>=${d.min_version}`);
          }
        }
      }
      const got = (p.broken_dependencies ?? []).map((b) => `${b.key}>${b.dependent}:${b.component_name}>=${b.min_version}`);
      expect(got.sort()).toEqual(expected.sort());
    }), { numRuns: 300 });
  });
});
