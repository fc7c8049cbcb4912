import { describe, expect, it } from 'vitest';
import { ACME, GLOBEX, call, emulator } from './helpers.js';

interface Page { count: number; next: string | null; previous: string | null; results: { version: string }[] }

describe('authentication', () => {
  it('answers 401 without a key or with an unknown key, 403 for another tenant, 200 for the right pair', async () => {
    const e = await emulator();
    const path = '/api/v1/firmware-bundles';
    expect(await call(e.url, path, { auth: { tenant: 'acme' } })).toMatchObject({ status: 401, body: { detail: 'Invalid API key.' } });
    expect(await call(e.url, path, { auth: { tenant: 'acme', key: 'nope-nope' } })).toMatchObject({ status: 401, body: { detail: 'Invalid API key.' } });
    expect(await call(e.url, path, { auth: { tenant: 'acme', key: GLOBEX.key } })).toMatchObject({ status: 403 });
    expect(await call(e.url, path, { auth: { tenant: 'initech', key: ACME.key } })).toMatchObject({ status: 403 });
    expect(await call(e.url, path, { auth: { key: ACME.key } })).toMatchObject({ status: 403 });
    expect((await call(e.url, path, { auth: ACME })).status).toBe(200);
    expect((await call(e.url, path, { auth: GLOBEX })).body).toMatchObject({ count: 1, results: [{ version: '1.0' }] });
  });

  it('never logs a key', async () => {
    const lines: string[] = [];
    const e = await emulator({ log: (l) => lines.push(l) });
    await call(e.url, '/api/v1/firmware-bundles');
    await call(e.url, '/api/v1/firmware-bundles', { auth: { tenant: 'acme', key: GLOBEX.key } });
    expect(lines).toHaveLength(2);
    expect(lines.join('\n')).not.toContain(ACME.key);
    expect(lines.join('\n')).not.toContain(GLOBEX.key);
    expect(lines[0]).toMatch(/^GET \/api\/v1\/firmware-bundles 200 \d+ms tenant=acme$/);
  });

  it('never logs a key sent in the path or the query, as written, percent-encoded or in base64', async () => {
    const lines: string[] = [];
    const e = await emulator({ log: (l) => lines.push(l) });
    await call(e.url, `/api/v1/firmware-bundles/version/${GLOBEX.key}`, { auth: ACME });
    await call(e.url, `/api/v1/firmware-bundles?token=${encodeURIComponent(ACME.key)}&b=${Buffer.from(GLOBEX.key).toString('base64')}`, { auth: ACME });
    expect(lines).toHaveLength(2);
    expect(lines.join('\n')).not.toContain(GLOBEX.key);
    expect(lines.join('\n')).not.toContain(ACME.key);
    expect(lines.join('\n')).not.toContain(Buffer.from(GLOBEX.key).toString('base64').slice(0, 12));
    expect(lines.join('\n')).toContain('[REDACTED]');
  });
});

describe('the bundle list', () => {
  it('is one DRF page without a page size, in seed order', async () => {
    const e = await emulator();
    const res = await call(e.url, '/api/v1/firmware-bundles');
    const page = res.body as Page;
    expect(page).toMatchObject({ count: 7, next: null, previous: null });
    expect(page.results.map((b) => b.version)).toEqual(['2024.06', '2024.07', '1.0/../x', 'a b', 'ü', '#1', '2024.08']);
  });

  async function walk(base: string, absolute: boolean): Promise<string[]> {
    const seen: string[] = [];
    let next: string | null = '/api/v1/firmware-bundles';
    let pages = 0;
    while (next !== null) {
      const url: string = next.startsWith('http') ? next : `${base}${next}`;
      if (absolute && pages > 0) expect(next.startsWith(`${base}/api/v1/`)).toBe(true);
      if (!absolute) expect(next.startsWith('/api/v1/')).toBe(true);
      const res = await call(url, '');
      expect(res.status).toBe(200);
      const page = res.body as Page;
      expect(page.count).toBe(7);
      seen.push(...page.results.map((b) => b.version));
      next = page.next;
      pages += 1;
    }
    expect(pages).toBe(3);
    return seen;
  }

  it('pages with relative next links and walks to the end', async () => {
    const e = await emulator({ pageSize: 3 });
    expect(await walk(e.url, false)).toHaveLength(7);
    const second = (await call(e.url, '/api/v1/firmware-bundles?page=2')).body as Page;
    expect(second).toMatchObject({ next: '/api/v1/firmware-bundles?page=3', previous: '/api/v1/firmware-bundles' });
  });

  it('pages with absolute next links', async () => {
    const e = await emulator({ pageSize: 3, absoluteNext: true });
    const versions = await walk(e.url, true);
    expect(new Set(versions).size).toBe(7);
    const last = (await call(e.url, '/api/v1/firmware-bundles?page=3')).body as Page;
    expect(last).toMatchObject({ next: null, previous: `${e.url}/api/v1/firmware-bundles?page=2` });
    expect(last.results).toHaveLength(1);
  });

  it('answers 404 "Invalid page." past the end or for a page that is not a number', async () => {
    const e = await emulator({ pageSize: 3 });
    expect(await call(e.url, '/api/v1/firmware-bundles?page=4')).toMatchObject({ status: 404, body: { detail: 'Invalid page.' } });
    expect(await call(e.url, '/api/v1/firmware-bundles?page=x')).toMatchObject({ status: 404, body: { detail: 'Invalid page.' } });
  });

  it('lists a shared firmware as the same record in both bundles', async () => {
    const e = await emulator();
    const page = (await call(e.url, '/api/v1/firmware-bundles')).body as { results: { firmwares: { firmware_id: string; component_name: string; uncompressed_size: number }[] }[] };
    const modem = page.results.slice(0, 2).map((b) => b.firmwares.find((f) => f.component_name === 'modem')!);
    expect(modem[0]).toEqual(modem[1]);
    expect(modem[0]!.uncompressed_size).toBe(1000);
  });
});

describe('a bundle by version', () => {
  it('finds odd versions when percent-encoded and never escapes the route', async () => {
    const e = await emulator();
    for (const v of ['1.0/../x', 'a b', 'ü', '#1', '2024.06']) {
      const res = await call(e.url, `/api/v1/firmware-bundles/version/${encodeURIComponent(v)}`);
      expect(res.status, v).toBe(200);
      expect((res.body as { version: string }).version).toBe(v);
    }
    // Unencoded, "/" and "#" are structure, not part of the version: never a match elsewhere.
    expect((await call(e.url, '/api/v1/firmware-bundles/version/1.0/../x')).status).toBe(404);
    expect((await call(e.url, '/api/v1/firmware-bundles/version/..%2F..%2Factions%2F42')).status).toBe(404);
    expect(await call(e.url, '/api/v1/firmware-bundles/version/nope')).toMatchObject({ status: 404, body: { detail: 'Not found.' } });
    expect((await call(e.url, '/api/v1/firmware-bundles/version/%E0%A4%A')).status).toBe(404);
  });
});

describe('routing and request errors', () => {
  it('answers 404 for an unknown route and 405 for a wrong method', async () => {
    const e = await emulator();
    expect(await call(e.url, '/api/v1/nothing')).toMatchObject({ status: 404, body: { detail: 'Not found.' } });
    expect(await call(e.url, '/api/v2/firmware-bundles')).toMatchObject({ status: 404 });
    const res = await call(e.url, '/api/v1/firmware-bundles', { method: 'DELETE' });
    expect(res).toMatchObject({ status: 405, body: { detail: 'Method "DELETE" not allowed.' } });
    expect(res.headers.allow).toBe('GET');
    expect(await call(e.url, '/api/v1/actions/42', { method: 'POST', body: {} })).toMatchObject({ status: 405, body: { detail: 'Method "POST" not allowed.' } });
    expect(await call(e.url, '/api/v1/actions/42', { method: 'HEAD' })).toMatchObject({ status: 200, body: undefined });
    expect((await call(e.url, '/api/v1/firmwares/2.4.1', { method: 'HEAD' })).status).toBe(405);
  });

  it('answers 400 for malformed JSON, 415 for another content type, 413 over the body limit', async () => {
    const e = await emulator({ bodyLimit: 1024 });
    const put = '/api/v1/firmwares/3.0.0';
    const bad = await call(e.url, put, { method: 'PUT', rawBody: '{"is_deactivated": tru' });
    expect(bad.status).toBe(400);
    expect((bad.body as { detail: string }).detail).toMatch(/^JSON parse error - /);
    expect(await call(e.url, put, { method: 'PUT', rawBody: 'is_deactivated=true', contentType: 'text/plain' }))
      .toMatchObject({ status: 415, body: { detail: 'Unsupported media type "text/plain" in request.' } });
    const big = await call(e.url, put, { method: 'PUT', body: { dependencies: [{ component_name: 'x'.repeat(2000), min_version: '1' }] } });
    expect(big.status).toBe(413);
    expect(typeof (big.body as { detail: string }).detail).toBe('string');
    expect(e.stats.writes).toBe(0);
    expect(e.store.firmwaresByVersion('acme', '3.0.0')[0]!.dependencies).toHaveLength(1);
  });

  it('refuses a port in use with one sentence', async () => {
    const e = await emulator();
    await expect(emulator({ port: e.port })).rejects.toThrow(`cannot listen on 127.0.0.1:${e.port}: the address is in use; pick another --port`);
  });

  it('counts requests by route', async () => {
    const e = await emulator();
    await call(e.url, '/api/v1/firmware-bundles');
    await call(e.url, '/api/v1/actions/42');
    await call(e.url, '/api/v1/actions/42');
    await call(e.url, '/nope');
    expect(e.stats.requests).toBe(4);
    expect(e.stats.byRoute).toEqual({ 'GET /firmware-bundles': 1, 'GET /actions/{id}': 2, unmatched: 1 });
  });
});

describe('PUT /firmwares/{version-number}', () => {
  it('changes the one record, keeps the fields it omits, and answers the Firmware', async () => {
    const e = await emulator();
    const res = await call(e.url, '/api/v1/firmwares/2.4.1', { method: 'PUT', body: { is_deactivated: true } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ version_number: '2.4.1', component_name: 'modem', is_deactivated: true, uncompressed_size: 1000, dependencies: [] });
    const res2 = await call(e.url, '/api/v1/firmwares/2.4.1', { method: 'PUT', body: { uncompressed_size: 2048, dependencies: [{ component_name: 'app', min_version: '1' }] } });
    expect(res2.body).toMatchObject({ is_deactivated: true, uncompressed_size: 2048, dependencies: [{ component_name: 'app', min_version: '1' }] });
    // One record, listed in two bundles: both show the change.
    const b6 = (await call(e.url, '/api/v1/firmware-bundles/version/2024.06')).body as { firmwares: { component_name: string; is_deactivated: boolean }[] };
    const b7 = (await call(e.url, '/api/v1/firmware-bundles/version/2024.07')).body as typeof b6;
    expect(b6.firmwares.find((f) => f.component_name === 'modem')!.is_deactivated).toBe(true);
    expect(b7.firmwares.find((f) => f.component_name === 'modem')!.is_deactivated).toBe(true);
    expect(e.stats.writes).toBe(2);
  });

  it('answers 400 with a field map for wrong types, and changes nothing', async () => {
    const e = await emulator();
    const res = await call(e.url, '/api/v1/firmwares/2.4.1', { method: 'PUT', body: { uncompressed_size: 'big', is_deactivated: 'yes', dependencies: [{ component_name: 'a' }, 'x'] } });
    expect(res).toMatchObject({
      status: 400,
      body: {
        uncompressed_size: ['A valid integer is required.'],
        is_deactivated: ['Must be a valid boolean.'],
        dependencies: [{ min_version: ['This field is required.'] }, { non_field_errors: ['Invalid data. Expected a dictionary, but got str.'] }],
      },
    });
    expect((await call(e.url, '/api/v1/firmwares/2.4.1', { method: 'PUT', body: { dependencies: {} } })).body)
      .toEqual({ dependencies: ['Expected a list of items but got type "dict".'] });
    expect((await call(e.url, '/api/v1/firmwares/2.4.1', { method: 'PUT', body: { uncompressed_size: -1 } })).body)
      .toEqual({ uncompressed_size: ['Ensure this value is greater than or equal to 0.'] });
    expect(e.store.firmwaresByVersion('acme', '2.4.1')[0]).toMatchObject({ uncompressed_size: 1000, is_deactivated: false });
  });

  it('answers 400 for a version number of several components and 404 for an unknown one', async () => {
    const e = await emulator();
    const res = await call(e.url, '/api/v1/firmwares/9.9', { method: 'PUT', body: { is_deactivated: true } });
    expect(res.status).toBe(400);
    expect((res.body as { detail: string }).detail).toContain('gps, radio');
    expect(await call(e.url, '/api/v1/firmwares/7.7.7', { method: 'PUT', body: { is_deactivated: true } })).toMatchObject({ status: 404, body: { detail: 'Not found.' } });
    expect(e.store.firmwaresByVersion('acme', '9.9').map((f) => f.is_deactivated)).toEqual([false, false]);
  });

  it('keeps tenants apart', async () => {
    const e = await emulator();
    expect((await call(e.url, '/api/v1/firmwares/1.0.0', { method: 'PUT', body: { is_deactivated: true } })).status).toBe(404);
    expect((await call(e.url, '/api/v1/firmwares/1.0.0', { method: 'PUT', auth: GLOBEX, body: { is_deactivated: true } })).status).toBe(200);
  });
});

describe('actions', () => {
  it('reads an action, 404 for an unknown id', async () => {
    const e = await emulator();
    expect(await call(e.url, '/api/v1/actions/43')).toMatchObject({
      status: 200,
      body: { id: 43, tenant_id: 'acme', status: 'pending', release_notes: '', phases_triggered: [true, false], next_phase_index: 1 },
    });
    expect(await call(e.url, '/api/v1/actions/44')).toMatchObject({ status: 404, body: { detail: 'Not found.' } });
    expect((await call(e.url, '/api/v1/actions/abc')).status).toBe(404);
    expect((await call(e.url, '/api/v1/actions/42', { auth: GLOBEX })).status).toBe(404);
  });

  it('appends a phase with 201 and keeps phases_triggered and next_phase_index consistent', async () => {
    const e = await emulator();
    const res = await call(e.url, '/api/v1/actions/43/append_phase', { method: 'POST', body: { name: 'three', trigger_on: { after: 'two' }, info: { share: 50 } } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: 43, phases_triggered: [true, false, false], next_phase_index: 1 });
    expect((res.body as { phases: unknown[] }).phases[2]).toEqual({ name: 'three', trigger_on: { after: 'two' }, info: { share: 50 } });
    e.store.triggerPhase('acme', 43, 1);
    e.store.triggerPhase('acme', 43, 2);
    expect(e.store.getAction('acme', 43)!.next_phase_index).toBe(3);
    const again = await call(e.url, '/api/v1/actions/43/append_phase', { method: 'POST', body: { name: 'four' } });
    expect(again.body).toMatchObject({ phases_triggered: [true, true, true, false], next_phase_index: 3 });
    expect((again.body as { phases: unknown[] }).phases[3]).toEqual({ name: 'four', trigger_on: {}, info: {} });
    expect((await call(e.url, '/api/v1/actions/43')).body).toEqual(again.body);
  });

  it('answers 400 for a missing name or non-object fields, 404 for an unknown action', async () => {
    const e = await emulator();
    const path = '/api/v1/actions/42/append_phase';
    expect((await call(e.url, path, { method: 'POST', body: { info: {} } })).body).toEqual({ name: ['This field is required.'] });
    expect((await call(e.url, path, { method: 'POST', body: { name: 'x', trigger_on: [], info: 'a' } })).body).toEqual({
      trigger_on: ['Expected a dictionary of items but got type "list".'],
      info: ['Expected a dictionary of items but got type "str".'],
    });
    expect((await call(e.url, path, { method: 'POST', body: [1] })).body).toEqual({ non_field_errors: ['Invalid data. Expected a dictionary, but got list.'] });
    expect((await call(e.url, '/api/v1/actions/99/append_phase', { method: 'POST', body: { name: 'x' } })).status).toBe(404);
    expect(e.store.getAction('acme', 42)!.phases).toHaveLength(1);
  });

  it('lets tests plant a conflicting phase behind the tool', async () => {
    const e = await emulator();
    e.store.setPhase('acme', 42, 0, { name: 'canary', trigger_on: { percent: 5 } });
    expect(((await call(e.url, '/api/v1/actions/42')).body as { phases: unknown[] }).phases[0]).toEqual({ name: 'canary', trigger_on: { percent: 5 }, info: {} });
    expect(() => e.store.setPhase('acme', 42, 3, { name: 'x' })).toThrow(/no phase 3/);
  });
});
