import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fallbackTargets, watchTargets } from '../../src/agent/targets.js';
import type { ResolvedConfig } from '../../src/model/index.js';

function config(extra: Partial<ResolvedConfig> = {}): ResolvedConfig {
  return { file: '/repo/dus-sync.yaml', dir: '/repo', tenants: {}, safety: {}, watchIntervalMs: 300_000, suspend: false, ...extra };
}

describe('watchTargets', () => {
  it('watches the config file and the folder before each glob, and filters events by the globs', () => {
    const t = watchTargets(config({ resources: ['tenants/**/*.yaml', 'shared/*.yml'] }));
    expect(t.paths).toEqual(['/repo/dus-sync.yaml', '/repo/shared', '/repo/tenants']);
    expect(t.filter('/repo/tenants/acme/a.yaml')).toBe(true);
    expect(t.filter('/repo/shared/x.yml')).toBe(true);
    expect(t.filter('/repo/tenants/acme/notes.txt')).toBe(false);
    expect(t.filter('/repo/tenants/.git/x.yaml')).toBe(false);
    expect(t.filter('/repo/tenants/acme/a.yaml.tmp-12')).toBe(false);
  });

  it('by default watches the whole folder (the config file stays a path of its own)', () => {
    const t = watchTargets(config());
    expect(t.paths).toEqual(['/repo/dus-sync.yaml', '/repo']);
    expect(t.filter('/repo/a/b.yml')).toBe(true);
    // The config is not a resource, but it is watched as a path, so its events count.
    expect(t.filter('/repo/dus-sync.yaml')).toBe(false);
  });

  it('folds nested roots and watches a literal file through its folder', () => {
    const t = watchTargets(config({ resources: ['tenants/**/*.yaml', 'tenants/acme/*.yaml', 'extra/one.yaml'] }));
    expect(t.paths).toEqual(['/repo/dus-sync.yaml', '/repo/extra', '/repo/tenants']);
  });

  it('--dir inside the config\'s folder narrows the roots and the filter to it', () => {
    const t = watchTargets(config({ dir: '/repo/tenants/acme', resources: ['tenants/**/*.yaml', 'shared/*.yml'] }));
    expect(t.paths).toEqual(['/repo/dus-sync.yaml', '/repo/tenants/acme']);
    expect(t.filter('/repo/tenants/acme/a.yaml')).toBe(true);
    expect(t.filter('/repo/tenants/globex/a.yaml')).toBe(false);
    expect(t.filter('/repo/shared/x.yml')).toBe(false);
  });

  it('--dir outside the config\'s folder is watched whole: the config\'s globs cannot reach it', () => {
    const t = watchTargets(config({ dir: '/desired', resources: ['tenants/**/*.yaml'] }));
    expect(t.paths).toEqual(['/repo/dus-sync.yaml', '/desired']);
    expect(t.filter('/desired/x/a.yml')).toBe(true);
  });

  it('without a config file watches --dir', () => {
    const t = watchTargets(config({ file: undefined, dir: '/desired' }));
    expect(t.paths).toEqual(['/desired']);
  });

  it('before any config could be read, watches where it would be', () => {
    expect(fallbackTargets('/work', 'conf/dus-sync.yaml').paths).toEqual(['/work/conf/dus-sync.yaml', '/work/conf']);
    expect(fallbackTargets('/work').paths).toEqual(['/work/dus-sync.yaml', '/work']);
  });

  it.skipIf(process.platform === 'win32')('watches no folder a link leads to out of the repository, unless --follow-external-symlinks', () => {
    const tmp = mkdtempSync(join(tmpdir(), 'dus-targets-'));
    try {
      const repo = join(tmp, 'repo');
      mkdirSync(join(repo, 'tenants', 'real'), { recursive: true });
      mkdirSync(join(tmp, 'outside'));
      symlinkSync(join(tmp, 'outside'), join(repo, 'tenants', 'out'));
      symlinkSync('real', join(repo, 'tenants', 'in'));
      const t = watchTargets(config({ file: join(repo, 'dus-sync.yaml'), dir: repo }));
      expect([t.folder!(join(repo, 'tenants')), t.folder!(join(repo, 'tenants', 'real')), t.folder!(join(repo, 'tenants', 'in'))]).toEqual([true, true, true]);
      expect(t.folder!(join(repo, 'tenants', 'out'))).toBe(false);
      const followed = watchTargets(config({ file: join(repo, 'dus-sync.yaml'), dir: repo, reading: { maxFileBytes: 1024, followExternalSymlinks: true } }));
      expect(followed.folder!(join(repo, 'tenants', 'out'))).toBe(true);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
