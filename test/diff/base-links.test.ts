// `diff --base` reads the base commit's files by the working tree's rules: a folder or a file
// reached through a committed symbolic link is read at the base as it is read in the working
// tree (it used to be the link's own text at the base: "everything counts as added" for any
// repository with a link), a link that changed shows what changed behind it, a link that loops or
// leads out of the repository at the base is named, and a file name with a line break is read.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCli } from './built-cli.js';

let scratch: string;
let repo: string;

const CONFIG = `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
resources: ["tenants/**/*.yaml"]
`;

const firmware = (version: string, size: number) => `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "${version}"
  component_name: modem
  is_deactivated: false
  uncompressed_size: ${size}
`;

function git(...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd: repo, encoding: 'utf8' });
}

function write(path: string, text: string): void {
  mkdirSync(dirname(join(repo, path)), { recursive: true });
  writeFileSync(join(repo, path), text);
}

function link(target: string, path: string): void {
  mkdirSync(dirname(join(repo, path)), { recursive: true });
  symlinkSync(target, join(repo, path));
}

function commit(): void {
  git('add', '-A');
  git('commit', '-q', '-m', 'base');
}

async function diff(...args: string[]) {
  const { cli } = await buildCli();
  const r = spawnSync(process.execPath, [cli, ...args.filter((a) => a.startsWith('--follow')), 'diff', '--base', 'HEAD', ...args.filter((a) => !a.startsWith('--follow'))], {
    cwd: repo, env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1' }, encoding: 'utf8', timeout: 20_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeEach(() => {
  scratch = realpathSync(mkdtempSync(join(tmpdir(), 'dus-base-links-')));
  repo = join(scratch, 'repo');
  mkdirSync(repo);
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: repo });
  write('dus-sync.yaml', CONFIG);
});
afterEach(() => rmSync(scratch, { recursive: true, force: true }));

describe('diff --base through committed symbolic links', () => {
  it('a folder link and a file link, unchanged since the base: no differences', async () => {
    write('shared/modem/modem.yaml', firmware('2.4.1', 100));
    write('shared/one/boot.yaml', firmware('1.0.0', 5));
    link('../../shared/modem', 'tenants/acme/firmwares');
    link('../../shared/one/boot.yaml', 'tenants/acme/boot.yaml');
    // A chain: a link to a link to a folder, and `..` taken after the link it follows.
    link('../shared/hop', 'tenants/chain');
    link('modem/../one', 'shared/hop');
    commit();
    const r = await diff();
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('No differences in the desired state.');
    expect(r.code).toBe(0);
  });

  it('a folder link pointed elsewhere: the files behind it are compared', async () => {
    write('shared/v1/modem.yaml', firmware('2.4.1', 100));
    write('shared/v2/modem.yaml', firmware('2.4.1', 200));
    link('../../shared/v1', 'tenants/acme/firmwares');
    commit();
    unlinkSync(join(repo, 'tenants/acme/firmwares'));
    link('../../shared/v2', 'tenants/acme/firmwares');
    const r = await diff('--format', 'json');
    expect(r.code).toBe(2);
    const doc = JSON.parse(r.stdout) as { entries: { key: string; op: string }[]; warnings: unknown[] };
    expect(doc.entries.map((e) => [e.key, e.op])).toEqual([['2.4.1', 'change']]);
    expect(r.stdout).toContain('"before": 100');
    expect(r.stdout).toContain('"after": 200');
  });

  it('a file whose name holds a line break is read at the base too', async () => {
    write('tenants/acme/odd\nname.yaml', firmware('2.4.1', 100));
    commit();
    const r = await diff();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('a link that loops at the base is named, not followed for ever; the base counts as invalid', async () => {
    link('b.yaml', 'tenants/acme/a.yaml');
    link('a.yaml', 'tenants/acme/b.yaml');
    commit();
    unlinkSync(join(repo, 'tenants/acme/a.yaml'));
    unlinkSync(join(repo, 'tenants/acme/b.yaml'));
    write('tenants/acme/a.yaml', firmware('2.4.1', 100));
    const r = await diff();
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/the desired state at HEAD has 2 problem\(s\), e\.g\. tenants\/acme\/a\.yaml:1:1: at [0-9a-f]{12} this symbolic link leads back to itself/);
  });

  it('a link out of the repository: refused at the base as in the working tree, read from the disk with --follow-external-symlinks', async () => {
    writeFileSync(join(scratch, 'fw.yaml'), firmware('2.4.1', 100));
    link('../../../fw.yaml', 'tenants/acme/ext.yaml');
    write('tenants/acme/own.yaml', firmware('3.0.0', 1));
    commit();
    const refused = await diff();
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('outside the repository folder');
    const followed = await diff('--follow-external-symlinks');
    expect(followed.stderr).toBe('');
    expect(followed.code).toBe(0);
    // The working tree drops the link: the base read the file behind it, so it is removed.
    unlinkSync(join(repo, 'tenants/acme/ext.yaml'));
    const removed = await diff('--follow-external-symlinks');
    expect(removed.code).toBe(2);
    expect(removed.stdout).toMatch(/- firmware "2\.4\.1"/);
  });

  it('many links to one folder: each file is read once at the base, no "defined twice"', async () => {
    for (let i = 0; i < 20; i++) write(`shared/fw/f${i}.yaml`, firmware(`1.0.${i}`, i + 1));
    for (let i = 0; i < 50; i++) link('../../shared/fw', `tenants/acme/l${i}`);
    commit();
    const r = await diff();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});
