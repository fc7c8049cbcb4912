// keysInLive searches batches of live records as one text before walking any of them: it must
// find exactly what the walk of each record finds, wherever the key sits and however it is spelled.
import { afterEach, describe, expect, it } from 'vitest';
import { keysIn, keysInExport, keysInLive } from '../../src/live-keys.js';
import { indexFirmwares } from '../../src/api/fetch-live.js';
import type { FirmwareBundle } from '../../src/model/index.js';
import type { Action, DesiredState, LiveFirmware, LiveState } from '../../src/model/index.js';
import { clearSecretsForTests, registerSecret } from '../../src/redact.js';

const KEY = 'sk-live-0123456789abcdef';

function record(n: number, extra: Partial<LiveFirmware> = {}): LiveFirmware {
  return { version_number: `1.0.${n}`, component_name: 'modem', firmware_id: null, is_deactivated: false, uncompressed_size: n,
    dependencies: [{ component_name: 'bootloader', min_version: '1.0.0' }], bundles: [`2024.${n % 7}`], ...extra };
}

function world(records: LiveFirmware[], actions: Action[] = []): { live: LiveState; desired: DesiredState } {
  const firmwares = new Map(records.map((r) => [r.version_number, [r]] as const));
  const live: LiveState = { tenants: new Map([['acme', { firmwares, actions: new Map(actions.map((a) => [a.id, a])) }]]) };
  const desired = {
    firmwares: records.map((r) => ({ tenant: 'acme', spec: { version_number: r.version_number } })),
    actions: actions.map((a) => ({ tenant: 'acme', id: a.id })),
    files: [],
  } as unknown as DesiredState;
  return { live, desired };
}

/** What walking every object on its own finds: the reference. */
function walked(records: LiveFirmware[], actions: Action[] = []) {
  return [
    ...records.flatMap((r) => keysIn('acme', `firmware ${r.version_number} (${r.component_name})`, r)),
    ...actions.flatMap((a) => keysIn('acme', `action ${a.id}`, a)),
  ];
}

describe('keysInLive', () => {
  afterEach(() => clearSecretsForTests());

  const placements: Array<[string, (n: number) => Partial<LiveFirmware>]> = [
    ['a dependency', () => ({ dependencies: [{ component_name: 'x', min_version: `v-${KEY}` }] })],
    ['a bundle version', () => ({ bundles: [`b${KEY.slice(3, 15)}`] })],
    ['the firmware id, percent-encoded', () => ({ firmware_id: encodeURIComponent(`${KEY}/x`) })],
    ['a JSON-escaped fragment', () => ({ component_name: JSON.stringify({ k: KEY }).replace(/-/g, '\\u002d') })],
    ['an object key', () => ({ dependencies: [{ component_name: 'x', min_version: '1', [KEY]: 1 } as never] })],
  ];

  for (const [where, extra] of placements) {
    it(`finds a key in ${where} among 3,000 clean records, as the walk does`, () => {
      registerSecret(KEY);
      const records = Array.from({ length: 3000 }, (_, n) => record(n, n === 2047 ? extra(n) : {}));
      const found = keysInLive(world(records).live, world(records).desired);
      expect(found.length).toBeGreaterThan(0);
      expect(found).toEqual(walked(records));
    });
  }

  it('finds a key in an action, and nothing in clean data', () => {
    registerSecret(KEY);
    const clean = Array.from({ length: 2500 }, (_, n) => record(n));
    expect(keysInLive(world(clean).live, world(clean).desired)).toEqual([]);
    const action = { id: 7, status: 'pending', phases: [{ name: 'a', trigger_on: {}, info: { token: KEY } }] } as unknown as Action;
    const { live, desired } = world(clean, [action]);
    expect(keysInLive(live, desired)).toEqual([{ tenant: 'acme', object: 'action 7', path: 'phases[0].info.token' }]);
  });

  it('a hit that straddles two values costs a walk, not a false report', () => {
    registerSecret(KEY);
    // "…sk-live-0123" ends one string and "456789abcdef" starts the next: joined, they hold 8+ characters of the key.
    const records = [record(1, { component_name: `x${KEY.slice(0, 12)}` }), record(2, { component_name: KEY.slice(12) })];
    expect(keysInLive(world(records).live, world(records).desired)).toEqual(walked(records));
  });

  it('keysInExport agrees with the walk', () => {
    registerSecret(KEY);
    const records = Array.from({ length: 1500 }, (_, n) => record(n, n === 1400 ? { bundles: [KEY] } : {}));
    const found = keysInExport('acme', new Map(records.map((r) => [r.version_number, [r]])), []);
    expect(found).toEqual(walked(records));
    expect(found).toHaveLength(1);
  });
});

/** The records as a server would list them: in bundles of 10, pages of 100 bundles; the index builds the live state. */
async function indexed(records: LiveFirmware[]): Promise<{ live: LiveState; desired: DesiredState }> {
  const bundles: FirmwareBundle[] = [];
  for (let i = 0; i < records.length; i += 10) {
    bundles.push({ version: `b${i}`, firmwares: records.slice(i, i + 10).map(({ bundles: _b, ...r }) => r) } as unknown as FirmwareBundle);
  }
  async function* pages(): AsyncGenerator<FirmwareBundle[]> { for (let i = 0; i < bundles.length; i += 100) yield bundles.slice(i, i + 100); }
  const firmwares = await indexFirmwares(pages(), { versions: new Set(records.map((r) => r.version_number)) });
  const live: LiveState = { tenants: new Map([['acme', { firmwares, actions: new Map() }]]) };
  const desired = { firmwares: records.map((r) => ({ tenant: 'acme', spec: { version_number: r.version_number } })).sort((a, b) => (a.spec.version_number < b.spec.version_number ? -1 : 1)), actions: [], files: [] } as unknown as DesiredState;
  return { live, desired };
}

describe('keysInLive over what the index read (searched page by page as it was read)', () => {
  afterEach(() => clearSecretsForTests());

  const placements: Array<[string, (n: number) => Partial<LiveFirmware>]> = [
    ['a dependency', () => ({ dependencies: [{ component_name: 'x', min_version: `v-${KEY}` }] })],
    ['the firmware id, percent-encoded', () => ({ firmware_id: encodeURIComponent(`${KEY}/x`) })],
    ['a JSON-escaped fragment of the component', () => ({ component_name: JSON.stringify({ k: KEY }).replace(/-/g, '\\u002d') })],
    ['an object key of a dependency', () => ({ dependencies: [{ component_name: 'x', min_version: '1', [KEY]: 1 } as never] })],
    ['the version number', () => ({ version_number: `9.${KEY}` })],
  ];
  for (const [where, extra] of placements) {
    it(`finds a key in ${where} among 3,000 records, as the walk of the indexed records does`, async () => {
      registerSecret(KEY);
      const records = Array.from({ length: 3000 }, (_, n) => record(n, n === 2047 ? extra(n) : {}));
      const { live, desired } = await indexed(records);
      const found = keysInLive(live, desired);
      expect(found.length).toBeGreaterThan(0);
      const all = [...live.tenants.get('acme')!.firmwares.values()].flat().sort((a, b) => (a.version_number < b.version_number ? -1 : 1));
      expect(found).toEqual(walked(all));
    });
  }

  it('a key in a bundle version, added to a record a page after the record was read, is found', async () => {
    registerSecret(KEY);
    const records = Array.from({ length: 2000 }, (_, n) => record(n));
    const { bundles: _b, ...first } = records[5]!;
    const bundles = [
      ...Array.from({ length: 200 }, (_, b) => ({ version: `b${b}`, firmwares: records.slice(b * 10, b * 10 + 10).map(({ bundles: _x, ...r }) => r) })),
      { version: `late-${KEY}`, firmwares: [first] },
    ] as unknown as FirmwareBundle[];
    async function* pages(): AsyncGenerator<FirmwareBundle[]> { for (let i = 0; i < bundles.length; i += 100) yield bundles.slice(i, i + 100); }
    const firmwares = await indexFirmwares(pages(), { versions: new Set(records.map((r) => r.version_number)) });
    const live: LiveState = { tenants: new Map([['acme', { firmwares, actions: new Map() }]]) };
    const desired = { firmwares: [{ tenant: 'acme', spec: { version_number: first.version_number } }], actions: [], files: [] } as unknown as DesiredState;
    expect(keysInLive(live, desired)).toEqual([{ tenant: 'acme', object: `firmware ${first.version_number} (modem)`, path: 'bundles[1]' }]);
  });

  it('a key registered after the index read the records is still found (the search is per generation of keys)', async () => {
    const records = Array.from({ length: 1500 }, (_, n) => record(n, n === 700 ? { component_name: `m-${KEY}` } : {}));
    const { live, desired } = await indexed(records);
    registerSecret(KEY);
    expect(keysInLive(live, desired)).toHaveLength(1);
  });

  it('clean records read by the index are found clean', async () => {
    registerSecret(KEY);
    const { live, desired } = await indexed(Array.from({ length: 2500 }, (_, n) => record(n)));
    expect(keysInLive(live, desired)).toEqual([]);
  });
});
