import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { Dispatcher, MockAgent } from 'undici';
import { fetchLive, indexFirmwares } from '../../src/api/fetch-live.js';
import { UserError } from '../../src/errors.js';
import type { DesiredAction, DesiredFirmware, DesiredState, FirmwareBundle } from '../../src/model/index.js';
import { ACTION, BASE, bundle, clientFor, firmware, mockAgent } from './helpers.js';

let agent: MockAgent | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

const SRC = { file: 'x.yaml', line: 1, column: 1 };
const fw = (tenant: string, version_number: string): DesiredFirmware => ({ kind: 'firmware', tenant, labels: {}, source: SRC, spec: { version_number } });
const act = (tenant: string, id: number): DesiredAction => ({ kind: 'action', tenant, labels: {}, source: SRC, id, phases: [] });
const desired = (firmwares: DesiredFirmware[], actions: DesiredAction[]): DesiredState => ({ firmwares, actions, files: [] });

async function* pagesOf(...pages: Array<Array<Record<string, unknown>>>): AsyncGenerator<FirmwareBundle[]> {
  for (const p of pages) yield p as unknown as FirmwareBundle[];
}

describe('indexFirmwares', () => {
  it('one record per firmware across bundles, bundles merged and sorted', async () => {
    const id = '11111111-1111-1111-1111-111111111111';
    const index = await indexFirmwares(pagesOf(
      [bundle('2024.06', [firmware('2.4.1', 'modem', { firmware_id: id })])],
      [bundle('2024.01', [firmware('2.4.1', 'modem', { firmware_id: id })]), bundle('2024.03', [firmware('2.4.1', 'modem')])],
    ));
    expect(index.get('2.4.1')).toEqual([
      { version_number: '2.4.1', component_name: 'modem', firmware_id: id, is_deactivated: false, uncompressed_size: 1000, dependencies: [], bundles: ['2024.01', '2024.03', '2024.06'] },
    ]);
  });

  it('one number for several components stays several records, sorted by component', async () => {
    const index = await indexFirmwares(pagesOf([bundle('b', [firmware('1.0', 'wifi'), firmware('1.0', 'modem')])]));
    expect(index.get('1.0')!.map((r) => r.component_name)).toEqual(['modem', 'wifi']);
  });

  it('absent fields are null, absent dependencies empty', async () => {
    const index = await indexFirmwares(pagesOf([bundle('b', [{ version_number: 'x', component_name: 'c' }])]));
    expect(index.get('x')).toEqual([{ version_number: 'x', component_name: 'c', firmware_id: null, is_deactivated: null, uncompressed_size: null, dependencies: [], bundles: ['b'] }]);
  });
});

describe('fetchLive', () => {
  it('reads bundles only for tenants with firmwares and only the declared actions', async () => {
    agent = mockAgent();
    const pool = agent.get(BASE);
    pool.intercept({ path: '/api/v1/firmware-bundles', method: 'GET', headers: { 'x-service-tenant': 'acme' } })
      .reply(200, { next: '/api/v1/firmware-bundles?page=2', results: [bundle('b1', [firmware('1.0', 'modem')])] });
    pool.intercept({ path: '/api/v1/firmware-bundles?page=2', method: 'GET', headers: { 'x-service-tenant': 'acme' } })
      .reply(200, { next: null, results: [bundle('b2', [firmware('2.0', 'modem')])] });
    pool.intercept({ path: '/api/v1/actions/42', method: 'GET', headers: { 'x-service-tenant': 'globex' } }).reply(200, ACTION);
    pool.intercept({ path: '/api/v1/actions/7', method: 'GET', headers: { 'x-service-tenant': 'globex' } }).reply(404, { detail: 'Not found.' });
    const { client, events } = clientFor(agent, { keys: new Map([['acme', 'key-acme-1'], ['globex', 'key-globex-1']]) });
    const live = await fetchLive(client, desired([fw('acme', '1.0')], [act('globex', 42), act('globex', 7), act('globex', 42)]));
    expect([...live.tenants.keys()]).toEqual(['acme', 'globex']);
    // Every page is read; only the declared version numbers are kept.
    expect([...live.tenants.get('acme')!.firmwares.keys()]).toEqual(['1.0']);
    expect(live.tenants.get('acme')!.actions.size).toBe(0);
    expect(live.tenants.get('globex')!.firmwares.size).toBe(0);
    expect([...live.tenants.get('globex')!.actions.entries()]).toEqual([[7, null], [42, ACTION]]);
    expect(events).toHaveLength(4);
    agent.assertNoPendingInterceptors();
  });

  it('a tenant without a key fails before any request', async () => {
    agent = mockAgent();
    const { client, events } = clientFor(agent);
    await expect(fetchLive(client, desired([fw('acme', '1')], [act('initech', 1)]))).rejects.toBeInstanceOf(UserError);
    expect(events).toHaveLength(0);
  });

  it('reads many actions with bounded concurrency', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: /^\/api\/v1\/actions\/\d+$/, method: 'GET' })
      .reply((opts) => ({ statusCode: 200, data: { ...ACTION, id: Number(opts.path.split('/').pop()) } })).persist();
    const { client } = clientFor(agent);
    const ids = Array.from({ length: 30 }, (_, i) => 100 - i);
    const live = await fetchLive(client, desired([], ids.map((id) => act('acme', id))), { concurrency: 3 });
    const actions = live.tenants.get('acme')!.actions;
    expect([...actions.keys()]).toEqual([...ids].sort((a, b) => a - b));
    expect(actions.get(71)!.id).toBe(71);
  });

  it('never has more action reads in flight than asked', async () => {
    agent = mockAgent();
    let inFlight = 0;
    let peak = 0;
    // A hand-made dispatcher: the test sees every request start and end.
    const fake = {
      async request(opts: { path: string }) {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setTimeout(r, 1));
        inFlight--;
        const text = JSON.stringify({ ...ACTION, id: Number(opts.path.split('/').pop()) });
        return { statusCode: 200, headers: {}, body: Readable.from([Buffer.from(text)]) };
      },
    } as unknown as Dispatcher;
    const { client } = clientFor(agent, { dispatcher: fake });
    await fetchLive(client, desired([], Array.from({ length: 20 }, (_, i) => act('acme', i + 1))), { concurrency: 3 });
    expect(peak).toBe(3);
  });
});
