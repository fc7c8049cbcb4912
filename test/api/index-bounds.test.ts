// What indexFirmwares keeps of a bundle list is bounded by what plan, apply and export use, not
// by what the server sends: the first bundle versions of a record (and the declared ones), and a
// total shared by the tenants of one fetch.
import { describe, expect, it } from 'vitest';
import { indexFirmwares, recordsBudget } from '../../src/api/fetch-live.js';
import { BUNDLES_KEPT_PER_RECORD, RECORD_OVERHEAD, RECORDS_BUDGET_FACTOR } from '../../src/api/limits.js';
import { ApiError } from '../../src/errors.js';
import type { FirmwareBundle } from '../../src/model/index.js';
import { bundle, firmware } from './helpers.js';

const ID = '11111111-1111-1111-1111-111111111111';

/** Page i holds the same firmware in bundle versions[i]. */
async function* onePerPage(versions: readonly string[]): AsyncGenerator<FirmwareBundle[]> {
  for (const v of versions) yield [bundle(v, [firmware('2.4.0', 'modem', { firmware_id: ID })])] as unknown as FirmwareBundle[];
}

const names = Array.from({ length: 100 }, (_, i) => `b${String(i).padStart(3, '0')}`);

describe('indexFirmwares keeps a bounded share', () => {
  it('a record keeps its first bundle versions in sorted order, whatever order the pages come in', async () => {
    const first = names.slice(0, BUNDLES_KEPT_PER_RECORD);
    for (const order of [names, [...names].reverse(), [...names.slice(50), ...names.slice(0, 50)]]) {
      const index = await indexFirmwares(onePerPage(order), { versions: new Set(['2.4.0']) });
      expect(index.get('2.4.0')![0]!.bundles).toEqual(first);
    }
  });

  it('a declared bundle_version is kept even past the first ones, so the guard of plan still finds it', async () => {
    const index = await indexFirmwares(onePerPage(names), { versions: new Set(['2.4.0']), bundles: new Set(['b077']) });
    const kept = index.get('2.4.0')![0]!.bundles;
    expect(kept).toContain('b077');
    expect(kept).toHaveLength(BUNDLES_KEPT_PER_RECORD + 1);
    expect(kept[0]).toBe('b000');
  });

  it('ever-new bundles of one firmware keep the memory flat: a million pages fit a 1 KiB budget', async () => {
    const budget = { left: RECORD_OVERHEAD + 1024, limit: RECORD_OVERHEAD + 1024 };
    async function* endless(): AsyncGenerator<FirmwareBundle[]> {
      for (let p = 0; p < 1_000_000; p++) yield [bundle(`v${1_000_000 - p}`, [firmware('2.4.0', 'modem', { firmware_id: ID })])] as unknown as FirmwareBundle[];
    }
    const index = await indexFirmwares(endless(), { versions: new Set(['2.4.0']), budget });
    expect(index.get('2.4.0')![0]!.bundles).toHaveLength(BUNDLES_KEPT_PER_RECORD);
    expect(budget.left).toBeGreaterThanOrEqual(0);
  });

  it('records past the budget stop the read with one sentence naming the tenant, the endpoint and the setting', async () => {
    const budget = recordsBudget(64 * 1024);
    async function* distinct(): AsyncGenerator<FirmwareBundle[]> {
      for (let p = 1; ; p++) yield [bundle(`b${p}`, Array.from({ length: 100 }, (_, i) => firmware(`${p}.${i}`, 'modem')))] as unknown as FirmwareBundle[];
    }
    const err = await indexFirmwares(distinct(), { budget, tenant: 'acme' }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).message).toMatch(new RegExp(`^the firmware records of tenant acme read from the bundle list \\(GET /api/v1/firmware-bundles\\) passed 128 KiB in memory \\(${RECORDS_BUDGET_FACTOR} × --max-response-size\\) after 3 pages, so reading stopped: if the tenant is that large, raise --max-response-size \\(api\\.max_response_size\\); otherwise check the API \\(its next links may never end\\)$`));
  });

  it('the budget is shared: what one tenant kept is not there for the next', async () => {
    const budget = recordsBudget(64 * 1024);
    const pages = async function* (): AsyncGenerator<FirmwareBundle[]> {
      yield [bundle('b', Array.from({ length: 150 }, (_, i) => firmware(`1.${i}`, 'modem')))] as unknown as FirmwareBundle[];
    };
    await indexFirmwares(pages(), { budget, tenant: 'acme' });
    await expect(indexFirmwares(pages(), { budget, tenant: 'globex' })).rejects.toThrow(/^the firmware records of tenant globex /);
  });
});

describe('a declared deactivation keeps what its dependency check needs, not the whole tenant', () => {
  it('keeps the active dependents and each component\'s highest active versions (the deactivations plus one), with a flat budget', async () => {
    async function* pages(): AsyncGenerator<FirmwareBundle[]> {
      for (let p = 0; p < 200; p++) {
        const fws = [
          // Ever-higher versions of bootloader: only the two highest stay.
          firmware(`1.${p}.0`, 'bootloader'),
          // Inactive ones never satisfy anything.
          firmware(`9.${p}.0`, 'bootloader', { is_deactivated: true }),
          // Filler of other components, no dependencies: one (the highest) each.
          firmware(`0.0.${p}`, `filler-${p % 5}`),
        ];
        if (p === 3) fws.push(firmware('2.4.1', 'modem', { dependencies: [{ component_name: 'bootloader', min_version: '1.2.0' }] }));
        if (p === 7) fws.push(firmware('1.0.0', 'bootloader', { firmware_id: ID }));
        yield [bundle(`b${p}`, fws)] as unknown as FirmwareBundle[];
      }
    }
    const budget = recordsBudget(64 * 1024);
    const index = await indexFirmwares(pages(), { versions: new Set(['1.0.0']), satisfiers: 2, budget });
    const kept = [...index.values()].flat().map((r) => `${r.component_name} ${r.version_number}`).sort();
    expect(kept).toEqual([
      'bootloader 1.0.0', 'bootloader 1.198.0', 'bootloader 1.199.0',
      'filler-0 0.0.195', 'filler-0 0.0.190', 'filler-1 0.0.196', 'filler-1 0.0.191', 'filler-2 0.0.197', 'filler-2 0.0.192',
      'filler-3 0.0.198', 'filler-3 0.0.193', 'filler-4 0.0.199', 'filler-4 0.0.194',
      'modem 2.4.1',
    ].sort());
    // Evicted records were given back: what is spent is what is kept.
    expect(budget.limit - budget.left).toBeLessThan(14 * (RECORD_OVERHEAD + 200));
  });
});
