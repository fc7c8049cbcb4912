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
