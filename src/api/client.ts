// The undici client of the Device Update Service API: one keep-alive Agent, both headers on
// every request, retries for what can succeed on retry, AIMD concurrency per tenant,
// DRF pagination that never leaves the base URL's origin, every answer bounded in size and
// time, and every answer validated.
import { closeSync, constants as fsConstants, fstatSync, openSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Tls from 'node:tls';
import { setTimeout as sleepFor } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
// Only the Agent and the request API, not undici's index (every dispatcher, fetch, WebSocket, the
// cache, the mocks: some 40 ms of every start). request() is what the index puts on
// Dispatcher.prototype; called on the dispatcher, it works for a test's MockAgent as well.
import Agent from 'undici/lib/dispatcher/agent.js';
import undiciRequest from 'undici/lib/api/api-request.js';
import { ApiError, UserError } from '../errors.js';
import type { Action, Clock, FirmwareBundle, FirmwareBundleList, FirmwareUpdate, Logger, PhaseSpec } from '../model/index.js';
import { redact, REDACTED, registerSecret, showsKey } from '../redact.js';
import { VERSION } from '../version.js';
import { cutText, httpError, malformedError } from './errors.js';
import { AimdLimiter } from './limiter.js';
import { ERROR_BODY_BYTES, FETCH_TIMEOUT_MS, formatDuration, formatSize, LIST_BUDGET_FACTOR, MAX_BUNDLE_VERSION_LENGTH, MAX_RESPONSE_BYTES, REQUEST_TIMEOUT_MS } from './limits.js';
import { backoffDelay, classifyNetworkError, parseRetryAfter, ResponseLimitError, RETRYABLE_STATUSES, type NetworkFailure } from './retry.js';
import type { ApiClientOptions, TenantClient } from './types.js';
import { apiPath, isLoopbackHost, parseBaseUrl, segment, type BaseUrl } from './url.js';
import { firstProblem, type ResponseShape } from './validate.js';

export interface ApiClient {
  tenant(name: string): TenantClient;
  close(): Promise<void>;
  /** The bounds in force, defaults filled in: what a fetch of the whole live state may take. */
  readonly limits: { readonly maxResponseBytes: number; readonly fetchTimeoutMs: number };
  /** The API this client talks to (origin and path prefix): the journal keeps what it sent per API. */
  readonly api: string;
}

export interface RequestEvent {
  readonly method: string;
  /** The operation without ids, e.g. "GET /firmware-bundles/version/{version}" (a metrics label). */
  readonly route: string;
  readonly status: number | 'error';
  readonly durationMs: number;
  readonly tenant: string;
  /** 0 for the first try of a request, 1 for its first retry, and so on. */
  readonly attempt: number;
}

/** A try of a request that has just been sent (it holds a slot of the limiter until its RequestEvent). */
export interface RequestStart {
  readonly method: string;
  readonly route: string;
  readonly tenant: string;
  readonly attempt: number;
}

/** A page of the bundle list was read: `read` pages so far; `total` once the first page's count tells. */
export interface PageEvent {
  readonly tenant: string;
  readonly read: number;
  readonly total?: number;
}

export type CreateApiClientOptions = ApiClientOptions & {
  readonly log?: Logger;
  readonly onRequest?: (e: RequestEvent) => void;
  /** Progress: a try was sent, a bundle page was read. Called often: keep them cheap. */
  readonly onRequestStart?: (e: RequestStart) => void;
  readonly onPage?: (e: PageEvent) => void;
  readonly clock?: Clock;
  readonly random?: () => number;
  /** Tests pass a MockAgent; the client then neither builds nor closes an Agent. */
  readonly dispatcher?: Dispatcher;
  /** Total time one request may spend in retries (default 2 minutes). */
  readonly retryBudgetMs?: number;
};

export const DEFAULTS = {
  connectTimeoutMs: 10_000,
  maxRetries: 5,
  concurrency: 8,
  retryBudgetMs: 120_000,
  /** Pages read at most when the first page gives no count to bound them by (see pageLimit). */
  maxPages: 10_000,
} as const;

/**
 * Pages of the bundle list read at most. With DRF's `count` (of bundles) and the first page's
 * length (the page size), the list has ceil(count / size) pages; it may grow while it is read,
 * so a tenth more and 10 pages are allowed. Without a usable count, undefined: DEFAULTS.maxPages. A fixed 10,000
 * stopped a 200,000-bundle tenant listed 10 at a time; a large count is still bounded in bytes
 * (LIST_BUDGET_FACTOR × --max-response-size over all pages), and a loop by the seen links.
 */
export function pageLimit(count: unknown, firstPageLength: number): number | undefined {
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0 || firstPageLength < 1) return undefined;
  const pages = Math.ceil(count / firstPageLength);
  return pages + Math.ceil(pages / 10) + 10;
}

const ROUTES = {
  list: 'GET /firmware-bundles',
  bundle: 'GET /firmware-bundles/version/{version}',
  action: 'GET /actions/{id}',
  put: 'PUT /firmwares/{version_number}',
  append: 'POST /actions/{id}/append_phase',
} as const;

interface Call {
  readonly method: 'GET' | 'PUT' | 'POST';
  /** Path and query on the wire (already holding the base URL's prefix). */
  readonly path: string;
  readonly route: string;
  readonly body?: unknown;
  /** append_phase is not idempotent: never retried, and its failures carry an outcome. */
  readonly idempotent: boolean;
}

interface Reply {
  readonly status: number;
  readonly text: string;
  readonly retryAfter: string | string[] | undefined;
}

interface Context {
  readonly base: BaseUrl;
  readonly dispatcher: Dispatcher;
  readonly clock: Clock;
  readonly random: () => number;
  readonly log: Logger | undefined;
  readonly onRequest: ((e: RequestEvent) => void) | undefined;
  readonly onRequestStart: ((e: RequestStart) => void) | undefined;
  readonly onPage: ((e: PageEvent) => void) | undefined;
  readonly maxRetries: number;
  readonly retryBudgetMs: number;
  readonly userAgent: string;
  readonly maxResponseBytes: number;
  readonly requestTimeoutMs: number;
}

const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleepFor(ms, undefined, signal ? { signal } : {}),
};

export function createApiClient(opts: CreateApiClientOptions): ApiClient {
  const base = parseBaseUrl(opts.baseUrl, opts.insecureHttp ?? false);
  for (const key of opts.keys.values()) registerSecret(key);
  const ownAgent = opts.dispatcher ? undefined : buildAgent(opts);
  const ctx: Context = {
    base,
    dispatcher: opts.dispatcher ?? ownAgent!,
    clock: opts.clock ?? systemClock,
    random: opts.random ?? Math.random,
    log: opts.log,
    onRequest: opts.onRequest,
    onRequestStart: opts.onRequestStart,
    onPage: opts.onPage,
    maxRetries: opts.maxRetries ?? DEFAULTS.maxRetries,
    retryBudgetMs: opts.retryBudgetMs ?? DEFAULTS.retryBudgetMs,
    userAgent: opts.userAgent ?? `dus-sync/${VERSION}`,
    maxResponseBytes: opts.maxResponseBytes ?? MAX_RESPONSE_BYTES.default,
    requestTimeoutMs: opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS.default,
  };
  const concurrency = opts.concurrency ?? DEFAULTS.concurrency;
  const tenants = new Map<string, TenantClient>();
  return {
    limits: { maxResponseBytes: ctx.maxResponseBytes, fetchTimeoutMs: opts.fetchTimeoutMs ?? FETCH_TIMEOUT_MS.default },
    api: `${base.origin}${base.prefix}`,
    tenant(name: string): TenantClient {
      let client = tenants.get(name);
      if (!client) {
        const key = opts.keys.get(name);
        if (key === undefined || key === '') {
          throw new UserError(`no API key for tenant ${name}: set tenants.${name}.api_key_env or api_key_file in dus-sync.yaml, or DUS_API_KEY`);
        }
        const limiter = new AimdLimiter(concurrency, { min: Math.min(concurrency, opts.minConcurrency ?? 1), max: Math.max(concurrency, opts.maxConcurrency ?? concurrency) });
        client = tenantClient(ctx, name, key, limiter, opts.tenantIds?.get(name) ?? name);
        tenants.set(name, client);
      }
      return client;
    },
    async close(): Promise<void> {
      await ownAgent?.close();
    },
  };
}

function buildAgent(opts: ApiClientOptions): Agent {
  // undici's own timeouts wait for the first byte and between chunks (each chunk restarts the
  // body timer, so a drip never trips it); the request deadline in transmit() bounds the whole
  // answer and fires first. These stay as a backstop at the same length.
  const timeout = opts.timeoutMs ?? opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS.default;
  const ca = opts.caFile ? trustedCas(opts.caFile) : undefined;
  return new Agent({
    // Below the 5 s idle timeout of common servers (Node, gunicorn) when they send no Keep-Alive hint,
    // so that an append_phase is not written to a socket the server is closing ("outcome unknown").
    keepAliveTimeout: 4_000,
    headersTimeout: timeout,
    bodyTimeout: timeout,
    connect: { timeout: Math.min(DEFAULTS.connectTimeoutMs, timeout), rejectUnauthorized: true, ...(ca ? { ca } : {}) },
  });
}

/** Passing `ca` replaces Node's default store, so keep the bundled roots and NODE_EXTRA_CA_CERTS. */
function trustedCas(caFile: string): string[] {
  const pem = readPem(caFile, '--ca-file');
  const extraFile = process.env.NODE_EXTRA_CA_CERTS;
  const extra = extraFile ? [readPem(extraFile, 'NODE_EXTRA_CA_CERTS')] : [];
  // node:tls only here, for --ca-file: over http, and for https until undici connects, plan and
  // apply load none of it (some 3 ms of their start).
  const { rootCertificates } = createRequire(import.meta.url)('node:tls') as typeof Tls;
  return [...rootCertificates, ...extra, pem];
}

/** A CA bundle is some hundreds of KiB (the system's is about 200 KiB); more is not one. */
const MAX_CA_FILE_BYTES = 16 * 1024 * 1024;

/**
 * The PEM text of a CA file. Only a regular file is read: /dev/zero would be read without end and
 * a named pipe would wait for a writer for ever (opened without blocking, then checked by fstat).
 */
function readPem(file: string, what: string): string {
  let text: string;
  let fd: number | undefined;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | (fsConstants.O_NONBLOCK ?? 0));
    const st = fstatSync(fd);
    if (!st.isFile()) {
      const kind = st.isDirectory() ? 'a folder' : st.isFIFO() ? 'a named pipe (FIFO)' : st.isCharacterDevice() ? 'a character device' : st.isSocket() ? 'a socket' : 'a special file';
      throw new UserError(`the CA file ${file} (${what}) is ${kind}, not a regular file: name a PEM file of CA certificates`);
    }
    if (st.size > MAX_CA_FILE_BYTES) {
      throw new UserError(`the CA file ${file} (${what}) is ${formatSize(st.size)}, larger than the ${formatSize(MAX_CA_FILE_BYTES)} a CA bundle could be: name a PEM file of CA certificates`);
    }
    text = readFileSync(fd, 'utf8');
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(`cannot read the CA file ${file} (${what}): ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) {
    throw new UserError(`the CA file ${file} (${what}) holds no PEM certificate: it must contain -----BEGIN CERTIFICATE-----`);
  }
  return text;
}

// ---------------------------------------------------------------- one tenant

/**
 * Checks that an answer is the object asked for: a cache or proxy that mixes answers up must not
 * make dus-sync write to one object what it read from another. An action must carry the id asked
 * for, and its tenant_id, when the server sends one, must be the tenant's (its name, or
 * tenants.NAME.tenant_id in dus-sync.yaml): learning it from the first answer let a cache that
 * answered first with another tenant's action make the real ones look foreign.
 */
function identityGuard(tenant: string, expectedTenantId: string) {
  return (call: Call, status: number, action: Action, askedId: number): void => {
    const wrong = (what: string, hint = ''): ApiError => new ApiError(
      redact(`${endpointOf(call)} for tenant ${tenant} answered with ${what}; the answer is not used (a cache or proxy may be mixing answers up${hint})`),
      { status, retryable: false, endpoint: endpointOf(call), wrongObject: true },
    );
    if (action.id !== askedId) throw wrong(`action ${cutText(String(action.id), 30)} instead of action ${askedId}`);
    const t = action.tenant_id;
    if (typeof t !== 'string' || t === '' || t === expectedTenantId) return;
    throw wrong(`an action of tenant_id ${cutText(JSON.stringify(t), 100)}, not ${JSON.stringify(expectedTenantId)}`,
      `; if the API gives this tenant's actions that tenant_id, set tenants.${tenant}.tenant_id in dus-sync.yaml`);
  };
}

function tenantClient(ctx: Context, tenant: string, key: string, limiter: AimdLimiter, tenantId: string): TenantClient {
  const send = (call: Call, signal?: AbortSignal): Promise<Reply> => {
    // The last guard of "a key is never sent": the loader refuses a value that holds one, but a
    // key may come (a rotated key file) after the value was checked. Nothing is sent then. A
    // phase's body is all from the YAML; a firmware's PUT also carries live fields written back
    // unchanged (what the server holds already), so only its path is checked here. The body is
    // checked as the text sent, so that a number of a key's digits counts as well as a string.
    if (call.method !== 'GET' && (showsKey(call.path) || (call.method === 'POST' && call.body !== undefined && showsKey(JSON.stringify(call.body))))) {
      return Promise.reject(new ApiError(`${call.method} ${redact(call.path)} was not sent: what it would write holds an API key (shown as ${REDACTED}); remove the key from the desired state`, { retryable: false, outcome: 'not-sent', endpoint: redact(call.path) }));
    }
    return execute(ctx, tenant, key, limiter, call, signal);
  };
  const checkAction = identityGuard(tenant, tenantId);
  const pages = (signal?: AbortSignal): AsyncIterable<FirmwareBundle[]> => bundlePages(ctx, tenant, send, signal);
  return {
    tenant,
    concurrencyNow: () => limiter.limit,
    bundlePages: pages,
    async listBundles(signal) {
      const all: FirmwareBundle[] = [];
      for await (const page of pages(signal)) all.push(...page);
      return all;
    },
    async getBundle(version, signal) {
      const call: Call = { method: 'GET', path: apiPath(ctx.base, `/api/v1/firmware-bundles/version/${segment(version)}`), route: ROUTES.bundle, idempotent: true };
      const reply = await send(call, signal);
      const bundle = parseAs<FirmwareBundle>('FirmwareBundle', call, reply);
      if (bundle.version !== version) {
        throw new ApiError(redact(`${endpointOf(call)} for tenant ${tenant} answered with bundle ${cutText(JSON.stringify(bundle.version), 100)} instead of ${cutText(JSON.stringify(version), 100)}; the answer is not used (a cache or proxy may be mixing answers up)`),
          { status: reply.status, retryable: false, endpoint: endpointOf(call), wrongObject: true });
      }
      return bundle;
    },
    async getAction(id, signal) {
      const call: Call = { method: 'GET', path: apiPath(ctx.base, `/api/v1/actions/${segment(id)}`), route: ROUTES.action, idempotent: true };
      let reply: Reply;
      try {
        reply = await send(call, signal);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      }
      const action = parseAs<Action>('Action', call, reply);
      checkAction(call, reply.status, action, id);
      return action;
    },
    async putFirmware(versionNumber, body: FirmwareUpdate, signal, opts) {
      const call: Call = { method: 'PUT', path: apiPath(ctx.base, `/api/v1/firmwares/${segment(versionNumber)}`), route: ROUTES.put, body, idempotent: opts?.once !== true };
      const reply = await send(call, signal);
      if (reply.text.trim() !== '' && parseJson(reply.text) === NOT_JSON) {
        throw malformedError(endpointOf(call), 'the body is not JSON', reply.status);
      }
    },
    async appendPhase(actionId, phase: PhaseSpec, signal) {
      const body = { name: phase.name, trigger_on: phase.trigger_on, info: phase.info };
      const call: Call = { method: 'POST', path: apiPath(ctx.base, `/api/v1/actions/${segment(actionId)}/append_phase`), route: ROUTES.append, body, idempotent: false };
      const reply = await send(call, signal);
      try {
        const action = parseAs<Action>('Action', call, reply);
        checkAction(call, reply.status, action, actionId);
        return action;
      } catch (err) {
        // The server said 2xx, so the phase is most likely there: the executor must read back.
        if (err instanceof ApiError) throw new ApiError(err.message, { ...err.details, outcome: 'unknown' });
        throw err;
      }
    },
  };
}

async function* bundlePages(ctx: Context, tenant: string, send: (c: Call, s?: AbortSignal) => Promise<Reply>, signal?: AbortSignal): AsyncGenerator<FirmwareBundle[]> {
  const first = apiPath(ctx.base, '/api/v1/firmware-bundles');
  let url: URL | null = new URL(first, ctx.base.origin);
  const seen = new Set<string>();
  let total: number | undefined;
  let maxPages: number = DEFAULTS.maxPages;
  let countText = '';
  const listBudget = LIST_BUDGET_FACTOR * ctx.maxResponseBytes;
  let readChars = 0;
  while (url) {
    const call: Call = { method: 'GET', path: `${url.pathname}${url.search}`, route: ROUTES.list, idempotent: true };
    if (seen.has(url.href)) {
      throw new ApiError(redact(`the bundle list loops: ${endpointOf(call)} was already read (the API's next links go round in a circle)`), { endpoint: endpointOf(call) });
    }
    if (seen.size >= maxPages) {
      throw new ApiError(`the bundle list of tenant ${tenant} has more than ${maxPages} pages${countText}: stopping (the API's next links do not end)`, { endpoint: endpointOf(call), retryable: false });
    }
    seen.add(url.href);
    const reply = await send(call, signal);
    // Each answer is bounded on its own; the pages of an endless list, each under the cap, are not.
    readChars += reply.text.length;
    if (readChars > listBudget) {
      throw new ApiError(`the bundle list of tenant ${tenant} (GET ${cutText(first, MAX_PATH_SHOWN)}) passed ${formatSize(listBudget)} over ${seen.size} pages (${LIST_BUDGET_FACTOR} × --max-response-size) and its next links go on, so reading stopped: if the tenant is that large, raise --max-response-size (api.max_response_size); otherwise check the API`, { endpoint: endpointOf(call), retryable: false });
    }
    const page = parseAs<FirmwareBundleList>('FirmwareBundleList', call, reply);
    const long = page.results.find((b) => b.version.length > MAX_BUNDLE_VERSION_LENGTH);
    if (long !== undefined) {
      throw malformedError(endpointOf(call), `a bundle version is ${formatSize(long.version.length)} long (${JSON.stringify(long.version.slice(0, 40))}…); versions go into the path of GET /api/v1/firmware-bundles/version/{version}, and dus-sync takes at most ${MAX_BUNDLE_VERSION_LENGTH} characters, so this is not one`, reply.status);
    }
    const next = nextUrl(ctx.base, url, page.next, call);
    // DRF's count is of bundles; the first page's length is the page size.
    if (seen.size === 1 && next && typeof page.count === 'number' && page.results.length > 0) total = Math.ceil(page.count / page.results.length);
    const limit = seen.size === 1 && next ? pageLimit(page.count, page.results.length) : undefined;
    if (limit !== undefined) {
      maxPages = limit;
      countText = ` (its count of ${page.count} bundles in pages of ${page.results.length} allows ${limit}: the pages it gives, a tenth more and 10 for growth while it is read)`;
    }
    const known = next ? (total === undefined ? undefined : Math.max(total, seen.size + 1)) : seen.size;
    ctx.onPage?.({ tenant, read: seen.size, ...(known === undefined ? {} : { total: known }) });
    yield page.results;
    url = next;
  }
}

/** DRF `next`: absolute or relative (RFC 3986 against the page it came from), same origin only. */
function nextUrl(base: BaseUrl, current: URL, next: string | null | undefined, call: Call): URL | null {
  if (next === null || next === undefined || next === '') return null;
  let url: URL;
  try {
    url = new URL(next, current);
  } catch {
    throw malformedError(endpointOf(call), `next is not a URL: ${cutText(JSON.stringify(next))}`, 200);
  }
  if (url.origin !== base.origin) {
    // The foreign origin is not quoted: the URL parser lowercases a host, so a key a server put
    // there would no longer match the redaction of its original spelling.
    throw new ApiError(redact(`refusing to follow the next link of ${endpointOf(call)}: it leads to another origin than the API's ${base.origin}, and the API key must not be sent there`), { endpoint: endpointOf(call), retryable: false });
  }
  return url;
}

// ---------------------------------------------------------------- one request

/** How a request is named in messages: the path cut, so that a 5 MB next link is not a 5 MB log line. */
function endpointOf(call: Call): string {
  return `${call.method} ${cutText(call.path, MAX_PATH_SHOWN)}`;
}

const MAX_PATH_SHOWN = 200;
/** Deeper JSON than this is refused: the API's objects are a few levels deep, and deep recursion ends in a stack overflow. */
export const MAX_JSON_DEPTH = 64;

/**
 * How deeply a JSON text (one JSON.parse accepted) nests, stopping past `limit`: the brackets
 * outside strings. One pass over the characters, each string skipped by indexOf to its closing
 * quote. (A walk of the parsed value made an array per object, 1.2 million at 200,000 records;
 * a RegExp exec per bracket and quote was 3.5% of a plan.) Property-tested equal to the walk.
 */
export function depthOfText(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      // To the quote that ends the string: one after an even number of backslashes.
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q === -1) return max;
        i = q;
        let backslashes = 0;
        while (text.charCodeAt(q - 1 - backslashes) === 92) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max && (max = depth) > limit) return max;
    } else if (c === 93 /* ] */ || c === 125 /* } */) {
      depth--;
    }
  }
  return max;
}

const NOT_JSON = Symbol('not-json');

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}

function parseAs<T>(shape: ResponseShape, call: Call, reply: Reply): T {
  if (reply.text.trim() === '') throw malformedError(endpointOf(call), 'the body is empty', reply.status);
  const value = parseJson(reply.text);
  if (value === NOT_JSON) throw malformedError(endpointOf(call), 'the body is not JSON', reply.status);
  if (depthOfText(reply.text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw malformedError(endpointOf(call), `the body nests deeper than ${MAX_JSON_DEPTH} levels`, reply.status);
  const problem = firstProblem(shape, value);
  if (problem) throw malformedError(endpointOf(call), problem, reply.status);
  return value as T;
}

type Attempt = { readonly reply: Reply } | { readonly failure: NetworkFailure };

async function execute(ctx: Context, tenant: string, key: string, limiter: AimdLimiter, call: Call, signal?: AbortSignal): Promise<Reply> {
  const started = ctx.clock.now();
  for (let attempt = 0; ; attempt++) {
    const result = await attemptOnce(ctx, tenant, key, limiter, call, attempt, signal);
    if ('reply' in result && result.reply.status >= 200 && result.reply.status < 300) return result.reply;
    const retryable = 'reply' in result ? RETRYABLE_STATUSES.has(result.reply.status) : result.failure.retryable;
    if (call.idempotent && retryable && attempt < ctx.maxRetries) {
      const delay = retryDelay(ctx, attempt, 'reply' in result ? result.reply : undefined);
      if (ctx.clock.now() - started + delay <= ctx.retryBudgetMs) {
        ctx.log?.debug(`retrying ${endpointOf(call)} in ${delay}ms`, { tenant, attempt: attempt + 1 });
        await ctx.clock.sleep(delay, signal);
        continue;
      }
    }
    throw 'reply' in result
      ? httpError({
        tenant, endpoint: endpointOf(call), status: result.reply.status, bodyText: result.reply.text, retryable, attempts: attempt + 1,
        ...(call.idempotent ? {} : { outcome: result.reply.status < 500 && result.reply.status !== 408 ? 'refused' : 'unknown' }),
        ...retryAfterOf(ctx, result.reply),
      })
      : networkError(ctx, tenant, call, result.failure, attempt + 1);
  }
}

function retryAfterOf(ctx: Context, reply: Reply): { retryAfterMs?: number } {
  const ms = parseRetryAfter(reply.retryAfter, ctx.clock.now());
  return ms === undefined ? {} : { retryAfterMs: ms };
}

function retryDelay(ctx: Context, attempt: number, reply: Reply | undefined): number {
  const hinted = reply ? parseRetryAfter(reply.retryAfter, ctx.clock.now()) : undefined;
  return hinted ?? backoffDelay(attempt, ctx.random);
}

async function attemptOnce(ctx: Context, tenant: string, key: string, limiter: AimdLimiter, call: Call, attempt: number, signal?: AbortSignal): Promise<Attempt> {
  await limiter.acquire(signal);
  const epoch = limiter.epoch;
  const t0 = ctx.clock.now();
  ctx.onRequestStart?.({ method: call.method, route: call.route, tenant, attempt });
  let result: Attempt;
  try {
    result = { reply: await transmit(ctx, tenant, key, call, signal) };
  } catch (err) {
    // An abort is the caller's decision, not a failure of the API.
    if (signal?.aborted) throw signal.reason as Error;
    result = { failure: classifyNetworkError(err) };
    ctx.log?.debug(`${endpointOf(call)} failed: ${redact(String((err as Error)?.message ?? err))}`, { tenant });
  } finally {
    limiter.release();
  }
  const status = 'reply' in result ? result.reply.status : 'error';
  const durationMs = ctx.clock.now() - t0;
  if (status === 429) limiter.onRateLimited(epoch);
  else if (typeof status === 'number' && status >= 500) limiter.onServerError(epoch);
  else if (typeof status === 'number') limiter.onSuccess(durationMs, epoch);
  ctx.log?.debug(`${call.method} ${call.path} ${status} ${durationMs}ms`, { tenant, method: call.method, path: call.path, status, durationMs });
  ctx.onRequest?.({ method: call.method, route: call.route, status, durationMs, tenant, attempt });
  return result;
}

async function transmit(ctx: Context, tenant: string, key: string, call: Call, signal?: AbortSignal): Promise<Reply> {
  const headers: Record<string, string> = {
    'x-service-api-key': key,
    'x-service-tenant': tenant,
    accept: 'application/json',
    'user-agent': ctx.userAgent,
  };
  if (call.body !== undefined) headers['content-type'] = 'application/json';
  // One deadline for the headers and the whole body: undici's body timeout restarts on every
  // chunk, so a server dripping a byte a second would otherwise be read for ever (holding the
  // apply lock). Aborting destroys the body, which ends the read below.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new ResponseLimitError('DUS_REQUEST_DEADLINE',
    `no complete answer within ${formatDuration(ctx.requestTimeoutMs)}`, '--request-timeout')), ctx.requestTimeoutMs);
  const stop = signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
  try {
    // A dispatcher with a request() of its own (undici's index was loaded: a test's MockAgent, or
    // a hand-made double) is asked directly; the CLI's Agent gets undici's request() called on it.
    const send = typeof (ctx.dispatcher as Partial<Dispatcher>).request === 'function'
      ? (o: Dispatcher.RequestOptions) => ctx.dispatcher.request(o)
      : (o: Dispatcher.RequestOptions) => undiciRequest.call(ctx.dispatcher, o);
    const res = await send({
      origin: ctx.base.origin,
      path: call.path,
      method: call.method,
      headers,
      ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
      signal: stop,
    });
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    const tooLarge = () => new ResponseLimitError('DUS_RESPONSE_TOO_LARGE',
      `the answer is larger than ${formatSize(ctx.maxResponseBytes)}, so it was not read further`, '--max-response-size');
    if (ok && Number(res.headers['content-length']) > ctx.maxResponseBytes) {
      // Destroyed unread, the body emits an AbortError of undici's on the next tick; with nobody
      // listening, that was an uncaught exception ("error: Request aborted", the process ending
      // with it) whenever the loop got there before this error did (plan's read-ahead, mid-load).
      res.body.once('error', () => undefined);
      res.body.destroy();
      throw tooLarge();
    }
    // An error answer is read only as far as its message could be shown: its status decides
    // what happens, so a cut (or late) error body still gives a known status.
    const body = ok
      ? await readCapped(res.body, ctx.maxResponseBytes)
      : await readCapped(res.body, Math.min(ctx.maxResponseBytes, ERROR_BODY_BYTES), () => deadline.signal.aborted && !signal?.aborted);
    if (ok && body.cut) throw tooLarge();
    return { status: res.statusCode, text: body.text(), retryAfter: res.headers['retry-after'] };
  } catch (err) {
    if (deadline.signal.aborted && !signal?.aborted) throw deadline.signal.reason as Error;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads a body up to `limit` bytes and stops there (the rest is never read: the connection is
 * closed). `cut` says whether the text is only the beginning. When `keepPartial` says so, a
 * read that fails part way gives what had arrived instead of the error.
 */
async function readCapped(body: Dispatcher.ResponseData['body'], limit: number, keepPartial?: () => boolean): Promise<{ text: () => string; cut: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  // The text is made only when it is wanted: an answer cut at the cap is dropped, not decoded.
  const text = () => decode(chunks);
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (size + chunk.length > limit) {
        chunks.push(chunk.subarray(0, limit - size));
        // As above: the AbortError of a body destroyed unread must not become an uncaught exception.
        body.once('error', () => undefined);
        body.destroy();
        return { text, cut: true };
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } catch (err) {
    if (keepPartial?.()) return { text, cut: true };
    throw err;
  }
  return { text, cut: false };
}

/** UTF-8 as undici's body.text() decodes it (a leading BOM dropped). */
function decode(chunks: Buffer[]): string {
  return new TextDecoder().decode(Buffer.concat(chunks));
}

function networkError(ctx: Context, tenant: string, call: Call, failure: NetworkFailure, attempts: number): ApiError {
  const endpoint = endpointOf(call);
  if (failure.plainHttp) {
    // Not a certificate problem, whatever the handshake's error says: the scheme or the port is wrong.
    const fix = isLoopbackHost(new URL(ctx.base.origin).hostname)
      ? `use http://${ctx.base.host}${ctx.base.prefix} (plain http is allowed to loopback) or fix base_url`
      : 'fix base_url: is the port right? (plain http to a host that is not loopback needs --insecure-http and sends the key unencrypted)';
    return new ApiError(redact(`the server at ${ctx.base.host} speaks plain http, not https; ${fix} (${endpoint} for tenant ${tenant} was not sent: ${failure.code})`), {
      retryable: false, endpoint, ...(call.idempotent ? {} : { outcome: 'not-sent' as const }),
    });
  }
  const tries = attempts > 1 ? `, ${attempts} tries` : '';
  if (!call.idempotent) {
    const outcome = failure.sent ? 'unknown' : 'not-sent';
    const message = failure.flag
      ? `the outcome of ${endpoint} for tenant ${tenant} is unknown: ${failure.description} (${failure.flag})`
      : failure.sent
        ? `the outcome of ${endpoint} for tenant ${tenant} is unknown: ${failure.description} after the request was sent (${failure.code})`
        : `${endpoint} for tenant ${tenant} was not sent: ${failure.description} (${failure.code}, ${ctx.base.host})`;
    return new ApiError(redact(message), { retryable: false, endpoint, outcome });
  }
  return new ApiError(redact(`could not complete ${endpoint} for tenant ${tenant} at ${ctx.base.host}: ${failure.description} (${failure.flag ?? failure.code}${tries})`), {
    retryable: failure.retryable,
    endpoint,
  });
}
