import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, stat, utimes, writeFile, access } from 'node:fs/promises';
import { build } from 'esbuild';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { acquireLock, LockLostError } from '../../src/apply/lock.js';
import { UserError } from '../../src/errors.js';
import { memoryLog } from './fakes.js';

let dir: string;
beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'dus-lock-')); });
afterEach(async () => { await rm(dir, { recursive: true, force: true }); });

const exists = (p: string): Promise<boolean> => access(p).then(() => true, () => false);

/** This process's boot and PID namespace, as dus-sync writes them into its lock. */
const PID_SPACE = `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${readlinkSync('/proc/self/ns/pid')}`;

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
      new RegExp(`^another dus-sync apply \\(pid ${process.pid}, started \\d{4}-[^)]+\\) holds .*apply\\.lock; wait for it: the lock is taken over once its heartbeat is 30 s old$`),
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

  it('takes over at once a lock whose process is gone, on this host, boot and PID namespace, with a warning', async () => {
    const pid = deadPid();
    await writeFile(join(dir, 'apply.lock'), JSON.stringify({ pid, host: hostname(), started: '2026-01-01T00:00:00.000Z', pidns: PID_SPACE }), { mode: 0o600 });
    const log = memoryLog();
    const lock = await acquireLock(dir, { log });
    expect(log.lines).toEqual([expect.stringContaining(`warn: taking over the stale lock`)]);
    expect(log.lines[0]).toContain(`pid ${pid}`);
    expect(JSON.parse(await readFile(join(dir, 'apply.lock'), 'utf8'))).toMatchObject({ pid: process.pid });
    await lock.release();
  });

  it('does not take over a fresh lock of a dead PID in another PID namespace (a container with the same host name)', async () => {
    // The PID is dead here, but it is another namespace's PID: only the heartbeat can tell.
    await writeFile(join(dir, 'apply.lock'), JSON.stringify({ pid: deadPid(), host: hostname(), started: '2026-01-01T00:00:00.000Z', pidns: 'other-boot/pid:[4026531999]' }));
    await expect(acquireLock(dir)).rejects.toBeInstanceOf(UserError);
    // Nor one that does not say which namespace it came from (written by an older dus-sync).
    await writeFile(join(dir, 'apply.lock'), JSON.stringify({ pid: deadPid(), host: hostname(), started: '2026-01-01T00:00:00.000Z' }));
    await expect(acquireLock(dir)).rejects.toBeInstanceOf(UserError);
  });

  it('takes over a lock whose heartbeat is in the future by more than the timeout (planted, or a clock far off)', async () => {
    const path = join(dir, 'apply.lock');
    await writeFile(path, JSON.stringify({ token: 'x', pid: 1, host: 'elsewhere', started: '2026-01-01T00:00:00.000Z' }));
    const later = new Date(Date.now() + 3_600_000);
    await utimes(path, later, later);
    const lock = await acquireLock(dir);
    await lock.release();
  });

  it('does not take over a fresh lock from another host, whose processes it cannot see', async () => {
    await writeFile(join(dir, 'apply.lock'), JSON.stringify({ pid: deadPid(), host: 'ci-runner-7', started: '2026-01-01T00:00:00.000Z' }));
    await expect(acquireLock(dir)).rejects.toThrow(/on ci-runner-7/);
  });

  it('does not release a lock that another process has taken over since, and knows it lost it', async () => {
    const lock = await acquireLock(dir);
    const theirs = JSON.stringify({ token: 'theirs', pid: 1, host: hostname(), started: '2026-01-01T00:00:00.000Z' });
    // The take-over moved ours aside and created its own (a new file, a new inode).
    await rename(join(dir, 'apply.lock'), join(dir, 'moved-aside'));
    await writeFile(join(dir, 'apply.lock'), theirs);
    await expect(lock.assertHeld()).rejects.toBeInstanceOf(LockLostError);
    await lock.release();
    expect(await readFile(join(dir, 'apply.lock'), 'utf8')).toBe(theirs);
  });

  it('keeps its heartbeat going while held: the lock file\'s mtime moves', async () => {
    const lock = await acquireLock(dir, { heartbeatMs: 20 });
    const path = join(dir, 'apply.lock');
    const old = new Date(Date.now() - 3_600_000);
    await utimes(path, old, old);
    await new Promise((r) => setTimeout(r, 120));
    expect(Date.now() - (await stat(path)).mtimeMs).toBeLessThan(5_000);
    await lock.assertHeld();
    await lock.release();
  });

  it('takes over an empty lock (killed between create and write) once its heartbeat is old, not before', async () => {
    const path = join(dir, 'apply.lock');
    await writeFile(path, '');
    await expect(acquireLock(dir)).rejects.toThrow(/a process that left an unreadable lock/);
    const old = new Date(Date.now() - 60_000);
    await utimes(path, old, old);
    const log = memoryLog();
    const lock = await acquireLock(dir, { log });
    expect(log.lines[0]).toMatch(/taking over the stale lock .*: an empty or unreadable lock, last heartbeat 60 s ago/);
    await lock.release();
  });

  it('takes over a lock whose PID is alive (PID reuse in a new container) once its heartbeat is old', async () => {
    const path = join(dir, 'apply.lock');
    await writeFile(path, JSON.stringify({ token: 'x', pid: process.ppid, host: hostname(), started: '2026-01-01T00:00:00.000Z' }));
    await expect(acquireLock(dir)).rejects.toBeInstanceOf(UserError);
    const old = new Date(Date.now() - 60_000);
    await utimes(path, old, old);
    const lock = await acquireLock(dir);
    await lock.release();
  });

  it('of many processes taking over one stale lock at once, exactly one wins, ten times over', async () => {
    const path = join(dir, 'apply.lock');
    for (let round = 0; round < 10; round++) {
      await writeFile(path, JSON.stringify({ token: `dead-${round}`, pid: 1, host: 'gone-pod', started: '2026-01-01T00:00:00.000Z' }));
      const old = new Date(Date.now() - 60_000);
      await utimes(path, old, old);
      // Separate processes (in-process calls would share one event loop and never truly race),
      // released together once all have started, so that they overlap.
      const go = join(dir, `go-${round}`);
      let ready = 0;
      let release: () => void = () => undefined;
      const allReady = new Promise<void>((r) => { release = r; });
      const racers = Promise.all(Array.from({ length: RACERS }, () => new Promise<string>((resolve) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', RACER_BODY, dir, racerModule, go], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.startsWith('ready\n') && out.length === 6 && ++ready === RACERS) release();
        });
        child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
        child.on('close', () => resolve(out.replace(/^ready\n/, '').trim()));
      })));
      await allReady;
      await writeFile(go, '');
      const results = await racers;
      expect(results.filter((r) => r === 'won'), results.join('\n')).toHaveLength(1);
      expect(results.filter((r) => r !== 'won').every((r) => r.startsWith('refused')), results.join('\n')).toBe(true);
      await rm(path, { force: true });
    }
  }, 120_000);
});

/** Enough processes that a take-over without its own mutex let two or three past the lock (an adversarial tester used 24). */
const RACERS = 16;

// A racer: takes the lock, holds it a moment (so the others see it held), reports. The lock
// module is bundled on its own for it (beforeAll).
let racerModule = '';
beforeAll(async () => {
  const cache = resolve('node_modules/.dus-sync-test');
  await mkdir(cache, { recursive: true });
  racerModule = join(cache, `lock-racer-${process.pid}.mjs`);
  await build({ entryPoints: [resolve('src/apply/lock.ts')], outfile: racerModule, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'warning' });
});
afterAll(async () => { await rm(racerModule, { force: true }); });

const RACER_BODY = `
const { acquireLock } = await import(process.argv[2]);
const { existsSync } = await import('node:fs');
console.log('ready');
while (!existsSync(process.argv[3])) await new Promise((r) => setTimeout(r, 2));
let lock;
try {
  lock = await acquireLock(process.argv[1]);
} catch (err) {
  console.log('refused ' + err.message);
  process.exit(0);
}
// Past the lock: what a holder does next (plan, compact the journal) must be done by one only,
// whether or not it finds out later that it lost the lock.
await new Promise((r) => setTimeout(r, 300));
console.log('won');
await lock.release();
`;
