import { describe, expect, it } from 'vitest';
import type { DesiredState, FirmwareChange, LiveState, PhaseChange, Plan } from '../../src/model/index.js';
import { plan } from '../../src/core/plan.js';
import { UNKNOWN_DEPENDENCIES } from '../../src/intern.js';
import { renderJson } from '../../src/core/render/json.js';
import { action, dep, desired, firmware, live, liveAction, liveFirmware, phase } from './builders.js';

interface Case {
  readonly name: string;
  readonly desired: DesiredState;
  readonly live: LiveState;
  readonly check: (p: Plan) => void;
}

function onlyFirmwareChange(p: Plan): FirmwareChange {
  expect(p.changes).toHaveLength(1);
  const [change] = p.changes;
  if (change?.kind !== 'firmware') throw new Error(`expected a firmware change, got ${JSON.stringify(change)}`);
  return change;
}

function onlyError(p: Plan): string {
  expect(p.changes).toEqual([]);
  expect(p.errors).toHaveLength(1);
  return p.errors[0]!.message;
}

function unchangedOnly(p: Plan): void {
  expect(p.changes).toEqual([]);
  expect(p.conflicts).toEqual([]);
  expect(p.errors).toEqual([]);
  expect(p.summary.unchanged).toBe(1);
}

const fw241 = (fields: Parameters<typeof liveFirmware>[0] extends infer T ? Partial<T> : never = {}) =>
  liveFirmware({ version_number: '2.4.1', ...fields });

const firmwareCases: Case[] = [
  {
    name: 'a spec with no managed field leaves everything alone',
    desired: desired(firmware({ version_number: '2.4.1' })),
    live: live({ acme: { firmwares: [fw241({ is_deactivated: true, uncompressed_size: 5, dependencies: [dep('x', '1')] })] } }),
    check: unchangedOnly,
  },
  {
    name: 'equal managed fields are unchanged',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: false, uncompressed_size: 1000, dependencies: [] })),
    live: live({ acme: { firmwares: [fw241()] } }),
    check: unchangedOnly,
  },
  {
    name: 'a differing managed field is the only field in before and after',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: true, uncompressed_size: 1000 })),
    live: live({ acme: { firmwares: [fw241({ uncompressed_size: 1000, dependencies: [dep('radio', '0.9.0')] })] } }),
    check: (p) => {
      const c = onlyFirmwareChange(p);
      expect(c.before).toEqual({ is_deactivated: false });
      expect(c.after).toEqual({ is_deactivated: true });
      expect(c.component_name).toBe('modem');
      // Unmanaged fields go into the PUT as read live.
      expect(c.body).toEqual({ is_deactivated: true, uncompressed_size: 1000, dependencies: [dep('radio', '0.9.0')] });
    },
  },
  {
    name: 'unmanaged dependencies go into the PUT with every field the server gave them, in their order',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: true })),
    live: live({ acme: { firmwares: [fw241({ uncompressed_size: 1000, dependencies: [dep('radio', '2.0'), { ...dep('boot', '1.2.0'), max_version: '1.9' } as never] })] } }),
    check: (p) => {
      const c = onlyFirmwareChange(p);
      expect(c.body.dependencies).toEqual([dep('radio', '2.0'), { component_name: 'boot', min_version: '1.2.0', max_version: '1.9' }]);
    },
  },
  {
    name: 'managed dependencies that live holds too go into the PUT as live holds them, extra fields kept',
    desired: desired(firmware({ version_number: '2.4.1', uncompressed_size: 2000, dependencies: [dep('boot', '1.2.0'), dep('radio', '2.0')] })),
    live: live({ acme: { firmwares: [fw241({ uncompressed_size: 1000, dependencies: [{ ...dep('boot', '1.2.0'), max_version: '1.9.9', constraints: { os: 'x' } } as never] })] } }),
    check: (p) => {
      const c = onlyFirmwareChange(p);
      expect(c.body.dependencies).toEqual([{ component_name: 'boot', min_version: '1.2.0', max_version: '1.9.9', constraints: { os: 'x' } }, dep('radio', '2.0')]);
    },
  },
  {
    name: 'managed dependencies go into the PUT as the YAML writes them',
    desired: desired(firmware({ version_number: '2.4.1', dependencies: [dep('boot', '1.3.0')] })),
    live: live({ acme: { firmwares: [fw241({ uncompressed_size: 1000, dependencies: [{ ...dep('boot', '1.2.0'), max_version: '1.9' } as never] })] } }),
    check: (p) => {
      const c = onlyFirmwareChange(p);
      expect(c.body.dependencies).toEqual([dep('boot', '1.3.0')]);
    },
  },
  {
    name: 'uncompressed_size differs alone',
    desired: desired(firmware({ version_number: '2.4.1', uncompressed_size: 1048576 })),
    live: live({ acme: { firmwares: [fw241({ is_deactivated: true })] } }),
    check: (p) => {
      const c = onlyFirmwareChange(p);
      expect(c.before).toEqual({ uncompressed_size: 1000 });
      expect(c.after).toEqual({ uncompressed_size: 1048576 });
      expect(c.body).toEqual({ is_deactivated: true, uncompressed_size: 1048576, dependencies: [] });
    },
  },
  {
    name: 'dependencies in another order are the same set',
    desired: desired(firmware({ version_number: '2.4.1', dependencies: [dep('b', '2'), dep('a', '1')] })),
    live: live({ acme: { firmwares: [fw241({ dependencies: [dep('a', '1'), dep('b', '2')] })] } }),
    check: unchangedOnly,
  },
  {
    name: 'a changed min_version shows the whole sorted lists',
    desired: desired(firmware({ version_number: '2.4.1', dependencies: [dep('dsp', '1.1.0'), dep('boot', '1.2.0')] })),
    live: live({ acme: { firmwares: [fw241({ dependencies: [dep('dsp', '1.0.0'), dep('boot', '1.2.0')] })] } }),
    check: (p) => {
      const c = onlyFirmwareChange(p);
      expect(c.before).toEqual({ dependencies: [dep('boot', '1.2.0'), dep('dsp', '1.0.0')] });
      expect(c.after).toEqual({ dependencies: [dep('boot', '1.2.0'), dep('dsp', '1.1.0')] });
    },
  },
  {
    name: 'an empty desired dependency list removes live dependencies',
    desired: desired(firmware({ version_number: '2.4.1', dependencies: [] })),
    live: live({ acme: { firmwares: [fw241({ dependencies: [dep('radio', '0.9.0')] })] } }),
    check: (p) => {
      const c = onlyFirmwareChange(p);
      expect(c.after).toEqual({ dependencies: [] });
      expect(c.body.dependencies).toEqual([]);
    },
  },
  {
    name: 'a null live value differs from any desired value and is absent from before',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: false })),
    live: live({ acme: { firmwares: [fw241({ is_deactivated: null })] } }),
    check: (p) => {
      const c = onlyFirmwareChange(p);
      expect(c.before).toEqual({});
      expect(c.after).toEqual({ is_deactivated: false });
    },
  },
  {
    name: 'an unknown unmanaged field blocks the PUT with an error',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: true })),
    live: live({ acme: { firmwares: [fw241({ uncompressed_size: null })] } }),
    check: (p) =>
      expect(onlyError(p)).toBe(
        'firmware 2.4.1: live uncompressed_size is unknown and not managed; set it in the YAML so the PUT can send it',
      ),
  },
  {
    name: 'two unknown unmanaged fields are named together',
    desired: desired(firmware({ version_number: '2.4.1', dependencies: [dep('a', '1')] })),
    live: live({ acme: { firmwares: [fw241({ uncompressed_size: null, is_deactivated: null })] } }),
    check: (p) =>
      expect(onlyError(p)).toBe(
        'firmware 2.4.1: live is_deactivated and uncompressed_size are unknown and not managed; set them in the YAML so the PUT can send them',
      ),
  },
  {
    name: 'unknown live dependencies (null or left out by the server) block a PUT that does not manage them',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: true })),
    live: live({ acme: { firmwares: [fw241({ dependencies: UNKNOWN_DEPENDENCIES as never })] } }),
    check: (p) =>
      expect(onlyError(p)).toBe(
        'firmware 2.4.1: live dependencies is unknown and not managed; set it in the YAML so the PUT can send it',
      ),
  },
  {
    name: 'unknown size and dependencies are named together',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: true })),
    live: live({ acme: { firmwares: [fw241({ uncompressed_size: null, dependencies: UNKNOWN_DEPENDENCIES as never })] } }),
    check: (p) =>
      expect(onlyError(p)).toBe(
        'firmware 2.4.1: live uncompressed_size and dependencies are unknown and not managed; set them in the YAML so the PUT can send them',
      ),
  },
  {
    name: 'unknown live dependencies do not matter when the YAML sets them',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: true, dependencies: [dep('boot', '1.0')] })),
    live: live({ acme: { firmwares: [fw241({ dependencies: UNKNOWN_DEPENDENCIES as never })] } }),
    check: (p) => expect(onlyFirmwareChange(p).body.dependencies).toEqual([dep('boot', '1.0')]),
  },
  {
    name: 'an unknown unmanaged field does not matter when nothing changes',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: false })),
    live: live({ acme: { firmwares: [fw241({ uncompressed_size: null })] } }),
    check: unchangedOnly,
  },
  {
    name: 'a version number absent live is an error with its source',
    desired: desired(firmware({ version_number: '9.9.9', is_deactivated: true }, { file: 'fw.yaml', line: 7 })),
    live: live({ acme: { firmwares: [fw241()] } }),
    check: (p) => {
      expect(onlyError(p)).toBe(
        'firmware 9.9.9 was not found in tenant acme; the API cannot create firmware records: upload it first or remove the document',
      );
      expect(p.errors[0]).toMatchObject({ tenant: 'acme', kind: 'firmware', key: '9.9.9', source: { file: 'fw.yaml', line: 7 } });
    },
  },
  {
    name: 'a tenant absent live is not found too',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: true }, { tenant: 'globex' })),
    live: live({ acme: { firmwares: [fw241()] } }),
    check: (p) => expect(onlyError(p)).toContain('was not found in tenant globex'),
  },
  {
    name: 'a version of two components without component_name is ambiguous',
    desired: desired(firmware({ version_number: '2.4.1', is_deactivated: true })),
    live: live({ acme: { firmwares: [fw241({ component_name: 'wifi' }), fw241({ component_name: 'modem' })] } }),
    check: (p) =>
      expect(onlyError(p)).toBe(
        'version 2.4.1 is ambiguous: it matches firmware of components modem, wifi; the API updates by version number only, so dus-sync cannot address one',
      ),
  },
  {
    name: 'component_name picking one of several records is still an error, said plainly',
    desired: desired(firmware({ version_number: '2.4.1', component_name: 'modem', is_deactivated: true })),
    live: live({ acme: { firmwares: [fw241({ component_name: 'wifi' }), fw241({ component_name: 'modem' })] } }),
    check: (p) => {
      const message = onlyError(p);
      expect(message).toContain('component_name modem picks one');
      expect(message).toContain('cannot update a single record');
    },
  },
  {
    name: 'component_name matching none of several records says so',
    desired: desired(firmware({ version_number: '2.4.1', component_name: 'dsp', is_deactivated: true })),
    live: live({ acme: { firmwares: [fw241({ component_name: 'wifi' }), fw241({ component_name: 'modem' })] } }),
    check: (p) => expect(onlyError(p)).toContain('none of them dsp'),
  },
  {
    name: 'the component guard refuses another component',
    desired: desired(firmware({ version_number: '2.4.1', component_name: 'wifi', is_deactivated: true })),
    live: live({ acme: { firmwares: [fw241()] } }),
    check: (p) =>
      expect(onlyError(p)).toBe(
        'firmware 2.4.1 belongs to component modem, not wifi; fix component_name in the YAML or remove the document',
      ),
  },
  {
    name: 'the bundle guard refuses a record outside the bundle',
    desired: desired(firmware({ version_number: '2.4.1', bundle_version: '2024.07', is_deactivated: true })),
    live: live({ acme: { firmwares: [fw241({ bundles: ['2024.05', '2024.06'] })] } }),
    check: (p) =>
      expect(onlyError(p)).toBe(
        'firmware 2.4.1 is not in bundle 2024.07 (it is in 2024.05, 2024.06); fix bundle_version in the YAML or remove the document',
      ),
  },
  {
    name: 'matching guards let the change through',
    desired: desired(firmware({ version_number: '2.4.1', component_name: 'modem', bundle_version: '2024.06', is_deactivated: true })),
    live: live({ acme: { firmwares: [fw241()] } }),
    check: (p) => expect(onlyFirmwareChange(p).after).toEqual({ is_deactivated: true }),
  },
];

const canary = phase('canary', { after_minutes: 60 }, { percent: 1 });
const wave1 = phase('wave-1', { min_success_rate: 0.98 }, { percent: 10 });
const wave2 = phase('wave-2', { min_success_rate: 0.99 }, { percent: 50 });
const wave3 = phase('wave-3', {}, { percent: 100 });

function phaseChanges(p: Plan): PhaseChange[] {
  expect(p.conflicts).toEqual([]);
  expect(p.errors).toEqual([]);
  return p.changes.filter((c): c is PhaseChange => c.kind === 'phase');
}

function onlyConflict(p: Plan): string {
  expect(p.changes).toEqual([]);
  expect(p.errors).toEqual([]);
  expect(p.conflicts).toHaveLength(1);
  return p.conflicts[0]!.message;
}

const actionCases: Case[] = [
  {
    name: 'the same phases are unchanged',
    desired: desired(action(42, [canary, wave1])),
    live: live({ acme: { actions: [liveAction(42, [canary, wave1])] } }),
    check: unchangedOnly,
  },
  {
    name: 'key order inside trigger_on and info does not count',
    desired: desired(action(42, [phase('canary', { a: 1, b: { c: 2, d: 3 } }, { x: 1, y: 2 })])),
    live: live({ acme: { actions: [liveAction(42, [{ name: 'canary', trigger_on: { b: { d: 3, c: 2 }, a: 1 }, info: { y: 2, x: 1 } }])] } }),
    check: unchangedOnly,
  },
  {
    name: 'live null trigger_on and info equal desired {}',
    desired: desired(action(42, ['canary'])),
    live: live({ acme: { actions: [liveAction(42, [{ name: 'canary', trigger_on: null, info: null }])] } }),
    check: unchangedOnly,
  },
  {
    name: 'the missing tail is appended in order at its indices',
    desired: desired(action(42, [canary, wave1, wave2, wave3])),
    live: live({ acme: { actions: [liveAction(42, [canary, wave1])] } }),
    check: (p) => {
      const appends = phaseChanges(p);
      expect(appends.map((c) => [c.key, c.action_id, c.index, c.after.name])).toEqual([
        ['42', 42, 2, 'wave-2'],
        ['42', 42, 3, 'wave-3'],
      ]);
      expect(appends[0]!.after).toEqual(wave2);
    },
  },
  {
    name: 'an action with no live phases gets every phase',
    desired: desired(action(7, [canary, wave1])),
    live: live({ acme: { actions: [liveAction(7, [])] } }),
    check: (p) => expect(phaseChanges(p).map((c) => c.index)).toEqual([0, 1]),
  },
  {
    name: 'a differing name is a conflict and nothing is appended after it',
    desired: desired(action(42, [canary, phase('wave-one', wave1.trigger_on, wave1.info), wave2])),
    live: live({ acme: { actions: [liveAction(42, [canary, wave1])] } }),
    check: (p) => {
      expect(onlyConflict(p)).toBe(
        'phase 1 of action 42 differs in name: live "wave-1" but desired "wave-one"; phases are append-only: restore it in the YAML',
      );
      expect(p.conflicts[0]).toMatchObject({ tenant: 'acme', kind: 'action', key: '42', index: 1 });
    },
  },
  {
    name: 'a differing trigger_on is a conflict that shows both values',
    desired: desired(action(42, [canary, phase('wave-1', { min_success_rate: 0.9 }, wave1.info), wave2])),
    live: live({ acme: { actions: [liveAction(42, [canary, wave1])] } }),
    check: (p) =>
      expect(onlyConflict(p)).toBe(
        'phase 1 of action 42 differs in trigger_on: live "wave-1" trigger_on {"min_success_rate":0.98} but desired "wave-1" trigger_on {"min_success_rate":0.9}; phases are append-only: restore it in the YAML',
      ),
  },
  {
    name: 'a differing info is a conflict',
    desired: desired(action(42, [phase('canary', canary.trigger_on, { percent: 2 })])),
    live: live({ acme: { actions: [liveAction(42, [canary])] } }),
    check: (p) =>
      expect(onlyConflict(p)).toBe(
        'phase 0 of action 42 differs in info: live "canary" info {"percent":1} but desired "canary" info {"percent":2}; phases are append-only: restore it in the YAML',
      ),
  },
  {
    name: 'only the first differing phase is reported',
    desired: desired(action(42, [phase('a'), phase('b')])),
    live: live({ acme: { actions: [liveAction(42, ['x', 'y'])] } }),
    check: (p) => expect(onlyConflict(p)).toMatch(/^phase 0 of action 42 differs in name/),
  },
  {
    name: 'a live list longer than desired is a conflict',
    desired: desired(action(42, [canary, wave1, wave2])),
    live: live({ acme: { actions: [liveAction(42, [canary, wave1, wave2, wave3])] } }),
    check: (p) => {
      expect(onlyConflict(p)).toBe(
        'action 42 has 4 live phases but the YAML declares 3; phases cannot be removed: add the missing phase(s) to the YAML',
      );
      expect(p.conflicts[0]!.index).toBe(3);
    },
  },
  {
    name: 'appends and conflicts point at their phase\'s own line; past the YAML\'s list, at its last phase; without positions, at the document',
    desired: desired({ ...action(42, [canary, wave1, wave2]), phaseSources: [3, 6, 9].map((line) => ({ file: 'a.yaml', line, column: 7 })) }),
    live: live({ acme: { actions: [liveAction(42, [canary])] } }),
    check: (p) => {
      expect(phaseChanges(p).map((c) => c.source?.line)).toEqual([6, 9]);
      const at = (d: DesiredState, l: LiveState) => plan(d, l).conflicts[0]?.source?.line;
      const positioned = { ...action(42, [canary, wave1]), phaseSources: [3, 6].map((line) => ({ file: 'a.yaml', line, column: 7 })) };
      expect(at(desired(positioned), live({ acme: { actions: [liveAction(42, [canary, wave2])] } }))).toBe(6);
      expect(at(desired(positioned), live({ acme: { actions: [liveAction(42, [canary, wave1, wave2])] } }))).toBe(6);
      expect(at(desired(action(42, [canary, wave1], { line: 20 })), live({ acme: { actions: [liveAction(42, [canary, wave2])] } }))).toBe(20);
    },
  },
  {
    name: 'an action the API answered 404 for is an error',
    desired: desired(action(42, [canary])),
    live: live({ acme: { actions: [42] } }),
    check: (p) =>
      expect(onlyError(p)).toBe(
        'action 42 was not found in tenant acme; the API cannot create actions: create it in the service first or remove the document',
      ),
  },
  {
    name: 'an action never read is not found either',
    desired: desired(action(43, [canary])),
    live: live({ acme: {} }),
    check: (p) => expect(p.errors[0]).toMatchObject({ kind: 'action', key: '43' }),
  },
];

describe('plan(): firmware', () => {
  it.each(firmwareCases)('$name', ({ desired: d, live: l, check }) => check(plan(d, l)));
});

describe('plan(): actions', () => {
  it.each(actionCases)('$name', ({ desired: d, live: l, check }) => check(plan(d, l)));
});

describe('plan(): the whole', () => {
  const mixedDesired = desired(
    firmware({ version_number: '9.0', is_deactivated: true }, { tenant: 'globex' }),
    action(10, [canary, wave1], { tenant: 'acme' }),
    firmware({ version_number: '2.4.1', is_deactivated: false }),
    action(9, [canary, wave1]),
    firmware({ version_number: '10.0', is_deactivated: true }),
    firmware({ version_number: '1.0.0', is_deactivated: false }),
    action(11, [canary]),
    firmware({ version_number: '8.8.8', is_deactivated: true }),
    action(12, ['z'], { tenant: 'globex' }),
  );
  const mixedLive = live({
    acme: {
      firmwares: [
        liveFirmware({ version_number: '2.4.1' }),
        liveFirmware({ version_number: '10.0' }),
        liveFirmware({ version_number: '1.0.0' }),
      ],
      actions: [liveAction(9, [canary]), liveAction(10, [canary]), liveAction(11, ['other'])],
    },
    globex: { firmwares: [liveFirmware({ version_number: '9.0' })], actions: [] },
  });

  it('sorts by tenant, kind (firmware first), key (action ids as numbers) and index', () => {
    const p = plan(mixedDesired, mixedLive);
    expect(p.changes.map((c) => `${c.tenant} ${c.kind} ${c.key}${c.kind === 'phase' ? `#${c.index}` : ''}`)).toEqual([
      'acme firmware 10.0',
      'acme phase 9#1',
      'acme phase 10#1',
      'globex firmware 9.0',
    ]);
    expect(p.conflicts.map((c) => `${c.tenant} ${c.key}`)).toEqual(['acme 11']);
    expect(p.errors.map((e) => `${e.tenant} ${e.kind} ${e.key}`)).toEqual(['acme firmware 8.8.8', 'globex action 12']);
  });

  it('counts unchanged objects, in total and per tenant', () => {
    const p = plan(mixedDesired, mixedLive);
    expect(p.summary).toEqual({ changes: 4, conflicts: 1, errors: 2, unchanged: 2, unchanged_by_tenant: { acme: 2, globex: 0 } });
  });

  it('gives byte-identical JSON for the same inputs in any order', () => {
    const reversed: DesiredState = {
      firmwares: [...mixedDesired.firmwares].reverse(),
      actions: [...mixedDesired.actions].reverse(),
      files: [],
    };
    expect(renderJson(plan(reversed, mixedLive))).toBe(renderJson(plan(mixedDesired, mixedLive)));
  });

  it('keeps to the tenants it is given', () => {
    const p = plan(mixedDesired, mixedLive, { tenants: ['globex'] });
    expect(new Set([...p.changes, ...p.errors, ...p.conflicts].map((x) => x.tenant))).toEqual(new Set(['globex']));
    expect(p.summary.unchanged_by_tenant).toEqual({ globex: 0 });
  });

  it('is empty for an empty desired state', () => {
    expect(plan(desired(), mixedLive)).toEqual({
      format_version: 1,
      changes: [],
      conflicts: [],
      errors: [],
      summary: { changes: 0, conflicts: 0, errors: 0, unchanged: 0, unchanged_by_tenant: {} },
    });
  });
});
