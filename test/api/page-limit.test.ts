// The bundle list's page bound: by the first page's count and length, not a fixed 10,000 (a big
// tenant listed in small pages is not an endless list), with the loop check and the byte budget kept.
import { afterEach, describe, expect, it } from 'vitest';
import type { MockAgent } from 'undici';
import { DEFAULTS, pageLimit } from '../../src/api/client.js';
import { ApiError } from '../../src/errors.js';
import { BASE, bundle, clientFor, mockAgent } from './helpers.js';

const LIST = '/api/v1/firmware-bundles';
let agent: MockAgent | undefined;
afterEach(async () => { await agent?.close(); agent = undefined; });

/** A list served by a function of the page number: `next` and `count` as the test wants them. */
function serve(page: (n: number) => { count?: number; next: boolean }): MockAgent {
  const a = mockAgent();
  a.get(BASE).intercept({ path: (p: string) => p.startsWith(LIST), method: 'GET' }).reply(200, (opts) => {
    const n = Number(new URL(String(opts.path), BASE).searchParams.get('page') ?? '1');
    const { count, next } = page(n);
    return { ...(count === undefined ? {} : { count }), next: next ? `${LIST}?page=${n + 1}` : null, results: [bundle(`b${n}`, [])] };
  }, { headers: { 'content-type': 'application/json' } }).persist();
  return a;
}

async function readAll(a: MockAgent): Promise<number | ApiError> {
  const { client } = clientFor(a);
  let pages = 0;
  try {
    for await (const _ of client.tenant('acme').bundlePages()) pages++;
    return pages;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

describe('pageLimit', () => {
  it('is the pages the count gives, a tenth more and 10; without a usable count, none (the default holds)', () => {
    expect(pageLimit(200_000, 10)).toBe(20_000 + 2_000 + 10);
    expect(pageLimit(5, 1)).toBe(5 + 1 + 10);
    expect(pageLimit(0, 1)).toBe(10);
    for (const count of [undefined, null, '12', -1, 1.5, Number.MAX_SAFE_INTEGER + 2]) expect(pageLimit(count, 10)).toBeUndefined();
    expect(pageLimit(100, 0)).toBeUndefined();
    expect(DEFAULTS.maxPages).toBe(10_000);
  });
});

describe('the bundle list bound by its count', () => {
  it('reads all 10,500 pages of a 10,500-bundle list in pages of 1 (more than 10,000 was an error)', async () => {
    agent = serve((n) => ({ count: 10_500, next: n < 10_500 }));
    expect(await readAll(agent)).toBe(10_500);
  }, 60_000);

  it('stops a list whose next links go on past what its count allows, and says so', async () => {
    agent = serve(() => ({ count: 5, next: true }));
    const err = await readAll(agent);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).message).toBe('the bundle list of tenant acme has more than 16 pages (its count of 5 bundles in pages of 1 allows 16: the pages it gives, a tenth more and 10 for growth while it is read): stopping (the API\'s next links do not end)');
  });

  it('without a count, stops at 10,000 pages as before', async () => {
    agent = serve(() => ({ next: true }));
    const err = await readAll(agent);
    expect((err as ApiError).message).toBe('the bundle list of tenant acme has more than 10000 pages: stopping (the API\'s next links do not end)');
  }, 60_000);
});
