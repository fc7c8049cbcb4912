// Writing a file so that a reader never sees half of it, and so that nothing planted beside it
// can redirect the write: the data goes to a new file with a random name in the target's folder,
// created exclusively (O_EXCL: never an existing file; O_NOFOLLOW: never through a link), is
// flushed to disk, then renamed over the target. A rename replaces a link at the target itself
// rather than writing through it. On any failure the temporary file is removed. Only a regular
// file (or a link, itself replaced) is ever replaced: never a device, a FIFO, a socket or a folder
// (`--out /dev/null` run as root would otherwise put a regular file in place of /dev/null).
// Used by `plan --out`, `export` and the emulator's --data.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fsyncSync, lstatSync, openSync, renameSync, statSync, unlinkSync, writeSync, type Stats } from 'node:fs';
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

/** A sentence when the target is there and is not a file the rename may replace. */
function refuseSpecial(target: string): void {
  const at = (f: typeof lstatSync): Stats | undefined => { try { return f(target); } catch { return undefined; } };
  const own = at(lstatSync);
  // A link is replaced itself, unless it leads to something special (/dev/stdout is a link to one).
  const st = own?.isSymbolicLink() === true ? at(statSync) : own;
  if (st === undefined || st.isFile()) return;
  throw new UserError(`refusing to write ${target}: it is ${kindOf(st)}${own !== st ? ' (through a symbolic link)' : ''}, not a regular file, and dus-sync writes a file whole by renaming a new one over its path, which would replace it; give the path of a file; nothing was written`);
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
