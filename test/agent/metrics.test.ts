// The agent's metrics as operators read them: states that drop to 0, objects not changes,
// templated routes, and the info series (build, last applied revision).
import perfHooks from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentMetrics, EVENT_LOOP_PRECISION_MS, routeLabel, statusClass } from '../../src/agent/metrics.js';
import { objectCounts } from '../../src/agent/pass.js';
import { objectId } from '../../src/apply/verify.js';
import type { Plan } from '../../src/model/index.js';
import { result } from './helpers.js';

afterEach(() => { vi.restoreAllMocks(); });

const counts = (in_sync: number, drift: number, conflict: number, error: number) => ({ in_sync, drift, conflict, error });
const sample = (text: string, series: string): string | undefined => text.split('\n').find((l) => l.startsWith(`${series} `))?.slice(series.length + 1);

describe('AgentMetrics', () => {
  it('keeps every state of a tenant, at 0 once in sync, instead of letting the series vanish', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    m.recordPass(result('conflict', { drift: new Map([['acme', 2]]), conflicts: new Map([['acme', 1]]), objects: new Map([['acme', counts(5, 2, 1, 0)]]) }), 10, 0);
    let text = await m.text();
    expect(sample(text, 'dus_sync_objects{tenant="acme",state="drift"}')).toBe('2');
    expect(sample(text, 'dus_sync_objects{tenant="acme",state="error"}')).toBe('0');
    m.recordPass(result('success', { drift: new Map([['acme', 0]]), conflicts: new Map([['acme', 0]]), objects: new Map([['acme', counts(8, 0, 0, 0)]]) }), 10, 0);
    text = await m.text();
    for (const [state, n] of [['in_sync', '8'], ['drift', '0'], ['conflict', '0'], ['error', '0']]) {
      expect(sample(text, `dus_sync_objects{tenant="acme",state="${state}"}`), state).toBe(n);
    }
    expect(sample(text, 'dus_sync_drift_objects{tenant="acme"}')).toBe('0');
    expect(sample(text, 'dus_sync_conflicts{tenant="acme"}')).toBe('0');
    // An API failure saw nothing: the last plan's numbers stay.
    m.recordPass(result('api-error'), 10, 0);
    expect(sample(await m.text(), 'dus_sync_objects{tenant="acme",state="in_sync"}')).toBe('8');
  });

  it('tells the objects after a pass that wrote, not at its plan: what it applied and verified is in sync, what failed stays drift', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    // Found 3 + 2 objects in drift; applied acme's and one of globex's, the other failed.
    m.recordPass(result('partial-failure', {
      drift: new Map([['acme', 3], ['globex', 2]]), conflicts: new Map([['acme', 0], ['globex', 1]]),
      objects: new Map([['acme', counts(4, 3, 0, 0)], ['globex', counts(1, 2, 1, 0)]]),
      after: new Map([['acme', counts(7, 0, 0, 0)], ['globex', counts(2, 1, 1, 0)]]),
      applied: [{ tenant: 'acme', kind: 'firmware' }, { tenant: 'globex', kind: 'phase' }], failed: [{ tenant: 'globex', kind: 'firmware' }],
    }), 10, 0);
    const text = await m.text();
    for (const [tenant, state, n] of [['acme', 'in_sync', '7'], ['acme', 'drift', '0'], ['globex', 'in_sync', '2'], ['globex', 'drift', '1'], ['globex', 'conflict', '1']]) {
      expect(sample(text, `dus_sync_objects{tenant="${tenant}",state="${state}"}`), `${tenant} ${state}`).toBe(n);
    }
    expect(sample(text, 'dus_sync_drift_objects{tenant="acme"}')).toBe('0');
    expect(sample(text, 'dus_sync_drift_objects{tenant="globex"}')).toBe('1');
    expect(sample(text, 'dus_sync_conflicts{tenant="globex"}')).toBe('1');
    expect(text).toMatch(/# HELP dus_sync_drift_objects .*after the last pass/);
    expect(text).toMatch(/# HELP dus_sync_objects .*after the last pass/);
  });

  it('times API requests by method, templated route and status class; never a raw path', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    m.onApiRequest({ method: 'GET', route: 'GET /actions/{id}', status: 200, durationMs: 30 });
    m.onApiRequest({ method: 'POST', route: 'POST /actions/{id}/append_phase', status: 503, durationMs: 5 });
    m.onApiRequest({ method: 'PUT', route: 'PUT /firmwares/{version_number}', status: 'error', durationMs: 60_000 });
    m.onApiRequest({ method: 'GET', route: '/api/v1/actions/4242', status: 404, durationMs: 1 });
    const text = await m.text();
    expect(sample(text, 'dus_sync_api_request_duration_seconds_count{method="GET",route="/api/v1/actions/{id}",status_class="2xx"}')).toBe('1');
    expect(sample(text, 'dus_sync_api_request_duration_seconds_count{method="POST",route="/api/v1/actions/{id}/append_phase",status_class="5xx"}')).toBe('1');
    expect(sample(text, 'dus_sync_api_request_duration_seconds_count{method="PUT",route="/api/v1/firmwares/{version_number}",status_class="error"}')).toBe('1');
    expect(sample(text, 'dus_sync_api_request_duration_seconds_count{method="GET",route="other",status_class="4xx"}')).toBe('1');
    expect(text).not.toContain('4242');
    expect(routeLabel('GET /firmware-bundles')).toBe('/api/v1/firmware-bundles');
    expect(statusClass(429)).toBe('4xx');
    expect(statusClass(undefined)).toBe('error');
  });

  it('counts failed changes, and shows intents in doubt, the lock, suspend and the build', async () => {
    const m = new AgentMetrics({ defaultMetrics: false, version: '1.2.3', node: 'v22.0.0' });
    let text = await m.text();
    expect(sample(text, 'dus_sync_build_info{version="1.2.3",node="v22.0.0"}')).toBe('1');
    expect(sample(text, 'dus_sync_apply_lock_held')).toBe('0');
    expect(sample(text, 'dus_sync_suspended')).toBe('0');
    expect(sample(text, 'dus_sync_journal_intents_in_doubt')).toBe('0');
    m.setLockHeld(true);
    m.setSuspended(true);
    m.recordPass(result('partial-failure', { failed: [{ tenant: 'acme', kind: 'phase' }, { tenant: 'acme', kind: 'phase' }], inDoubt: 1 }), 10, 0);
    text = await m.text();
    expect(sample(text, 'dus_sync_changes_failed_total{tenant="acme",kind="phase"}')).toBe('2');
    expect(sample(text, 'dus_sync_journal_intents_in_doubt')).toBe('1');
    expect(sample(text, 'dus_sync_apply_lock_held')).toBe('1');
    expect(sample(text, 'dus_sync_suspended')).toBe('1');
  });

  it('names the revision each tenant last converged to, one series per tenant', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    const a = 'a'.repeat(40);
    const b = 'b'.repeat(40);
    const objects = new Map([['acme', counts(1, 0, 0, 0)], ['globex', counts(0, 0, 1, 0)]]);
    m.recordPass(result('conflict', { objects, revision: { commit: a, dirty: false }, synced: ['acme'] }), 1, 0);
    let text = await m.text();
    expect(sample(text, `dus_sync_last_applied_info{tenant="acme",revision="${a}",dirty="false"}`)).toBe('1');
    expect(text).not.toContain('dus_sync_last_applied_info{tenant="globex"');
    m.recordPass(result('success', { objects, revision: { commit: b, dirty: true }, synced: ['acme', 'globex'] }), 1, 0);
    text = await m.text();
    expect(text).not.toContain(a);
    expect(sample(text, `dus_sync_last_applied_info{tenant="acme",revision="${b}",dirty="true"}`)).toBe('1');
    expect(sample(text, `dus_sync_last_applied_info{tenant="globex",revision="${b}",dirty="true"}`)).toBe('1');
    // A tenant that left the config leaves this series too.
    m.recordPass(result('success', { objects: new Map([['acme', counts(1, 0, 0, 0)]]), revision: { commit: b, dirty: true }, synced: ['acme'] }), 1, 0);
    expect(await m.text()).not.toContain('tenant="globex"');
  });

  it(`samples the event loop's delay every ${EVENT_LOOP_PRECISION_MS} ms, not prom-client's 10 ms`, () => {
    const spy = vi.spyOn(perfHooks, 'monitorEventLoopDelay');
    new AgentMetrics();
    expect(spy).toHaveBeenCalledWith({ resolution: EVENT_LOOP_PRECISION_MS });
    expect(EVENT_LOOP_PRECISION_MS).toBeGreaterThanOrEqual(100);
  });
});

describe('objectCounts', () => {
  it('counts an action with several phases to append as one object in drift, and every tenant, 0 included', () => {
    const phase = (index: number) => ({ tenant: 'acme', kind: 'phase', op: 'append', key: '42', index, action_id: 42, after: { name: `p${index}`, trigger_on: {}, info: {} } });
    const plan = {
      format_version: 1,
      changes: [phase(1), phase(2), phase(3), { tenant: 'acme', kind: 'firmware', op: 'update', key: '2.4.1' }],
      conflicts: [{ tenant: 'acme', kind: 'action', key: '7', message: 'differs' }],
      errors: [],
      summary: { changes: 4, conflicts: 1, errors: 0, unchanged: 3, unchanged_by_tenant: { acme: 3 } },
    } as unknown as Plan;
    expect(objectCounts(['acme', 'globex'], plan)).toEqual(new Map([['acme', counts(3, 2, 1, 0)], ['globex', counts(0, 0, 0, 0)]]));
    // After the pass: a verified object is in sync; the other stays in drift.
    expect(objectCounts(['acme', 'globex'], plan, [objectId('acme', 'action', '42')])).toEqual(new Map([['acme', counts(4, 1, 1, 0)], ['globex', counts(0, 0, 0, 0)]]));
    expect(objectCounts(['acme'], plan, [objectId('acme', 'action', '42'), objectId('acme', 'firmware', '2.4.1')]).get('acme')).toEqual(counts(5, 0, 1, 0));
  });
});
