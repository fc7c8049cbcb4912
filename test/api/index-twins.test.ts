// One version number and component listed as records that differ: two records to dus-sync, and
// plan refuses the number as ambiguous. Merged, the first record's fields were PUT back over the
// second's (a breaker found a size rewritten in a bundle the YAML does not name).
import { describe, expect, it } from 'vitest';
import { indexFirmwares, refreshLive } from '../../src/api/fetch-live.js';
import type { ApiClient } from '../../src/api/client.js';
import { plan as computePlan } from '../../src/core/plan.js';
import type { DesiredState, FirmwareBundle, LiveState } from '../../src/model/index.js';

type Fw = { version_number: string; component_name: string; firmware_id?: string | null; uncompressed_size?: number; is_deactivated?: boolean; dependencies?: object[] };
async function* pagesOf(...bundles: [string, Fw[]][]): AsyncGenerator<FirmwareBundle[]> {
  for (const [version, firmwares] of bundles) yield [{ version, firmwares } as unknown as FirmwareBundle];
}
const fw = (extra: Partial<Fw>): Fw => ({ version_number: '2.4.1', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [], ...extra });

describe('records listed under one number and component', () => {
  const cases: [string, Fw, Fw, number][] = [
    ['two firmware_ids', fw({ firmware_id: 'a' }), fw({ firmware_id: 'b' }), 2],
    ['one firmware_id with two sizes', fw({ firmware_id: 'a' }), fw({ firmware_id: 'a', uncompressed_size: 2000 }), 2],
    ['no firmware_id, two states', fw({}), fw({ is_deactivated: true }), 2],
    ['no firmware_id, other dependencies', fw({}), fw({ dependencies: [{ component_name: 'boot', min_version: '1.0' }] }), 2],
    ['no firmware_id, dependencies that differ inside a nested object', fw({ dependencies: [{ component_name: 'boot', min_version: '1.0', constraints: { max: '1.9' } }] }),
      fw({ dependencies: [{ component_name: 'boot', min_version: '1.0', constraints: { max: '2.5' } }] }), 2],
    ['the same firmware twice (one without its id)', fw({ firmware_id: 'a' }), fw({}), 1],
    ['the same firmware, dependencies in another order', fw({ dependencies: [{ component_name: 'a', min_version: '1' }, { component_name: 'b', min_version: '2' }] }),
      fw({ dependencies: [{ min_version: '2', component_name: 'b' }, { component_name: 'a', min_version: '1' }] }), 1],
  ];
  for (const [what, first, second, n] of cases) {
    it(`${what}: ${n} record(s)`, async () => {
      const index = await indexFirmwares(pagesOf(['2024.06', [first]], ['2024.09', [second]]), { versions: new Set(['2.4.1']) });
      const records = index.get('2.4.1')!;
      expect(records).toHaveLength(n);
      if (n === 1) expect(records[0]!.bundles).toEqual(['2024.06', '2024.09']);
      else expect(records.map((r) => r.bundles)).toEqual([['2024.06'], ['2024.09']]);
    });
  }

  it('plan refuses the number, naming the records, and plans no write', async () => {
    const index = await indexFirmwares(pagesOf(['2024.06', [fw({ firmware_id: 'a' })]], ['2024.09', [fw({ firmware_id: 'b', uncompressed_size: 2000 })]]), { versions: new Set(['2.4.1']) });
    const live: LiveState = { tenants: new Map([['acme', { firmwares: index, actions: new Map() }]]) } as unknown as LiveState;
    const desired: DesiredState = {
      firmwares: [{ kind: 'firmware', tenant: 'acme', labels: {}, source: { file: 'fw.yaml', line: 1, column: 1 }, spec: { version_number: '2.4.1', is_deactivated: true } }],
      actions: [], files: [],
    } as unknown as DesiredState;
    const plan = computePlan(desired, live);
    expect(plan.changes).toEqual([]);
    expect(plan.errors.map((e) => e.message)).toEqual([expect.stringMatching(/^version 2\.4\.1 is listed as 2 firmware records that differ \(modem a in 2024\.06; modem b in 2024\.09\).*will not change it/)]);
  });

  it('watch\'s targeted read falls back to a full read when a bundle it reads lists a twin', async () => {
    const index = await indexFirmwares(pagesOf(['2024.06', [fw({ firmware_id: 'a' })]]), { versions: new Set(['2.4.1']) });
    const base = { tenants: new Map([['acme', { firmwares: index, actions: new Map() }]]) } as unknown as LiveState;
    const server: Record<string, Fw[]> = { '2024.06': [fw({ firmware_id: 'a' })], '2024.09': [fw({ firmware_id: 'b', uncompressed_size: 2000 })] };
    const client = { tenant: () => ({ getBundle: (v: string) => Promise.resolve({ version: v, firmwares: server[v] ?? [] }), getAction: () => Promise.resolve(null) }) } as unknown as ApiClient;
    const r = await refreshLive(client, base, { firmwares: [{ tenant: 'acme', version: '2.4.1', bundle: '2024.09' }], actions: [] });
    expect(r).toEqual({ fallback: 'firmware 2.4.1 of tenant acme is listed as records that differ' });
    server['2024.09'] = [fw({})];
    const same = await refreshLive(client, base, { firmwares: [{ tenant: 'acme', version: '2.4.1', bundle: '2024.09' }], actions: [] });
    expect('fallback' in same).toBe(false);
  });

  it('dependencies given as null or left out are unknown (UNKNOWN_DEPENDENCIES), not none', async () => {
    const { UNKNOWN_DEPENDENCIES, NO_DEPENDENCIES } = await import('../../src/intern.js');
    const index = await indexFirmwares(pagesOf(['b', [{ version_number: '1', component_name: 'a', dependencies: null as never }, { version_number: '2', component_name: 'a' }, fw({ version_number: '3' })]]), { versions: new Set(['1', '2', '3']) });
    expect(index.get('1')![0]!.dependencies).toBe(UNKNOWN_DEPENDENCIES);
    expect(index.get('2')![0]!.dependencies).toBe(UNKNOWN_DEPENDENCIES);
    expect(index.get('3')![0]!.dependencies).toBe(NO_DEPENDENCIES);
  });
});
