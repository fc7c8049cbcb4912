// export against a paginating emulator (60 bundles, 7 per page, absolute next links), then plan
// on the exported folder: nothing to change. Also: nothing is written outside --out, and no key
// appears in what was written.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { fetchLive } from '../../src/api/fetch-live.js';
import { plan } from '../../src/core/plan.js';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { resolveConfig } from '../../src/load/config.js';
import { loadDesiredState } from '../../src/load/index.js';
import { buildCli, type PrivateBuild } from '../diff/built-cli.js';

const run = promisify(execFile);
const KEY = 'export-test-key-0123456789';

/** 60 bundles; records repeat across bundles; one version number is ambiguous; a hostile component name. */
function seed(): Seed {
  const bundles = Array.from({ length: 60 }, (_, i) => {
    const firmwares = [
      { version_number: `1.${i}`, component_name: 'modem', uncompressed_size: 1000 + i, is_deactivated: i % 9 === 0,
        dependencies: i % 2 === 0 ? [{ component_name: 'bootloader', min_version: `0.${i}` }, { component_name: 'dsp', min_version: '1.10' }] : [] },
      { version_number: `boot-${Math.floor(i / 3)}`, component_name: 'bootloader', uncompressed_size: 64, is_deactivated: false, dependencies: [] },
    ];
    if (i % 10 === 0) firmwares.push({ version_number: `6.6.${i}`, component_name: '../../evil', uncompressed_size: 1, is_deactivated: false, dependencies: [] });
    if (i === 5) firmwares.push({ version_number: '1.5', component_name: 'radio', uncompressed_size: 5, is_deactivated: false, dependencies: [] });
    return { version: `2024.${String(i).padStart(2, '0')}`, firmwares };
  });
  return {
    tenants: {
      acme: {
        api_key: KEY,
        bundles,
        actions: [
          { id: 42, status: 'pending', phases: [
            { name: 'canary', trigger_on: { after_minutes: 60 }, info: { percent: 1, notes: { z: 'last', a: 'first' } } },
            { name: 'wave-1', trigger_on: { min_success_rate: 0.98 }, info: { percent: 10 } },
          ] },
          { id: 7, status: 'completed', phases: [] },
        ],
      },
      globex: { api_key: 'globex-key-0123456789', bundles: [{ version: 'g1', firmwares: [{ version_number: '9.9', component_name: 'x' }] }] },
    },
  };
}

let emulator: RunningEmulator;
let cli: PrivateBuild;
let root: string;
let out: string;

function env(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY };
}

beforeAll(async () => {
  [emulator, cli] = await Promise.all([startEmulator({ seed: seed(), port: 0, pageSize: 7, absoluteNext: true }), buildCli()]);
  root = mkdtempSync(join(tmpdir(), 'dus-sync-export-rt-'));
  writeFileSync(join(root, 'dus-sync.yaml'), 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n');
  out = join(root, 'tenants', 'acme');
});

afterAll(async () => {
  await emulator?.close();
  cli?.cleanup();
  if (root) rmSync(root, { recursive: true, force: true });
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((p) => statSync(join(dir, p)).isFile()).map((p) => p.split('\\').join('/')).sort();
}

describe('export → plan', () => {
  let exported: { stdout: string; stderr: string };

  beforeAll(async () => {
    exported = await run(process.execPath, [cli.cli, 'export', '--tenant', 'acme', '--out', 'tenants/acme', '--action', '42', '--action', '7'], { cwd: root, env: env() });
  });

  it('writes one file per component and per action, and reports them', () => {
    expect(filesUnder(root)).toEqual([
      'dus-sync.yaml', 'tenants/acme/actions/42.yaml', 'tenants/acme/actions/7.yaml',
      'tenants/acme/firmwares/bootloader.yaml', 'tenants/acme/firmwares/evil.yaml', 'tenants/acme/firmwares/modem.yaml',
    ]);
    expect(exported.stdout).toBe('Exported 85 firmwares of 3 components and 2 actions of tenant acme to tenants/acme (5 files); 1 version number skipped.\n');
    expect(exported.stderr).toContain('wrote firmwares/modem.yaml');
    expect(exported.stderr).toMatch(/warning: not exported: version number "1\.5" belongs to 2 components \(modem, radio\)/);
  });

  it('keeps the hostile component inside --out', () => {
    const evil = readFileSync(join(out, 'firmwares', 'evil.yaml'), 'utf8');
    expect(evil).toContain('component_name: ../../evil');
    expect(relative(root, join(out, 'firmwares', 'evil.yaml')).startsWith('..')).toBe(false);
  });

  it('writes the source and the time in a header, and never the key', () => {
    for (const f of filesUnder(out)) {
      const text = readFileSync(join(out, f), 'utf8');
      expect(text.split('\n')[1]).toMatch(new RegExp(`^# Exported by dus-sync \\d+\\.\\d+\\.\\d+\\S* from ${emulator.url.replace(/[.]/g, '\\.')} tenant acme at \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$`));
      expect(text).not.toContain(KEY);
    }
    expect(exported.stdout + exported.stderr).not.toContain(KEY);
  });

  it('plans no change on the exported folder (in process)', async () => {
    const config = await resolveConfig({ config: join(root, 'dus-sync.yaml'), cwd: root, env: { DUS_BASE_URL: emulator.url } });
    const loaded = await loadDesiredState(config);
    expect(loaded.issues).toEqual([]);
    expect(loaded.desired.firmwares).toHaveLength(85);
    const client = createApiClient({ baseUrl: emulator.url, keys: new Map([['acme', KEY]]) });
    try {
      const p = plan(loaded.desired, await fetchLive(client, loaded.desired));
      expect(p.changes).toEqual([]);
      expect(p.conflicts).toEqual([]);
      expect(p.errors).toEqual([]);
      expect(p.summary.unchanged).toBe(87);
    } finally {
      await client.close();
    }
  });

  it('plan --detailed-exitcode exits 0 right after export', async () => {
    const r = await run(process.execPath, [cli.cli, 'plan', '--detailed-exitcode'], { cwd: root, env: env() });
    expect(r.stdout).toMatch(/no changes/i);
  });

  it('writes the same bytes again (but the time), and leaves other files alone', async () => {
    const before = readFileSync(join(out, 'firmwares', 'modem.yaml'), 'utf8');
    writeFileSync(join(out, 'notes.md'), 'mine\n');
    writeFileSync(join(out, 'firmwares', 'old.yaml'), '# stale\n');
    const again = await run(process.execPath, [cli.cli, 'export', '--out', 'tenants/acme'], { cwd: root, env: env() });
    const after = readFileSync(join(out, 'firmwares', 'modem.yaml'), 'utf8');
    const untimed = (t: string) => t.replace(/ at \S+Z$/m, '');
    expect(untimed(after)).toBe(untimed(before));
    expect(readFileSync(join(out, 'notes.md'), 'utf8')).toBe('mine\n');
    expect(again.stderr).toMatch(/warning: firmwares\/old\.yaml was not written by this export/);
    rmSync(join(out, 'firmwares', 'old.yaml'));
    rmSync(join(out, 'notes.md'));
  });

  it('fails with one sentence for an action that does not exist, writing nothing', async () => {
    const target = join(root, 'other');
    const r = await run(process.execPath, [cli.cli, 'export', '--out', 'other', '--action', '999'], { cwd: root, env: env() }).catch((e: { code: number; stderr: string }) => e);
    expect(r).toMatchObject({ code: 1 });
    expect((r as { stderr: string }).stderr).toMatch(/action 999 was not found in tenant "acme"; nothing was written/);
    expect(() => statSync(target)).toThrow();
  });
});

describe('export of a live object its YAML cannot declare', () => {
  it('is not written, with a warning naming the file and why; what is written loads, and plans no change', async () => {
    const odd = await startEmulator({ seed: { tenants: { acme: { api_key: KEY, bundles: [{ version: 'b1', firmwares: [{ version_number: '1.0', component_name: 'modem', uncompressed_size: 1, is_deactivated: false, dependencies: [] }] }],
      actions: [{ id: 42, status: 'pending', phases: [{ name: 'big', trigger_on: {}, info: { fleet: 1e21 } }] }, { id: 43, status: 'pending', phases: [{ name: 'ok', trigger_on: {}, info: {} }] }] } } } as unknown as Seed, port: 0 });
    const dir = mkdtempSync(join(tmpdir(), 'dus-sync-export-odd-'));
    try {
      writeFileSync(join(dir, 'dus-sync.yaml'), 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n');
      const e = { ...env(), DUS_BASE_URL: odd.url };
      const r = await run(process.execPath, [cli.cli, 'export', '--out', 'tenants/acme', '--action', '42', '--action', '43'], { cwd: dir, env: e });
      expect(r.stderr).toMatch(/warning: not exported: actions\/42\.yaml, since dus-sync could not load it back \(\d+:\d+: [^\n]*\); the live object holds what its YAML cannot declare/);
      expect(r.stdout).toBe('Exported 1 firmware of 1 component and 2 actions of tenant acme to tenants/acme (2 files; 1 not written, see above).\n');
      expect(filesUnder(join(dir, 'tenants'))).toEqual(['acme/actions/43.yaml', 'acme/firmwares/modem.yaml']);
      const p = await run(process.execPath, [cli.cli, 'plan', '--detailed-exitcode'], { cwd: dir, env: e });
      expect(p.stdout).toMatch(/no changes/i);
    } finally {
      await odd.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
