import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/emulator/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { GLOBEX, call, emulator } from './helpers.js';

async function statuses(e: RunningEmulator, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await call(e.url, '/api/v1/actions/42')).status);
  return out;
}

/** Appends n phases; "dropped" when the connection closed without an answer. */
async function appends(e: RunningEmulator, n: number): Promise<(number | 'dropped')[]> {
  const out: (number | 'dropped')[] = [];
  for (let i = 0; i < n; i++) {
    try {
      out.push((await call(e.url, '/api/v1/actions/42/append_phase', { method: 'POST', body: { name: `p${i}` } })).status);
    } catch (err) {
      expect((err as Error).message).toMatch(/other side closed|socket|ECONNRESET/i);
      out.push('dropped');
    }
  }
  return out;
}

describe('faults', () => {
  it('mulberry32 repeats under a seed', () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    const xs = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
  });

  it('adds latency, and can be switched off at runtime', async () => {
    const e = await emulator({ faults: { latencyMs: 150 } });
    let t = performance.now();
    expect((await call(e.url, '/api/v1/actions/42')).status).toBe(200);
    expect(performance.now() - t).toBeGreaterThanOrEqual(140);
    e.faults.latencyMs = 0;
    t = performance.now();
    await call(e.url, '/api/v1/actions/42');
    expect(performance.now() - t).toBeLessThan(140);
  });

  it('answers a seeded, repeatable share of requests with 5xx', async () => {
    const a = await emulator({ faults: { failRate: 0.5, seed: 11 } });
    const b = await emulator({ faults: { failRate: 0.5, seed: 11 } });
    const first = await statuses(a, 24);
    expect(await statuses(b, 24)).toEqual(first);
    const failed = first.filter((s) => s !== 200);
    expect(failed.length).toBeGreaterThan(3);
    expect(failed.length).toBeLessThan(21);
    expect(failed.every((s) => [502, 503, 504].includes(s))).toBe(true);
    const c = await emulator({ faults: { failRate: 0.5, seed: 12 } });
    const other = await statuses(c, 24);
    expect(other).not.toEqual(first);
    // A new seed at runtime restarts the sequence, as if the emulator had started with it.
    a.faults.seed = 12;
    expect(await statuses(a, 8)).toEqual(other.slice(0, 8));
  });

  it('never commits a write it fails', async () => {
    const e = await emulator({ faults: { failRate: 1 } });
    const res = await call(e.url, '/api/v1/firmwares/2.4.1', { method: 'PUT', body: { is_deactivated: true } });
    expect([502, 503, 504]).toContain(res.status);
    expect(typeof (res.body as { detail: string }).detail).toBe('string');
    expect(e.store.firmwaresByVersion('acme', '2.4.1')[0]!.is_deactivated).toBe(false);
    expect(e.stats.writes).toBe(0);
  });

  it('rate-limits per tenant with 429 and Retry-After, and refills', async () => {
    const e = await emulator({ faults: { rateLimit: 2 } });
    const res: { status: number; retry?: unknown }[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await call(e.url, '/api/v1/actions/42');
      res.push({ status: r.status, retry: r.headers['retry-after'] });
    }
    expect(res.map((r) => r.status)).toEqual([200, 200, 429, 429, 429]);
    expect(res[2]!.retry).toBe('1');
    expect(res[0]!.retry).toBeUndefined();
    // Another tenant has its own bucket.
    expect((await call(e.url, '/api/v1/firmware-bundles', { auth: GLOBEX })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 600));
    expect((await call(e.url, '/api/v1/actions/42')).status).toBe(200);
  });

  it('dropEvery=2 commits every append and drops exactly every second answer', async () => {
    const e = await emulator({ faults: { dropEvery: 2 } });
    expect(await appends(e, 4)).toEqual([201, 'dropped', 201, 'dropped']);
    expect(e.store.getAction('acme', 42)!.phases.map((p) => p.name)).toEqual(['canary', 'p0', 'p1', 'p2', 'p3']);
    expect(e.store.getAction('acme', 42)!.phases_triggered).toEqual([false, false, false, false, false]);
    expect(e.stats.writes).toBe(4);
    // Drops are for append_phase only.
    for (let i = 0; i < 3; i++) expect((await call(e.url, '/api/v1/actions/42')).status).toBe(200);
  });

  it('drops after commit at a seeded, repeatable rate', async () => {
    const a = await emulator({ faults: { dropAfterCommitRate: 0.5, seed: 5 } });
    const b = await emulator({ faults: { dropAfterCommitRate: 0.5, seed: 5 } });
    const first = await appends(a, 12);
    expect(await appends(b, 12)).toEqual(first);
    expect(first).toContain('dropped');
    expect(first).toContain(201);
    expect(a.store.getAction('acme', 42)!.phases).toHaveLength(13);
  });
});
