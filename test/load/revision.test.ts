// Provenance reads git without a shell, within a deadline, and says nothing (no error) when
// there is no revision to tell: git missing, not a repository, a git that hangs.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseStatus, readRevision } from '../../src/load/revision.js';

const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }); });
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'dus-rev-'));
  dirs.push(d);
  return d;
}
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd, encoding: 'utf8' });

describe('readRevision', () => {
  it('reads HEAD from a subfolder of the repository, clean, then dirty below the folder only', async () => {
    const repo = temp();
    git(repo, 'init', '-q');
    mkdirSync(join(repo, 'deploy', 'tenants'), { recursive: true });
    writeFileSync(join(repo, 'deploy', 'tenants', 'a.yaml'), 'x: 1\n');
    writeFileSync(join(repo, 'other.txt'), 'o\n');
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'first');
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    const sub = join(repo, 'deploy');
    expect(await readRevision(sub)).toEqual({ commit: head, dirty: false });
    // A change outside the folder is not the desired state's.
    writeFileSync(join(repo, 'other.txt'), 'changed\n');
    expect(await readRevision(sub)).toEqual({ commit: head, dirty: false });
    writeFileSync(join(repo, 'deploy', 'tenants', 'new.yaml'), 'y: 2\n');
    expect(await readRevision(sub)).toEqual({ commit: head, dirty: true });
  });

  it('is undefined, without an error, outside a repository, before the first commit, and without git', async () => {
    const plain = temp();
    const whys: string[] = [];
    expect(await readRevision(plain, { onAbsent: (w) => whys.push(w) })).toBeUndefined();
    const fresh = temp();
    git(fresh, 'init', '-q');
    expect(await readRevision(fresh, { onAbsent: (w) => whys.push(w) })).toBeUndefined();
    expect(await readRevision(fresh, { git: join(plain, 'no-such-git'), onAbsent: (w) => whys.push(w) })).toBeUndefined();
    expect(whys).toEqual(['not inside a git repository git can read', 'the repository has no commit yet', 'git was not found on the PATH']);
  });

  it('gives up on a git that hangs within its deadline', async () => {
    const d = temp();
    const slow = join(d, 'git');
    writeFileSync(slow, '#!/bin/sh\nsleep 10\n');
    chmodSync(slow, 0o755);
    const started = Date.now();
    let why = '';
    expect(await readRevision(d, { git: slow, timeoutMs: 200, onAbsent: (w) => { why = w; } })).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(3000);
    expect(why).toMatch(/longer than 200 ms/);
  });
});

describe('parseStatus', () => {
  it('trusts only an object id', () => {
    expect(parseStatus('# branch.oid (initial)\0# branch.head main\0')).toBeUndefined();
    expect(parseStatus('# branch.oid $(rm -rf)\0')).toBeUndefined();
    expect(parseStatus(`# branch.oid ${'a'.repeat(40)}\0# branch.head main\0? x.yaml\0`)).toEqual({ commit: 'a'.repeat(40), dirty: true });
  });
});
