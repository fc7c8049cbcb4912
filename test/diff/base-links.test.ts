// `diff --base` reads the base commit's files by the working tree's rules: a folder or a file
// reached through a committed symbolic link is read at the base as it is read in the working
// tree (it used to be the link's own text at the base: "everything counts as added" for any
// repository with a link), a link that changed shows what changed behind it, a link that loops or
// leads out of the repository at the base is named, and a file name with a line break is read.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
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

/** The built CLI run in `cwd` with `args`, in a pull request's environment (no key). */
async function runIn(cwd: string, ...args: string[]) {
  const { cli } = await buildCli();
  const r = spawnSync(process.execPath, [cli, ...args], { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1' }, encoding: 'utf8', timeout: 20_000 });
  return { code: r.status, status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `diff --base HEAD` in the repository, with `args` (a --follow… flag goes before the command). */
function diff(...args: string[]) {
  return runIn(repo, ...args.filter((a) => a.startsWith('--follow')), 'diff', '--base', 'HEAD', ...args.filter((a) => !a.startsWith('--follow')));
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

  // A breaker's round (a helper given the promises and the built CLI):
  it('a file link that leaves the repository folder (the config\'s) but not git is refused at the base, neither read nor quoted', async () => {
    // The config in a subfolder: the repository is that folder, though git's top is above it.
    writeFileSync(join(repo, 'fw-outside.yaml'), firmware('9.9.9', 1).replace('modem', 'secretcomponent'));
    mkdirSync(join(repo, 'sub'));
    writeFileSync(join(repo, 'sub', 'dus-sync.yaml'), CONFIG);
    write('sub/tenants/a.yaml', firmware('1.0.0', 1));
    link('../../fw-outside.yaml', 'sub/tenants/o.yaml');
    commit();
    unlinkSync(join(repo, 'sub/tenants/o.yaml'));
    const r = await runIn(join(repo, 'sub'), 'diff', '--base', 'HEAD');
    expect(r.stdout + r.stderr).not.toContain('secretcomponent');
    expect(r.stdout + r.stderr).not.toContain('9.9.9');
    expect(r.stderr).toMatch(/tenants\/o\.yaml:1:1: this symbolic link leads to .*fw-outside\.yaml, outside the repository folder .*sub; dus-sync reads only files inside it/);
  });

  it('links resolved as the kernel does: `..` after a link in an absolute target, out of the repository and back in', async () => {
    write('x.yaml', firmware('1.0.0', 1));
    write('a/x.yaml', firmware('2.0.0', 2));
    write('a/b/keep', 'k\n');
    write('c/y.yaml', firmware('3.0.0', 3));
    link('a/b', 'lnk');
    // a/b/../x.yaml is a/x.yaml to the kernel, x.yaml to a path joined as text.
    link(join(repo, 'lnk/../x.yaml'), 'tenants/acme/abs.yaml');
    // Out to the repository's parent and back into it by its name.
    link(`../../../${basename(repo)}/x.yaml`, 'tenants/acme/back.yaml');
    // Through a link of the disk outside the repository, to it.
    symlinkSync(repo, join(scratch, 'alias'));
    link(join(scratch, 'alias', 'c', 'y.yaml'), 'tenants/acme/alias.yaml');
    commit();
    const same = await diff();
    expect(same.stderr).toBe('');
    expect(same.code).toBe(0);
    // A change behind the link that leaves and comes back: shown.
    write('x.yaml', firmware('1.0.0', 7));
    const changed = await diff();
    expect(changed.code).toBe(2);
    expect(changed.stdout).toContain('uncompressed_size: 1 → 7');
  });

  it('dus-sync.yaml as a link: the base\'s config is the one its link named at the base', async () => {
    unlinkSync(join(repo, 'dus-sync.yaml'));
    writeFileSync(join(repo, 'cfgA.yaml'), CONFIG);
    writeFileSync(join(repo, 'cfgB.yaml'), CONFIG.replace('tenants/**/*.yaml', 'other/**/*.yaml'));
    link('cfgA.yaml', 'dus-sync.yaml');
    write('tenants/a.yaml', firmware('1.0.0', 1));
    write('other/b.yaml', firmware('2.0.0', 2));
    commit();
    unlinkSync(join(repo, 'dus-sync.yaml'));
    link('cfgB.yaml', 'dus-sync.yaml');
    const r = await diff('--format', 'json');
    expect(r.code).toBe(2);
    const doc = JSON.parse(r.stdout) as { entries: { key: string; op: string }[] };
    expect(doc.entries.map((e) => [e.key, e.op]).sort()).toEqual([['1.0.0', 'remove'], ['2.0.0', 'add']]);
  });

  it('a submodule the resources reach into is a warning, not a silent "added"; a link into one is named', async () => {
    const inner = join(scratch, 'inner');
    mkdirSync(join(inner, 'data'), { recursive: true });
    writeFileSync(join(inner, 'data', 'z.yaml'), firmware('5.0.0', 5));
    execFileSync('git', ['init', '-q'], { cwd: inner });
    execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'i', '--allow-empty'], { cwd: inner });
    execFileSync('git', ['add', '-A'], { cwd: inner });
    execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'i'], { cwd: inner });
    write('tenants/acme/a.yaml', firmware('1.0.0', 1));
    git('-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', inner, 'tenants/mod');
    commit();
    const r = await diff();
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('the resources reach into the submodule tenants/mod, whose files are another repository\'s: diff --base does not read them at HEAD');
    link('../mod/data/z.yaml', 'tenants/acme/z.yaml');
    writeFileSync(join(repo, 'dus-sync.yaml'), CONFIG.replace('["tenants/**/*.yaml"]', '["tenants/acme/*.yaml"]'));
    commit();
    const named = await diff();
    expect(named.stderr).toMatch(/tenants\/acme\/z\.yaml:1:1: at [0-9a-f]{12} this leads into the submodule tenants\/mod, whose files are another repository's/);
  });

  it('a partial clone: never fetched from its remote, one sentence', async () => {
    write('tenants/acme/b.yaml', firmware('1.1.0', 1));
    commit();
    write('tenants/acme/b.yaml', firmware('1.2.0', 1));
    commit();
    git('config', 'uploadpack.allowFilter', 'true');
    const clone = join(scratch, 'clone');
    execFileSync('git', ['clone', '-q', '--filter=blob:none', `file://${repo}`, clone]);
    const missing = () => execFileSync('git', ['rev-list', '--objects', '--missing=print', '--all'], { cwd: clone, encoding: 'utf8' }).split('\n').filter((l) => l.startsWith('?')).length;
    expect(missing()).toBeGreaterThan(0);
    const before = missing();
    const r = await runIn(clone, 'diff', '--base', 'HEAD~1');
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('partial clone');
    expect(missing()).toBe(before);
  });

  // A second breaker's round:
  it('a link through .git or a folder git holds nothing of, with `..` after it, is followed as the kernel does', async () => {
    write('real/a.yaml', firmware('1.0.0', 1));
    mkdirSync(join(repo, 'empty'));
    link('../.git/../real/a.yaml', 'tenants/a.yaml');
    link('../empty/../real', 'tenants/r');
    commit();
    const r = await diff();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('dus-sync.yaml as a link out of its folder at the base is not read, nor quoted: a warning, the working config for both', async () => {
    mkdirSync(join(repo, 'sub'));
    write('other/private.yaml', 'kind: Config\nresources: ["TOP-SECRET-hunter2/{a"]\n');
    write('sub/tenants/a.yaml', firmware('1.0.0', 1));
    symlinkSync('../other/private.yaml', join(repo, 'sub', 'dus-sync.yaml'));
    commit();
    unlinkSync(join(repo, 'sub', 'dus-sync.yaml'));
    writeFileSync(join(repo, 'sub', 'dus-sync.yaml'), CONFIG);
    commit();
    const r = await runIn(join(repo, 'sub'), 'diff', '--base', 'HEAD~1');
    expect(r.stdout + r.stderr).not.toContain('TOP-SECRET');
    expect(r.stderr).toMatch(/the config file at HEAD~1 is not read \(this config file is a link to .*other\/private\.yaml, outside the folder that holds it; pass --follow-external-symlinks to read it\); the working one is used for both sides/);
    expect(r.status).toBe(0);
  });

  it('a sparse checkout: the files it leaves out are not "removed"', async () => {
    write('tenants/in/a.yaml', firmware('1.0.0', 1));
    write('tenants/out/b.yaml', firmware('2.0.0', 2));
    commit();
    git('sparse-checkout', 'set', '--no-cone', '/dus-sync.yaml', '/tenants/in/');
    const r = await diff();
    expect(r.stdout).toContain('No differences in the desired state.');
    expect(r.code).toBe(0);
  });

  it("the base is the config's repository's, whatever --dir names: not a nested repository's history, nor one a link leads to", async () => {
    writeFileSync(join(repo, 'dus-sync.yaml'), CONFIG.replace('["tenants/**/*.yaml"]', '["**/*.yaml"]'));
    write('.gitignore', 'vendor/\n');
    commit();
    const vendor = join(repo, 'vendor');
    mkdirSync(vendor);
    const inVendor = (...args: string[]) => execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.invalid', ...args], { cwd: vendor });
    inVendor('init', '-q');
    writeFileSync(join(vendor, 'a.yaml'), firmware('1.0.0', 1));
    inVendor('add', '-A');
    inVendor('commit', '-qm', 'v');
    writeFileSync(join(vendor, 'a.yaml'), firmware('1.0.1', 1));
    const r = await diff('--format', 'json');
    const withDir = await runIn(repo, '--config', 'dus-sync.yaml', '--dir', 'vendor', 'diff', '--base', 'HEAD', '--format', 'json');
    for (const out of [r.stdout, withDir.stdout]) {
      const doc = JSON.parse(out) as { entries: { key: string; op: string }[] };
      expect(doc.entries.map((e) => [e.key, e.op])).toEqual([['1.0.1', 'add']]);
    }
  });

  // A third breaker's round:
  it('a skip-worktree flag set by hand on a file that is there leaves it in the base', async () => {
    write('tenants/acme/a.yaml', firmware('1.0.0', 1));
    write('tenants/acme/b.yaml', firmware('1.0.1', 1));
    commit();
    git('update-index', '--skip-worktree', 'tenants/acme/b.yaml');
    const r = await diff();
    expect(r.stdout).toContain('No differences in the desired state.');
    expect(r.code).toBe(0);
  });

  it('through an untracked folder and out again by any spelling; a folder added since the base is not at the base', async () => {
    write('real/a.yaml', firmware('1.0.0', 1));
    write('.gitignore', 'ign/\n');
    write('ign/sub/junk', 'j\n');
    link('../../ign/./../real/a.yaml', 'tenants/acme/l.yaml');
    link('../../ign/sub/../..//real/a.yaml', 'tenants/acme/m.yaml');
    link('../../.git/./../real', 'tenants/acme/n');
    commit();
    const same = await diff();
    expect(same.stderr).toBe('');
    expect(same.code).toBe(0);
    // A link through a folder the change adds dangles at the base.
    link('../../newdir/../real/a.yaml', 'tenants/acme/o.yaml');
    commit();
    write('newdir/n.txt', 'n\n');
    git('add', 'newdir');
    git('commit', '-qm', 'newdir');
    const before = await diff('--format', 'json');
    const r = await runIn(repo, 'diff', '--base', 'HEAD~1');
    expect(JSON.parse(before.stdout)).toMatchObject({ entries: [] });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/tenants\/acme\/o\.yaml:1:1: at [0-9a-f]{12} this symbolic link points to a file that the commit does not hold/);
  });

  // A fifth breaker's round: a key file the base names, which the change stops naming, is still a key.
  it('a key file the base config names is redacted in diff and review even when the change stops naming it', async () => {
    const KEY = '*AbCdEf0123456789';
    write('.gitignore', 'keys/\n');
    writeFileSync(join(repo, 'dus-sync.yaml'), CONFIG.replace('acme: { api_key_env: DUS_API_KEY_ACME }', 'acme: { api_key_file: keys/acme.key }').replace('default_tenant', 'base_url: http://127.0.0.1:9\ndefault_tenant'));
    write('tenants/acme/m.yaml', firmware('2.4.1', 100));
    commit();
    git('tag', 'base');
    write('keys/acme.key', `${KEY}\n`);
    writeFileSync(join(repo, 'dus-sync.yaml'), readFileSync(join(repo, 'dus-sync.yaml'), 'utf8').replace('api_key_file: keys/acme.key', 'api_key_env: DUS_API_KEY_ACME'));
    link('../../keys/acme.key', 'tenants/acme/k.yaml');
    commit();
    for (const args of [['diff', '--base', 'base'], ['review', '--base', 'base', '--platform', 'none']]) {
      const r = await runIn(repo, ...args);
      expect(r.stdout + r.stderr, args[0]).toContain('REDACTED');
      expect(r.stdout + r.stderr, args[0]).not.toContain('AbCdEf0123');
    }
  });
});

