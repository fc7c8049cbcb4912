// `dus-sync init`: a first dus-sync.yaml that every other command accepts, never over an existing
// one without --force, and the journal kept out of git. Through the built CLI.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { runCli, treesRemovedAfterAll } from '../e2e/helpers.js';

const ENV = { DUS_CONFIG: undefined, DUS_TENANT: undefined, DUS_BASE_URL: undefined, DUS_API_KEY: undefined };
const tree = treesRemovedAfterAll();
const run = (args: string[], cwd: string) => runCli(args, { cwd, env: ENV });
const FIRMWARE = 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec: { version_number: "1.0" }\n';

describe('dus-sync init', () => {
  it('writes a commented dus-sync.yaml with the flags\' values, and touches nothing else (the journal lives outside the repository)', async () => {
    const repo = tree({ '.git/HEAD': '', 'deploy/.keep': '' });
    const cwd = join(repo, 'deploy');
    const r = await run(['init', '--base-url', 'https://updates.example.com', '--tenant', 'acme'], cwd);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('Wrote dus-sync.yaml.\nNext:\n'
      + '  - export DUS_API_KEY_ACME=<its key>, then bring the live state into files: dus-sync export --tenant acme --out tenants/acme --action ID\n'
      + '  - then: dus-sync validate, and dus-sync plan (it should show no changes)\n');
    const text = readFileSync(join(cwd, 'dus-sync.yaml'), 'utf8');
    expect(parse(text)).toEqual({
      apiVersion: 'dus-sync/v1', kind: 'Config', base_url: 'https://updates.example.com', default_tenant: 'acme',
      tenants: { acme: { api_key_env: 'DUS_API_KEY_ACME' } }, resources: ['tenants/**/*.yaml', 'tenants/**/*.yml'],
      safety: { max_changes: 100, max_deactivations: 10, settle_window: '30s' }, watch: { interval: '5m' }, suspend: false,
    });
    // Every section says what it is for.
    for (const section of ['base_url', 'default_tenant', 'tenants', 'resources', 'safety', 'settle_window', 'watch']) {
      expect(text, section).toMatch(new RegExp(`#[^\\n]*\\n\\s*${section}:`));
    }
    expect(existsSync(join(repo, '.gitignore'))).toBe(false);

    // Every other command takes it as it is: no files yet is an error, a tenant's file is valid.
    const noFiles = await run(['validate'], cwd);
    expect([noFiles.code, noFiles.stderr]).toEqual([1, expect.stringContaining('no desired-state files found') as unknown]);
    mkdirSync(join(cwd, 'tenants', 'acme'), { recursive: true });
    writeFileSync(join(cwd, 'tenants', 'acme', 'f.yaml'), FIRMWARE);
    const valid = await run(['validate'], cwd);
    expect([valid.code, valid.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('the config it writes validates once a tenant\'s files are there', async () => {
    const repo = tree({ '.git/HEAD': '' });
    expect((await run(['init', '-t', 'acme', '-t', 'globex'], repo)).code).toBe(0);
    const config = parse(readFileSync(join(repo, 'dus-sync.yaml'), 'utf8')) as Record<string, unknown>;
    expect(config.tenants).toEqual({ acme: { api_key_env: 'DUS_API_KEY_ACME' }, globex: { api_key_env: 'DUS_API_KEY_GLOBEX' } });
    // With several tenants none is the default: each document names its own.
    expect(config.default_tenant).toBeUndefined();
    expect(config.base_url).toBeUndefined();
    mkdirSync(join(repo, 'tenants', 'globex'), { recursive: true });
    writeFileSync(join(repo, 'tenants', 'globex', 'f.yaml'), FIRMWARE.replace('metadata: {}', 'metadata: { tenant: globex }'));
    const r = await run(['validate'], repo);
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('refuses to replace an existing dus-sync.yaml unless --force', async () => {
    const repo = tree({ '.git/HEAD': '', 'dus-sync.yaml': '# mine\napiVersion: dus-sync/v1\nkind: Config\n' });
    const r = await run(['init'], repo);
    expect([r.code, r.stdout, r.stderr]).toEqual([1, '', 'error: dus-sync.yaml already exists; nothing was written (pass --force to replace it)\n']);
    expect(readFileSync(join(repo, 'dus-sync.yaml'), 'utf8')).toBe('# mine\napiVersion: dus-sync/v1\nkind: Config\n');
    const forced = await run(['init', '--force'], repo);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toMatch(/^Wrote dus-sync\.yaml \(replaced the one that was there\)\./);
    expect(readFileSync(join(repo, 'dus-sync.yaml'), 'utf8')).not.toContain('# mine');
  });

  it('--dir is where the config goes; an existing .gitignore is left as it is', async () => {
    const repo = tree({ '.git/HEAD': '', '.gitignore': 'node_modules/\n*.log' });
    const first = await run(['--dir', 'ops', 'init'], repo);
    expect(first.stdout).toMatch(/^Wrote ops\/dus-sync\.yaml\.\n/);
    expect(readFileSync(join(repo, '.gitignore'), 'utf8')).toBe('node_modules/\n*.log');
  });

  it('refuses a --base-url that is not one, and a tenant name it cannot write plainly', async () => {
    const repo = tree({ '.git/HEAD': '' });
    const url = await run(['init', '--base-url', 'updates.example.com'], repo);
    expect([url.code, url.stderr]).toEqual([1, 'error: --base-url takes the API\'s address, starting with https:// (or http://), not "updates.example.com"\n']);
    const tenant = await run(['init', '--tenant', 'ac me'], repo);
    expect(tenant.code).toBe(1);
    expect(tenant.stderr).toContain('init takes tenant names of letters, digits');
  });
});
