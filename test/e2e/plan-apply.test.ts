// The "done when" for plan and apply, run as a user would: the built CLI against the
// emulator paging with absolute next links, answering 503 and 429 now and then, and dropping
// every second append_phase response after storing the phase.
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { runCli, writeTree } from './helpers.js';

const KEY = 'e2e-secret-key-acme-0123456789';

function seed(): Seed {
  return {
    tenants: {
      acme: {
        api_key: KEY,
        bundles: [
          { version: '2024.05', firmwares: [
            { version_number: '1.0.0', component_name: 'bootloader', uncompressed_size: 4096, is_deactivated: false, dependencies: [] },
            { version_number: '2.4.0', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
          ] },
          { version: '2024.06', firmwares: [
            { version_number: '2.4.1', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false,
              dependencies: [{ component_name: 'bootloader', min_version: '1.0.0' }] },
          ] },
          { version: '2024.07', firmwares: [
            { version_number: '3.0.0', component_name: 'wifi', uncompressed_size: 2000, is_deactivated: false, dependencies: [] },
          ] },
        ],
        actions: [
          { id: 42, status: 'pending', phases: [{ name: 'canary', trigger_on: { after_minutes: 60 }, info: { percent: 1 } }] },
          { id: 43, status: 'pending', phases: [] },
        ],
      },
    },
  } as unknown as Seed;
}

const CONFIG = `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
safety: { max_changes: 50, max_deactivations: 5 }
`;

const FIRMWARES = `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "2.4.0"
  is_deactivated: true
---
apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "2.4.1"
  component_name: modem
  uncompressed_size: 1048576
  dependencies:
    - { component_name: bootloader, min_version: "1.2.0" }
---
apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "3.0.0"
  is_deactivated: false
`;

function actions(firstTrigger = '{ after_minutes: 60 }'): string {
  return `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 42
  phases:
    - { name: canary, trigger_on: ${firstTrigger}, info: { percent: 1 } }
    - { name: wave-1, trigger_on: { min_success_rate: 0.98 }, info: { percent: 10 } }
    - { name: wave-2, trigger_on: { min_success_rate: 0.99 }, info: { percent: 50 } }
    - { name: all, trigger_on: { after_minutes: 1440 }, info: { percent: 100 } }
---
apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 43
  phases:
    - { name: p0 }
    - { name: p1 }
    - { name: p2 }
    - { name: p3 }
    - { name: p4 }
    - { name: p5 }
`;
}

let emulator: RunningEmulator | undefined;
afterEach(async () => { await emulator?.close(); emulator = undefined; });

function repo(actionsYaml = actions()): string {
  return writeTree({ 'dus-sync.yaml': CONFIG, 'tenants/acme/firmwares.yaml': FIRMWARES, 'tenants/acme/actions.yaml': actionsYaml });
}

function env(url: string, key = KEY) {
  return { DUS_BASE_URL: url, DUS_API_KEY_ACME: key };
}

function expectNoKey(...texts: string[]) {
  for (const t of texts) expect(t).not.toContain(KEY);
}

describe('plan and apply against a flaky, paginating server', () => {
  it('converges with every second append response dropped, no phase twice, unmanaged fields kept', async () => {
    emulator = await startEmulator({ seed: seed(), pageSize: 1, absoluteNext: true,
      faults: { failRate: 0.15, rateLimit: 40, dropEvery: 2, seed: 7 } });
    const dir = repo();

    const plan = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--format', 'json'], { env: env(emulator.url) });
    expect(plan.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(plan.code).toBe(0);
    const parsed = JSON.parse(plan.stdout) as { changes: { kind: string; key: string }[]; summary: { changes: number } };
    expect(parsed.summary.changes).toBe(2 + 3 + 6); // 3.0.0 already matches

    // A 5xx to an append leaves its outcome unknown: it is not re-sent in that run, so the next
    // run (after the settle window, short here) goes on where the last one stopped.
    const applies = [];
    for (let i = 0; i < 8; i++) {
      const apply = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--journal', `${dir}/j.jsonl`, '--settle-window', '1s'], { env: env(emulator.url) });
      applies.push(apply);
      expectNoKey(apply.stdout, apply.stderr);
      if (apply.code === 0) break;
    }
    expect(applies.at(-1)!.code, applies.map((a) => a.stderr).join('\n---\n')).toBe(0);
    expectNoKey(plan.stdout, plan.stderr);

    emulator.faults.failRate = 0;
    emulator.faults.rateLimit = 0;
    const a42 = emulator.store.getAction('acme', 42)!;
    expect(a42.phases.map((p) => p.name)).toEqual(['canary', 'wave-1', 'wave-2', 'all']);
    const a43 = emulator.store.getAction('acme', 43)!;
    expect(a43.phases.map((p) => p.name)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5']);

    const [fw241] = emulator.store.firmwaresByVersion('acme', '2.4.1');
    expect(fw241!.uncompressed_size).toBe(1048576);
    expect(fw241!.is_deactivated).toBe(false); // unmanaged: kept as live had it
    expect(fw241!.dependencies).toEqual([{ component_name: 'bootloader', min_version: '1.2.0' }]);
    const [fw240] = emulator.store.firmwaresByVersion('acme', '2.4.0');
    expect(fw240!.is_deactivated).toBe(true);
    expect(fw240!.uncompressed_size).toBe(1000); // unmanaged

    const again = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--detailed-exitcode'], { env: env(emulator.url) });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toMatch(/No changes/);
  });

  it('refuses a saved plan, without a single write, after the live state moved', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const out = `${dir}/plan.json`;
    const plan = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--out', out], { env: env(emulator.url) });
    expect(plan.code, plan.stderr).toBe(0);
    emulator.store.updateFirmware('acme', '2.4.1', { uncompressed_size: 5 });
    const writesBefore = emulator.stats.writes;
    const apply = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', out, '--auto-approve', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(apply.code).toBe(1);
    expect(apply.stderr).toMatch(/plan is stale: .*2\.4\.1/);
    expect(emulator.stats.writes).toBe(writesBefore);
  });

  it('applies a fresh saved plan exactly', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const out = `${dir}/plan.json`;
    expect((await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--out', out], { env: env(emulator.url) })).code).toBe(0);
    const apply = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', out, '--auto-approve', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(apply.code, apply.stderr).toBe(0);
    const again = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--detailed-exitcode'], { env: env(emulator.url) });
    expect(again.code).toBe(0);
  });

  it('reports a changed historical phase as a conflict (exit 1) and still shows the other changes', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo(actions('{ after_minutes: 30 }'));
    const plan = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan'], { env: env(emulator.url) });
    expect(plan.code).toBe(1);
    expect(plan.stdout).toMatch(/conflict/i);
    expect(plan.stdout).toMatch(/42/);
    expect(plan.stdout).toMatch(/2\.4\.1/);
    expect(plan.stdout).toMatch(/p5/);
    expect(plan.stdout).not.toMatch(/wave-1/); // no appends after a conflict
  });

  it('refuses a plan over the safety limits, writing nothing, unless --allow-large', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const refused = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--max-changes', '2', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/max_changes|--allow-large/);
    expect(emulator.stats.writes).toBe(0);
    const allowed = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--max-changes', '2', '--allow-large', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(allowed.code, allowed.stderr).toBe(0);
  });

  it('refuses to apply without a TTY and without --auto-approve', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--auto-approve/);
    expect(emulator.stats.writes).toBe(0);
  });

  it('a wrong key: exit 1, one sentence saying the key was refused, no key in the output', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const wrong = 'wrong-key-that-must-not-show-9876';
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan'], { env: env(emulator.url, wrong) });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/refused/);
    // One sentence, after the progress line that says what it was doing.
    expect(r.stderr.trim().split('\n')).toEqual(['reading the live state of tenant acme…', expect.stringMatching(/^error: .*refused/)]);
    expect(r.stdout + r.stderr).not.toContain(wrong);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('gives the same plan against a quiet server and a flaky paginating one', async () => {
    const quiet = await startEmulator({ seed: seed() });
    const dir = repo();
    try {
      const a = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--format', 'json'], { env: env(quiet.url) });
      emulator = await startEmulator({ seed: seed(), pageSize: 1, absoluteNext: true, faults: { failRate: 0.3, rateLimit: 30, seed: 3 } });
      const b = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--format', 'json'], { env: env(emulator.url) });
      expect(a.code).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      expect(b.stdout).toBe(a.stdout);
    } finally {
      await quiet.close();
    }
  });
});
