// A saved plan is the approval, as in Terraform: `plan --out F` then `apply F` applies without a
// terminal and without --auto-approve (the hint plan --out prints works in CI), and is still
// refused when stale or over the safety limits. A fresh plan without a terminal is still refused.
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { CLI, runCli } from './helpers.js';
import { env, KEY, repo, seed } from './habits-fixture.js';

let emulator: RunningEmulator | undefined;
afterEach(async () => { await emulator?.close(); emulator = undefined; });

describe('apply PLANFILE needs no --auto-approve', () => {
  it('applies a saved plan with no terminal and no --auto-approve, as the hint of plan --out says', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const plan = await runCli([...c, 'plan', '--out', `${dir}/saved.plan`], { env: env(emulator.url) });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stderr).toContain(`apply it with: dus-sync apply ${dir}/saved.plan`);

    const apply = await runCli([...c, 'apply', `${dir}/saved.plan`, '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stderr).toContain(`applying the saved plan ${dir}/saved.plan as approved when it was made`);
    expect(apply.stdout).toMatch(/Apply: 4 applied, 0 failed, 0 skipped\./);
    expect(emulator.store.getAction('acme', 42)!.phases.map((p) => p.name)).toEqual(['canary', 'wave-1', 'all']);
    expect(apply.stdout + apply.stderr).not.toContain(KEY);
  });

  it('does not ask on a terminal either, as Terraform does not for a saved plan', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    expect((await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--out', `${dir}/saved.plan`], { env: env(emulator.url) })).code).toBe(0);
    // script(1) gives apply a terminal on stdin and stderr; nothing is ever typed into it.
    const cmd = `"${process.execPath}" "${CLI}" --config "${dir}/dus-sync.yaml" apply "${dir}/saved.plan" --journal "${dir}/j.jsonl"`;
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: { ...process.env, NO_COLOR: '1', ...env(emulator!.url) }, stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('close', (code) => { clearTimeout(timer); resolve({ code, out }); });
    });
    expect(r.code, r.out).toBe(0);
    expect(r.out).not.toMatch(/\[y\/N\]/);
    expect(r.out).toMatch(/Apply: 4 applied, 0 failed, 0 skipped\./);
    expect(emulator.store.getAction('acme', 42)!.phases).toHaveLength(3);
  });

  it('plan --out \'\' (an unset variable in CI) is refused before any read, not a plan shown and silently not saved', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--out', ''], { env: env(emulator.url) });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('--out was given an empty file name (an unset variable?)');
    expect(r.stdout).toBe('');
    expect(emulator.stats.requests).toBe(0);
  });

  it('still refuses a stale saved plan, writing nothing', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const c = ['--config', `${dir}/dus-sync.yaml`];
    expect((await runCli([...c, 'plan', '--out', `${dir}/saved.plan`], { env: env(emulator.url) })).code).toBe(0);
    emulator.store.updateFirmware('acme', '2.4.1', { uncompressed_size: 5 });
    const writes = emulator.stats.writes;
    const apply = await runCli([...c, 'apply', `${dir}/saved.plan`, '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(apply.code).toBe(1);
    expect(apply.stderr).toMatch(/plan is stale: .*2\.4\.1/);
    expect(emulator.stats.writes).toBe(writes);
  });

  it('still refuses a saved plan over the safety limits unless --allow-large', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo('safety: { max_changes: 2 }\n');
    const c = ['--config', `${dir}/dus-sync.yaml`];
    // plan saves it, says apply would refuse it, and exits 1.
    expect((await runCli([...c, 'plan', '--out', `${dir}/saved.plan`], { env: env(emulator.url) })).code).toBe(1);
    const refused = await runCli([...c, 'apply', `${dir}/saved.plan`, '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/max_changes|--allow-large/);
    expect(emulator.stats.writes).toBe(0);
    const allowed = await runCli([...c, 'apply', `${dir}/saved.plan`, '--allow-large', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(allowed.code, allowed.stderr).toBe(0);
  });

  it('a fresh plan without a terminal still needs --auto-approve', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/there is no terminal to ask on; .*--auto-approve/);
    expect(emulator.stats.writes).toBe(0);
  });
});
