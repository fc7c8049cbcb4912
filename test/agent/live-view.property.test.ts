// watch's view of the live state is updated in place (src/agent/reconcile.ts liveFor and
// putLive): a targeted read of the trimmed view, put into the view, must leave it exactly as the
// targeted read of the whole view (refreshLive, which copies every version of a tenant) would,
// and fall back to a full read for the same reasons.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { refreshLive, type RefreshTargets } from '../../src/api/fetch-live.js';
import type { ApiClient } from '../../src/api/client.js';
import { ApiError } from '../../src/errors.js';
import { liveFor, putLive } from '../../src/agent/reconcile.js';
import type { Action, FirmwareBundle, LiveFirmware, LiveState, LiveTenant } from '../../src/model/index.js';

const TENANTS = ['acme', 'beta'];
const VERSIONS = ['1.0', '1.1', '2.0', '3.0'];
const BUNDLES = ['b1', 'b2', 'b3'];
const COMPONENTS = ['boot', 'modem'];

const record = fc.record({
  component_name: fc.constantFrom(...COMPONENTS),
  size: fc.constantFrom(1, 2),
  bundles: fc.subarray(BUNDLES, { minLength: 0 }),
});
const viewTenant = fc.record({
  firmwares: fc.dictionary(fc.constantFrom(...VERSIONS), fc.array(record, { maxLength: 2 })),
  actions: fc.dictionary(fc.constantFrom('1', '2', '3'), fc.option(fc.integer({ min: 0, max: 2 }), { nil: null })),
  errors: fc.subarray([1, 2, 3]),
});
const serverTenant = fc.record({
  bundles: fc.dictionary(fc.constantFrom(...BUNDLES), fc.array(fc.record({ version: fc.constantFrom(...VERSIONS), component_name: fc.constantFrom(...COMPONENTS), size: fc.constantFrom(1, 2, 3) }), { maxLength: 4 })),
  actions: fc.dictionary(fc.constantFrom('1', '2', '3'), fc.integer({ min: 0, max: 3 })),
});
const targets = fc.record({
  firmwares: fc.array(fc.record({ tenant: fc.constantFrom(...TENANTS, 'gamma'), version: fc.constantFrom(...VERSIONS), bundle: fc.option(fc.constantFrom(...BUNDLES, 'b9'), { nil: undefined }) }), { maxLength: 3 }),
  actions: fc.array(fc.record({ tenant: fc.constantFrom(...TENANTS), id: fc.integer({ min: 1, max: 3 }) }), { maxLength: 2 }),
});

type ViewT = { firmwares: Record<string, { component_name: string; size: number; bundles: string[] }[]>; actions: Record<string, number | null>; errors: number[] };
type ServerT = { bundles: Record<string, { version: string; component_name: string; size: number }[]>; actions: Record<string, number> };

const actionOf = (id: number, phases: number): Action => ({ id, phases: Array.from({ length: phases }, (_, i) => ({ name: `p${i}`, trigger_on: {}, info: {} })) } as unknown as Action);

/** A fresh LiveState from the generated view (each call a new one: the in-place one is changed). */
function viewOf(view: Record<string, ViewT>): LiveState {
  return { tenants: new Map(Object.entries(view).map(([t, v]): [string, LiveTenant] => [t, {
    firmwares: new Map(Object.entries(v.firmwares).map(([version, rs]) => [version, rs.map((r): LiveFirmware => ({
      version_number: version, component_name: r.component_name, firmware_id: null, is_deactivated: false, uncompressed_size: r.size, dependencies: [], bundles: [...r.bundles].sort(),
    }))])),
    actions: new Map(Object.entries(v.actions).map(([id, n]) => [Number(id), n === null ? null : actionOf(Number(id), n)])),
    ...(v.errors.length > 0 ? { actionErrors: new Map(v.errors.map((id) => [id, 'not the action asked for'])) } : {}),
  }])) };
}

function clientOf(server: Record<string, ServerT>): ApiClient {
  return {
    tenant: (name: string) => ({
      getBundle: (version: string) => {
        const list = server[name]?.bundles[version];
        if (list === undefined) return Promise.reject(new ApiError(`bundle ${version}: 404`, { status: 404 }));
        return Promise.resolve({ version, firmwares: list.map((f) => ({ version_number: f.version, component_name: f.component_name, uncompressed_size: f.size, is_deactivated: false, dependencies: [] })) } as unknown as FirmwareBundle);
      },
      getAction: (id: number) => {
        const n = server[name]?.actions[String(id)];
        return Promise.resolve(n === undefined ? null : actionOf(id, n));
      },
    }),
  } as unknown as ApiClient;
}

/** The view as plain Maps: an index may be a FirmwareIndex (a Map that stores single records), which equals a Map of the same lists but is another class. */
function plain(live: LiveState): LiveState {
  return { tenants: new Map([...live.tenants].map(([n, t]): [string, LiveTenant] => [n, { ...t, firmwares: new Map(t.firmwares) }])) };
}

describe('the live view updated in place', () => {
  it('equals the targeted read of the whole view, and falls back for the same reasons', async () => {
    let read = 0;
    let fellBack = 0;
    await fc.assert(fc.asyncProperty(
      fc.dictionary(fc.constantFrom(...TENANTS), viewTenant), fc.dictionary(fc.constantFrom(...TENANTS), serverTenant), targets,
      async (view, server, t) => {
        const client = clientOf(server as Record<string, ServerT>);
        const wanted = t as RefreshTargets;
        const whole = await refreshLive(client, viewOf(view as Record<string, ViewT>), wanted).catch((err: unknown) => ({ error: String(err) }));
        const inPlace = viewOf(view as Record<string, ViewT>);
        const part = await refreshLive(client, liveFor(inPlace, wanted), wanted).catch((err: unknown) => ({ error: String(err) }));
        if ('live' in whole && 'live' in part) {
          read++;
          putLive(inPlace, part.live);
          expect(plain(inPlace)).toEqual(plain(whole.live));
          expect(part.reads).toBe(whole.reads);
        } else {
          fellBack++;
          expect(part).toEqual(whole);
        }
      },
    ), { numRuns: 500 });
    // Both ways out are taken.
    // (some 125 of 500 runs read in place, the rest fall back: the bounds are far from both)
    expect(read).toBeGreaterThan(60);
    expect(fellBack).toBeGreaterThan(50);
  });
});
