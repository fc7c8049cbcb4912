// Finding the config as git finds its root (--config, DUS_CONFIG, then upwards from the folder
// the command is about, ending at the top of a git work tree), --dir as the resources folder,
// and kind: Config never read as a desired-state document. Through the built CLI.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, treesRemovedAfterAll } from '../e2e/helpers.js';

const CONFIG = `apiVersion: dus-sync/v1
kind: Config
base_url: http://127.0.0.1:1
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
  globex: { api_key_env: DUS_API_KEY_GLOBEX }
resources: ["tenants/**/*.yaml"]
`;

const firmware = (tenant: string, version: string) =>
  `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: ${tenant} }\nspec: { version_number: "${version}", is_deactivated: false }\n`;

/** A repository as a user has it: the config, tenants/, an emulator seed that is not a resource. */
const REPO = {
  '.git/HEAD': 'ref: refs/heads/main\n',
  'dus-sync.yaml': CONFIG,
  'tenants/acme/firmwares.yaml': firmware('acme', '1.0'),
  'tenants/acme/more.yaml': firmware('acme', '1.1'),
  'tenants/globex/firmwares.yaml': firmware('globex', '2.0'),
  'emulator-seed.yaml': 'tenants:\n  acme: { api_key: dev-key-acme }\n',
};

// No DUS_* from the developer's shell: each test says what it sets.
const CLEAN = { DUS_CONFIG: undefined, DUS_TENANT: undefined, DUS_BASE_URL: undefined, DUS_API_KEY: undefined };
const run = (args: string[], cwd: string, env: Record<string, string | undefined> = {}) => runCli(args, { cwd, env: { ...CLEAN, ...env } });

const tree = treesRemovedAfterAll();

describe('finding dus-sync.yaml', () => {
  it('searches upwards from the working folder, and reads the whole repository from a subfolder', async () => {
    const repo = tree(REPO);
    const r = await run(['validate'], join(repo, 'tenants', 'acme'));
    expect([r.code, r.stdout, r.stderr]).toEqual([0, '3 files, 3 documents: valid\n', '']);
  });

  it('stops at the first dus-sync.yaml found on the way up', async () => {
    const outer = tree({ 'dus-sync.yaml': CONFIG.replace('default_tenant: acme', 'default_tenant: globex'), 'inner/.git/HEAD': '', 'inner/dus-sync.yaml': CONFIG, 'inner/tenants/a.yaml': firmware('acme', '1.0'), 'inner/tenants/deep/b.yaml': firmware('acme', '1.1') });
    const r = await run(['validate'], join(outer, 'inner', 'tenants', 'deep'));
    expect([r.code, r.stdout]).toEqual([0, '2 files, 2 documents: valid\n']);
  });

  it('does not search above the top of a git work tree: a dus-sync.yaml there is not versioned with the repository', async () => {
    const outer = tree({ 'dus-sync.yaml': CONFIG, 'repo/.git/HEAD': '', 'repo/sub/f.yaml': firmware('acme', '1.0') });
    const r = await run(['validate'], join(outer, 'repo', 'sub'));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`error: no dus-sync.yaml found in ${join(outer, 'repo', 'sub')} (or above, up to ${join(outer, 'repo')}, the top of its git repository); `
      + 'pass --config FILE, or run dus-sync init to write one (a single tenant needs none: pass --dir DIR, with DUS_TENANT and DUS_BASE_URL set)\n');
  });

  it('without a config, --dir or a single-tenant environment, says so instead of reading every YAML file below the working folder', async () => {
    const files: Record<string, string> = { '.git/HEAD': '' };
    for (let i = 0; i < 50; i++) files[`junk/${i}.yaml`] = 'services: { web: { image: nginx } }\n';
    const dir = tree(files);
    for (const command of [['validate'], ['plan'], ['status'], ['apply', '--auto-approve'], ['export', '--out', 'x', '--tenant', 'acme']]) {
      const r = await run(command, dir);
      expect(r.code, command[0]).toBe(1);
      expect(r.stderr, command[0]).toBe(`error: no dus-sync.yaml found in ${dir} (the top of its git repository); pass --config FILE, or run dus-sync init to write one (a single tenant needs none: pass --dir DIR, with DUS_TENANT and DUS_BASE_URL set)\n`);
      expect(r.stdout).toBe('');
    }
  });

  it('a single tenant needs no config: --dir, or DUS_TENANT in the working folder', async () => {
    const dir = tree({ '.git/HEAD': '', 'desired/f.yaml': firmware('solo', '1.0') });
    expect((await run(['--dir', 'desired', 'validate'], dir)).stdout).toBe('1 file, 1 document: valid\n');
    expect((await run(['validate'], join(dir, 'desired'), { DUS_TENANT: 'solo' })).stdout).toBe('1 file, 1 document: valid\n');
  });

  it('DUS_CONFIG names the config; --config wins over it; a DUS_CONFIG that names nothing is one sentence', async () => {
    const repo = tree(REPO);
    const elsewhere = tree({ '.git/HEAD': '' });
    const viaEnv = await run(['validate'], elsewhere, { DUS_CONFIG: join(repo, 'dus-sync.yaml') });
    expect([viaEnv.code, viaEnv.stdout]).toEqual([0, '3 files, 3 documents: valid\n']);
    const other = tree({ 'dus-sync.yaml': CONFIG, 'tenants/x.yaml': firmware('acme', '9.9') });
    const flagWins = await run(['--config', join(other, 'dus-sync.yaml'), 'validate'], elsewhere, { DUS_CONFIG: join(repo, 'dus-sync.yaml') });
    expect(flagWins.stdout).toBe('1 file, 1 document: valid\n');
    const missing = await run(['validate'], elsewhere, { DUS_CONFIG: 'nope/dus-sync.yaml' });
    expect([missing.code, missing.stderr]).toEqual([1, 'error: the config file nope/dus-sync.yaml named by DUS_CONFIG does not exist; check DUS_CONFIG\n']);
  });
});

describe('--dir is the resources folder', () => {
  it('from another folder, --dir DIR uses the config above DIR and reads only its resources: neither the config nor the emulator seed', async () => {
    const repo = tree(REPO);
    const elsewhere = tree({ '.git/HEAD': '' });
    const r = await run(['--dir', repo, 'validate'], elsewhere);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, '3 files, 3 documents: valid\n', '']);
  });

  it('narrows the config\'s resources to the files below it (it was ignored when a config existed)', async () => {
    const repo = tree(REPO);
    const acme = await run(['--dir', 'tenants/acme', 'validate'], repo);
    expect([acme.code, acme.stdout]).toEqual([0, '2 files, 2 documents: valid\n']);
    const globex = await run(['--dir', join(repo, 'tenants/globex'), 'validate'], repo);
    expect([globex.code, globex.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('outside the config\'s folder (with --config), every YAML file below --dir is read', async () => {
    const repo = tree(REPO);
    const desired = tree({ 'a.yaml': firmware('acme', '3.0'), 'sub/b.yml': firmware('globex', '3.1') });
    const r = await run(['--config', join(repo, 'dus-sync.yaml'), '--dir', desired, 'validate'], repo);
    expect([r.code, r.stdout]).toEqual([0, '2 files, 2 documents: valid\n']);
  });

  it('an empty --dir is an error naming the folder and what was searched', async () => {
    const repo = tree({ ...REPO, 'tenants/initech/README.md': '' });
    const r = await run(['--dir', 'tenants/initech', 'validate'], repo);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: no desired-state files found in ${join(repo, 'tenants/initech')} (searched for tenants/**/*.yaml relative to dus-sync.yaml, below tenants/initech); `
      + 'check --dir and "resources" in dus-sync.yaml, or write the live state of a tenant into files with dus-sync export --tenant NAME --out DIR\n');
  });
});

describe('kind: Config among the resources', () => {
  it('the config in use is never read as a resource, even when the globs match it', async () => {
    const repo = tree({ '.git/HEAD': '', 'dus-sync.yaml': CONFIG.replace('resources: ["tenants/**/*.yaml"]\n', ''), 'f.yaml': firmware('acme', '1.0') });
    const r = await run(['validate'], repo);
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('another config (another environment\'s, a nested repository\'s) is an error that says how to go either way', async () => {
    const repo = tree({ ...REPO, 'tenants/staging/dus-sync.yaml': CONFIG });
    const r = await run(['validate'], repo);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('tenants/staging/dus-sync.yaml:1:1: this is a dus-sync config (kind: Config), not a desired-state document, and not the config in use (dus-sync.yaml); '
      + 'to use it, pass --config tenants/staging/dus-sync.yaml; otherwise keep it out of the resources: add "!tenants/staging/dus-sync.yaml" to resources in dus-sync.yaml\n\n1 problem in 1 file\n');
    // The advice works: excluded, the rest is valid.
    writeFileSync(join(repo, 'dus-sync.yaml'), CONFIG.replace('resources: ["tenants/**/*.yaml"]', 'resources: ["tenants/**/*.yaml", "!tenants/staging/dus-sync.yaml"]'));
    expect((await run(['validate'], repo)).stdout).toBe('3 files, 3 documents: valid\n');
  });

  it('without a config in use, it says to pass --config', async () => {
    const dir = tree({ '.git/HEAD': '', 'desired/f.yaml': firmware('acme', '1.0'), 'desired/sub/other.yaml': CONFIG });
    const r = await run(['--dir', 'desired', 'validate'], dir, { DUS_TENANT: 'acme' });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('desired/sub/other.yaml:1:1: this is a dus-sync config (kind: Config), not a desired-state document; to use it, pass --config desired/sub/other.yaml');
  });
});
