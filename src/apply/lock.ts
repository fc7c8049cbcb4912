// An advisory lock so that two applies on one machine do not interleave their writes and
// their journal. It is only as wide as one host's process table: two hosts (CI runners,
// replicas) must be kept apart by CI concurrency groups or a single replica.
import { mkdir, open, readFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../model/index.js';
import { UserError } from '../errors.js';

interface LockInfo {
  pid: number;
  host: string;
  started: string;
}

const LOCK_FILE = 'apply.lock';

export async function acquireLock(dir: string, opts: { log?: Logger } = {}): Promise<{ release(): Promise<void> }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, LOCK_FILE);
  const mine: LockInfo = { pid: process.pid, host: hostname(), started: new Date().toISOString() };
  const content = JSON.stringify(mine) + '\n';
  // Two rounds: the second follows the take-over of a stale lock.
  for (let round = 0; round < 2; round++) {
    if (await tryCreate(path, content)) return { release: () => releaseIfMine(path, content) };
    const held = await readLock(path);
    if (held === 'gone') continue;
    if (!isStale(held)) throw heldError(held, dir);
    opts.log?.warn(staleWarning(held, path));
    await removeIfUnchanged(path, held);
  }
  const held = await readLock(path);
  throw heldError(held === 'gone' ? null : held, dir);
}

async function tryCreate(path: string, content: string): Promise<boolean> {
  try {
    const h = await open(path, 'wx', 0o600);
    try {
      await h.write(content);
      await h.sync();
    } finally {
      await h.close();
    }
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** The holder's info; null when the file is not readable as a lock (torn or foreign); 'gone' when it vanished. */
async function readLock(path: string): Promise<LockInfo | null | 'gone'> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw err;
  }
  try {
    const v = JSON.parse(text) as Partial<LockInfo>;
    if (typeof v.pid === 'number' && typeof v.host === 'string' && typeof v.started === 'string') {
      return { pid: v.pid, host: v.host, started: v.started };
    }
  } catch { /* fall through */ }
  return null;
}

/** A lock is stale only when we can prove it: same host and its process is gone. */
function isStale(held: LockInfo | null): boolean {
  if (held === null) return false;
  if (held.host !== hostname()) return false;
  return !isAlive(held.pid);
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

async function removeIfUnchanged(path: string, held: LockInfo | null): Promise<void> {
  // Re-read just before removing so that a lock another process took over a moment ago is kept.
  const now = await readLock(path);
  if (now === 'gone') return;
  if (JSON.stringify(now) !== JSON.stringify(held)) return;
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

async function releaseIfMine(path: string, content: string): Promise<void> {
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text !== content) return;
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

function heldError(held: LockInfo | null, dir: string): UserError {
  const lockName = join(displayDir(dir), LOCK_FILE);
  const who = held === null ? 'a process that left an unreadable lock' : `pid ${held.pid}${held.host !== hostname() ? ` on ${held.host}` : ''}, started ${held.started}`;
  return new UserError(
    `another dus-sync apply (${who}) holds ${lockName}; wait for it or remove the file if that process is gone`,
  );
}

function staleWarning(held: LockInfo | null, path: string): string {
  return `taking over the stale lock ${path}: pid ${held?.pid ?? '?'} that held it since ${held?.started ?? '?'} is gone`;
}

function displayDir(dir: string): string {
  // The message quotes the folder the way users know it (".dus-sync") when it is under the cwd.
  const cwd = process.cwd();
  return dir.startsWith(cwd + '/') ? dir.slice(cwd.length + 1) : dir;
}
