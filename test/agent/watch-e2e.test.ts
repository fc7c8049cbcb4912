// The "done when" for watch, run as a user would: the built CLI as an agent against an
// emulator that fails now and then, with a short interval.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { waitFor } from './helpers.js';

const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');
const KEY = 'watch-e2e-secret-key-acme-0123456789';

const seed = {
  tenants: {
    acme: {
      api_key: KEY,
      bundles: [{ version: '2024.06', firmwares: [
        { version_number: '2.4.0', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
        { version_number: '2.4.1', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
      ] }],
      actions: [{ id: 42, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: { percent: 1 } }] }],
    },
  },
} as unknown as Seed;

const CONFIG = `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
resources: ["tenants/**/*.yaml"]
watch:
  interval: 1s
`;

function firmware(size: number): string {
  return `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "2.4.1"
  uncompressed_size: ${size}
---
apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "2.4.0"
  is_deactivated: true
`;
}

const ACTION = `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 42
  phases:
    - { name: canary, info: { percent: 1 } }
    - { name: wave-1, info: { percent: 10 } }
`;

let emulator: RunningEmulator | undefined;
let child: ChildProcess | undefined;
let dir: string | undefined;
afterEach(async () => {
  child?.kill('SIGKILL');
  await emulator?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  child = undefined; emulator = undefined; dir = undefined;
});

function write(path: string, text: string): void {
  mkdirSync(dirname(join(dir!, path)), { recursive: true });
  writeFileSync(join(dir!, path), text);
}

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

describe('dus-sync watch against a flaky server', () => {
  it('gets ready, converges, follows edits, survives a broken file, heals drift, exposes metrics and exits 0 on SIGTERM', async () => {
    emulator = await startEmulator({ seed, faults: { failRate: 0.1, dropEvery: 2, seed: 3 } });
    dir = mkdtempSync(join(tmpdir(), 'dus-watch-e2e-'));
    write('dus-sync.yaml', CONFIG);
    write('tenants/acme/firmwares.yaml', firmware(2048));
    write('tenants/acme/actions.yaml', ACTION);

    let stdout = '';
    let stderr = '';
    child = spawn(process.execPath, [CLI, 'watch', '--listen', '127.0.0.1:0', '--grace', '5s', '--settle-window', '1s'], {
      cwd: dir,
      env: { ...process.env, DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
    const exited = new Promise<number | null>((done) => child!.on('exit', (code) => done(code)));

    await waitFor(() => /on (http:\/\/127\.0\.0\.1:\d+)/.test(stderr), 10_000, 'the probes to listen');
    const base = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)![1]!;
    const store = emulator.store;
    const size241 = () => store.firmwaresByVersion('acme', '2.4.1')[0]!.uncompressed_size;

    // Ready and converged.
    const ready = async () => (await get(`${base}/readyz`)).status === 200;
    for (let i = 0; i < 150 && !(await ready()); i++) await new Promise((r) => setTimeout(r, 100));
    expect((await get(`${base}/readyz`)).status, stderr).toBe(200);
    await waitFor(() => size241() === 2048 && store.getAction('acme', 42)!.phases.length === 2, 10_000, 'convergence');
    expect(store.firmwaresByVersion('acme', '2.4.0')[0]!.is_deactivated).toBe(true);

    // A file edit is applied within a second or two (debounce + one pass; retries if a 5xx hits).
    const edited = Date.now();
    write('tenants/acme/firmwares.yaml', firmware(4096));
    await waitFor(() => size241() === 4096, 8000, 'the edit to be applied');
    expect(Date.now() - edited).toBeLessThan(8000);

    // A broken file: logged, nothing written, the process lives; fixed, it recovers by itself.
    write('tenants/acme/broken.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nspec: [unclosed\n');
    await waitFor(() => stderr.includes('invalid-config'), 8000, 'the broken file to be reported');
    expect((await get(`${base}/healthz`)).status).toBe(200);
    expect((await get(`${base}/metrics`)).text).toContain('dus_sync_config_valid 0');
    rmSync(join(dir, 'tenants/acme/broken.yaml'));
    let metrics = '';
    for (let i = 0; i < 80 && !metrics.includes('dus_sync_config_valid 1'); i++) {
      await new Promise((r) => setTimeout(r, 100));
      metrics = (await get(`${base}/metrics`)).text;
    }
    expect(metrics).toContain('dus_sync_config_valid 1');

    // A change made behind its back is healed by the interval pass.
    store.updateFirmware('acme', '2.4.1', { uncompressed_size: 7 });
    await waitFor(() => size241() === 4096, 8000, 'drift to be healed');

    // Metrics: the agent's own and the process's.
    metrics = (await get(`${base}/metrics`)).text;
    for (const name of ['dus_sync_reconcile_total{result="success"}', 'dus_sync_reconcile_duration_seconds_count',
      'dus_sync_changes_applied_total{tenant="acme",kind="firmware"}', 'dus_sync_changes_applied_total{tenant="acme",kind="phase"}',
      'dus_sync_drift_objects{tenant="acme"}', 'dus_sync_config_valid 1', 'dus_sync_last_success_timestamp_seconds',
      'dus_sync_api_requests_total{method="GET",status="200"}', 'process_cpu_user_seconds_total', 'nodejs_heap_size_used_bytes']) {
      expect(metrics, name).toContain(name);
    }
    // The server did fail now and then, and the agent got through anyway.
    expect(metrics).toMatch(/dus_sync_api_requests_total\{method="[A-Z]+",status="(5\d\d|error)"\} [1-9]/);

    // SIGTERM: exit 0 within seconds.
    const stopAt = Date.now();
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(Date.now() - stopAt).toBeLessThan(5000);
    child = undefined;

    // Logs are JSON lines on stderr (not a TTY), one summary per pass; stdout stays empty; no key anywhere.
    expect(stdout).toBe('');
    const lines = stderr.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; result?: string });
    expect(lines.some((l) => l.result === 'success')).toBe(true);
    expect(lines.at(-1)!.msg).toBe('stopped');
    expect(stderr).not.toContain(KEY);
  }, 60_000);
});
