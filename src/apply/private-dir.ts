// The folder of the journal and the lock: created 0700, and an existing one checked before a
// file is opened in it. A pull request can add `.dus-sync` to the repository as a symbolic link,
// and a shared folder (/tmp) lets others plant files: both are refused rather than followed.
import { constants } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { chmod, lstat, mkdir, open, readdir, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { StateError } from '../errors.js';

/**
 * `mkdir -p`, one level at a time: Node's recursive mkdir spins forever on some paths (under
 * /proc, for one) instead of failing, which hung every pass of the agent.
 */
async function makeFolders(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    const st = await lstat(d).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (st !== undefined) break;
    missing.push(d);
    if (dirname(d) === d) break;
  }
  for (const d of missing.reverse()) {
    await mkdir(d, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  }
}

/** Creates the folder 0700, or checks an existing one: a real folder, ours, not shared; a loose mode is tightened. */
export async function ensurePrivateDir(dir: string, what: string): Promise<void> {
  await makeFolders(dir).catch((err: NodeJS.ErrnoException) => {
    throw new StateError(`cannot create the folder ${dir} for ${what} (${err.code ?? err.message}); check the path and its permissions, or set DUS_SYNC_STATE_DIR (or --journal) to a writable folder`);
  });
  const st = await lstat(dir);
  if (st.isSymbolicLink()) {
    throw new StateError(`${dir} is a symbolic link; dus-sync keeps ${what} only in a real folder: remove the link (a pull request may have added it) or pass --journal with another path`);
  }
  if (!st.isDirectory()) throw new StateError(`${dir} is not a folder; remove it or pass --journal with another path`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) {
    throw new StateError(`${dir} belongs to user ${st.uid}, not to this user (${uid}); dus-sync keeps ${what} only in a folder of its own: pass --journal with a path in such a folder`);
  }
  if ((st.mode & 0o1000) !== 0) {
    throw new StateError(`${dir} is a shared folder (sticky bit); dus-sync keeps ${what} only in a folder of its own: pass --journal with a path in such a folder`);
  }
  if ((st.mode & 0o077) !== 0) {
    // Tightened only when it is dus-sync's own (empty, or holding only its files): `--journal
    // /var/lib/x.jsonl` run as root must not make /var/lib 0700, nor `--journal ~/j.jsonl` a home.
    // Another folder is used as it is if only its owner can write to it (the files are 0600, and
    // nobody else can plant or swap one); one others can write to is refused.
    const foreign = await foreignEntry(dir);
    if (foreign === undefined) await chmod(dir, 0o700);
    else if ((st.mode & 0o022) !== 0) {
      throw new StateError(`${dir} can be written by other users (mode ${(st.mode & 0o777).toString(8).padStart(3, '0')}) and holds ${foreign}, which is not dus-sync's, so dus-sync will neither keep ${what} there nor tighten it; pass --journal with a path in a folder of its own (a new one is created 0700)`);
    }
  }
}

/** What dus-sync keeps in its folder: journals, the lock, the append history, trigger times, temp files; a volume's lost+found. */
const OURS = /^(apply\.lock|triggered\.json|[^/]+\.jsonl|\..+\.tmp|lost\+found)$/;

/** The first entry of the folder that is not dus-sync's (quoted), or undefined when there is none. */
async function foreignEntry(dir: string): Promise<string | undefined> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    return `entries it cannot list (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  const other = names.find((n) => !OURS.test(n));
  return other === undefined ? undefined : JSON.stringify(other.length > 60 ? `${other.slice(0, 60)}…` : other);
}

/**
 * Writes all of `text` at the end of the file (O_APPEND), or throws: a write(2) on a full disk
 * may store part of it without an error, and a journal line cut short must never be followed by
 * the request it announces.
 */
export async function appendAll(handle: FileHandle, text: string): Promise<void> {
  const buf = Buffer.from(text, 'utf8');
  let off = 0;
  while (off < buf.length) {
    const { bytesWritten } = await handle.write(buf, off, buf.length - off);
    if (bytesWritten <= 0) throw new Error(`could not write to the journal (wrote ${off} of ${buf.length} bytes; is the disk full?)`);
    off += bytesWritten;
  }
}

/** Opens a file in a private folder without following a symbolic link, and checks it is a regular file of ours. */
export async function openPrivateFile(path: string, flags: number, what: string): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') throw new StateError(`${path} is a symbolic link; dus-sync does not follow links for ${what}: remove it`);
    if (code === 'EISDIR') throw new StateError(`${path} is a folder, not a file; remove it so dus-sync can keep ${what} there, or pass --journal with another path`);
    if (code === 'EACCES' || code === 'EPERM') throw new StateError(`${path} cannot be opened (${code}); check its permissions, or pass --journal with another path`);
    // ENOENT in a folder that exists (/proc/self/fd), EROFS, ENOSPC...: one sentence, not errno text.
    throw new StateError(`${path} cannot be opened or created for ${what} (${code ?? (err as Error).message}); pass --journal with a path in a writable folder of your own`);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new StateError(`${path} is not a regular file; remove it so dus-sync can keep ${what} there`);
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) throw new StateError(`${path} belongs to user ${st.uid}, not to this user (${uid}); remove it`);
    if ((st.mode & 0o777) !== 0o600) await handle.chmod(0o600);
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * The whole file through an open handle, from its first byte (positioned reads: O_APPEND handles
 * sit at the end); refused past `maxBytes` (a sparse 3 GiB file crashed Node allocating it).
 */
export async function readWhole(handle: FileHandle, maxBytes = Number.MAX_SAFE_INTEGER, what = 'the file'): Promise<string> {
  const { size } = await handle.stat();
  if (size > maxBytes) throw new StateError(`${what} is ${Math.ceil(size / 1024 / 1024)} MiB, more than the ${Math.round(maxBytes / 1024 / 1024)} MiB it may be; it should be tiny: look at it, and remove it only if no apply is running and no append is in doubt`);
  const buf = Buffer.alloc(size);
  let off = 0;
  while (off < size) {
    const { bytesRead } = await handle.read(buf, off, size - off, off);
    if (bytesRead === 0) break;
    off += bytesRead;
  }
  return buf.subarray(0, off).toString('utf8');
}

/**
 * Replaces a private file with `text` whole: written to an exclusive, randomly named temp file
 * in the same folder, fsync'd, then renamed over it (a crash leaves the old file or the new one,
 * never half of either; a link planted at a temp name is never written through).
 */
export async function replacePrivateFile(path: string, text: string, what: string): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${randomUUID()}.tmp`);
  const out = await openPrivateFile(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, what);
  try {
    await appendAll(out, text);
    await out.sync();
  } finally {
    await out.close();
  }
  try {
    // Renamed over only a regular file (or nothing): never a device, a folder or a link put there since it was opened.
    const there = await lstat(path).catch(() => undefined);
    if (there !== undefined && !there.isFile()) throw new StateError(`${path} is not a regular file; remove it so dus-sync can keep ${what} there`);
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}
