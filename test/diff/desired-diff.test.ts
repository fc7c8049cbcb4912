import { describe, expect, it } from 'vitest';
import { baseInvalidWarning, diffDesired, diffDependencies, hasDifferences } from '../../src/core/desired-diff.js';
import { action, fw, phase, state } from './builders.js';

const boot = (v: string) => ({ component_name: 'bootloader', min_version: v });

describe('diffDesired: firmware', () => {
  it('finds no difference between equal states, whatever the order of dependencies', () => {
    const a = state(fw('2.4.1', { dependencies: [boot('1.2.0'), { component_name: 'radio', min_version: '3' }] }), action(42, [phase('canary')]));
    const b = state(fw('2.4.1', { dependencies: [{ component_name: 'radio', min_version: '3' }, boot('1.2.0')] }), action(42, [phase('canary')]));
    const d = diffDesired(a, b);
    expect(d.entries).toEqual([]);
    expect(d.warnings).toEqual([]);
    expect(hasDifferences(d)).toBe(false);
  });

  it('lists added and removed firmware, sorted by tenant then version', () => {
    const d = diffDesired(state(fw('1.0', {}, 'globex'), fw('9.0')), state(fw('2.0'), fw('1.0', {}, 'beta')));
    expect(d.entries.map((e) => `${e.tenant} ${e.op} ${e.key}`)).toEqual(['acme add 2.0', 'acme remove 9.0', 'beta add 1.0', 'globex remove 1.0']);
    expect(d.summary).toMatchObject({ firmwares_added: 2, firmwares_removed: 2, firmwares_changed: 0 });
  });

  it('shows each changed field before → after, absent as null (unmanaged)', () => {
    const d = diffDesired(
      state(fw('2.4.1', { component_name: 'modem', is_deactivated: false, uncompressed_size: 10 })),
      state(fw('2.4.1', { component_name: 'modem', is_deactivated: true, bundle_version: '2024.06' })),
    );
    expect(d.entries).toHaveLength(1);
    const e = d.entries[0]!;
    expect(e.kind === 'firmware' && e.op === 'change' ? e.fields : undefined).toEqual([
      { field: 'bundle_version', before: null, after: '2024.06' },
      { field: 'is_deactivated', before: false, after: true },
      { field: 'uncompressed_size', before: 10, after: null },
    ]);
  });

  it('compares dependencies as a set: + added, - removed, ~ min_version', () => {
    const d = diffDependencies([boot('1.2.0'), { component_name: 'dsp', min_version: '1' }], [boot('1.3.0'), { component_name: 'radio', min_version: '2' }]);
    expect(d?.items).toEqual([
      { op: 'change', component_name: 'bootloader', before: '1.2.0', after: '1.3.0' },
      { op: 'remove', component_name: 'dsp', before: '1', after: null },
      { op: 'add', component_name: 'radio', before: null, after: '2' },
    ]);
  });

  it('reports dependencies becoming managed (absent → []) even with no item changes', () => {
    const d = diffDependencies(undefined, []);
    expect(d).toEqual({ before: null, after: [], items: [] });
    expect(diffDependencies([], [])).toBeNull();
  });

  it('reports label changes, which change what --selector picks', () => {
    const d = diffDesired(state(fw('1', {}, 'acme', { team: 'radio' })), state(fw('1', {}, 'acme', { team: 'modem' })));
    const e = d.entries[0]!;
    expect(e.kind === 'firmware' && e.op === 'change' ? e.fields : []).toEqual([{ field: 'labels', before: { team: 'radio' }, after: { team: 'modem' } }]);
  });
});

describe('diffDesired: actions', () => {
  it('lists a new tail of phases as appended, with their indexes', () => {
    const d = diffDesired(
      state(action(42, [phase('canary', { after_minutes: 60 })])),
      state(action(42, [phase('canary', { after_minutes: 60 }), phase('wave-1', {}, { percent: 10 }), phase('wave-2')])),
    );
    const e = d.entries[0]!;
    expect(e.kind === 'action' && e.op === 'change' ? e.appended.map((p) => [p.index, p.phase.name]) : []).toEqual([[1, 'wave-1'], [2, 'wave-2']]);
    expect(d.summary.phases_appended).toBe(2);
    expect(d.warnings).toEqual([]);
  });

  it('ignores key order inside trigger_on and info', () => {
    const d = diffDesired(state(action(1, [phase('a', { x: 1, y: 2 })])), state(action(1, [phase('a', { y: 2, x: 1 })])));
    expect(d.entries).toEqual([]);
  });

  it('warns that a historical phase changed (a conflict at plan time)', () => {
    const d = diffDesired(state(action(42, [phase('canary', {}, { percent: 1 })])), state(action(42, [phase('canary', {}, { percent: 5 })])));
    expect(d.warnings.map((w) => w.code)).toEqual(['historical-phase-changed']);
    expect(d.warnings[0]!.message).toMatch(/action 42 phase 0 "canary" was changed.*conflict/);
  });

  it('warns that phases were removed from the end', () => {
    const d = diffDesired(state(action(42, [phase('a'), phase('b'), phase('c')])), state(action(42, [phase('a')])));
    const e = d.entries[0]!;
    expect(e.kind === 'action' && e.op === 'change' ? e.removed.map((p) => p.index) : []).toEqual([1, 2]);
    expect(d.warnings.map((w) => w.code)).toEqual(['phase-removed']);
    expect(d.warnings[0]!.message).toContain('1 "b", 2 "c"');
  });

  it('lists added and removed actions, sorted numerically by id', () => {
    const d = diffDesired(state(action(100, [phase('a')])), state(action(9, [phase('a')]), action(10, [])));
    expect(d.entries.map((e) => `${e.op} ${e.key}`)).toEqual(['add 9', 'add 10', 'remove 100']);
    expect(d.warnings.map((w) => w.code)).toEqual(['action-unmanaged']);
  });
});

describe('diffDesired: warnings', () => {
  it('counts new deactivations per tenant (changed to true, or added deactivated)', () => {
    const d = diffDesired(
      state(fw('1', { is_deactivated: false }), fw('2'), fw('3', { is_deactivated: true })),
      state(fw('1', { is_deactivated: true }), fw('2', { is_deactivated: true }), fw('3', { is_deactivated: true }), fw('4', { is_deactivated: true }), fw('5', { is_deactivated: false })),
    );
    expect(d.summary.deactivations).toBe(3);
    const w = d.warnings.filter((x) => x.code === 'deactivations');
    expect(w).toHaveLength(1);
    expect(w[0]!.message).toBe('3 firmwares of tenant acme will be deactivated: devices stop being offered them.');
  });

  it('warns that a firmware removed from git stops being managed (nothing deleted live)', () => {
    const d = diffDesired(state(fw('1.0')), state());
    expect(d.warnings).toEqual([expect.objectContaining({ code: 'firmware-unmanaged', tenant: 'acme', key: '1.0' })]);
    expect(d.warnings[0]!.message).toContain('nothing is deleted');
  });

  it('carries the base-invalid warning first', () => {
    const d = diffDesired(state(), state(fw('1.0')), [baseInvalidWarning('origin/main', 2)]);
    expect(d.warnings[0]).toMatchObject({ code: 'base-invalid', key: 'origin/main' });
    expect(d.warnings[0]!.message).toContain('2 problems');
    expect(d.summary.warnings).toBe(1);
  });
});
