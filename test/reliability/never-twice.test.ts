// "Never twice, never stale", through the built CLI against the emulator: every write is decided
// on a fresh read of its object made inside the lock, a 2xx is final, an unknown outcome is never
// re-sent in the same run nor before reads have shown it absent for the settle window, every
// answer must be the object asked for, and a duplicate that another runner causes is a loud
// failure. One test per way the promise broke before (issue "Never twice, never stale").
import { existsSync, mkdirSync, renameSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import {
  onTerminal, runCli, spawnCli, startHookProxy, STACK, writeTree, type RunResult,
} from './helpers.js';

const KEY = 'never-twice-key-5e1f0a9c7b3d';
const APPEND = 'POST /actions/{id}/append_phase';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => { await Promise.all(open.splice(0).map((s) => s.close())); });

const P = (i: number) => ({ name: `p${i}`, trigger_on: { after_minutes: i * 10 }, info: { percent: i * 5 } });
const Q = (i: number) => ({ name: `q${i}`, trigger_on: { after_minutes: i }, info: { percent: i } });

function seed(actions: { id: number; phases: ReturnType<typeof P>[] }[] = [{ id: 100, phases: [P(0)] }]): Seed {
  return {
    tenants: {
      acme: {
        api_key: KEY,
        bundles: [{ version: '2024.01', firmwares: [
          { version_number: '1.0.0', component_name: 'modem', uncompressed_size: 10, is_deactivated: false, dependencies: [] },
        ] }],
        actions: actions.map((a) => ({ id: a.id, status: 'pending', phases: a.phases })),
      },
    },
  } as unknown as Seed;
}

async function emulator(s: Seed, faults: Parameters<typeof startEmulator>[0]['faults'] = {}): Promise<RunningEmulator> {
  const em = await startEmulator({ seed: s, faults });
  open.push(em);
  return em;
}

const CONFIG = `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
`;

function actionDoc(id: number, phases: ReturnType<typeof P>[]): string {
  return `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: ${id}
  phases:
${phases.map((p) => `    - ${JSON.stringify(p)}`).join('\n')}
`;
}

const FIRMWARE = `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "1.0.0"
  is_deactivated: true
`;

function repo(files: Record<string, string>): string {
  return writeTree({ 'dus-sync.yaml': CONFIG, ...files });
}

const names = (em: RunningEmulator, id: number) => em.store.getAction('acme', id)!.phases.map((p) => p.name);
const appends = (em: RunningEmulator) => em.stats.byRoute[APPEND] ?? 0;

/** The state (journal, lock) of each repository in its .dus-sync folder, where the lock tests plant files. */
const stateOf = (dir: string) => ({ DUS_SYNC_STATE_DIR: join(dir, '.dus-sync') });

function apply(dir: string, url: string, extra: string[] = []): Promise<RunResult> {
  return runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', ...extra], { env: { DUS_BASE_URL: url, DUS_API_KEY_ACME: KEY, ...stateOf(dir) }, timeoutMs: 60_000 });
}

/** Applies until exit 0 (at most `max` runs, `pause` ms apart), as an operator or a CI retry would. */
async function applyUntilDone(dir: string, url: string, extra: string[], max: number, pause = 0): Promise<RunResult[]> {
  const runs: RunResult[] = [];
  for (let i = 0; i < max; i++) {
    if (i > 0 && pause > 0) await new Promise((r) => setTimeout(r, pause));
    const r = await apply(dir, url, extra);
    runs.push(r);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.stdout + r.stderr).not.toContain(KEY);
    if (r.code === 0) break;
  }
  return runs;
}

const transcript = (runs: RunResult[]) => runs.map((r, i) => `--- run ${i + 1}: exit ${r.code}\n${r.stdout}${r.stderr}`).join('\n');

describe('1. a plan made stale by another actor', () => {
  it('phases that land while the approval prompt is open are not appended again; the rest are', async () => {
    const em = await emulator(seed());
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1, 2, 3, 4].map(P)) });
    const r = await onTerminal(['--config', `${dir}/dus-sync.yaml`, 'apply'], { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY }, () => {
      em.store.appendPhase('acme', 100, P(1));
      em.store.appendPhase('acme', 100, P(2));
    }, 'y');
    expect(names(em, 100)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
    expect(appends(em), r.out).toBe(2);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/already there/);
  });

  it('a foreign phase that lands while the prompt is open stops that action as a conflict: nothing appended, exit 1', async () => {
    const em = await emulator(seed());
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1, 2].map(P)) });
    const r = await onTerminal(['--config', `${dir}/dus-sync.yaml`, 'apply'], { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY }, () => {
      em.store.appendPhase('acme', 100, { name: 'hotfix', trigger_on: {}, info: {} });
    }, 'y');
    expect(names(em, 100)).toEqual(['p0', 'hotfix']);
    expect(appends(em)).toBe(0);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toMatch(/action 100/);
  });
});

describe('7. fields outside the YAML are never reverted', () => {
  it('a size set by someone else while the prompt is open is not overwritten: the firmware is refused as stale', async () => {
    const em = await emulator(seed());
    const dir = repo({ 'fw.yaml': FIRMWARE });
    const r = await onTerminal(['--config', `${dir}/dus-sync.yaml`, 'apply'], { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY }, () => {
      em.store.updateFirmware('acme', '1.0.0', { uncompressed_size: 999 });
    }, 'y');
    const fw = em.store.firmwaresByVersion('acme', '1.0.0')[0]!;
    expect(fw.uncompressed_size).toBe(999);
    expect(fw.is_deactivated).toBe(false);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toMatch(/firmware 1\.0\.0.*changed since the plan/s);
    expect(r.out).toMatch(/uncompressed_size/);
  });

  it('a firmware that already has the desired values when its turn comes is not written again', async () => {
    const em = await emulator(seed());
    const dir = repo({ 'fw.yaml': FIRMWARE });
    const r = await onTerminal(['--config', `${dir}/dus-sync.yaml`, 'apply'], { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY }, () => {
      em.store.updateFirmware('acme', '1.0.0', { is_deactivated: true });
    }, 'y');
    expect(r.code, r.out).toBe(0);
    expect(em.stats.byRoute['PUT /firmwares/{version-number}'] ?? 0).toBe(0);
  });
});

describe('2. watch and apply on one host', () => {
  it('a watch pass whose first read is held back while an apply converges the action plans again inside the lock: nothing twice', async () => {
    const em = await emulator(seed());
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1, 2, 3, 4].map(P)) });
    let released: () => void = () => undefined;
    const applyDone = new Promise<void>((resolve) => { released = resolve; });
    let held = false;
    // The watch agent goes through this proxy; the answer to its first read of the action (the
    // phases as they were) reaches it only after an apply converged the action.
    const proxy = await startHookProxy(em.url, () => undefined, { holdAnswer: async (request) => {
      if (!held && request === 'GET /api/v1/actions/100') {
        held = true;
        const r = await apply(dir, em.url);
        expect(r.code, r.stderr).toBe(0);
        released();
      }
    } });
    open.push(proxy);
    const watch = spawnCli(['--config', `${dir}/dus-sync.yaml`, 'watch', '--interval', '1h'], { DUS_BASE_URL: proxy.url, DUS_API_KEY_ACME: KEY, ...stateOf(dir) });
    open.push({ close: async () => { watch.child.kill('SIGKILL'); await watch.done; } });
    await applyDone;
    // The pass goes on after the hold; wait for its summary line.
    for (let t = 0; !/in sync|applied \d+/.test(watch.stderr()) && t < 300; t++) await new Promise((r) => setTimeout(r, 100));
    expect(watch.stderr()).toMatch(/in sync|applied 0/);
    expect(names(em, 100)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
    expect(appends(em)).toBe(4);
  });
});

describe('3. a 2xx is final, even when reads lag behind', () => {
  it('apply against a server whose reads (and answers) show an append 2.5 s late: each phase is sent exactly once', async () => {
    const em = await emulator(seed(), { readLagMs: 2500 });
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1, 2, 3].map(P)) });
    const runs = await applyUntilDone(dir, em.url, [], 12, 1000);
    expect(runs.at(-1)!.code, transcript(runs)).toBe(0);
    expect(names(em, 100)).toEqual(['p0', 'p1', 'p2', 'p3']);
    expect(appends(em), transcript(runs)).toBe(3);
    // A run that stopped said why: the API accepted a phase its reads do not show yet.
    if (runs.length > 1) expect(runs[0]!.stdout + runs[0]!.stderr).toMatch(/accepted|not show it yet/);
  });

  it('watch against the same server: three phases, three appends', async () => {
    const em = await emulator(seed(), { readLagMs: 2000 });
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1, 2, 3].map(P)) });
    const watch = spawnCli(['--config', `${dir}/dus-sync.yaml`, 'watch', '--interval', '1h'], { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY, ...stateOf(dir) });
    open.push({ close: async () => { watch.child.kill('SIGKILL'); await watch.done; } });
    for (let t = 0; names(em, 100).length < 4 && t < 400; t++) await new Promise((r) => setTimeout(r, 100));
    // Give the agent time to (wrongly) append again before looking.
    await new Promise((r) => setTimeout(r, 3000));
    expect(names(em, 100), watch.stderr()).toEqual(['p0', 'p1', 'p2', 'p3']);
    expect(appends(em)).toBe(3);
  });
});

describe('4. an append whose outcome is unknown is never re-sent early', () => {
  it.each([1500, 3000])('a 504 whose append the server stores %i ms later is sent once: not again in the run, and later only after the settle window', async (lateMs) => {
    const em = await emulator(seed(), { lateCommitMs: lateMs });
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1, 2].map(P)) });
    const runs = await applyUntilDone(dir, em.url, ['--settle-window', '4s'], 8);
    expect(runs.at(-1)!.code, transcript(runs)).toBe(0);
    await new Promise((r) => setTimeout(r, lateMs + 200));
    expect(names(em, 100), transcript(runs)).toEqual(['p0', 'p1', 'p2']);
    expect(appends(em), transcript(runs)).toBe(2);
    expect(runs[0]!.code).toBe(1);
    expect(runs[0]!.stdout + runs[0]!.stderr).toMatch(/unknown/);
  }, 90_000);
});

describe('5. every answer must be the object asked for', () => {
  it('GET /actions/100 answered with action 101 is an error for action 100: nothing is appended to it', async () => {
    const em = await emulator(seed([{ id: 100, phases: [P(0), P(1)] }, { id: 101, phases: [P(0)] }]), { wrongAction: { 100: 101 } });
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1, 2].map(P)) });
    const r = await apply(dir, em.url);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/action 100.*(answered|answer).*101|101.*instead of.*100/s);
    expect(names(em, 100)).toEqual(['p0', 'p1']);
    expect(names(em, 101)).toEqual(['p0']);
    expect(appends(em)).toBe(0);
  });
});

describe('6. another runner appending at the same moment', () => {
  it('a duplicate created by a concurrent append is a failure named in the report, exit 1', async () => {
    const em = await emulator(seed(), { raceAppendEvery: 2 });
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1, 2, 3].map(P)) });
    const r = await apply(dir, em.url);
    expect(names(em, 100)).toEqual(['p0', 'p1', 'p2', 'p2']);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/action 100/);
    expect(r.stdout).toMatch(/Diverged/);
    expect(r.stdout).toMatch(/action 100 in acme: no longer the YAML's first phases .*phase "p2" twice/);
  });

  it('two checkouts applying at once, ten times: a duplicate, when the race produces one, never goes unreported', async () => {
    const results: string[] = [];
    for (let i = 0; i < 10; i++) {
      const em = await emulator(seed([{ id: 100, phases: [P(0)] }, { id: 101, phases: [Q(0)] }]));
      const files = { 'action.yaml': actionDoc(100, [0, 1, 2, 3].map(P)) + '---\n' + actionDoc(101, [0, 1, 2, 3].map(Q)) };
      const a = repo(files);
      const b = repo(files);
      const [ra, rb] = await Promise.all([apply(a, em.url), apply(b, em.url)]);
      for (const id of [100, 101]) {
        const list = names(em, id);
        const clean = list.length === 4 && new Set(list).size === 4;
        if (!clean) {
          results.push(`try ${i}: action ${id} ${list.join(',')} exits ${ra.code}/${rb.code}`);
          expect([ra.code, rb.code], `${list.join(',')}\n${ra.stdout}${ra.stderr}\n${rb.stdout}${rb.stderr}`).toContain(1);
          expect(ra.stdout + ra.stderr + rb.stdout + rb.stderr).toMatch(new RegExp(`action ${id}`));
        }
      }
    }
    if (process.env.DUS_SYNC_TEST_DEBUG) process.stderr.write(`${results.length} duplicates in 10 tries\n${results.join('\n')}\n`);
  }, 120_000);
});

describe('8. the lock survives crashes and containers', () => {
  const lockOf = (dir: string) => join(dir, '.dus-sync', 'apply.lock');
  const plant = (dir: string, content: string, ageSeconds: number) => {
    mkdirSync(join(dir, '.dus-sync'), { recursive: true, mode: 0o700 });
    writeFileSync(lockOf(dir), content, { mode: 0o600 });
    const t = Date.now() / 1000 - ageSeconds;
    utimesSync(lockOf(dir), t, t);
  };

  it('an empty lock left by kill -9 between create and write is taken over once its heartbeat is old, with a warning', async () => {
    const em = await emulator(seed());
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1].map(P)) });
    plant(dir, '', 300);
    const r = await apply(dir, em.url);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/taking over the stale lock/);
    expect(names(em, 100)).toEqual(['p0', 'p1']);
    expect(existsSync(lockOf(dir))).toBe(false);
  });

  it('a lock whose PID is alive here (a new container reuses PID 1) but whose heartbeat stopped is taken over', async () => {
    const em = await emulator(seed());
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1].map(P)) });
    plant(dir, JSON.stringify({ token: 'old', pid: process.pid, host: hostname(), started: '2026-01-01T00:00:00Z' }), 300);
    const r = await apply(dir, em.url);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/taking over the stale lock/);
  });

  it('a lock of a pod that is gone (another host name) is taken over once its heartbeat is old; a fresh one is not', async () => {
    const em = await emulator(seed());
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1].map(P)) });
    plant(dir, JSON.stringify({ token: 'pod', pid: 1, host: 'dus-sync-7d9f8-xk2p1', started: '2026-01-01T00:00:00Z' }), 0);
    const refused = await apply(dir, em.url);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/another dus-sync apply \(pid 1 on dus-sync-7d9f8-xk2p1/);
    expect(appends(em)).toBe(0);
    plant(dir, JSON.stringify({ token: 'pod', pid: 1, host: 'dus-sync-7d9f8-xk2p1', started: '2026-01-01T00:00:00Z' }), 300);
    const r = await apply(dir, em.url);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/taking over the stale lock/);
    expect(names(em, 100)).toEqual(['p0', 'p1']);
  });

  it('the watch agent is not wedged by a stale lock of a pod that is gone: its first pass converges', async () => {
    const em = await emulator(seed());
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1].map(P)) });
    plant(dir, JSON.stringify({ token: 'pod', pid: 1, host: 'dus-sync-old-pod', started: '2026-01-01T00:00:00Z' }), 300);
    const watch = spawnCli(['--config', `${dir}/dus-sync.yaml`, 'watch', '--interval', '1h'], { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY, ...stateOf(dir) });
    open.push({ close: async () => { watch.child.kill('SIGKILL'); await watch.done; } });
    for (let t = 0; names(em, 100).length < 2 && t < 200; t++) await new Promise((r) => setTimeout(r, 100));
    expect(names(em, 100), watch.stderr()).toEqual(['p0', 'p1']);
  });
});

// ---------------------------------------------------------------- the second tester's cases

/** A proxy of our own on 127.0.0.1: `answer` may answer a request itself, or return undefined to forward it. */
async function proxy(target: string, answer: (method: string, path: string, n: number, headers: Record<string, string>) => Promise<{ status: number; body: unknown } | undefined> | { status: number; body: unknown } | undefined): Promise<string> {
  const { createServer } = await import('node:http');
  const counts = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const key = `${req.method} ${path}`;
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<string, string>;
      void Promise.resolve(answer(req.method ?? 'GET', path, n, headers)).then(async (own) => {
        if (own) {
          const text = JSON.stringify(own.body);
          res.writeHead(own.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
          res.end(text);
          return;
        }
        const r = await fetch(`${target}${req.url ?? '/'}`, { method: req.method, headers, ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}) });
        const body = Buffer.from(await r.arrayBuffer());
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json', 'content-length': body.length });
        res.end(body);
      }).catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  open.push({ close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) });
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}`;
}

describe('9. what a second tester broke, each sent once and never reverted', () => {
  it('a PUT answered 503 after someone else changed a field is not retried with the old body: the firmware is stale', async () => {
    const em = await emulator(seed());
    const url = await proxy(em.url, (method, path, n) => {
      if (method !== 'PUT' || n > 1) return undefined;
      em.store.updateFirmware('acme', '1.0.0', { uncompressed_size: 777 });
      return { status: 503, body: { detail: 'Service temporarily unavailable.' } };
    });
    const dir = repo({ 'fw.yaml': FIRMWARE });
    const r = await apply(dir, url);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/firmware 1\.0\.0 changed since the plan was made \(uncompressed_size 10 → 777\)/);
    const fw = em.store.firmwaresByVersion('acme', '1.0.0')[0]!;
    expect([fw.uncompressed_size, fw.is_deactivated]).toEqual([777, false]);
    expect(em.stats.byRoute['PUT /firmwares/{version-number}'] ?? 0).toBe(0);
  });

  it('a journal whose last line was torn (no newline): the next intent is not swallowed, so a run later settles it instead of sending it again', async () => {
    const em = await emulator(seed(), { lateCommitMs: 1500 });
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1].map(P)) });
    mkdirSync(join(dir, '.dus-sync'), { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, '.dus-sync', 'journal.jsonl'), '{"type":"intent","id":"torn","ten', { mode: 0o600 });
    const runs = await applyUntilDone(dir, em.url, ['--settle-window', '3s'], 4);
    expect(runs.at(-1)!.code, transcript(runs)).toBe(0);
    await new Promise((r) => setTimeout(r, 1700));
    expect(names(em, 100)).toEqual(['p0', 'p1']);
    expect(appends(em)).toBe(1);
  }, 60_000);

  it('a 404 while a run settles an append in doubt is "absent" through the settle window, not "the action is gone"', async () => {
    const em = await emulator(seed(), { lateCommitMs: 1500 });
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1].map(P)) });
    const first = await apply(dir, em.url, ['--settle-window', '3s']);
    expect(first.code).toBe(1);
    // The second run's first read of the action (the one that settles) gets a passing 404.
    const url = await proxy(em.url, (method, path, n) => (method === 'GET' && path === '/api/v1/actions/100' && n === 1 ? { status: 404, body: { detail: 'Not found.' } } : undefined));
    const second = await apply(dir, url, ['--settle-window', '3s']);
    await new Promise((r) => setTimeout(r, 1700));
    expect(names(em, 100), second.stdout + second.stderr).toEqual(['p0', 'p1']);
    expect(appends(em)).toBe(1);
  }, 60_000);

  it('a server that stores an append and answers 400 is read back: the phase counts as applied and is not sent again', async () => {
    const em = await emulator(seed(), { hostile: { mode: 'huge', routes: ['append'], status: 400, bytes: 1024 } });
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1, 2].map(P)) });
    const runs = await applyUntilDone(dir, em.url, [], 3);
    expect(names(em, 100)).toEqual(['p0', 'p1', 'p2']);
    expect(appends(em), transcript(runs)).toBe(2);
    expect(runs[0]!.stdout + runs[0]!.stderr).toMatch(/answered 400 but a read shows the phase stored/);
  });

  it('reads that go backwards within a run (a lagging replica behind a balancer): a failure, not a silent skip', async () => {
    const em = await emulator(seed([{ id: 100, phases: [P(0), P(1)] }]));
    const stale = em.store.getAction('acme', 100)!;
    stale.phases = stale.phases.slice(0, 1);
    stale.phases_triggered = stale.phases_triggered.slice(0, 1);
    // The plan's read sees the primary ([p0, p1]); the read before the append sees the replica ([p0]).
    const url = await proxy(em.url, (method, path, n) => (method === 'GET' && path === '/api/v1/actions/100' && n >= 2 ? { status: 200, body: stale } : undefined));
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1, 2].map(P)) });
    const r = await apply(dir, url);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/reads go backwards/);
    expect(appends(em)).toBe(0);
  });

  it('reads that go backwards across runs: a phase dus-sync saw stored is not appended again when a later read lacks it', async () => {
    const em = await emulator(seed());
    const before = em.store.getAction('acme', 100)!;
    let lagging = false;
    // One API address for both runs (what dus-sync remembers is per API); the second run's reads come from a replica that lags.
    const url = await proxy(em.url, (method, path) => (lagging && method === 'GET' && path === '/api/v1/actions/100' ? { status: 200, body: before } : undefined));
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1].map(P)) });
    expect((await apply(dir, url)).code).toBe(0);
    expect(appends(em)).toBe(1);
    lagging = true;
    const r = await apply(dir, url);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/a read showed it stored at .*reads go backwards/);
    expect(appends(em)).toBe(1);
    expect(names(em, 100)).toEqual(['p0', 'p1']);
  });

  it('a cache that answers another tenant\'s action 42 for this tenant\'s: an error for that action, whatever answered first', async () => {
    const s = seed([{ id: 42, phases: [P(0), P(1)] }, { id: 43, phases: [P(0)] }]) as unknown as { tenants: Record<string, unknown> };
    s.tenants.initech = { api_key: 'initech-key-77aa', actions: [{ id: 42, status: 'pending', phases: [P(0)] }] };
    const em = await emulator(s as unknown as Seed);
    const url = await proxy(em.url, async (method, path, _n, headers) => {
      if (method !== 'GET' || path !== '/api/v1/actions/42') return undefined;
      const r = await fetch(`${em.url}${path}`, { headers: { ...headers, 'x-service-api-key': 'initech-key-77aa', 'x-service-tenant': 'initech' } });
      return { status: r.status, body: await r.json() };
    });
    const dir = repo({ 'action.yaml': actionDoc(42, [0, 1, 2].map(P)) + '---\n' + actionDoc(43, [0, 1].map(P)) });
    const r = await apply(dir, url);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/action 42.*tenant_id "initech", not "acme"/s);
    expect(names(em, 42)).toEqual(['p0', 'p1']);
    expect(names(em, 43)).toEqual(['p0', 'p1']);
  });

  it('the journal lives outside the repository: a git-sync style swap of the checkout keeps an append in doubt, which is settled, not sent again', async () => {
    const em = await emulator(seed(), { lateCommitMs: 1500 });
    const root = writeTree({ 'rev1/dus-sync.yaml': CONFIG, 'rev1/action.yaml': actionDoc(100, [0, 1].map(P)), 'rev2/dus-sync.yaml': CONFIG, 'rev2/action.yaml': actionDoc(100, [0, 1].map(P)) });
    symlinkSync('rev1', join(root, 'current'));
    const env = { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY };
    const args = ['--config', `${root}/current/dus-sync.yaml`, 'apply', '--auto-approve', '--settle-window', '3s'];
    const first = await runCli(args, { env });
    expect(first.code).toBe(1);
    expect(existsSync(join(root, 'rev1', '.dus-sync'))).toBe(false);
    // git-sync swaps the link to the next revision.
    symlinkSync('rev2', join(root, 'next'));
    renameSync(join(root, 'next'), join(root, 'current'));
    const second = await runCli(args, { env });
    await new Promise((r) => setTimeout(r, 1700));
    expect(second.stderr).toMatch(/in doubt since/);
    expect(names(em, 100)).toEqual(['p0', 'p1']);
    expect(appends(em)).toBe(1);
  }, 60_000);

  it('a lock or journal committed to the repository is not dus-sync\'s: apply is not wedged by it', async () => {
    const em = await emulator(seed());
    const dir = repo({
      'action.yaml': actionDoc(100, [0, 1].map(P)),
      '.dus-sync/apply.lock': JSON.stringify({ token: 'committed', pid: 1, host: 'someones-laptop', started: '2026-01-01T00:00:00Z' }),
      '.dus-sync/journal.jsonl': `${JSON.stringify({ type: 'intent', id: 'c1', tenant: 'acme', action_id: 100, index: 1, name: 'p1', digest: 'x', at: '2026-01-01T00:00:00Z' })}\n`,
    });
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve'], { env: { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY } });
    expect(r.code, r.stderr).toBe(0);
    expect(names(em, 100)).toEqual(['p0', 'p1']);
  });
});

describe('10. what a third tester broke', () => {
  it('one service, one state folder: `-c link/dus-sync.yaml` and `cd link` (a real path) meet the same journal, so an append in doubt is settled, not sent again', async () => {
    const em = await emulator(seed(), { lateCommitMs: 2000 });
    const root = writeTree({ 'rev1/dus-sync.yaml': CONFIG, 'rev1/action.yaml': actionDoc(100, [0, 1].map(P)) });
    symlinkSync('rev1', join(root, 'current'));
    const state = writeTree({});
    const env = { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY, XDG_STATE_HOME: state, DUS_SYNC_STATE_DIR: undefined };
    const first = await runCli(['--config', `${root}/current/dus-sync.yaml`, 'apply', '--auto-approve', '--settle-window', '4s'], { env });
    expect(first.code, first.stderr).toBe(1);
    // The second run finds its config from the working directory: the link resolved.
    const second = await runCli(['apply', '--auto-approve', '--settle-window', '4s'], { env, cwd: join(root, 'rev1') });
    await new Promise((r) => setTimeout(r, 2300));
    expect(second.stderr).toMatch(/in doubt since/);
    expect(names(em, 100), transcript([first, second])).toEqual(['p0', 'p1']);
    expect(appends(em)).toBe(1);
  }, 60_000);

  it('a server that stores an append, answers 400, and whose reads lag: the append stays in doubt, and no later run sends it again', async () => {
    const em = await emulator(seed(), { readLagMs: 2500, hostile: { mode: 'huge', routes: ['append'], status: 400, bytes: 256 } });
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1].map(P)) });
    const runs = await applyUntilDone(dir, em.url, ['--settle-window', '4s'], 4);
    await new Promise((r) => setTimeout(r, 2700));
    expect(names(em, 100), transcript(runs)).toEqual(['p0', 'p1']);
    expect(appends(em), transcript(runs)).toBe(1);
    expect(runs[0]!.code).toBe(1);
    expect(runs[0]!.stdout + runs[0]!.stderr).toMatch(/refused the append: .*400.*not sent again in this run/);
  }, 60_000);

  it('two journals in one state folder (one lock): the second is refused while the first holds an append in doubt', async () => {
    const em = await emulator(seed(), { lateCommitMs: 1500 });
    const dir = repo({ 'action.yaml': actionDoc(100, [0, 1].map(P)) });
    const env = { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY };
    const args = ['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--settle-window', '3s'];
    const first = await runCli([...args, '--journal', join(dir, 'state', 'journal.jsonl')], { env });
    expect(first.code).toBe(1);
    const second = await runCli([...args, '--journal', join(dir, 'state', 'ci.jsonl')], { env });
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/also holds .*journal\.jsonl \(1 append\(s\) in doubt\).*one journal; run with --journal/);
    expect(second.stderr).not.toMatch(STACK);
    await new Promise((r) => setTimeout(r, 1700));
    expect(names(em, 100)).toEqual(['p0', 'p1']);
    expect(appends(em)).toBe(1);
    // Settled through its own journal, the folder is usable again with either name.
    const third = await runCli([...args, '--journal', join(dir, 'state', 'journal.jsonl')], { env });
    expect(third.code, third.stderr).toBe(0);
    const fourth = await runCli([...args, '--journal', join(dir, 'state', 'ci.jsonl')], { env });
    expect(fourth.code, fourth.stderr).toBe(0);
    expect(appends(em)).toBe(1);
  }, 60_000);
});
