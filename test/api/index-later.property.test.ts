// indexFirmwares with a filter that comes later (plan reads the bundle list while the desired
// state loads) must keep exactly what it keeps with the filter known from the start: the same
// records, in the same order, with the same bundles, the same budget spent, the same errors.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { indexFirmwares, recordsBudget, type IndexFilter } from '../../src/api/fetch-live.js';
import type { FirmwareBundle } from '../../src/model/index.js';

interface Fw { version_number: string; component_name: string; firmware_id?: string | null; is_deactivated?: boolean | null; uncompressed_size?: number; dependencies?: { component_name: string; min_version: string }[] }

// A small world of firmware: each (number, component) is one firmware with fixed fields, listed
// in one or more bundles (a server lists the same firmware the same way wherever it is).
const numbers = ['1.0.0', '1.2.0', '2.0.0', '2.0.1', '3.1.4', '10.0.0', 'v7', '0.9.9'];
const components = ['modem', 'wifi', 'boot'];
const firmware = fc.record({
  version_number: fc.constantFrom(...numbers),
  component_name: fc.constantFrom(...components),
  is_deactivated: fc.oneof(fc.constant(false), fc.constant(true), fc.constant(null)),
  uncompressed_size: fc.nat(5000),
  deps: fc.boolean(),
  id: fc.boolean(),
}).map((f): Fw => ({
  version_number: f.version_number, component_name: f.component_name, is_deactivated: f.is_deactivated, uncompressed_size: f.uncompressed_size,
  firmware_id: f.id ? `id-${f.version_number}-${f.component_name}` : null,
  dependencies: f.deps ? [{ component_name: 'boot', min_version: '1.0.0' }] : [],
}));
// More names than a record keeps (16 first ones, and the declared ones beyond them).
const bundleNames = fc.constantFrom('2024.01', '2024.02', '2024.03', '2023.12', 'b-a', 'b-b', 'b-c', 'b-d', 'b-e',
  ...Array.from({ length: 14 }, (_, i) => `z-${String(i).padStart(2, '0')}`));

const world = fc.record({
  // Sometimes one or two firmware in many bundles: more bundle versions than a record keeps.
  catalogue: fc.oneof(
    fc.uniqueArray(firmware, { selector: (f) => `${f.version_number}\0${f.component_name}`, minLength: 1, maxLength: 14 }),
    // Twins: one number and component listed as records that differ (firmware_id or fields).
    fc.uniqueArray(firmware, { selector: (f) => `${f.version_number}\0${f.component_name}\0${f.firmware_id}\0${f.is_deactivated}\0${f.uncompressed_size}`, minLength: 1, maxLength: 10 }),
    fc.uniqueArray(firmware, { selector: (f) => `${f.version_number}\0${f.component_name}`, minLength: 1, maxLength: 2 }),
  ),
  listing: fc.array(fc.tuple(bundleNames, fc.array(fc.nat(100), { minLength: 1, maxLength: 5 })), { minLength: 1, maxLength: 40 }),
  pageSize: fc.integer({ min: 1, max: 4 }),
  declared: fc.subarray(numbers),
  declaredBundles: fc.subarray(['2024.02', 'b-c', 'b-e', 'z-13', 'z-07', 'nowhere']),
  satisfiers: fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 3 })),
  after: fc.nat(10),
  heldEarly: fc.oneof(fc.constant(undefined), fc.integer({ min: 50, max: 2000 })),
  budget: fc.oneof(fc.constant(undefined), fc.integer({ min: 400, max: 20_000 })),
});

type World = typeof world extends fc.Arbitrary<infer T> ? T : never;

function pagesOf(w: World): FirmwareBundle[][] {
  const bundles = w.listing.map(([version, picks]) => ({ version, firmwares: picks.map((i) => w.catalogue[i % w.catalogue.length]!) }) as unknown as FirmwareBundle);
  const pages: FirmwareBundle[][] = [];
  for (let i = 0; i < bundles.length; i += w.pageSize) pages.push(bundles.slice(i, i + w.pageSize));
  return pages;
}

async function* stream(pages: FirmwareBundle[][], onPage?: (n: number) => void): AsyncGenerator<FirmwareBundle[]> {
  for (let i = 0; i < pages.length; i++) {
    onPage?.(i);
    await new Promise((r) => setImmediate(r));
    yield pages[i]!;
  }
}

async function outcome(run: () => Promise<ReadonlyMap<string, unknown>>): Promise<unknown> {
  try {
    const map = await run();
    return { entries: [...map] };
  } catch (err) {
    return { error: (err as Error).message.replace(/after \d+ pages?/, 'after N pages') };
  }
}

describe('indexFirmwares with the filter given later', () => {
  it('keeps what it keeps with the filter from the start, whenever the filter comes', async () => {
    await fc.assert(fc.asyncProperty(world, async (w) => {
      const filter: IndexFilter = {
        versions: new Set(w.declared),
        bundles: new Set(w.declaredBundles),
        ...(w.satisfiers !== undefined ? { satisfiers: w.satisfiers } : {}),
      };
      const pages = pagesOf(w);
      const budgetA = w.budget === undefined ? undefined : { ...recordsBudget(1), left: w.budget, limit: w.budget };
      const budgetB = w.budget === undefined ? undefined : { ...recordsBudget(1), left: w.budget, limit: w.budget };
      const direct = await outcome(() => indexFirmwares(stream(pages), { ...filter, ...(budgetA ? { budget: budgetA } : {}) }));
      let give!: (f: IndexFilter) => void;
      const later = new Promise<IndexFilter>((resolve) => { give = resolve; });
      // The filter comes when the list reaches page `after` (or after the last page).
      let given = false;
      const onPage = (n: number) => { if (n >= w.after && !given) { given = true; give(filter); } };
      const run = indexFirmwares(stream(pages, onPage), { later, ...(w.heldEarly !== undefined ? { heldEarly: w.heldEarly } : {}), ...(budgetB ? { budget: budgetB } : {}) });
      setTimeout(() => { if (!given) { given = true; give(filter); } }, 5);
      const delayed = await outcome(() => run);
      // An early read may pass a budget that the filtered one keeps under (it holds everything
      // until the filter comes); everywhere else the two agree, budget included.
      if ('error' in (delayed as object) && !('error' in (direct as object))) {
        expect((delayed as { error: string }).error).toMatch(/passed .* in memory/);
        return;
      }
      expect(delayed).toEqual(direct);
      if (budgetA && budgetB && !('error' in (direct as object))) expect(budgetB.left).toBe(budgetA.left);
    }), { numRuns: 400 });
  });

  it('a firmware in more bundles than a record keeps: the first 16 and the declared ones, as with the filter from the start', async () => {
    const names = Array.from({ length: 24 }, (_, i) => `2024.${String(24 - i).padStart(2, '0')}`);
    const pages: FirmwareBundle[][] = names.map((version) => [{ version, firmwares: [{ version_number: '1.0.0', component_name: 'modem' }] } as unknown as FirmwareBundle]);
    const filter: IndexFilter = { versions: new Set(['1.0.0']), bundles: new Set(['2024.24', '2024.20']) };
    const direct = await indexFirmwares(stream(pages), filter);
    const delayed = await indexFirmwares(stream(pages), { later: new Promise((r) => setTimeout(() => r(filter), 30)) });
    expect(delayed).toEqual(direct);
    expect(direct.get('1.0.0')![0]!.bundles).toHaveLength(18);
  });

  it('a number whose first record was evicted after another component joined it keeps its place, as with the filter from the start', async () => {
    // The property's counterexample: 1.0.0 is first held by modem, wifi joins it, then modem 1.2.0
    // evicts modem 1.0.0 (two highest kept); the list keeps 1.0.0 where it was, before 2.0.1.
    const fw = (version_number: string, component_name: string) => ({ version_number, component_name, is_deactivated: null, dependencies: [] });
    const pages = [
      [fw('1.0.0', 'modem'), fw('2.0.1', 'modem')],
      [fw('1.0.0', 'wifi'), fw('1.0.0', 'modem')],
      [fw('1.2.0', 'modem')],
    ].map((firmwares) => [{ version: '2024.01', firmwares } as unknown as FirmwareBundle]);
    const filter: IndexFilter = { versions: new Set(), bundles: new Set(), satisfiers: 2 };
    const direct = await indexFirmwares(stream(pages), filter);
    const delayed = await indexFirmwares(stream(pages), { later: new Promise((r) => setTimeout(() => r(filter), 20)) });
    expect([...direct.keys()]).toEqual(['1.0.0', '2.0.1', '1.2.0']);
    expect([...delayed]).toEqual([...direct]);
    expect(direct.get('1.0.0')!.map((r) => r.component_name)).toEqual(['wifi']);
  });

  it('the list waits for the filter once it holds heldEarly characters', async () => {
    const pages: FirmwareBundle[][] = Array.from({ length: 50 }, (_, p) => [{ version: `b${p}`, firmwares: [{ version_number: `${p}.0.0`, component_name: 'modem' }] } as unknown as FirmwareBundle]);
    let asked = 0;
    let give!: (f: IndexFilter) => void;
    const later = new Promise<IndexFilter>((resolve) => { give = resolve; });
    const run = indexFirmwares(stream(pages, (n) => { asked = n + 1; }), { later, heldEarly: 2000 });
    await new Promise((r) => setTimeout(r, 50));
    expect(asked).toBeGreaterThan(1);
    expect(asked).toBeLessThan(10);
    give({ versions: new Set(['3.0.0']) });
    const index = await run;
    expect([...index.keys()]).toEqual(['3.0.0']);
    expect(asked).toBe(50);
  });

  it('a filter that never comes (the load failed) ends the index with that failure, not an unhandled rejection', async () => {
    const pages: FirmwareBundle[][] = [[{ version: 'b', firmwares: [{ version_number: '1.0.0', component_name: 'modem' }] } as unknown as FirmwareBundle]];
    const later = Promise.reject(new Error('invalid YAML'));
    await expect(indexFirmwares(stream(pages), { later })).rejects.toThrow('invalid YAML');
  });
});
