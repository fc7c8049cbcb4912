// The agent's file watch: one fs.watch per folder, and no second look at a folder when something
// in it changes. chokidar (used before) kept a watcher per file and, on every event in a folder,
// read the whole folder again and lstat'ed each entry: in a folder of 20,000 files that was about
// 0.3 s of CPU per save (its throttle reads once more after a burst), competing with the pass on
// a small machine, 1.7 s at start and some 110 MB for the per-file watchers.
//
// What it reports is a path that may have changed, not what happened to it: the pass looks at
// every path it is given (lstat, read) and lists everything again for anything that is not a
// plain resource file. The interval pass lists and reads everything whatever the events were, so
// an event missed here is caught there.
//
// - A folder is watched with every folder below it (not dot folders, node_modules, or folders
//   `folder` refuses: links out of the repository). A change to an entry of a watched folder is
//   reported as a 'file' event for its path; a new folder below is watched and the files found in
//   it are reported as 'file' events (a folder with many is reported as one 'folder' event: the
//   pass lists everything again); a watched folder that goes away (or is replaced) is reported as
//   a 'folder' event and no longer watched.
// - A folder reached through a link is watched once, under the path that reaches it first (real
//   folders before links, as the loader lists them).
// - A file that is a root (the config file), and a link to a file, is also watched itself (through
//   the link, again after each event), so that an edit of the file it leads to is seen.
// - A root's parent folder is watched for the root's name, so that a root that is replaced,
//   removed or created is seen (it is then watched again from scratch).
import { lstat, stat } from 'node:fs/promises';
import { readdirSync, realpathSync, statSync, watch, type Dirent, type FSWatcher } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';

export type FolderEvent = 'file' | 'folder';

export interface FolderWatchOptions {
  /** May this folder (below a root) be watched and walked? Dot folders and node_modules never are. */
  readonly folder?: (path: string) => boolean;
  readonly onEvent: (kind: FolderEvent, path: string) => void;
  readonly onError: (err: unknown) => void;
}

/** More files than this in a folder that appears, and it is reported as the folder. */
const MAX_FILES_REPORTED = 256;

interface Tree {
  readonly watcher: FSWatcher;
  /** The real path it was watched as (a folder is watched once, whatever links lead to it). */
  readonly real: string;
  readonly ino: number;
}

interface Parent {
  readonly watcher: FSWatcher;
  /** The root names this folder is watched for. */
  readonly names: Set<string>;
}

function skipped(name: string): boolean {
  return name.startsWith('.') || name === 'node_modules';
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

export class FolderWatcher {
  private readonly roots = new Set<string>();
  /** Watched folders (each with every entry reported), by path. */
  private readonly trees = new Map<string, Tree>();
  /** Real paths of the watched folders → their watched path. */
  private readonly reals = new Map<string, string>();
  /** Folders watched for some of their names only: the parents of the roots. */
  private readonly parents = new Map<string, Parent>();
  /** Files watched themselves: root files and links to files. */
  private readonly files = new Map<string, FSWatcher>();
  private closed = false;

  constructor(private readonly opts: FolderWatchOptions) {}

  /** Watches these paths (folders with what is below them, or files). */
  add(paths: readonly string[]): void {
    for (const p of paths) {
      if (this.roots.has(p)) continue;
      this.roots.add(p);
      this.watchParent(p);
      this.arm(p);
    }
  }

  /** Stops watching these roots (and what was watched below them). */
  unwatch(paths: readonly string[]): void {
    for (const p of paths) {
      if (!this.roots.delete(p)) continue;
      this.drop(p);
      const parent = this.parents.get(dirname(p));
      parent?.names.delete(basename(p));
      if (parent !== undefined && parent.names.size === 0) {
        parent.watcher.close();
        this.parents.delete(dirname(p));
      }
    }
  }

  close(): void {
    this.closed = true;
    for (const t of this.trees.values()) t.watcher.close();
    for (const p of this.parents.values()) p.watcher.close();
    for (const f of this.files.values()) f.close();
    this.trees.clear();
    this.reals.clear();
    this.parents.clear();
    this.files.clear();
    this.roots.clear();
  }

  /** How many fs.watch handles are open (tests). */
  get handles(): number {
    return this.trees.size + this.parents.size + this.files.size;
  }

  // ------------------------------------------------------------ roots

  /** A root as it is now: a folder is watched with what is below it, a file itself. */
  private arm(root: string): void {
    let st;
    try { st = statSync(root); } catch { st = undefined; }
    if (st?.isDirectory() === true) this.watchTree(root, []);
    else if (st !== undefined) this.watchFile(root);
  }

  private watchParent(root: string): void {
    const dir = dirname(root);
    if (dir === root) return;
    const known = this.parents.get(dir);
    if (known !== undefined) { known.names.add(basename(root)); return; }
    const names = new Set([basename(root)]);
    // Quiet: a parent the agent may not watch (a mount's) only means a replaced root is seen later.
    const watcher = this.open(dir, (name) => {
      if (name === undefined) { for (const n of names) this.rootChanged(join(dir, n)); return; }
      if (names.has(name)) this.rootChanged(join(dir, name));
    }, true);
    if (watcher !== undefined) this.parents.set(dir, { watcher, names });
  }

  /** A root was created, replaced or removed: watched again from scratch. */
  private rootChanged(root: string): void {
    if (!this.roots.has(root)) return;
    const wasFolder = this.trees.has(root);
    this.drop(root);
    this.arm(root);
    this.opts.onEvent(wasFolder || this.trees.has(root) ? 'folder' : 'file', root);
  }

  // ------------------------------------------------------------ folders

  /**
   * Watches a folder and every folder below it; the files found are pushed to `found` (for a
   * folder that appeared). Links to folders are followed after the real folders below, each
   * real folder once.
   */
  private watchTree(top: string, found: string[]): void {
    const links: string[] = [];
    const walk = (dir: string): void => {
      if (this.trees.has(dir) || this.closed) return;
      let real: string;
      let ino: number;
      try {
        real = realpathSync.native(dir);
        ino = statSync(dir).ino;
      } catch {
        return;
      }
      if (this.reals.has(real)) return;
      // Watched before it is read: what is created meanwhile is seen one way or the other.
      const watcher = this.open(dir, (name, event) => this.changed(dir, name, event));
      if (watcher === undefined) return;
      this.trees.set(dir, { watcher, real, ino });
      this.reals.set(real, dir);
      let entries: Dirent[];
      try {
        entries = readdirSync(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        if (skipped(e.name)) continue;
        const path = join(dir, e.name);
        if (e.isDirectory()) {
          if (this.mayWatch(path)) walk(path);
        } else if (e.isSymbolicLink()) {
          links.push(path);
        } else {
          found.push(path);
        }
      }
    };
    walk(top);
    for (let i = 0; i < links.length; i++) {
      const link = links[i]!;
      let st;
      try { st = statSync(link); } catch { st = undefined; }
      if (st?.isDirectory() === true) {
        if (this.mayWatch(link)) walk(link);
      } else {
        if (st !== undefined) this.watchFile(link);
        found.push(link);
      }
    }
  }

  private mayWatch(path: string): boolean {
    return this.opts.folder?.(path) ?? true;
  }

  /** Something happened to `name` in the watched folder `dir`. */
  private changed(dir: string, name: string | undefined, event: string): void {
    if (this.closed || !this.trees.has(dir)) return;
    if (name === undefined) { this.opts.onEvent('folder', dir); return; }
    if (skipped(name)) return;
    const path = join(dir, name);
    const tree = this.trees.get(path);
    if (tree !== undefined) {
      // A watched folder: still the same folder?
      void stat(path).then((st) => st, () => undefined).then((st) => {
        if (this.closed || this.trees.get(path) !== tree) return;
        if (st?.isDirectory() === true && st.ino === tree.ino) return;
        this.drop(path);
        if (st?.isDirectory() === true && this.mayWatch(path)) this.watchTree(path, []);
        this.opts.onEvent('folder', path);
      });
      return;
    }
    if (this.files.has(path)) {
      // A link to a file, replaced or removed: watched again as it is now.
      this.files.get(path)!.close();
      this.files.delete(path);
      void stat(path).then((st) => { if (!this.closed && st.isFile()) this.watchFile(path); }, () => undefined);
      this.opts.onEvent('file', path);
      return;
    }
    if (event === 'change') { this.opts.onEvent('file', path); return; }
    // Created, removed or renamed: a new folder is watched, and what it holds reported.
    void lstat(path).then((st) => st, () => undefined).then(async (st) => {
      if (this.closed) return;
      let target = st;
      if (st?.isSymbolicLink() === true) target = await stat(path).catch(() => undefined);
      if (this.closed || !this.trees.has(dir)) return;
      if (target?.isDirectory() !== true) {
        if (st?.isSymbolicLink() === true && target !== undefined && !this.files.has(path)) this.watchFile(path);
        this.opts.onEvent('file', path);
        return;
      }
      if (this.trees.has(path) || !this.mayWatch(path)) return;
      const found: string[] = [];
      this.watchTree(path, found);
      if (found.length > MAX_FILES_REPORTED) this.opts.onEvent('folder', path);
      else for (const f of found) this.opts.onEvent('file', f);
    });
  }

  /** Stops watching `path` and everything watched below it. */
  private drop(path: string): void {
    const below = path + sep;
    for (const [p, t] of this.trees) {
      if (p !== path && !p.startsWith(below)) continue;
      t.watcher.close();
      this.trees.delete(p);
      if (this.reals.get(t.real) === p) this.reals.delete(t.real);
    }
    for (const [p, w] of this.files) {
      if (p !== path && !p.startsWith(below)) continue;
      w.close();
      this.files.delete(p);
    }
  }

  // ------------------------------------------------------------ files

  /** A file watched itself (through a link, what it leads to): any event reports it, and it is watched again as it is then. */
  private watchFile(path: string): void {
    if (this.files.has(path)) return;
    const watcher: FSWatcher | undefined = this.open(path, () => {
      if (watcher === undefined || this.files.get(path) !== watcher) return;
      watcher.close();
      this.files.delete(path);
      // Replaced by rename (editors, a ConfigMap's link swap): the new file is another inode.
      void stat(path).then((st) => { if (!this.closed && st.isFile()) this.watchFile(path); }, () => undefined);
      this.opts.onEvent('file', path);
    });
    if (watcher !== undefined) this.files.set(path, watcher);
  }

  /** fs.watch, or undefined (a path gone meanwhile is no error; anything else is told). */
  private open(path: string, listener: (name: string | undefined, event: string) => void, quiet = false): FSWatcher | undefined {
    if (this.closed) return undefined;
    let watcher: FSWatcher;
    try {
      watcher = watch(path, { persistent: true, encoding: 'utf8' }, (event, name) => listener(name ?? undefined, event));
    } catch (err) {
      if (!quiet && !isMissing(err)) this.opts.onError(err);
      return undefined;
    }
    watcher.on('error', (err) => {
      // A watched folder removed (EPERM on Windows), or the watch lost: report the path and let
      // the pass look; it is watched again when its parent sees it come back.
      if (this.closed) return;
      if (!quiet && !isMissing(err) && (err as NodeJS.ErrnoException).code !== 'EPERM') this.opts.onError(err);
      for (const [dir, p] of this.parents) if (p.watcher === watcher) this.parents.delete(dir);
      if (this.trees.get(path)?.watcher === watcher) { this.drop(path); this.opts.onEvent('folder', path); }
      else if (this.files.get(path) === watcher) { this.files.delete(path); this.opts.onEvent('file', path); }
      watcher.close();
    });
    return watcher;
  }
}
