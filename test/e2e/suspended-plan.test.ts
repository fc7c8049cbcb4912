// plan with `suspend: true` in the config says so first, in every format, so that nobody reads a
// normal-looking plan and expects apply to run; apply still refuses every write.
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { runCli } from './helpers.js';
import { env, repo, seed } from './habits-fixture.js';

let emulator: RunningEmulator | undefined;
afterEach(async () => { await emulator?.close(); emulator = undefined; });

const SENTENCE = 'apply and watch write nothing while the config has suspend: true; this plan is what they would do once it is removed.';

describe('plan while suspended', () => {
  it('says it is suspended at the top of text and markdown, and "suspended": true in JSON', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo('suspend: true\n');
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const text = await runCli([...c, 'plan', '--detailed-exitcode'], { env: env(emulator.url) });
    expect(text.code, text.stderr).toBe(2); // drift is still drift
    expect(text.stdout.split('\n')[0]).toBe(`Suspended: ${SENTENCE}`);
    expect(text.stdout).toMatch(/Plan: 2 firmware updates, 2 phase appends\./);

    const markdown = await runCli([...c, 'plan', '--format', 'markdown'], { env: env(emulator.url) });
    expect(markdown.code).toBe(0);
    expect(markdown.stdout).toMatch(/^## dus-sync plan\n\n> \[!CAUTION\]\n> \*\*Suspended\*\*: apply and watch write nothing while the config has `suspend: true`;/);

    const json = await runCli([...c, 'plan', '--format', 'json'], { env: env(emulator.url) });
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { suspended?: boolean }).suspended).toBe(true);

    const apply = await runCli([...c, 'apply', '--auto-approve', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(apply.code).toBe(1);
    expect(apply.stderr).toMatch(/writes are suspended by "suspend: true"/);
    expect(emulator.stats.writes).toBe(0);
  });

  it('says nothing of the kind when not suspended', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const text = await runCli([...c, 'plan'], { env: env(emulator.url) });
    expect(text.stdout).not.toMatch(/Suspended/);
    const json = await runCli([...c, 'plan', '--format', 'json'], { env: env(emulator.url) });
    expect(JSON.parse(json.stdout)).not.toHaveProperty('suspended');
    const markdown = await runCli([...c, 'plan', '--format', 'markdown'], { env: env(emulator.url) });
    expect(markdown.stdout).not.toMatch(/Suspended/);
  });
});
