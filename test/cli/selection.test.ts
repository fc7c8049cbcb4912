// No silent no-ops: a --tenant, a --selector or a folder that matches nothing is an error that
// names what exists, for every command that reads the desired state; watch logs it, reports
// not ready and keeps running. Through the built CLI; no request is ever sent for these errors
// (the config's base_url is a closed port).
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { waitFor } from '../agent/helpers.js';
import { CLI, runCli, treesRemovedAfterAll } from '../e2e/helpers.js';

const CONFIG = `apiVersion: dus-sync/v1
kind: Config
base_url: http://127.0.0.1:1
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
  globex: { api_key_env: DUS_API_KEY_GLOBEX }
  initech: { api_key_env: DUS_API_KEY_INITECH }
resources: ["tenants/**/*.yaml"]
`;

const firmware = (tenant: string, version: string, team: string) =>
  `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: ${tenant}, labels: { team: ${team}, tier: prod } }\nspec: { version_number: "${version}", is_deactivated: false }\n`;

const REPO = {
  '.git/HEAD': '',
  'dus-sync.yaml': CONFIG,
  'tenants/acme/modem.yaml': firmware('acme', '1.0', 'radio'),
  'tenants/acme/sensor.yaml': firmware('acme', '1.1', 'sensors'),
  'tenants/globex/hub.yaml': firmware('globex', '2.0', 'platform'),
};

const ENV = { DUS_CONFIG: undefined, DUS_TENANT: undefined, DUS_BASE_URL: undefined, DUS_API_KEY: undefined, DUS_API_KEY_ACME: 'k-acme', DUS_API_KEY_GLOBEX: 'k-globex' };
const tree = treesRemovedAfterAll();
const run = (args: string[], cwd: string, env: Record<string, string | undefined> = {}) => runCli(args, { cwd, env: { ...ENV, ...env } });

const COMMANDS: string[][] = [['validate'], ['plan'], ['plan', '--detailed-exitcode'], ['apply', '--auto-approve'], ['status']];

describe('a --tenant that matches nothing', () => {
  it('is an error naming the tenants that have documents, with a did-you-mean, for validate, plan, apply and status', async () => {
    const repo = tree(REPO);
    for (const command of COMMANDS) {
      const r = await run(['--tenant', 'acmee', ...command], repo);
      expect(r.code, command.join(' ')).toBe(1);
      expect(r.stderr, command.join(' ')).toBe('error: no desired-state document is for tenant acmee; tenants with documents: acme, globex (did you mean acme?)\n');
      expect(r.stdout).toBe('');
    }
  });

  it('export: a tenant dus-sync.yaml does not list is refused before any request', async () => {
    const repo = tree(REPO);
    const r = await run(['export', '--tenant', 'globx', '--out', 'out'], repo);
    expect([r.code, r.stderr]).toEqual([1, 'error: tenant globx is not one of the tenants in dus-sync.yaml: acme, globex, initech (did you mean globex?); add it there first, with the environment variable or file of its API key\n']);
  });

  it('a tenant that dus-sync.yaml lists may have no documents yet: not an error', async () => {
    const repo = tree(REPO);
    const r = await run(['--tenant', 'initech', 'validate'], repo);
    expect([r.code, r.stdout]).toEqual([0, '3 files, 3 documents: valid\n']);
  });
});

describe('--selector', () => {
  it('a value that no document has is an error naming the values of that label', async () => {
    const repo = tree(REPO);
    for (const command of COMMANDS) {
      const r = await run(['-l', 'team=radioo', ...command], repo);
      expect(r.code, command.join(' ')).toBe(1);
      expect(r.stderr, command.join(' ')).toBe('error: no desired-state document has the label team=radioo; the values of team are: platform, radio, sensors (did you mean radio?)\n');
    }
  });

  it('within the selected tenants, and a label key that no document has', async () => {
    const repo = tree(REPO);
    const inTenant = await run(['-t', 'globex', '-l', 'team=radio', 'plan'], repo);
    expect(inTenant.stderr).toBe('error: no desired-state document of tenant globex has the label team=radio; the values of team are: platform\n');
    const noKey = await run(['-l', 'teem=radio', 'validate'], repo);
    expect(noKey.stderr).toBe('error: no desired-state document has the label teem=radio: none has a label "teem"; label keys in use: team, tier (did you mean team?)\n');
    const together = await run(['-l', 'team=radio', '-l', 'tier=prod', '-t', 'globex', 'validate'], repo);
    expect(together.code).toBe(1);
    const none = await run(['-l', 'team=radio', '-l', 'tier=dev', 'validate'], repo);
    expect(none.stderr).toBe('error: no desired-state document has the label tier=dev; the values of tier are: prod\n');
  });

  it('labels that match one by one but never together are an error too', async () => {
    const repo = tree({ ...REPO, 'tenants/acme/dev.yaml': firmware('acme', '1.2', 'platform').replace('tier: prod', 'tier: dev') });
    const r = await run(['-l', 'team=radio', '-l', 'tier=dev', 'plan'], repo);
    expect([r.code, r.stderr]).toEqual([1, 'error: no desired-state document has all the labels team=radio, tier=dev; each matches some documents on its own, but none matches all of them\n']);
  });

  it('the same key twice with two values is refused (it kept the last one); the same pair twice is fine', async () => {
    const repo = tree(REPO);
    const r = await run(['-l', 'team=radio', '-l', 'team=sensors', 'validate'], repo);
    expect([r.code, r.stdout]).toEqual([1, '']);
    expect(r.stderr).toBe('error: --selector gives the label team twice (team=radio and team=sensors); every selector must match and a label has one value, so no document could match both: give team once\n');
    const same = await run(['-l', 'team=radio', '-l', 'team=radio', 'validate'], repo);
    expect(same.code).toBe(0);
  });
});

describe('an empty folder', () => {
  it('validate: no files is an error naming the folder and what was searched, not "0 files: valid"', async () => {
    const repo = tree({ '.git/HEAD': '', 'dus-sync.yaml': CONFIG, 'docs/readme.yaml': 'x: 1\n' });
    const r = await run(['validate'], repo);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: no desired-state files found in ${repo} (searched for tenants/**/*.yaml relative to dus-sync.yaml); `
      + 'check --dir and "resources" in dus-sync.yaml, or write the live state of a tenant into files with dus-sync export --tenant NAME --out DIR\n');
    const plan = await run(['plan', '--detailed-exitcode'], repo);
    expect(plan.code).toBe(1);
  });

  it('without resources globs it says that every YAML file was looked for; files without documents are no better', async () => {
    const repo = tree({ '.git/HEAD': '', 'dus-sync.yaml': CONFIG.replace('resources: ["tenants/**/*.yaml"]\n', '') });
    expect((await run(['validate'], repo)).stderr).toContain(`no desired-state files found in ${repo} (searched for every *.yaml and *.yml file below it, dot folders and node_modules skipped)`);
    writeFileSync(join(repo, 'empty.yaml'), '# nothing yet\n---\n');
    const r = await run(['validate'], repo);
    expect([r.code, r.stderr]).toEqual([1, `error: the file found in ${repo} holds no desired-state document (kind: Firmware or Action); check --dir and "resources" in dus-sync.yaml, or write the live state of a tenant into files with dus-sync export --tenant NAME --out DIR\n`]);
  });
});

describe('status without declared actions', () => {
  it('is an error in both formats, not "No actions are declared." and exit 0', async () => {
    const repo = tree(REPO);
    const message = 'no actions are declared, so there is no rollout to show; status reads the actions that Action documents declare '
      + '(dus-sync export --tenant NAME --action ID --out DIR writes one from the live state)';
    for (const format of ['text', 'json']) {
      const r = await run(['status', '--format', format], repo);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`error: ${message}\n`);
      // Never "[]": nothing, or (where a failed --format json leaves an error object) the same sentence.
      if (format === 'text' || r.stdout === '') expect(r.stdout).toBe('');
      else expect((JSON.parse(r.stdout) as { error: { message: string } }).error.message).toBe(message);
    }
  });
});

// ---------------------------------------------------------------- watch

const KEY = 'selection-test-key-acme-0123456789';
const seed = {
  tenants: { acme: { api_key: KEY, bundles: [{ version: '2024.06', firmwares: [{ version_number: '1.0', component_name: 'modem', uncompressed_size: 10, is_deactivated: false, dependencies: [] }] }], actions: [] } },
} as unknown as Seed;

let child: ChildProcess | undefined;
let emulator: RunningEmulator | undefined;
afterEach(async () => {
  child?.kill('SIGKILL');
  child = undefined;
  await emulator?.close();
  emulator = undefined;
});

function watch(cwd: string, args: string[], env: Record<string, string>): { output: () => string; exited: Promise<number | null> } {
  let stderr = '';
  child = spawn(process.execPath, [CLI, ...args, 'watch', '--listen', '127.0.0.1:0', '--interval', '1s'], {
    cwd, env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<number | null>((done) => child!.on('exit', (code) => done(code)));
  return { output: () => stderr, exited };
}

async function readyz(stderr: string): Promise<{ status: number; text: string }> {
  const base = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)![1]!;
  const res = await fetch(`${base}/readyz`);
  return { status: res.status, text: await res.text() };
}

describe('watch', () => {
  it('in an empty repository: logs the error, is not ready, keeps running, and recovers when files arrive', async () => {
    emulator = await startEmulator({ seed });
    const repo = tree({ '.git/HEAD': '', 'dus-sync.yaml': CONFIG.replace('http://127.0.0.1:1', emulator.url) });
    const w = watch(repo, [], { DUS_API_KEY_ACME: KEY });
    await waitFor(() => (w.output().match(/no desired-state files found in/g) ?? []).length >= 2, 15_000, 'two passes to report the empty repository');
    expect(w.output()).toContain('"result":"invalid-config"');
    const notReady = await readyz(w.output());
    expect(notReady.status).toBe(503);
    expect(notReady.text).toContain('no desired-state files found in');
    expect(child!.exitCode).toBeNull();

    writeFileSync(join(repo, 'dus-sync.yaml'), CONFIG.replace('http://127.0.0.1:1', emulator.url).replace('resources: ["tenants/**/*.yaml"]\n', ''));
    writeFileSync(join(repo, 'modem.yaml'), firmware('acme', '1.0', 'radio'));
    let ready = notReady;
    for (let i = 0; i < 100 && ready.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      ready = await readyz(w.output());
    }
    expect(ready.status, w.output()).toBe(200);
    child!.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  });

  it('with a --tenant that matches nothing: the same, naming the tenants', async () => {
    const repo = tree(REPO);
    const w = watch(repo, ['--tenant', 'acmee'], { DUS_API_KEY_ACME: KEY });
    await waitFor(() => w.output().includes('no desired-state document is for tenant acmee; tenants with documents: acme, globex (did you mean acme?)'), 15_000, 'the tenant error');
    expect((await readyz(w.output())).status).toBe(503);
    await new Promise((r) => setTimeout(r, 1500));
    expect(child!.exitCode).toBeNull();
    child!.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  });
});
