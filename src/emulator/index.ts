// The emulator of the Device Update Service API on node:http: the four operations of the API
// document plus GET /actions/{id}, DRF-shaped answers, atomic persistence, and faults that
// repeat under the same seed. Where the API document is silent, it does what a Django REST
// Framework service would do (see the README section "The emulator").
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { writeFileAtomic } from '../atomic-write.js';
import { UserError } from '../errors.js';
import { DEFAULT_FAULTS, FaultInjector } from './faults.js';
import { echoBody, hostileFor, sendHostile } from './hostile.js';
import type { FaultSettings } from './faults.js';
import { pathText, SeedProblem, useSeedFile } from './seed.js';
import type { Seed } from './seed.js';
import { EmulatorStore, StoreError } from './store.js';
import { checkFirmwarePatch, checkPhase } from './validate.js';
import { redact, registerSecret } from '../redact.js';

export type { Seed, SeedTenant, SeedBundle, SeedFirmware, SeedAction, SeedPhase, SeedDependency } from './seed.js';
export type { FaultSettings } from './faults.js';
export { echoForms, HOSTILE_MODES, HOSTILE_ROUTES } from './hostile.js';
export type { HostileMode, HostileRoute, HostileSettings } from './hostile.js';
export { mulberry32 } from './faults.js';
export { EmulatorStore, StoreError, derivedUuid } from './store.js';
export type { ActionObject, BundleObject, FirmwareObject, PhaseObject, FirmwarePatch, Dependency } from './store.js';
export { loadSeedFile } from './seed.js';

export interface EmulatorOptions {
  /** A seed object or the path of a YAML/JSON seed file. */
  seed: Seed | string;
  host?: string;
  port?: number;
  /** Persist after every write (temp + rename); on start, load it instead of the seed if it exists. */
  dataFile?: string;
  /** Bundles per page; 0/undefined = one page (still {count, next: null, previous: null, results}). */
  pageSize?: number;
  /** next/previous as absolute URLs (default: relative, "/api/v1/firmware-bundles?page=2"). */
  absoluteNext?: boolean;
  /** Request body limit in bytes (default 1 MiB); above it: 413. */
  bodyLimit?: number;
  faults?: Partial<FaultSettings>;
  /**
   * Trigger appended phases on a clock: a phase appended at time t is marked triggered once
   * `now()` (default Date.now) reaches t + triggerAfterMs. Tests pass their own `now`.
   */
  phaseClock?: { triggerAfterMs: number; now?: () => number };
  /** One line per request; never carries a key. */
  log?: (line: string) => void;
}

export interface EmulatorStats { requests: number; byRoute: Record<string, number>; writes: number }

export interface RunningEmulator {
  readonly url: string;
  readonly port: number;
  readonly store: EmulatorStore;
  /** Mutable at runtime: tests switch faults on and off. */
  readonly faults: FaultSettings;
  readonly stats: EmulatorStats;
  close(): Promise<void>;
}

const PREFIX = '/api/v1';
const DEFAULT_BODY_LIMIT = 1024 * 1024;

type RouteName = 'bundles' | 'bundle' | 'firmware' | 'append' | 'action';
interface Route { name: RouteName; template: string; allow: string; param?: string }

/** Matches on the raw (still encoded) path, so an encoded "/" in a parameter never changes the route. */
function matchRoute(rawPath: string): Route | undefined {
  if (!rawPath.startsWith(`${PREFIX}/`)) return undefined;
  const rest = rawPath.slice(PREFIX.length);
  let m: RegExpExecArray | null;
  if (rest === '/firmware-bundles') return { name: 'bundles', template: '/firmware-bundles', allow: 'GET' };
  if ((m = /^\/firmware-bundles\/version\/([^/]+)$/.exec(rest))) {
    return { name: 'bundle', template: '/firmware-bundles/version/{version}', allow: 'GET', param: m[1]! };
  }
  if ((m = /^\/firmwares\/([^/]+)$/.exec(rest))) return { name: 'firmware', template: '/firmwares/{version-number}', allow: 'PUT', param: m[1]! };
  if ((m = /^\/actions\/(\d+)\/append_phase$/.exec(rest))) {
    return { name: 'append', template: '/actions/{id}/append_phase', allow: 'POST', param: m[1]! };
  }
  if ((m = /^\/actions\/(\d+)$/.exec(rest))) return { name: 'action', template: '/actions/{id}', allow: 'GET', param: m[1]! };
  return undefined;
}

function decodeParam(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Reads the whole body, keeping at most `limit` bytes; the rest is drained so keep-alive survives. */
function readBody(req: IncomingMessage, limit: number): Promise<{ tooLarge: boolean; text: string }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= limit) chunks.push(c);
    });
    req.on('end', () => resolve({ tooLarge: size > limit, text: Buffer.concat(chunks).toString('utf8') }));
    req.on('error', reject);
  });
}

function isJson(contentType: string | undefined): boolean {
  const media = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return media === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(media);
}

/** Owner-only (the state holds the keys), through a fresh temp file: never through a planted link. */
function persistTo(file: string, store: EmulatorStore): void {
  writeFileAtomic(file, `${JSON.stringify(store.snapshot(), null, 2)}\n`, { mode: 0o600 });
}

function buildStore(opts: EmulatorOptions): EmulatorStore {
  const make = (seed: Seed) => new EmulatorStore(seed);
  if (opts.dataFile && existsSync(opts.dataFile)) return useSeedFile(opts.dataFile, make);
  if (typeof opts.seed === 'string') return useSeedFile(opts.seed, make);
  try {
    return make(opts.seed);
  } catch (err) {
    if (err instanceof SeedProblem) throw new UserError(`the seed: ${pathText(err.path)} ${err.message}; fix the seed and start again.`);
    throw err;
  }
}

interface Ctx {
  store: EmulatorStore;
  faults: FaultSettings;
  injector: FaultInjector;
  stats: EmulatorStats;
  opts: EmulatorOptions;
  baseUrl: () => string;
  sleep: (ms: number) => Promise<void>;
  /** Runs fn after ms unless the emulator closes first. */
  later: (ms: number, fn: () => void) => void;
}

interface Outcome { status: number; tenant?: string; dropped?: boolean }

async function handle(ctx: Ctx, req: IncomingMessage, res: ServerResponse): Promise<Outcome> {
  const method = req.method ?? 'GET';
  const rawUrl = req.url ?? '/';
  const q = rawUrl.indexOf('?');
  const rawPath = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const route = matchRoute(rawPath);
  const key = route ? `${method} ${route.template}` : 'unmatched';
  ctx.stats.byRoute[key] = (ctx.stats.byRoute[key] ?? 0) + 1;
  if (ctx.faults.latencyMs > 0) await ctx.sleep(ctx.faults.latencyMs);
  if (!route) return reply(res, 404, { detail: 'Not found.' });

  const tenant = authenticate(ctx.store, req);
  if (typeof tenant === 'number') {
    return reply(res, tenant, { detail: tenant === 401 ? 'Invalid API key.' : 'You do not have permission to perform this action.' });
  }
  // From here on, a hostile mode for this route changes how every answer is sent.
  const hostile = hostileFor(ctx.faults.hostile, route.name);
  const respond: Respond = hostile
    ? (status, body, headers) => sendHostile({ res, sleep: ctx.sleep }, hostile, status, body, headers)
    : (status, body, headers) => send(res, status, body, headers);
  const out = async (status: number, body: unknown, headers?: Record<string, string>): Promise<Outcome> => {
    await respond(status, body, headers);
    return { status: hostile?.mode === 'echo' ? status : hostile?.status ?? status, tenant };
  };
  // Django answers HEAD wherever it answers GET (without a body; node:http drops it).
  if (method !== route.allow && !(method === 'HEAD' && route.allow === 'GET')) return out(405, { detail: `Method "${method}" not allowed.` }, { allow: route.allow });
  // An echoing gateway answers for the server: nothing behind it runs.
  if (hostile?.mode === 'echo') return out(hostile.status ?? 400, echoBody(header(req, 'x-service-api-key') ?? ''));

  const fault = ctx.injector.beforeRequest(tenant);
  switch (fault.kind) {
    case 'rate-limited': return out(429, { detail: 'Request was throttled. Expected available in 1 second.' }, { 'retry-after': '1' });
    case 'fail': return out(fault.status, { detail: fault.detail });
    case 'none': break;
  }
  const q2 = q === -1 ? '' : rawUrl.slice(q + 1);
  switch (route.name) {
    case 'bundles': return out(...listBundles(ctx, tenant, rawPath, q2));
    case 'bundle': return out(...getBundle(ctx, tenant, route.param!));
    case 'action': return out(...getAction(ctx, tenant, route.param!));
    case 'firmware': return withBody(ctx, req, tenant, out, (body) => putFirmware(ctx, tenant, route.param!, body));
    case 'append': return withBody(ctx, req, tenant, out, (body) => appendPhase(ctx, tenant, route.param!, body));
  }
}

type Respond = (status: number, body: unknown, headers?: Record<string, string>) => void | Promise<void>;

function reply(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): Outcome {
  send(res, status, body, headers);
  return { status };
}

/** The tenant name, or the status to refuse with: 401 unknown key, 403 key of another tenant. */
function authenticate(store: EmulatorStore, req: IncomingMessage): string | 401 | 403 {
  const key = header(req, 'x-service-api-key');
  if (!key) return 401;
  const owner = store.tenantForKey(key);
  if (owner === undefined) return 401;
  // An unknown tenant gets the same 403 as another tenant's name: the key holder learns
  // nothing about which tenants exist.
  return header(req, 'x-service-tenant') === owner ? owner : 403;
}

type Answer = [number, unknown, Record<string, string>?];

function listBundles(ctx: Ctx, tenant: string, rawPath: string, query: string): Answer {
  const size = ctx.opts.pageSize ?? 0;
  if (!(size > 0)) {
    const all = ctx.store.listBundles(tenant);
    return [200, { count: all.length, next: null, previous: null, results: all }];
  }
  // Only the page is copied: copying every bundle for every page made a listing quadratic.
  const count = ctx.store.bundleCount(tenant);
  const params = new URLSearchParams(query);
  const pageText = params.get('page') ?? '1';
  const page = /^\d+$/.test(pageText) ? Number(pageText) : NaN;
  const pages = Math.max(1, Math.ceil(count / size));
  if (!(page >= 1 && page <= pages)) return [404, { detail: 'Invalid page.' }];
  const link = (n: number): string => {
    const p = new URLSearchParams(params);
    // DRF drops ?page for the first page.
    if (n === 1) p.delete('page');
    else p.set('page', String(n));
    const qs = p.toString();
    const rel = `${rawPath}${qs ? `?${qs}` : ''}`;
    return ctx.opts.absoluteNext ? `${ctx.baseUrl()}${rel}` : rel;
  };
  return [200, {
    count,
    next: page < pages ? link(page + 1) : null,
    previous: page > 1 ? link(page - 1) : null,
    results: ctx.store.listBundles(tenant, (page - 1) * size, page * size),
  }];
}

function getBundle(ctx: Ctx, tenant: string, raw: string): Answer {
  const version = decodeParam(raw);
  const bundle = version === undefined ? undefined : ctx.store.getBundle(tenant, version);
  return bundle ? [200, bundle] : [404, { detail: 'Not found.' }];
}

function getAction(ctx: Ctx, tenant: string, raw: string): Answer {
  const asked = Number(raw);
  const id = ctx.faults.wrongAction?.[asked] ?? asked;
  const lag = ctx.faults.readLagMs ?? 0;
  const action = lag > 0 ? ctx.store.getActionAsOf(tenant, id, performance.now() - lag) : ctx.store.getAction(tenant, id);
  return action ? [200, action] : [404, { detail: 'Not found.' }];
}

type Write = { answer: Answer; committed: boolean; drop?: boolean };

async function withBody(ctx: Ctx, req: IncomingMessage, tenant: string, out: (...answer: Answer) => Promise<Outcome>, write: (body: unknown) => Write): Promise<Outcome> {
  const limit = ctx.opts.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const { tooLarge, text } = await readBody(req, limit);
  let result: Write;
  if (tooLarge) result = { answer: [413, { detail: `Request body is larger than ${limit} bytes.` }], committed: false };
  else if (!isJson(header(req, 'content-type'))) {
    result = { answer: [415, { detail: `Unsupported media type "${header(req, 'content-type') ?? ''}" in request.` }], committed: false };
  } else {
    const parsed = parseJson(text);
    result = 'error' in parsed ? { answer: [400, { detail: `JSON parse error - ${parsed.error}` }], committed: false } : write(parsed.value);
  }
  if (result.committed) ctx.stats.writes += 1;
  if (result.drop) {
    // The write is stored and persisted; the client never learns it: the "outcome unknown" case.
    req.socket.destroy();
    return { status: result.answer[0], tenant, dropped: true };
  }
  return out(...result.answer);
}

function parseJson(text: string): { value: unknown } | { error: string } {
  // DRF reads an empty body as no data at all.
  if (text.trim() === '') return { value: {} };
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function putFirmware(ctx: Ctx, tenant: string, raw: string, body: unknown): Write {
  const versionNumber = decodeParam(raw);
  if (versionNumber === undefined) return { answer: [404, { detail: 'Not found.' }], committed: false };
  const checked = checkFirmwarePatch(body);
  if (!checked.ok) return { answer: [400, checked.errors], committed: false };
  try {
    return { answer: [200, ctx.store.updateFirmware(tenant, versionNumber, checked.value)], committed: true };
  } catch (err) {
    return { answer: storeErrorAnswer(err), committed: false };
  }
}

function appendPhase(ctx: Ctx, tenant: string, raw: string, body: unknown): Write {
  const id = Number(raw);
  if (!ctx.store.getAction(tenant, id)) return { answer: [404, { detail: 'Not found.' }], committed: false };
  const checked = checkPhase(body);
  if (!checked.ok) return { answer: [400, checked.errors], committed: false };
  const late = ctx.faults.lateCommitMs ?? 0;
  if (late > 0) {
    // The gateway gives up at once; the server stores the phase later, unseen by the client.
    ctx.later(late, () => { ctx.store.appendPhase(tenant, id, checked.value); ctx.stats.writes += 1; });
    return { answer: [504, { detail: 'Gateway timeout.' }], committed: false };
  }
  if (ctx.injector.raceBeforeAppend()) {
    // Another runner's identical append lands first: the action ends with the phase twice.
    ctx.store.appendPhase(tenant, id, checked.value);
    ctx.stats.writes += 1;
  }
  const stored = ctx.store.appendPhase(tenant, id, checked.value);
  // Behind a queue the answer, like the reads, shows the action as the lagging replica has it.
  const lag = ctx.faults.readLagMs ?? 0;
  const action = lag > 0 ? ctx.store.getActionAsOf(tenant, id, performance.now() - lag) ?? stored : stored;
  return { answer: [201, action], committed: true, drop: ctx.injector.dropAfterCommit() };
}

function storeErrorAnswer(err: unknown): Answer {
  if (err instanceof StoreError && err.kind === 'ambiguous') return [400, { detail: err.message }];
  if (err instanceof StoreError) return [404, { detail: 'Not found.' }];
  throw err;
}

/** Starts the emulator; resolves once it listens. A bad seed rejects with a one-sentence UserError. */
export async function startEmulator(opts: EmulatorOptions): Promise<RunningEmulator> {
  const store = buildStore(opts);
  if (opts.phaseClock) store.phaseClock = { triggerAfterMs: opts.phaseClock.triggerAfterMs, now: opts.phaseClock.now ?? (() => Date.now()) };
  const faults: FaultSettings = { ...DEFAULT_FAULTS, ...opts.faults };
  const stats: EmulatorStats = { requests: 0, byRoute: {}, writes: 0 };
  if (opts.dataFile) {
    const file = opts.dataFile;
    store.onWrite = () => persistTo(file, store);
    if (!existsSync(file)) persistTo(file, store);
  }
  const timers = new Set<NodeJS.Timeout>();
  const sleep = (ms: number) => new Promise<void>((resolve) => {
    const t = setTimeout(() => { timers.delete(t); resolve(); }, ms);
    timers.add(t);
  });
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => { timers.delete(t); fn(); }, ms);
    timers.add(t);
  };
  let url = '';
  const ctx: Ctx = { store, faults, injector: new FaultInjector(faults), stats, opts, baseUrl: () => url, sleep, later };
  const server = createServer({ keepAlive: true }, (req, res) => {
    stats.requests += 1;
    const started = performance.now();
    handle(ctx, req, res).then(
      (o) => logLine(opts, store, req, o, started),
      (err: unknown) => {
        send(res, 500, { detail: 'A server error occurred.' });
        opts.log?.(`${req.method} ${req.url} 500 internal error: ${(err as Error).message}`);
      },
    );
  });
  server.keepAliveTimeout = 5000;
  const port = await listen(server, opts.port ?? 0, opts.host ?? '127.0.0.1');
  const host = opts.host ?? '127.0.0.1';
  url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url, port, store, faults, stats,
    close: () => closeServer(server, timers),
  };
}

function logLine(opts: EmulatorOptions, store: EmulatorStore, req: IncomingMessage, o: Outcome, started: number): void {
  if (!opts.log) return;
  const ms = Math.round(performance.now() - started);
  // The path and query as sent may hold a key (a client that put one in a URL): never logged.
  for (const key of store.apiKeys()) registerSecret(key);
  opts.log(redact(`${req.method} ${req.url} ${o.dropped ? `${o.status} committed, connection dropped` : o.status} ${ms}ms tenant=${o.tenant ?? '-'}`));
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'the address is in use' : err.code === 'EACCES' ? 'permission denied' : err.message;
      reject(new UserError(`cannot listen on ${host}:${port}: ${why}; pick another --port (0 picks a free one) or --host.`));
    });
    server.listen(port, host, () => {
      server.removeAllListeners('error');
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server, timers: Set<NodeJS.Timeout>): Promise<void> {
  for (const t of timers) clearTimeout(t);
  timers.clear();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    // A request stuck in a latency delay would hold close() open; an emulator need not wait for it.
    server.closeAllConnections();
  });
}
