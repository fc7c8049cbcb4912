// What an operator sees of `watch`, run as the built CLI against the emulator from a git
// checkout: /metrics as promtool reads it, one JSON summary line per pass with the revision, the
// log flags, and an idle process that sleeps.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { waitFor } from './helpers.js';

const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');
const KEY = 'observe-e2e-secret-key-acme-0123456789';
const seed = {
  tenants: { acme: { api_key: KEY, bundles: [{ version: '1', firmwares: [
    { version_number: '2.4.1', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
  ] }], actions: [{ id: 42, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] }] } },
} as unknown as Seed;

const config = (interval: string, extra = '') => `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
watch:
  interval: ${interval}
${extra}`;
const DESIRED = `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec: { version_number: "2.4.1", uncompressed_size: 2048 }
---
apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 42
  phases:
    - { name: canary }
    - { name: wave-1 }
    - { name: wave-2 }
`;

let emulator: RunningEmulator | undefined;
let child: ChildProcess | undefined;
let dir: string | undefined;
afterEach(async () => {
  child?.kill('SIGKILL');
  await emulator?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  child = undefined; emulator = undefined; dir = undefined;
});

function write(path: string, text: string): void {
  mkdirSync(dirname(join(dir!, path)), { recursive: true });
  writeFileSync(join(dir!, path), text);
}
const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir, encoding: 'utf8' }).trim();

function startWatch(args: string[], cwd: string): { out: () => string; exited: Promise<number | null> } {
  let stderr = '';
  child = spawn(process.execPath, [CLI, 'watch', '--listen', '127.0.0.1:0', ...args], {
    cwd, env: { ...process.env, DUS_BASE_URL: emulator!.url, DUS_API_KEY_ACME: KEY, NO_COLOR: '1', DUS_SYNC_STATE_DIR: join(dir!, 'state') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<number | null>((done) => child!.on('exit', (code) => done(code)));
  return { out: () => stderr, exited };
}

async function metricsOf(base: string): Promise<string> {
  return (await fetch(`${base}/metrics`)).text();
}

const sample = (text: string, series: string): string | undefined => text.split('\n').find((l) => l.startsWith(`${series} `))?.slice(series.length + 1);
const hasPromtool = spawnSync('promtool', ['--version']).status === 0;
let scraped = '';

describe('watch as operators see it', () => {
  it('converges from a subfolder of a git checkout; metrics, one summary line per pass with the revision', async () => {
    emulator = await startEmulator({ seed });
    dir = mkdtempSync(join(tmpdir(), 'dus-observe-'));
    write('deploy/dus-sync.yaml', config('1s', 'resources: ["tenants/**/*.yaml"]\n'));
    write('deploy/tenants/acme.yaml', DESIRED);
    git('init', '-q');
    git('add', '.');
    git('commit', '-q', '-m', 'desired');
    const head = git('rev-parse', 'HEAD');
    const w = startWatch(['--log-format', 'json', '--log-level', 'debug'], join(dir, 'deploy', 'tenants'));
    await waitFor(() => /on (http:\/\/127\.0\.0\.1:\d+)/.test(w.out()), 10_000, 'the probes to listen');
    const base = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(w.out())![1]!;
    await waitFor(() => emulator!.store.getAction('acme', 42)!.phases.length === 3, 10_000, 'convergence');
    let metrics = '';
    // The pass that applies already leaves the gauges in sync (they tell the state after a pass);
    // a second pass (the 1 s interval) finds nothing to do: two summary lines.
    const passes = () => (w.out().match(/"msg":"reconcile /g) ?? []).length;
    await waitFor(() => (passes() >= 2 && /dus_sync_objects\{tenant="acme",state="in_sync"\} 2/.test(metrics)) || (void metricsOf(base).then((t) => { metrics = t; }), false), 10_000, 'an in-sync pass');

    expect(sample(metrics, `dus_sync_last_applied_info{tenant="acme",revision="${head}",dirty="false"}`)).toBe('1');
    for (const state of ['drift', 'conflict', 'error']) expect(sample(metrics, `dus_sync_objects{tenant="acme",state="${state}"}`), state).toBe('0');
    expect(sample(metrics, 'dus_sync_drift_objects{tenant="acme"}')).toBe('0');
    expect(metrics).toMatch(/dus_sync_build_info\{version="[^"]+",node="v\d+\.\d+\.\d+"\} 1/);
    expect(sample(metrics, 'dus_sync_apply_lock_held')).toBe('0');
    expect(sample(metrics, 'dus_sync_journal_intents_in_doubt')).toBe('0');
    expect(sample(metrics, 'dus_sync_suspended')).toBe('0');
    expect(metrics).toMatch(/dus_sync_api_request_duration_seconds_count\{method="POST",route="\/api\/v1\/actions\/\{id\}\/append_phase",status_class="2xx"\} 2/);
    expect(metrics).toMatch(/dus_sync_api_request_duration_seconds_count\{method="GET",route="\/api\/v1\/actions\/\{id\}",status_class="2xx"\} [1-9]/);
    expect(metrics).not.toMatch(/route="[^"]*(42|2\.4\.1)/);
    expect(metrics).toContain('dus_sync_changes_failed_total');

    scraped = metrics;

    child!.kill('SIGTERM');
    expect(await w.exited).toBe(0);
    child = undefined;
    const lines = w.out().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const summaries = lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('reconcile '));
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    // Exactly one summary per pass: only summaries carry the pass's result and trigger.
    expect(lines.filter((l) => 'result' in l && 'trigger' in l)).toEqual(summaries);
    for (const s of summaries) {
      expect(s).toMatchObject({ revision: head, dirty: false, durationMs: expect.any(Number) as number, inSync: expect.any(Number) as number, drift: expect.any(Number) as number, conflicts: 0, errors: 0 });
    }
    // The two appends wait until the files just written are quiet (--append-quiet): one pass or more.
    expect(summaries.every((s) => s.result === 'success')).toBe(true);
    expect(summaries.reduce((n, s) => n + (s.applied as number), 0)).toBe(3);
    expect(lines.some((l) => l.level === 'debug')).toBe(true);
    expect(w.out()).not.toContain(KEY);
  }, 60_000);

  it.skipIf(!hasPromtool)('promtool check metrics accepts that /metrics (skipped: promtool is not installed; Debian package prometheus)', () => {
    expect(scraped, 'the test above scraped /metrics').toContain('dus_sync_build_info');
    const check = spawnSync('promtool', ['check', 'metrics'], { input: scraped, encoding: 'utf8' });
    // prom-client's own default gauges named *_total are the only findings promtool may have.
    const findings = `${check.stdout}${check.stderr}`.split('\n').filter((l) => l.trim() !== '');
    expect(findings.filter((l) => !/^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/.test(l)), findings.join('\n')).toEqual([]);
    expect([0, 3]).toContain(check.status);
  });

  it.skipIf(!existsSync('/proc/self/status'))('sleeps when idle: the event loop is not woken every 10 ms (skipped: no /proc)', async () => {
    emulator = await startEmulator({ seed });
    dir = mkdtempSync(join(tmpdir(), 'dus-observe-'));
    write('dus-sync.yaml', config('1h'));
    write('tenants/acme.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.4.1" }\n');
    const w = startWatch(['--log-format', 'json'], dir);
    await waitFor(() => w.out().includes('"result":"success"'), 10_000, 'the first pass');
    await new Promise((r) => setTimeout(r, 500));
    // The main thread's voluntary context switches: each is a wake-up of the event loop.
    const switches = () => Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${child!.pid}/status`, 'utf8'))![1]);
    const before = switches();
    await new Promise((r) => setTimeout(r, 2000));
    const perSecond = (switches() - before) / 2;
    // About 100 a second with prom-client's default 10 ms sampling; a handful with 500 ms.
    expect(perSecond).toBeLessThan(40);
  }, 30_000);

  it('refuses a --log-level it does not know in one sentence, and writes readable lines with --log-format pretty', async () => {
    emulator = await startEmulator({ seed });
    dir = mkdtempSync(join(tmpdir(), 'dus-observe-'));
    const bad = spawnSync(process.execPath, [CLI, 'watch', '--log-level', 'verbose'], { cwd: dir, encoding: 'utf8' });
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim().split('\n')[0]).toMatch(/option '--log-level <level>' argument 'verbose' is invalid\. Allowed choices are trace, debug, info, warn, error\./);
    expect(bad.stderr).not.toMatch(/\n\s+at /);

    write('dus-sync.yaml', config('1h', '').replace('interval: 1h\n', 'interval: 1h\n  log_format: json\n  log_level: warn\n'));
    write('tenants/acme.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.4.1" }\n');
    // The flag wins over watch.log_format.
    const w = startWatch(['--log-format', 'pretty', '--log-level', 'info'], dir);
    await waitFor(() => w.out().includes('reconcile success'), 10_000, 'the first pass');
    expect(w.out().split('\n')[0]).not.toMatch(/^\{/);
    child!.kill('SIGTERM');
    expect(await w.exited).toBe(0);
    child = undefined;
    // From the config alone: JSON lines, and only warnings and errors.
    const q = startWatch([], dir);
    await new Promise((r) => setTimeout(r, 1500));
    child!.kill('SIGTERM');
    expect(await q.exited).toBe(0);
    child = undefined;
    expect(q.out()).not.toContain('reconcile success');
    for (const l of q.out().trim().split('\n').filter((x) => x !== '')) expect((JSON.parse(l) as { level: string }).level).toMatch(/warn|error/);
  }, 30_000);
});
