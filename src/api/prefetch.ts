// Reading the bundle list ahead: `plan` starts the list of the tenants it can name from the
// config while the desired state is still loading (the load is CPU, the list is mostly the
// server's time), and while a page is indexed the next one is already on its way. What is read
// ahead is held as pages, at most a bound of records per tenant: past it the list waits for the
// index to take pages, so a tenant far larger than its desired state is not held whole.
//
// A page read ahead is exactly the page the index would have read: the same client, the same
// checks (bundlePages), in the same order; an error is thrown where the index reaches it.
import type { FirmwareBundle } from '../model/index.js';
import type { ApiClient } from './client.js';
import { RECORD_OVERHEAD, RECORDS_BUDGET_FACTOR } from './limits.js';

export interface BundlePrefetch {
  /**
   * The tenant's pages: those read ahead, then the rest as the list goes on; undefined when the
   * tenant is not read ahead (or was taken already). Aborting `signal` stops the list.
   */
  take(tenant: string, signal?: AbortSignal): AsyncIterable<FirmwareBundle[]> | undefined;
  /** Stops every list still being read and waits until no request of theirs is left. */
  stop(): Promise<void>;
}

/** Records held ahead per tenant: what the records budget of a fetch can keep (2 × --max-response-size). */
export function heldAhead(maxResponseBytes: number): number {
  return Math.max(1000, Math.floor((RECORDS_BUDGET_FACTOR * maxResponseBytes) / RECORD_OVERHEAD));
}

interface Reading {
  readonly pages: FirmwareBundle[][];
  held: number;
  done: boolean;
  failed?: { readonly error: unknown };
  taken: boolean;
  readonly stop: AbortController;
  /** Wakes whoever waits on this list: the reader for room, the index for a page. */
  wake: () => void;
  running: Promise<void>;
}

function recordsIn(page: readonly FirmwareBundle[]): number {
  let n = 0;
  for (const b of page) n += b.firmwares.length + 1;
  return n;
}

function waiter(r: Reading): Promise<void> {
  return new Promise<void>((resolve) => {
    const before = r.wake;
    r.wake = () => { r.wake = () => undefined; before(); resolve(); };
  });
}

export function prefetchBundles(client: ApiClient, tenants: readonly string[], opts: { readonly maxHeld?: number } = {}): BundlePrefetch {
  const maxHeld = opts.maxHeld ?? heldAhead(client.limits.maxResponseBytes);
  const readings = new Map<string, Reading>();
  for (const tenant of tenants) {
    const r: Reading = { pages: [], held: 0, done: false, taken: false, stop: new AbortController(), wake: () => undefined, running: Promise.resolve() };
    r.running = (async () => {
      try {
        for await (const page of client.tenant(tenant).bundlePages(r.stop.signal)) {
          r.pages.push(page);
          r.held += recordsIn(page);
          r.wake();
          // Full: the next page is asked for when the index has taken some.
          while (r.held >= maxHeld && !r.stop.signal.aborted) await waiter(r);
          if (r.stop.signal.aborted) break;
        }
        if (!r.stop.signal.aborted) r.done = true;
      } catch (error) {
        r.failed = { error };
      } finally {
        // Stopped: whoever still waits for a page learns why instead of waiting for ever.
        if (!r.done && r.failed === undefined) r.failed = { error: r.stop.signal.reason ?? new Error('the bundle list was stopped') };
        r.wake();
      }
    })();
    readings.set(tenant, r);
  }

  async function* pagesOf(r: Reading, signal?: AbortSignal): AsyncGenerator<FirmwareBundle[]> {
    const onAbort = () => { r.stop.abort(signal?.reason); r.wake(); };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        if (signal?.aborted) throw signal.reason;
        const page = r.pages.shift();
        if (page !== undefined) {
          r.held -= recordsIn(page);
          r.wake();
          yield page;
          continue;
        }
        if (r.failed) throw r.failed.error;
        if (r.done) return;
        await waiter(r);
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // The index stopped early (an error, the budget): no more pages are read for it.
      if (!r.done) { r.stop.abort(); r.wake(); }
    }
  }

  return {
    take(tenant, signal) {
      const r = readings.get(tenant);
      if (r === undefined || r.taken) return undefined;
      r.taken = true;
      return pagesOf(r, signal);
    },
    async stop() {
      for (const r of readings.values()) {
        if (!r.done) r.stop.abort();
        r.wake();
      }
      await Promise.all([...readings.values()].map((r) => r.running));
    },
  };
}
