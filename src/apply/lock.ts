// The apply lock: one writer per journal folder, so that two applies or watch passes on one
// host (or pods sharing a volume) never interleave their writes and their journal.
//
// Ownership is a random token in the file; liveness is a heartbeat (the file's mtime, refreshed
// through the open handle while held). A lock whose heartbeat is older than the stale timeout
// is taken over, whatever host or PID it names: containers restart PIDs at 1 and a new pod has
// a new host name, so neither can prove the holder is gone, but a heartbeat can. A lock of a
// dead PID that this process can see (same host, boot and PID namespace) is taken over at once.
// The take-over is one process at a time (an exclusive take-over file), and removes only the
// very file judged stale. The holder checks before every write, and before it rewrites the
// journal, that the lock is still its own, so a holder that lost the lock stops writing.
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { readFileSync, readlinkSync } from 'node:fs';
import { lstat, open, unlink, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../model/index.js';
import { LockHeldError, StateError } from '../errors.js';
import { ensurePrivateDir, readWhole } from './private-dir.js';

/** A holder refreshes its heartbeat this often. */
export const LOCK_HEARTBEAT_MS = 5_000;
/** A lock whose heartbeat is older than this is stale and taken over (six missed heartbeats). */
export const LOCK_STALE_MS = 30_000;

const LOCK_FILE = 'apply.lock';

interface LockInfo {
  token: string;
  pid: number;
  host: string;
  started: string;
  /** Where the PID means something: the boot and the PID namespace (containers sharing a host name differ here). */
  pidns?: string;
}

export interface ApplyLock {
  readonly path: string;
  /** Throws when another process holds the lock now (taken over after a missed heartbeat). */
  assertHeld(): Promise<void>;
  release(): Promise<void>;
}

export interface LockOptions {
  readonly log?: Logger;
  readonly staleMs?: number;
  readonly heartbeatMs?: number;
}

/** The lock was taken over: the holder must stop writing. */
export class LockLostError extends StateError {
  constructor(path: string) {
    super(`the lock ${path} was taken over by another process (this one missed its heartbeats); no further writes were sent: run again`);
  }
}

export async function acquireLock(dir: string, opts: LockOptions = {}): Promise<ApplyLock> {
  await ensurePrivateDir(dir, 'its journal and lock');
  const path = join(dir, LOCK_FILE);
  const staleMs = opts.staleMs ?? LOCK_STALE_MS;
  const mine: LockInfo = { token: randomUUID(), pid: process.pid, host: hostname(), started: new Date().toISOString(), ...(PID_SPACE ? { pidns: PID_SPACE } : {}) };
  for (let round = 0; round < 20; round++) {
    const handle = await tryCreate(path, JSON.stringify(mine) + '\n');
    if (handle) return held(path, handle, opts.heartbeatMs ?? LOCK_HEARTBEAT_MS);
    const seen = await inspect(path);
    if (seen === 'gone') continue;
    if (!isStale(seen, staleMs)) throw heldError(seen.info, dir);
    if (await takeOver(path, seen, mine.token)) {
      opts.log?.warn(staleWarning(seen, path));
      continue;
    }
    // Another process is taking over: give it a moment, then look again (it will hold the lock).
    await new Promise((r) => setTimeout(r, 20 + Math.random() * 30));
  }
  const seen = await inspect(path);
  throw heldError(seen === 'gone' ? null : seen.info, dir);
}

async function tryCreate(path: string, content: string): Promise<FileHandle | undefined> {
  let h: FileHandle;
  try {
    h = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return undefined;
    if (code === 'ELOOP' || code === 'EMLINK') throw new StateError(`${path} is a symbolic link; dus-sync does not follow links for its lock: remove it`);
    // ENOENT in a folder that exists (/proc/self/fd), EACCES, EROFS...: one sentence, not errno text.
    throw new StateError(`the lock ${path} cannot be created (${code ?? (err as Error).message}); pass --journal with a path in a writable folder of your own`);
  }
  try {
    await h.write(content);
    await h.sync();
    return h;
  } catch (err) {
    await h.close();
    await unlink(path).catch(() => undefined);
    throw err;
  }
}

interface Seen {
  /** null: empty, torn or not a lock of ours (a crash between create and write leaves it empty). */
  readonly info: LockInfo | null;
  readonly text: string | null;
  readonly mtimeMs: number;
  readonly ino: number;
}

/** What is at the lock path now, read without following a link. */
async function inspect(path: string): Promise<Seen | 'gone'> {
  let st;
  try {
    st = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw err;
  }
  const text = st.isFile() ? await readNoFollow(path) : null;
  return { info: parse(text), text, mtimeMs: st.mtimeMs, ino: st.ino };
}

async function readNoFollow(path: string): Promise<string | null> {
  let h: FileHandle;
  try {
    h = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    // A lock is a line; anything larger is not one of ours.
    return (await h.stat()).size > 4096 ? null : await readWhole(h);
  } finally {
    await h.close();
  }
}

function parse(text: string | null): LockInfo | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as Partial<LockInfo>;
    if (typeof v.pid === 'number' && typeof v.host === 'string' && typeof v.started === 'string') {
      return { token: typeof v.token === 'string' ? v.token : '', pid: v.pid, host: v.host, started: v.started, ...(typeof v.pidns === 'string' ? { pidns: v.pidns } : {}) };
    }
  } catch { /* not a lock */ }
  return null;
}

/**
 * Where this process's PID means something: the boot id and the PID namespace. Two containers
 * with one host name sharing a volume have different namespaces, so a PID of the other cannot be
 * looked up here; undefined where /proc does not say (then only the heartbeat counts).
 */
const PID_SPACE: string | undefined = (() => {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return `${boot}/${readlinkSync('/proc/self/ns/pid')}`;
  } catch {
    return undefined;
  }
})();

/**
 * Stale: the heartbeat stopped longer ago than the timeout, or its time is further in the future
 * than that (planted, or a clock far off: it would otherwise wedge every run until then), or the
 * holder is a dead process that this process can see (same host, boot and PID namespace).
 */
function isStale(seen: Seen, staleMs: number): boolean {
  const age = Date.now() - seen.mtimeMs;
  if (age > staleMs || age < -staleMs) return true;
  const info = seen.info;
  const sameSpace = info !== null && info.host === hostname() && PID_SPACE !== undefined && info.pidns === PID_SPACE;
  return sameSpace && info.pid !== process.pid && !isAlive(info.pid);
}

export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A take-over older than this was left by a process that died taking over; it is removed. */
const TAKEOVER_STALE_MS = 10_000;

/**
 * Removes the stale lock, one process at a time: the taker holds `apply.lock.takeover` (created
 * exclusively) while it checks that the lock is still the very file judged stale and unlinks it.
 * Without it, a process that judged a lock stale could remove one another process had just
 * created, and several processes ended up past the lock at once. Returns false when another
 * process is taking over (the caller looks again).
 */
async function takeOver(path: string, judged: Seen, token: string): Promise<boolean> {
  const mutex = `${path}.takeover`;
  let h: FileHandle;
  try {
    h = await open(mutex, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const st = await lstat(mutex).catch(() => undefined);
    if (st && Date.now() - st.mtimeMs > TAKEOVER_STALE_MS) await unlink(mutex).catch(() => undefined);
    return false;
  }
  try {
    await h.write(token);
    const now = await inspect(path);
    if (now !== 'gone' && now.ino === judged.ino && now.mtimeMs === judged.mtimeMs && now.text === judged.text) {
      await unlink(path).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    }
    return true;
  } finally {
    await h.close();
    await unlink(mutex).catch(() => undefined);
  }
}

function held(path: string, handle: FileHandle, heartbeatMs: number): ApplyLock {
  let released = false;
  let lost = false;
  let beating: Promise<void> = Promise.resolve();
  const ownIno = handle.stat().then((s) => s.ino);
  const checkNow = async (): Promise<void> => {
    if (lost) throw new LockLostError(path);
    let ino: number;
    try {
      ino = (await lstat(path)).ino;
    } catch {
      ino = -1;
    }
    if (ino !== await ownIno) {
      lost = true;
      throw new LockLostError(path);
    }
  };
  // Every write asks just before it is sent (two lstat calls per change: 24,000 for 12,000
  // changes, 1.4 s of the event loop). Callers that ask while a check runs share the next one,
  // which starts when it ends: each caller still gets a check that began after it asked.
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const check = (): Promise<void> => {
    if (lost) return Promise.reject(new LockLostError(path));
    if (running === undefined) {
      running = checkNow().finally(() => { running = undefined; });
      return running;
    }
    queued ??= running.catch(() => undefined).then(() => {
      queued = undefined;
      running = checkNow().finally(() => { running = undefined; });
      return running;
    });
    return queued;
  };
  const timer = setInterval(() => {
    beating = (async () => {
      // Through the handle: if the path was taken over, the other holder's file is not touched.
      const now = new Date();
      await handle.utimes(now, now).catch(() => undefined);
    })();
  }, heartbeatMs);
  timer.unref();
  return {
    path,
    assertHeld: check,
    async release(): Promise<void> {
      if (released) return;
      released = true;
      clearInterval(timer);
      await beating;
      try {
        const still = await check().then(() => true, () => false);
        if (still) {
          await unlink(path).catch((err: NodeJS.ErrnoException) => {
            if (err.code !== 'ENOENT') throw err;
          });
        }
      } finally {
        await handle.close();
      }
    },
  };
}

function heldError(held: LockInfo | null, dir: string): LockHeldError {
  const lockName = join(displayDir(dir), LOCK_FILE);
  const who = held === null ? 'a process that left an unreadable lock' : `pid ${held.pid}${held.host !== hostname() ? ` on ${held.host}` : ''}, started ${held.started}`;
  return new LockHeldError(
    `another dus-sync apply (${who}) holds ${lockName}; wait for it: the lock is taken over once its heartbeat is ${Math.round(LOCK_STALE_MS / 1000)} s old`,
  );
}

function staleWarning(seen: Seen, path: string): string {
  const info = seen.info;
  const age = Math.max(0, Math.round((Date.now() - seen.mtimeMs) / 1000));
  const who = info === null ? 'an empty or unreadable lock' : `pid ${info.pid} on ${info.host}, started ${info.started}`;
  return `taking over the stale lock ${path}: ${who}, last heartbeat ${age} s ago`;
}

function displayDir(dir: string): string {
  // The message quotes the folder the way users know it (".dus-sync") when it is under the cwd.
  const cwd = process.cwd();
  return dir.startsWith(cwd + '/') ? dir.slice(cwd.length + 1) : dir;
}
