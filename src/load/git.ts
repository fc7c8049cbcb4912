// Reads files as they are at a git ref, for `diff --base`: git is run directly (execFile and
// spawn, never a shell), offline (no fetch), and the ref is resolved once to a commit so that
// every read sees the same tree.
import { execFile, spawn } from 'node:child_process';
import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { UserError } from '../errors.js';
import { formatSize } from '../limits.js';
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

/** The paths of every file below `dir` at `commit`, relative to `dir`. */
export async function listFilesAtCommit(root: string, commit: string, dir: string): Promise<string[]> {
  const relDir = toRepoRelative(root, dir);
  // --literal-pathspecs: a folder named like a glob ('*', '[a]') means itself.
  const out = await git(['--literal-pathspecs', 'ls-tree', '-r', '-z', '--full-tree', '--name-only', commit, '--', relDir === '' ? '.' : relDir], root);
  const prefix = relDir === '' ? '' : `${relDir}/`;
  return out.split('\0').filter((p) => p !== '' && p.startsWith(prefix)).map((p) => p.slice(prefix.length)).sort();
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

export interface DesiredAtRef {
  readonly commit: string;
  /** The resource files, relative to `dir`. */
  readonly files: readonly FileAtRef[];
  /** The config file's text at the commit; undefined when it is not there (or there is none). */
  readonly configText: string | undefined;
}

/**
 * Reads what `diff --base` compares against: the config file (when there is one) and the
 * files below `dir` that `select` picks (given the config text at the ref, so that a change of
 * `resources` globs in the same commit is honoured).
 */
export async function readDesiredAtRef(args: {
  readonly dir: string;
  readonly ref: string;
  readonly configFile?: string;
  readonly select: (paths: readonly string[], configText: string | undefined) => readonly string[];
  /** A file larger is refused by name before it is read (DUS_MAX_FILE_SIZE). */
  readonly maxBytes?: number;
}): Promise<DesiredAtRef> {
  const root = await repoRoot(args.dir);
  const commit = await resolveCommit(root, args.ref);
  const paths = await listFilesAtCommit(root, commit, args.dir);
  let configText: string | undefined;
  if (args.configFile) {
    const configRel = toRepoRelativeFile(root, args.configFile);
    if (configRel !== undefined) configText = (await readBlobs(root, commit, [configRel], args.maxBytes)).get(configRel);
  }
  const chosen = args.select(paths, configText);
  const relDir = toRepoRelative(root, args.dir);
  const prefix = relDir === '' ? '' : `${relDir}/`;
  const blobs = await readBlobs(root, commit, chosen.map((p) => `${prefix}${p}`), args.maxBytes);
  const files: FileAtRef[] = [];
  for (const p of chosen) {
    const text = blobs.get(`${prefix}${p}`);
    if (text !== undefined) files.push({ path: p, text });
  }
  return { commit, files, configText };
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
