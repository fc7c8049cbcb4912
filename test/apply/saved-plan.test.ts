import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readSavedPlan, serializeSavedPlan, staleObjects, toSavedPlan, writesNotFromPlan } from '../../src/apply/saved-plan.js';
import { keysInWrites } from '../../src/live-keys.js';
import { clearSecretsForTests, registerSecret } from '../../src/redact.js';
import { UserError } from '../../src/errors.js';
import type { Action, DesiredState, LiveFirmware, LiveState, LiveTenant, Plan } from '../../src/model/index.js';
import { phase, phaseChange, planOf } from './fakes.js';

let dir: string;
beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'dus-saved-')); });
afterEach(async () => { await rm(dir, { recursive: true, force: true }); });

const source = { file: 'tenants/acme.yaml', line: 1, column: 1 };

const desired: DesiredState = {
  files: ['tenants/acme.yaml'],
  firmwares: [{ kind: 'firmware', tenant: 'acme', labels: {}, source, spec: { version_number: '5.10.1', is_deactivated: true } }],
  actions: [{ kind: 'action', tenant: 'acme', labels: {}, source, id: 42, phases: [phase('canary'), phase('wave-1')] }],
};

function record(over: Partial<LiveFirmware> = {}): LiveFirmware {
  return {
    version_number: '5.10.1', component_name: 'modem', firmware_id: 'f-1', is_deactivated: false,
    uncompressed_size: 1000, dependencies: [], bundles: ['2024.06'], ...over,
  };
}

function liveWith(fw: LiveFirmware, action: Action | null, extraTenant = false): LiveState {
  const acme: LiveTenant = { firmwares: new Map([['5.10.1', [fw]]]), actions: new Map([[42, action]]) };
  const tenants = new Map<string, LiveTenant>([['acme', acme]]);
  if (extraTenant) tenants.set('globex', { firmwares: new Map(), actions: new Map() });
  return { tenants };
}

const action42: Action = { id: 42, status: 'pending', phases: [phase('canary')] };

const plan: Plan = planOf([
  {
    tenant: 'acme', kind: 'firmware', op: 'update', key: '5.10.1', component_name: 'modem',
    before: { is_deactivated: false }, after: { is_deactivated: true },
    body: { is_deactivated: true, uncompressed_size: 1000, dependencies: [] },
  },
  phaseChange('acme', 42, 1, phase('wave-1')),
]);

const meta = { toolVersion: '0.1.0', createdAt: '2026-11-22T03:00:00.000Z' };

describe('saved plans', () => {
  it('round-trips through the file and is fresh against the live state it was made from', async () => {
    const live = liveWith(record(), action42);
    const saved = toSavedPlan(plan, desired, live, meta);
    expect(saved).toMatchObject({ format_version: 1, tool_version: '0.1.0', created_at: meta.createdAt });
    expect(saved.live_fingerprints.map((f) => `${f.kind} ${f.key}`)).toEqual(['action 42', 'firmware 5.10.1']);
    const path = join(dir, 'plan.json');
    await writeFile(path, serializeSavedPlan(saved));
    const back = await readSavedPlan(path);
    expect(back).toEqual(saved);
    expect(staleObjects(back, live)).toEqual([]);
  });

  it('ignores where the desired state was written but not what it says', () => {
    const live = liveWith(record(), action42);
    const moved: DesiredState = { ...desired, firmwares: desired.firmwares.map((f) => ({ ...f, source: { file: 'other.yaml', line: 9, column: 3 } })) };
    const edited: DesiredState = { ...desired, firmwares: desired.firmwares.map((f) => ({ ...f, spec: { ...f.spec, is_deactivated: false } })) };
    const digest = (d: DesiredState): string => toSavedPlan(plan, d, live, meta).desired_digest;
    expect(digest(moved)).toBe(digest(desired));
    expect(digest(edited)).not.toBe(digest(desired));
  });

  it('names a firmware whose managed fields moved since the plan was made', () => {
    const saved = toSavedPlan(plan, desired, liveWith(record(), action42), meta);
    expect(staleObjects(saved, liveWith(record({ uncompressed_size: 2000 }), action42)))
      .toEqual(['firmware 5.10.1 in acme changed since the plan was made']);
  });

  it('names an action that gained a phase since the plan was made', () => {
    const saved = toSavedPlan(plan, desired, liveWith(record(), action42), meta);
    const moved: Action = { ...action42, phases: [phase('canary'), phase('hotfix')] };
    expect(staleObjects(saved, liveWith(record(), moved))).toEqual(['action 42 in acme changed since the plan was made']);
  });

  it('does not call an action stale because its rollout status moved', () => {
    const saved = toSavedPlan(plan, desired, liveWith(record(), action42), meta);
    const progressed: Action = { ...action42, status: 'running', phases_triggered: [true] };
    expect(staleObjects(saved, liveWith(record(), progressed))).toEqual([]);
  });

  it('refuses when a tenant of the plan was not read again', () => {
    const saved = toSavedPlan(plan, desired, liveWith(record(), action42), meta);
    expect(staleObjects(saved, { tenants: new Map() })).toEqual([
      'action 42 in acme was not read again',
      'firmware 5.10.1 in acme was not read again',
    ]);
  });

  it('refuses a file that cannot be read, naming it', async () => {
    const path = join(dir, 'missing.json');
    await expect(readSavedPlan(path)).rejects.toThrow(new UserError(`cannot read the plan file ${path}: the file does not exist (or was removed while it was being read); check the path given to apply`));
  });

  it('refuses a named pipe or a device at once, instead of waiting on it forever', async () => {
    const fifo = join(dir, 'plan.fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(readSavedPlan(fifo)).rejects.toThrow(/cannot read the plan file .*plan\.fifo: this is a named pipe \(FIFO\), not a regular file/);
    await expect(readSavedPlan('/dev/zero')).rejects.toThrow(/cannot read the plan file \/dev\/zero: this is a character device/);
  });

  it('refuses a file that is not JSON', async () => {
    const path = join(dir, 'plan.txt');
    await writeFile(path, 'Plan: 3 firmware updates.\n');
    await expect(readSavedPlan(path)).rejects.toThrow(`${path} is not a dus-sync saved plan: it is not JSON; make one with dus-sync plan --out FILE`);
  });

  it('refuses a plan printed with --format json, which carries no fingerprints', async () => {
    const path = join(dir, 'plan.json');
    await writeFile(path, JSON.stringify(plan));
    await expect(readSavedPlan(path)).rejects.toThrow(/it has no tool_version \(a plan printed with --format json is not a saved plan\)/);
  });

  it('refuses another format_version', async () => {
    const path = join(dir, 'plan.json');
    const saved = toSavedPlan(plan, desired, liveWith(record(), action42), meta);
    await writeFile(path, JSON.stringify({ ...saved, format_version: 2 }));
    await expect(readSavedPlan(path)).rejects.toThrow(`${path} has format_version 2 but this dus-sync reads format_version 1; make the plan again with this version`);
  });

  it('refuses a firmware change without the full PUT body', async () => {
    const path = join(dir, 'plan.json');
    const saved = toSavedPlan(plan, desired, liveWith(record(), action42), meta);
    const text = serializeSavedPlan(saved).replace('"uncompressed_size": 1000', '"uncompressed_size": "big"');
    await writeFile(path, text);
    await expect(readSavedPlan(path)).rejects.toThrow(/changes\[0\] has no complete body/);
    expect(await readFile(path, 'utf8')).toContain('"big"');
  });
});

describe('a saved plan sends only what its changes say', () => {
  it('a change inside a dependency entry the YAML does not manage makes it stale (its body carries the entry as read)', () => {
    const dep = { component_name: 'boot', min_version: '1.2.0', max_version: '1.9.9' };
    const saved = toSavedPlan(plan, desired, liveWith(record({ dependencies: [dep] as never }), action42), meta);
    expect(staleObjects(saved, liveWith(record({ dependencies: [{ ...dep, max_version: '3.0.0' }] as never }), action42)))
      .toEqual(['firmware 5.10.1 in acme changed since the plan was made']);
  });

  it('a body that is its change over the live record passes; an edited one, or a write of an object not read, is named', () => {
    const live = liveWith(record(), action42);
    const saved = toSavedPlan(plan, desired, live, meta);
    expect(writesNotFromPlan(saved, live)).toEqual([]);
    const edited = structuredClone(saved) as unknown as { changes: unknown[] } & typeof saved;
    const fw = edited.changes[0] as unknown as { body: Record<string, unknown> };
    fw.body.uncompressed_size = 1;
    fw.body.checksum = 'evil';
    edited.changes.push({ ...(saved.changes[0]! as object), key: '3.0.0' } as never);
    expect(writesNotFromPlan(edited, live)).toEqual([
      'the PUT body of firmware 5.10.1 in acme is not its change over the live record (was the plan file edited?)',
      'firmware 3.0.0 in acme is not among the objects the plan read',
    ]);
    const phaseElsewhere = structuredClone(saved) as unknown as { changes: unknown[] } & typeof saved;
    phaseElsewhere.changes.push(phaseChange('acme', 43, 0, phase('x')));
    expect(writesNotFromPlan(phaseElsewhere, live)).toEqual(['phase 0 of action 43 in acme is not among the objects the plan read']);
    // Shown as one action (key), written to another (action_id): every report would say action 7.
    const mislabelled = structuredClone(saved) as unknown as { changes: unknown[] } & typeof saved;
    mislabelled.changes.push({ ...phaseChange('acme', 42, 1, phase('x')), key: '7' } as never);
    expect(writesNotFromPlan(mislabelled, live)).toEqual(['phase 1 of action 42 in acme is shown as action "7"']);
  });

  it('a body keeps the live fields of the dependencies it manages, in any order', () => {
    const live = liveWith(record({ dependencies: [{ component_name: 'boot', min_version: '1.2.0', max_version: '1.9' }, { component_name: 'radio', min_version: '2.0' }] as never }), action42);
    const withDeps: Plan = planOf([{
      tenant: 'acme', kind: 'firmware', op: 'update', key: '5.10.1', component_name: 'modem',
      before: { dependencies: [{ component_name: 'boot', min_version: '1.2.0' }, { component_name: 'radio', min_version: '2.0' }] },
      after: { dependencies: [{ component_name: 'boot', min_version: '1.2.0' }, { component_name: 'radio', min_version: '3.0' }] },
      body: { is_deactivated: false, uncompressed_size: 1000, dependencies: [{ component_name: 'radio', min_version: '3.0' }, { component_name: 'boot', min_version: '1.2.0', max_version: '1.9' } as never] },
    }]);
    expect(writesNotFromPlan(toSavedPlan(withDeps, desired, live, meta), live)).toEqual([]);
  });

  it('a write holding an API key is found (keysInWrites), with the path redacted', () => {
    registerSecret('Sup3rSecretKeyValue99');
    try {
      const keyed = structuredClone(plan) as Plan;
      (keyed.changes[0] as { body: { dependencies: unknown[] } }).body.dependencies = [{ component_name: 'x', min_version: 'Sup3rSecretKeyValue99' }];
      (keyed.changes[1] as { after: { info: Record<string, unknown> } }).after.info = { Sup3rSecretKeyValue99: 1 };
      expect(keysInWrites(keyed)).toEqual(['changes[0].body.dependencies[0].min_version', 'changes[1].after.info["[REDACTED]"]']);
      expect(keysInWrites(plan)).toEqual([]);
    } finally {
      clearSecretsForTests();
    }
  });
});
