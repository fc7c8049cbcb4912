// examples/ is the config repo of the README and the demo: it must stay valid and realistic.
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/load/config.js';
import { listResourceFiles, loadDesiredState } from '../../src/load/index.js';

describe('examples/', () => {
  it('validates clean and holds firmwares of both tenants and two actions', async () => {
    const config = await resolveConfig({ cwd: process.cwd(), config: 'examples/dus-sync.yaml', env: {} });
    const { desired, issues } = await loadDesiredState(config);
    expect(issues).toEqual([]);
    expect(new Set(desired.firmwares.map((f) => f.tenant))).toEqual(new Set(['acme', 'globex']));
    expect(desired.firmwares.some((f) => f.spec.is_deactivated === true)).toBe(true);
    expect(desired.firmwares.some((f) => (f.spec.dependencies ?? []).length > 0)).toBe(true);
    expect(desired.actions.map((a) => `${a.tenant}/${a.id}`)).toEqual(['acme/42', 'globex/7']);
    expect(desired.files).not.toContain('emulator-seed.yaml');
  });

  it('every file carries a modeline whose schema path resolves', async () => {
    const config = await resolveConfig({ cwd: process.cwd(), config: 'examples/dus-sync.yaml', env: {} });
    const files = [...(await listResourceFiles(config)).map((p) => join('examples', p)), 'examples/dus-sync.yaml'];
    for (const file of files) {
      const first = readFileSync(file, 'utf8').split('\n')[0]!;
      const m = /^# yaml-language-server: \$schema=(.+)$/.exec(first);
      expect(m, file).not.toBeNull();
      const target = relative(process.cwd(), resolve(dirname(file), m![1]!));
      expect(['schemas/resource.schema.json', 'schemas/config.schema.json']).toContain(target);
    }
  });

  it('the emulator seed has every declared object, with the actions partly live', async () => {
    const seed = parse(readFileSync('examples/emulator-seed.yaml', 'utf8')) as {
      tenants: Record<string, { api_key: string; bundles: { firmwares: { version_number: string }[] }[]; actions: { id: number; phases: { name: string }[] }[] }>;
    };
    const config = await resolveConfig({ cwd: process.cwd(), config: 'examples/dus-sync.yaml', env: {} });
    const { desired } = await loadDesiredState(config);
    for (const f of desired.firmwares) {
      const live = seed.tenants[f.tenant]!.bundles.flatMap((b) => b.firmwares).map((x) => x.version_number);
      expect(live, `${f.tenant} ${f.spec.version_number}`).toContain(f.spec.version_number);
    }
    for (const a of desired.actions) {
      const live = seed.tenants[a.tenant]!.actions.find((x) => x.id === a.id)!;
      expect(live.phases.length).toBeGreaterThan(0);
      expect(live.phases.length).toBeLessThan(a.phases.length);
      expect(live.phases.map((p) => p.name)).toEqual(a.phases.slice(0, live.phases.length).map((p) => p.name));
    }
    expect(seed.tenants.acme!.api_key).toBe('dev-key-acme');
    expect(seed.tenants.globex!.api_key).toBe('dev-key-globex');
  });
});
