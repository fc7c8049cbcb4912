// What the agent watches for a config: chokidar 4 takes paths, not globs, so each resource
// glob becomes the folder before its first wildcard, and a filter decides which events matter.
import { realpathSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import type { ResolvedConfig } from '../model/index.js';
import { resourceScope, selectResourcePaths } from '../load/index.js';
import { scopesOf } from '../load/find.js';
import { isInside } from '../load/read-file.js';

export interface WatchTargets {
  /** Absolute paths: the config file (when there is one) and the resource roots, nested ones folded. */
  readonly paths: readonly string[];
  /** Absolute path → is it a desired-state file of this config? */
  readonly filter: (path: string) => boolean;
  /**
   * Absolute path of a folder → may it be watched? Not when it leads out of the repository
   * through a link (unless --follow-external-symlinks): a link to / or /usr would otherwise
   * have the agent watch the whole tree before its first pass.
   */
  readonly folder?: (path: string) => boolean;
}

function real(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

/**
 * The folder rule of the loader (src/load/find.ts) for the watcher. The repository's real path
 * is taken at each call, so a git-sync swap to a new worktree is followed.
 */
function insideRepository(repository: string, followExternal: boolean): (path: string) => boolean {
  if (followExternal) return () => true;
  return (path) => {
    const root = real(repository);
    const target = real(path);
    return root === undefined || target === undefined || isInside(root, target);
  };
}

/** What the list of resource files depends on in a config: same key, same files and same watch targets. */
export function resourcesKey(config: ResolvedConfig): string {
  return JSON.stringify([config.dir, config.file ?? '', config.resources ?? [], config.reading ?? {}]);
}

export function watchTargets(config: ResolvedConfig): WatchTargets {
  // The folders the loader walks (src/load/find.ts): each glob's folder before its first
  // wildcard (a literal file's folder, so that it may be created or replaced), within --dir.
  const { base, patterns, under } = resourceScope(config);
  const roots = scopesOf(patterns, under).map((s) => resolve(base, s.dir));
  // The config file stays a path of its own even inside a root: it is not a resource, so only
  // being a watched path makes its events count.
  const paths = [...(config.file ? [config.file] : []), ...fold(roots)];
  // chokidar asks for every file each time it re-reads a folder (on every save in it), and each
  // call compiles the globs: remember the answers (the config, hence the globs, is fixed here).
  const known = new Map<string, boolean>();
  const filter = (path: string): boolean => {
    let is = known.get(path);
    if (is === undefined) {
      if (known.size >= 100_000) known.clear();
      is = selectResourcePaths([relative(config.dir, path)], config).length === 1;
      known.set(path, is);
    }
    return is;
  };
  return { paths, filter, folder: insideRepository(base, config.reading?.followExternalSymlinks === true) };
}

/** Before the first config could be read: watch where it would be, and every YAML file. */
export function fallbackTargets(cwd: string, configFlag?: string, dirFlag?: string): WatchTargets {
  const file = resolve(cwd, configFlag ?? 'dus-sync.yaml');
  const dir = dirFlag !== undefined ? resolve(cwd, dirFlag) : dirname(file);
  return { paths: [file, dir], filter: (p) => /\.ya?ml$/i.test(p), folder: insideRepository(dirname(file), false) };
}

/** Folders sorted, without duplicates or folders inside another one of the list. */
function fold(folders: readonly string[]): string[] {
  const unique = [...new Set(folders)].sort();
  return unique.filter((p) => !unique.some((q) => q !== p && p.startsWith(q + sep)));
}
