// Reads files as they are at a git ref, for `diff --base`: git is run directly (execFile and
// spawn, never a shell), offline (no fetch), and the ref is resolved once to a commit so that
// every read sees the same tree.
import { isUtf8 } from 'node:buffer';
import { execFile, spawn } from 'node:child_process';
import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, posix, relative, resolve, sep } from 'node:path';
import { UserError } from '../errors.js';
import { formatSize } from '../limits.js';
import { DISK, type WalkEntry, type WalkFs } from './find.js';
import { climbsOut } from './read-file.js';

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
export const GIT_ENV: NodeJS.ProcessEnv = withGitConfig({
  ...process.env,
  GIT_TERMINAL_PROMPT: '0',
  GIT_PAGER: 'cat',
  GIT_OPTIONAL_LOCKS: '0',
  LC_ALL: 'C',
}, 'safe.bareRepository', 'explicit');

/** The environment with one more configuration entry of the command line's scope, after any it already passes. */
export function withGitConfig(env: NodeJS.ProcessEnv, key: string, value: string): NodeJS.ProcessEnv {
  const given = Number(env.GIT_CONFIG_COUNT ?? '0');
  const n = Number.isSafeInteger(given) && given > 0 ? given : 0;
  return { ...env, GIT_CONFIG_COUNT: String(n + 1), [`GIT_CONFIG_KEY_${n}`]: key, [`GIT_CONFIG_VALUE_${n}`]: value };
}

function git(args: readonly string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', [...args], { cwd, env: GIT_ENV, maxBuffer: MAX_BUFFER, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') reject(new UserError('diff --base needs git, and git was not found on the PATH; install git or run the diff where it is.'));
        else reject(Object.assign(new Error(stderr.trim() || err.message), { gitStderr: stderr }));
        return;
      }
      resolve(stdout);
    });
  });
}

function gitBuffer(args: readonly string[], cwd: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile('git', [...args], { cwd, env: GIT_ENV, maxBuffer: MAX_BUFFER, encoding: 'buffer' }, (err, stdout, stderr) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') reject(new UserError('diff --base needs git, and git was not found on the PATH; install git or run the diff where it is.'));
        else reject(new Error(stderr.toString('utf8').trim() || err.message));
        return;
      }
      resolve(stdout);
    });
  });
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
      if (code !== 0) reject(new Error(`git cat-file failed: ${stderr.trim() || `exit ${code}`}`));
      else resolve(Buffer.concat(chunks));
    });
    child.stdin.end(input);
  });
}

/**
 * The contents of several files at a commit, in one `git cat-file --batch`; a path that does
 * not exist there (or is not a file) maps to undefined. Paths are relative to the repository
 * root. Their sizes are asked for first (`--batch-check`): a file larger than `maxBytes` is
 * refused by name before any of it is read (a 700 MB blob, 700 KB in git, was read whole and
 * ended in V8's "Cannot create a string longer than …").
 */
/** `git cat-file --batch-check` of the paths at a commit: one line per path, "<object> <type> <size>" or "... missing". */
async function checkBlobs(root: string, commit: string, repoPaths: readonly string[]): Promise<string[]> {
  return (await catFile(root, ['--batch-check'], repoPaths.map((p) => `${commit}:${p}\n`).join(''))).toString('utf8').split('\n');
}

export async function readBlobs(root: string, commit: string, repoPaths: readonly string[], maxBytes = Number.MAX_SAFE_INTEGER): Promise<Map<string, string | undefined>> {
  // The line protocol cannot ask for a name holding a line break (git would read another file).
  const odd = repoPaths.find((p) => /[\n\r]/.test(p));
  if (odd !== undefined) {
    throw new UserError(`the file ${JSON.stringify(odd)} at ${commit.slice(0, 12)} has a line break in its name, which dus-sync cannot read from git; rename it, or keep it out of the resources`);
  }
  const checks = await checkBlobs(root, commit, repoPaths);
  const wanted: string[] = [];
  repoPaths.forEach((path, i) => {
    const [, type, size] = (checks[i] ?? '').split(' ');
    if (type !== 'blob') return;
    const n = Number(size);
    if (n > maxBytes) {
      throw new UserError(`the file ${path} at ${commit.slice(0, 12)} is ${formatSize(n)}, larger than the ${formatSize(maxBytes)} a desired-state file may be; this is probably not one: keep it out of the resources (or raise DUS_MAX_FILE_SIZE)`);
    }
    wanted.push(path);
  });
  const out = new Map<string, string | undefined>(repoPaths.map((p) => [p, undefined]));
  if (wanted.length === 0) return out;
  const blobs = parseBatch(await catFile(root, ['--batch'], wanted.map((p) => `${commit}:${p}\n`).join('')), wanted);
  for (const [p, text] of blobs) out.set(p, text);
  return out;
}

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
    out.set(path, type === 'blob' ? buf.subarray(pos, pos + n).toString('utf8') : undefined);
    pos += n + 1; // the content and its trailing newline
  }
  return out;
}

/** A file, link or submodule of a commit's tree (`git ls-tree -r -l`). */
interface TreeEntry {
  readonly kind: 'file' | 'link' | 'submodule';
  readonly object: string;
  readonly size: number;
}

/** Where a path of a commit's tree leads, links followed (CommitTree.resolve). */
export type TreeTarget =
  | { readonly kind: 'folder'; readonly real: string }
  | { readonly kind: 'file'; readonly real: string; readonly object: string; readonly size: number }
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
 * --follow-external-symlinks walks or reads it). A submodule is an empty folder: its files are another repository's. The
 * folders above `top` hold the way down to it, nothing else.
 */
export class CommitTree implements WalkFs {
  private readonly folders = new Map<string, Map<string, TreeEntry | 'folder'>>([['', new Map()]]);
  private readonly undecodable = new Set<string>();

  constructor(readonly top: string, entries: Iterable<readonly [string, TreeEntry]>, private readonly targets: ReadonlyMap<string, string>, undecodable: Iterable<string> = []) {
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

  /** Where the absolute path `abs` leads in the tree, every link on the way followed. */
  resolve(asked: string): TreeTarget {
    const abs = this.rebased(asked);
    const rel = relative(this.top, abs);
    if (climbsOut(rel)) return this.above(abs) ? { kind: 'folder', real: abs } : { kind: 'outside', real: abs };
    const todo = rel === '' ? [] : rel.split(sep).reverse();
    const at: string[] = [];
    let links = 0;
    while (todo.length > 0) {
      const name = todo.pop()!;
      if (name === '' || name === '.') continue;
      if (name === '..') {
        if (at.length === 0) return { kind: 'outside', real: [this.top, '..', ...[...todo].reverse()].join('/') };
        at.pop();
        continue;
      }
      const folder = at.join('/');
      const entry = this.folders.get(folder)?.get(name);
      if (entry === undefined) return { kind: 'missing' };
      if (entry === 'folder') {
        at.push(name);
        continue;
      }
      if (entry.kind === 'link') {
        links += 1;
        if (links > MAX_LINKS_FOLLOWED) return { kind: 'loop' };
        const target = this.targets.get(folder === '' ? name : `${folder}/${name}`);
        if (target === undefined || target === '') return { kind: 'missing' };
        if (posix.isAbsolute(target)) {
          const from = relative(this.top, target);
          if (climbsOut(from)) return { kind: 'outside', real: [target, ...[...todo].reverse()].join('/') };
          at.length = 0;
          todo.push(...from.split(sep).reverse());
        } else {
          todo.push(...target.split('/').reverse());
        }
        continue;
      }
      if (entry.kind === 'submodule') {
        if (todo.some((t) => t !== '' && t !== '.')) return { kind: 'missing' };
        at.push(name);
        continue;
      }
      // A file: the last name of the path; anything after it (`f/`, `f/.`) takes it for a folder (ENOTDIR).
      if (todo.length > 0) return { kind: 'missing' };
      return { kind: 'file', real: join(this.top, ...at, name), object: entry.object, size: entry.size };
    }
    return { kind: 'folder', real: join(this.top, ...at) };
  }

  list(path: string, real: string): WalkEntry[] | 'moved' | 'undecodable' | undefined {
    const r = this.resolve(path);
    if (r.kind === 'outside') return DISK.list(r.real, real);
    if (r.kind !== 'folder') return undefined;
    if (r.real !== real) return 'moved';
    const rel = relative(this.top, r.real);
    if (climbsOut(rel)) {
      // A folder above the repository: the way down to it.
      const next = relative(r.real, this.top).split(sep)[0]!;
      return [entryOf(next, 'folder')];
    }
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
   * A path into the checkout by a way the disk resolves (`/tmp` a link to `/private/tmp`, a
   * `--dir` named through a link): the same path from the checkout's real top. Only the part
   * that exists on the disk is resolved there, as the working tree's own reading does.
   */
  private rebased(abs: string): string {
    if (!climbsOut(relative(this.top, abs)) || this.above(abs)) return abs;
    const rest: string[] = [];
    for (let at = abs; ; at = dirname(at)) {
      try {
        const real = realpathSync.native(at);
        const moved = join(real, ...rest.reverse());
        return climbsOut(relative(this.top, moved)) ? abs : moved;
      } catch {
        if (dirname(at) === at) return abs;
        rest.push(basename(at));
      }
    }
  }

  private above(abs: string): boolean {
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
  const out = await gitBuffer(['ls-tree', '-r', '-z', '-l', '--full-tree', commit], root);
  const entries: [string, TreeEntry][] = [];
  const undecodable = new Set<string>();
  const links: [string, TreeEntry][] = [];
  for (let pos = 0; pos < out.length;) {
    let end = out.indexOf(0, pos);
    if (end < 0) end = out.length;
    const line = out.subarray(pos, end);
    pos = end + 1;
    // "<mode> <type> <object> <size>\t<path>"; the size is "-" for a submodule.
    const tab = line.indexOf(0x09);
    if (tab < 0) continue;
    const [mode = '', , object = '', size = ''] = line.subarray(0, tab).toString('latin1').split(/ +/);
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
    const entry: TreeEntry = { kind, object, size: kind === 'submodule' ? 0 : Number(size) };
    const path = name.toString('utf8');
    entries.push([path, entry]);
    if (kind === 'link') links.push([path, entry]);
  }
  const targets = new Map<string, string>();
  const small = links.filter(([, e]) => e.size > 0 && e.size <= MAX_LINK_TARGET);
  if (small.length > 0) {
    const texts = parseBatch(await catFile(root, ['--batch'], small.map(([, e]) => `${e.object}\n`).join('')), small.map(([, e]) => e.object));
    for (const [path, e] of small) {
      const target = texts.get(e.object);
      if (target !== undefined && !target.includes('\0')) targets.set(path, target);
    }
  }
  return new CommitTree(realpathSync(root), entries, targets, undecodable);
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
  readonly ref: string;
  readonly configFile?: string;
  /** `paths`: every file and link below `dir` at the commit, relative to it, sorted. */
  readonly select: (paths: readonly string[], configText: string | undefined, tree: CommitTree) => readonly string[];
  /** A file larger is refused by name before it is read (DUS_MAX_FILE_SIZE). */
  readonly maxBytes?: number;
  /** A path whose link leads out of the repository: read it (the operator's --follow-external-symlinks), or say why not. */
  readonly outside?: (real: string, path: string) => { readonly text: string } | { readonly message: string };
}): Promise<DesiredAtRef> {
  const root = await repoRoot(args.dir);
  const commit = await resolveCommit(root, args.ref);
  const tree = await commitTree(root, commit);
  const relDir = toRepoRelative(root, args.dir);
  let configText: string | undefined;
  if (args.configFile) {
    const configRel = toRepoRelativeFile(root, args.configFile);
    if (configRel !== undefined) configText = (await readBlobs(root, commit, [configRel], args.maxBytes)).get(configRel);
  }
  const chosen = args.select(tree.pathsUnder(relDir), configText, tree);
  const maxBytes = args.maxBytes ?? Number.MAX_SAFE_INTEGER;
  const top = join(tree.top, ...(relDir === '' ? [] : relDir.split('/')));
  const found: { path: string; object: string }[] = [];
  const outside = new Map<string, string>();
  const unread: { path: string; message: string }[] = [];
  for (const p of chosen) {
    const at = tree.resolve(join(top, ...p.split('/')));
    if (at.kind === 'file') {
      if (at.size > maxBytes) {
        throw new UserError(`the file ${relDir === '' ? p : `${relDir}/${p}`} at ${commit.slice(0, 12)} is ${formatSize(at.size)}, larger than the ${formatSize(maxBytes)} a desired-state file may be; this is probably not one: keep it out of the resources (or raise DUS_MAX_FILE_SIZE)`);
      }
      found.push({ path: p, object: at.object });
    } else if (at.kind === 'outside' && args.outside !== undefined) {
      const got = args.outside(at.real, p);
      if ('text' in got) outside.set(p, got.text);
      else unread.push({ path: p, message: got.message });
    } else {
      unread.push({ path: p, message: unreadMessage(at, commit) });
    }
  }
  const texts = found.length === 0 ? new Map<string, string | undefined>()
    : parseBatch(await catFile(root, ['--batch'], found.map((f) => `${f.object}\n`).join('')), found.map((f) => f.object));
  const files: FileAtRef[] = [];
  const objectOf = new Map(found.map((f) => [f.path, f.object]));
  for (const p of chosen) {
    const object = objectOf.get(p);
    const text = object !== undefined ? texts.get(object) : outside.get(p);
    if (text !== undefined) files.push({ path: p, text });
  }
  return { commit, files, unread, configText };
}

function unreadMessage(at: TreeTarget, commit: string): string {
  const when = `at ${commit.slice(0, 12)}`;
  switch (at.kind) {
    case 'outside': return `${when} this is a symbolic link to ${at.real}, outside the repository, which the commit does not hold`;
    case 'loop': return `${when} this symbolic link leads back to itself; fix the link or remove it`;
    case 'folder': return `${when} this leads to a folder, not to a file; link the files themselves instead`;
    default: return `${when} this symbolic link points to a file that the commit does not hold; fix the link or remove it`;
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

/** A file's path relative to the repository root, or undefined when it lies outside it. */
function toRepoRelativeFile(root: string, file: string): string | undefined {
  let real: string;
  try {
    real = realpathSync(file);
  } catch {
    return undefined;
  }
  const rel = relative(realpathSync(root), real);
  if (climbsOut(rel)) return undefined;
  return rel.split(sep).join('/');
}
