import { describe, expect, it, vi } from 'vitest';
import { indexAhead, prefetchBundles } from '../../src/api/prefetch.js';
import { recordsBudget } from '../../src/api/fetch-live.js';
import type { ApiClient } from '../../src/api/client.js';
import type { TenantClient } from '../../src/api/types.js';
import type { FirmwareBundle } from '../../src/model/index.js';

const page = (n: number, records = 1): FirmwareBundle[] => [{
  version: `b${n}`,
  firmwares: Array.from({ length: records }, (_, i) => ({ version_number: `${n}.${i}`, component_name: 'modem' })),
} as unknown as FirmwareBundle];

/** A list of `count` pages; `asked` counts the pages the server was asked for, `failAt` makes that page an error. */
function fakeList(count: number, opts: { failAt?: number; records?: number } = {}) {
  const state = { asked: 0, finished: false, aborted: false };
  const bundlePages = async function* (signal?: AbortSignal): AsyncGenerator<FirmwareBundle[]> {
    try {
      for (let i = 1; i <= count; i++) {
        if (signal?.aborted) { state.aborted = true; throw signal.reason; }
        state.asked = i;
        await new Promise((r) => setTimeout(r, 1));
        if (i === opts.failAt) throw new Error(`page ${i} failed`);
        yield page(i, opts.records);
      }
    } finally {
      state.finished = true;
    }
  };
  const client = {
    limits: { maxResponseBytes: 32 * 1024 * 1024, fetchTimeoutMs: 60_000 },
    api: 'x',
    tenant: (name: string) => ({ tenant: name, bundlePages } as unknown as TenantClient),
    close: async () => undefined,
  } as unknown as ApiClient;
  return { client, state };
}

const settle = () => new Promise((r) => setTimeout(r, 30));

describe('prefetchBundles', () => {
  it('reads ahead before anyone takes the pages, then gives every page once, in order', async () => {
    const { client, state } = fakeList(5);
    const ahead = prefetchBundles(client, ['acme'], { maxHeld: 1_000_000 });
    await vi.waitFor(() => expect(state.asked).toBe(5));
    const seen: string[] = [];
    for await (const p of ahead.take('acme')!) seen.push(p[0]!.version);
    expect(seen).toEqual(['b1', 'b2', 'b3', 'b4', 'b5']);
    expect(ahead.take('acme')).toBeUndefined();
    expect(ahead.take('globex')).toBeUndefined();
    await ahead.stop();
  });

  it('holds at most the bound: the next page is asked for only when one is taken', async () => {
    const { client, state } = fakeList(10, { records: 4 });
    // 5 per page (4 records and the bundle): a bound of 10 holds two pages.
    const ahead = prefetchBundles(client, ['acme'], { maxHeld: 10 });
    await vi.waitFor(() => expect(state.asked).toBe(2));
    await settle();
    expect(state.asked).toBe(2);
    const it = ahead.take('acme')![Symbol.asyncIterator]();
    await it.next();
    await vi.waitFor(() => expect(state.asked).toBe(3));
    await settle();
    expect(state.asked).toBe(3);
    let n = 1;
    while (!(await it.next()).done) n++;
    expect(n).toBe(10);
    await ahead.stop();
  });

  it('an error is thrown where the pages reach it, after the pages before it', async () => {
    const { client } = fakeList(5, { failAt: 3 });
    const ahead = prefetchBundles(client, ['acme'], { maxHeld: 1_000_000 });
    const seen: string[] = [];
    await expect((async () => { for await (const p of ahead.take('acme')!) seen.push(p[0]!.version); })()).rejects.toThrow('page 3 failed');
    expect(seen).toEqual(['b1', 'b2']);
    await ahead.stop();
  });

  it('stop() ends a list nobody took and waits for it; a taker then learns it was stopped', async () => {
    const { client, state } = fakeList(1000, { records: 1 });
    const ahead = prefetchBundles(client, ['acme'], { maxHeld: 4 });
    await vi.waitFor(() => expect(state.asked).toBe(2));
    const pages = ahead.take('acme')!;
    await ahead.stop();
    expect(state.finished).toBe(true);
    expect(state.asked).toBeLessThan(10);
    await expect((async () => { for await (const _ of pages) { /* drain */ } })()).rejects.toThrow();
  });

  it('a taker that stops early (an error in the index) stops the reading', async () => {
    const { client, state } = fakeList(1000, { records: 1 });
    const ahead = prefetchBundles(client, ['acme'], { maxHeld: 4 });
    for await (const p of ahead.take('acme')!) if (p[0]!.version === 'b2') break;
    await vi.waitFor(() => expect(state.finished).toBe(true));
    expect(state.asked).toBeLessThan(10);
    await ahead.stop();
  });

  it('an abort of the taker\'s signal stops the list and is what the taker sees', async () => {
    const { client, state } = fakeList(1000, { records: 1 });
    const ahead = prefetchBundles(client, ['acme'], { maxHeld: 4 });
    const controller = new AbortController();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const p of ahead.take('acme', controller.signal)!) {
        seen.push(p[0]!.version);
        if (seen.length === 3) controller.abort(new Error('deadline'));
      }
    })();
    await expect(reading).rejects.toThrow('deadline');
    await ahead.stop();
    expect(state.finished).toBe(true);
    expect(state.asked).toBeLessThan(20);
  });
});

describe('indexAhead', () => {
  it('indexes before the filter comes, keeps what the filter keeps, and holds at most heldEarly before it', async () => {
    const { client, state } = fakeList(40, { records: 3 });
    const budget = recordsBudget(32 * 1024 * 1024);
    const ahead = indexAhead(client, ['acme'], { budget, heldEarly: 10_000 });
    await vi.waitFor(() => expect(state.asked).toBeGreaterThan(2));
    await settle();
    // Each record counts some 520 characters: the list waits after about 10,000 of them.
    expect(state.asked).toBeLessThan(10);
    const index = await ahead.take('acme', { versions: new Set(['5.1', '39.2']) })!;
    expect([...index.keys()].sort()).toEqual(['39.2', '5.1']);
    expect(state.asked).toBe(40);
    expect(budget.left).toBe(budget.limit - [...index.values()].flat().reduce((n, r) => n + 512 + r.version_number.length + r.component_name.length + r.bundles.join('').length, 0));
    await ahead.stop();
  });

  it('a tenant dropped, or never taken, is stopped; a load that failed leaves no unhandled rejection', async () => {
    const a = fakeList(1000, { records: 1 });
    const b = fakeList(1000, { records: 1 });
    const client = { ...a.client, tenant: (name: string) => (name === 'acme' ? a.client : b.client).tenant(name) } as typeof a.client;
    const ahead = indexAhead(client, ['acme', 'globex'], { budget: recordsBudget(32 * 1024 * 1024), heldEarly: 5000 });
    ahead.drop('globex');
    await vi.waitFor(() => expect(b.state.finished).toBe(true));
    expect(ahead.take('globex', { versions: new Set() })).toBeUndefined();
    const rejections: unknown[] = [];
    const onRejection = (e: unknown) => rejections.push(e);
    process.on('unhandledRejection', onRejection);
    try {
      await ahead.stop();
      await settle();
    } finally {
      process.off('unhandledRejection', onRejection);
    }
    expect(a.state.finished).toBe(true);
    expect(a.state.asked).toBeLessThan(20);
    expect(rejections).toEqual([]);
  });

  it('an error of the list reaches whoever takes the index', async () => {
    const { client } = fakeList(10, { failAt: 4 });
    const ahead = indexAhead(client, ['acme'], { budget: recordsBudget(32 * 1024 * 1024), heldEarly: 1_000_000 });
    await expect(ahead.take('acme', { versions: new Set(['1.0']) })!).rejects.toThrow('page 4 failed');
    await ahead.stop();
  });
});

describe('indexAhead: actions read while the files load', () => {
  function actionClient(size: number, maxResponseBytes: number) {
    const asked: number[] = [];
    const client = {
      limits: { maxResponseBytes, fetchTimeoutMs: 60_000 },
      api: 'x',
      tenant: (name: string) => ({
        tenant: name,
        bundlePages: async function* () { /* no bundles */ },
        getAction: async (id: number) => {
          asked.push(id);
          await new Promise((r) => setTimeout(r, 1));
          return { id, tenant_id: name, status: 'pending', phases: [{ name: 'x'.repeat(size), trigger_on: {}, info: {} }] };
        },
      } as unknown as TenantClient),
      close: async () => undefined,
    } as unknown as ApiClient;
    return { client, asked };
  }

  it('each id is read once, and what they take is spent from the tenant\'s actions budget', async () => {
    const { client, asked } = actionClient(100, 1024 * 1024);
    const ahead = indexAhead(client, ['acme'], { budget: recordsBudget(1024 * 1024), heldEarly: 1000 });
    for (const id of [3, 1, 3, 2, 1]) ahead.readAction('acme', id);
    ahead.readAction('globex', 9);
    const early = ahead.takeActions('acme')!;
    expect([...early.reads.keys()]).toEqual([3, 1, 2]);
    const actions = await Promise.all(early.reads.values());
    expect(asked.sort()).toEqual([1, 2, 3]);
    const spent = actions.reduce((n, a) => n + JSON.stringify(a).length, 0);
    expect(early.budget.limit! - early.budget.actionBytes).toBe(spent);
    expect(ahead.takeActions('acme')).toBeUndefined();
    await ahead.stop();
  });

  it('once the actions budget is spent no more are read ahead (the rest are read after the load, and the budget error comes from there)', async () => {
    // 8 x 1 KiB of actions may be kept; each is some 1.1 KiB.
    const { client, asked } = actionClient(1100, 1024);
    const ahead = indexAhead(client, ['acme'], { budget: recordsBudget(1024), heldEarly: 1000 });
    for (let id = 1; id <= 20; id++) {
      ahead.readAction('acme', id);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(asked.length).toBeGreaterThan(5);
    expect(asked.length).toBeLessThan(20);
    await ahead.stop();
  });
});
