// `diff --base` end to end: a real git repository, the built CLI, no server and no key.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, type PrivateBuild } from './built-cli.js';

let cli: PrivateBuild;
let repo: string;

const CONFIG = `apiVersion: dus-sync/v1
kind: Config
base_url: https://updates.invalid
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
resources: ["tenants/**/*.yaml"]
`;

const firmware = (minVersion: string, extra = '') => `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "2.4.1"
  component_name: modem
  is_deactivated: false
  dependencies:
    - { component_name: bootloader, min_version: "${minVersion}" }
${extra}`;

const ACTION = `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 42
  phases:
    - { name: canary, trigger_on: { after_minutes: 60 }, info: { percent: 1 } }
`;

function git(...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd: repo, encoding: 'utf8' });
}

function write(path: string, text: string): void {
  mkdirSync(join(repo, path, '..'), { recursive: true });
  writeFileSync(join(repo, path), text);
}

/** The environment of a fork's pull request: no key, no base URL, nothing listening. */
function env(): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1' };
  return out;
}

function diff(...args: string[]) {
  const r = spawnSync(process.execPath, [cli.cli, 'diff', ...args], { cwd: repo, env: env(), encoding: 'utf8', timeout: 20_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  cli = await buildCli();
  repo = mkdtempSync(join(tmpdir(), 'dus-sync-git-'));
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: repo });
  write('dus-sync.yaml', CONFIG);
  write('tenants/acme/modem.yaml', firmware('1.2.0'));
  write('tenants/acme/actions.yaml', ACTION);
  write('README.md', 'not a resource\n');
  git('add', '.');
  git('commit', '-q', '-m', 'acme');
});

afterAll(() => {
  cli?.cleanup();
  if (repo) rmSync(repo, { recursive: true, force: true });
});

describe('diff --base', () => {
  it('exits 0 when the working tree equals the ref', () => {
    const r = diff('--base', 'HEAD');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('No differences in the desired state.');
  });

  it('names the firmware and the new min_version, exit 2, with no server and no key', () => {
    write('tenants/acme/modem.yaml', firmware('1.3.0'));
    try {
      const r = diff('--base', 'HEAD');
      expect(r.code).toBe(2);
      expect(r.stdout).toContain('firmware "2.4.1" (modem)');
      expect(r.stdout).toContain('~ bootloader min_version "1.2.0" → "1.3.0"');
      const md = diff('--base', 'HEAD', '--format', 'markdown');
      expect(md.code).toBe(2);
      expect(md.stdout).toMatch(/^## dus-sync diff/);
      expect(md.stdout).toContain('"1.3.0"');
      const json = diff('--base', 'HEAD', '--format', 'json');
      const doc = JSON.parse(json.stdout) as { entries: { key: string; dependencies: { items: unknown[] } }[]; base: { commit: string } };
      expect(doc.entries[0]!.key).toBe('2.4.1');
      expect(doc.entries[0]!.dependencies.items).toEqual([{ op: 'change', component_name: 'bootloader', before: '1.2.0', after: '1.3.0' }]);
      expect(doc.base.commit).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      write('tenants/acme/modem.yaml', firmware('1.2.0'));
    }
  });

  it('lists appended phases from a subfolder run with --config', () => {
    write('tenants/acme/actions.yaml', `${ACTION}    - { name: wave-1, trigger_on: { min_success_rate: 0.98 }, info: { percent: 10 } }\n`);
    try {
      const r = spawnSync(process.execPath, [cli.cli, '--config', '../../dus-sync.yaml', 'diff', '--base', 'HEAD'], { cwd: join(repo, 'tenants/acme'), env: env(), encoding: 'utf8' });
      expect(r.status).toBe(2);
      expect(r.stdout).toContain('+ phase 1 "wave-1"');
    } finally {
      write('tenants/acme/actions.yaml', ACTION);
    }
  });

  it('exits 1 with the validation issue when the working tree is invalid', () => {
    write('tenants/acme/modem.yaml', firmware('1.2.0').replace('"2.4.1"', '2.10'));
    try {
      const r = diff('--base', 'HEAD');
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/tenants\/acme\/modem\.yaml:\d+:\d+: .*quote/i);
    } finally {
      write('tenants/acme/modem.yaml', firmware('1.2.0'));
    }
  });

  it('warns when the base is invalid and counts everything as added', () => {
    write('tenants/acme/modem.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nspec: { version_number: 1.10 }\n');
    git('commit', '-q', '-am', 'broken');
    write('tenants/acme/modem.yaml', firmware('1.2.0'));
    try {
      const r = diff('--base', 'HEAD');
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^warning: the desired state at HEAD has \d+ problem/m);
      expect(r.stdout).toContain('+ firmware "2.4.1" (modem)');
      expect(r.stdout).toContain('+ action 42');
      expect(r.stdout).toContain('is invalid');
    } finally {
      git('reset', '-q', '--hard', 'HEAD~1');
    }
  });

  it('exits 1 with one sentence for an unknown ref, and refuses option-like refs', () => {
    const r = diff('--base', 'no-such-branch');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the git ref "no-such-branch" was not found/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    const o = diff('--base=--output=/tmp/x');
    expect(o.code).toBe(1);
    expect(o.stderr).toMatch(/is not a git ref/);
  });

  it('exits 1 with one sentence outside a git repository', () => {
    const plain = mkdtempSync(join(tmpdir(), 'dus-sync-nogit-'));
    try {
      writeFileSync(join(plain, 'dus-sync.yaml'), CONFIG);
      const r = spawnSync(process.execPath, [cli.cli, 'diff', '--base', 'HEAD'], { cwd: plain, env: { ...env(), GIT_CEILING_DIRECTORIES: tmpdir() }, encoding: 'utf8' });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/^error: diff --base needs a git repository, and .* is not inside one/);
    } finally {
      rmSync(plain, { recursive: true, force: true });
    }
  });

  it('uses the resources globs of the config at the base ref', () => {
    write('dus-sync.yaml', CONFIG.replace('resources: ["tenants/**/*.yaml"]', 'resources: ["tenants/**/actions.yaml"]'));
    git('commit', '-q', '-am', 'narrow resources');
    write('dus-sync.yaml', CONFIG);
    try {
      // At the base only the action is a resource, so the firmware shows up as added.
      const r = diff('--base', 'HEAD');
      expect(r.code).toBe(2);
      expect(r.stdout).toContain('+ firmware "2.4.1"');
      expect(r.stdout).not.toContain('action 42');
    } finally {
      git('reset', '-q', '--hard', 'HEAD~1');
    }
  });
});

describe('readDesiredAtRef', () => {
  it('reads odd file names exactly, and no config text when the config is not in the commit', async () => {
    const { readDesiredAtRef } = await import('../../src/load/git.js');
    const dir = join(repo, 'odd [dir]*');
    mkdirSync(dir);
    writeFileSync(join(dir, 'a b ü.yaml'), 'x: 1\n');
    writeFileSync(join(dir, 'new-config.yaml'), 'kind: Config\n');
    git('add', '.');
    git('commit', '-q', '-m', 'odd names');
    writeFileSync(join(dir, 'untracked.yaml'), 'y: 2\n');
    try {
      let seen: readonly string[] = [];
      const r = await readDesiredAtRef({
        dir, ref: 'HEAD', configFile: join(dir, 'untracked.yaml'),
        select: (paths, configText) => { seen = paths; expect(configText).toBeUndefined(); return paths.filter((p) => p.startsWith('a ')); },
      });
      expect(seen).toEqual(['a b ü.yaml', 'new-config.yaml']);
      expect(r.files).toEqual([{ path: 'a b ü.yaml', text: 'x: 1\n' }]);
      expect(r.commit).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      git('reset', '-q', '--hard', 'HEAD~1');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
