// SIGKILL the apply process at different moments, then run it again: the journal settles
// what the killed run left in doubt, and every action ends with each phase exactly once.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';

const KEY = 'dev-key-acme-crash-0123456789';
const SETTLE_MS = 150;
const desired: Record<string, string[]> = Object.fromEntries(
  [1, 2, 3].map((id) => [String(id), Array.from({ length: 8 }, (_, i) => `a${id}-wave-${i}`)]),
);

let dir: string;
let child: string;
let emulator: RunningEmulator;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dus-crash-'));
  // Two levels below the project (as dist/commands/ is), so that the bundle resolves its external
  // packages and finds schemas/ as the built CLI does.
  const cache = resolve('node_modules/.dus-sync-test');
  await mkdir(cache, { recursive: true });
  child = join(cache, `apply-crash-child-${process.pid}.mjs`);
  await build({ entryPoints: [resolve('test/apply/crash-child.ts')], outfile: child, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'warning' });
  emulator = await startEmulator({
    seed: { tenants: { acme: { api_key: KEY, actions: [1, 2, 3].map((id) => ({ id, status: 'pending', phases: [] })) } } },
    host: '127.0.0.1', port: 0, faults: { dropEvery: 2, latencyMs: 15, seed: 3 },
  });
});
afterAll(async () => {
  await emulator.close();
  await rm(child, { force: true });
  await rm(dir, { recursive: true, force: true });
});

/** Runs one apply; with killAfterMs, SIGKILLs it that long after it starts executing. */
function runApply(killAfterMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  return new Promise((done, fail) => {
    const p = spawn(process.execPath, [child], {
      env: { ...process.env, CRASH_URL: emulator.url, CRASH_KEY: KEY, CRASH_JOURNAL: join(dir, '.dus-sync', 'journal.jsonl'), CRASH_DESIRED: JSON.stringify(desired), CRASH_SETTLE_MS: String(SETTLE_MS) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (killAfterMs !== undefined && out.includes('executing')) setTimeout(() => p.kill('SIGKILL'), killAfterMs);
    });
    p.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    p.on('error', fail);
    p.on('close', (code, signal) => (code !== 0 && signal === null ? fail(new Error(`apply exited ${code}: ${err}`)) : done({ code, signal, out })));
  });
}

describe('apply killed with SIGKILL', () => {
  it('converges on the next run with no phase twice, and the journal is settled and emptied', async () => {
    const kills = [40, 110, 25, 70];
    let killedMidway = 0;
    let recovered = 0;
    const count = (out: string): number => Number(/recovered (\d+)/.exec(out)?.[1] ?? 0);
    for (const ms of kills) {
      const r = await runApply(ms);
      if (r.signal === 'SIGKILL') killedMidway++;
      recovered += count(r.out);
    }
    expect(killedMidway).toBeGreaterThan(0);
    const last = await runApply();
    recovered += count(last.out);
    // The kills did leave appends in doubt, and the next runs settled them.
    expect(recovered).toBeGreaterThan(0);
    expect(last.out).toMatch(/done \d+ 0/);
    for (const [id, names] of Object.entries(desired)) {
      expect(emulator.store.getAction('acme', Number(id))?.phases.map((p) => p.name)).toEqual(names);
    }
    expect(emulator.stats.writes).toBe(24);
    expect(await readFile(join(dir, '.dus-sync', 'journal.jsonl'), 'utf8')).toBe('');
  });
});
