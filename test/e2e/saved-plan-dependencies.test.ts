// A saved plan that deactivates firmware keeps the dependency promise of docs/rollout-control.md
// when it is applied later: the check is made again on the reads of now (another actor may have
// added a dependent, or deactivated what the plan counted on), and a deactivation whose
// activation in the same plan failed is checked again, as without a plan file. Found by the
// adversarial tester (B2, B3 of the final round).
import { request as httpRequest, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { runCli, treesRemovedAfterAll } from './helpers.js';

const tree = treesRemovedAfterAll();
const KEY = 'saved-plan-deps-key-0123456789';
let emu: RunningEmulator | undefined;
let proxy: Server | undefined;
afterEach(async () => {
  await emu?.close();
  if (proxy) await new Promise<void>((r) => proxy!.close(() => r()));
  emu = undefined;
  proxy = undefined;
});

const fw = (version_number: string, component_name: string, is_deactivated: boolean, dependencies: unknown[] = []) => ({ version_number, component_name, uncompressed_size: 1, is_deactivated, dependencies });

function seed(appDependsOnLib: boolean): Seed {
  return { tenants: { acme: { api_key: KEY, actions: [], bundles: [
    { version: 'b-lib', firmwares: [fw('1.0.0', 'lib', false), fw('2.0.0', 'lib', true)] },
    { version: 'b-app', firmwares: [fw('5.0.0', 'app', false, appDependsOnLib ? [{ component_name: 'lib', min_version: '1.0.0' }] : [])] },
  ] } } } as unknown as Seed;
}

const CONFIG = 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n';
const doc = (v: string, deactivated: boolean) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "${v}"\n  component_name: lib\n  is_deactivated: ${deactivated}\n`;

/** A proxy in front of the emulator that answers 500 to every PUT of `failing`. */
async function failingProxy(target: string, failing: string): Promise<string> {
  const to = new URL(target);
  proxy = createServer((req, res) => {
    if (req.method === 'PUT' && req.url === `/api/v1/firmwares/${failing}`) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: 'boom' }));
      req.resume();
      return;
    }
    const out = httpRequest({ host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(out);
  });
  await new Promise<void>((r) => proxy!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}

const lib = (v: string) => emu!.store.firmwaresByVersion('acme', v).find((f) => f.component_name === 'lib')!;

describe('a saved plan that deactivates firmware', () => {
  it('is refused when another actor added a dependent since the plan was made', async () => {
    emu = await startEmulator({ seed: seed(false), port: 0 });
    const dir = tree({ 'dus-sync.yaml': CONFIG, 'lib.yaml': doc('1.0.0', true) });
    const env = { DUS_BASE_URL: emu.url, DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(dir, '.state') };
    const saved = await runCli(['plan', '--out', join(dir, 'plan.json')], { cwd: dir, env });
    expect(saved.code, saved.stderr).toBe(0);
    // Another actor: app 5.0.0 now needs lib >= 1.0.0, which only 1.0.0 satisfies.
    emu.store.updateFirmware('acme', '5.0.0', { dependencies: [{ component_name: 'lib', min_version: '1.0.0' }] });
    const r = await runCli(['apply', join(dir, 'plan.json')], { cwd: dir, env });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/plan is stale: deactivating firmware 1\.0\.0 in acme leaves no active firmware to satisfy app 5\.0\.0 \(needs lib >= 1\.0\.0\)/);
    expect(lib('1.0.0').is_deactivated).toBe(false);
    // --allow-broken-dependencies lets it go, as it does for plan and apply.
    const allowed = await runCli(['apply', join(dir, 'plan.json'), '--allow-broken-dependencies'], { cwd: dir, env });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(lib('1.0.0').is_deactivated).toBe(true);
  });

  it('does not deactivate what an activation of the same plan was to replace when that activation fails', async () => {
    emu = await startEmulator({ seed: seed(true), port: 0 });
    const dir = tree({ 'dus-sync.yaml': CONFIG, 'lib.yaml': `${doc('1.0.0', true)}---\n${doc('2.0.0', false)}` });
    const url = await failingProxy(emu.url, '2.0.0');
    const env = { DUS_BASE_URL: url, DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(dir, '.state') };
    const saved = await runCli(['plan', '--out', join(dir, 'plan.json')], { cwd: dir, env });
    expect(saved.code, saved.stderr).toBe(0);
    const r = await runCli(['apply', join(dir, 'plan.json')], { cwd: dir, env });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/firmware 1\.0\.0 was not deactivated: the plan counted on firmware 2\.0\.0/);
    expect(lib('1.0.0').is_deactivated).toBe(false);
  });
});
