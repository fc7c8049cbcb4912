// keysInLive searches batches of live records as one text before walking any of them: it must
// find exactly what the walk of each record finds, wherever the key sits and however it is spelled.
import { afterEach, describe, expect, it } from 'vitest';
import { keysIn, keysInExport, keysInLive } from '../../src/live-keys.js';
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
