// plan reads the bundle lists of the tenants the config names while the desired state loads
// (src/api/prefetch.ts, readAhead in src/agent/reconcile.ts). Whatever it read ahead, the plan
// must be the one a plan without read-ahead makes, and every way the read-ahead can be wrong (a
// tenant the config does not name, a key that is missing, invalid YAML) must end as before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { runCli, treesRemovedAfterAll } from './helpers.js';

const tree = treesRemovedAfterAll();
const KEYS = { acme: 'read-ahead-key-acme-0123456789', globex: 'read-ahead-key-globex-0123456789', initech: 'read-ahead-key-initech-0123456789' };

function tenantSeed(prefix: string, bundles: number, actions: number): Seed['tenants'][string] {
  return {
    api_key: KEYS[prefix as keyof typeof KEYS],
    bundles: Array.from({ length: bundles }, (_, b) => ({
      version: `${prefix}-b${b}`,
      firmwares: [{ version_number: `${b}.0.0`, component_name: 'modem', uncompressed_size: 1000 + b, is_deactivated: false, dependencies: [] }],
    })),
    actions: Array.from({ length: actions }, (_, a) => ({ id: 100 + a, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] })),
  } as unknown as Seed['tenants'][string];
}

function firmwareDocs(tenant: string, n: number): string {
  return Array.from({ length: n }, (_, b) => `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: ${tenant} }
spec:
  version_number: "${b}.0.0"
  uncompressed_size: ${b % 3 === 0 ? 5000 + b : 1000 + b}
`).join('---\n');
}

function actionDocs(tenant: string, n: number): string {
  return Array.from({ length: n }, (_, a) => `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: ${tenant} }
spec:
  id: ${100 + a}
  phases:
    - { name: canary }
    - { name: wave-1, trigger_on: { min_success_rate: 0.9 } }
`).join('---\n');
}

let emu: RunningEmulator;
const requests: string[] = [];
beforeAll(async () => {
  emu = await startEmulator({
    seed: { tenants: { acme: tenantSeed('acme', 60, 30), globex: tenantSeed('globex', 40, 0), initech: tenantSeed('initech', 5, 0) } } as unknown as Seed,
    port: 0, pageSize: 2, log: (line) => requests.push(line),
  });
});
afterAll(async () => { await emu.close(); });

const env = (extra: Record<string, string> = {}) => ({
  DUS_BASE_URL: emu.url, DUS_API_KEY_ACME: KEYS.acme, DUS_API_KEY_GLOBEX: KEYS.globex, ...extra,
});

const CONFIG = `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
  globex: { api_key_env: DUS_API_KEY_GLOBEX }
safety: { max_changes: 1000 }
`;

/** The plan's JSON without what differs from run to run. */
function planOf(stdout: string): unknown {
  const p = JSON.parse(stdout) as Record<string, unknown>;
  delete p.desired_revision;
  return p;
}

describe('plan reads the bundle lists while the desired state loads', () => {
  it('makes the same plan as without read-ahead, with no leak warning however many reads are in flight', async () => {
    const files = { 'tenants/acme/fw.yaml': firmwareDocs('acme', 60), 'tenants/acme/actions.yaml': actionDocs('acme', 30) };
    const named = tree({ 'dus-sync.yaml': CONFIG, ...files });
    // The same repository with a config that names no tenant: nothing can be read ahead (DUS_API_KEY serves acme).
    const unnamed = tree({ 'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\nsafety: { max_changes: 1000 }\n', ...files });
    const a = await runCli(['--debug', 'plan', '--format', 'json', '--max-concurrency', '64'], { cwd: named, env: env() });
    const b = await runCli(['--debug', 'plan', '--format', 'json', '--max-concurrency', '64'], { cwd: unnamed, env: env({ DUS_API_KEY: KEYS.acme }) });
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(a.stderr).toMatch(/timings: load \d+ ms \(\d+ bundle list pages read meanwhile\)/);
    expect(b.stderr).not.toMatch(/read meanwhile/);
    expect(planOf(a.stdout)).toEqual(planOf(b.stdout));
    const plan = planOf(a.stdout) as { changes: Array<{ kind: string }> };
    expect(plan.changes.filter((c) => c.kind === 'firmware')).toHaveLength(20);
    expect(plan.changes.filter((c) => c.kind === 'phase')).toHaveLength(30);
    for (const r of [a, b]) expect(r.stderr).not.toMatch(/MaxListenersExceededWarning|memory leak/);
  });

  it('a document of a tenant the config does not name is planned (read after the load), and a read ahead that failed is forgotten', async () => {
    // No tenants: list, so documents may name any tenant and DUS_API_KEY serves them. The
    // default tenant acme is read ahead with initech's key: the emulator refuses it (401), but
    // acme has no document, so that read is dropped and initech is read after the load.
    const dir = tree({
      'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\nsafety: { max_changes: 1000 }\n',
      'tenants/initech/fw.yaml': firmwareDocs('initech', 5),
    });
    const before = requests.length;
    const r = await runCli(['--debug', 'plan', '--format', 'json'], { cwd: dir, env: env({ DUS_API_KEY: KEYS.initech }) });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/read meanwhile/);
    expect(r.stderr).not.toMatch(/401|unauthori[sz]ed|refused/i);
    const plan = planOf(r.stdout) as { changes: Array<{ tenant: string }> };
    expect(plan.changes.map((c) => c.tenant)).toEqual(['initech', 'initech']);
    expect(requests.slice(before).some((l) => l.includes('tenant=initech'))).toBe(true);
  });

  it('a missing key of a tenant with documents is the same one sentence, and a missing key of a tenant without is no error', async () => {
    const dir = tree({ 'dus-sync.yaml': CONFIG, 'tenants/globex/fw.yaml': firmwareDocs('globex', 3) });
    const missing = await runCli(['plan'], { cwd: dir, env: env({ DUS_API_KEY_GLOBEX: '' }) });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no API key for tenant "globex": set the environment variable DUS_API_KEY_GLOBEX/);
    expect(missing.stderr).not.toMatch(/\n\s+at /);
    // acme's key is missing, but only globex has documents.
    const fine = await runCli(['plan', '--format', 'json'], { cwd: dir, env: env({ DUS_API_KEY_ACME: '' }) });
    expect(fine.code, fine.stderr).toBe(0);
    expect((planOf(fine.stdout) as { changes: unknown[] }).changes).toHaveLength(1);
  });

  it('invalid YAML ends with its issue and nothing on standard output; what was read ahead is only the bundle lists and declared actions; --no-read-ahead reads nothing', async () => {
    // Many files, so that the lists are read while they load.
    const padding = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`pad/p${i}.yaml`, '# nothing here\n']));
    const dir = tree({ 'dus-sync.yaml': CONFIG, ...padding, 'tenants/acme/actions.yaml': actionDocs('acme', 5), 'tenants/acme/fw.yaml': `${firmwareDocs('acme', 30)}---\napiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: 7\n` });
    for (const flags of [[], ['--no-read-ahead']]) {
      const before = requests.length;
      const r = await runCli(['plan', ...flags], { cwd: dir, env: env() });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/tenants\/acme\/fw\.yaml:\d+:\d+/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      const seen = requests.slice(before);
      if (flags.length > 0) expect(seen).toEqual([]);
      else for (const line of seen) expect(line).toMatch(/^GET \/api\/v1\/(firmware-bundles(\?\S*)?|actions\/\d+) /);
    }
  });

  it('declared actions read while the files load spend the same budget: the same sentence as without read-ahead', async () => {
    // 30 actions of some 700 bytes each against 8 x 1 KiB of actions kept at most.
    const big = await startEmulator({
      seed: { tenants: { acme: {
        api_key: KEYS.acme,
        bundles: [{ version: 'b0', firmwares: [{ version_number: '0.0.0', component_name: 'modem', uncompressed_size: 1, is_deactivated: false, dependencies: [] }] }],
        actions: Array.from({ length: 30 }, (_, a) => ({ id: 100 + a, status: 'pending', phases: [{ name: `canary-${'x'.repeat(640)}`, trigger_on: {}, info: {} }] })),
      } } } as unknown as Seed,
      port: 0, pageSize: 1,
    });
    try {
      const dir = tree({ 'dus-sync.yaml': CONFIG, 'tenants/acme/actions.yaml': actionDocs('acme', 30) });
      const sentences: string[] = [];
      for (const flags of [[], ['--no-read-ahead']]) {
        const r = await runCli(['--max-response-size', '1KiB', 'plan', ...flags], { cwd: dir, env: env({ DUS_BASE_URL: big.url }) });
        expect(r.code).toBe(1);
        expect(r.stderr).not.toMatch(/\n\s+at /);
        sentences.push(r.stderr.split('\n').filter((l) => l.startsWith('error:')).join('\n'));
      }
      expect(sentences[0]).toMatch(/the declared actions of tenant acme total more than 8 KiB/);
      expect(sentences[0]).toBe(sentences[1]);
    } finally {
      await big.close();
    }
  });

  it('--tenant narrows what is read ahead: the other tenant\'s list is not read', async () => {
    const dir = tree({ 'dus-sync.yaml': CONFIG, 'tenants/acme/fw.yaml': firmwareDocs('acme', 4), 'tenants/globex/fw.yaml': firmwareDocs('globex', 4) });
    const before = requests.length;
    const r = await runCli(['--tenant', 'acme', 'plan', '--format', 'json'], { cwd: dir, env: env() });
    expect(r.code, r.stderr).toBe(0);
    const seen = requests.slice(before);
    expect(seen.some((l) => l.includes('tenant=acme'))).toBe(true);
    expect(seen.some((l) => l.includes('tenant=globex'))).toBe(false);
  });
});
