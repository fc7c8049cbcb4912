// Chaos: the built CLI applies against an emulator that is slow, answers 5xx and 429 at random,
// and stores some append_phase requests then drops the connection before answering. Over many
// fault seeds, apply must converge (a first apply may report failures when a change runs out of
// tries; a second apply finishes the job, as a user would run it), no phase may land twice, and
// every field the YAML does not set must stay as it was.
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, mulberry32, type RunningEmulator } from '../../src/emulator/index.js';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import {
  actionRecords, CLI, expectConverged, firmwareRecords, runCli, scenario, STACK, startResetProxy, writeTree,
  type RunResult,
} from './helpers.js';

const KEY = 'chaos-secret-key-0123456789abcdef';
const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8, 9];
/**
 * A user runs apply again when a run reports failures: an append whose outcome a fault made
 * unknown is not re-sent in the same run, so a run stops that action there. More than eight
 * runs means it does not converge.
 */
const MAX_APPLIES = 8;

// Each test owns its servers and closes them itself: the tests run concurrently, because most
// of their time is spent waiting (Retry-After, the settle pause before an append is re-sent).
const open: { close(): Promise<void> }[] = [];
afterAll(async () => { await Promise.all(open.map((s) => s.close())); });

async function emulatorFor(opts: Parameters<typeof startEmulator>[0]): Promise<RunningEmulator> {
  const em = await startEmulator(opts);
  open.push(em);
  return em;
}

/** Applies until exit 0, at most MAX_APPLIES times, and checks what every run printed. */
async function applyUntilDone(dir: string, env: Record<string, string>): Promise<RunResult[]> {
  const runs: RunResult[] = [];
  for (let i = 0; i < MAX_APPLIES; i++) {
    // A short settle window (the default is 30 s): the next run re-sends an append reads have shown absent for 1 s.
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--journal', `${dir}/journal.jsonl`, '--settle-window', '1s'], { env, timeoutMs: 45_000 });
    runs.push(r);
    if (r.code === 0) break;
  }
  const transcript = runs.map((r, i) => `--- apply ${i + 1}: exit ${r.code}\n${r.stdout}\n${r.stderr}`).join('\n');
  if (process.env.DUS_SYNC_TEST_DEBUG) process.stderr.write(`${runs.length} applies\n${transcript}\n`);
  expect(runs.at(-1)!.code, transcript).toBe(0);
  for (const r of runs) {
    expect(r.stdout + r.stderr).not.toContain(KEY);
    expect(r.stderr).not.toMatch(STACK);
  }
  return runs;
}

function faultsFor(seed: number) {
  const rng = mulberry32(seed);
  return {
    latencyMs: Math.floor(rng() * 15),
    failRate: 0.05 + rng() * 0.2,
    // Low enough that the burst of a run (the bucket starts full) runs into it.
    rateLimit: 8 + Math.floor(rng() * 10),
    dropAfterCommitRate: 0.15 + rng() * 0.3,
    seed,
  };
}

const faultsSeen: { dropped: number; failed: number; limited: number }[] = [];

describe('apply under seeded chaos (latency, 5xx, 429, commit-then-drop)', () => {
  it.concurrent.each(SEEDS)('fault seed %i: converges, no phase twice, unmanaged fields intact', async (seed) => {
    const sc = scenario(seed, { firmwares: 10, actions: 3, livePhases: 1 + (seed % 3), newPhases: 3 }, KEY);
    const faults = faultsFor(seed);
    const faulted = { dropped: 0, failed: 0, limited: 0 };
    const log = (line: string) => {
      if (line.includes('connection dropped')) faulted.dropped++;
      else if (/ 5\d\d /.test(line)) faulted.failed++;
      else if (/ 429 /.test(line)) faulted.limited++;
    };
    const emulator = await emulatorFor({ seed: sc.seed, pageSize: 2, absoluteNext: seed % 2 === 0, faults, log });
    const before = firmwareRecords(emulator);
    const actionsBefore = actionRecords(emulator, sc.phases.keys());
    const dir = writeTree(sc.files);
    const env = { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY };

    await applyUntilDone(dir, env);

    Object.assign(emulator.faults, { failRate: 0, rateLimit: 0, dropAfterCommitRate: 0, latencyMs: 0 });
    expectConverged(emulator, sc, before, actionsBefore);

    // Planning again, without faults, finds nothing left to do.
    const again = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--detailed-exitcode'], { env });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    // The faults did fire: otherwise this test proves nothing.
    expect(faulted.dropped + faulted.failed + faulted.limited, JSON.stringify(faulted)).toBeGreaterThan(2);
    faultsSeen.push(faulted);
  });

  it('over all the seeds, every kind of fault fired: dropped appends, 5xx and 429', () => {
    expect(faultsSeen).toHaveLength(SEEDS.length);
    for (const kind of ['dropped', 'failed', 'limited'] as const) expect(faultsSeen.reduce((n, f) => n + f[kind], 0), kind).toBeGreaterThan(0);
  });
});

describe('apply through a proxy that resets connections at random (every route, both directions)', () => {
  it.concurrent.each([21, 22, 23])('reset seed %i: converges, no phase twice, unmanaged fields intact', async (seed) => {
    const sc = scenario(seed, { firmwares: 10, actions: 3, livePhases: 2, newPhases: 3 }, KEY);
    const emulator = await emulatorFor({ seed: sc.seed, pageSize: 2, faults: { latencyMs: 3, seed } });
    const proxy = await startResetProxy(new URL(emulator.url), { rate: 0.06, seed });
    open.push(proxy);
    const before = firmwareRecords(emulator);
    const actionsBefore = actionRecords(emulator, sc.phases.keys());
    const dir = writeTree(sc.files);
    await applyUntilDone(dir, { DUS_BASE_URL: proxy.url, DUS_API_KEY_ACME: KEY });
    expectConverged(emulator, sc, before, actionsBefore);
    expect(proxy.resets.beforeServer + proxy.resets.afterServer, 'the proxy did reset connections').toBeGreaterThan(0);
    const again = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--detailed-exitcode'], { env: { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY } });
    expect(again.code, again.stdout + again.stderr).toBe(0);
  });
});

describe('the user\'s path: the emulator as its own process, faults set by its flags', () => {
  it('dus-sync emulator --latency --fail-rate --rate-limit --drop-after-commit-rate: apply converges, no phase twice, unmanaged fields kept', async () => {
    const sc = scenario(31, { firmwares: 8, actions: 3, livePhases: 1, newPhases: 4 }, KEY);
    const dir = writeTree(sc.files);
    // Outside the repository: the loader reads every YAML file there.
    const emuDir = writeTree({ 'seed.yaml': stringify(sc.seed) });
    const data = `${emuDir}/emulator-state.json`;
    const child = spawn(process.execPath, [CLI, 'emulator', '--port', '0', '--seed', `${emuDir}/seed.yaml`, '--data', data,
      '--latency', '5', '--fail-rate', '0.15', '--rate-limit', '15', '--drop-after-commit-rate', '0.3', '--fault-seed', '31',
      '--page-size', '3', '--absolute-next'], { stdio: ['ignore', 'pipe', 'pipe'] });
    open.push({ close: () => new Promise<void>((resolve) => { if (child.exitCode !== null) resolve(); else { child.once('exit', () => resolve()); child.kill('SIGTERM'); } }) });
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', (l) => resolve(l.replace(/^listening on /, '')));
      child.once('exit', () => reject(new Error('the emulator exited before printing its URL')));
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const before = JSON.parse(readFileSync(data, 'utf8')) as { tenants: { acme: { bundles: { firmwares: Record<string, unknown>[] }[]; actions: { id: number }[] } } };

    await applyUntilDone(dir, { DUS_BASE_URL: url, DUS_API_KEY_ACME: KEY });

    const after = JSON.parse(readFileSync(data, 'utf8')) as typeof before & { tenants: { acme: { actions: { id: number; phases: { name: string }[] }[] } } };
    for (const a of after.tenants.acme.actions) expect(a.phases.map((p) => p.name), `action ${a.id}`).toEqual(sc.phases.get(a.id));
    const fws = (s: typeof before) => new Map(s.tenants.acme.bundles.flatMap((b) => b.firmwares).map((f) => [f.version_number as string, f]));
    const was = fws(before);
    for (const [vn, f] of fws(after)) expect(f, vn).toEqual({ ...was.get(vn), ...(sc.firmwares.get(vn) ?? {}) });
  });
});

/**
 * A gateway on 127.0.0.1 in front of the emulator that answers every append_phase with a 504
 * at once and hands the request to the emulator only `lateMs` later: the "proxy gave up, the
 * server still works on it" case. Everything else passes straight through.
 */
async function lateGateway(target: string, lateMs: number): Promise<{ url: string; late: () => number }> {
  let late = 0;
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<string, string>;
      const forward = () => fetch(`${target}${req.url ?? '/'}`, { method: req.method, headers, ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}) });
      if (req.method === 'POST' && /append_phase$/.test(req.url ?? '')) {
        late++;
        setTimeout(() => { void forward().then((r) => r.arrayBuffer()).catch(() => undefined); }, lateMs);
        res.writeHead(504, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ detail: 'Gateway timeout.' }));
        return;
      }
      void forward().then(async (r) => {
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
        res.end(Buffer.from(await r.arrayBuffer()));
      }, () => { res.destroy(); });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push({ close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }) });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, late: () => late };
}

// The limit of this guarantee, measured: an append that lands later than the executor's settle
// pause (1 s) after its 504 is sent again and lands twice. The API has no idempotency key, so
// no client can do better than wait; the README says so.
describe('a gateway that gives up on appends while the server still works on them', () => {
  it('a 504 for an append that lands 0.6 s later: apply reads again before resending, no phase twice', async () => {
    const sc = scenario(41, { firmwares: 2, actions: 2, livePhases: 1, newPhases: 3 }, KEY);
    const emulator = await emulatorFor({ seed: sc.seed });
    const gateway = await lateGateway(emulator.url, 600);
    const before = firmwareRecords(emulator);
    const actionsBefore = actionRecords(emulator, sc.phases.keys());
    const dir = writeTree(sc.files);
    await applyUntilDone(dir, { DUS_BASE_URL: gateway.url, DUS_API_KEY_ACME: KEY });
    // Let the last late request land before looking: it must change nothing.
    await new Promise((r) => setTimeout(r, 800));
    expect(gateway.late(), "each append sent exactly once").toBe(6);
    expectConverged(emulator, sc, before, actionsBefore);
  });
});
