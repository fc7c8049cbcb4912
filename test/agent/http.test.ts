import { afterEach, describe, expect, it } from 'vitest';
import { parseListen, readinessOf, startHttp, type AgentHttp, type ReadinessInput } from '../../src/agent/http.js';
import { AgentMetrics } from '../../src/agent/metrics.js';
import { result } from './helpers.js';

const servers: AgentHttp[] = [];
afterEach(async () => { await Promise.all(servers.splice(0).map((s) => s.close())); });

const INTERVAL = 1000;

async function agent() {
  const metrics = new AgentMetrics();
  const state: { lastSuccessAt?: number; lastResult?: { result: string; message: string }; now: number } = { now: Date.now() };
  const http = await startHttp({
    listen: '127.0.0.1:0',
    metrics,
    readiness: () => readinessOf(state as ReadinessInput, INTERVAL, state.now),
  });
  servers.push(http);
  return { metrics, state, http };
}

describe('parseListen', () => {
  it.each([
    ['0.0.0.0:9090', { host: '0.0.0.0', port: 9090 }],
    [':9090', { host: undefined, port: 9090 }],
    ['127.0.0.1:0', { host: '127.0.0.1', port: 0 }],
    ['[::1]:9090', { host: '::1', port: 9090 }],
    ['[::]:80', { host: '::', port: 80 }],
    ['localhost:8080', { host: 'localhost', port: 8080 }],
  ])('%s', (text, want) => {
    expect(parseListen(text)).toEqual(want);
  });

  it.each(['9090', 'host', '1.2.3.4:70000', '::1:9090', '[::1]', 'a:b'])('refuses %s with one sentence', (text) => {
    expect(() => parseListen(text)).toThrow(/--listen takes HOST:PORT/);
  });
});

describe('the probes', () => {
  it('/healthz answers 200 ok while the process runs', async () => {
    const { http } = await agent();
    expect(http.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await fetch(`${http.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok\n');
  });

  it('/readyz is 503 with a JSON reason before the first success, then 200, then 503 when stale', async () => {
    const { http, state } = await agent();
    state.lastResult = { result: 'api-error', message: 'GET /api/v1/firmware-bundles: 503' };
    let res = await fetch(`${http.url}/readyz`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as { ready: boolean; reason: string };
    expect(body.ready).toBe(false);
    expect(body.reason).toContain('no reconcile pass has succeeded yet');
    expect(body.reason).toContain('api-error');

    state.lastSuccessAt = state.now;
    state.lastResult = { result: 'success', message: 'in sync' };
    res = await fetch(`${http.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok\n');

    state.now += 3 * INTERVAL;
    expect((await fetch(`${http.url}/readyz`)).status).toBe(200);
    state.now += 1;
    res = await fetch(`${http.url}/readyz`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { reason: string }).reason).toMatch(/more than three intervals/);
  });

  it('answers 404 elsewhere and 405 to writes', async () => {
    const { http } = await agent();
    expect((await fetch(`${http.url}/`)).status).toBe(404);
    expect((await fetch(`${http.url}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('says plainly when the port is taken', async () => {
    const { http } = await agent();
    const port = new URL(http.url).port;
    await expect(startHttp({ listen: `127.0.0.1:${port}`, metrics: new AgentMetrics({ defaultMetrics: false }), readiness: () => ({ ready: true }) }))
      .rejects.toThrow(`cannot listen on 127.0.0.1:${port}: the address is in use`);
  });
});

describe('/metrics', () => {
  it('exposes every dus_sync_ metric and the process and Node.js metrics in the text format', async () => {
    const { http, metrics } = await agent();
    const now = 1_700_000_000_000;
    metrics.recordPass(result('success', {
      drift: new Map([['globex', 1], ['acme', 2]]),
      conflicts: new Map([['acme', 1]]),
      applied: [{ tenant: 'acme', kind: 'firmware' }, { tenant: 'acme', kind: 'firmware' }, { tenant: 'acme', kind: 'phase' }],
    }), 1500, now);
    metrics.onApiRequest({ method: 'get', status: 200 });
    metrics.onApiRequest({ method: 'PUT', status: 503 });
    metrics.onApiRequest({ method: 'POST' });
    const res = await fetch(`${http.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const lines = text.split('\n');
    const has = (prefix: string) => expect(lines.some((l) => l.startsWith(prefix)), prefix).toBe(true);
    has('dus_sync_reconcile_total{result="success"} 1');
    has('dus_sync_reconcile_total{result="api-error"} 0');
    has('dus_sync_reconcile_duration_seconds_bucket{le="2.5"} 1');
    has('dus_sync_reconcile_duration_seconds_sum 1.5');
    has('dus_sync_changes_applied_total{tenant="acme",kind="firmware"} 2');
    has('dus_sync_changes_applied_total{tenant="acme",kind="phase"} 1');
    has('dus_sync_drift_objects{tenant="acme"} 2');
    has('dus_sync_drift_objects{tenant="globex"} 1');
    has('dus_sync_conflicts{tenant="acme"} 1');
    has('dus_sync_config_valid 1');
    has('dus_sync_last_success_timestamp_seconds 1700000000');
    has('dus_sync_api_requests_total{method="GET",status="200"} 1');
    has('dus_sync_api_requests_total{method="PUT",status="503"} 1');
    has('dus_sync_api_requests_total{method="POST",status="error"} 1');
    has('process_cpu_user_seconds_total ');
    has('process_resident_memory_bytes ');
    has('nodejs_heap_size_used_bytes ');
    has('nodejs_eventloop_lag_seconds ');
    // Every sample line is "name{labels} value": the exposition format parses (Prometheus reads
    // the value with Go's ParseFloat, which takes prom-client's "Nan" too).
    for (const l of lines.filter((x) => x !== '' && !x.startsWith('#'))) {
      expect(l).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? (-?[0-9.e+-]+|nan|[+-]inf)$/i);
    }
  });

  it('keeps the last known drift when a pass could not plan, and drops tenants that left', async () => {
    const metrics = new AgentMetrics({ defaultMetrics: false });
    metrics.recordPass(result('success', { drift: new Map([['acme', 2], ['globex', 1]]) }), 10, 1000);
    metrics.recordPass(result('invalid-config'), 10, 2000);
    let text = await metrics.text();
    expect(text).toContain('dus_sync_drift_objects{tenant="acme"} 2');
    expect(text).toContain('dus_sync_config_valid 0');
    expect(text).toContain('dus_sync_last_success_timestamp_seconds 1\n');
    metrics.recordPass(result('success', { drift: new Map([['acme', 0]]) }), 10, 3000);
    text = await metrics.text();
    expect(text).toContain('dus_sync_drift_objects{tenant="acme"} 0');
    expect(text).not.toContain('tenant="globex"');
    expect(text).toContain('dus_sync_config_valid 1');
  });

  it('lives in its own registry: two agents in one process do not collide', () => {
    expect(() => { new AgentMetrics(); new AgentMetrics(); }).not.toThrow();
  });
});
