// diff --base reads the base side from git: a file too large is refused by name before any of it
// is read (a 700 MB blob, 700 KB in git, was read whole), and a name holding a line break, which
// git's line protocol would take for another file, is read by object id.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { filesChangedSince, readDesiredAtRef } from '../../src/load/git.js';

const dir = mkdtempSync(join(tmpdir(), 'dus-git-blobs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: dir, encoding: 'utf8' });

mkdirSync(join(dir, 't'));
writeFileSync(join(dir, 't', 'a.yaml'), 'small: 1\n');
writeFileSync(join(dir, 't', 'big.yaml'), 'x'.repeat(6 * 1024 * 1024));
writeFileSync(join(dir, 't', 'odd\nbig.yaml'), 'odd: 1\n');
git('init', '-q');
git('add', '.');
git('commit', '-qm', 'base');
const commit = git('rev-parse', 'HEAD').trim();

describe('reading the base side from git', () => {
  it('a file larger than the limit is refused by name, from its size alone', async () => {
    await expect(readDesiredAtRef({ dir, ref: 'HEAD', select: (paths) => paths, maxBytes: 5 * 1024 * 1024 }))
      .rejects.toThrow(/^the file t\/big\.yaml at [0-9a-f]{12} is 6 MiB, larger than the 5 MiB a desired-state file may be; this is probably not one/);
  });

  it('files within the limit are read; a path the commit does not hold, or a folder, is named as unread', async () => {
    const r = await readDesiredAtRef({ dir, ref: 'HEAD', select: () => ['t/a.yaml', 't/none.yaml', 't'], maxBytes: 1024 });
    expect(r.commit).toBe(commit);
    expect(r.files).toEqual([{ path: 't/a.yaml', text: 'small: 1\n' }]);
    expect(r.unread.map((u) => u.path)).toEqual(['t/none.yaml', 't']);
    expect(r.unread[1]!.message).toMatch(/this leads to a folder, not to a file/);
  });

  it('a name with a line break is read by object id, not taken for another file (git\'s line protocol would)', async () => {
    const r = await readDesiredAtRef({ dir, ref: 'HEAD', select: () => ['t/odd\nbig.yaml'], maxBytes: 1024 });
    expect(r.files).toEqual([{ path: 't/odd\nbig.yaml', text: 'odd: 1\n' }]);
  });
});

describe('which files the working tree changed since a ref (review\'s key files)', () => {
  it('lists a file added or edited, not one git does not track, nor one outside; a name git spells otherwise counts as changed', async () => {
    mkdirSync(join(dir, 'keys'));
    mkdirSync(join(dir, '..keys'));
    writeFileSync(join(dir, 'keys', 'untracked.key'), 'ci\n');
    writeFileSync(join(dir, 'keys', 'added.key'), 'pr\n');
    writeFileSync(join(dir, '..keys', 'a.key'), 'pr\n');
    git('add', 'keys/added.key', '..keys/a.key');
    const asked = [join(dir, 'keys', 'untracked.key'), join(dir, 'keys', 'added.key'), join(dir, '..keys', 'a.key'), join(dir, '..', 'outside.key')];
    expect((await filesChangedSince(dir, commit, asked)).sort()).toEqual([join(dir, '..keys', 'a.key'), join(dir, 'keys', 'added.key')]);
    // A lone surrogate is written to disk, and spelled by git, as U+FFFD: not the name asked for.
    const odd = join(dir, 'keys', 'acme\uDC80.key');
    writeFileSync(odd, 'pr\n');
    git('add', 'keys');
    expect(await filesChangedSince(dir, commit, [odd, join(dir, 'keys', 'untracked.key')])).toEqual([odd, join(dir, 'keys', 'untracked.key')]);
  });
});
