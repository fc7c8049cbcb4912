// Finding desired-state files without tinyglobby: links that loop or fan out end, each real
// folder is walked once and listed by its own path, links to folders outside the repository and
// dangling links are listed for the reader to report (unless a negated glob excludes them),
// and only the folders the globs can reach are walked.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/load/config.js';
import { listResourceFiles, loadDesiredState } from '../../src/load/index.js';
import { throughLinks } from '../../src/load/find.js';

const tmp = mkdtempSync(join(tmpdir(), 'dus-find-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let n = 0;
function repo(config: string | undefined, files: Record<string, string>, links: Record<string, string> = {}): string {
  const dir = join(tmp, `r${n++}`);
  mkdirSync(dir, { recursive: true });
  if (config !== undefined) writeFileSync(join(dir, 'dus-sync.yaml'), `apiVersion: dus-sync/v1\nkind: Config\n${config}`);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  for (const [path, target] of Object.entries(links)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    symlinkSync(target, join(dir, path));
  }
  return dir;
}

// --dir: several repositories here have no config, and without one a folder must be named.
const list = async (dir: string) => listResourceFiles(await resolveConfig({ cwd: dir, dir, env: {} }));

describe.skipIf(process.platform === 'win32')('listResourceFiles', () => {
  it('ends on links that loop, and lists a file once, by its own path', async () => {
    const dir = repo(undefined, { 'a/f.yaml': '' }, { 'a/self': '.', 'a/up': '..', 'b/to-a': '../a' });
    expect(await list(dir)).toEqual(['a/f.yaml']);
  });

  it('ends on links that fan out (2^30 paths, 31 real folders)', async () => {
    const files: Record<string, string> = {};
    const links: Record<string, string> = {};
    for (let i = 0; i <= 30; i++) {
      files[`lib/l${i}/f${i}.yaml`] = '';
      if (i < 30) {
        links[`lib/l${i}/x`] = `../l${i + 1}`;
        links[`lib/l${i}/y`] = `../l${i + 1}`;
      }
    }
    const dir = repo(undefined, files, links);
    expect(await list(dir)).toEqual(Array.from({ length: 31 }, (_, i) => `lib/l${i}/f${i}.yaml`).sort());
  });

  it('walks a linked folder inside the repository, and only lists one outside it', async () => {
    const outside = repo(undefined, { 'x.yaml': '' });
    const dir = repo('resources: ["tenants/**/*.yaml"]\n', { 'shared/s.yaml': '' }, { 'tenants/in': '../shared', 'tenants/out': outside });
    expect(await list(dir)).toEqual(['tenants/in/s.yaml', 'tenants/out']);
    const followed = await listResourceFiles(await resolveConfig({ cwd: dir, env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: '1' } }));
    expect(followed).toEqual(['tenants/in/s.yaml', 'tenants/out/x.yaml']);
  });

  it('lists dangling links in reach of the globs, not those a negated glob excludes or no glob reaches', async () => {
    const dir = repo('resources: ["tenants/**/*.yaml", "!tenants/old/**"]\n', { 'tenants/a.yaml': '' }, {
      'tenants/gone.yaml': 'nowhere.yaml', 'tenants/gone-folder': 'nowhere', 'tenants/old/gone.yaml': 'nowhere.yaml', 'docs/gone': 'nowhere',
    });
    expect(await list(dir)).toEqual(['tenants/a.yaml', 'tenants/gone-folder', 'tenants/gone.yaml']);
  });

  it('walks only as deep as a glob without ** can match', async () => {
    const dir = repo('resources: ["tenants/*.yaml", "single/x.yaml"]\n', { 'tenants/a.yaml': '', 'tenants/deep/b.yaml': '', 'single/x.yaml': '', 'single/y.yaml': '' }, { 'tenants/deep/gone': 'nowhere' });
    expect(await list(dir)).toEqual(['single/x.yaml', 'tenants/a.yaml']);
  });

  it('a folder of resources that is itself a link out of the repository is reported, not walked', async () => {
    const outside = repo(undefined, { 'x.yaml': '' });
    const dir = repo('resources: ["tenants/**/*.yaml"]\n', {}, { tenants: outside });
    expect(await list(dir)).toEqual(['tenants']);
    const { issues } = await loadDesiredState(await resolveConfig({ cwd: dir, env: {} }));
    expect(issues.map((i) => i.message)).toEqual([expect.stringMatching(/^this symbolic link points to the folder .* outside the repository folder .*--follow-external-symlinks/)]);
  });

  it('--dir inside the repository walks only that folder, and reports only the links below it', async () => {
    const outside = repo(undefined, { 'x.yaml': '' });
    const dir = repo('resources: ["tenants/**/*.yaml"]\n', { 'tenants/acme/a.yaml': '', 'tenants/globex/b.yaml': '' }, { 'tenants/globex/out': outside, 'tenants/acme/gone': 'nowhere' });
    const config = await resolveConfig({ cwd: dir, dir: 'tenants/acme', env: {} });
    expect(await listResourceFiles(config)).toEqual(['a.yaml', 'gone']);
    expect(await list(dir)).toEqual(['tenants/acme/a.yaml', 'tenants/acme/gone', 'tenants/globex/b.yaml', 'tenants/globex/out']);
  });

  it('past 250,000 paths tried through links, the listing is refused in one sentence naming a link, not run for minutes', async () => {
    const files: Record<string, string> = { 'envs/.keep': '' };
    for (let i = 0; i < 1_000; i++) files[`shared/big/f${i}.yaml`] = '';
    const links: Record<string, string> = {};
    for (let i = 0; i < 1_001; i++) links[`envs/l${i}`] = '../shared/big';
    // (`!envs/**/*.yaml`, not `!envs/**`: a link in a folder an exclusion rules out whole gives no path to try.)
    const dir = repo('resources: ["**/*.yaml", "!shared/**", "!envs/**/*.yaml"]\n', files, links);
    const started = Date.now();
    await expect(listResourceFiles(await resolveConfig({ cwd: dir, env: {} }))).rejects.toThrow(/envs\/l0: this symbolic link leads to \S*shared\/big, a folder listed by its own path \(whether the globs select it there or not\), and with the 1,001 links like it makes more than 250,000 paths \(or 64 MiB of them\) to try .*name the real folders in "resources" of \S*dus-sync.yaml, or remove links$/);
    expect(Date.now() - started).toBeLessThan(60_000);
  });

  it('links inside a folder an exclusion rules out whole give no paths to try: a large testdata/ with links in it is no refusal, nor slow', async () => {
    const files: Record<string, string> = { 'tenants/acme/a.yaml': '', 'common1/c.yaml': '' };
    for (let d = 0; d < 50; d++) for (let f = 0; f < 200; f++) files[`testdata/big/d${d}/f${f}.yaml`] = '';
    const links: Record<string, string> = { 'tenants/acme/common1': '../../common1' };
    for (let i = 1; i <= 30; i++) links[`testdata/alias${i}`] = 'big';
    const dir = repo('resources: ["**/*.yaml", "!testdata/**"]\n', files, links);
    expect(await listResourceFiles(await resolveConfig({ cwd: dir, env: {} }))).toEqual(['common1/c.yaml', 'tenants/acme/a.yaml']);
  });

  it('a name that is not UTF-8 in a folder an exclusion rules out whole refuses nothing', async () => {
    const dir = repo('resources: ["**/*.yaml", "!archive/**"]\n', { 'tenants/a.yaml': '', 'archive/.keep': '' });
    writeFileSync(Buffer.concat([Buffer.from(join(dir, 'archive/x')), Buffer.from([0xff]), Buffer.from('.yaml')]), '');
    expect(await listResourceFiles(await resolveConfig({ cwd: dir, env: {} }))).toEqual(['tenants/a.yaml']);
    writeFileSync(Buffer.concat([Buffer.from(join(dir, 'tenants/y')), Buffer.from([0xff]), Buffer.from('.yaml')]), '');
    await expect(listResourceFiles(await resolveConfig({ cwd: dir, env: {} }))).rejects.toThrow(/tenants: this folder holds a name that is not valid UTF-8/);
  });

  it('an empty --dir (an unset variable) is refused, not taken for the working folder', async () => {
    await expect(resolveConfig({ cwd: tmp, dir: '', env: {} })).rejects.toThrow('--dir is empty');
    await expect(resolveConfig({ cwd: tmp, dir: ' ', env: {} })).rejects.toThrow('--dir is empty');
  });

  it('--dir through a dangling link or a loop of links names the link; --dir file.yaml/.. and gone/.. name nothing, as for the kernel', async () => {
    const dir = repo('default_tenant: acme\n', { 'tenants/a.yaml': '' }, { 'tenants/dang': 'gone', 'tenants/loop1': 'loop2', 'tenants/loop2': 'loop1' });
    const list = async (d: string) => listResourceFiles(await resolveConfig({ cwd: dir, dir: d, env: {} }));
    await expect(list('tenants/dang')).rejects.toThrow(/tenants\/dang cannot be read: \S*tenants\/dang is a symbolic link to "gone", which does not exist; check --dir/);
    await expect(list('tenants/dang/x')).rejects.toThrow(/tenants\/dang\/x cannot be read: \S*tenants\/dang is a symbolic link to "gone", which does not exist/);
    await expect(list('tenants/loop1')).rejects.toThrow(/tenants\/loop1 is a symbolic link to "loop2" that leads back to itself \(a loop of links\)/);
    await expect(list('tenants/missing')).rejects.toThrow(/the folder \S*tenants\/missing does not exist; check --dir/);
    // Missing further up is missing too (told by the kind of failure, not by the sentence).
    await expect(list('tenants/missing/deeper')).rejects.toThrow(/^the folder \S*tenants\/missing\/deeper does not exist; check --dir/);
    await expect(list('tenants/a.yaml/..')).rejects.toThrow(/^--dir tenants\/a.yaml\/.. names no folder: \S*tenants\/a.yaml is not a folder; name the folder/);
    await expect(list('tenants/gone/..')).rejects.toThrow(/^--dir tenants\/gone\/.. names no folder: \S*tenants\/gone does not exist/);
    expect(await list('tenants/../tenants')).toEqual(['a.yaml', 'dang', 'loop1', 'loop2']);
  });

  it('a repository reached through a link (git-sync swaps one) is read as usual', async () => {
    const real = repo('default_tenant: acme\n', { 'tenants/f.yaml': 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: {}\nspec: { id: 1, phases: [] }\n' });
    const current = join(tmp, `current-${n++}`);
    symlinkSync(real, current);
    const config = await resolveConfig({ cwd: current, env: {} });
    expect(await listResourceFiles(config)).toEqual(['tenants/f.yaml']);
    const { issues, desired } = await loadDesiredState(config);
    expect(issues).toEqual([]);
    expect(desired.actions).toHaveLength(1);
  });

  it('--dir spelt through a link into the config\'s folder is narrowed by the config\'s globs, as spelt the real way', async () => {
    const real = repo('resources: ["tenants/**/*.yaml", "!tenants/**/draft-*.yaml"]\n', { 'tenants/acme/a.yaml': '', 'tenants/acme/draft-b.yaml': '', 'tenants/globex/c.yaml': '' });
    const link = join(tmp, `link-${n++}`);
    symlinkSync(real, link);
    const file = join(real, 'dus-sync.yaml');
    for (const dir of [join(link, 'tenants'), join(link, 'tenants/acme'), link]) {
      const config = await resolveConfig({ cwd: tmp, dir, config: file, env: {} });
      const asSpelt = await resolveConfig({ cwd: tmp, dir: dir.replace(link, real), config: file, env: {} });
      expect(config.dir).toBe(asSpelt.dir);
      expect(await listResourceFiles(config)).toEqual(await listResourceFiles(asSpelt));
      expect(await listResourceFiles(config)).not.toContainEqual(expect.stringMatching(/draft/));
    }
    // Without --config, the config above the folder the link leads to, as `cd DIR` would find it.
    const found = await resolveConfig({ cwd: tmp, dir: join(link, 'tenants'), env: {} });
    expect(found.file).toBe(join(link, 'dus-sync.yaml'));
    const acmeLink = join(tmp, `acme-${n++}`);
    symlinkSync(join(real, 'tenants/acme'), acmeLink);
    const fromLink = await resolveConfig({ cwd: tmp, dir: acmeLink, env: {} });
    expect(fromLink.file).toBe(file);
    expect(await listResourceFiles(fromLink)).toEqual(['a.yaml']);
    // A link inside the repository on the rest of the way stays as written: --dir through a
    // link to envs, then envs/prod -> ../shared/prod, the globs leaving out shared/.
    const layered = repo('resources: ["**/*.yaml", "!shared/**"]\n', { 'shared/prod/x.yaml': '', 'tenants/t.yaml': '' }, { 'envs/prod': '../shared/prod' });
    const envsLink = join(tmp, `envs-${n++}`);
    symlinkSync(join(layered, 'envs'), envsLink);
    const prodLink = join(tmp, `prod-${n++}`);
    symlinkSync(join(layered, 'envs/prod'), prodLink);
    for (const spelt of [join(layered, 'envs/prod'), join(envsLink, 'prod'), prodLink]) {
      for (const withConfig of [{}, { config: join(layered, 'dus-sync.yaml') }]) {
        const c = await resolveConfig({ cwd: tmp, dir: spelt, env: {}, ...withConfig });
        expect([spelt, c.dir]).toEqual([spelt, join(layered, 'envs/prod')]);
        expect(await listResourceFiles(c)).toEqual(['x.yaml']);
      }
    }
    // Outside the config's folder by both readings: every YAML file below it, as before.
    const other = repo(undefined, { 'x/draft-y.yaml': '' });
    const config = await resolveConfig({ cwd: tmp, dir: other, config: file, env: {} });
    expect(config.dir).toBe(other);
    expect(await listResourceFiles(config)).toEqual(['x/draft-y.yaml']);
  });
});

describe('throughLinks: the paths of files through links to folders listed by other paths', () => {
  const selects = (p: string) => p.startsWith('envs/');
  it('tries links in order and stops at the first path selected, through several links in turn', () => {
    const found = { entries: ['shared/common/c.yaml', 'shared/prod/x.yaml', 'tenants/t.yaml'], aliases: [['envs/b', 'shared/prod'], ['envs/a', 'shared/prod'], ['shared/prod/common', 'shared/common']] as [string, string][] };
    const out = throughLinks(found, (e) => !selects(e) && !e.startsWith('tenants/'), selects);
    expect(out).toEqual(new Map([['shared/common/c.yaml', 'envs/a/common/c.yaml'], ['shared/prod/x.yaml', 'envs/a/x.yaml']]));
  });

  it('ends on links that lead into each other (a/x -> ../b, b/y -> ../a) when no path is selected', () => {
    const found = { entries: ['a/f.yaml', 'b/g.yaml'], aliases: [['a/x', 'b'], ['b/y', 'a']] as [string, string][] };
    expect(throughLinks(found, () => true, () => false)).toEqual(new Map());
  });

  it('gives up past its bound on the text of the paths held for one file, whatever their number (long link names)', () => {
    const entries = ['shared/f.yaml'];
    const aliases = Array.from({ length: 100 }, (_, i) => [`envs/${'l'.repeat(10_000)}${i}`, 'shared'] as [string, string]);
    expect(throughLinks({ entries, aliases }, () => true, () => false, 1_000, 900_000)).toBe('too-many');
    expect(throughLinks({ entries, aliases }, () => true, () => false, 1_000, 1_100_000)).toEqual(new Map());
  });

  it('tries nothing through links whose every path an exclusion rules out, unless a link on their way leads on', () => {
    const entries = Array.from({ length: 100 }, (_, i) => `testdata/big/f${i}.yaml`);
    const aliases = Array.from({ length: 30 }, (_, i) => [`testdata/alias${i}`, 'testdata/big'] as [string, string]);
    let tried = 0;
    const closed = new Set(aliases.map(([l]) => l));
    expect(throughLinks({ entries, aliases, closed }, () => true, () => { tried++; return false; }, 10)).toEqual(new Map());
    expect(tried).toBe(0);
    // A link to testdata from where paths are selected makes them worth trying again.
    const opened = [...aliases, ['envs/td', 'testdata'] as [string, string]];
    const out = throughLinks({ entries, aliases: opened, closed }, () => true, (p) => p.startsWith('envs/'));
    expect(out).toHaveProperty('size', 100);
    expect(out instanceof Map ? out.get('testdata/big/f0.yaml') : out).toBe('envs/td/big/f0.yaml');
  });

  it('gives up past its budget of paths (thousands of links to a folder whose files no path selects)', () => {
    const entries = Array.from({ length: 50 }, (_, i) => `shared/f${i}.yaml`);
    const aliases = Array.from({ length: 50 }, (_, i) => [`envs/l${i}`, 'shared'] as [string, string]);
    expect(throughLinks({ entries, aliases }, () => true, () => false, 2_499)).toBe('too-many');
    expect(throughLinks({ entries, aliases }, () => true, () => false, 2_500)).toEqual(new Map());
    // Selected through the first link: one path a file, whatever the number of links.
    expect(throughLinks({ entries, aliases }, () => true, () => true, 50)).toHaveProperty('size', 50);
  });
});
