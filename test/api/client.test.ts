// The client against undici's MockAgent: no network, a fake clock, one fixture per failure mode.
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { Dispatcher, MockAgent } from 'undici';
import { createApiClient } from '../../src/api/client.js';
import { ApiError, UserError } from '../../src/errors.js';
import { ACTION, BASE, JSON_HEADERS, KEY, bundle, clientFor, firmware, mockAgent } from './helpers.js';

let agent: MockAgent;
afterEach(async () => {
  await agent.close();
});

const LIST = '/api/v1/firmware-bundles';
const PHASE = { name: 'wave', trigger_on: {}, info: {} };

async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error('expected the promise to reject');
}

function neterr(code: string): Error {
  return Object.assign(new Error(`simulated ${code}`), { code });
}

describe('requests', () => {
  it('sends both headers, accept and user-agent on every request', async () => {
    agent = mockAgent();
    let seen: Record<string, string> = {};
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply((opts) => {
      seen = opts.headers as Record<string, string>;
      return { statusCode: 200, data: { results: [] }, responseOptions: JSON_HEADERS };
    });
    const { client } = clientFor(agent);
    expect(await client.tenant('acme').listBundles()).toEqual([]);
    expect(seen['x-service-api-key']).toBe(KEY);
    expect(seen['x-service-tenant']).toBe('acme');
    expect(seen['accept']).toBe('application/json');
    expect(seen['user-agent']).toMatch(/^dus-sync\//);
  });

  it.each([
    ['1.0/../x', '1.0%2F..%2Fx'],
    ['a b', 'a%20b'],
    ['ü', '%C3%BC'],
    ['#1', '%231'],
  ])('percent-encodes the version %s as one path segment', async (version, encoded) => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: `/api/v1/firmware-bundles/version/${encoded}`, method: 'GET' }).reply(200, bundle(version, []));
    agent.get(BASE).intercept({ path: `/api/v1/firmwares/${encoded}`, method: 'PUT' }).reply(200, {});
    const { client } = clientFor(agent);
    const t = client.tenant('acme');
    expect((await t.getBundle(version)).version).toBe(version);
    await t.putFirmware(version, { is_deactivated: true, uncompressed_size: 1, dependencies: [] });
    agent.assertNoPendingInterceptors();
  });

  it('keeps the base URL path prefix', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/prefix/api/v1/actions/42', method: 'GET' }).reply(200, ACTION);
    const { client } = clientFor(agent, { baseUrl: `${BASE}/prefix/` });
    expect(await client.tenant('acme').getAction(42)).toEqual(ACTION);
  });

  it('getAction returns null on 404', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/actions/7', method: 'GET' }).reply(404, { detail: 'Not found.' });
    const { client } = clientFor(agent);
    expect(await client.tenant('acme').getAction(7)).toBeNull();
  });

  it('sends the PUT body as JSON and accepts an empty answer', async () => {
    agent = mockAgent();
    let body = '';
    agent.get(BASE).intercept({ path: '/api/v1/firmwares/2.4.1', method: 'PUT' }).reply((opts) => {
      body = String(opts.body);
      return { statusCode: 204, data: '' };
    });
    const { client } = clientFor(agent);
    await client.tenant('acme').putFirmware('2.4.1', { is_deactivated: true, uncompressed_size: 5, dependencies: [{ component_name: 'a', min_version: '1' }] });
    expect(JSON.parse(body)).toEqual({ is_deactivated: true, uncompressed_size: 5, dependencies: [{ component_name: 'a', min_version: '1' }] });
  });

  it('tenant() without a key is a UserError', () => {
    agent = mockAgent();
    const { client } = clientFor(agent);
    expect(() => client.tenant('globex')).toThrow(UserError);
    expect(() => client.tenant('globex')).toThrow(/no API key for tenant globex/);
  });

  it('refuses plain http to another host before any request', () => {
    agent = mockAgent();
    expect(() => createApiClient({ baseUrl: 'http://dus.example.com', keys: new Map(), dispatcher: agent })).toThrow(
      'refusing to send API keys over plain http to dus.example.com: use https:// or pass --insecure-http',
    );
  });

  it('reports each attempt to onRequest with the route without ids', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/actions/42', method: 'GET' }).reply(503, '');
    agent.get(BASE).intercept({ path: '/api/v1/actions/42', method: 'GET' }).reply(200, ACTION);
    const { client, events } = clientFor(agent);
    await client.tenant('acme').getAction(42);
    expect(events.map((e) => [e.route, e.status, e.tenant])).toEqual([
      ['GET /actions/{id}', 503, 'acme'],
      ['GET /actions/{id}', 200, 'acme'],
    ]);
  });
});

describe('retries', () => {
  it('retries a 429 after the Retry-After seconds', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(429, { detail: 'slow down' }, { headers: { 'retry-after': '3' } });
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(200, { results: [bundle('b1', [])] });
    const { client, clock } = clientFor(agent);
    expect(await client.tenant('acme').listBundles()).toHaveLength(1);
    expect(clock.sleeps).toEqual([3000]);
  });

  it('honours a Retry-After HTTP date', async () => {
    agent = mockAgent();
    const { client, clock } = clientFor(agent);
    const at = new Date(clock.now() + 5000).toUTCString();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(429, '', { headers: { 'retry-after': at } });
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(200, { results: [] });
    await client.tenant('acme').listBundles();
    expect(clock.sleeps).toEqual([5000]);
  });

  it('retries 503, 502, 504 and network errors with jittered exponential backoff', async () => {
    agent = mockAgent();
    const pool = agent.get(BASE);
    pool.intercept({ path: LIST, method: 'GET' }).reply(503, '');
    pool.intercept({ path: LIST, method: 'GET' }).reply(502, '');
    pool.intercept({ path: LIST, method: 'GET' }).replyWithError(neterr('ECONNRESET'));
    pool.intercept({ path: LIST, method: 'GET' }).reply(504, '');
    pool.intercept({ path: LIST, method: 'GET' }).reply(200, { results: [] });
    const { client, clock } = clientFor(agent);
    await client.tenant('acme').listBundles();
    // random() = 0.5 → half of 200, 400, 800, 1600 ms.
    expect(clock.sleeps).toEqual([100, 200, 400, 800]);
  });

  it('gives up after maxRetries with the last status in words', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(503, { detail: 'down for maintenance' }).times(3);
    const { client, clock } = clientFor(agent, { maxRetries: 2 });
    const err = await failure(client.tenant('acme').listBundles());
    expect(err.message).toBe('the API failed on GET /api/v1/firmware-bundles for tenant acme (503, 3 tries): down for maintenance');
    expect(err.status).toBe(503);
    expect(err.retryable).toBe(true);
    expect(clock.sleeps).toHaveLength(2);
  });

  it('stops retrying when the total time budget would be exceeded', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(429, '', { headers: { 'retry-after': '50' } }).times(3);
    const { client, clock } = clientFor(agent, { retryBudgetMs: 120_000 });
    const err = await failure(client.tenant('acme').listBundles());
    expect(err.status).toBe(429);
    expect(clock.sleeps).toEqual([50_000, 50_000]);
  });

  it('caps a huge Retry-After at 60 seconds', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(429, '', { headers: { 'retry-after': '86400' } });
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(200, { results: [] });
    const { client, clock } = clientFor(agent);
    await client.tenant('acme').listBundles();
    expect(clock.sleeps).toEqual([60_000]);
  });

  it('does not retry a 500 (only 502, 503 and 504 are worth another try)', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(500, { detail: 'A server error occurred.' });
    const { client, clock } = clientFor(agent);
    const err = await failure(client.tenant('acme').listBundles());
    expect(err.message).toBe('the API failed on GET /api/v1/firmware-bundles for tenant acme (500): A server error occurred.');
    expect(err.retryable).toBe(false);
    expect(clock.sleeps).toEqual([]);
  });

  it('summarises an HTML error page instead of printing it', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(404, '<!DOCTYPE html><html><body>Not Found</body></html>');
    const { client } = clientFor(agent);
    expect((await failure(client.tenant('acme').listBundles())).message).toBe(
      'GET /api/v1/firmware-bundles was not found for tenant acme (404): the answer is an HTML page, not the API (is the base URL right?)',
    );
  });

  it('does not retry a 400 and shows the field messages', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/firmwares/1.0', method: 'PUT' }).reply(400, { uncompressed_size: ['A valid integer is required.'], dependencies: ['This field is required.'] });
    const { client, clock } = clientFor(agent);
    const err = await failure(client.tenant('acme').putFirmware('1.0', { is_deactivated: false, uncompressed_size: 1, dependencies: [] }));
    expect(err.message).toBe(
      'the API rejected PUT /api/v1/firmwares/1.0 for tenant acme (400): uncompressed_size: A valid integer is required.; dependencies: This field is required.',
    );
    expect(err.details.detail).toEqual({ uncompressed_size: ['A valid integer is required.'], dependencies: ['This field is required.'] });
    expect(err.retryable).toBe(false);
    expect(clock.sleeps).toEqual([]);
  });

  it('says in words that a key was refused (401) or is for another tenant (403)', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(401, { detail: 'Invalid API key.' });
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(403, { detail: 'Key not valid for this tenant.' });
    const { client } = clientFor(agent);
    expect((await failure(client.tenant('acme').listBundles())).message).toBe('the API key for tenant acme was refused (401): Invalid API key.');
    expect((await failure(client.tenant('acme').listBundles())).message).toBe('the API key is not valid for tenant acme (403): Key not valid for this tenant.');
  });

  it('halves the tenant concurrency on 429 and grows back slowly', async () => {
    agent = mockAgent();
    // A hand-made dispatcher so that the test sees how many requests are in flight at once.
    let inFlight = 0;
    const peaks: number[] = [];
    let answer429 = true;
    const fake = {
      async request(opts: { path: string }) {
        inFlight++;
        peaks.push(inFlight);
        await new Promise((r) => setTimeout(r, 2));
        inFlight--;
        const status = answer429 ? 429 : 200;
        answer429 = false;
        // Each answer is the action asked for: the client refuses any other.
        const text = status === 200 ? JSON.stringify({ ...ACTION, id: Number(/\/actions\/(\d+)/.exec(opts.path)![1]) }) : '';
        return { statusCode: status, headers: { 'retry-after': '0' }, body: Readable.from([Buffer.from(text)]) };
      },
    } as unknown as Dispatcher;
    const { client } = clientFor(agent, { concurrency: 4, dispatcher: fake });
    const t = client.tenant('acme');
    await t.getAction(1); // 429 then 200: the limit is now 2
    peaks.length = 0;
    await Promise.all(Array.from({ length: 8 }, (_, i) => t.getAction(i + 2)));
    // Two start at once; the third only once one of them has finished.
    expect(peaks.slice(0, 3)).toEqual([1, 2, 2]);
    // Enough quiet successes later, the full concurrency is back.
    peaks.length = 0;
    await Promise.all(Array.from({ length: 8 }, (_, i) => t.getAction(i + 2)));
    await Promise.all(Array.from({ length: 8 }, (_, i) => t.getAction(i + 2)));
    expect(Math.max(...peaks)).toBe(4);
  });
});

describe('append_phase', () => {
  const APPEND = '/api/v1/actions/42/append_phase';

  it('returns the action and is sent once', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: APPEND, method: 'POST' }).reply(200, { ...ACTION, phases: [...ACTION.phases, PHASE] });
    const { client } = clientFor(agent);
    expect((await client.tenant('acme').appendPhase(42, PHASE)).phases).toHaveLength(2);
  });

  it.each([
    ['a reset after sending', () => neterr('ECONNRESET'), 'unknown'],
    ['a socket closed without response', () => neterr('UND_ERR_SOCKET'), 'unknown'],
    ['a headers timeout', () => neterr('UND_ERR_HEADERS_TIMEOUT'), 'unknown'],
    ['a refused connection', () => neterr('ECONNREFUSED'), 'not-sent'],
    ['a connect timeout', () => neterr('UND_ERR_CONNECT_TIMEOUT'), 'not-sent'],
    ['a DNS failure', () => neterr('ENOTFOUND'), 'not-sent'],
  ])('is never retried: %s → outcome %s', async (_name, make, outcome) => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: APPEND, method: 'POST' }).replyWithError(make());
    const { client, events, clock } = clientFor(agent);
    const err = await failure(client.tenant('acme').appendPhase(42, PHASE));
    expect(err.details.outcome).toBe(outcome);
    expect(err.retryable).toBe(false);
    expect(events).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it.each([
    [400, 'refused'],
    [404, 'refused'],
    [429, 'refused'],
    [500, 'unknown'],
    [503, 'unknown'],
  ])('is never retried on %d → outcome %s', async (status, outcome) => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: APPEND, method: 'POST' }).reply(status, { detail: 'no' });
    const { client, events } = clientFor(agent);
    const err = await failure(client.tenant('acme').appendPhase(42, PHASE));
    expect(err.details.outcome).toBe(outcome);
    expect(err.status).toBe(status);
    expect(events).toHaveLength(1);
  });

  it('a malformed 2xx answer has an unknown outcome (the phase is probably there)', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: APPEND, method: 'POST' }).reply(200, '<html>');
    const { client } = clientFor(agent);
    const err = await failure(client.tenant('acme').appendPhase(42, PHASE));
    expect(err.details.outcome).toBe('unknown');
    expect(err.message).toBe('malformed response from POST /api/v1/actions/42/append_phase: the body is not JSON');
  });
});

describe('pagination', () => {
  it('follows relative and absolute next links until null, page by page', async () => {
    agent = mockAgent();
    const pool = agent.get(BASE);
    pool.intercept({ path: LIST, method: 'GET' }).reply(200, { count: 3, next: '/api/v1/firmware-bundles?page=2', results: [bundle('b1', [])] });
    pool.intercept({ path: `${LIST}?page=2`, method: 'GET' }).reply(200, { count: 3, next: `${BASE}${LIST}?page=3`, results: [bundle('b2', [])] });
    pool.intercept({ path: `${LIST}?page=3`, method: 'GET' }).reply(200, { count: 3, next: null, results: [bundle('b3', [])] });
    const { client } = clientFor(agent);
    const pages: string[][] = [];
    for await (const page of client.tenant('acme').bundlePages()) pages.push(page.map((b) => b.version));
    expect(pages).toEqual([['b1'], ['b2'], ['b3']]);
  });

  it('resolves a query-only next against the page it came from, under a prefix', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: `/p${LIST}`, method: 'GET' }).reply(200, { next: '?page=2', results: [bundle('b1', [])] });
    agent.get(BASE).intercept({ path: `/p${LIST}?page=2`, method: 'GET' }).reply(200, { next: null, results: [bundle('b2', [])] });
    const { client } = clientFor(agent, { baseUrl: `${BASE}/p` });
    expect((await client.tenant('acme').listBundles()).map((b) => b.version)).toEqual(['b1', 'b2']);
  });

  it('stops on a loop', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(200, { next: `${LIST}?page=2`, results: [] });
    agent.get(BASE).intercept({ path: `${LIST}?page=2`, method: 'GET' }).reply(200, { next: LIST, results: [] });
    const { client } = clientFor(agent);
    const err = await failure(client.tenant('acme').listBundles());
    expect(err.message).toBe('the bundle list loops: GET /api/v1/firmware-bundles was already read (the API\'s next links go round in a circle)');
  });

  it('refuses a next link to another origin without sending the key there', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(200, { next: `https://evil.test${LIST}?page=2`, results: [] });
    const { client, events } = clientFor(agent);
    const err = await failure(client.tenant('acme').listBundles());
    expect(err.message).toMatch(/^refusing to follow the next link of GET \/api\/v1\/firmware-bundles: it leads to another origin than the API.s https:\/\/dus\.test/);
    expect(err.message).not.toContain('evil');
    expect(events).toHaveLength(1);
  });

  it('refuses a next link that downgrades to http on the same host', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(200, { next: `http://dus.test${LIST}?page=2`, results: [] });
    const { client } = clientFor(agent);
    expect((await failure(client.tenant('acme').listBundles())).message).toMatch(/^refusing to follow the next link/);
  });
});

describe('malformed responses', () => {
  it('names the endpoint and the first bad field', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(200, {
      results: [bundle('b1', [firmware('1', 'a'), firmware('2', 'b'), { ...firmware('3', 'c'), version_number: 3 }])],
    });
    const { client } = clientFor(agent);
    const err = await failure(client.tenant('acme').listBundles());
    expect(err.message).toBe('malformed response from GET /api/v1/firmware-bundles: results/0/firmwares/2/version_number must be string');
    expect(err.retryable).toBe(false);
  });

  it('bad JSON', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/firmware-bundles/version/v1', method: 'GET' }).reply(200, '{"version": ');
    const { client } = clientFor(agent);
    expect((await failure(client.tenant('acme').getBundle('v1'))).message).toBe('malformed response from GET /api/v1/firmware-bundles/version/v1: the body is not JSON');
  });

  it('a missing required field', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/actions/42', method: 'GET' }).reply(200, { id: 42 });
    const { client } = clientFor(agent);
    expect((await failure(client.tenant('acme').getAction(42))).message).toBe('malformed response from GET /api/v1/actions/42: phases is missing');
  });

  it('a body that is not an object', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: LIST, method: 'GET' }).reply(200, '[]');
    const { client } = clientFor(agent);
    expect((await failure(client.tenant('acme').listBundles())).message).toBe('malformed response from GET /api/v1/firmware-bundles: the body must be object');
  });

  it('a PUT answered with non-JSON text', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/firmwares/1', method: 'PUT' }).reply(200, 'OK!');
    const { client } = clientFor(agent);
    const err = await failure(client.tenant('acme').putFirmware('1', { is_deactivated: false, uncompressed_size: 1, dependencies: [] }));
    expect(err.message).toBe('malformed response from PUT /api/v1/firmwares/1: the body is not JSON');
  });
});
