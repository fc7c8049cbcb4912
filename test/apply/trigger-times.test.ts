// The first-seen trigger times behind min_soak (docs/rollout-control.md): kept per API, measured
// on the monotonic clock within a boot, never taken from an impossible time, pruned.
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { observeTriggers } from '../../src/apply/trigger-times.js';
import type { DesiredState, LiveState, Logger } from '../../src/model/index.js';
import { clearSecretsForTests, registerSecret } from '../../src/redact.js';

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });
function folder(): string {
  const d = mkdtempSync(join(tmpdir(), 'dus-trig-'));
  dirs.push(d);
  return join(d, 'triggered.json');
}
const warnings: string[] = [];
const log: Logger = { trace() {}, debug() {}, info() {}, warn: (m: string) => { warnings.push(m); }, error() {} } as unknown as Logger;

const desired = (ids: number[]): DesiredState => ({
  files: [],
  firmwares: [],
  actions: ids.map((id) => ({ kind: 'action', tenant: 'acme', labels: {}, source: { file: 'a.yaml', line: 1, column: 1 }, id, phases: [], pacing: 'gated', minSoakMs: 60_000 })),
}) as unknown as DesiredState;
const live = (ids: number[], triggered = true): LiveState => ({
  tenants: new Map([['acme', {
    firmwares: new Map(),
    actions: new Map(ids.map((id) => [id, { id, status: 'running', phases: [{ name: 'canary' }], phases_triggered: [triggered] }])),
  }]]),
}) as unknown as LiveState;

const STAGING = 'http://127.0.0.1:1';
const PROD = 'http://127.0.0.1:2';

describe('first-seen trigger times', () => {
  it('keep a phase name that a server sent with a key in it redacted, and still know the phase next time', async () => {
    const key = 'Zq8vR2mK7pXw4Lb9Tn3Hc6Yd1Fs5Gj0A';
    registerSecret(key);
    try {
      const path = folder();
      const withKey = (): LiveState => {
        const l = live([44]);
        (l.tenants.get('acme')!.actions.get(44) as { phases: { name: string }[] }).phases[0]!.name = `canary-${key}`;
        return l;
      };
      const t0 = Date.UTC(2026, 0, 1);
      await observeTriggers(path, STAGING, desired([44]), withKey(), t0, log, () => 5);
      const text = readFileSync(path, 'utf8');
      expect(text).toContain('canary-[REDACTED]');
      expect(text).not.toContain(key.slice(0, 8));
      // The same phase read again: its first-seen time is kept, not restarted.
      const since = await observeTriggers(path, STAGING, desired([44]), withKey(), t0 + 60_000, log, () => 60_005);
      expect(since('acme', 44, 0)).toBe(t0);
    } finally {
      clearSecretsForTests();
    }
  });

  it('are kept per API: a phase that soaked on one service has not soaked on another sharing the state folder', async () => {
    const path = folder();
    const t0 = Date.UTC(2026, 0, 1);
    await observeTriggers(path, STAGING, desired([43]), live([43]), t0, log);
    const later = t0 + 3_600_000;
    const onStaging = await observeTriggers(path, STAGING, desired([43]), live([43]), later, log, () => 3_600_000 + 5);
    const onProd = await observeTriggers(path, PROD, desired([43]), live([43]), later, log);
    expect(onProd('acme', 43, 0)).toBe(later);
    const file = JSON.parse(readFileSync(path, 'utf8'));
    expect(file.phases.map((e: { api: string }) => e.api).sort()).toEqual([STAGING, PROD].sort());
    expect(onStaging('acme', 43, 0)).toBeLessThanOrEqual(later);
  });

  it('a wall clock stepped forward does not shorten the soak within one boot (monotonic clock)', async () => {
    const path = folder();
    const t0 = Date.UTC(2026, 0, 1);
    let mono = 1_000_000;
    await observeTriggers(path, STAGING, desired([43]), live([43]), t0, log, () => mono);
    // Two seconds later on the monotonic clock, but the wall clock jumped 31 minutes.
    mono += 2_000;
    const since = await observeTriggers(path, STAGING, desired([43]), live([43]), t0 + 31 * 60_000, log, () => mono);
    const entry = JSON.parse(readFileSync(path, 'utf8')).phases[0];
    if (entry.boot === undefined) return; // no boot id on this system: the wall clock is all there is
    expect(t0 + 31 * 60_000 - since('acme', 43, 0)!).toBe(2_000);
  });

  it('ignores entries with impossible times or without the API (a fresh soak, the safe direction)', async () => {
    const path = folder();
    const now = Date.UTC(2026, 5, 1);
    writeFileSync(path, JSON.stringify({ version: 1, phases: [
      { api: STAGING, tenant: 'acme', action: 1, index: 0, name: 'canary', first_seen: '+275760-09-13T00:00:00.000Z' },
      { api: STAGING, tenant: 'acme', action: 2, index: 0, name: 'canary', first_seen: '1970-01-01T00:00:00.000Z' },
      { tenant: 'acme', action: 3, index: 0, name: 'canary', first_seen: '2020-01-01T00:00:00.000Z' },
    ] }));
    const since = await observeTriggers(path, STAGING, desired([1, 2, 3]), live([1, 2, 3]), now, log);
    for (const id of [1, 2, 3]) expect(since('acme', id, 0)).toBe(now);
  });

  it('drops the entries of actions this API and tenant no longer declare, and keeps other APIs\' ones', async () => {
    const path = folder();
    const now = Date.UTC(2026, 5, 1);
    await observeTriggers(path, STAGING, desired([1, 2]), live([1, 2]), now, log);
    await observeTriggers(path, PROD, desired([1]), live([1]), now, log);
    await observeTriggers(path, STAGING, desired([1]), live([1]), now + 1000, log);
    const entries = JSON.parse(readFileSync(path, 'utf8')).phases.map((e: { api: string; action: number }) => `${e.api}#${e.action}`).sort();
    expect(entries).toEqual([`${PROD}#1`, `${STAGING}#1`].sort());
  });
});
