// A breaker's find: dus-sync.yaml is the repository's own, so a pull request can change its
// `resources`; a glob that climbs out of the repository (`../../home/ci/.config/*.yaml`) read
// those files and quoted their values in issues. Such a glob is refused at once, as a link out
// is, unless --follow-external-symlinks (Argo CD and kustomize keep to the repository the same way).
import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, treesRemovedAfterAll } from '../e2e/helpers.js';

const tree = treesRemovedAfterAll();
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd, encoding: 'utf8' });
/** A repository of everything in `repo`, in one commit: the base of `diff --base HEAD`. */
const commitAll = (repo: string): void => {
  git(repo, 'init', '-q');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'base');
};

const firmware = (v: string, tenant = 'acme') => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: ${tenant} }\nspec:\n  version_number: "${v}"\n  component_name: modem\n  is_deactivated: false\n  uncompressed_size: 1\n  dependencies: []\n`;

describe('a resources glob that climbs out of the repository', () => {
  const top = tree({
    'repo/dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: {}\nresources: ["tenants/**/*.yaml", "../ci-home/config/*.yaml"]\n',
    'repo/tenants/a.yaml': firmware('1.0.0'),
    'ci-home/config/creds.yaml': firmware('6.6.6', 's3cr3t-token-from-outside'),
  });
  const repo = join(top, 'repo');

  for (const cmd of [['validate'], ['validate', '--format', 'json'], ['validate', '--format', 'github']]) {
    it(`is refused with one sentence, nothing outside read: ${cmd.join(' ')}`, async () => {
      const r = await runCli(cmd, { cwd: repo, env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined } });
      expect(r.code).toBe(1);
      const out = r.stdout + r.stderr;
      expect(out).not.toContain('s3cr3t');
      expect(out).not.toContain('6.6.6');
      expect(out).toMatch(/dus-sync\.yaml: the resources glob "\.\.\/ci-home\/config\/\*\.yaml" reaches outside the repository folder .*--follow-external-symlinks/);
      expect(out).not.toMatch(/\n\s+at /);
    });
  }

  it('is read with --follow-external-symlinks, which the operator passes, not the repository', async () => {
    const r = await runCli(['validate', '--follow-external-symlinks'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/unknown tenant "s3cr3t-token-from-outside"/);
  });
});

// A breaker's find: `..` after a glob's fixed part (`{../x}/*.yaml`) matched nothing outside, but
// read the repository's own x/ (picomatch's brace held a name no walk lists), silently: not what
// was written. Refused whatever the flags, naming the glob and where `..` may go.
describe('a resources glob holding ".." after its fixed part', () => {
  for (const glob of ['{../x}/*.yaml', 'tenants/{a,..}/*.yaml', '*/../x/*.yaml', '@(..)/x/*.yaml', '!{../x}/b.yaml']) {
    const top = tree({
      'repo/dus-sync.yaml': `apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: {}\nresources: ["tenants/**/*.yaml", ${JSON.stringify(glob)}]\n`,
      'repo/tenants/a.yaml': firmware('1.0.0'),
      'repo/x/a.yaml': firmware('2.0.0'),
      'x/b.yaml': firmware('6.6.6', 's3cr3t-token-from-outside'),
    });
    const repo = join(top, 'repo');
    for (const flags of [[], ['--follow-external-symlinks']]) {
      it(`${glob} ${flags.join(' ')}: refused with one sentence, nothing read`, async () => {
        const r = await runCli(['validate', ...flags], { cwd: repo, env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined } });
        expect(r.code).toBe(1);
        const out = r.stdout + r.stderr;
        expect(out).not.toContain('s3cr3t');
        expect(out).toContain(`dus-sync.yaml: the resources glob ${JSON.stringify(glob)} holds ".." after its first wildcard or brace`);
        expect(out).toContain('write ".." only at its start');
        expect(out).not.toMatch(/\n\s+at /);
      });
    }
  }

  it('a ".." in the fixed part, or inside a bracket class, is not this refusal', async () => {
    const { climbsInGlob } = await import('../../src/load/resource-globs.js');
    expect(climbsInGlob('../x/*.yaml')).toBe(false);
    expect(climbsInGlob('tenants/../tenants/*.yaml')).toBe(false);
    expect(climbsInGlob('x/[..]/a.yaml')).toBe(false);
    expect(climbsInGlob('tenants/**/*.yaml')).toBe(false);
    expect(climbsInGlob('tenants/{a,b}/..yaml')).toBe(false);
    expect(climbsInGlob('tenants/{a,..}/*.yaml')).toBe(true);
    expect(climbsInGlob('**/../*.yaml')).toBe(true);
  });
});

// The same breaker's second round: globs that read other files than they name, silently.
const config = (globs: string[]) => `apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: {}\nresources: ${JSON.stringify(globs)}\n`;

describe('resources globs written other than plainly', () => {
  const cases: [string, RegExp][] = [
    ['tenants/../x/*.yaml', /names its folders in a form that no listed path has \(".."\), so it would match no file: write it as "x\/\*\.yaml"/],
    ['x/./*.yaml', /\("\."\), so it would match no file: write it as "x\/\*\.yaml"/],
    ['x//*.yaml', /\("\/\/"\), so it would match no file: write it as "x\/\*\.yaml"/],
    ['/x/*.yaml', /is an absolute path; resources globs are relative to the folder of dus-sync\.yaml/],
    ['x/*.yaml/', /ends with "\/", so it would match folders, never a file/],
    ['x/inrepo.yaml/', /ends with "\/"/],
    [`x/${'a'.repeat(70000)}*.yaml`, /is 70008 characters long; a resources glob may be at most 4096/],
  ];
  for (const [glob, message] of cases) {
    it(`${glob.slice(0, 40)}: refused, saying how to write it`, async () => {
      const repo = tree({ 'dus-sync.yaml': config(['tenants/**/*.yaml', glob]), 'tenants/a.yaml': firmware('1.0.0'), 'x/inrepo.yaml': firmware('2.0.0') });
      const r = await runCli(['validate'], { cwd: repo });
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).toMatch(/dus-sync\.yaml: the resources glob "/);
      expect(r.stdout + r.stderr).toMatch(message);
      expect((r.stdout + r.stderr).length).toBeLessThan(1200);
      expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
    });
  }

  it('./x/*.yaml, ../repo/x/*.yaml and x/*.yaml read x/', async () => {
    for (const glob of ['./x/*.yaml', 'x/*.yaml']) {
      const repo = tree({ 'dus-sync.yaml': config(['tenants/**/*.yaml', glob]), 'tenants/a.yaml': firmware('1.0.0'), 'x/inrepo.yaml': firmware('2.0.0') });
      const r = await runCli(['validate'], { cwd: repo });
      expect([glob, r.code, r.stdout]).toEqual([glob, 0, expect.stringContaining('2 files, 2 documents: valid')]);
    }
  });

  // A file the glob must not reach is invalid: read, it would be an issue.
  const invalid = 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: 7 }\n';

  it('!(tenants)/*.yaml is picomatch\'s "anything but", not an exclusion: refused, as it cannot be matched in linear time', async () => {
    const repo = tree({
      'dus-sync.yaml': config(['!(tenants)/*.yaml']),
      'tenants/a.yaml': invalid, 'x/one.yaml': firmware('2.0.0'), 'x/deep/d.yaml': invalid, 'root.yaml': invalid,
    });
    const r = await runCli(['validate'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain('the resources glob "!(tenants)/*.yaml" holds a negated extglob');
  });

  it('!tenants/b.yaml is still an exclusion', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['tenants/*.yaml', '!tenants/b.yaml']), 'tenants/a.yaml': firmware('1.0.0'), 'tenants/b.yaml': invalid });
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('diff --base: a base commit whose config has such a glob is named in a warning, its files not read by it', async () => {
    for (const glob of ['{../x}/*.yaml', '../../x/*.yaml', 'tenants/../x/*.yaml']) {
      const repo = tree({ 'dus-sync.yaml': config(['tenants/**/*.yaml', glob]), 'tenants/a.yaml': firmware('1.0.0'), 'x/f.yaml': firmware('2.0.0') });
      commitAll(repo);
      writeFileSync(join(repo, 'dus-sync.yaml'), config(['tenants/**/*.yaml']));
      const r = await runCli(['diff', '--base', 'HEAD'], { cwd: repo });
      expect(r.stderr).toContain(`the config file at the base ref has the resources glob ${JSON.stringify(glob)}, which `);
      expect(r.stderr).toContain('the working one is used for both sides');
      // Both sides read tenants/ only: no difference, and x/f.yaml is not "no longer managed".
      expect(r.stdout + r.stderr).not.toContain('2.0.0');
      expect(r.code).toBe(0);
    }
  });
});

// The breaker's first finding of that round: dus-sync.yaml made a link to a file elsewhere on the
// machine had that file read as the config, its values quoted (a tenant name in an issue).
describe('dus-sync.yaml as a link', () => {
  const secretConfig = 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: s3cr3t-token-outside\ntenants:\n  s3cr3t-token-outside: {}\n';
  const twice = `${firmware('1.0.0', 's3cr3t-token-outside')}---\n${firmware('1.0.0', 's3cr3t-token-outside')}`;

  it('out of its folder: refused with one sentence, nothing of the file shown', async () => {
    const top = tree({ 'outside/cfg.yaml': secretConfig, 'repo/tenants/b.yaml': twice });
    symlinkSync(join(top, 'outside/cfg.yaml'), join(top, 'repo/dus-sync.yaml'));
    for (const args of [['validate'], ['validate', '--format', 'json'], ['plan']]) {
      const r = await runCli(args, { cwd: join(top, 'repo'), env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined, DUS_BASE_URL: 'http://127.0.0.1:9' } });
      expect(r.code).toBe(1);
      const out = r.stdout + r.stderr;
      expect(out).toMatch(/dus-sync\.yaml(:1:1: |",\s+"line": 1,[^]*"message": ")this config file is a link to .*outside\/cfg\.yaml, outside the folder that holds it: .*--follow-external-symlinks/);
      expect(out.replace(/outside\/cfg\.yaml/g, '')).not.toContain('s3cr3t');
      expect(out).not.toMatch(/\n\s+at /);
    }
  });

  it('out of its folder, relative: refused too', async () => {
    const top = tree({ 'outside/cfg.yaml': secretConfig, 'repo/tenants/b.yaml': twice });
    symlinkSync('../outside/cfg.yaml', join(top, 'repo/dus-sync.yaml'));
    const r = await runCli(['validate'], { cwd: join(top, 'repo'), env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined } });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain('this config file is a link to');
  });

  it('within its folder (as a Kubernetes ConfigMap mounts it): read', async () => {
    const top = tree({ 'repo/..data/dus-sync.yaml': config(['tenants/**/*.yaml']), 'repo/tenants/a.yaml': firmware('1.0.0') });
    symlinkSync('..data/dus-sync.yaml', join(top, 'repo/dus-sync.yaml'));
    const r = await runCli(['validate'], { cwd: join(top, 'repo'), env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined } });
    expect([r.code, r.stdout]).toEqual([0, expect.stringContaining('1 file, 1 document: valid')]);
  });

  it('out of its folder with --follow-external-symlinks, which the operator passes: read', async () => {
    const top = tree({ 'outside/cfg.yaml': secretConfig, 'repo/tenants/b.yaml': twice });
    symlinkSync(join(top, 'outside/cfg.yaml'), join(top, 'repo/dus-sync.yaml'));
    const r = await runCli(['validate', '--follow-external-symlinks'], { cwd: join(top, 'repo') });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain('is defined twice');
  });
});

// A third breaker round, against the fixes above.
describe('paths and globs that a pull request can bend, round three', () => {
  const invalid = 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: 7 }\n';
  const secretConfig = 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: s3cr3t-token-outside\ntenants:\n  s3cr3t-token-outside: {}\n';

  for (const [flag, named] of [['--dir', 'tenants'], ['--config', 'tenants/dus-sync.yaml']] as const) {
    it(`${flag} ${named}, a folder the repository made a link out: refused, nothing of it read`, async () => {
      const top = tree({ 'outside/dus-sync.yaml': secretConfig, 'outside/secret.yaml': firmware('9.9.9', 's3cr3t-token-outside'), 'repo/dus-sync.yaml': config(['tenants/*.yaml']) });
      symlinkSync('../outside', join(top, 'repo/tenants'));
      for (const args of [['validate'], ['plan']]) {
        const r = await runCli([flag, named, ...args], { cwd: join(top, 'repo'), env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined, DUS_CONFIG: undefined, DUS_BASE_URL: 'http://127.0.0.1:9' } });
        expect(r.code).toBe(1);
        const out = r.stdout + r.stderr;
        expect(out).toContain(`${flag} ${named} leads through a symbolic link to `);
        expect(out).toContain('--follow-external-symlinks');
        expect(out).not.toContain('s3cr3t');
        expect(out).not.toMatch(/\n\s+at /);
      }
      // The operator's flag reads it.
      const r = await runCli([flag, named, '--follow-external-symlinks', 'validate'], { cwd: join(top, 'repo'), env: { DUS_CONFIG: undefined } });
      expect(r.stdout + r.stderr).not.toContain('leads through a symbolic link');
    });
  }

  it('--dir naming a folder outside the working folder is the operator\'s choice: read', async () => {
    const top = tree({ 'elsewhere/a.yaml': firmware('1.0.0'), 'repo/dus-sync.yaml': config(['tenants/*.yaml']) });
    const r = await runCli(['--dir', join(top, 'elsewhere'), 'validate'], { cwd: join(top, 'repo'), env: { DUS_CONFIG: undefined, DUS_TENANT: 'acme' } });
    expect(r.stdout + r.stderr).not.toContain('leads through a symbolic link');
  });

  it('--dir through a link that stays inside the repository: read', async () => {
    const top = tree({ 'repo/dus-sync.yaml': config(['tenants/**/*.yaml']), 'repo/tenants/real/a.yaml': firmware('1.0.0') });
    symlinkSync('real', join(top, 'repo/tenants/acme'));
    const r = await runCli(['--dir', 'tenants/acme', 'validate'], { cwd: join(top, 'repo'), env: { DUS_CONFIG: undefined } });
    expect(r.stdout + r.stderr).not.toContain('leads through a symbolic link');
  });

  const cases: [string, RegExp][] = [
    ['sub/*/./*.yaml', /"\." after its first wildcard or brace\), so that part would match no file: write each folder plainly/],
    ['sub/*//*.yaml', /"\/\/" after its first wildcard or brace\)/],
    ['sub/**/./*.yaml', /"\." after its first wildcard or brace\)/],
    ['{sub/deep/./*.yaml,x/*.yaml}', /"\." after its first wildcard or brace\)/],
    ['{./sub/deep,x}/*.yaml', /"\." after its first wildcard or brace\)/],
    ['!archive', /names no file \(a folder, by its look: globs here match files, not folders\): write "!archive\/\*\*" for everything below it/],
    ['tenants', /names no file .*write "tenants\/\*\*"/],
    ['!', /is an exclusion of nothing: write the files to exclude after the "!"/],
  ];
  for (const [glob, message] of cases) {
    it(`${glob}: refused with one sentence`, async () => {
      const repo = tree({ 'dus-sync.yaml': config(['tenants/*.yaml', glob]), 'tenants/a.yaml': firmware('1.0.0'), 'sub/deep/bad.yaml': invalid, 'x/bad.yaml': invalid, 'archive/bad.yaml': firmware('3.0.0') });
      const r = await runCli(['validate'], { cwd: repo });
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).toContain(`dus-sync.yaml: the resources glob ${JSON.stringify(glob)} `);
      expect(r.stdout + r.stderr).toMatch(message);
      expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
    });
  }

  it('an escaped glob walks the folder it names: v\\[1\\]/*.yaml reads v[1]/', async () => {
    const repo = tree({ 'dus-sync.yaml': "apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: {}\nresources: ['tenants/*.yaml', 'v\\[1\\]/*.yaml']\n", 'tenants/a.yaml': firmware('1.0.0'), 'v[1]/b.yaml': invalid });
    const r = await runCli(['validate'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('v[1]/b.yaml:4:');
  });

  it('diff --base: a base config holding "!" is a warning, not picomatch\'s error', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['tenants/*.yaml', '!']), 'tenants/a.yaml': firmware('1.0.0') });
    commitAll(repo);
    writeFileSync(join(repo, 'dus-sync.yaml'), config(['tenants/*.yaml']));
    const r = await runCli(['diff', '--base', 'HEAD'], { cwd: repo });
    expect(r.stderr).toContain('the config file at the base ref has the resources glob "!", which is an exclusion of nothing');
    expect(r.code).toBe(0);
  });
});

// A fourth breaker round.
describe('paths and globs that a pull request can bend, round four', () => {
  const invalid = 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: 7 }\n';
  const secretConfig = 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: s3cr3t-token-outside\ntenants:\n  s3cr3t-token-outside: {}\nresources: ["*.yaml"]\n';

  it('a glob of many "*" against long names (it hung: minutes of regex backtracking) ends at once', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['tenants/*.yaml', 'tenants/*a*a*a*a*a*a*b.yaml']), 'tenants/ok.yaml': firmware('1.0.0'), [`tenants/${'a'.repeat(200)}.yml`]: '' });
    const r = await runCli(['validate'], { cwd: repo, timeoutMs: 20_000 });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('two "*" in a name and "**" folders are plain', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['**/*-prod*.yaml']), 'tenants/a/x-prod-1.yaml': firmware('1.0.0') });
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('--dir repo/tenants from a working folder above the checkout, tenants a link out of it: refused', async () => {
    const top = tree({ 'w/repo/dus-sync.yaml': config(['tenants/*.yaml']), 'w/other/dus-sync.yaml': secretConfig, 'w/other/secret.yaml': firmware('9.9.9', 's3cr3t-token-outside') });
    symlinkSync('../other', join(top, 'w/repo/tenants'));
    for (const [flag, named] of [['--dir', 'repo/tenants'], ['--config', 'repo/tenants/dus-sync.yaml']]) {
      const r = await runCli([flag!, named!, 'validate'], { cwd: join(top, 'w'), env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined, DUS_CONFIG: undefined } });
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).toContain(`${flag} ${named} leads through a symbolic link to `);
      expect(r.stdout + r.stderr).not.toContain('s3cr3t');
    }
  });

  it('a git-sync layout (current -> rev-abc beside it) and a ConfigMap\'s ..data are read', async () => {
    const top = tree({ 'x/rev-abc/dus-sync.yaml': config(['tenants/**/*.yaml']), 'x/rev-abc/tenants/acme/a.yaml': firmware('1.0.0') });
    symlinkSync('rev-abc', join(top, 'x/current'));
    const r = await runCli(['--dir', 'current/tenants/acme', 'validate'], { cwd: join(top, 'x'), env: { DUS_CONFIG: undefined } });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
    const r2 = await runCli(['--config', 'current/dus-sync.yaml', 'validate'], { cwd: join(top, 'x'), env: { DUS_CONFIG: undefined } });
    expect([r2.code, r2.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('an extglob repeating folders walks every depth: +(*/)*.yaml reads a/b/c/deep.yaml', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['+(*/)*.yaml']), 'a/x.yaml': firmware('1.0.0'), 'a/b/c/deep.yaml': invalid });
    const r = await runCli(['validate'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('a/b/c/deep.yaml:4:');
  });

  const cases: [string, RegExp][] = [
    ['x/\\.\\./y/*.yaml', /names its folders in a form that no listed path has \(".."\).*write it as "y\/\*\.yaml"/],
    ['y/\\./*.yaml', /\("\."\), so it would match no file/],
    ['\\./y/*.yaml', /\("\."\), so it would match no file/],
    ['*/\\.\\./y/*.yaml', /holds ".." after its first wildcard or brace/],
    ['.dus/*.yaml', /names "\.dus", a dot-file or dot-folder, which dus-sync never reads .*move the files out of it/],
    ['tenants/.*.yaml', /names "\.\*\.yaml", a dot-file or dot-folder/],
    ['config/node_modules/*.yaml', /names "node_modules", a node_modules folder, which dus-sync never reads/],
    ['!!tenants/skip/**', /starts with more than one "!"/],
  ];
  for (const [glob, message] of cases) {
    it(`${glob}: refused with one sentence`, async () => {
      const repo = tree({ 'dus-sync.yaml': config(['tenants/**/*.yaml', glob]), 'tenants/a.yaml': firmware('1.0.0'), 'y/b.yaml': invalid, '.dus/a.yaml': invalid });
      const r = await runCli(['validate'], { cwd: repo });
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).toContain(`dus-sync.yaml: the resources glob ${JSON.stringify(glob)} `);
      expect(r.stdout + r.stderr).toMatch(message);
      expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
    });
  }
});

// A fifth breaker round, and the review after it.
describe('paths and globs that a pull request can bend, round five', () => {

  it('diff --base: the warning gives the whole reason, colons in it included', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['tenants/*.yaml', '!archive']), 'tenants/a.yaml': firmware('1.0.0') });
    commitAll(repo);
    writeFileSync(join(repo, 'dus-sync.yaml'), config(['tenants/*.yaml']));
    const r = await runCli(['diff', '--base', 'HEAD'], { cwd: repo });
    expect(r.stderr).toContain('the resources glob "!archive", which names no file (a folder, by its look: globs here match files, not folders); the working one is used for both sides.');
    expect(r.code).toBe(0);
  });

  for (const glob of ['{.dus,tenants}/*.yaml', 'tenants/@(.hidden|x)/*.yaml', 'x/{a,.b}.yaml']) {
    it(`${glob}: a dot-name inside a brace or extglob is refused, naming it`, async () => {
      const repo = tree({ 'dus-sync.yaml': config([glob]), 'tenants/a.yaml': firmware('1.0.0') });
      const r = await runCli(['validate'], { cwd: repo });
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).toMatch(/names "\.(dus|hidden|b\.yaml)" in a brace, an extglob or a class, a dot-file or dot-folder, which dus-sync never reads/);
    });
  }

  it('an extension after a brace is not a dot-name: x/{a,b}.yaml and *.{yaml,yml} are read', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['x/{a,b}.yaml', 'tenants/*.{yaml,yml}']), 'x/a.yaml': firmware('1.0.0'), 'tenants/b.yml': firmware('2.0.0') });
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '2 files, 2 documents: valid\n']);
  });

  it('--dir through a link that leaves its own folder but stays in the repository: read', async () => {
    const top = tree({ 'repo/dus-sync.yaml': config(['**/*.yaml']), 'repo/shared/prod/a.yaml': firmware('1.0.0'), 'repo/envs/.keep': '' });
    symlinkSync('../shared/prod', join(top, 'repo/envs/prod'));
    const r = await runCli(['--dir', 'envs/prod', 'validate'], { cwd: join(top, 'repo'), env: { DUS_CONFIG: undefined, DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined } });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('a working folder inside a git checkout holds links to its top: read; out of the checkout: refused', async () => {
    const top = tree({ 'repo/dus-sync.yaml': config(['**/*.yaml']), 'repo/shared/prod/a.yaml': firmware('1.0.0'), 'repo/envs/.keep': '', 'other/secret.yaml': firmware('9.9.9', 's3cr3t-token-outside') });
    git(join(top, 'repo'), 'init', '-q');
    symlinkSync('../shared/prod', join(top, 'repo/envs/prod'));
    symlinkSync('../../other', join(top, 'repo/envs/out'));
    const env = { DUS_CONFIG: undefined, DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined };
    const r = await runCli(['--dir', 'prod', 'validate'], { cwd: join(top, 'repo/envs'), env });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
    const out = await runCli(['--dir', 'out', 'validate'], { cwd: join(top, 'repo/envs'), env });
    expect(out.code).toBe(1);
    expect(out.stdout + out.stderr).toContain('--dir out leads through a symbolic link to ');
    expect(out.stdout + out.stderr).toContain('(it holds .git or dus-sync.yaml)');
    expect(out.stdout + out.stderr).not.toContain('s3cr3t');
  });

  it('--dir repo/tenants from above a checkout marked by .git alone, tenants a link out of it: refused', async () => {
    const top = tree({ 'w/repo/cfg/dus-sync.yaml': config(['*.yaml']), 'w/other/secret.yaml': firmware('9.9.9', 's3cr3t-token-outside') });
    git(join(top, 'w/repo'), 'init', '-q');
    symlinkSync('../other', join(top, 'w/repo/tenants'));
    const r = await runCli(['--dir', 'repo/tenants', 'validate'], { cwd: join(top, 'w'), env: { DUS_CONFIG: undefined, DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined, DUS_TENANT: 'acme' } });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain('--dir repo/tenants leads through a symbolic link to ');
    expect(r.stdout + r.stderr).not.toContain('s3cr3t');
  });
});

// The fifth round's hang: nested repetition within two "*" in a name. The matchers are written for
// V8's linear engine (src/load/glob-match.ts), which the CLI turns on.
describe('globs that made picomatch backtrack for minutes end at once', () => {
  const long = `${'a'.repeat(200)}.yml`;
  // Each glob, and whether it names aaa…ab.yaml (100 "a"): {a,aa} 22 times is 22 to 44 "a".
  const globs: [string, boolean][] = [['tenants/+(*a)b.yaml', true], [`tenants/${'{a,aa}'.repeat(22)}b.yaml`, false], [`tenants/*${'{a,aa}'.repeat(20)}b.yaml`, true], ['tenants/+([a-z]|[a-z][a-z])b.yaml', true]];
  for (const [glob, names] of globs) {
    it(`${glob.slice(0, 40)}, included and excluded, beside a file named with 200 "a"`, async () => {
      for (const list of [['tenants/ok.yaml', glob], ['tenants/*.yaml', `!${glob}`]]) {
        const repo = tree({ 'dus-sync.yaml': config(list), 'tenants/ok.yaml': firmware('1.0.0'), [`tenants/${long}`]: '', [`tenants/${'a'.repeat(100)}b.yaml`]: firmware('2.0.0') });
        const started = Date.now();
        const r = await runCli(['validate'], { cwd: repo, timeoutMs: 30_000 });
        // The glob reads the file it names (aaa…ab.yaml) when included, and nothing else.
        expect([glob, r.code, r.stdout]).toEqual([glob, 0, names === !list[1]!.startsWith('!') ? '2 files, 2 documents: valid\n' : '1 file, 1 document: valid\n']);
        expect(Date.now() - started).toBeLessThan(15_000);
      }
    });
  }

  it('a negated extglob is refused, naming it: with "**" and two "*" beside it, it took 11 s against a path of 4,000 characters', async () => {
    for (const glob of ['!(archive|old)/*.yaml', '**/!(x|y)*a*/*a*b.yaml', '!(*a*a)/*.yaml', '!(archive)/{a,b}*.yaml', 'x/!(a)*/*a*a*.yaml']) {
      const repo = tree({ 'dus-sync.yaml': config([glob]), 'tenants/a.yaml': firmware('1.0.0') });
      const bad = await runCli(['validate'], { cwd: repo, timeoutMs: 20_000 });
      expect([glob, bad.code]).toEqual([glob, 1]);
      expect(bad.stdout + bad.stderr).toContain(`dus-sync.yaml: the resources glob ${JSON.stringify(glob)} holds a negated extglob`);
      expect(bad.stdout + bad.stderr).toContain('"!archive/**"');
      expect(bad.stdout + bad.stderr).not.toMatch(/\n\s+at /);
    }
  });
});

// A sixth breaker round, against the bounded matchers.
describe('globs that a pull request can bend, round six', () => {
  it('repetition nested five deep: refused where V8 cannot match it in linear time, else read at once', async () => {
    const glob = 'tenants/+(a+(a+(a+(a+(a)))))b.yaml';
    // Node 20's linear engine refuses this depth; Node 24's runs it (the glob then names no file here).
    for (const list of [['tenants/ok.yaml', glob], ['tenants/*.yaml', `!${glob}`]]) {
      const repo = tree({ 'dus-sync.yaml': config(list), 'tenants/ok.yaml': firmware('2.0.0'), [`tenants/${'a'.repeat(40)}.yaml`]: firmware('1.0.0') });
      const started = Date.now();
      const r = await runCli(['validate'], { cwd: repo, timeoutMs: 30_000 });
      expect(Date.now() - started).toBeLessThan(15_000);
      if (r.code === 1) expect(r.stdout + r.stderr).toContain('holds a form V8 cannot match in linear time (repetition nested too deeply');
      else expect([r.code, r.stdout]).toEqual([0, list[1]!.startsWith('!') ? '2 files, 2 documents: valid\n' : '1 file, 1 document: valid\n']);
    }
  });

  const cases: [string, RegExp][] = [
    ['tenants/[[:alpha:]](a+)+\\1b.yaml', /holds a POSIX class \("\[\[:…:\]\]"\), after which picomatch copies the rest of the glob .*write the class out/],
    ['x[.-0]a.yaml', /holds the class "\[\.-0\]", which can match "\/"/],
    ['z[/]d.yaml', /holds the class "\[\/\]", which can match "\/"/],
    ['x[\\W]a.yaml', /which can match "\/"/],
    ['{node_modules,base}/*.yaml', /names "node_modules" in a brace, an extglob or a class, a node_modules folder/],
    ['+(node_modules|base)/*.yaml', /names "node_modules" in a brace/],
    ['{base,x/node_modules}/*.yaml', /names "node_modules" in a brace/],
    ['node_module[s]/*.yaml', /names "node_modules" in a brace, an extglob or a class/],
    ['[n]ode_modules/*.yaml', /names "node_modules"/],
    ['[.]hidden/*.yaml', /names "\.hidden" in a brace, an extglob or a class, a dot-file or dot-folder/],
    ['x/[.][h]idden/*.yaml', /a dot-file or dot-folder/],
    ['./!zzz.yaml', /starts with "\.\/!", which picomatch reads as "every file but" what follows/],
    ['tenants/[z-a].yaml', /is a glob picomatch cannot read \(an unclosed bracket, brace or parenthesis, or a reversed range/],
  ];
  for (const [glob, message] of cases) {
    it(`${glob}: refused with one sentence`, async () => {
      const repo = tree({ 'dus-sync.yaml': config(['base/*.yaml', glob]), 'base/b.yaml': firmware('1.0.0'), 'x/a.yaml': firmware('2.0.0'), 'node_modules/n.yaml': firmware('3.0.0') });
      const r = await runCli(['validate'], { cwd: repo, timeoutMs: 20_000 });
      expect([glob, r.code]).toEqual([glob, 1]);
      expect(r.stdout + r.stderr).toContain(`dus-sync.yaml: the resources glob ${JSON.stringify(glob)} `);
      expect(r.stdout + r.stderr).toMatch(message);
      expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
    });
  }

  it('classes that match no "/" nor a leading ".", and names that only hold "node_modules" in part, are read', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['[a-c]*/*.yaml', 'x/[^a]*.yaml', 'my_node_modules_notes/*.yaml']), 'base/b.yaml': firmware('1.0.0'), 'x/b.yaml': firmware('2.0.0'), 'my_node_modules_notes/n.yaml': firmware('3.0.0') });
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '3 files, 3 documents: valid\n']);
  });
});

// A seventh breaker round.
describe('globs that a pull request can bend, round seven', () => {
  const cases: [string, RegExp][] = [
    [`${'{a,*}'.repeat(800)}.yaml`.slice(0, 4000), /holds \d+ wildcards, classes, braces and extglobs; more than 24 in one glob/],
    ['{a,{.h,b}}/*.yaml', /names "\.h" in a brace, an extglob or a class/],
    ['@(a|@(.h|b))/*.yaml', /names "\.h"/],
    ['@(a|+(.h))/*.yaml', /names "\.h"/],
    ['{a,b,{c,node_modules}}/*.yaml', /names "node_modules"/],
    ['node{_modules,x}/*.yaml', /names "node_modules"/],
    ['no{de_mod,x}ules/*.yaml', /names "node_modules"/],
    ['?(a)[.]h/*.yaml', /can name "\.h", a dot-file or dot-folder, which dus-sync never reads: a "\*\(…\)" or "\?\(…\)" in it may match nothing/],
    ['{,.}h/*.yaml', /names "\.h"/],
    [' tenants/*.yaml', /starts or ends with a space/],
    ['{', /holds a "\{" that is not closed/],
    ['+(a/*.yaml', /holds a "\(" that is not closed \(or a closer that was not opened\), which picomatch then reads as the character itself: close it, or write \\\( for the character/],
    ['tenants/{a,b/*.yaml', /holds a "\{" that is not closed/],
    ['x/[{]a}/*.yaml', /holds a "\}" that closes nothing opened before it, which picomatch then reads as the character itself: write \\\} for the character/],
    ['x/*(prod|qa).yaml', /can name "\.yaml", a dot-file or dot-folder, which dus-sync never reads: a "\*\(…\)" or "\?\(…\)" in it may match nothing: write "@\(…\)"/],
    ['t/(?=a).yaml', /holds a form V8 cannot match in linear time/],
  ];
  for (const [glob, message] of cases) {
    it(`${glob.slice(0, 40)}: refused with one sentence`, async () => {
      const repo = tree({ 'dus-sync.yaml': config(['a/*.yaml', glob]), 'a/x.yaml': firmware('1.0.0'), '.h/x.yaml': firmware('2.0.0'), 'node_modules/x.yaml': firmware('3.0.0') });
      const r = await runCli(['validate'], { cwd: repo, timeoutMs: 20_000 });
      expect([glob, r.code]).toEqual([glob, 1]);
      expect(r.stdout + r.stderr).toContain(`dus-sync.yaml: the resources glob ${JSON.stringify(glob.length > 200 ? '' : glob).slice(0, -1)}`);
      expect(r.stdout + r.stderr).toMatch(message);
      expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
    });
  }

  it('globs within the limit one by one, over it together, are refused together', async () => {
    const glob = (n: number) => `t${n}/${'{a,b}*'.repeat(11)}.yaml`;
    const repo = tree({ 'dus-sync.yaml': config([0, 1, 2].map(glob)), 'a/x.yaml': firmware('1.0.0') });
    const r = await runCli(['validate'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain('dus-sync.yaml: the resources globs hold 66 wildcards, classes, braces and extglobs together; more than 64');
  });

  for (const [glob, files] of [['*/+(*/)*.yaml', 3], ['x/*/+(*/)f.yaml', 2], ['{x,y}/+(*/)f.yaml', 3], ['[x]/+(*/)f.yaml', 3]] as const) {
    it(`${glob}: an extglob repeating folders after a wildcard walks every depth (${files} files)`, async () => {
      const repo = tree({ 'dus-sync.yaml': config([glob]), 'x/a/f.yaml': firmware('1.0.0'), 'x/a/b/f.yaml': firmware('2.0.0'), 'x/a/b/c/f.yaml': firmware('3.0.0') });
      const r = await runCli(['validate'], { cwd: repo });
      expect([r.code, r.stdout]).toEqual([0, `${files} file${files > 1 ? 's' : ''}, ${files} document${files > 1 ? 's' : ''}: valid\n`]);
    });
  }

  it('a file under a link to a folder the walk lists by its own path is read once, by its own path', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['**/*.yaml']), 'shared/prod/x.yaml': 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "1.0.0" }\nbogus: 1\n', 'envs/stage.yaml': firmware('2.0.0') });
    symlinkSync('../shared/prod', join(repo, 'envs/prod'));
    const r = await runCli(['validate'], { cwd: repo });
    expect(r.code).toBe(1);
    expect((r.stdout.match(/bogus/g) ?? []).length).toBe(1);
    expect(r.stdout).toContain('shared/prod/x.yaml:5:1');
    expect(r.stdout).not.toContain('defined twice');
  });
});

// A folder listed by its own path is not walked again through a link; a file below it is
// still the file below the link, which the globs may select when they leave out its own path.
describe('a file the globs select only by its path through a link to a folder listed by its own path', () => {
  const fw = (v: string) => firmware(v);
  it('["**/*.yaml", "!shared/**"] with envs/prod -> ../shared/prod: read through the link (it was skipped without a word)', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['**/*.yaml', '!shared/**']), 'shared/prod/x.yaml': fw('1.0.0'), 'shared/prod/deep/y.yaml': fw('2.0.0'), 'shared/z.yaml': fw('3.0.0'), 'envs/stage.yaml': fw('4.0.0') });
    symlinkSync('../shared/prod', join(repo, 'envs/prod'));
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '3 files, 3 documents: valid\n']);
    const bad = tree({ 'dus-sync.yaml': config(['**/*.yaml', '!shared/**']), 'shared/prod/x.yaml': `${fw('1.0.0')}bogus: 1\n`, 'envs/stage.yaml': fw('4.0.0') });
    symlinkSync('../shared/prod', join(bad, 'envs/prod'));
    const b = await runCli(['validate'], { cwd: bad });
    expect(b.code).toBe(1);
    expect(b.stdout).toContain('envs/prod/x.yaml:');
    expect(b.stdout).not.toContain('shared/prod');
  });

  it('two links to it: read once, by the first path', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['**/*.yaml', '!shared/**']), 'shared/prod/x.yaml': `${fw('1.0.0')}bogus: 1\n`, 'envs/.keep': '' });
    symlinkSync('../shared/prod', join(repo, 'envs/a'));
    symlinkSync('../shared/prod', join(repo, 'envs/b'));
    const r = await runCli(['validate'], { cwd: repo });
    expect(r.code).toBe(1);
    expect((r.stdout.match(/bogus/g) ?? []).length).toBe(1);
    expect(r.stdout).toContain('envs/a/x.yaml:');
    expect(r.stdout).not.toContain('defined twice');
  });

  it('a link to a folder above it (a loop) selects nothing more: an excluded archive is not read through tenants/acme/up', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['tenants/**/*.yaml', '!tenants/archive/**']), 'tenants/archive/old.yaml': 'not: [yaml\n', 'tenants/acme/a.yaml': fw('4.0.0') });
    symlinkSync('..', join(repo, 'tenants/acme/up'));
    symlinkSync('.', join(repo, 'tenants/here'));
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('a link to the repository\'s top or a folder above the globs (a loop) reads nothing through it: tenants/acme/root -> ../.., envs/prod/up -> ..', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['tenants/**/*.yaml']), 'tenants/acme/a.yaml': fw('1.0.0'), 'private/p.yaml': 'not: [yaml\n', 'secret.yaml': 'not: [yaml\n' });
    symlinkSync('../..', join(repo, 'tenants/acme/root'));
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
    commitAll(repo);
    const d = await runCli(['diff', '--base', 'HEAD'], { cwd: repo });
    expect([d.code, d.stdout]).toEqual([0, 'Desired state: HEAD → working tree\n\nNo differences in the desired state.\n']);
    const prod = tree({ 'dus-sync.yaml': config(['envs/prod/**/*.yaml']), 'envs/prod/a.yaml': fw('1.0.0'), 'envs/staging/s.yaml': fw('5.0.0') });
    symlinkSync('..', join(prod, 'envs/prod/up'));
    const p = await runCli(['validate'], { cwd: prod });
    expect([p.code, p.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('--dir through a loop (tenants/evil -> ., tenants/acme/up -> ..) is refused in one sentence, in validate and diff --base, not read with the archive the globs exclude', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['tenants/**/*.yaml', '!tenants/archive/**']), 'tenants/acme/a.yaml': fw('1.0.0'), 'tenants/archive/old.yaml': fw('2.5.0') });
    symlinkSync('.', join(repo, 'tenants/evil'));
    symlinkSync('..', join(repo, 'tenants/acme/up'));
    commitAll(repo);
    for (const args of [['--dir', 'tenants/evil', 'validate'], ['--dir', 'tenants/acme/up', 'validate'], ['--dir', 'tenants/evil', 'diff', '--base', 'HEAD'], ['--dir', 'tenants/evil/acme', 'validate']]) {
      const r = await runCli(args, { cwd: repo });
      expect([args, r.code]).toEqual([args, 1]);
      expect(r.stderr).toMatch(/^error: tenants\/(evil|acme\/up): this symbolic link leads to .*tenants, a folder on its own way \(a loop\).*name the folder itself\n$/);
      expect(r.stdout + r.stderr).not.toContain('2.5.0');
    }
  });

  it('diff --base --dir X, X a loop only at the base: a warning that the base cannot be listed, naming the link, and everything counts as added', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['**/*.yaml', '!archive/**']), 'tenants/acme/a.yaml': fw('1.0.0'), 'archive/s.yaml': fw('2.0.0') });
    symlinkSync('.', join(repo, 'tenants/evil'));
    commitAll(repo);
    execFileSync('rm', [join(repo, 'tenants/evil')]);
    writeFileSync(join(repo, 'tenants/acme/e.yaml'), fw('3.0.0'));
    execFileSync('mkdir', [join(repo, 'tenants/evil')]);
    execFileSync('mv', [join(repo, 'tenants/acme/e.yaml'), join(repo, 'tenants/evil/e.yaml')]);
    const r = await runCli(['--dir', 'tenants/evil', 'diff', '--base', 'HEAD'], { cwd: repo });
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('+ firmware "3.0.0"');
    expect(r.stderr).toMatch(/the desired state at HEAD has 1 problem\(s\), e\.g\. HEAD:1:1: its files cannot be listed: tenants\/evil: this symbolic link leads to .*\(a loop\)/);
    expect(r.stdout + r.stderr).not.toContain('2.0.0');
  });

  it('a loop by the path as walked: with envs/prod -> ../shared/prod, shared/prod/up -> ../../envs reads nothing more', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['envs/prod/**/*.yaml']), 'shared/prod/a.yaml': fw('1.0.0'), 'envs/staging/s.yaml': fw('5.0.0') });
    symlinkSync('../shared/prod', join(repo, 'envs/prod'));
    symlinkSync('../../envs', join(repo, 'shared/prod/up'));
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('links with long names fanning out, the walk\'s first paths all excluded: the one selected path is found, in time (it took 25 s and 1.95 GB at six levels)', async () => {
    const long = 'a'.repeat(200);
    const files: Record<string, string> = { 'dus-sync.yaml': config(['sel/**/*.yaml', '!sel/**/l[0-8]*/**']), 'x6/f.yaml': fw('1.0.0'), 'sel/.keep': '' };
    for (let i = 1; i < 6; i++) files[`x${i}/.keep`] = '';
    const repo = tree(files);
    for (let i = 1; i < 6; i++) for (let k = 0; k < 10; k++) symlinkSync(`../x${i + 1}`, join(repo, `x${i}/l${k}${long}`));
    symlinkSync('../x1', join(repo, 'sel/a'));
    const started = Date.now();
    const r = await runCli(['validate'], { cwd: repo });
    expect(Date.now() - started).toBeLessThan(30_000);
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('a path through two such links: read, and --dir on the way reads the same (envs/prod -> ../shared/prod, shared/prod/common -> ../common)', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['**/*.yaml', '!shared/**']), 'shared/prod/x.yaml': fw('1.0.0'), 'shared/common/c.yaml': `${fw('3.0.0')}bogus: 1\n`, 'envs/.keep': '' });
    symlinkSync('../shared/prod', join(repo, 'envs/prod'));
    symlinkSync('../common', join(repo, 'shared/prod/common'));
    for (const dir of [[], ['--dir', 'envs'], ['--dir', 'envs/prod']]) {
      const r = await runCli([...dir, 'validate'], { cwd: repo });
      expect([dir, r.code]).toEqual([dir, 1]);
      expect(r.stdout).toContain('envs/prod/common/c.yaml:');
      expect(r.stdout).toContain('1 problem in 1 file');
    }
  });

  it('hundreds of links to one folder: each file read once, through the first (not links × files paths)', async () => {
    const files: Record<string, string> = { 'dus-sync.yaml': config(['**/*.yaml', '!shared/**']), 'envs/.keep': '' };
    for (let i = 0; i < 300; i++) files[`shared/big/f${i}.yaml`] = fw(`1.0.${i}`);
    const repo = tree(files);
    for (let i = 0; i < 400; i++) symlinkSync('../shared/big', join(repo, `envs/l${String(i).padStart(3, '0')}`));
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '300 files, 300 documents: valid\n']);
    writeFileSync(join(repo, 'shared/big/f0.yaml'), `${fw('1.0.0')}bogus: 1\n`);
    const bad = await runCli(['validate'], { cwd: repo });
    expect(bad.stdout).toContain('envs/l000/f0.yaml:');
  });

  it('excluded by both paths: not read', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['**/*.yaml', '!shared/**', '!envs/prod/**']), 'shared/prod/x.yaml': 'not: [yaml\n', 'envs/stage.yaml': fw('4.0.0') });
    symlinkSync('../shared/prod', join(repo, 'envs/prod'));
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('diff --base of an unchanged tree with such a link: no change, nothing counted as added', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['**/*.yaml', '!shared/**']), 'shared/prod/x.yaml': fw('1.0.0'), 'envs/stage.yaml': fw('4.0.0') });
    symlinkSync('../shared/prod', join(repo, 'envs/prod'));
    commitAll(repo);
    const r = await runCli(['diff', '--base', 'HEAD', '--format', 'json'], { cwd: repo });
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout) as { summary: Record<string, number> };
    expect(Object.values(plan.summary).filter((n) => n > 0)).toEqual([]);
    writeFileSync(join(repo, 'shared/prod/x.yaml'), fw('1.0.1'));
    const changed = await runCli(['diff', '--base', 'HEAD'], { cwd: repo });
    expect(changed.stdout).toContain('1.0.1');
  });
});

// An eighth breaker round: one file by several paths.
describe('a file the globs reach by several paths is read once', () => {
  const cases: [string, string[], Record<string, string>, [string, string][]][] = [
    ['two globs, a link from one folder into the other', ['tenants/**/*.yaml', 'shared/**/*.yaml'], { 'shared/f.yaml': firmware('1.0.0'), 'tenants/.keep': '' }, [['../shared', 'tenants/s']]],
    ['two globs, a link to a sibling folder', ['tenants/a/*.yaml', 'tenants/b/*.yaml'], { 'tenants/a/f.yaml': firmware('1.0.0') }, [['a', 'tenants/b']]],
    ['a link walked deeper than its real folder', ['tenants/*/*.yaml', 'tenants/*/*/*.yaml'], { 'tenants/eu/prod/f.yaml': firmware('1.0.0') }, [['eu/prod', 'tenants/prod']]],
    ['one glob naming both paths', ['tenants/{a/deep,l}/*.yaml'], { 'tenants/a/deep/f.yaml': firmware('1.0.0') }, [['a/deep', 'tenants/l']]],
    ['a link to a file inside the repository', ['tenants/**/*.yaml'], { 'tenants/a/f.yaml': firmware('1.0.0') }, [['a/f.yaml', 'tenants/link.yaml']]],
  ];
  for (const [what, globs, files, links] of cases) {
    it(`${what}: read once, not "defined twice"`, async () => {
      const repo = tree({ 'dus-sync.yaml': config(globs), ...files });
      for (const [target, at] of links) symlinkSync(target, join(repo, at));
      const r = await runCli(['validate'], { cwd: repo });
      expect([what, r.code, r.stdout]).toEqual([what, 0, '1 file, 1 document: valid\n']);
    });
  }
});

describe('an exclusion YAML reads as a tag', () => {
  it('- !archive/** unquoted: the sentence says to quote it', async () => {
    const repo = tree({ 'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: {}\nresources:\n  - tenants/*.yaml\n  - !archive/**\n', 'tenants/a.yaml': firmware('1.0.0') });
    const r = await runCli(['validate'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain('dus-sync.yaml:8:');
    expect(r.stdout + r.stderr).toContain('resources[1] is empty: YAML reads !archive/** as a tag, not as text; quote it, as in "!archive/**"');
  });
});

// A breaker's find: a glob with a repeating extglob (`envs/+(prod|qa)/*.yaml`) was taken to reach
// every folder below envs, and any glob to reach every folder as deep as its slashes, so a
// dangling link, or a link out of the repository, in envs/dev refused the run, though no path
// there can match. Such links are reported only where some glob may match a path below them.
describe('a link the walk does not follow, where no glob can match below it', () => {
  const layouts: [string, string][] = [['envs/+(prod|qa)/*.yaml', 'envs/prod/a.yaml'], ['envs/{prod/x,qa}/*.yaml', 'envs/prod/x/a.yaml'], ['envs/{prod,qa}/*.yaml', 'envs/qa/a.yaml'], ['envs/@(prod)/*.yaml', 'envs/prod/a.yaml']];
  for (const [glob, file] of layouts) {
    it(`${glob}: a dangling envs/dev2, envs/dev/gone and a link out envs/dev3 -> / are nothing to it`, async () => {
      const repo = tree({ 'dus-sync.yaml': config([glob]), [file]: firmware('1.0.0'), 'envs/dev/b.yaml': firmware('2.0.0') });
      symlinkSync('/nonexistent-dus-sync', join(repo, 'envs/dev2'));
      symlinkSync('/nonexistent-dus-sync', join(repo, 'envs/dev/gone'));
      symlinkSync('/', join(repo, 'envs/dev3'));
      const r = await runCli(['validate'], { cwd: repo });
      expect([glob, r.code, r.stdout + r.stderr]).toEqual([glob, 0, '1 file, 1 document: valid\n']);
      commitAll(repo);
      const d = await runCli(['diff', '--base', 'HEAD'], { cwd: repo });
      expect([glob, d.code, d.stderr]).toEqual([glob, 0, '']);
    });
  }

  // The breaker's round on that change: each was silent with it, and refused before it (or, the
  // last, always silent).
  const reported: [string, string[], Record<string, string>, [string, string][], string][] = [
    ['a glob reaching it only through a link to a folder above it', ['envs/{prod,qa/overrides}/*.yaml'], { 'envs/prod/a.yaml': firmware('1.0.0') }, [['prod', 'envs/qa'], ['/nonexistent-dus-sync', 'envs/prod/overrides']], 'envs/prod/overrides'],
    ['a folder name starting with "!"', ['envs/*/!x/*.yaml', 'other/*.yaml'], { 'other/o.yaml': firmware('2.0.0'), 'envs/p/.keep': '' }, [['/nonexistent-dus-sync', 'envs/p/!x']], 'envs/p/!x'],
    ['an alternative starting with "!"', ['envs/{!legacy/a,prod}/*.yaml', 'other/*.yaml'], { 'other/o.yaml': firmware('2.0.0'), 'envs/.keep': '' }, [['/nonexistent-dus-sync', 'envs/!legacy']], 'envs/!legacy'],
    ['an extglob in a brace, a "?" after it', ['envs/{prod,+(qa)}?/*.yaml'], { 'envs/prod1/a.yaml': firmware('1.0.0') }, [['/nonexistent-dus-sync', 'envs/qa1']], 'envs/qa1'],
    ['the glob\'s own folder', ['envs/qa/*.yaml', 'other/*.yaml'], { 'other/o.yaml': firmware('2.0.0'), 'envs/.keep': '' }, [['/nonexistent-dus-sync', 'envs/qa']], 'envs/qa'],
    ['a folder on the way to the glob\'s own', ['envs/qa/x/*.yaml', 'other/*.yaml'], { 'other/o.yaml': firmware('2.0.0'), 'envs/.keep': '' }, [['/nonexistent-dus-sync', 'envs/qa']], 'envs/qa'],
    ['the folder of a file named in full', ['envs/qa/x.yaml', 'other/*.yaml'], { 'other/o.yaml': firmware('2.0.0'), 'envs/.keep': '' }, [['/nonexistent-dus-sync', 'envs/qa']], 'envs/qa'],
  ];
  for (const [what, globs, files, links, named] of reported) {
    it(`a dangling link below ${what} is reported, by validate and diff --base`, async () => {
      const repo = tree({ 'dus-sync.yaml': config(globs), ...files });
      for (const [target, at] of links) symlinkSync(target, join(repo, at));
      const r = await runCli(['validate'], { cwd: repo });
      expect([what, r.code, r.stdout + r.stderr]).toEqual([what, 1, expect.stringContaining(`${named}:1:1: this symbolic link points to ${links.at(-1)![0]}, which does not exist`)]);
      commitAll(repo);
      const d = await runCli(['diff', '--base', 'HEAD'], { cwd: repo });
      expect([what, d.code, d.stdout + d.stderr]).toEqual([what, 1, expect.stringContaining(`${named}:1:1: this symbolic link points to`)]);
    });
  }

  // A second round: an exclusion of the link's own path silenced it, as did one of the real folder
  // it lies in, and a link out on the way to a glob's folder that lacks the rest of the way.
  const round2: [string, string[], Record<string, string>, [string, string][], string][] = [
    ['an exclusion of its own path only (!envs/?ev leaves envs/dev/x.yaml selected)', ['envs/*/*.yaml', '!envs/?ev', 'anchor/*.yaml'], { 'anchor/a.yaml': firmware('0.1.0'), 'envs/.keep': '' }, [['/nonexistent-dus-sync', 'envs/dev']], 'envs/dev'],
    ['the same, as a glob\'s own folder', ['envs/qa/*.yaml', '!envs/q?', 'anchor/*.yaml'], { 'anchor/a.yaml': firmware('0.1.0'), 'envs/.keep': '' }, [['/nonexistent-dus-sync', 'envs/qa']], 'envs/qa'],
    ['an excluded folder a link leads into (!shared/**, envs/prod -> ../shared/prod)', ['**/*.yaml', '!shared/**'], { 'shared/prod/a.yaml': firmware('1.0.0'), 'envs/.keep': '' }, [['../shared/prod', 'envs/prod'], ['/nonexistent-dus-sync', 'shared/prod/extra']], 'shared/prod/extra'],
  ];
  for (const [what, globs, files, links, named] of round2) {
    it(`a dangling link below ${what} is reported`, async () => {
      const repo = tree({ 'dus-sync.yaml': config(globs), ...files });
      for (const [target, at] of links) symlinkSync(target, join(repo, at));
      const r = await runCli(['validate'], { cwd: repo });
      expect([what, r.code, r.stdout + r.stderr]).toEqual([what, 1, expect.stringContaining(`${named}:1:1: this symbolic link points to /nonexistent-dus-sync, which does not exist`)]);
    });
  }

  it('an exclusion of everything below it (!envs/dev/**) still lets it pass', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['envs/*/*.yaml', '!envs/dev/**', 'anchor/*.yaml']), 'anchor/a.yaml': firmware('0.1.0'), 'envs/.keep': '' });
    symlinkSync('/nonexistent-dus-sync', join(repo, 'envs/dev'));
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  for (const [glob, at, real] of [['envs/qa/sub/*.yaml', 'envs/qa', 'out'], ['envs/qa/**/*.yaml', 'envs', 'out'], ['envs/qa/sub/*.yaml', 'envs/qa', 'out/file']] as const) {
    it(`${glob} with ${at} -> a ${real === 'out' ? 'folder' : 'file'} outside that lacks the rest of the way: reported`, async () => {
      const top = tree({ 'repo/dus-sync.yaml': config([glob, 'anchor/*.yaml']), 'repo/anchor/a.yaml': firmware('0.1.0'), 'repo/envs/.keep': '', 'out/file': 'x' });
      if (at === 'envs') execFileSync('rm', ['-r', join(top, 'repo/envs')]);
      symlinkSync(join(top, real), join(top, 'repo', at));
      const r = await runCli(['validate'], { cwd: join(top, 'repo') });
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).toMatch(new RegExp(`${at}:1:1: this symbolic link points to .*outside the repository`));
    });
  }

  it('thousands of dangling links no glob reaches, beside hundreds of links to their folder: valid at once, not each reported nor refused at the bound', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['envs/{prod,qa/overrides}/*.yaml']), 'envs/prod/a.yaml': firmware('1.0.0') });
    for (let i = 0; i < 3000; i++) symlinkSync(`/nonexistent-dus-sync-${i}`, join(repo, `envs/prod/d${i}`));
    for (let i = 0; i < 300; i++) symlinkSync('prod', join(repo, `envs/q${i}`));
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('thousands of them that links could reach below: refused at the bound, naming a link, not each reported', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['envs/*/sub/*.yaml']), 'envs/prod/sub/a.yaml': firmware('1.0.0') });
    for (let i = 0; i < 3000; i++) symlinkSync(`/nonexistent-dus-sync-${i}`, join(repo, `envs/prod/d${i}`));
    for (let i = 0; i < 300; i++) symlinkSync('prod', join(repo, `envs/q${i}`));
    const r = await runCli(['validate'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/envs\/q0: this symbolic link leads to envs\/prod, a folder listed by its own path .* more than 250,000 paths/);
  });

  // A third round: a path through two aliases that loops (the reference's own example) was taken.
  it('a loop made of two links to folders listed by their own paths is never taken: the excluded envs/staging/secret.yaml is not read as envs/prod/up/staging/secret.yaml', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['**/*.yaml', '!shared/**', '!envs/staging/**']), 'envs/staging/secret.yaml': 'k: [\n', 'shared/prod/p.yaml': firmware('1.0.0') });
    symlinkSync('../shared/prod', join(repo, 'envs/prod'));
    symlinkSync('../../envs', join(repo, 'shared/prod/up'));
    for (const args of [['validate'], ['--dir', 'envs', 'validate']]) {
      const r = await runCli(args, { cwd: repo });
      expect([args, r.code, r.stdout]).toEqual([args, 0, '1 file, 1 document: valid\n']);
    }
    commitAll(repo);
    const d = await runCli(['diff', '--base', 'HEAD'], { cwd: repo });
    expect([d.code, d.stdout + d.stderr]).toEqual([0, expect.not.stringContaining('secret')]);
    symlinkSync('../../nowhere', join(repo, 'envs/staging/gone'));
    const g = await runCli(['validate'], { cwd: repo });
    expect([g.code, g.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('a file read through two links in turn is still read: envs/prod -> ../shared/prod, shared/prod/common -> ../../common', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['**/*.yaml', '!shared/**', '!common/**']), 'shared/prod/.keep': '', 'common/c.yaml': 'k: [\n', 'envs/.keep': '' });
    symlinkSync('../shared/prod', join(repo, 'envs/prod'));
    symlinkSync('../../common', join(repo, 'shared/prod/common'));
    for (const args of [['validate'], ['--dir', 'envs', 'validate']]) {
      const r = await runCli(args, { cwd: repo });
      expect([args, r.code, r.stdout]).toEqual([args, 1, expect.stringMatching(/(?:^|\/)prod\/common\/c\.yaml:1:\d+: YAML syntax error/)]);
    }
  });

  it('60 links to a folder of 4,200 binaries beside its YAML: valid at once (only names a glob may select are tried through links)', async () => {
    const files: Record<string, string> = { 'dus-sync.yaml': config(['**/*.yaml', '!shared/**']), 'shared/prod/p.yaml': firmware('1.0.0'), 'envs/.keep': '' };
    for (let i = 0; i < 4200; i++) files[`shared/prod/blobs/f${i}.bin`] = '';
    const repo = tree(files);
    for (let i = 0; i < 60; i++) symlinkSync('../shared/prod', join(repo, `envs/e${i}`));
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('a link out of the repository reached only through a link to a folder above it is reported', async () => {
    const top = tree({ 'repo/dus-sync.yaml': config(['envs/{prod,qa/overrides}/*.yaml']), 'repo/envs/prod/a.yaml': firmware('1.0.0'), 'out/x/b.yaml': firmware('6.6.6') });
    symlinkSync('prod', join(top, 'repo/envs/qa'));
    symlinkSync(join(top, 'out/x'), join(top, 'repo/envs/prod/overrides'));
    const r = await runCli(['validate'], { cwd: join(top, 'repo') });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/envs\/prod\/overrides:1:1: .*outside/);
    expect(r.stdout + r.stderr).not.toContain('6.6.6');
  });

  for (const [glob, says] of [['envs/prod|qa/*.yaml', 'holds a "|" outside parentheses'], ['envs/{prod|v2}/*.yaml', 'holds a "|" outside parentheses'], ['envs/{1..10}/*.yaml', 'holds the range "{1..10}"'], ['releases/{2023..2025}/*.yaml', 'holds the range "{2023..2025}"'],
    ['envs/{/prod,z}/*.yaml', '("//" after its first wildcard or brace)'], ['envs/{prod/,z}/*.yaml', '("//" after its first wildcard or brace)'], ['envs/{x/..,prod}/*.yaml', 'holds ".." after its first wildcard or brace'], ['envs/{prod}/*.yaml', 'holds the brace "{prod}" with one alternative'],
    ['envs/***/fw.yaml', 'holds "***"'], ['y/b/**/*()?', 'holds the empty extglob "*()"'], ['t/[!_]*.yaml', 'holds the class "[!_]", which picomatch reads as the characters themselves'],
    ['envs/prod (eu)/*.yaml', 'holds the group "(eu)", which picomatch reads as the text inside it'], ['envs/\\*(prod)/*.yaml', 'holds the group "(prod)"'], ['envs/@(a(b)|prod)/*.yaml', 'holds the group "(b)"'], ['envs/prod/report (1).yaml', 'holds the group "(1)"'], ['envs/*"rod"/*.yaml', 'holds a double quote'],
    ['envs/pro\\d/*.yaml', 'holds "\\d", which picomatch passes to its regular expression'], ['envs/pro[\\w]/*.yaml', 'holds "\\w"'], ['envs/pro\\x64/*.yaml', 'holds "\\x"'], ['envs/(?:prod|qa)/*.yaml', 'holds "(?", which picomatch does not read as a parenthesis and a wildcard'],
    ['envs/p[!]od/*.yaml', 'holds the class "[!]"'], ['envs/p[*/*.yaml', 'holds a "[" that is not closed'], ['envs/p\\{q/**', 'holds "\\{", after which'],
    ['!envs/?(prod)/**', 'can name a path with an empty folder name ("//"): a "*(…)" or "?(…)" that is a whole folder name may match nothing'],
    ['envs/@(pro)?/*.yaml', 'holds ")?", which picomatch passes to its regular expression, where the "?" makes the group before it optional'], ['envs/@(prod)+/*.yaml', 'holds ")+"'], ['envs/*(p)?rod/*.yaml', 'holds ")?"'],
    ['envs/pr\\\\\\od/*.yaml', 'holds three or more backslashes in a row'],
    // picomatch's makeRe never returned for these (a pull request could stall validate, diff --base and watch).
    ['envs/*\\\\\\\\', 'holds three or more backslashes in a row'], ['!envs/a]\\\\\\\\', 'holds three or more backslashes in a row'], ['envs/@(a)\\\\\\\\', 'holds three or more backslashes in a row'],
    ['envs/[ab]+.yaml', 'holds "[ab]+", which picomatch passes to its regular expression, where the "+" makes the class before it repeat'], ['envs/+(a| )/*.yaml', 'holds the extglob "+(…", which picomatch reads here as plain text'],
    ['envs/pr\\\\ od/*.yaml', 'holds an escaped backslash'], ['**@(prod|a)/*.yaml', 'holds "**" within a name'], ['envs/{pro,x}+d/*.yaml', 'the "+" makes the brace before it repeat'],
    ['envs/[{a,b}]/*.yaml', 'a class or extglob with a brace or a comma that a shell\'s brace expansion cuts through'], ['envs/{@(prod,x),c}/*.yaml', 'holds "@(prod,"'], ['!envs/{*,}*', 'which makes "**" with the "*" beside it'],
    ['envs/{{*,},}*', 'holds the brace "{{*,},}", which makes "**"'], ['!envs/{a,*}{b,*}', 'holds the brace "{a,*}", which makes "**"']] as const) {
    it(`${glob}: refused (picomatch reads it otherwise than it looks), not read silently other than meant`, async () => {
      const repo = tree({ 'dus-sync.yaml': config([glob]), 'envs/prod/a.yaml': firmware('1.0.0') });
      const r = await runCli(['validate'], { cwd: repo });
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).toContain(says);
    });
  }

  it('a folder named with parentheses is read by the glob that names it ([(]eu[)] or \\(eu\\)), never its sibling without them; a group with "|" is alternatives', async () => {
    // The sibling without parentheses is invalid: read, validate would fail naming it.
    const repo = tree({ 'envs/prod (eu)/a.yaml': firmware('1.0.0'), 'envs/prod eu/b.yaml': 'kind: Nope\n', 'envs/qa/c.yaml': firmware('2.0.0') });
    for (const [glob, files] of [['envs/prod[ ][(]eu[)]/*.yaml', 1], ['envs/prod \\(eu\\)/*.yaml', 1], ['envs/(prod[ ][(]eu[)]|qa)/*.yaml', 2]] as const) {
      writeFileSync(join(repo, 'dus-sync.yaml'), config([glob]));
      const r = await runCli(['validate'], { cwd: repo });
      expect([r.code, r.stdout], glob).toEqual([0, `${files} file${files === 1 ? '' : 's'}, ${files} document${files === 1 ? '' : 's'}: valid\n`]);
    }
    // The same for a double quote, which picomatch takes as quoting: ["] is the character.
    const quoted = tree({ 'y/c"d".yaml': firmware('1.0.0'), 'y/cd.yaml': 'kind: Nope\n' });
    writeFileSync(join(quoted, 'dus-sync.yaml'), config(['y/*["]d["].yaml']));
    expect((await runCli(['validate'], { cwd: quoted })).stdout).toBe('1 file, 1 document: valid\n');
    writeFileSync(join(repo, 'dus-sync.yaml'), config(['envs/(prod (eu)|qa)/*.yaml']));
    const r = await runCli(['validate'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain('holds the group "(eu)"');
    expect(r.stdout + r.stderr).not.toContain('b.yaml');
  });

  it('a file where a glob expects a folder (tenants/**/*.yaml with a file named tenants) is not read: nothing is below a file', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['tenants/**/*.yaml', 'envs/*/x.yaml', 'a/*.yaml']), tenants: firmware('6.6.6'), 'envs/prod': firmware('6.6.7'), 'a/b.yaml': firmware('1.0.0') });
    for (const args of [['validate'], ['validate', '--format', 'json']]) {
      const r = await runCli(args, { cwd: repo });
      expect([args, r.code]).toEqual([args, 0]);
      expect(r.stdout + r.stderr).not.toMatch(/6\.6\.[67]|tenants|envs/);
    }
    commitAll(repo);
    const r = await runCli(['diff', '--base', 'HEAD'], { cwd: repo });
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).not.toMatch(/6\.6\.[67]/);
  });

  it('a class is the characters it holds, not its own text too: t/[ab].yaml reads t/a.yaml, not a file named t/[ab].yaml', async () => {
    const repo = tree({ 't/a.yaml': firmware('1.0.0'), 't/[ab].yaml': 'kind: Nope\n', 'v[1]/d.yaml': 'kind: Nope\n', 'v1/e.yaml': firmware('2.0.0') });
    writeFileSync(join(repo, 'dus-sync.yaml'), config(['t/[ab].yaml', 'v[1]/*.yaml']));
    const r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout]).toEqual([0, '2 files, 2 documents: valid\n']);
    // And an exclusion leaves out what its class matches only: t/[ab].yaml stays.
    writeFileSync(join(repo, 't/[ab].yaml'), firmware('3.0.0'));
    writeFileSync(join(repo, 'dus-sync.yaml'), config(['t/*.yaml', '!t/[ab].yaml']));
    const x = await runCli(['validate'], { cwd: repo });
    expect([x.code, x.stdout]).toEqual([0, '1 file, 1 document: valid\n']);
  });

  it('an emoji in a name is one character to "?", "[^x]" and exclusions, as any other character', async () => {
    // Each file read that should not be is invalid: validate would name it.
    const repo = tree({ 'r😀s.yaml': firmware('1.0.0'), 'ras.yaml': firmware('2.0.0'), 'rs.yaml': 'kind: Nope\n', 'r😀😀s.yaml': 'kind: Nope\n' });
    for (const [globs, files] of [[['r?s.yaml'], 2], [['r[^x]s.yaml'], 2], [['r*.yaml', '!r??s.yaml', '!rs.yaml'], 2]] as const) {
      writeFileSync(join(repo, 'dus-sync.yaml'), config([...globs]));
      const r = await runCli(['validate'], { cwd: repo });
      expect([globs, r.code, r.stdout]).toEqual([globs, 0, `${files} files, ${files} documents: valid\n`]);
    }
    writeFileSync(join(repo, 'dus-sync.yaml'), config(['r??s.yaml']));
    expect((await runCli(['validate'], { cwd: repo })).stdout + '').not.toContain('r😀s.yaml');
  });

  it('where a glob may match below it, it is still reported: envs/qa dangling, envs/prod/x a link out', async () => {
    const repo = tree({ 'dus-sync.yaml': config(['envs/+(prod|qa)/*.yaml']), 'envs/prod/a.yaml': firmware('1.0.0') });
    symlinkSync('/nonexistent-dus-sync', join(repo, 'envs/qa'));
    let r = await runCli(['validate'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain('envs/qa:1:1: this symbolic link points to /nonexistent-dus-sync, which does not exist');
    const other = tree({ 'dus-sync.yaml': config(['envs/{prod/x,qa}/*.yaml']), 'envs/prod/a.yaml': firmware('1.0.0') });
    symlinkSync('/', join(other, 'envs/prod/x'));
    r = await runCli(['validate'], { cwd: other });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/envs\/prod\/x:1:1: .*outside/);
  });
});
