// The executor with the real client over real HTTP (127.0.0.1, port 0) against the emulator,
// whose faults commit an append and then drop the connection.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import type { ApiClient } from '../../src/api/client.js';
import { executePlan } from '../../src/apply/executor.js';
import { Journal, settleJournal } from '../../src/apply/journal.js';
import { fetchLive } from '../../src/api/fetch-live.js';
import type { DesiredState } from '../../src/model/index.js';
import { startEmulator } from '../../src/emulator/index.js';
import type { RunningEmulator, FaultSettings } from '../../src/emulator/index.js';
import type { Clock, PhaseChange, PhaseSpec } from '../../src/model/index.js';
import { memoryLog, phase, phaseChange, planOf } from './fakes.js';

const KEY = 'dev-key-acme-0123456789';
const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

let dir: string;
let emulator: RunningEmulator;
let client: ApiClient;
let journal: Journal;

async function start(faults: Partial<FaultSettings>): Promise<void> {
  emulator = await startEmulator({
    seed: { tenants: { acme: { api_key: KEY, actions: [{ id: 1, status: 'pending', phases: [] }, { id: 2, status: 'pending', phases: [] }] } } },
    host: '127.0.0.1', port: 0, faults,
  });
  client = createApiClient({ baseUrl: emulator.url, keys: new Map([['acme', KEY]]), timeoutMs: 5_000 });
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dus-emu-'));
  journal = await Journal.open(join(dir, '.dus-sync', 'journal.jsonl'));
});
afterEach(async () => {
  await journal.close();
  await client.close();
  await emulator.close();
  await rm(dir, { recursive: true, force: true });
});

const desired: PhaseSpec[] = Array.from({ length: 5 }, (_, i) => phase(`wave-${i}`, i * 10));

/** Read from the emulator's store, not over HTTP: the test's own reads must not meet the faults. */
function livePhases(id: number): string[] {
  return (emulator.store.getAction('acme', id)?.phases ?? []).map((p) => p.name);
}

function missingTail(): PhaseChange[] {
  const out: PhaseChange[] = [];
  for (const id of [1, 2]) {
    const have = livePhases(id).length;
    for (let i = have; i < desired.length; i++) out.push(phaseChange('acme', id, i, desired[i]!));
  }
  return out;
}

const actionsOnly: DesiredState = {
  firmwares: [], files: [],
  actions: [1, 2].map((id) => ({ kind: 'action' as const, tenant: 'acme', labels: {}, source: { file: 'x', line: 1, column: 1 }, id, phases: [] })),
};

describe('executor against the emulator', () => {
  it('converges 10 appends on two actions when every second append answer is dropped after commit', async () => {
    await start({ dropEvery: 2, seed: 7 });
    const log = memoryLog();
    const live = await fetchLive(client, actionsOnly);
    const report = await executePlan(planOf(missingTail()), {
      client, journal, log, clock: realClock, concurrency: 4, live,
    });
    expect(report).toMatchObject({ applied: 10, failed: 0, skipped: 0 });
    const names = desired.map((p) => p.name);
    expect(livePhases(1)).toEqual(names);
    expect(livePhases(2)).toEqual(names);
    // Ten committed writes and no more: five answers were lost and none of those phases was sent again.
    expect(emulator.stats.writes).toBe(10);
    expect(emulator.stats.byRoute['POST /actions/{id}/append_phase']).toBe(10);
    expect(log.lines.filter((l) => l.includes('is unknown')).length).toBe(5);
    // What is left open is acknowledged (2xx) appends that no read has shown yet; a read settles them.
    expect(journal.open().every((i) => i.state === 'acknowledged')).toBe(true);
    for (const id of [1, 2]) await journal.confirm('acme', (await client.tenant('acme').getAction(id))!);
    expect(journal.open()).toEqual([]);
  });

  it.each([11, 12, 13])('converges without a duplicate under 5xx, 429 and dropped answers, re-planning until nothing is left (seed %i)', async (seed) => {
    await start({ dropEvery: 2, failRate: 0.15, rateLimit: 50, seed });
    const log = memoryLog();
    for (let round = 0; round < 5; round++) {
      const { blocked } = await settleJournal(journal, client, log, { clock: realClock, settleMs: 50 });
      const changes = missingTail();
      if (changes.length === 0) break;
      const live = await fetchLive(client, actionsOnly);
      await executePlan(planOf(changes), { client, journal, log, clock: realClock, concurrency: 8, readBackPauseMs: 50, live, blocked });
    }
    const names = desired.map((p) => p.name);
    expect(livePhases(1)).toEqual(names);
    expect(livePhases(2)).toEqual(names);
    expect(emulator.stats.writes).toBe(10);
    for (const id of [1, 2]) await journal.confirm('acme', (await client.tenant('acme').getAction(id))!);
    expect(journal.open()).toEqual([]);
    // The faults did fire: more requests than the ten appends and their read-backs alone.
    expect(emulator.stats.requests).toBeGreaterThan(15);
  });
});
