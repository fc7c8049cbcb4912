import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile, access } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireLock } from '../../src/apply/lock.js';
import { UserError } from '../../src/errors.js';
import { memoryLog } from './fakes.js';

let dir: string;
beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'dus-lock-')); });
afterEach(async () => { await rm(dir, { recursive: true, force: true }); });

const exists = (p: string): Promise<boolean> => access(p).then(() => true, () => false);

/** The pid of a process that has exited: a lock it held is provably stale. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

describe('acquireLock', () => {
  it('writes pid, host and start time to a 0600 file and removes it on release', async () => {
    const lockDir = join(dir, '.dus-sync');
    const lock = await acquireLock(lockDir);
    const path = join(lockDir, 'apply.lock');
    expect(JSON.parse(await readFile(path, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    await lock.release();
    expect(await exists(path)).toBe(false);
  });

  it('refuses a second apply while the first holds the lock, with a sentence that says what to do', async () => {
    const lock = await acquireLock(dir);
    const second = acquireLock(dir);
    await expect(second).rejects.toBeInstanceOf(UserError);
    await expect(acquireLock(dir)).rejects.toThrow(
      new RegExp(`^another dus-sync apply \\(pid ${process.pid}, started \\d{4}-[^)]+\\) holds .*apply\\.lock; wait for it or remove the file if that process is gone$`),
    );
    await lock.release();
    const again = await acquireLock(dir);
    await again.release();
  });

  it('lets exactly one of two racing applies in', async () => {
    const results = await Promise.allSettled([acquireLock(dir), acquireLock(dir), acquireLock(dir)]);
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)).toEqual([expect.any(UserError), expect.any(UserError)]);
    await (won[0] as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release();
  });

  it('takes over a lock whose process is gone, with a warning', async () => {
    const pid = deadPid();
    await writeFile(join(dir, 'apply.lock'), JSON.stringify({ pid, host: hostname(), started: '2026-01-01T00:00:00.000Z' }), { mode: 0o600 });
    const log = memoryLog();
    const lock = await acquireLock(dir, { log });
    expect(log.lines).toEqual([expect.stringContaining(`warn: taking over the stale lock`)]);
    expect(log.lines[0]).toContain(`pid ${pid}`);
    expect(JSON.parse(await readFile(join(dir, 'apply.lock'), 'utf8'))).toMatchObject({ pid: process.pid });
    await lock.release();
  });

  it('does not take over a lock from another host, whose processes it cannot see', async () => {
    await writeFile(join(dir, 'apply.lock'), JSON.stringify({ pid: deadPid(), host: 'ci-runner-7', started: '2026-01-01T00:00:00.000Z' }));
    await expect(acquireLock(dir)).rejects.toThrow(/on ci-runner-7/);
  });

  it('does not release a lock that another process has taken over since', async () => {
    const lock = await acquireLock(dir);
    const theirs = JSON.stringify({ pid: 1, host: hostname(), started: '2026-01-01T00:00:00.000Z' });
    await writeFile(join(dir, 'apply.lock'), theirs);
    await lock.release();
    expect(await readFile(join(dir, 'apply.lock'), 'utf8')).toBe(theirs);
  });
});
