// Reading a file that a pull request may have planted. Only a regular file is read, never more
// than the limit (enforced while reading, so a file that grows or lies about its size cannot
// make us read more), and never through a symbolic link that leaves the repository unless the
// operator allowed it. Nothing is opened before lstat/stat (or the folder's listing, readdir's
// file type) said it is a regular file, the open does not follow a link in the last place, and
// it is non-blocking, so a FIFO or a link swapped in between cannot hang us or lead us out either.
import { isUtf8 } from 'node:buffer';
import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync, readlinkSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, isAbsolute, relative, sep } from 'node:path';
import { formatSize } from '../limits.js';

export interface ReadOptions {
  /** Bytes; a larger file is refused. */
  readonly maxBytes: number;
  /** Real path of the folder the file must resolve into; undefined: anywhere (the config file, key files). */
  readonly root?: string;
  /** Follow symbolic links that resolve outside `root` (--follow-external-symlinks). */
  readonly followExternalSymlinks?: boolean;
  /**
   * The folder's listing said this is a regular file (not a link): it is opened without an lstat
   * first (an lstat per file was 3% of a validate). Opened with O_NOFOLLOW and checked by fstat;
   * anything else found there (a link, a folder swapped in since) is read the long way, which
   * says what it is. Only where the platform has O_NOFOLLOW.
   */
  readonly listedRegular?: boolean;
  /** The folder last opened for a read (one load passes one, and closes it when it is done). */
  readonly folders?: FolderCache;
  /**
   * With `folders`: where the cached folder is now is not read after each open; the result says
   * `unconfirmed`, and the caller must not use its text before confirmFolder says the folder is
   * still where it may be read from (one check for a batch of files instead of one a file).
   */
  readonly deferFolderCheck?: boolean;
}

/**
 * On Linux a file of the repository is opened inside its folder, and the folder, opened first,
 * must be inside the repository by where the kernel says it is (/proc/self/fd): a folder on the
 * file's path swapped for a link out of the repository, before or while it is read, cannot lead
 * the read outside. One load keeps its last folder open (files come sorted, folder by folder).
 */
export interface FolderCache {
  path?: string; fd?: number; real?: string;
  /** Whether the open folder is inside the repository, decided once for its files. */
  allowed?: boolean;
  /** The repository folder `allowed` was decided for. */
  root?: string;
  /** Files opened in the open folder whose reads deferred the check of where it is (deferFolderCheck). */
  unconfirmed?: number;
  /** What a check found since the last confirmFolder: the folder had left the repository while files opened in it were unconfirmed. */
  movedOut?: string;
}

export function closeFolderCache(c: FolderCache): void {
  if (c.fd !== undefined) {
    checkUnconfirmed(c);
    try { closeSync(c.fd); } catch { /* closed already */ }
  }
  c.path = undefined; c.fd = undefined; c.real = undefined; c.allowed = undefined; c.root = undefined; c.unconfirmed = undefined;
}

/** Where the open folder is now, when files opened in it are unconfirmed: a place outside is kept in movedOut. */
function checkUnconfirmed(c: FolderCache): void {
  if (c.fd === undefined || !c.unconfirmed) return;
  c.unconfirmed = 0;
  let now: string;
  try {
    now = readlinkSync(procPath(c.fd));
  } catch (err) {
    c.movedOut ??= `the file's folder could not be checked (${codeOf(err)}); run again once the files stop changing`;
    return;
  }
  if (now !== c.real && !isInside(c.root!, now)) c.movedOut ??= outsideMessage(now, c.root!);
}

/**
 * After reads that deferred the folder check (deferFolderCheck): undefined when every folder they
 * were opened in was still where it may be read from after their opens, else the sentence each
 * of those files is refused with. Clears what it reports.
 */
export function confirmFolder(c: FolderCache): string | undefined {
  checkUnconfirmed(c);
  const moved = c.movedOut;
  c.movedOut = undefined;
  return moved;
}

/** Where the kernel shows an open file as a path that leads to it (Linux): folders are checked, listed and read through it. */
export const PROC_FD = process.platform === 'linux' && existsSync('/proc/self/fd');

/** The path that leads to the open file `fd` (Linux, PROC_FD). */
export function procPath(fd: number): string {
  return `/proc/self/fd/${fd}`;
}

/**
 * The folder at `path` opened, and where the kernel says the open folder is (Linux, PROC_FD):
 * what is then read through procPath(fd) is that folder, whatever is renamed meanwhile. Throws
 * the open's error (ENOTDIR: not a folder, or a name swapped for a file); the fd is closed when
 * its place cannot be read. A folder removed meanwhile ends with " (deleted)".
 */
export function openFolder(path: string): { fd: number; real: string } {
  const fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | (constants.O_NONBLOCK ?? 0));
  try {
    return { fd, real: readlinkSync(procPath(fd)) };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** The folder of `path`, open, and where it really is; undefined when it cannot be opened (the plain open then says why). */
function folderOf(path: string, cache: FolderCache | undefined, root: string): { fd: number; real: string; owned: boolean; allowed: boolean } | undefined {
  const dir = dirname(path);
  if (cache !== undefined && cache.path === dir && cache.fd !== undefined) return { fd: cache.fd, real: cache.real!, owned: false, allowed: cache.allowed! };
  let fd: number;
  let real: string;
  try {
    ({ fd, real } = openFolder(dir));
  } catch {
    return undefined;
  }
  // Removed meanwhile: the plain open says so.
  if (real.endsWith(' (deleted)')) {
    closeSync(fd);
    return undefined;
  }
  // Decided once per folder (a glob that climbs out is refused before anything is listed, and
  // --follow-external-symlinks reads without these checks).
  const allowed = isInside(root, real);
  if (cache === undefined) return { fd, real, owned: true, allowed };
  closeFolderCache(cache);
  cache.path = dir; cache.fd = fd; cache.real = real; cache.allowed = allowed; cache.root = root;
  return { fd, real, owned: false, allowed };
}

/** What identifies the file a read read: its fstat, not a stat of the path taken before or after. */
export interface FileStamp { readonly size: number; readonly mtimeMs: number; readonly ctimeMs: number; readonly ino: number; readonly dev: number }

export type ReadResult =
  /** unconfirmed: opened in the cached folder without the check of where it is (deferFolderCheck): confirmFolder before use. */
  | { readonly ok: true; readonly text: string; readonly stat?: FileStamp; readonly unconfirmed?: true }
  /** tooLarge: refused for its size alone (a caller may decide without reading it). */
  | { readonly ok: false; readonly message: string; readonly tooLarge?: true };

const NOFOLLOW = constants.O_NOFOLLOW !== undefined;
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

/** How the limit is raised: said in every "too large" message. */
export const RAISE_LIMIT = 'raise the limit with --max-file-size (or DUS_MAX_FILE_SIZE), e.g. --max-file-size 16MiB';

/** A link target or path as it may be shown: control characters escaped (a file name can hold any byte). */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u001f\u007f-\u009f]/.test(text) ? JSON.stringify(text) : text;
}

/**
 * Node gives a path the kernel holds as bytes decoded as UTF-8, each byte that is not UTF-8 as
 * U+FFFD: a root that shows U+FFFD cannot be told apart from other folders (`ci\xff/repo` is
 * `ci\ufffd/repo` too), so nothing is inside it (the load refuses such a root at once,
 * ambiguousRoot). Below a root without it the comparison is exact: valid UTF-8 decodes one way.
 */
export function ambiguousPath(path: string): boolean {
  return path.includes('\ufffd');
}

export function isInside(root: string, path: string): boolean {
  if (ambiguousPath(root)) return false;
  const rel = relative(root, path);
  return rel === '' || !climbsOut(rel);
}

/** Whether a relative path (path.relative's) leaves the folder it is relative to: `..` or `../…`, or absolute (another drive); `..keys/a` does not. */
export function climbsOut(rel: string): boolean {
  return rel === '..' || rel.startsWith(`..${sep}`) || rel.startsWith('../') || isAbsolute(rel);
}

export function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a folder';
  return 'a special file';
}

function codeOf(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String(err);
}

function fail(message: string): ReadResult {
  return { ok: false, message };
}

function tooLarge(size: number | undefined, maxBytes: number): ReadResult {
  const is = size === undefined ? 'the file is' : `the file is ${formatSize(size)},`;
  return { ok: false, tooLarge: true, message: `${is} larger than the ${formatSize(maxBytes)} limit; desired-state files are small, so this is probably not one: split it, move it out of the resources, or ${RAISE_LIMIT}` };
}

function unreadable(err: unknown, path?: string): ReadResult {
  const code = codeOf(err);
  if (code === 'ENOENT' && path !== undefined && path.includes('\ufffd')) {
    return fail('the name of this file, or of a folder on its path, is not valid UTF-8 (shown with U+FFFD), so it cannot be opened by that name: rename it with UTF-8 characters');
  }
  if (code === 'ENOENT') return fail('the file does not exist (or was removed while it was being read)');
  if (code === 'ELOOP') return fail('the file was replaced by a symbolic link while it was being read; run again once the files stop changing');
  return fail(`the file could not be read (${code}); check its permissions`);
}

/** Reads `path` as UTF-8 text under the rules above. Never throws: a refusal is a sentence. */
export function readRegularFile(path: string, opts: ReadOptions): ReadResult {
  if (opts.listedRegular === true && NOFOLLOW) {
    const listed = readOpened(path, opts, true);
    if (listed !== undefined) return listed;
  }
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    return unreadable(err, path);
  }
  let real = path;
  if (st.isSymbolicLink() || st.isDirectory()) {
    const resolved = resolveLink(path, st, opts);
    if (!resolved.ok) return resolved;
    real = resolved.text;
    try {
      st = statSync(real);
    } catch (err) {
      return unreadable(err);
    }
    if (!st.isFile()) {
      return fail(`this symbolic link points to ${printable(real)}, which is ${kindOf(st)}, not a regular file; dus-sync reads only regular files: replace the link with the file itself, or remove it`);
    }
  }
  if (!st.isFile()) {
    return fail(`this is ${kindOf(st)}, not a regular file; dus-sync reads only regular files: remove it, or keep it out of the resources`);
  }
  if (st.size > opts.maxBytes) return tooLarge(st.size, opts.maxBytes);
  return readOpened(real, opts, false)!;
}

/**
 * The real path a link (or a folder reached through one) leads to, when it may be read: it must
 * resolve, and inside the root unless external links are allowed.
 */
function resolveLink(path: string, st: Stats, opts: ReadOptions): ReadResult {
  const target = st.isSymbolicLink() ? safeReadlink(path) : undefined;
  const shown = target === undefined ? 'a path' : printable(target);
  let real: string;
  try {
    real = realpathSync.native(path);
  } catch (err) {
    const code = codeOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return fail(`this symbolic link points to ${shown}, which does not exist; fix the link or remove it`);
    if (code === 'ELOOP') return fail(`this symbolic link points to ${shown}, which leads back to itself; fix the link or remove it`);
    return unreadable(err);
  }
  if (opts.root !== undefined && opts.followExternalSymlinks !== true && !isInside(opts.root, real)) {
    const folder = statSafe(real)?.isDirectory() === true;
    const via = target === undefined ? `this path leads through a symbolic link to ${printable(real)},` : `this symbolic link points to ${folder ? 'the folder ' : ''}${shown}${target === real ? '' : ` (${printable(real)})`},`;
    return fail(`${via} outside the repository folder ${printable(opts.root)}; dus-sync reads only files inside it: copy the ${folder ? 'files' : 'file'} into the repository, or pass --follow-external-symlinks to allow links that leave it`);
  }
  if (st.isDirectory() || statSafe(real)?.isDirectory()) {
    return fail(`this leads to the folder ${printable(real)}, not to a file; link the files themselves instead`);
  }
  return { ok: true, text: real };
}

function safeReadlink(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

function statSafe(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

class OutsideError extends Error {}

function outsideMessage(real: string, root: string): string {
  return `this file's folder is ${printable(real)}, outside the repository folder ${printable(root)}: a folder on its path is a link out of the repository, or was swapped for one (or moved out) while it was being read; dus-sync reads only files inside it: run again once the files stop changing, or pass --follow-external-symlinks to allow links that leave it`;
}

/**
 * open(path), inside its folder checked to be in the repository where that applies (see
 * FolderCache); `deferred`: opened in the cached folder, whose place the caller confirms.
 */
function openInFolder(path: string, opts: ReadOptions): { fd: number; deferred: boolean } {
  if (!PROC_FD || opts.root === undefined || opts.followExternalSymlinks === true) return { fd: openSync(path, OPEN_FLAGS), deferred: false };
  const folder = folderOf(path, opts.folders, opts.root);
  if (folder === undefined) return { fd: openSync(path, OPEN_FLAGS), deferred: false };
  const root = opts.root;
  const outside = (real: string) => new OutsideError(outsideMessage(real, root));
  try {
    if (!folder.allowed) throw outside(folder.real);
    const fd = openSync(`${procPath(folder.fd)}/${basename(path)}`, OPEN_FLAGS);
    if (opts.deferFolderCheck === true && !folder.owned) {
      // One check for the batch (confirmFolder, or this folder's close), after this open.
      opts.folders!.unconfirmed = (opts.folders!.unconfirmed ?? 0) + 1;
      return { fd, deferred: true };
    }
    // Where the folder is now, the file open: a folder renamed out of the repository since it was
    // checked (its descriptor follows it) must not be read from. One readlink a file.
    let now: string;
    try {
      now = readlinkSync(procPath(folder.fd));
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    if (now !== folder.real && !isInside(root, now)) {
      closeSync(fd);
      throw outside(now);
    }
    return { fd, deferred: false };
  } finally {
    if (folder.owned) closeSync(folder.fd);
  }
}

/** Files up to this size are read into one buffer kept for the next (reads are synchronous: one at a time). */
const SCRATCH_BYTES = 256 * 1024;
let scratch: Buffer | undefined;

/**
 * open (non-blocking, not following a link swapped in since), fstat, read at most maxBytes + 1.
 * `listed` (no lstat came first): undefined when the open fails or it is not a regular file.
 */
function readOpened(path: string, opts: ReadOptions, listed: boolean): ReadResult | undefined {
  const maxBytes = opts.maxBytes;
  let fd: number;
  let deferred: boolean;
  try {
    ({ fd, deferred } = openInFolder(path, opts));
  } catch (err) {
    if (err instanceof OutsideError) return listed ? undefined : fail(err.message);
    return listed ? undefined : unreadable(err);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return listed ? undefined : fail(`this is ${kindOf(st)}, not a regular file; dus-sync reads only regular files: remove it, or keep it out of the resources`);
    if (st.size > maxBytes) return tooLarge(st.size, maxBytes);
    // Sized for the file as statted, grown (up to the limit) if it is longer than it said. Small
    // files share one buffer (the text is a copy): a buffer per file was a tenth of a load's time.
    let buf = st.size + 1 <= SCRATCH_BYTES ? (scratch ??= Buffer.allocUnsafe(SCRATCH_BYTES)).subarray(0, st.size + 1) : Buffer.allocUnsafe(st.size + 1);
    let n = 0;
    for (;;) {
      if (n === buf.length) {
        if (n > maxBytes) return tooLarge(undefined, maxBytes);
        const bigger = Buffer.allocUnsafe(Math.min(buf.length * 2, maxBytes + 1));
        buf.copy(bigger, 0, 0, n);
        buf = bigger;
      }
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
    }
    if (n > maxBytes) return tooLarge(undefined, maxBytes);
    const text = utf8Text(buf.subarray(0, n));
    return deferred ? { ok: true, text, stat: st, unconfirmed: true } : { ok: true, text, stat: st };
  } catch (err) {
    return unreadable(err);
  } finally {
    closeSync(fd);
  }
}

/** Why a path names no folder: the kind of failure, and a sentence naming the name on the way that fails. */
export interface NotAFolder {
  readonly kind: 'missing' | 'not-a-folder' | 'dangling' | 'loop' | 'unreadable';
  readonly why: string;
}

/**
 * Why the folder at `path` cannot be gone into, as the kernel goes (each name in turn, `..` after
 * the name before it, not textually): the first name on the way that does not exist, is not a
 * folder, is a dangling link or a loop of links (`kind`, and `why`, a sentence naming it);
 * undefined when it can be. `path` is absolute.
 */
export function whyNotAFolder(path: string): NotAFolder | undefined {
  try {
    if (statSync(path).isDirectory()) return undefined;
  } catch {
    // below: which name on the way
  }
  const names = path.split('/').slice(1);
  let prefix = '';
  for (let i = 0; i < names.length; i++) {
    if (names[i] === '') continue;
    prefix += `/${names[i]}`;
    let link: string | undefined;
    try {
      if (lstatSync(prefix).isSymbolicLink()) link = readlinkSync(prefix);
    } catch {
      return { kind: 'missing', why: `${printable(prefix)} does not exist` };
    }
    try {
      if (statSync(prefix).isDirectory()) continue;
      return { kind: 'not-a-folder', why: `${printable(prefix)} is not a folder` };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (link !== undefined && code === 'ELOOP') return { kind: 'loop', why: `${printable(prefix)} is a symbolic link to ${JSON.stringify(printable(link))} that leads back to itself (a loop of links)` };
      if (link !== undefined) return { kind: 'dangling', why: `${printable(prefix)} is a symbolic link to ${JSON.stringify(printable(link))}, which does not exist` };
      return { kind: 'unreadable', why: `${printable(prefix)} cannot be read (${code ?? 'error'})` };
    }
  }
  return { kind: 'not-a-folder', why: `${printable(path)} is not a folder` };
}

/**
 * The text of bytes read as UTF-8. Bytes that are not UTF-8 decode to U+FFFD, as a real U+FFFD
 * does: such a text is given a NUL first, which the parser refuses as "not UTF-8 text"
 * (src/load/yaml-source.ts), while a file holding a real U+FFFD is read as written.
 */
export function utf8Text(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  return text.includes('\uFFFD') && !isUtf8(bytes) ? `\u0000${text}` : text;
}
