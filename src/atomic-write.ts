// Writing a file so that a reader never sees half of it, and so that nothing planted beside it
// can redirect the write: the data goes to a new file with a random name in the target's folder,
// created exclusively (O_EXCL: never an existing file; O_NOFOLLOW: never through a link), is
// flushed to disk, then renamed over the target. On any failure the temporary file is removed.
// Only a regular file is ever replaced: never a link (the rename would replace the link itself,
// not write where it leads), a device, a FIFO, a socket or a folder (`--out /dev/null` or
// `--out /dev/stdout` run as root would otherwise leave a regular file in their place).
// Used by `plan --out`, `export` and the emulator's --data.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fsyncSync, lstatSync, openSync, readlinkSync, renameSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { UserError } from './errors.js';
import { kindOf } from './load/read-file.js';

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

export interface AtomicWriteOptions {
  /** Permissions of the new file (before the umask). Default 0o600: owner only. */
  readonly mode?: number;
}

/** The temporary name: hidden (dot-prefixed, not *.yaml) so that no glob or watcher picks it up. */
function tempName(target: string): string {
  return join(dirname(target), `.${basename(target)}.${randomBytes(8).toString('hex')}.tmp`);
}

function openExclusive(target: string, mode: number): { fd: number; path: string } {
  for (let attempt = 0; ; attempt++) {
    const path = tempName(target);
    try {
      return { fd: openSync(path, CREATE, mode), path };
    } catch (err) {
      // 64 random bits: a clash means someone planted the name; try another, a few times.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 4) throw err;
    }
  }
}

/** A sentence when the target is there and is not a regular file the rename may replace. */
function refuseSpecial(target: string): void {
  let own: Stats;
  try { own = lstatSync(target); } catch { return; }
  if (own.isFile()) return;
  if (own.isSymbolicLink()) {
    // The rename would replace the link itself, not write where it leads: `--out /dev/stdout`
    // run as root would leave a regular file in place of the machine's /dev/stdout.
    let to = '?';
    try { to = readlinkSync(target); } catch { /* gone meanwhile */ }
    throw new UserError(`refusing to write ${target}: it is a symbolic link (to ${JSON.stringify(to)}), and dus-sync writes a file whole by renaming a new one over its path, which would replace the link rather than write where it leads; give the path of a file (or let the shell redirect standard output); nothing was written`);
  }
  throw new UserError(`refusing to write ${target}: it is ${kindOf(own)}, not a regular file, and dus-sync writes a file whole by renaming a new one over its path, which would replace it; give the path of a file; nothing was written`);
}

export function writeFileAtomic(target: string, data: string | Uint8Array, opts: AtomicWriteOptions = {}): void {
  refuseSpecial(target);
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const { fd, path } = openExclusive(target, opts.mode ?? 0o600);
  try {
    try {
      for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off, bytes.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(path, target);
  } catch (err) {
    try {
      unlinkSync(path);
    } catch {
      // already renamed or gone: nothing to clean up
    }
    throw err;
  }
  syncFolder(dirname(target));
}

/** Makes the rename itself durable (POSIX); where a folder cannot be opened for sync, skipped. */
function syncFolder(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY);
    fsyncSync(fd);
  } catch {
    // Windows and some file systems: the rename is still atomic, only not yet flushed.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
