// Properties of plan() over random desired and live states:
// - applying the plan's changes to a simple model of the API leaves nothing more to do;
// - a change never touches a field the desired spec does not manage;
// - the renderers never throw, and markdown keeps to its length bound.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type {
  Action,
  Change,
  DesiredAction,
  DesiredFirmware,
  DesiredState,
  FirmwareSpec,
  LiveFirmware,
  LiveState,
  LiveTenant,
  Plan,
} from '../../src/model/index.js';
import { normalizePhase } from '../../src/core/canonical.js';
import { plan } from '../../src/core/plan.js';
import { renderJson } from '../../src/core/render/json.js';
import { renderMarkdown } from '../../src/core/render/markdown.js';
import { renderText } from '../../src/core/render/text.js';
import { dep, phase } from './builders.js';

const TENANTS = ['acme', 'globex'] as const;
const VERSIONS = ['1.0.0', '1.1.0', '2.0.0', '10.0'] as const;
const COMPONENTS = ['modem', 'wifi', 'dsp'] as const;
const ACTION_IDS = [1, 2, 3, 10] as const;

const dependencies = fc.uniqueArray(
  fc.record({ component_name: fc.constantFrom(...COMPONENTS), min_version: fc.constantFrom('1', '2') }),
  { selector: (d) => d.component_name, maxLength: 3 },
);
const jsonObject = fc.constantFrom<Record<string, unknown>>({}, { percent: 1 }, { percent: 10, region: 'eu' }, { a: { b: [1, 2] } });
const livePhase = fc.record({
  name: fc.constantFrom('canary', 'wave-1', 'wave-2', 'all'),
  trigger_on: fc.option(jsonObject, { nil: null }),
  info: fc.option(jsonObject, { nil: null }),
});
const desiredPhase = fc.record({
  name: fc.constantFrom('canary', 'wave-1', 'wave-2', 'all', 'wave "3" <b>|'),
  trigger_on: jsonObject,
  info: jsonObject,
});

const liveFirmware = fc.record({
  version_number: fc.constantFrom(...VERSIONS),
  component_name: fc.constantFrom(...COMPONENTS),
  firmware_id: fc.constant(null),
  is_deactivated: fc.option(fc.boolean(), { nil: null, freq: 5 }),
  uncompressed_size: fc.option(fc.nat(5000), { nil: null, freq: 5 }),
  dependencies,
  bundles: fc.subarray(['2024.05', '2024.06']),
});

const liveActionArb = fc.record({
  id: fc.constantFrom(...ACTION_IDS),
  exists: fc.boolean(),
  phases: fc.array(livePhase, { maxLength: 3 }),
  triggered: fc.array(fc.boolean(), { maxLength: 3 }),
});

const liveTenantArb = fc.record({
  firmwares: fc.uniqueArray(liveFirmware, { selector: (f) => `${f.version_number}/${f.component_name}`, maxLength: 6 }),
  actions: fc.uniqueArray(liveActionArb, { selector: (a) => a.id, maxLength: 4 }),
});

const firmwareSpec = fc.record(
  {
    version_number: fc.constantFrom(...VERSIONS),
    component_name: fc.constantFrom(...COMPONENTS),
    bundle_version: fc.constantFrom('2024.05', '2024.06', '2023.01'),
    is_deactivated: fc.boolean(),
    uncompressed_size: fc.nat(5000),
    dependencies,
  },
  { requiredKeys: ['version_number'] },
);

const desiredFirmwareArb = fc.record({ tenant: fc.constantFrom(...TENANTS), spec: firmwareSpec });
const desiredActionArb = fc.record({
  tenant: fc.constantFrom(...TENANTS),
  id: fc.constantFrom(...ACTION_IDS),
  // Most desired actions extend the live list, as real ones do; the rest are random and mostly conflict.
  extendsLive: fc.boolean(),
  phases: fc.array(desiredPhase, { maxLength: 3 }),
});

interface World {
  readonly desired: DesiredState;
  readonly live: LiveState;
}

const SOURCE = { file: 'random.yaml', line: 1, column: 1 };

const world: fc.Arbitrary<World> = fc
  .record({
    live: fc.record({ acme: liveTenantArb, globex: liveTenantArb }),
    firmwares: fc.uniqueArray(desiredFirmwareArb, { selector: (f) => `${f.tenant}/${f.spec.version_number}`, maxLength: 6 }),
    actions: fc.uniqueArray(desiredActionArb, { selector: (a) => `${a.tenant}/${a.id}`, maxLength: 5 }),
  })
  .map(({ live: liveInput, firmwares, actions }) => {
    const tenants = new Map<string, LiveTenant>();
    for (const name of TENANTS) {
      const input = liveInput[name];
      const fwMap = new Map<string, LiveFirmware[]>();
      for (const fw of input.firmwares) fwMap.set(fw.version_number, [...(fwMap.get(fw.version_number) ?? []), fw]);
      const actionMap = new Map<number, Action | null>();
      for (const a of input.actions) {
        actionMap.set(a.id, a.exists ? { id: a.id, phases: a.phases, phases_triggered: a.triggered } : null);
      }
      tenants.set(name, { firmwares: fwMap, actions: actionMap });
    }
    const live: LiveState = { tenants };
    const desiredFirmwares: DesiredFirmware[] = firmwares.map((f) => ({
      kind: 'firmware',
      tenant: f.tenant,
      labels: {},
      source: SOURCE,
      spec: f.spec,
    }));
    const desiredActions: DesiredAction[] = actions.map((a) => {
      const existing = live.tenants.get(a.tenant)?.actions.get(a.id);
      const base = a.extendsLive && existing ? existing.phases.map(normalizePhase) : [];
      return { kind: 'action', tenant: a.tenant, labels: {}, source: SOURCE, id: a.id, phases: [...base, ...a.phases] };
    });
    return { live, desired: { firmwares: desiredFirmwares, actions: desiredActions, files: [] } };
  });

/** A deep, mutable copy of live with the plan's changes done the way the API would do them. */
function applyToModel(live: LiveState, changes: readonly Change[]): LiveState {
  const tenants = new Map<string, LiveTenant>();
  for (const [name, t] of live.tenants) {
    const firmwares = new Map([...t.firmwares].map(([k, records]) => [k, records.map((r) => ({ ...r }))]));
    const actions = new Map([...t.actions].map(([id, a]) => [id, a ? { ...a, phases: [...a.phases] } : null]));
    tenants.set(name, { firmwares, actions });
  }
  for (const change of changes) {
    const tenant = tenants.get(change.tenant)!;
    switch (change.kind) {
      case 'firmware': {
        const records = tenant.firmwares.get(change.key)!;
        // The PUT addresses a version number; the planner only plans it when one record has it.
        expect(records).toHaveLength(1);
        (tenant.firmwares as Map<string, LiveFirmware[]>).set(change.key, [{ ...records[0]!, ...change.body }]);
        break;
      }
      case 'phase': {
        const action = tenant.actions.get(change.action_id)!;
        expect(change.index).toBe(action.phases.length);
        action.phases.push({ ...change.after });
        break;
      }
    }
  }
  return { tenants };
}

const MANAGED = ['is_deactivated', 'uncompressed_size', 'dependencies'] as const;

function checkManagedOnly(p: Plan, w: World): void {
  for (const change of p.changes) {
    if (change.kind !== 'firmware') continue;
    const spec: FirmwareSpec = w.desired.firmwares.find((f) => f.tenant === change.tenant && f.spec.version_number === change.key)!.spec;
    const record = w.live.tenants.get(change.tenant)!.firmwares.get(change.key)![0]!;
    for (const field of Object.keys(change.after)) expect(spec).toHaveProperty(field);
    for (const field of Object.keys(change.before)) expect(change.after).toHaveProperty(field);
    for (const field of MANAGED) {
      if (spec[field] === undefined) expect(change.body[field]).toEqual(record[field]);
    }
  }
}

const ref = (x: { tenant: string; kind: string; key: string }) => `${x.tenant} ${x.kind} ${x.key}`;

describe('plan() properties', () => {
  it('converges: after its changes are applied, a new plan has none, and its conflicts and errors stay', () => {
    const seen = { firmware: 0, phase: 0, conflicts: 0, errors: 0 };
    fc.assert(
      fc.property(world, (w) => {
        const first = plan(w.desired, w.live);
        for (const c of first.changes) seen[c.kind]++;
        seen.conflicts += first.conflicts.length;
        seen.errors += first.errors.length;
        const second = plan(w.desired, applyToModel(w.live, first.changes));
        expect(second.changes).toEqual([]);
        expect(second.conflicts.map(ref)).toEqual(first.conflicts.map(ref));
        expect(second.errors.map(ref)).toEqual(first.errors.map(ref));
        expect(second.summary.unchanged).toBe(first.summary.unchanged + new Set(first.changes.map(ref)).size);
      }),
      { numRuns: 300 },
    );
    // The generators must actually reach every branch, or the property proves nothing.
    expect(Math.min(seen.firmware, seen.phase, seen.conflicts, seen.errors)).toBeGreaterThan(20);
  });

  it('never touches a field the desired spec does not manage', () => {
    fc.assert(
      fc.property(world, (w) => checkManagedOnly(plan(w.desired, w.live), w)),
      { numRuns: 300 },
    );
  });

  it('accounts for every desired object exactly once', () => {
    fc.assert(
      fc.property(world, (w) => {
        const p = plan(w.desired, w.live);
        const touched = new Set([...p.changes.map(ref), ...p.conflicts.map(ref), ...p.errors.map(ref)].map((r) => r.replace(' phase ', ' action ')));
        expect(touched.size + p.summary.unchanged).toBe(w.desired.firmwares.length + w.desired.actions.length);
      }),
      { numRuns: 200 },
    );
  });

  it('renders every plan without throwing, markdown within its bound', () => {
    fc.assert(
      fc.property(world, fc.integer({ min: 300, max: 6000 }), (w, maxLength) => {
        const p = plan(w.desired, w.live);
        expect(renderText(p, { color: true }).endsWith('\n')).toBe(true);
        expect(renderText(p, { color: false }).endsWith('unchanged.\n')).toBe(true);
        expect(JSON.parse(renderJson(p))).toMatchObject({ format_version: 1, summary: { changes: p.changes.length } });
        const md = renderMarkdown(p, { live: w.live, maxLength });
        expect(md.length).toBeLessThanOrEqual(maxLength);
        expect(md.split('<details>').length).toBe(md.split('</details>').length);
      }),
      { numRuns: 200 },
    );
  });
});

// Keep the builders honest about what a phase is, since the generators above build phases by hand.
it('phase() builds a desired phase with {} defaults', () => {
  expect(phase('x')).toEqual({ name: 'x', trigger_on: {}, info: {} });
  expect(dep('a', '1')).toEqual({ component_name: 'a', min_version: '1' });
});
