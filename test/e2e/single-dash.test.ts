// Terraform's single-dash long flags are refused with the two-dash form before anything runs:
// commander would read `-out=plan.json` as `-o ut=plan.json` and save the plan under that name.
// Short flags, their bundles and their values keep working.
import { existsSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { runCli } from './helpers.js';
import { env, repo, seed } from './habits-fixture.js';

let emulator: RunningEmulator | undefined;
afterEach(async () => { await emulator?.close(); emulator = undefined; });

describe('single-dash long options', () => {
  it.each([
    [['plan', '-out=plan.json'], '-out=plan.json', '--out=plan.json'],
    [['plan', '-detailed-exitcode'], '-detailed-exitcode', '--detailed-exitcode'],
    [['apply', '-auto-approve'], '-auto-approve', '--auto-approve'],
    [['plan', '-format=json'], '-format=json', '--format=json'],
    [['-config', 'x.yaml', 'plan'], '-config', '--config'],
    [['-no-color', 'validate'], '-no-color', '--no-color'],
    [['emulator', '-port', '0'], '-port', '--port'],
  ])('%j is refused with "did you mean", before anything runs', async (args, token, meant) => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const before = readdirSync(dir).sort();
    const r = await runCli(args, { cwd: dir, env: env(emulator.url), timeoutMs: 20_000 });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`error: ${token}: long options take two dashes (one dash starts short options, as in -t NAME); did you mean ${meant}? Nothing was run\n`);
    expect(emulator.stats.requests).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(before);
    expect(existsSync(`${dir}/ut=plan.json`)).toBe(false);
  });

  it('keeps short flags, bundles, values that start with a dash, and operands after --', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    // -t acme, -tacme, -c FILE, -l k=v with a value that spells an option, -o FILE.
    const ok = await runCli(['-c', `${dir}/dus-sync.yaml`, '-tacme', 'plan', '-o', `${dir}/p.json`], { env: env(emulator.url) });
    expect(ok.code, ok.stderr).toBe(0);
    expect(existsSync(`${dir}/p.json`)).toBe(true);
    const selector = await runCli(['-c', `${dir}/dus-sync.yaml`, '-t', 'acme', '-l', '-debug=x', 'validate'], { env: env(emulator.url) });
    expect(selector.stderr).not.toMatch(/did you mean/);
    const value = await runCli(['-c', `${dir}/dus-sync.yaml`, '--tenant', '-out', 'validate'], { env: env(emulator.url) });
    expect(value.stderr).not.toMatch(/did you mean/);
    const operand = await runCli(['-c', `${dir}/dus-sync.yaml`, 'schema', '--', '-out'], { env: env(emulator.url) });
    expect(operand.stderr).not.toMatch(/did you mean/);
    expect(operand.stderr).toMatch(/there is no schema "-out"/);
  });
});
