// The live state the desired state needs, read in one pass per tenant: the bundle pages
// (only for tenants that declare firmwares) and only the actions that are declared.
import type { Action, DesiredState, FirmwareBundle, LiveFirmware, LiveState, LiveTenant } from '../model/index.js';
import { ApiError } from '../errors.js';
import type { ApiClient } from './client.js';
import type { TenantClient } from './types.js';

export interface FetchLiveOptions {
  /** Action reads in flight per tenant (the client's limiter bounds them further). */
  readonly concurrency?: number;
  readonly signal?: AbortSignal;
}

interface Wanted {
  firmwares: boolean;
  actionIds: Set<number>;
}

export async function fetchLive(client: ApiClient, desired: DesiredState, opts: FetchLiveOptions = {}): Promise<LiveState> {
  const wanted = wantedByTenant(desired);
  const names = [...wanted.keys()].sort();
  // Resolve every tenant first: a missing key is a user error before any request is sent.
  const clients = names.map((name) => client.tenant(name));
  const tenants = await Promise.all(clients.map((c) => fetchTenant(c, wanted.get(c.tenant)!, opts)));
  return { tenants: new Map(names.map((name, i) => [name, tenants[i]!])) };
}

function wantedByTenant(desired: DesiredState): Map<string, Wanted> {
  const out = new Map<string, Wanted>();
  const get = (t: string): Wanted => {
    let w = out.get(t);
    if (!w) {
      w = { firmwares: false, actionIds: new Set() };
      out.set(t, w);
    }
    return w;
  };
  for (const f of desired.firmwares) get(f.tenant).firmwares = true;
  for (const a of desired.actions) get(a.tenant).actionIds.add(a.id);
  return out;
}

async function fetchTenant(client: TenantClient, wanted: Wanted, opts: FetchLiveOptions): Promise<LiveTenant> {
  const [firmwares, { actions, errors }] = await Promise.all([
    wanted.firmwares ? indexFirmwares(client.bundlePages(opts.signal)) : Promise.resolve(new Map<string, readonly LiveFirmware[]>()),
    readActions(client, [...wanted.actionIds].sort((a, b) => a - b), opts),
  ]);
  return { firmwares, actions, ...(errors.size > 0 ? { actionErrors: errors } : {}) };
}

interface Accumulated {
  record: Omit<LiveFirmware, 'bundles'>;
  bundles: Set<string>;
}

/**
 * version_number → records. The same firmware in several bundles (same firmware_id, or the
 * same number for the same component) is one record; several components under one number
 * stay several records, and the planner reports the ambiguity.
 */
export async function indexFirmwares(pages: AsyncIterable<readonly FirmwareBundle[]>): Promise<Map<string, readonly LiveFirmware[]>> {
  const byNumber = new Map<string, Accumulated[]>();
  for await (const page of pages) {
    for (const bundle of page) {
      for (const fw of bundle.firmwares) {
        let list = byNumber.get(fw.version_number);
        if (!list) {
          list = [];
          byNumber.set(fw.version_number, list);
        }
        const same = list.find((r) => (fw.firmware_id != null && r.record.firmware_id === fw.firmware_id) || r.record.component_name === fw.component_name);
        if (same) {
          same.bundles.add(bundle.version);
          continue;
        }
        list.push({
          record: {
            version_number: fw.version_number,
            component_name: fw.component_name,
            firmware_id: fw.firmware_id ?? null,
            is_deactivated: fw.is_deactivated ?? null,
            uncompressed_size: fw.uncompressed_size ?? null,
            dependencies: fw.dependencies ?? [],
          },
          bundles: new Set([bundle.version]),
        });
      }
    }
  }
  const out = new Map<string, readonly LiveFirmware[]>();
  for (const number of [...byNumber.keys()].sort()) {
    const records = byNumber.get(number)!
      .map((r): LiveFirmware => ({ ...r.record, bundles: [...r.bundles].sort() }))
      .sort((a, b) => (a.component_name < b.component_name ? -1 : a.component_name > b.component_name ? 1 : 0));
    out.set(number, records);
  }
  return out;
}

interface ReadActions {
  actions: Map<number, Action | null>;
  /** Answers that were not the object asked for: an error for that action, not for the run. */
  errors: Map<number, string>;
}

async function readActions(client: TenantClient, ids: readonly number[], opts: FetchLiveOptions): Promise<ReadActions> {
  const results = new Array<Action | null>(ids.length);
  const errors = new Map<number, string>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ids.length) {
      const i = next++;
      try {
        results[i] = await client.getAction(ids[i]!, opts.signal);
      } catch (err) {
        if (!(err instanceof ApiError && err.details.wrongObject)) throw err;
        errors.set(ids[i]!, err.message);
        results[i] = null;
      }
    }
  };
  const width = Math.max(1, Math.min(opts.concurrency ?? 8, ids.length));
  await Promise.all(Array.from({ length: ids.length === 0 ? 0 : width }, worker));
  return { actions: new Map(ids.map((id, i) => [id, results[i]!] as const)), errors };
}
