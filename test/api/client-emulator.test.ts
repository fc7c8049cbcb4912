// The client against the emulator over real HTTP on 127.0.0.1, port 0.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient, type CreateApiClientOptions, type RequestEvent } from '../../src/api/client.js';
import { fetchLive } from '../../src/api/fetch-live.js';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { ApiError } from '../../src/errors.js';
import type { DesiredAction, DesiredFirmware, DesiredState, LiveState } from '../../src/model/index.js';
import { clearSecretsForTests, registerSecret } from '../../src/redact.js';

const ACME_KEY = 'dev-key-acme-5f1c9a';
const GLOBEX_KEY = 'dev-key-globex-77aa01';
const DIGITS_KEY = '8675309123';
const ODD = ['1.0/../x', 'a b', 'ü', '#1'];

function seed(): Seed {
  const bundles = Array.from({ length: 45 }, (_, i) => ({
    version: `2024.${String(i).padStart(2, '0')}`,
    firmwares: [
      { version_number: `1.${i}`, component_name: 'modem', uncompressed_size: 1000 + i, is_deactivated: false, dependencies: [] },
      // The same wifi firmware is shipped in every bundle: one live record with 45 bundles.
      { version_number: '9.9', component_name: 'wifi', firmware_id: '99999999-9999-4999-8999-999999999999', uncompressed_size: 5, is_deactivated: false, dependencies: [] },
    ],
  }));
  bundles.push({
    version: 'odd',
    firmwares: ODD.map((v) => ({ version_number: v, component_name: 'odd', uncompressed_size: 1, is_deactivated: false, dependencies: [] })),
  });
  for (const v of ODD) bundles.push({ version: v, firmwares: [] });
  return {
    tenants: {
      acme: {
        api_key: ACME_KEY,
        bundles,
        actions: Array.from({ length: 12 }, (_, i) => ({ id: 100 + i, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] })),
      },
      globex: { api_key: GLOBEX_KEY, bundles: [], actions: [{ id: 7, phases: [] }] },
    },
  };
}

const SRC = { file: 'x.yaml', line: 1, column: 1 };
const DESIRED: DesiredState = {
  // Only the declared version numbers are kept from the bundle list: these are the ones looked at.
  firmwares: ['1.3', '9.9', ...ODD].map((v) => ({ kind: 'firmware', tenant: 'acme', labels: {}, source: SRC, spec: { version_number: v } }) satisfies DesiredFirmware),
  actions: [
    ...[100, 103, 111, 999].map((id): DesiredAction => ({ kind: 'action', tenant: 'acme', labels: {}, source: SRC, id, phases: [] })),
    { kind: 'action', tenant: 'globex', labels: {}, source: SRC, id: 7, phases: [] },
  ],
  files: [],
};

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function emulator(opts: Partial<Parameters<typeof startEmulator>[0]> = {}): Promise<RunningEmulator> {
  const emu = await startEmulator({ seed: seed(), ...opts });
  open.push(emu);
  return emu;
}

function client(url: string, opts: Partial<CreateApiClientOptions> = {}): ApiClient {
  const c = createApiClient({ baseUrl: url, keys: new Map([['acme', ACME_KEY], ['globex', GLOBEX_KEY]]), ...opts });
  open.push(c);
  return c;
}

/** Real time, but a Retry-After of 1 s is slept as 50 ms so the file stays fast. */
function hurriedClock(sleeps: number[]): NonNullable<CreateApiClientOptions['clock']> {
  return {
    now: () => Date.now(),
    sleep: async (ms, signal) => {
      sleeps.push(ms);
      await sleep(Math.min(ms, 50), undefined, signal ? { signal } : {});
    },
  };
}

async function quietLive(): Promise<LiveState> {
  const emu = await emulator();
  return fetchLive(client(emu.url), DESIRED);
}

describe('client against the emulator', () => {
  it('pages through many pages with absolute next links to the same live state as one page', async () => {
    const expected = await quietLive();
    const emu = await emulator({ pageSize: 2, absoluteNext: true });
    const live = await fetchLive(client(emu.url), DESIRED);
    expect(live).toEqual(expected);
    expect(emu.stats.byRoute['GET /firmware-bundles']).toBe(25);
    const acme = live.tenants.get('acme')!;
    expect(acme.firmwares.get('9.9')).toHaveLength(1);
    // It is in 45 bundles; a record keeps the first 16 in sorted order (BUNDLES_KEPT_PER_RECORD), the same on any page size.
    expect(acme.firmwares.get('9.9')![0]!.bundles).toHaveLength(16);
    expect(acme.actions.get(999)).toBeNull();
    expect(acme.actions.get(103)!.phases[0]!.name).toBe('canary');
    expect(live.tenants.get('globex')!.firmwares.size).toBe(0);
  });

  it('503s and 429s now and then still give the same live state', async () => {
    const expected = await quietLive();
    // The emulator mixes 500 into its 5xx; SPEC retries only 502-504, so seed 35 is one whose
    // first 25 failures are all 502/503/504 (the kind sequence does not depend on request order).
    const emu = await emulator({ pageSize: 3, faults: { failRate: 0.25, rateLimit: 40, seed: 35 } });
    const events: RequestEvent[] = [];
    const sleeps: number[] = [];
    const c = client(emu.url, { onRequest: (e) => events.push(e), clock: hurriedClock(sleeps), maxRetries: 10 });
    const live = await fetchLive(c, DESIRED);
    expect(live).toEqual(expected);
    const statuses = new Set(events.map((e) => e.status));
    expect([...statuses].some((s) => typeof s === 'number' && s >= 500)).toBe(true);
    expect(sleeps.length).toBeGreaterThan(0);
  });

  it('honours the emulator\'s Retry-After on 429', async () => {
    const emu = await emulator({ faults: { rateLimit: 10 } });
    const events: RequestEvent[] = [];
    const sleeps: number[] = [];
    const t = client(emu.url, { onRequest: (e) => events.push(e), clock: hurriedClock(sleeps), maxRetries: 50 }).tenant('acme');
    const actions = await Promise.all(Array.from({ length: 14 }, (_, i) => t.getAction(100 + (i % 12))));
    expect(actions.every((a) => a !== null)).toBe(true);
    expect(events.some((e) => e.status === 429)).toBe(true);
    expect(sleeps).toContain(1000);
  });

  it('a wrong key is one sentence that says it was refused, without the key', async () => {
    const emu = await emulator();
    const wrong = 'wrong-key-0123456789';
    const c = client(emu.url, { keys: new Map([['acme', wrong], ['globex', GLOBEX_KEY]]) });
    const err = await fetchLive(c, DESIRED).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).message).toBe('the API key for tenant acme was refused (401): Invalid API key.');
    expect(JSON.stringify(err) + String((err as Error).stack)).not.toContain(wrong);
  });

  it('a key of another tenant is a 403 in words', async () => {
    const emu = await emulator();
    const c = client(emu.url, { keys: new Map([['acme', GLOBEX_KEY]]) });
    const err = (await c.tenant('acme').getAction(100).catch((e: unknown) => e)) as ApiError;
    expect(err.status).toBe(403);
    expect(err.message).toBe('the API key is not valid for tenant acme (403): You do not have permission to perform this action.');
  });

  it.each(ODD)('reads and writes the odd version number %s', async (version) => {
    const emu = await emulator();
    const t = client(emu.url).tenant('acme');
    expect((await t.getBundle(version)).version).toBe(version);
    await t.putFirmware(version, { is_deactivated: true, uncompressed_size: 77, dependencies: [] });
    const live = await fetchLive(client(emu.url), { firmwares: DESIRED.firmwares, actions: [], files: [] });
    expect(live.tenants.get('acme')!.firmwares.get(version)).toMatchObject([{ is_deactivated: true, uncompressed_size: 77, bundles: ['odd'] }]);
  });

  it('append_phase dropped after commit has an unknown outcome, and the phase is there', async () => {
    const emu = await emulator({ faults: { dropEvery: 1 } });
    const t = client(emu.url).tenant('acme');
    const err = (await t.appendPhase(100, { name: 'wave-1', trigger_on: {}, info: {} }).catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.details.outcome).toBe('unknown');
    expect(emu.stats.byRoute['POST /actions/{id}/append_phase']).toBe(1);
    const action = await t.getAction(100);
    expect(action!.phases.map((p) => p.name)).toEqual(['canary', 'wave-1']);
  });

  it('append_phase to a closed port was not sent', async () => {
    const emu = await startEmulator({ seed: seed() });
    const url = emu.url;
    await emu.close();
    const t = client(url).tenant('acme');
    const err = (await t.appendPhase(100, { name: 'x', trigger_on: {}, info: {} }).catch((e: unknown) => e)) as ApiError;
    expect(err.details.outcome).toBe('not-sent');
    expect(err.message).toMatch(/^POST \/api\/v1\/actions\/100\/append_phase for tenant acme was not sent: the connection was refused/);
  });

  it('append_phase 404 and 400 were not sent', async () => {
    const emu = await emulator();
    const t = client(emu.url).tenant('acme');
    const missing = (await t.appendPhase(5, { name: 'x', trigger_on: {}, info: {} }).catch((e: unknown) => e)) as ApiError;
    expect([missing.status, missing.details.outcome]).toEqual([404, 'refused']);
  });

  it('a server that answers garbage is a malformed-response error naming the endpoint', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ results: [{ version: 'b', firmwares: [{ version_number: 1, component_name: 'c' }] }], next: null }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    open.push({ close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }) });
    const c = client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const err = (await c.tenant('acme').listBundles().catch((e: unknown) => e)) as ApiError;
    expect(err.message).toBe('malformed response from GET /api/v1/firmware-bundles: results/0/firmwares/0/version_number must be string');
  });

  it('a server that never answers hits the headers timeout and is retried, then given up', async () => {
    const server = createServer(() => { /* never answers */ });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    open.push({ close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }) });
    const sleeps: number[] = [];
    const c = client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { timeoutMs: 200, maxRetries: 1, clock: hurriedClock(sleeps) });
    const err = (await c.tenant('acme').getAction(1).catch((e: unknown) => e)) as ApiError;
    expect(err.message).toMatch(/the server did not answer in time \(UND_ERR_HEADERS_TIMEOUT, 2 tries\)$/);
    expect(err.retryable).toBe(true);
  });
});

describe('a write that would send a key', () => {
  it('is not sent: a phase name, an info key, a number or a version number that holds a registered key (whole, cut short or encoded) is refused before any request (a PUT body carries live fields back unchanged, and the loader checks its desired ones)', async () => {
    const emu = await emulator();
    const sent: RequestEvent[] = [];
    const c = client(emu.url, { onRequest: (e) => sent.push(e) });
    // Keys of digits, and with a run of 8 digits, as a tenant's key file may hold.
    registerSecret(DIGITS_KEY);
    registerSecret('globex-20240611-prod');
    const acme = c.tenant('acme');
    const refusals = [
      () => acme.appendPhase(100, { name: `wave-${GLOBEX_KEY}`, trigger_on: {}, info: {} }),
      () => acme.appendPhase(100, { name: 'wave', trigger_on: {}, info: { [GLOBEX_KEY]: 1 } }),
      // Cut short, or percent-encoded: what every output shows as [REDACTED] is not sent either.
      () => acme.appendPhase(100, { name: GLOBEX_KEY.slice(2), trigger_on: {}, info: {} }),
      () => acme.appendPhase(100, { name: encodeURIComponent(GLOBEX_KEY).replace(/-/g, '%2D'), trigger_on: {}, info: {} }),
      () => acme.putFirmware(`1.3-${ACME_KEY}`, { uncompressed_size: 1, is_deactivated: false, dependencies: [] }),
      // A number is sent as its digits: 8 digits of a key written as a YAML number are the key's.
      () => acme.appendPhase(100, { name: 'wave', trigger_on: { after_minutes: Number(DIGITS_KEY) }, info: {} }),
      () => acme.appendPhase(100, { name: 'wave', trigger_on: {}, info: { build: 20240611 } }),
    ];
    for (const attempt of refusals) {
      const err = await attempt().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).details).toMatchObject({ outcome: 'not-sent', retryable: false });
      expect((err as ApiError).message).toMatch(/was not sent: what it would write holds an API key/);
      expect((err as ApiError).message).not.toContain(ACME_KEY);
      expect((err as ApiError).message).not.toContain(GLOBEX_KEY);
    }
    expect(sent).toEqual([]);
    expect((await acme.getAction(100))!.phases.map((p) => p.name)).toEqual(['canary']);
    clearSecretsForTests();
  });
});
