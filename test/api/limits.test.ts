// The client's bounds on an answer: a size cap read while streaming, and one deadline for headers
// and body. MockAgent for the shapes of answers; the emulator's hostile modes over real HTTP on
// 127.0.0.1 for what only a socket shows (drip, endless).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { MockAgent } from 'undici';
import { createApiClient, type ApiClient, type CreateApiClientOptions } from '../../src/api/client.js';
import { MAX_DETAIL_CHARS } from '../../src/api/errors.js';
import {
  checkedMaxResponseSize, checkedRequestTimeout, formatSize, MAX_RESPONSE_BYTES, parseSize, REQUEST_TIMEOUT_MS,
} from '../../src/api/limits.js';
import { parseDurationMs } from '../../src/limits.js';
import { startEmulator, type HostileSettings, type RunningEmulator } from '../../src/emulator/index.js';
import { ApiError, UserError } from '../../src/errors.js';
import { ACTION, BASE, JSON_HEADERS, KEY, clientFor, mockAgent } from './helpers.js';

const PHASE = { name: 'wave', trigger_on: {}, info: {} };

async function failure(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe('sizes and durations', () => {
  it.each([
    ['32MiB', 32 * 1024 * 1024], ['32 MiB', 32 * 1024 * 1024], ['512KiB', 512 * 1024], ['5MB', 5_000_000],
    ['1kb', 1000], ['1GiB', 1024 ** 3], ['2048', 2048], ['10B', 10], ['1.5MiB', 1.5 * 1024 * 1024],
  ])('reads the size %s', (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  it.each(['', 'MiB', '-1MiB', '3 parsecs', '1e6'])('does not read %j as a size', (text) => {
    expect(parseSize(text)).toBeUndefined();
  });

  it.each([['60s', 60_000], ['1m', 60_000], ['1500ms', 1500], ['2', 2000], ['0.5s', 500], ['1h', 3_600_000]])('reads the duration %s', (text, ms) => {
    expect(parseDurationMs(text)).toBe(ms);
  });

  it('formats sizes for messages', () => {
    expect(formatSize(MAX_RESPONSE_BYTES.default)).toBe('32 MiB');
    expect(formatSize(64 * 1024)).toBe('64 KiB');
    expect(formatSize(1_500_000)).toBe('1.4 MiB');
    expect(formatSize(10)).toBe('10 bytes');
  });

  it('refuses limits out of bounds with one sentence naming the flag and the bounds', () => {
    expect(checkedMaxResponseSize('1KiB', '--max-response-size')).toBe(MAX_RESPONSE_BYTES.min);
    expect(checkedMaxResponseSize('256MiB', '--max-response-size')).toBe(MAX_RESPONSE_BYTES.max);
    expect(() => checkedMaxResponseSize('10B', '--max-response-size')).toThrow(new UserError('--max-response-size takes a size from 1 KiB to 256 MiB (e.g. 16MiB), not "10B"'));
    expect(() => checkedMaxResponseSize('1GiB', '--max-response-size')).toThrow(/takes a size from 1 KiB to 256 MiB \(e\.g\. 16MiB\), not "1GiB"/);
    expect(() => checkedMaxResponseSize('lots', 'api.max_response_size')).toThrow(/^api.max_response_size takes a size from 1 KiB to 256 MiB/);
    expect(checkedRequestTimeout('1s', '--request-timeout')).toBe(REQUEST_TIMEOUT_MS.min);
    expect(checkedRequestTimeout('10m', '--request-timeout')).toBe(REQUEST_TIMEOUT_MS.max);
    expect(() => checkedRequestTimeout('0s', '--request-timeout')).toThrow('--request-timeout takes a duration from 1s to 10m (e.g. 30s, 5m), not "0s"');
    expect(() => checkedRequestTimeout('2h', '--request-timeout')).toThrow('--request-timeout takes a duration from 1s to 10m (e.g. 30s, 5m), not "2h"');
    expect(() => checkedRequestTimeout('soon', '--request-timeout')).toThrow(/takes a duration from 1s to 10m/);
  });
});

describe('the size cap (MockAgent)', () => {
  let agent: MockAgent;
  afterEach(async () => agent.close());

  const CAP = 64 * 1024;
  const big = (n: number) => JSON.stringify({ ...ACTION, padding: 'x'.repeat(n) });

  it('refuses a 2xx answer over the cap by its Content-Length, naming the endpoint, without retrying', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/actions/42', method: 'GET' }).reply(200, big(CAP), { headers: { 'content-type': 'application/json', 'content-length': String(big(CAP).length) } });
    const { client, events } = clientFor(agent, { maxResponseBytes: CAP });
    const err = await failure(client.tenant('acme').getAction(42));
    expect(err.message).toBe('could not complete GET /api/v1/actions/42 for tenant acme at dus.test: the answer is larger than 64 KiB, so it was not read further (--max-response-size)');
    expect(err.retryable).toBe(false);
    expect(events).toHaveLength(1);
  });

  it('stops reading a 2xx answer without Content-Length at the cap', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/firmware-bundles', method: 'GET' }).reply(200, Buffer.from(big(5 * CAP)), JSON_HEADERS);
    const { client } = clientFor(agent, { maxResponseBytes: CAP });
    const err = await failure(client.tenant('acme').listBundles());
    expect(err.message).toMatch(/^could not complete GET \/api\/v1\/firmware-bundles for tenant acme at dus\.test: the answer is larger than 64 KiB/);
  });

  it('reads an answer of exactly the cap', async () => {
    agent = mockAgent();
    const text = big(CAP - big(0).length);
    expect(text.length).toBe(CAP);
    agent.get(BASE).intercept({ path: '/api/v1/actions/42', method: 'GET' }).reply(200, text, JSON_HEADERS);
    const { client } = clientFor(agent, { maxResponseBytes: CAP });
    expect((await client.tenant('acme').getAction(42))?.id).toBe(42);
  });

  it('an append answered 2xx over the cap has an unknown outcome (the executor reads it back)', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/actions/42/append_phase', method: 'POST' }).reply(201, big(2 * CAP), JSON_HEADERS);
    const { client } = clientFor(agent, { maxResponseBytes: CAP });
    const err = await failure(client.tenant('acme').appendPhase(42, PHASE));
    expect(err.details.outcome).toBe('unknown');
    expect(err.message).toBe('the outcome of POST /api/v1/actions/42/append_phase for tenant acme is unknown: the answer is larger than 64 KiB, so it was not read further (--max-response-size)');
  });

  it('an error answer is read only as far as its message shows: the status still decides', async () => {
    agent = mockAgent();
    const detail = JSON.stringify({ detail: 'y'.repeat(10_000_000) });
    agent.get(BASE).intercept({ path: '/api/v1/actions/42/append_phase', method: 'POST' }).reply(400, detail, JSON_HEADERS);
    agent.get(BASE).intercept({ path: '/api/v1/actions/42', method: 'GET' }).reply(503, detail, JSON_HEADERS);
    agent.get(BASE).intercept({ path: '/api/v1/actions/42', method: 'GET' }).reply(200, ACTION, JSON_HEADERS);
    const { client } = clientFor(agent, { maxResponseBytes: CAP });
    const err = await failure(client.tenant('acme').appendPhase(42, PHASE));
    expect(err.status).toBe(400);
    expect(err.details.outcome).toBe('refused');
    expect(err.message.length).toBeLessThan(MAX_DETAIL_CHARS + 100);
    // A 503 with an enormous body is still a 503: retried.
    expect((await client.tenant('acme').getAction(42))?.id).toBe(42);
  });
});

describe('the deadline (a raw server on 127.0.0.1)', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise<void>((r) => { s.close(() => r()); s.closeAllConnections(); });
  });

  async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
    const s = createServer(handler);
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  }

  it('covers the headers and the whole body: a stalled answer and a missing one both end there', async () => {
    const stalled = await serve((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.write('{"id":'); });
    const silent = await serve(() => { /* never answers */ });
    for (const url of [stalled, silent]) {
      const client = createApiClient({ baseUrl: url, keys: new Map([['acme', KEY]]), requestTimeoutMs: 300, maxRetries: 0 });
      const started = Date.now();
      const err = await failure(client.tenant('acme').getAction(42));
      await client.close();
      expect(err.message).toMatch(/^could not complete GET \/api\/v1\/actions\/42 for tenant acme at 127\.0\.0\.1:\d+: no complete answer within 300ms \(--request-timeout\)$/);
      expect(err.retryable).toBe(true);
      expect(Date.now() - started).toBeLessThan(10_000);
    }
  });
});

describe('hostile answers over real HTTP (emulator)', () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });

  async function hostile(h: HostileSettings): Promise<RunningEmulator> {
    const emu = await startEmulator({
      seed: { tenants: { acme: { api_key: KEY, bundles: [], actions: [{ id: 42, phases: [{ name: 'canary' }] }] } } },
      faults: { hostile: h },
    });
    open.push(emu);
    return emu;
  }

  function client(url: string, opts: Partial<CreateApiClientOptions> = {}): ApiClient {
    const c = createApiClient({
      baseUrl: url, keys: new Map([['acme', KEY]]), random: () => 0,
      clock: { now: () => Date.now(), sleep: (ms, signal) => sleep(Math.min(ms, 20), undefined, signal ? { signal } : {}) },
      ...opts,
    });
    open.push(c);
    return c;
  }

  it('a dripping answer ends at the deadline, is retried (a GET is safe), then named', async () => {
    const emu = await hostile({ mode: 'drip', intervalMs: 100, routes: ['action'] });
    const started = Date.now();
    const err = await failure(client(emu.url, { requestTimeoutMs: 300, maxRetries: 1 }).tenant('acme').getAction(42));
    expect(err.message).toMatch(/^could not complete GET \/api\/v1\/actions\/42 for tenant acme at 127\.0\.0\.1:\d+: no complete answer within 300ms \(--request-timeout, 2 tries\)$/);
    expect(err.retryable).toBe(true);
    expect(emu.stats.byRoute['GET /actions/{id}']).toBe(2);
    // Two tries of 300 ms; a drip of the whole action would take many seconds.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a dripping append is not re-sent: its outcome is unknown, and it did land', async () => {
    const emu = await hostile({ mode: 'drip', intervalMs: 100, routes: ['append'] });
    const err = await failure(client(emu.url, { requestTimeoutMs: 300 }).tenant('acme').appendPhase(42, PHASE));
    expect(err.details.outcome).toBe('unknown');
    expect(err.message).toBe('the outcome of POST /api/v1/actions/42/append_phase for tenant acme is unknown: no complete answer within 300ms (--request-timeout)');
    expect(emu.stats.byRoute['POST /actions/{id}/append_phase']).toBe(1);
    expect(emu.store.getAction('acme', 42)!.phases.map((p) => p.name)).toEqual(['canary', 'wave']);
  });

  it('a dripping error answer keeps its status: an append refused with 404 is a refusal', async () => {
    const emu = await hostile({ mode: 'drip', intervalMs: 100, routes: ['append'] });
    const err = await failure(client(emu.url, { requestTimeoutMs: 300 }).tenant('acme').appendPhase(7, PHASE));
    expect(err.status).toBe(404);
    expect(err.details.outcome).toBe('refused');
  });

  it('an endless answer is cut at the cap', async () => {
    const emu = await hostile({ mode: 'endless', routes: ['bundles'] });
    const err = await failure(client(emu.url, { maxResponseBytes: 256 * 1024 }).tenant('acme').listBundles());
    expect(err.message).toMatch(/^could not complete GET \/api\/v1\/firmware-bundles for tenant acme at 127\.0\.0\.1:\d+: the answer is larger than 256 KiB, so it was not read further \(--max-response-size\)$/);
  });

  it('a caller\'s abort during a dripping body is the caller\'s, not a deadline', async () => {
    const emu = await hostile({ mode: 'drip', intervalMs: 100, routes: ['action'] });
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('stopped by the user')), 200);
    await expect(client(emu.url, { requestTimeoutMs: 5000 }).tenant('acme').getAction(42, ac.signal)).rejects.toThrow('stopped by the user');
  });
});
