// Reading the bundle list ahead. Two ways:
// - prefetchBundles: while the index takes a page, the next one is already on its way (every
//   read of the list); at most `maxHeld` records are held as pages before the list waits.
// - indexAhead: plan starts the lists of the tenants it can name from the config while the
//   desired state is still loading (the load is CPU, the list is mostly the server's time), and
//   indexes them as they come, before it knows what to keep (IndexOptions.later).
// A page read ahead is exactly the page the index would have read: the same client, the same
// checks (bundlePages), in the same order; an error is thrown where the index reaches it.
import { setMaxListeners } from 'node:events';
import type { Action, FirmwareBundle, LiveFirmware } from '../model/index.js';
import type { ApiClient } from './client.js';
import { actionBytes, indexFirmwares, type EarlyActions, type IndexFilter, type RecordsBudget } from './fetch-live.js';
import { ACTIONS_BUDGET_FACTOR } from './limits.js';

export interface BundlePrefetch {
  /**
   * The tenant's pages: those read ahead, then the rest as the list goes on; undefined when the
   * tenant is not read ahead (or was taken already). Aborting `signal` stops the list.
   */
  take(tenant: string, signal?: AbortSignal): AsyncIterable<FirmwareBundle[]> | undefined;
  /** Stops every list still being read and waits until no request of theirs is left. */
  stop(): Promise<void>;
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

export function prefetchBundles(client: ApiClient, tenants: readonly string[], opts: { readonly maxHeld: number }): BundlePrefetch {
  const maxHeld = opts.maxHeld;
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

/**
 * plan's read-ahead: each tenant's bundle list is read and indexed while the desired state loads,
 * before the index knows what to keep (IndexOptions.later): until the filter comes it keeps every
 * record, at most `heldEarly` characters of them (then the list waits), and then drops what the
 * filter would not have kept. What is held is the index itself, never pages: no more memory than
 * the index the run needs anyway, bounded where the tenant is larger than the desired state.
 */
export interface IndexAhead {
  /** Gives the tenant's index its filter and returns it; undefined when the tenant is not read ahead (or was taken). Aborting `signal` stops its list. */
  take(tenant: string, filter: IndexFilter, signal?: AbortSignal): Promise<ReadonlyMap<string, readonly LiveFirmware[]>> | undefined;
  /** The tenant's list is not needed (no firmware declared): stopped now. */
  drop(tenant: string): void;
  /**
   * Starts reading an action the desired state declares, as the loader meets it (once per id;
   * nothing for a tenant not read ahead, or once the actions budget is spent: those are read
   * after the load, as before).
   */
  readAction(tenant: string, id: number): void;
  /** The action reads started for the tenant, for fetchLive (once); aborting `signal` stops those still running. */
  takeActions(tenant: string, signal?: AbortSignal): EarlyActions | undefined;
  /** Stops every list still being read and waits until no request of theirs is left. */
  stop(): Promise<void>;
}

interface Ahead {
  readonly actions: Map<number, Promise<Action | null>>;
  readonly actionsBudget: { actionBytes: number; readonly limit: number };
  actionsTaken: boolean;
  /** Stops the action reads (the list has its own: a tenant whose list is not needed still has its actions). */
  readonly actionsController: AbortController;
  readonly controller: AbortController;
  readonly index: Promise<ReadonlyMap<string, readonly LiveFirmware[]>>;
  give(filter: IndexFilter): void;
  refuse(reason: Error): void;
  taken: boolean;
}

export function indexAhead(client: ApiClient, tenants: readonly string[], opts: { readonly budget: RecordsBudget; readonly heldEarly: number }): IndexAhead {
  const all = new Map<string, Ahead>();
  for (const tenant of tenants) {
    const controller = new AbortController();
    const actionsController = new AbortController();
    // Every action read of the tenant listens on it (all at once): by design.
    setMaxListeners(0, actionsController.signal);
    let give!: (f: IndexFilter) => void;
    let refuse!: (e: Error) => void;
    const later = new Promise<IndexFilter>((resolve, reject) => { give = resolve; refuse = reject; });
    const index = (async () => indexFirmwares(client.tenant(tenant).bundlePages(controller.signal), { later, heldEarly: opts.heldEarly, budget: opts.budget, tenant }))();
    // Whoever takes it sees its failure; one nobody takes must not be an unhandled rejection.
    index.catch(() => undefined);
    const limit = ACTIONS_BUDGET_FACTOR * client.limits.maxResponseBytes;
    all.set(tenant, { controller, actionsController, index, give, refuse, taken: false, actions: new Map(), actionsBudget: { actionBytes: limit, limit }, actionsTaken: false });
  }
  const end = (a: Ahead, why: string): void => {
    if (a.taken) return;
    a.taken = true;
    a.refuse(new Error(why));
    a.controller.abort(new Error(why));
  };
  return {
    take(tenant, filter, signal) {
      const a = all.get(tenant);
      if (a === undefined || a.taken) return undefined;
      a.taken = true;
      if (signal !== undefined) {
        if (signal.aborted) a.controller.abort(signal.reason);
        else signal.addEventListener('abort', () => a.controller.abort(signal.reason), { once: true });
      }
      a.give(filter);
      return a.index;
    },
    readAction(tenant, id) {
      const a = all.get(tenant);
      if (a === undefined || a.actionsTaken || a.actions.has(id) || a.actionsBudget.actionBytes < 0 || a.actionsController.signal.aborted) return;
      const read = client.tenant(tenant).getAction(id, a.actionsController.signal).then((action) => {
        if (action !== null) a.actionsBudget.actionBytes -= actionBytes(action);
        return action;
      });
      // fetchLive awaits it (and says what went wrong); one it never takes must not be an unhandled rejection.
      read.catch(() => undefined);
      a.actions.set(id, read);
    },
    takeActions(tenant, signal) {
      const a = all.get(tenant);
      if (a === undefined || a.actionsTaken) return undefined;
      a.actionsTaken = true;
      if (signal !== undefined) {
        if (signal.aborted) a.actionsController.abort(signal.reason);
        else signal.addEventListener('abort', () => a.actionsController.abort(signal.reason), { once: true });
      }
      return { reads: a.actions, budget: a.actionsBudget };
    },
    drop(tenant) {
      const a = all.get(tenant);
      if (a !== undefined) end(a, `the bundle list of tenant ${tenant} is not needed`);
    },
    async stop() {
      for (const [tenant, a] of all) {
        end(a, `the bundle list of tenant ${tenant} was not needed`);
        // Taken ones are stopped too: stop() comes when the run is over (or failed).
        a.controller.abort(new Error('stopped'));
        a.actionsController.abort(new Error('stopped'));
      }
      await Promise.allSettled([...all.values()].flatMap((a) => [a.index, ...a.actions.values()]));
    },
  };
}
