// Walks the folders the resources globs can match, and lists every entry that could be a
// desired-state file: regular files, symbolic links and special files (FIFOs, devices, sockets)
// alike, so that the reader refuses the ones it must and says so. tinyglobby cannot do this: it
// either follows links (into a link to / or /proc, and skipping dangling ones without a word) or
// drops them, and it never lists a FIFO or a device at all.
//
// Folders reached through a link are walked only when the link resolves inside the repository
// (or with --follow-external-symlinks), each real folder once, so links that loop or fan out
// cannot make the walk endless. A link to a folder that is not walked, and a dangling link, is
// listed for the reader to report.
import { isUtf8 } from 'node:buffer';
import { closeSync, readdirSync, realpathSync, statSync, type Dirent } from 'node:fs';
import { dirname, join } from 'node:path';
import picomatch from 'picomatch';
import { folderMayHold, globMatcher } from './glob-match.js';
import { globOf, isExclusion } from './resource-globs.js';
import { isInside, openFolder, PROC_FD, procPath } from './read-file.js';
import { lowerBound } from '../sorted.js';

/** An entry of a folder, as the walk sees it: a Dirent of the disk, or one of a commit's tree. */
export interface WalkEntry {
  readonly name: string;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFile(): boolean;
}

/**
 * What the walk asks of a file system, by absolute path: the disk's (DISK), or a commit's tree
 * (src/load/git.ts), so that `diff --base` lists the base commit's files by the same rules as the
 * working tree's (links followed alike, each real folder once).
 */
export interface WalkFs {
  /** The entries of the folder at `path`, which must be the folder whose real path is `real` (listFolder). */
  list(path: string, real: string): WalkEntry[] | 'moved' | 'undecodable' | undefined;
  /** What is at `path`, links followed: undefined when nothing is (or it cannot be told). */
  kind(path: string): 'folder' | 'file' | 'other' | undefined;
  /** `path` with every link resolved; throws when there is no such path. */
  realpath(path: string): string;
}

/** The disk, as the walk asks of it. */
export const DISK: WalkFs = {
  list: listFolder,
  kind(path) {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(path);
    } catch {
      return undefined;
    }
    return st.isDirectory() ? 'folder' : st.isFile() ? 'file' : 'other';
  },
  realpath: (path) => realpathSync.native(path),
};

export interface FindOptions {
  /** The folder the globs are relative to. */
  readonly base: string;
  /** Its real path: links must resolve inside it. */
  readonly realRoot: string;
  readonly patterns: readonly string[];
  readonly followExternalSymlinks: boolean;
  /** Relative to `base` (posix): only this folder is walked (--dir inside the config's folder). */
  readonly under?: string;
  /** Where to walk: the disk unless told. */
  readonly fs?: WalkFs;
}

export interface Found {
  /** Paths relative to `base` (posix) to be matched against the globs. */
  readonly entries: readonly string[];
  /** Paths relative to `base` to report whatever the globs say: links to folders that were not walked. */
  readonly unwalked: readonly string[];
  /** The entries the listing saw as regular files (readdir's file type: not links, not FIFOs). */
  readonly regular: ReadonlySet<string>;
  /** Folders (relative to `base`) holding a name that is not UTF-8: not listed; the load refuses them. */
  readonly undecodable: readonly string[];
  /** Entries listed through a link (a link to a file, or a file in a folder reached through one): each to its real path. */
  readonly realOf: ReadonlyMap<string, string>;
  /**
   * Links to folders that were not walked again because the walk had listed their folder by
   * another path (its own, usually): [the link's path, that path]. A file below it is also the
   * file below the link, which the globs may select when they leave out its own path
   * (`["**\/*.yaml", "!shared/**"]` with `envs/prod -> ../shared/prod`): see throughLinks.
   */
  readonly aliases: readonly (readonly [link: string, listedAs: string])[];
  /** The aliases' links below which no path is selected as it is: an exclusion rules out every one (`!testdata/**`), or no glob reaches there. */
  readonly closed: ReadonlySet<string>;
  /** Folders holding a name that is not UTF-8, below which an exclusion rules out every path: they matter only to paths through links. */
  readonly undecodableExcluded: readonly string[];
  /** Whether the links not followed were tried through the aliases past MAX_LINK_PATHS paths: the listing is refused, as in listIn. */
  readonly tooManyPaths?: boolean;
  /** The globs' folders (--dir's among them) whose way passes a link that loops: [the link's path, where it leads]. Not walked. */
  readonly loops: readonly (readonly [link: string, to: string])[];
}

export interface Scope {
  /** Relative to base, posix, '' for base itself. */
  readonly dir: string;
  /** Levels of entries below `dir` that the glob can reach (Infinity with **). */
  readonly depth: number;
}

/** The folders each positive glob can match in, and how deep; within `under` when given. */
export function scopesOf(patterns: readonly string[], under = ''): Scope[] {
  const scopes: Scope[] = [];
  for (const p of patterns) {
    // Unescaped: `v\[1\]/*.yaml` walks the folder `v[1]`, as picomatch matches it.
    const scan = picomatch.scan(p, { unescape: true });
    if (scan.negated) continue;
    if (!scan.isGlob) {
      const dir = dirname(scan.base);
      scopes.push({ dir: dir === '.' ? '' : dir, depth: 1 });
      continue;
    }
    // Every '/' of the glob part may be one level (a brace or extglob may hold fewer): never too shallow.
    // A repeating extglob holding a '/' (`+(*/)*.yaml`) repeats folders: any depth. picomatch's
    // scan splits the glob at the slashes outside braces, extglobs and classes, so a '/' in a part
    // is inside one of those; `envs/+(prod|qa)/*.yaml` holds none, and reaches two levels.
    const parts = picomatch.scan(p, { parts: true }).parts ?? [p];
    const anyDepth = scan.glob.includes('**') || parts.some((part) => part.includes('/') && /[+*]\(/.test(part));
    scopes.push({ dir: scan.base, depth: anyDepth ? Infinity : scan.glob.split('/').length });
  }
  if (under !== '') return foldScopes(scopes.flatMap((s) => clip(s, under)));
  return foldScopes(scopes);
}

/** A scope cut down to the part of it inside `under`: none, all of it, or `under` itself. */
function clip(s: Scope, under: string): Scope[] {
  if (covers(under, s.dir)) return [s];
  if (!covers(s.dir, under)) return [];
  const levels = under.split('/').length - (s.dir === '' ? 0 : s.dir.split('/').length);
  return s.depth > levels ? [{ dir: under, depth: s.depth - levels }] : [];
}

function foldScopes(scopes: readonly Scope[]): Scope[] {
  // A scope inside another that already reaches every depth adds nothing.
  const widestFirst = [...scopes].sort((a, b) => Number(b.depth === Infinity) - Number(a.depth === Infinity) || a.dir.length - b.dir.length);
  const kept: Scope[] = [];
  for (const s of widestFirst) if (!kept.some((o) => o.depth === Infinity && covers(o.dir, s.dir))) kept.push(s);
  return kept;
}

function covers(outer: string, inner: string): boolean {
  return outer === '' || inner === outer || inner.startsWith(`${outer}/`);
}

/**
 * The entries of the folder at `path`, which must be the folder whose real path is `real`:
 * 'moved' when it is not (a name on the way swapped for a link), undefined when it cannot be read.
 * On Linux the folder is opened, checked where the kernel says the open folder is, and listed
 * through /proc/self/fd: what is listed is the folder checked, whatever is renamed meanwhile.
 * Elsewhere it is listed by path and its real path compared after (a swap and a swap back
 * between the two goes unseen there).
 */
function listFolder(path: string, real: string): Dirent[] | 'moved' | 'undecodable' | undefined {
  if (PROC_FD) {
    let opened: { fd: number; real: string };
    try {
      opened = openFolder(path);
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOTDIR' ? 'moved' : undefined;
    }
    try {
      if (opened.real !== real) return 'moved';
      return decodable(procPath(opened.fd), readdirSync(procPath(opened.fd), { withFileTypes: true }));
    } catch {
      return undefined;
    } finally {
      closeSync(opened.fd);
    }
  }
  let dirents: Dirent[];
  try {
    dirents = readdirSync(path, { withFileTypes: true });
  } catch {
    return undefined;
  }
  try {
    return realpathSync.native(path) === real ? decodable(path, dirents) : 'moved';
  } catch {
    return undefined;
  }
}

/**
 * The listing, or 'undecodable' when a name in the folder is not UTF-8: Node shows each such
 * byte as U+FFFD, so such a name cannot be opened by the name Node gives, and two names can show
 * alike (`\xff.yaml` and a real `\ufffd.yaml` are one entry). Asked only when a name shows U+FFFD.
 */
function decodable(folder: string, dirents: Dirent[]): Dirent[] | 'undecodable' {
  if (!dirents.some((d) => d.name.includes('\ufffd'))) return dirents;
  return readdirSync(folder, { encoding: 'buffer' }).every((name) => isUtf8(name)) ? dirents : 'undecodable';
}

function skipped(name: string): boolean {
  return name.startsWith('.') || name === 'node_modules';
}

export function findCandidates(opts: FindOptions): Found {
  const negatives = opts.patterns.filter(isExclusion).map(globOf);
  const excludedBelow = wholeFolderExclusion(negatives);
  // Whether a path below a folder may be selected: a link the walk does not follow is reported
  // only then (a dangling envs/dev is nothing to `envs/+(prod|qa)/*.yaml`).
  const mayHold = folderMayHold(opts.patterns.filter((p) => !isExclusion(p)));
  // Those no glob may select a path below by their own path: one may through a link to a folder
  // above them (envs/qa -> prod, with envs/{prod,qa/overrides}/*.yaml and envs/prod/overrides
  // dangling), which the walk knows of only at its end.
  // An exclusion counts when it rules out every path below the link (`!envs/dev/**`), not its
  // own path alone (`!envs/?ev` leaves envs/dev/x.yaml selected); below an excluded folder a
  // path through a link to it may still be selected (`!shared/**`, envs/prod -> ../shared/prod).
  const quiet: string[] = [];
  const selectsBelow = (path: string): boolean => !excludedBelow(path) && mayHold(path);
  const unfollowed = (path: string): void => {
    if (selectsBelow(path)) unwalked.add(path);
    else quiet.push(path);
  };
  let tooManyPaths = false;
  const entries = new Set<string>();
  const regular = new Set<string>();
  const unwalked = new Set<string>();
  const undecodable = new Set<string>();
  const realOf = new Map<string, string>();
  const aliases: [string, string][] = [];
  const closed = new Set<string>();
  const undecodableExcluded = new Set<string>();
  const loops: [string, string][] = [];
  const join2 = (dir: string, name: string): string => (dir === '' ? name : `${dir}/${name}`);

  const fs = opts.fs ?? DISK;
  const mayFollow = (real: string): boolean => opts.followExternalSymlinks || isInside(opts.realRoot, real);

  for (const scope of scopesOf(opts.patterns, opts.under)) {
    // Each real folder once per scope, remembering how much depth was left when it was walked.
    // Links to folders wait until every real folder was walked, so that a file is listed by its
    // own path rather than through a link that happens to sort first.
    const walked = new Map<string, number>();
    // The path each real folder was first listed by.
    const listedAs = new Map<string, string>();
    // `parent`: the folders on the link's path, its own first (the real path of each).
    const pending: { path: string; depth: number; parent: Chain }[] = [];
    // `linked`: the folder was reached through a link, so its files' paths are not their real ones.
    const walk = (rel: string, real: string, depth: number, chain: Chain, linked = false): void => {
      if ((walked.get(real) ?? 0) >= depth) {
        const first = listedAs.get(real);
        if (linked && first !== undefined && first !== rel) {
          aliases.push([rel, first]);
          // No path below it selected as it is: by an exclusion of all of them, or no glob reaching there.
          if (!selectsBelow(rel)) closed.add(rel);
        }
        return;
      }
      walked.set(real, depth);
      if (!listedAs.has(real)) listedAs.set(real, rel);
      // The folder listed must be the one expected: a name swapped for a link since it was seen
      // as a folder (or since its real path was taken) would list another folder, maybe one
      // outside the repository. Then nothing of it is listed, and the path is read as it is now
      // (a link out is refused, naming it).
      const listed = fs.list(join(opts.base, rel), real);
      if (listed === 'moved') {
        // A file (or a link to one) where a folder was expected, such as a glob's folder
        // (`b/**` with a file b): nothing is below it, and the globs do not name it.
        if (fs.kind(join(opts.base, rel)) !== 'file') unfollowed(rel);
        return;
      }
      if (listed === 'undecodable') {
        // A folder whose every path an exclusion rules out holds nothing to read by its own
        // path, whatever its names; only a path through a link might (listIn decides).
        if (excludedBelow(rel)) undecodableExcluded.add(rel);
        else undecodable.add(rel);
        return;
      }
      if (listed === undefined) return; // unreadable or gone: as before, nothing to list there
      const dirents = listed;
      dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const d of dirents) {
        if (skipped(d.name)) continue;
        const path = join2(rel, d.name);
        if (d.isDirectory()) {
          if (depth > 1) walk(path, join(real, d.name), depth - 1, { real: join(real, d.name), up: chain }, linked);
        } else if (d.isSymbolicLink()) {
          pending.push({ path, depth, parent: chain });
        } else {
          entries.add(path); // files, FIFOs, devices, sockets: the globs decide, the reader refuses
          if (d.isFile()) regular.add(path);
          if (linked) realOf.set(path, join(real, d.name));
        }
      }
    };
    const linked = (path: string, depth: number, parent: Chain): void => {
      const abs = join(opts.base, path);
      const target = fs.kind(abs);
      if (target !== 'folder') {
        entries.add(path);
        if (target === 'file') {
          try {
            realOf.set(path, fs.realpath(abs));
          } catch {
            // gone since: the read says so
          }
        }
        // A dangling link may have been meant as a folder of resources: report it when it could be one.
        if (target === undefined && depth > 1) unfollowed(path);
        return;
      }
      if (depth <= 1) return;
      let real: string;
      try {
        real = fs.realpath(abs);
      } catch {
        return;
      }
      // A link to a folder on its own path, or one above such a folder, is a loop (find -L says
      // "File system loop detected" and does not descend): its paths are the same files again,
      // and folders beside them that the globs never meant (`envs/prod/up -> ..` would make
      // envs/staging's files envs/prod/up/staging/…). The path as walked counts, not only the
      // real one: with envs/prod -> ../shared/prod, shared/prod/up -> ../../envs is one too.
      // (One out of the repository, `evil -> /`, is reported as such first.)
      if (!mayFollow(real)) {
        unfollowed(path);
        return;
      }
      if (onPath(real, parent)) return;
      walk(path, real, depth - 1, { real, up: parent }, true);
    };

    // The scope's own folder may be (or lie under) a link too: the same rule. The folders on its
    // way, each by its real path; a link among them to one before it is a loop (--dir
    // tenants/evil with tenants/evil -> .): refused, as nothing below it means anything new.
    let way: Way;
    try {
      way = wayTo(fs, opts.base, scope.dir);
    } catch {
      // No such folder: nothing to find, unless a dangling link on the way was meant to lead to
      // one (`envs/qa/*.yaml` with envs/qa -> a folder that is gone): reported, as below it.
      const link = unfollowedOnTheWay(fs, opts.base, scope.dir, mayFollow);
      if (link !== undefined) unfollowed(link);
      continue;
    }
    if ('loop' in way) {
      loops.push([way.loop, way.real]);
      continue;
    }
    const { real, chain } = way;
    // A glob that climbs out of the repository is refused before the walk (listWithTypes), unless
    // --follow-external-symlinks; whatever gets here, a folder outside is not walked.
    if (scope.dir !== '' && !mayFollow(real)) {
      unfollowed(scope.dir);
      continue;
    }
    walk(scope.dir, real, scope.depth, chain, real !== join(opts.realRoot, scope.dir));
    for (let i = 0; i < pending.length; i++) linked(pending[i]!.path, pending[i]!.depth, pending[i]!.parent);
  }
  if (quiet.length > 0 && aliases.length > 0) {
    const through = throughLinks({ entries: quiet, aliases, closed }, () => true, (p) => selectsBelow(p) && !loopsOnTheWay(fs, opts.base, `${p}/x`));
    if (through === 'too-many') tooManyPaths = true;
    else for (const q of quiet) if (through.has(q)) unwalked.add(q);
  }
  return { entries: [...entries].sort(), unwalked: [...unwalked].sort(), regular, undecodable: [...undecodable].sort(), realOf, aliases, closed, undecodableExcluded: [...undecodableExcluded].sort(), loops, tooManyPaths };
}

/**
 * The first name on the way to `dir` (relative to `base`) that is a link the walk would not
 * follow: to nothing, or out of the repository (`mayFollow` false; to a folder that lacks the
 * rest of the way, say); undefined when there is none.
 */
function unfollowedOnTheWay(fs: WalkFs, base: string, dir: string, mayFollow: (real: string) => boolean): string | undefined {
  let prefix = '';
  for (const name of dir === '' ? [] : dir.split('/')) {
    const parent = prefix;
    prefix = parent === '' ? name : `${parent}/${name}`;
    if (name === '..' || name === '.') continue;
    const abs = join(base, prefix);
    const kind = fs.kind(abs);
    try {
      if (kind !== undefined && !mayFollow(fs.realpath(abs))) return prefix;
      if (kind === 'folder') continue;
      const listed = fs.list(join(base, parent), fs.realpath(join(base, parent)));
      const entry = Array.isArray(listed) ? listed.find((d) => d.name === name) : undefined;
      return entry?.isSymbolicLink() === true && kind === undefined ? prefix : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * Whether every path below a folder is excluded, for certain: an exclusion `P/**` whose P matches
 * the folder or one above it. Other exclusions may leave some path below it selected.
 */
function wholeFolderExclusion(negatives: readonly string[]): (folder: string) => boolean {
  const prefixes = negatives.filter((g) => g.endsWith('/**') && g.length > 3).map((g) => g.slice(0, -3));
  if (prefixes.length === 0) return () => false;
  const matches = globMatcher(prefixes);
  return (folder) => {
    for (let at = folder; at !== ''; at = at.includes('/') ? at.slice(0, at.lastIndexOf('/')) : '') if (matches(at)) return true;
    return false;
  };
}

/** A path tried through links: `folder`, the one whose link it went through last, after `prev`. */
interface Via {
  readonly path: string;
  readonly folder?: string;
  readonly prev?: Via;
}

function wentThrough(via: Via | undefined, folder: string): boolean {
  for (let v = via; v !== undefined; v = v.prev) if (v.folder === folder) return true;
  return false;
}

/** The folders on a path, the deepest first, each by its real path. */
interface Chain {
  readonly real: string;
  readonly up?: Chain;
}

/** Whether `real` is one of the folders on the path, or above one of them: a link to it loops. */
function onPath(real: string, chain: Chain | undefined): boolean {
  for (let c = chain; c !== undefined; c = c.up) if (isInside(real, c.real)) return true;
  return false;
}

/**
 * Whether the path (relative to `base`) passes a link to a folder on its own way, or above one,
 * as the kernel walks it: a loop, which the walk never follows (`envs/prod/up/staging/x.yaml`
 * with envs/prod -> ../shared/prod and shared/prod/up -> ../../envs). Paths through links that
 * throughLinks makes of the walk's aliases are checked so before one is taken. A path that
 * cannot be resolved is no loop (its read says what it is).
 */
export function loopsOnTheWay(fs: WalkFs, base: string, path: string): boolean {
  const cut = path.lastIndexOf('/');
  try {
    return 'loop' in wayTo(fs, base, cut < 0 ? '' : path.slice(0, cut));
  } catch {
    return false;
  }
}

/** Where a way of folders leads: its end (by real path, with the folders on it), or its first link that loops. */
type Way = { readonly real: string; readonly chain: Chain } | { readonly loop: string; readonly real: string };

/**
 * Goes down `dir` (relative to `base`, names split at "/") as the kernel does, each folder by
 * its real path: the first name that is a link to a folder on its own way, or above one, is a
 * loop (`loop`, the path to it, and `real`, where it leads). Throws when a name on the way
 * cannot be resolved (gone, a dangling link).
 */
function wayTo(fs: WalkFs, base: string, dir: string): Way {
  let real = fs.realpath(base);
  let chain: Chain = { real };
  let prefix = '';
  for (const name of dir === '' ? [] : dir.split('/')) {
    prefix = prefix === '' ? name : `${prefix}/${name}`;
    const next = fs.realpath(join(base, prefix));
    if (name !== '..' && name !== '.' && next !== join(real, name) && onPath(next, chain)) return { loop: prefix, real: next };
    real = next;
    chain = { real, up: chain };
  }
  return { real, chain };
}

/** The most paths tried through links in one listing (throughLinks): links × files has no other bound. */
export const MAX_LINK_PATHS = 250_000;
/** And the most characters of the paths held for one file at a time (long link names): 64 MiB of text. */
const MAX_LINK_PATH_CHARS = 64 * 1024 * 1024;

/**
 * For each entry `wanted` (one the globs leave out by its own path) below a folder that links
 * lead to (found.aliases), its first path through those links, and through links along that
 * path in turn, that `selects`: entry → path. Breadth first, links in their sorted order, each
 * path tried once; 'too-many' past `budget` paths (thousands of links to one folder whose files
 * no path selects).
 */
export function throughLinks(found: Pick<Found, 'entries' | 'aliases'> & { readonly closed?: ReadonlySet<string> }, wanted: (entry: string) => boolean, selects: (path: string) => boolean, budget = MAX_LINK_PATHS, maxChars = MAX_LINK_PATH_CHARS): Map<string, string> | 'too-many' {
  const linksTo = new Map<string, string[]>();
  for (const [link, listedAs] of found.aliases) {
    const links = linksTo.get(listedAs);
    if (links === undefined) linksTo.set(listedAs, [link]);
    else links.push(link);
  }
  for (const links of linksTo.values()) links.sort();
  // Which links can end a selected path: every path through a link starts with it, so the last
  // link of a selected path is not `closed`; a link before it must have a folder whose links
  // lead on (productive) on its way. Found to a fixed point; the others are never tried.
  const closed = found.closed ?? new Set<string>();
  const keys = [...linksTo.keys()].sort();
  const productive = new Set<string>();
  const leads = (link: string): boolean => {
    if (!closed.has(link)) return true;
    for (let at = link; at.includes('/'); ) {
      at = at.slice(0, at.lastIndexOf('/'));
      if (productive.has(at)) return true;
    }
    if (productive.has(link)) return true;
    for (let i = lowerBound(keys, `${link}/`); i < keys.length && keys[i]!.startsWith(`${link}/`); i++) if (productive.has(keys[i]!)) return true;
    return false;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (const [folder, links] of linksTo) {
      if (!productive.has(folder) && links.some(leads)) {
        productive.add(folder);
        changed = true;
      }
    }
  }
  const out = new Map<string, string>();
  let tried = 0;
  for (const entry of found.entries) {
    if (!wanted(entry)) continue;
    // Each path with the folders whose links it went through: a path through one of them again
    // (a/x -> ../b beside b/y -> ../a) is a loop of links, as the kernel would see b/y/x/…
    const queue: Via[] = [{ path: entry }];
    const seen = new Set([entry]);
    let chars = entry.length;
    search: for (let q = 0; q < queue.length; q++) {
      const at = queue[q]!;
      const path = at.path;
      // Each folder above the path that links lead to, the deepest first.
      for (let cut = path.lastIndexOf('/'); cut > 0; cut = path.lastIndexOf('/', cut - 1)) {
        const folder = path.slice(0, cut);
        const links = linksTo.get(folder);
        if (links === undefined || !productive.has(folder) || wentThrough(at, folder)) continue;
        const rest = path.slice(cut);
        for (const link of links) {
          if (!leads(link)) continue;
          const through = link + rest;
          if (seen.has(through)) continue;
          seen.add(through);
          chars += through.length;
          if (++tried > budget || chars > maxChars) return 'too-many';
          if (selects(through)) {
            out.set(entry, through);
            break search;
          }
          queue.push({ path: through, folder, prev: at });
        }
      }
    }
  }
  return out;
}
