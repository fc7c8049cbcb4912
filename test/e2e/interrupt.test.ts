// SIGINT and SIGTERM in the middle of apply, sent for real to the built CLI against an emulator
// with latency: no new writes, the ones in flight finish, the journal is settled, the report is
// printed, the lock is released, exit 130 or 143; the next apply finishes the job, nothing twice.
import { existsSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { CLI, runCli, writeTree } from './helpers.js';

const KEY = 'k-8c1d0e5f2a7b-q9z';
const APPEND = 'POST /actions/{id}/append_phase';
const NAMES = Array.from({ length: 10 }, (_, i) => `p${i}`);

let em: RunningEmulator | undefined;
afterEach(async () => { await em?.close(); em = undefined; });

function seed(): Seed {
  return { tenants: { acme: { api_key: KEY, actions: [{ id: 7, status: 'pending', phases: [{ name: 'p0', trigger_on: {}, info: {} }] }] } } } as unknown as Seed;
}

function repo(): string {
  return writeTree({
    'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n',
    'action.yaml': `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 7\n  phases:\n${NAMES.map((n) => `    - { name: ${n} }`).join('\n')}\n`,
  });
}

function start(dir: string, url: string, extra: string[] = []) {
  const child = spawn(process.execPath, [CLI, '--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', ...extra], {
    env: { ...process.env, NO_COLOR: '1', DUS_BASE_URL: url, DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(dir, '.dus-sync') }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string; at: number }>((resolve) => {
    child.on('close', (code) => resolve({ code, stdout, stderr, at: Date.now() }));
  });
  return { child, done };
}

async function untilAppends(n: number): Promise<void> {
  for (let i = 0; i < 400 && (em!.stats.byRoute[APPEND] ?? 0) < n; i++) await new Promise((r) => setTimeout(r, 10));
}

const names = () => em!.store.getAction('acme', 7)!.phases.map((p) => p.name);

/** The next apply on the same state folder: it must exit 0; its result, for what each test checks besides. */
async function applyAgain(dir: string, extra: string[] = []) {
  const again = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', ...extra], { env: { DUS_BASE_URL: em!.url, DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(dir, '.dus-sync') } });
  expect(again.code, again.stderr).toBe(0);
  return again;
}

describe('apply interrupted by a signal', () => {
  it.each([['SIGINT', 130], ['SIGTERM', 143]] as const)('%s mid-apply: in-flight write finishes, report printed, lock released, exit %i; the next apply converges, nothing twice', async (signal, exitCode) => {
    em = await startEmulator({ seed: seed(), faults: { latencyMs: 250 } });
    const dir = repo();
    const run = start(dir, em.url);
    await untilAppends(2);
    run.child.kill(signal);
    const r = await run.done;
    expect(r.code, r.stderr).toBe(exitCode);
    expect(r.stderr).toMatch(new RegExp(`${signal} received: no new writes are sent`));
    expect(r.stdout).toMatch(/Apply: \d+ applied, 0 failed, \d+ skipped\./);
    expect(r.stdout).toMatch(/skipped: skipped because the apply was interrupted/);
    const applied = Number(/Apply: (\d+) applied/.exec(r.stdout)![1]);
    expect(applied).toBeGreaterThanOrEqual(1);
    // The append in flight finished and was counted; nothing is left in doubt; the lock is gone.
    expect(names()).toHaveLength(1 + applied);
    expect(existsSync(join(dir, '.dus-sync', 'apply.lock'))).toBe(false);
    expect(readFileSync(join(dir, '.dus-sync', 'journal.jsonl'), 'utf8')).toBe('');

    em.faults.latencyMs = 0;
    await applyAgain(dir);
    expect(names()).toEqual(NAMES);
    expect(em.stats.byRoute[APPEND]).toBe(NAMES.length - 1);
  });

  it('standard output closed by its reader (apply -y | head): a stop like SIGPIPE\'s, exit 141, the lock released and the journal settled, not exit 0 with the lock held', async () => {
    em = await startEmulator({ seed: seed(), faults: { latencyMs: 20 } });
    const dir = repo();
    const run = start(dir, em.url);
    // As head does: read the first lines, then close the pipe.
    run.child.stdout.once('data', () => run.child.stdout.destroy());
    const r = await run.done;
    expect(r.code, r.stderr).toBe(141);
    expect(r.stderr).toMatch(/standard output or error was closed by its reader \(SIGPIPE\)/);
    expect(existsSync(join(dir, '.dus-sync', 'apply.lock'))).toBe(false);
    expect(readFileSync(join(dir, '.dus-sync', 'journal.jsonl'), 'utf8')).toBe('');
    const before = names().length;
    const again = await applyAgain(dir);
    expect(again.stderr).not.toMatch(/stale lock/);
    expect(before).toBeGreaterThanOrEqual(1);
    expect(names()).toEqual(NAMES);
    expect(em.stats.byRoute[APPEND]).toBe(NAMES.length - 1);
  });

  it('standard error closed mid-apply (apply -y 2>&1 >/dev/null | head): the same stop, mid-writes: exit 141, the lock released, nothing in doubt, nothing twice', async () => {
    em = await startEmulator({ seed: seed(), faults: { latencyMs: 250 } });
    const dir = repo();
    const run = start(dir, em.url);
    await untilAppends(2);
    run.child.stderr.destroy();
    const r = await run.done;
    expect(r.code).toBe(141);
    const applied = names().length - 1;
    expect(applied).toBeGreaterThanOrEqual(1);
    expect(applied).toBeLessThan(NAMES.length - 1);
    expect(existsSync(join(dir, '.dus-sync', 'apply.lock'))).toBe(false);
    expect(readFileSync(join(dir, '.dus-sync', 'journal.jsonl'), 'utf8')).toBe('');
    em.faults.latencyMs = 0;
    const again = await applyAgain(dir);
    expect(again.stderr).not.toMatch(/stale lock|in doubt/);
    expect(names()).toEqual(NAMES);
    expect(em.stats.byRoute[APPEND]).toBe(NAMES.length - 1);
  });

  it('plan --detailed-exitcode with its standard output closed still exits 2: the plan finishes, its output is dropped', async () => {
    em = await startEmulator({ seed: seed() });
    const dir = repo();
    const child = spawn(process.execPath, [CLI, '--config', `${dir}/dus-sync.yaml`, 'plan', '--detailed-exitcode'], {
      env: { ...process.env, NO_COLOR: '1', DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const code = await new Promise<number | null>((done) => child.on('close', done));
    expect(code, stderr).toBe(2);
    expect(stderr).not.toMatch(/EPIPE|Error/);
  });

  it('a second signal exits at once, before the grace period; the next apply settles what was in flight', async () => {
    em = await startEmulator({ seed: seed(), faults: { latencyMs: 1500 } });
    const dir = repo();
    const run = start(dir, em.url, ['--grace', '30s', '--settle-window', '1s']);
    await untilAppends(1);
    run.child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 100));
    const second = Date.now();
    run.child.kill('SIGINT');
    const r = await run.done;
    expect(r.code).toBe(130);
    expect(r.at - second).toBeLessThan(1000);
    expect(r.stderr).toMatch(/SIGINT received again: exiting now/);
    // Let the append in flight land, then a new run settles it from the journal: nothing twice.
    await new Promise((res) => setTimeout(res, 1600));
    em.faults.latencyMs = 0;
    await applyAgain(dir, ['--settle-window', '1s']);
    expect(names()).toEqual(NAMES);
    expect(new Set(names()).size).toBe(NAMES.length);
  });

  it('Ctrl-C at the approval prompt writes nothing and exits 130', async () => {
    em = await startEmulator({ seed: seed() });
    const dir = repo();
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const cmd = `"${process.execPath}" "${CLI}" --config "${dir}/dus-sync.yaml" apply`;
      const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: { ...process.env, NO_COLOR: '1', DUS_BASE_URL: em!.url, DUS_API_KEY_ACME: KEY }, stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      let sent = false;
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (!sent && /\[y\/N\]/.test(out)) { sent = true; child.stdin.write('\x03'); }
      });
      child.on('close', (code) => resolve({ code, out }));
    });
    expect(r.code, r.out).toBe(130);
    expect(r.out).toMatch(/interrupted by SIGINT; nothing was written/);
    expect(em.stats.writes).toBe(0);
  });
});
