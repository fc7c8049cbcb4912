// watch after a file change (issue 15 and the rollout-control tester's break 3), through the
// built CLI: the change is planned against the live view of the last pass and reads only what
// the edit touched (no bundle list), drift elsewhere is still healed by the interval's full
// read, and a `paused: true` that lands while a pass is appending stops the appends.
import { spawn } from 'node:child_process';
import { mkdtempSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEmulator, type Seed } from '../../src/emulator/index.js';
import { agentRunPerTest, waitFor, writeBelow } from './helpers.js';

const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');
const KEY = 'watch-incr-secret-key-acme-0123456789';
const LIST = 'GET /firmware-bundles';

function seed(phases = 0): Seed {
  return {
    tenants: {
      acme: {
        api_key: KEY,
        bundles: Array.from({ length: 30 }, (_, b) => ({
          version: `2024.${String(b).padStart(2, '0')}`,
          firmwares: Array.from({ length: 3 }, (_, i) => ({
            version_number: `1.${b}.${i}`, component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [],
          })),
        })),
        actions: [{ id: 42, status: 'pending', phases: Array.from({ length: phases }, (_, i) => ({ name: `p${i}`, trigger_on: {}, info: {} })) }],
      },
    },
  } as unknown as Seed;
}

const CONFIG = (interval: string) => `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
resources: ["tenants/**/*.yaml"]
watch:
  interval: ${interval}
`;

const firmware = (version: string, size: number) => `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec: { version_number: "${version}", uncompressed_size: ${size} }
`;

const action = (phases: number, extra = '') => `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 42
${extra}  phases:
${Array.from({ length: phases }, (_, i) => `    - { name: p${i} }\n`).join('')}`;

const run = agentRunPerTest();
const write = (path: string, text: string): void => writeBelow(run.dir!, path, text);

function watch(extra: string[] = []): { log: () => string } {
  let stderr = '';
  run.child = spawn(process.execPath, [CLI, 'watch', '--log-level', 'debug', '--log-format', 'json', '--settle-window', '1s', ...extra], {
    cwd: run.dir,
    env: { ...process.env, DUS_BASE_URL: run.emulator!.url, DUS_API_KEY_ACME: KEY, NO_COLOR: '1', DUS_SYNC_STATE_DIR: join(run.dir!, '.state') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  run.child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  return { log: () => stderr };
}

const passes = (log: string, trigger: string) => (log.match(new RegExp(`"trigger":"${trigger}"`, 'g')) ?? []).length;

describe('watch after a file change', () => {
  it('reads only the edited records (no bundle list), and the interval still heals drift elsewhere with a full read', async () => {
    run.emulator = await startEmulator({ seed: seed(), pageSize: 5 });
    run.dir = mkdtempSync(join(tmpdir(), 'dus-watch-incr-'));
    write('dus-sync.yaml', CONFIG('4s'));
    for (let b = 0; b < 30; b++) write(`tenants/acme/b${b}.yaml`, [0, 1, 2].map((i) => firmware(`1.${b}.${i}`, 1000)).join('---\n'));
    const { log } = watch();
    await waitFor(() => passes(log(), 'start') === 1, 15_000, 'the first pass');
    expect(log()).toContain('"result":"success"');
    const listed = run.emulator.stats.byRoute[LIST] ?? 0;
    expect(listed).toBeGreaterThanOrEqual(6); // 30 bundles in pages of 5

    write('tenants/acme/b7.yaml', [firmware('1.7.0', 1000), firmware('1.7.1', 4242), firmware('1.7.2', 1000)].join('---\n'));
    await waitFor(() => run.emulator!.store.firmwaresByVersion('acme', '1.7.1')[0]!.uncompressed_size === 4242, 10_000, 'the edit to be applied');
    await waitFor(() => passes(log(), 'file-change') === 1, 10_000, 'the file-change pass to end');
    // Planned, applied and verified without listing the bundles again.
    expect(run.emulator.stats.byRoute[LIST] ?? 0).toBe(listed);
    expect(log()).toMatch(/planned against the live view after \d+ targeted read/);

    // A change behind its back, to a record the edit did not touch: the interval's full read heals it.
    run.emulator.store.updateFirmware('acme', '1.20.2', { uncompressed_size: 7 });
    await waitFor(() => run.emulator!.store.firmwaresByVersion('acme', '1.20.2')[0]!.uncompressed_size === 1000, 15_000, 'drift to be healed');
    expect(run.emulator.stats.byRoute[LIST] ?? 0).toBeGreaterThan(listed);
  });

  it('an edit that declares a firmware the view does not hold falls back to a full read', async () => {
    run.emulator = await startEmulator({ seed: seed(), pageSize: 5 });
    run.dir = mkdtempSync(join(tmpdir(), 'dus-watch-incr-'));
    write('dus-sync.yaml', CONFIG('10m'));
    write('tenants/acme/b0.yaml', firmware('1.0.0', 1000));
    const { log } = watch();
    await waitFor(() => passes(log(), 'start') === 1, 15_000, 'the first pass');
    const listed = run.emulator.stats.byRoute[LIST] ?? 0;
    write('tenants/acme/b9.yaml', firmware('1.9.2', 5151));
    await waitFor(() => run.emulator!.store.firmwaresByVersion('acme', '1.9.2')[0]!.uncompressed_size === 5151, 10_000, 'the new declaration to be applied');
    expect(log()).toMatch(/reading everything: firmware 1\.9\.2 of tenant acme was not in the last full read/);
    expect(run.emulator.stats.byRoute[LIST] ?? 0).toBeGreaterThan(listed);
  });

  it('an edit of the same size with the old modification time (rsync -a, cp -p, tar) is still seen', async () => {
    run.emulator = await startEmulator({ seed: seed() });
    run.dir = mkdtempSync(join(tmpdir(), 'dus-watch-incr-'));
    write('dus-sync.yaml', CONFIG('10m'));
    write('tenants/acme/b3.yaml', firmware('1.3.0', 1000));
    const { log } = watch();
    await waitFor(() => passes(log(), 'start') === 1, 15_000, 'the first pass');
    const file = join(run.dir, 'tenants/acme/b3.yaml');
    const old = statSync(file);
    // Replaced by rename, same size, modification time put back.
    writeFileSync(`${file}.tmp`, firmware('1.3.0', 2000));
    utimesSync(`${file}.tmp`, old.atime, old.mtime);
    renameSync(`${file}.tmp`, file);
    await waitFor(() => run.emulator!.store.firmwaresByVersion('acme', '1.3.0')[0]!.uncompressed_size === 2000, 10_000, 'the edit to be applied');
  });

  it('a file change that deactivates firmware reads the whole tenant before writing (its dependency check needs it now)', async () => {
    run.emulator = await startEmulator({ seed: seed(), pageSize: 5 });
    run.dir = mkdtempSync(join(tmpdir(), 'dus-watch-incr-'));
    write('dus-sync.yaml', CONFIG('10m'));
    write('tenants/acme/b4.yaml', firmware('1.4.0', 1000));
    const { log } = watch();
    await waitFor(() => passes(log(), 'start') === 1, 15_000, 'the first pass');
    const listed = run.emulator.stats.byRoute[LIST] ?? 0;
    write('tenants/acme/b4.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "1.4.0", is_deactivated: true }\n');
    await waitFor(() => run.emulator!.store.firmwaresByVersion('acme', '1.4.0')[0]!.is_deactivated === true, 10_000, 'the deactivation');
    expect(log()).toContain('reading everything: the plan deactivates firmware');
    expect(run.emulator.stats.byRoute[LIST] ?? 0).toBeGreaterThan(listed);
  });

  it('paused: true written while a pass is appending stops its appends', async () => {
    // Every request takes 250 ms: 12 appends take several seconds.
    run.emulator = await startEmulator({ seed: seed(), faults: { latencyMs: 250 } });
    run.dir = mkdtempSync(join(tmpdir(), 'dus-watch-incr-'));
    write('dus-sync.yaml', CONFIG('10m'));
    write('tenants/acme/a.yaml', action(12));
    const { log } = watch();
    const count = () => run.emulator!.store.getAction('acme', 42)!.phases.length;
    await waitFor(() => count() >= 1, 20_000, 'the first append');
    write('tenants/acme/a.yaml', action(12, '  paused: true\n'));
    const atPause = count();
    await waitFor(() => passes(log(), 'file-change') >= 1, 30_000, 'the pass after the pause');
    await new Promise((r) => setTimeout(r, 1500));
    // At most the append already on its way when the file changed.
    expect(count()).toBeLessThanOrEqual(atPause + 1);
    expect(count()).toBeLessThan(12);
    expect(log()).toContain('changed during the pass, so it was not written');
  });
});
