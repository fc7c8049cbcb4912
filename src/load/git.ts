// Reads files as they are at a git ref, for `diff --base`: git is run directly (execFile and
// spawn, never a shell), offline (no fetch), and the ref is resolved once to a commit so that
// every read sees the same tree.
import { isUtf8 } from 'node:buffer';
import { execFile, spawn } from 'node:child_process';
import { lstatSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { UserError } from '../errors.js';
import { formatSize } from '../limits.js';
import { DISK, type WalkEntry, type WalkFs } from './find.js';
import { climbsOut, utf8Text } from './read-file.js';

export interface FileAtRef {
  /** Relative to the folder asked for, with forward slashes. */
  readonly path: string;
  readonly text: string;
}

export interface TreeAtRef {
  /** The full commit id the ref resolved to. */
  readonly commit: string;
  /** Every file below the folder at that commit, relative to the folder, sorted. */
  readonly paths: readonly string[];
}

const MAX_BUFFER = 256 * 1024 * 1024;

/**
 * Git without prompts, pagers or the user's external diff tools getting in the way, and never
 * in a repository it did not find as a `.git` folder: a pull request can commit the pieces of a
 * git directory (HEAD, config, objects/, refs/) as plain files, and git run in that folder would
 * take it for a bare repository, read its made-up history as the base branch, and run what its
 * config names (core.fsmonitor). safe.bareRepository=explicit (git 2.38 and later) refuses a bare
 * repository found by searching; set in the environment (GIT_CONFIG_COUNT), the command line's
 * scope, which a repository's own config cannot override.
 */
export const GIT_ENV: NodeJS.ProcessEnv = offline(withGitConfig({
  ...process.env,
  GIT_TERMINAL_PROMPT: '0',
  GIT_PAGER: 'cat',
  GIT_OPTIONAL_LOCKS: '0',
  LC_ALL: 'C',
  // A partial clone (`--filter=blob:none`) fetches a missing object from its remote when one is
  // read: dus-sync reads only what the clone holds (git 2.44 and later; older ones are held by
  // the protocols below, and the object counts as missing).
  GIT_NO_LAZY_FETCH: '1',
}, 'safe.bareRepository', 'explicit'));

/** No transport at all, whatever the user's config allows: every git that dus-sync runs is offline. */
function offline(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  let out = withGitConfig(env, 'protocol.allow', 'never');
  for (const name of ['file', 'git', 'ssh', 'http', 'https', 'ftp', 'ftps', 'ext']) out = withGitConfig(out, `protocol.${name}.allow`, 'never');
  return out;
}

/** The environment with one more configuration entry of the command line's scope, after any it already passes. */
export function withGitConfig(env: NodeJS.ProcessEnv, key: string, value: string): NodeJS.ProcessEnv {
  const given = Number(env.GIT_CONFIG_COUNT ?? '0');
  const n = Number.isSafeInteger(given) && given > 0 ? given : 0;
  return { ...env, GIT_CONFIG_COUNT: String(n + 1), [`GIT_CONFIG_KEY_${n}`]: key, [`GIT_CONFIG_VALUE_${n}`]: value };
}

/** git's standard output; a failure rejects with what git said on one line (and all of it as gitStderr). */
function gitBuffer(args: readonly string[], cwd: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile('git', [...args], { cwd, env: GIT_ENV, maxBuffer: MAX_BUFFER, encoding: 'buffer' }, (err, stdout, stderr) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        const said = stderr.toString('utf8');
        if (code === 'ENOENT') reject(new UserError('diff --base needs git, and git was not found on the PATH; install git or run the diff where it is.'));
        else reject(Object.assign(new Error(gitSaid(said) || err.message), { gitStderr: said }));
        return;
      }
      resolve(stdout);
    });
  });
}

async function git(args: readonly string[], cwd: string): Promise<string> {
  return (await gitBuffer(args, cwd)).toString('utf8');
}

/** gitBuffer, a failure said as one sentence: for the reads of a commit whose ref already resolved. */
async function gitRead(args: readonly string[], cwd: string): Promise<Buffer> {
  try {
    return await gitBuffer(args, cwd);
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(`git ${args[0]} failed in ${cwd} (${err instanceof Error ? err.message : String(err)}); check the repository with git fsck, or run --debug for details`);
  }
}

/** Posix path of `dir` relative to the repository root ('' for the root itself). */
function toRepoRelative(root: string, dir: string): string {
  const rel = relative(realpathSync(root), realpathSync(dir));
  if (climbsOut(rel)) {
    throw new UserError(`${dir} is not inside the git repository at ${root}.`);
  }
  return rel.split(sep).join('/');
}

/**
 * The working tree's top from `git rev-parse --show-toplevel --absolute-git-dir`, when the git
 * directory git found is that checkout's own `.git` (a folder, or the file of a worktree or a
 * submodule that names it); undefined otherwise. Where git is older than safe.bareRepository, a
 * pull request's plain files that look like a git directory (HEAD, objects/, refs/, a config
 * naming a working tree) would otherwise pass for the repository and its history for the base.
 * An operator's own GIT_DIR is taken as it is.
 */
export function checkoutTop(revParse: string): string | undefined {
  const [top = '', gitDir = ''] = revParse.split('\n').map((l) => l.trim());
  if (top === '' || gitDir === '') return undefined;
  if ((process.env.GIT_DIR ?? '') !== '') return top;
  const dotGit = join(top, '.git');
  try {
    let expected = dotGit;
    if (lstatSync(dotGit).isFile()) {
      const named = /^gitdir:[ \t]*(.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
      if (named === undefined) return undefined;
      expected = resolve(top, named);
    }
    return realpathSync(expected) === realpathSync(gitDir) ? top : undefined;
  } catch {
    return undefined;
  }
}

export async function repoRoot(dir: string): Promise<string> {
  let out: string;
  try {
    out = await git(['rev-parse', '--show-toplevel', '--absolute-git-dir'], dir);
  } catch (err) {
    if (err instanceof UserError) throw err;
    // Containers often run as another user than the checkout's owner; git then refuses.
    if (/dubious ownership/.test(firstLine(err))) {
      throw new UserError(`git refuses to read the repository at ${dir} because another user owns it; run: git config --global --add safe.directory '*' (or the folder).`);
    }
    throw new UserError(`diff --base needs a git repository, and ${dir} is not inside one (git said: ${firstLine(err)}).`);
  }
  const top = checkoutTop(out);
  if (top === undefined) throw new UserError(`diff --base needs a git repository, and the git directory git found from ${dir} is not a checkout's .git (${out.trim().split('\n').pop()}): files that look like a git directory's (HEAD, config, objects, refs) are there; remove them from the repository.`);
  return top;
}

/** What git said, on one line: its first fatal or error line, else its first line. */
function gitSaid(stderr: string): string {
  const lines = stderr.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
  return (lines.find((l) => /^(fatal|error):/.test(l)) ?? lines[0] ?? '').slice(0, 300);
}

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0] ?? text;
}

/** The commit a ref names, refusing refs that git could read as options. */
export async function resolveCommit(root: string, ref: string): Promise<string> {
  if (ref === '' || ref.startsWith('-') || /[\0\n]/.test(ref)) {
    throw new UserError(`"${ref}" is not a git ref; pass a branch, tag or commit, e.g. --base origin/main.`);
  }
  try {
    return (await git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], root)).trim();
  } catch {
    throw new UserError(`the git ref "${ref}" was not found in ${root}; fetch it first (e.g. git fetch origin main, or actions/checkout with fetch-depth: 0).`);
  }
}

const PARTIAL_CLONE = 'this is a partial clone (--filter), and the files of the base commit are not all in it: git would fetch them, and diff --base never goes to the network; use a full clone (actions/checkout without `filter:`), or fetch the objects first';

/** `git cat-file ARGS` with `input` on its standard input: its standard output, whole. */
function catFile(root: string, args: readonly string[], input: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['cat-file', ...args], { cwd: root, env: GIT_ENV, stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString('utf8'); });
    child.on('error', (err) => reject((err as NodeJS.ErrnoException).code === 'ENOENT'
      ? new UserError('diff --base needs git, and git was not found on the PATH.') : err));
    child.on('close', (code) => {
      if (code !== 0 && /promisor remote/.test(stderr)) reject(new UserError(PARTIAL_CLONE));
      else if (code !== 0) reject(new UserError(`git cat-file failed in ${root} (${gitSaid(stderr) || `exit ${code}`}); check the repository with git fsck, or run --debug for details`));
      else resolve(Buffer.concat(chunks));
    });
    child.stdin.end(input);
  });
}

/** `git cat-file --batch-check` of the paths at a commit: one line per path, "<object> <type> <size>" or "... missing". */
async function checkBlobs(root: string, commit: string, repoPaths: readonly string[]): Promise<string[]> {
  return (await catFile(root, ['--batch-check'], repoPaths.map((p) => `${commit}:${p}\n`).join(''))).toString('utf8').split('\n');
}

/** `git cat-file --batch`'s answer to `names` (object ids), each name to its content; missing ones to undefined. */
function parseBatch(buf: Buffer, repoPaths: readonly string[]): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  let pos = 0;
  for (const path of repoPaths) {
    const eol = buf.indexOf(0x0a, pos);
    if (eol < 0) throw new Error('git cat-file ended early');
    const header = buf.subarray(pos, eol).toString('utf8');
    pos = eol + 1;
    if (header.endsWith(' missing') || header.endsWith(' ambiguous')) {
      out.set(path, undefined);
      continue;
    }
    const [, type, size] = header.split(' ');
    const n = Number(size);
    if (!Number.isInteger(n)) throw new Error(`git cat-file answered "${header}"`);
    out.set(path, type === 'blob' ? utf8Text(buf.subarray(pos, pos + n)) : undefined);
    pos += n + 1; // the content and its trailing newline
  }
  return out;
}

/** A file, link or submodule of a commit's tree (`git ls-tree -r`). */
interface TreeEntry {
  readonly kind: 'file' | 'link' | 'submodule';
  readonly object: string;
}

/** Where a path of a commit's tree leads, links followed (CommitTree.resolve). */
export type TreeTarget =
  /** `submodule`: the folder is a submodule (its tree path), empty here. */
  | { readonly kind: 'folder'; readonly real: string; readonly submodule?: string }
  /** A path into a submodule: its files are another repository's. */
  | { readonly kind: 'submodule'; readonly path: string }
  | { readonly kind: 'file'; readonly real: string; readonly object: string }
  /** Out of the repository: the commit does not hold it. `real` is the path there, for the disk to resolve (links, `..`). */
  | { readonly kind: 'outside'; readonly real: string }
  | { readonly kind: 'missing' | 'loop' };

/** Links followed on the way to one path at most, as Linux's ELOOP (40). */
const MAX_LINKS_FOLLOWED = 40;
/** A link's target is a path: longer than PATH_MAX, it is no link git could have checked out. */
const MAX_LINK_TARGET = 4096;

/**
 * A commit's tree as a file system for the walk of src/load/find.ts, so that `diff --base` finds
 * the base commit's files by the rules that find the working tree's: folders, files and symbolic
 * links as `git ls-tree` lists them, at absolute paths below `top` (the checkout's real top),
 * each link resolved as the kernel resolves one (relative to its folder, `..` taken after it, at
 * most 40 on the way). A link that leaves the repository leads out of the tree, to what the disk
 * holds there now (the commit does not hold it; the working tree's walk sees the same: only
 * --follow-external-symlinks walks or reads it). A submodule is an empty
 * folder: its files are another repository's. Outside `top` (above it too) the disk answers.
 */
export class CommitTree implements WalkFs {
  private readonly folders = new Map<string, Map<string, TreeEntry | 'folder'>>([['', new Map()]]);
  private readonly undecodable = new Set<string>();
  private readonly topParts: readonly string[];
  private trackedFolders: Set<string> | undefined;
  /** The submodules the walk went into (each an empty folder here), tree paths. */
  readonly submodulesWalked = new Set<string>();

  /** `index`: the paths the working tree's index tracks (git ls-files). */
  constructor(readonly top: string, entries: Iterable<readonly [string, TreeEntry]>, private readonly targets: ReadonlyMap<string, string>, undecodable: Iterable<string> = [], private readonly index: readonly string[] = []) {
    for (const [path, entry] of entries) {
      const parts = path.split('/');
      let folder = '';
      for (let i = 0; i < parts.length - 1; i++) {
        const inner = folder === '' ? parts[i]! : `${folder}/${parts[i]!}`;
        this.folders.get(folder)!.set(parts[i]!, 'folder');
        if (!this.folders.has(inner)) this.folders.set(inner, new Map());
        folder = inner;
      }
      this.folders.get(folder)!.set(parts[parts.length - 1]!, entry);
    }
    for (const f of undecodable) this.undecodable.add(f);
    this.topParts = top.split(sep).filter((p) => p !== '');
  }

  /** Every file, link and submodule below the folder `rel` of the tree ('' for all), relative to it, sorted. */
  pathsUnder(rel: string): string[] {
    const out: string[] = [];
    const visit = (folder: string, shown: string): void => {
      for (const [name, e] of this.folders.get(folder) ?? []) {
        const inner = folder === '' ? name : `${folder}/${name}`;
        const path = shown === '' ? name : `${shown}/${name}`;
        if (e === 'folder') visit(inner, path);
        else out.push(path);
      }
    };
    visit(rel, '');
    return out.sort();
  }

  /**
   * Where the absolute path `asked` leads, every link on the way followed as the kernel follows
   * it: in the tree below `top`, on the disk outside it (a link may leave the repository and come
   * back into it, through `..` or through another link).
   */
  resolve(asked: string): TreeTarget {
    const todo: string[] = [];
    let at: string[];
    const below = this.belowTop(asked);
    if (below !== undefined) {
      at = [...this.topParts];
      todo.push(...below.reverse());
    } else {
      at = [];
      todo.push(...asked.split(sep).reverse());
    }
    let links = 0;
    let submodule: string | undefined;
    while (todo.length > 0) {
      const name = todo.pop()!;
      if (name === '' || name === '.') continue;
      if (name === '..') {
        at.pop();
        submodule = undefined;
        continue;
      }
      const rel = this.inTree(at);
      if (rel !== undefined) {
        if (submodule !== undefined) return { kind: 'submodule', path: submodule };
        const entry = this.folders.get(rel)?.get(name);
        const path = rel === '' ? name : `${rel}/${name}`;
        if (entry === undefined) {
          // A folder git tracks nothing in (`.git`, an ignored, untracked or empty one): a path
          // may pass through it and come back out with `..` (`ign/./sub/../..`), where the kernel
          // needs only that each is a folder, which the disk says. Nothing in it is at the base,
          // and neither is a folder the working tree tracks that the commit lacks (added since).
          const back = this.untrackedPassage(at, name, todo);
          if (back === undefined) return { kind: 'missing' };
          continue;
        }
        if (entry === 'folder') {
          at.push(name);
          continue;
        }
        if (entry.kind === 'link') {
          links += 1;
          if (links > MAX_LINKS_FOLLOWED) return { kind: 'loop' };
          const target = this.targets.get(path);
          if (target === undefined || target === '') return { kind: 'missing' };
          if (target.startsWith('/')) at = [];
          todo.push(...target.split('/').reverse());
          continue;
        }
        if (entry.kind === 'submodule') {
          at.push(name);
          submodule = path;
          continue;
        }
        // A file: the last name of the path; anything after it (`f/`, `f/.`) takes it for a folder (ENOTDIR).
        if (todo.length > 0) return { kind: 'missing' };
        return { kind: 'file', real: join(sep, ...at, name), object: entry.object };
      }
      // Outside the checkout: what the disk holds there, links and all.
      const next = join(sep, ...at, name);
      if (this.onWayToTop(next)) {
        at.push(name);
        continue;
      }
      const st = lstatOf(next);
      if (st === undefined) return { kind: 'outside', real: next };
      if (st.isSymbolicLink()) {
        links += 1;
        if (links > MAX_LINKS_FOLLOWED) return { kind: 'loop' };
        let target: string;
        try {
          target = readlinkSync(next);
        } catch {
          return { kind: 'outside', real: next };
        }
        if (target.startsWith(sep)) at = [];
        todo.push(...target.split(sep).reverse());
        continue;
      }
      if (st.isDirectory()) {
        at.push(name);
        continue;
      }
      if (todo.length > 0) return { kind: 'missing' };
      return { kind: 'outside', real: next };
    }
    const real = join(sep, ...at);
    if (this.inTree(at) !== undefined) return { kind: 'folder', real, ...(submodule !== undefined ? { submodule } : {}) };
    return this.onWayToTop(real) ? { kind: 'folder', real } : { kind: 'outside', real };
  }

  list(path: string, real: string): WalkEntry[] | 'moved' | 'undecodable' | undefined {
    const r = this.resolve(path);
    if (r.kind === 'outside') return DISK.list(r.real, real);
    if (r.kind !== 'folder') return undefined;
    if (r.real !== real) return 'moved';
    if (r.submodule !== undefined) {
      this.submodulesWalked.add(r.submodule);
      return [];
    }
    const rel = relative(this.top, r.real);
    // A folder above the repository: the disk's (the way down to the checkout is a real folder there).
    if (climbsOut(rel)) return DISK.list(r.real, real);
    const key = rel.split(sep).join('/');
    if (this.undecodable.has(key)) return 'undecodable';
    return [...this.folders.get(key) ?? []].map(([name, e]) => entryOf(name, e === 'folder' || e.kind === 'submodule' ? 'folder' : e.kind));
  }

  kind(path: string): 'folder' | 'file' | 'other' | undefined {
    const r = this.resolve(path);
    if (r.kind === 'outside') return DISK.kind(r.real);
    return r.kind === 'folder' || r.kind === 'file' ? r.kind : undefined;
  }

  realpath(path: string): string {
    const r = this.resolve(path);
    if (r.kind === 'outside') return DISK.realpath(r.real);
    if (r.kind === 'folder' || r.kind === 'file') return r.real;
    throw Object.assign(new Error(`${path}: no such path in the commit`), { code: 'ENOENT' });
  }

  /**
   * From the tree folder `at`, into the untracked folder `name` and out again: consumes from
   * `todo` the names of the way through (folders of the disk only, then as many `..`) and
   * returns true when it leads back to `at`; undefined when the path goes anywhere else (a file,
   * a link, or a folder the index tracks: each is not at the base).
   */
  private untrackedPassage(at: readonly string[], name: string, todo: string[]): true | undefined {
    const inside = [name];
    for (;;) {
      const folder = join(sep, ...at, ...inside);
      if (this.tracked(folder) || lstatOf(folder)?.isDirectory() !== true) return undefined;
      for (let next = todo.pop(); ; next = todo.pop()) {
        if (next === undefined) return undefined;
        if (next === '' || next === '.') continue;
        if (next === '..') {
          inside.pop();
          if (inside.length === 0) return true;
          continue;
        }
        inside.push(next);
        break;
      }
    }
  }

  /** Whether the working tree's index tracks a file at or below `abs` (a folder added since the commit, say). */
  private tracked(abs: string): boolean {
    if (this.trackedFolders === undefined) {
      this.trackedFolders = new Set();
      for (const path of this.index) {
        for (let i = path.indexOf('/'); i >= 0; i = path.indexOf('/', i + 1)) this.trackedFolders.add(path.slice(0, i));
        this.trackedFolders.add(path);
      }
    }
    const rel = relative(this.top, abs);
    return !climbsOut(rel) && this.trackedFolders.has(rel.split(sep).join('/'));
  }

  /** The names below `top` of a path written under it (`top` itself: none), or undefined. */
  private belowTop(abs: string): string[] | undefined {
    if (abs === this.top) return [];
    const prefix = this.top.endsWith(sep) ? this.top : `${this.top}${sep}`;
    return abs.startsWith(prefix) ? abs.slice(prefix.length).split(sep) : undefined;
  }

  /** The tree's path of the real folder `at` ('' for top), or undefined when it is not in the tree. */
  private inTree(at: readonly string[]): string | undefined {
    if (at.length < this.topParts.length) return undefined;
    for (let i = 0; i < this.topParts.length; i++) if (at[i] !== this.topParts[i]) return undefined;
    return at.slice(this.topParts.length).join('/');
  }

  /** Whether `abs` is a folder above `top` (top is a real path: each of them is a real folder). */
  private onWayToTop(abs: string): boolean {
    const down = relative(abs, this.top);
    return down !== '' && !climbsOut(down);
  }
}

function entryOf(name: string, kind: 'folder' | 'file' | 'link'): WalkEntry {
  return { name, isDirectory: () => kind === 'folder', isSymbolicLink: () => kind === 'link', isFile: () => kind === 'file' };
}

/**
 * The whole tree of a commit (links may lead anywhere in the repository), with the target of
 * every link. A name that is not valid UTF-8 is left out and its folder marked, as the walk of the
 * working tree refuses such a folder.
 */
export async function commitTree(root: string, commit: string): Promise<CommitTree> {
  // Without sizes (-l): they take every object, which a partial clone does not hold.
  const out = await gitRead(['ls-tree', '-r', '-z', '--full-tree', commit], root);
  // A sparse checkout leaves files out of the working tree (skip-worktree, "S"): out of the
  // base's too, or each would count as removed.
  // Only where the file is not on the disk: a flag set by hand (update-index --skip-worktree) on
  // a file that is there leaves it in.
  const sparse = new Set<string>();
  const index: string[] = [];
  const realRoot = realpathSync(root);
  for (const entry of (await gitRead(['ls-files', '-z', '-t'], root)).toString('utf8').split('\0')) {
    if (entry.length < 3) continue;
    const path = entry.slice(2);
    index.push(path);
    if (entry.startsWith('S ') && lstatOf(join(realRoot, ...path.split('/'))) === undefined) sparse.add(path);
  }
  const entries: [string, TreeEntry][] = [];
  const undecodable = new Set<string>();
  const links: [string, TreeEntry][] = [];
  for (let pos = 0; pos < out.length;) {
    let end = out.indexOf(0, pos);
    if (end < 0) end = out.length;
    const line = out.subarray(pos, end);
    pos = end + 1;
    // "<mode> <type> <object>\t<path>"
    const tab = line.indexOf(0x09);
    if (tab < 0) continue;
    const [mode = '', , object = ''] = line.subarray(0, tab).toString('latin1').split(' ');
    const name = line.subarray(tab + 1);
    const kind = mode === '120000' ? 'link' : mode === '160000' ? 'submodule' : mode.startsWith('100') ? 'file' : undefined;
    if (kind === undefined) continue;
    if (!isUtf8(name)) {
      // The folder that holds the first name on the way that is not UTF-8.
      const parts: string[] = [];
      for (const part of splitBytes(name, 0x2f)) {
        if (!isUtf8(part)) break;
        parts.push(part.toString('utf8'));
      }
      undecodable.add(parts.join('/'));
      continue;
    }
    const entry: TreeEntry = { kind, object };
    const path = name.toString('utf8');
    if (sparse.has(path)) continue;
    entries.push([path, entry]);
    if (kind === 'link') links.push([path, entry]);
  }
  const targets = new Map<string, string>();
  const sizes = await objectSizes(root, links.map(([, e]) => e.object));
  const small = links.filter(([, e]) => { const n = sizes.get(e.object); return n !== undefined && n > 0 && n <= MAX_LINK_TARGET; });
  if (small.length > 0) {
    const texts = await readObjects(root, small.map(([, e]) => e.object));
    for (const [path, e] of small) {
      const target = texts.get(e.object);
      if (target !== undefined && !target.includes('\0')) targets.set(path, target);
    }
  }
  return new CommitTree(realRoot, entries, targets, undecodable, index);
}

/** What the disk has at `path` itself (a link not followed), or undefined when nothing. */
function lstatOf(path: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function splitBytes(buf: Buffer, byte: number): Buffer[] {
  const parts: Buffer[] = [];
  let from = 0;
  for (let i = buf.indexOf(byte); i >= 0; i = buf.indexOf(byte, from)) {
    parts.push(buf.subarray(from, i));
    from = i + 1;
  }
  parts.push(buf.subarray(from));
  return parts;
}

export interface DesiredAtRef {
  readonly commit: string;
  /** The resource files, relative to `dir`. */
  readonly files: readonly FileAtRef[];
  /** The selected paths that lead to no file at the commit, relative to `dir`, each with why (a sentence). */
  readonly unread: readonly { readonly path: string; readonly message: string }[];
  /** The config file's text at the commit; undefined when it is not there (or there is none). */
  readonly configText: string | undefined;
  /** Why the config file at the commit was not read (a link out of its folder), when it was not. */
  readonly configRefused?: string;
  /** Submodules (paths in the repository) the walk went into: their files are not read at the commit. */
  readonly submodules: readonly string[];
}

/**
 * Reads what `diff --base` compares against: the config file (when there is one) and the
 * files below `dir` that `select` picks (given the config text at the ref, so that a change of
 * `resources` globs in the same commit is honoured, and the commit's tree, which the working
 * tree's walk can list: src/load/index.ts listIn). Files are read by object id, through the
 * links of the commit: no name goes through git's line protocol.
 */
export async function readDesiredAtRef(args: {
  readonly dir: string;
  /** The folder whose git repository holds the base (the config's, dus-sync's repository); `dir` when not given. */
  readonly repository?: string;
  readonly ref: string;
  readonly configFile?: string;
  /** `paths`: every file and link below `dir` at the commit, relative to it, sorted. */
  readonly select: (paths: readonly string[], configText: string | undefined, tree: CommitTree) => readonly string[];
  /** A file larger is refused by name before it is read (DUS_MAX_FILE_SIZE). */
  readonly maxBytes?: number;
  /** Why a selected path that leads to `real` is not read (out of the repository folder), or undefined to read it. */
  readonly refuse?: (real: string) => string | undefined;
  /** Why the config file, when it leads to `real`, is not read (a link out of its folder), or undefined to read it. */
  readonly refuseConfig?: (real: string) => string | undefined;
  /** A selected path that leads out of the git repository, not refused: read it from the disk, or say why not. */
  readonly outside?: (real: string) => { readonly text: string } | { readonly message: string };
}): Promise<DesiredAtRef> {
  // The git repository of dus-sync's repository (the config's folder), whatever --dir names: a
  // --dir inside another repository (vendored, ignored) does not make that one's history the base.
  const root = await repoRoot(args.repository ?? args.dir);
  const commit = await resolveCommit(root, args.ref);
  const tree = await commitTree(root, commit);
  // `dir` may lie out of the git repository (a link out, with --follow-external-symlinks): then no path of the tree is under it.
  let relDir: string | undefined;
  try {
    relDir = toRepoRelative(root, args.dir);
  } catch {
    relDir = undefined;
  }
  const maxBytes = args.maxBytes ?? Number.MAX_SAFE_INTEGER;
  const when = `at ${commit.slice(0, 12)}`;
  const tooLarge = (shown: string, size: number): UserError => new UserError(`the file ${shown} ${when} is ${formatSize(size)}, larger than the ${formatSize(maxBytes)} a desired-state file may be; this is probably not one: keep it out of the resources (or raise DUS_MAX_FILE_SIZE)`);
  // The config as the commit holds it, through the commit's own links.
  let configText: string | undefined;
  // Only a config in the repository's tree has a version there (one named elsewhere by --config is the operator's).
  const configFolder = args.configFile === undefined ? undefined : tree.resolve(dirname(resolve(args.configFile)));
  const config = configFolder?.kind === 'folder' && !climbsOut(relative(tree.top, configFolder.real))
    ? tree.resolve(resolve(args.configFile!)) : undefined;
  // dus-sync.yaml as a link at the base: held to the same rule as in the working tree (within its folder).
  const configRefused = config?.kind === 'file' || config?.kind === 'outside' ? args.refuseConfig?.(config.real) : undefined;
  if (config?.kind === 'file' && configRefused === undefined) {
    const size = (await objectSizes(root, [config.object])).get(config.object);
    if (size !== undefined && size > maxBytes) throw tooLarge(relative(tree.top, config.real).split(sep).join('/'), size);
    configText = (await readObjects(root, [config.object])).get(config.object);
  }
  const chosen = args.select(relDir === undefined ? [] : tree.pathsUnder(relDir), configText, tree);
  const found: { path: string; object: string }[] = [];
  const outside = new Map<string, string>();
  const unread: { path: string; message: string }[] = [];
  for (const p of chosen) {
    const at = tree.resolve(join(args.dir, ...p.split('/')));
    const refused = at.kind === 'file' || at.kind === 'outside' ? args.refuse?.(at.real) : undefined;
    if (refused !== undefined) {
      unread.push({ path: p, message: refused });
    } else if (at.kind === 'file') {
      found.push({ path: p, object: at.object });
    } else if (at.kind === 'outside' && args.outside !== undefined) {
      const got = args.outside(at.real);
      if ('text' in got) outside.set(p, got.text);
      else unread.push({ path: p, message: got.message });
    } else {
      unread.push({ path: p, message: `${when} ${unreadMessage(at)}` });
    }
  }
  // Sizes first: a file larger than the limit is refused by name before any of it is read (a
  // 700 MB blob, 700 KB in git, was read whole); an object the clone does not hold is not asked for.
  const sizes = await objectSizes(root, found.map((f) => f.object));
  for (const f of found) {
    const size = sizes.get(f.object);
    if (size !== undefined && size > maxBytes) throw tooLarge(relDir === undefined || relDir === '' ? f.path : `${relDir}/${f.path}`, size);
  }
  const texts = await readObjects(root, found.map((f) => f.object).filter((o) => sizes.get(o) !== undefined));
  const files: FileAtRef[] = [];
  const objectOf = new Map(found.map((f) => [f.path, f.object]));
  for (const p of chosen) {
    const object = objectOf.get(p);
    const text = object !== undefined ? texts.get(object) : outside.get(p);
    if (text !== undefined) files.push({ path: p, text });
    else if (object !== undefined) unread.push({ path: p, message: `${when} the object of this file is missing from the local repository (a partial, shallow or damaged clone; dus-sync never fetches): fetch the base's objects (git fetch) and run again` });
  }
  return { commit, files, unread, configText, ...(configRefused !== undefined ? { configRefused } : {}), submodules: [...tree.submodulesWalked].sort() };
}

function unreadMessage(at: TreeTarget): string {
  switch (at.kind) {
    case 'outside': return `this symbolic link leads to ${at.real}, outside the repository, which the commit does not hold`;
    case 'loop': return 'this symbolic link leads back to itself; fix the link or remove it';
    case 'folder': return 'this leads to a folder, not to a file; link the files themselves instead';
    case 'submodule': return `this leads into the submodule ${at.path}, whose files are another repository's, which diff --base does not read at the base`;
    default: return 'this symbolic link points to a file that the commit does not hold; fix the link or remove it';
  }
}

/** The sizes of git objects by id (`git cat-file --batch-check`); an object the repository does not hold maps to undefined. */
async function objectSizes(root: string, objects: readonly string[]): Promise<Map<string, number | undefined>> {
  const out = new Map<string, number | undefined>();
  if (objects.length === 0) return out;
  const lines = (await catFile(root, ['--batch-check'], objects.map((o) => `${o}\n`).join(''))).toString('utf8').split('\n');
  objects.forEach((o, i) => {
    const [, type, size] = (lines[i] ?? '').split(' ');
    const n = Number(size);
    out.set(o, type !== undefined && type !== 'missing' && Number.isSafeInteger(n) ? n : undefined);
  });
  return out;
}

/** The contents of git objects by id, in one `git cat-file --batch`; an object git does not have maps to undefined. */
async function readObjects(root: string, objects: readonly string[]): Promise<Map<string, string | undefined>> {
  if (objects.length === 0) return new Map();
  return parseBatch(await catFile(root, ['--batch'], objects.map((o) => `${o}\n`).join('')), objects);
}

/**
 * The text of the config file as `ref` holds it at the same place (links inside the repository
 * followed by git), or undefined: best effort, for registering the keys the base config names
 * with redaction before anything is loaded (a key file the change stops naming is still a key).
 * Never throws.
 */
export async function configTextAtRef(repository: string, ref: string, configFile: string): Promise<string | undefined> {
  try {
    const root = await repoRoot(repository);
    const commit = await resolveCommit(root, ref);
    const rel = relative(realpathSync(root), join(realpathSync(dirname(configFile)), basename(configFile)));
    if (rel === '' || climbsOut(rel) || /[\n\r]/.test(rel)) return undefined;
    const name = `${commit}:${rel.split(sep).join('/')}`;
    // Its size first: a blob far larger than any config is not read at all.
    const [, type, size] = (await catFile(root, ['--batch-check', '--follow-symlinks'], `${name}\n`)).toString('utf8').split('\n')[0]!.split(' ');
    if (type !== 'blob' || !(Number(size) <= 4 * 1024 * 1024)) return undefined;
    // A link out of the repository is answered "symlink …", which parseBatch refuses: none, then.
    return parseBatch(await catFile(root, ['--batch', '--follow-symlinks'], `${name}\n`), [name]).get(name);
  } catch {
    return undefined;
  }
}

/**
 * The files named `name` that `ref` holds in the folders from `start` up to `stop` (not
 * included; the repository's top included when `stop` is undefined or not above `start`),
 * relative to the repository: what an upward search from `start` would have found first at
 * that ref. A folder outside the repository ends the climb.
 */
export async function nearerFilesAtRef(start: string, stop: string | undefined, ref: string, name: string): Promise<string[]> {
  const root = await repoRoot(start);
  const commit = await resolveCommit(root, ref);
  const realRoot = realpathSync(root);
  const end = stop === undefined ? undefined : realpathSync(stop);
  const paths: string[] = [];
  for (let dir = realpathSync(start); dir !== end; dir = dirname(dir)) {
    const rel = relative(realRoot, dir);
    if (climbsOut(rel)) break;
    paths.push(rel === '' ? name : `${rel.split(sep).join('/')}/${name}`);
    if (rel === '') break;
  }
  if (paths.length === 0) return [];
  if (paths.some((p) => /[\n\r]/.test(p))) return paths;
  const checks = await checkBlobs(root, commit, paths);
  return paths.filter((_, i) => (checks[i] ?? '').split(' ')[1] === 'blob');
}

/**
 * The symbolic links and submodules the index holds (a checkout's tracked files) that `ref`
 * does not hold alike (added, or pointing elsewhere), as absolute paths in the working tree:
 * what a change could have made of a folder on the way to a config.
 */
export async function linksChangedSince(dir: string, ref: string): Promise<{ readonly path: string; readonly submodule: boolean }[]> {
  const root = await repoRoot(dir);
  const commit = await resolveCommit(root, ref);
  const entries: { path: string; mode: string; object: string }[] = [];
  for (const entry of (await git(['ls-files', '-s', '-z'], root)).split('\0')) {
    // "<mode> <object> <stage>\t<path>": 120000 a symbolic link, 160000 a submodule.
    const tab = entry.indexOf('\t');
    if (tab < 0 || !(entry.startsWith('120000 ') || entry.startsWith('160000 '))) continue;
    const [mode, object] = entry.slice(0, tab).split(' ');
    entries.push({ path: entry.slice(tab + 1), mode: mode!, object: object! });
  }
  if (entries.length === 0) return [];
  const before = new Map<string, string>();
  for (const entry of (await git(['ls-tree', '-r', '-z', '--full-tree', commit], root)).split('\0')) {
    // "<mode> <type> <object>\t<path>"
    const tab = entry.indexOf('\t');
    if (tab < 0) continue;
    const [mode, , object] = entry.slice(0, tab).split(' ');
    before.set(entry.slice(tab + 1), `${mode} ${object}`);
  }
  return entries.filter((e) => before.get(e.path) !== `${e.mode} ${e.object}`)
    .map((e) => ({ path: join(root, ...e.path.split('/')), submodule: e.mode === '160000' }));
}

/**
 * Of the files (absolute paths as named), those inside the repository of `dir` that differ in the
 * working tree from `ref`: added, changed, made a link or another kind of file. A file the
 * repository does not track (one a CI step wrote, ignored) is not the change's and not listed.
 */
export async function filesChangedSince(dir: string, ref: string, files: readonly string[]): Promise<string[]> {
  const root = await repoRoot(dir);
  const inside = new Map<string, string>();
  for (const file of files) {
    // The folder as the kernel finds it (git names the top by its real path), the file as named:
    // a file that is a link is the change's as a link.
    let folder: string;
    try { folder = realpathSync(dirname(resolve(file))); } catch { continue; }
    const rel = relative(root, join(folder, basename(file)));
    if (rel === '' || climbsOut(rel)) continue;
    inside.set(rel.split(sep).join('/'), file);
  }
  if (inside.size === 0) return [];
  const commit = await resolveCommit(root, ref);
  // Names only (no content diffed, no external diff or textconv run), each name as written.
  const out = await git(['--literal-pathspecs', 'diff', '--no-ext-diff', '--no-textconv', '--name-only', '-z', commit, '--', ...inside.keys()], root);
  const names = out.split('\0').filter((p) => p !== '');
  // A name git spells otherwise than it was asked (one not valid UTF-8 on the way): one of the
  // files changed, which one cannot be told; all of them, then.
  if (names.some((p) => !inside.has(p))) return [...inside.values()];
  return names.map((p) => inside.get(p)!);
}
