// Chaos: the built CLI applies against an emulator that is slow, answers 5xx and 429 at random,
// and stores some append_phase requests then drops the connection before answering. Over many
// fault seeds, apply must converge (a first apply may report failures when a change runs out of
// tries; a second apply finishes the job, as a user would run it), no phase may land twice, and
// every field the YAML does not set must stay as it was.
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, mulberry32, type RunningEmulator } from '../../src/emulator/index.js';
import {
  actionRecords, expectConverged, firmwareRecords, runCli, scenario, STACK, writeTree, type RunResult,
} from './helpers.js';

const KEY = 'chaos-secret-key-0123456789abcdef';
const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8, 9];
/** A user runs apply again when the first run reports failures; more than three means it does not converge. */
const MAX_APPLIES = 3;

let emulator: RunningEmulator | undefined;
afterEach(async () => { await emulator?.close(); emulator = undefined; });

function faultsFor(seed: number) {
  const rng = mulberry32(seed);
  return {
    latencyMs: Math.floor(rng() * 15),
    failRate: 0.05 + rng() * 0.2,
    rateLimit: 40 + Math.floor(rng() * 60),
    dropAfterCommitRate: 0.15 + rng() * 0.3,
    seed,
  };
}

describe('apply under seeded chaos (latency, 5xx, 429, commit-then-drop)', () => {
  it.each(SEEDS)('fault seed %i: converges, no phase twice, unmanaged fields intact', async (seed) => {
    const sc = scenario(seed, { firmwares: 10, actions: 3, livePhases: 1 + (seed % 3), newPhases: 3 }, KEY);
    const faults = faultsFor(seed);
    emulator = await startEmulator({ seed: sc.seed, pageSize: 2, absoluteNext: seed % 2 === 0, faults });
    const before = firmwareRecords(emulator);
    const actionsBefore = actionRecords(emulator, sc.phases.keys());
    const dir = writeTree(sc.files);
    const env = { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY };

    const runs: RunResult[] = [];
    for (let i = 0; i < MAX_APPLIES; i++) {
      const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--journal', `${dir}/journal.jsonl`], { env, timeoutMs: 45_000 });
      runs.push(r);
      if (r.code === 0) break;
    }
    const last = runs.at(-1)!;
    if (process.env.DUS_SYNC_TEST_DEBUG) process.stderr.write(`seed ${seed}: ${runs.length} applies, ${JSON.stringify(emulator.stats.byRoute)}\n${runs.map((r) => r.stderr).join("\n")}\n`);
    const transcript = runs.map((r, i) => `--- apply ${i + 1}: exit ${r.code}\n${r.stdout}\n${r.stderr}`).join('\n');
    expect(last.code, transcript).toBe(0);
    for (const r of runs) {
      expect(r.stdout + r.stderr).not.toContain(KEY);
      expect(r.stderr).not.toMatch(STACK);
    }

    const stored = { ...emulator.faults };
    Object.assign(emulator.faults, { failRate: 0, rateLimit: 0, dropAfterCommitRate: 0, latencyMs: 0 });
    expectConverged(emulator, sc, before, actionsBefore);

    // Planning again, without faults, finds nothing left to do.
    const again = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--detailed-exitcode'], { env });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    // The faults did fire: otherwise this test proves nothing.
    expect(stored.dropAfterCommitRate).toBeGreaterThan(0);
    expect(emulator.stats.byRoute['GET /actions/{id}'] ?? 0, 'appends were read back after dropped answers').toBeGreaterThan(0);
  });
});
