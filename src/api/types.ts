// The client's interface as the rest of the code sees it (apply/, agent/, cli/).
// The implementation is the undici client in client.ts; tests may pass a fake.
import type { Action, FirmwareBundle, FirmwareUpdate, PhaseSpec } from '../model/index.js';

export interface TenantClient {
  readonly tenant: string;
  /** Requests in flight the tenant's adaptive limit allows now (absent: no adaptive limit, e.g. a test double). */
  readonly concurrencyNow?: () => number;
  /** Every bundle, following DRF `next` links until null. */
  listBundles(signal?: AbortSignal): Promise<FirmwareBundle[]>;
  /** Streams pages of bundles so that a large tenant is not held twice in memory. */
  bundlePages(signal?: AbortSignal): AsyncIterable<FirmwareBundle[]>;
  getBundle(version: string, signal?: AbortSignal): Promise<FirmwareBundle>;
  /** GET /api/v1/actions/{id}; null on 404. The one read beyond the API document. */
  getAction(id: number, signal?: AbortSignal): Promise<Action | null>;
  /** PUT /api/v1/firmwares/{version-number}; retried on network errors, 429, 502-504. */
  /**
   * `once`: a single try, never retried by the client (the executor reads the record again
   * before each try, so that a retry never reverts what someone changed in between); failures
   * then carry details.outcome like an append's.
   */
  putFirmware(versionNumber: string, body: FirmwareUpdate, signal?: AbortSignal, opts?: { readonly once?: boolean }): Promise<void>;
  /**
   * POST append_phase, never retried. On failure throws ApiError whose details.outcome says
   * 'not-sent' (certainly not applied), 'refused' (a 4xx: the server says not applied, which a
   * server that stored it and answered 400 anyway makes a claim, not a proof) or 'unknown'
   * (read the action back to decide).
   */
  appendPhase(actionId: number, phase: PhaseSpec, signal?: AbortSignal): Promise<Action>;
}

export interface ApiClientOptions {
  readonly baseUrl: string;
  /** tenant → API key. Keys are held here and nowhere else. */
  readonly keys: ReadonlyMap<string, string>;
  /** tenant → the tenant_id its actions carry, where it is not the tenant's name (tenants.NAME.tenant_id). */
  readonly tenantIds?: ReadonlyMap<string, string>;
  readonly insecureHttp?: boolean;
  readonly caFile?: string;
  /** undici's idle timeouts (first byte, between chunks); default: the request deadline. */
  readonly timeoutMs?: number;
  /** Bytes of one answer at most (default 32 MiB, see limits.ts); more is an error, not read. */
  readonly maxResponseBytes?: number;
  /** Headers and whole body of one try must arrive within this (default 60 s, see limits.ts). */
  readonly requestTimeoutMs?: number;
  /** Reading the whole live state of a run (every page, every action). */
  readonly fetchTimeoutMs?: number;
  readonly maxRetries?: number;
  /** Starting number of requests in flight per tenant (also the ceiling unless maxConcurrency says otherwise). */
  readonly concurrency?: number;
  /** The floor and ceiling the per-tenant limit adapts between (AIMD on latency, 429 and 5xx). */
  readonly minConcurrency?: number;
  readonly maxConcurrency?: number;
  readonly userAgent?: string;
}
