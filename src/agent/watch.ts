// The watch loop: one pass at start, a debounced pass after file changes, a jittered pass every
// interval (drift healing), capped exponential backoff after API failures. Single flight: a
// trigger that arrives during a pass is coalesced into exactly one more pass. The loop never
// exits on its own; only stop() ends it.
import { setMaxListeners } from 'node:events';
import { lstatSync, realpathSync, statSync, type Stats } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { basename, dirname, resolve, sep } from 'node:path';
import { watch as chokidarWatch, type FSWatcher } from 'chokidar';
import type { Logger } from '../model/index.js';
import { redact } from '../redact.js';
import { isInside } from '../load/read-file.js';
import { throughLinks } from '../load/find.js';
import {
  isHealthy, systemTimers,
  type ObjectCounts, type PassOutcome, type PassResult, type PassTrigger, type ReconcilePass, type Timers, type TriggerReason,
} from './types.js';

export interface BackoffOptions {
  readonly baseMs: number;
  readonly maxMs: number;
}

export interface PassRecorder {
  recordPass(result: PassResult, durationMs: number, now: number): void;
}

export interface WatcherOptions {
  /** The config file and the roots of the resource globs (chokidar 4 watches paths, not globs). */
  readonly paths: readonly string[];
  /** Which changed files matter (e.g. picomatch of the resource globs). Default: *.yaml / *.yml. */
  readonly filter?: (path: string) => boolean;
  /** Which folders may be watched (not those a link leads out of the repository). Default: all. */
  readonly folder?: (path: string) => boolean;
  readonly pass: ReconcilePass;
  readonly intervalMs: number;
  /** Fraction of the interval added or taken at random, so that agents do not march in step. */
  readonly jitter?: number;
  readonly debounceMs?: number;
  /** After a failed pass (API error, partial failure). Default 1 s doubling up to min(60 s, interval). */
  readonly backoff?: BackoffOptions;
  readonly timers?: Timers;
  readonly random?: () => number;
  readonly log: Logger;
  readonly metrics?: PassRecorder;
  /** Aborting it stops the loop at once (no grace). */
  readonly signal?: AbortSignal;
  /** false runs the loop without chokidar (tests, or a caller that feeds trigger() itself). */
  readonly watchFiles?: boolean;
  readonly onPass?: (result: PassResult, trigger: PassTrigger, durationMs: number) => void;
}

export interface WatchStatus {
  readonly passes: number;
  readonly running: boolean;
  readonly lastResult?: PassResult;
  readonly lastPassAt?: number;
  readonly lastSuccessAt?: number;
  readonly consecutiveFailures: number;
}

export type StopOutcome = 'idle' | 'finished' | 'aborted';

const DEFAULT_DEBOUNCE_MS = 300;
/** How often the roots are checked for a swap no watcher sees (see scheduleRootCheck). */
const ROOT_POLL_MS = 2000;
/** A folder watched afresh is listed again this long after (see listAgain). */
const RELIST_AFTER_MS = 1000;
/** Links kept per folder met again under them: a folder with a thousand links to it is not a layout, and each event would try them all. */
const MAX_ALIASES = 64;
/** Paths tried through such links for one event (throughLink). */
const MAX_EVENT_PATHS = 512;
const DEFAULT_JITTER = 0.1;
// Outcomes that are worth retrying soon: the API (or the network) may recover by itself.
const RETRYABLE: ReadonlySet<PassOutcome> = new Set<PassOutcome>(['api-error', 'state-error', 'locked', 'partial-failure']);

interface Pending {
  readonly reasons: Set<TriggerReason>;
  readonly files: Set<string>;
}

export class Watcher {
  private readonly timers: Timers;
  private readonly random: () => number;
  private roots: readonly string[];
  private rootSet: ReadonlySet<string>;
  private filter: (path: string) => boolean;
  private folder: (path: string) => boolean;
  private currentIntervalMs: number;
  private readonly debounceMs: number;
  private fsw: FSWatcher | undefined;
  private stopped = false;
  private pending: Pending | undefined;
  private running: Promise<void> | undefined;
  private current: AbortController | undefined;
  private nextTimer: unknown;
  private debounceTimer: unknown;
  private debounceFiles = new Set<string>();
  /** Paths chokidar met as symbolic links: a linked resource keeps a watcher of its own (its target may change elsewhere). */
  private readonly links = new Set<string>();
  /** Where each root pointed when it was watched (git-sync swaps a symlink to a new worktree). */
  private realRoots = new Map<string, string | undefined>();
  /**
   * Each real folder watched, by the path it is watched under: a folder met again under another
   * path (a link to it, or a link that loops: tenants/acme/up -> ..) is not watched again, as
   * the loader reads each real folder once. chokidar follows links without end otherwise (the
   * agent's first pass never came, and its memory grew past a gigabyte). Made afresh with each
   * chokidar watcher.
   */
  private realFolders = new Map<string, string>();
  /**
   * The folders met again under another path, each with those paths (links to it): a file of
   * the folder is also the file under each link, which the globs may select where they leave
   * out its own path (`["**\/*.yaml", "!shared/**"]`, `envs/prod -> ../shared/prod`), as the
   * loader reads it (src/load/find.ts, throughLinks). Made afresh with realFolders.
   */
  private aliases = new Map<string, string[]>();
  private rootCheck: unknown;
  private rewatch = new Set<string>();
  private readonly relistTimers = new Set<unknown>();
  private rearming: Promise<void> = Promise.resolve();
  private rewatchTimer: unknown;
  private rootCheckDue = 0;
  private readonly rootsTouched = new Set<string>();
  private debounceSince: number | undefined;
  private idleWaiters: (() => void)[] = [];
  private stopWaiters: (() => void)[] = [];
  private passes = 0;
  private failures = 0;
  private lastResult: PassResult | undefined;
  private lastPassAt: number | undefined;
  private lastSuccessAt: number | undefined;

  constructor(private readonly opts: WatcherOptions) {
    this.timers = opts.timers ?? systemTimers;
    this.random = opts.random ?? Math.random;
    this.roots = opts.paths.map((p) => resolve(p));
    this.rootSet = new Set(this.roots);
    this.filter = opts.filter ?? ((p) => /\.ya?ml$/i.test(p));
    this.folder = opts.folder ?? (() => true);
    this.currentIntervalMs = opts.intervalMs;
    this.debounceMs = opts.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  }

  /** Starts watching, then runs the first pass. Resolves once the watch is armed. */
  async start(): Promise<void> {
    if (this.opts.signal?.aborted) { this.stopped = true; return; }
    this.opts.signal?.addEventListener('abort', () => { void this.stop(0); }, { once: true });
    // Arm the watch before the first pass so that no edit made during it is missed.
    if (this.opts.watchFiles !== false) {
      await this.watchFiles();
      this.scheduleRootCheck(ROOT_POLL_MS);
    }
    this.trigger('start');
  }

  /** Asks for a pass. During a pass it schedules exactly one more, whatever the number of calls. */
  trigger(reason: TriggerReason, files: readonly string[] = []): void {
    if (this.stopped) return;
    this.pending ??= { reasons: new Set(), files: new Set() };
    this.pending.reasons.add(reason);
    for (const f of files) this.pending.files.add(f);
    this.kick();
  }

  /** The drift interval now in force (the config may change it). */
  get intervalMs(): number {
    return this.currentIntervalMs;
  }

  /**
   * Follows a changed config (called by the pass with each config it resolves): new roots are
   * watched and dropped ones forgotten; a new interval applies from the next scheduling.
   */
  reconfigure(next: { readonly paths?: readonly string[]; readonly filter?: (path: string) => boolean; readonly folder?: (path: string) => boolean; readonly intervalMs?: number }): void {
    if (next.filter) this.filter = next.filter;
    if (next.folder) this.folder = next.folder;
    if (next.intervalMs !== undefined && next.intervalMs > 0) this.currentIntervalMs = next.intervalMs;
    if (!next.paths) return;
    const roots = next.paths.map((p) => resolve(p));
    const added = roots.filter((r) => !this.rootSet.has(r));
    const removed = this.roots.filter((r) => !roots.includes(r));
    if (added.length === 0 && removed.length === 0) return;
    this.roots = roots;
    this.rootSet = new Set(roots);
    if (!this.fsw) return;
    if (removed.length > 0) this.fsw.unwatch(removed);
    if (added.length > 0) this.fsw.add(added);
    void rootIdentities(roots).then((m) => { this.realRoots = m; });
    this.opts.log.debug('watching new paths', { paths: roots });
  }

  status(): WatchStatus {
    return {
      passes: this.passes,
      running: this.running !== undefined,
      lastResult: this.lastResult,
      lastPassAt: this.lastPassAt,
      lastSuccessAt: this.lastSuccessAt,
      consecutiveFailures: this.failures,
    };
  }

  /** Resolves when no pass runs and none is pending (for tests and orderly shutdowns). */
  idle(): Promise<void> {
    if (!this.running && !this.pending) return Promise.resolve();
    return new Promise((done) => this.idleWaiters.push(done));
  }

  /**
   * Stops watching and the timers, lets the running pass finish within `graceMs`, then aborts
   * its signal (and waits a little more for it to unwind). Never rejects.
   */
  async stop(graceMs = 20_000): Promise<StopOutcome> {
    if (!this.stopped) {
      this.stopped = true;
      this.pending = undefined;
      this.clearNext();
      this.clearDebounce();
      if (this.rootCheck !== undefined) this.timers.clearTimeout(this.rootCheck);
      this.rootCheck = undefined;
      if (this.rewatchTimer !== undefined) this.timers.clearTimeout(this.rewatchTimer);
      this.rewatchTimer = undefined;
      for (const t of this.relistTimers) this.timers.clearTimeout(t);
      this.relistTimers.clear();
      for (const w of this.stopWaiters.splice(0)) w();
      const fsw = this.fsw;
      this.fsw = undefined;
      await fsw?.close().catch(() => undefined);
    }
    const running = this.running;
    if (!running) { this.settleIdle(); return 'idle'; }
    if (await this.within(running, graceMs)) return 'finished';
    this.opts.log.warn(`the running pass did not finish within the grace period of ${graceMs} ms; aborting it`);
    this.current?.abort(new Error('dus-sync is stopping'));
    // A pass that ignores its signal must not hold the process forever.
    await this.within(running, Math.min(Math.max(graceMs, 100), 2000));
    return 'aborted';
  }

  // ------------------------------------------------------------ file events

  private async watchFiles(): Promise<void> {
    this.realFolders = new Map();
    this.aliases = new Map();
    const fsw = chokidarWatch([...this.roots], {
      ignoreInitial: true,
      // chokidar's atomic mode folds an editor's unlink+add (rename-over saves) into a change.
      atomic: true,
      ignored: (path, stats) => this.ignored(path, stats),
    });
    this.fsw = fsw;
    fsw.on('all', (event, path) => this.onFsEvent(event, path));
    fsw.on('raw', (event: string, name: unknown, details: unknown) => this.onFolderEvent(event, name, details));
    fsw.on('error', (err) => this.opts.log.warn(`file watch error: ${redact(errorMessage(err))}`));
    // stop() during start-up closes the watcher, which may then never say 'ready'.
    await new Promise<void>((ready) => {
      const done = (): void => { this.stopWaiters = this.stopWaiters.filter((w) => w !== done); ready(); };
      fsw.once('ready', done);
      this.stopWaiters.push(done);
    });
    this.realRoots = await rootIdentities(this.roots);
  }

  /**
   * A root that now leads elsewhere is watched again: a root reached through a symlink swapped
   * to a new worktree (git-sync), or a root folder replaced (moved over, removed and made again).
   * fs.watch follows the folder it was given, not its path: chokidar would keep watching the
   * old one, deaf to everything after. Returns the roots watched again. A root that is gone is
   * looked for again every half second for a minute (it is often made again at once).
   */
  private async followRoots(): Promise<string[]> {
    const fsw = this.fsw;
    if (!fsw) return [];
    const now = await rootIdentities(this.roots);
    if (this.fsw !== fsw) return [];
    // A root that is gone stays as it was known: it is watched again when it comes back.
    const moved = this.roots.filter((r) => now.get(r) !== undefined && (now.get(r) !== this.realRoots.get(r) || this.rootsTouched.has(r)));
    for (const r of moved) this.rootsTouched.delete(r);
    if (moved.length === 0) return [];
    for (const r of moved) this.realRoots.set(r, now.get(r));
    this.opts.log.debug('a watched path now leads elsewhere; watching it again', { paths: moved });
    return moved;
  }

  /**
   * Watches everything afresh, then lists `paths` again. Not chokidar's unwatch and add of the
   * path: unwatch leaves the watchers of the folders below it, and add then reuses them (chokidar
   * shares one fs.watch per path), so the folders of the new tree would be watched through the
   * old tree's watchers, deaf. A replacement is rare (a git-sync swap, a folder moved over), and
   * a new watcher costs one walk of the folders.
   */
  private rearm(paths: readonly string[]): Promise<void> {
    const run = async (): Promise<void> => {
      const old = this.fsw;
      if (!old || this.stopped) return;
      this.fsw = undefined;
      this.links.clear();
      await old.close().catch(() => undefined);
      if (this.stopped) return;
      await this.watchFiles();
      for (const p of paths) this.listAgain(p);
    };
    this.rearming = this.rearming.then(run, run)
      .catch((err: unknown) => this.opts.log.warn(`file watch: ${redact(errorMessage(err))}`));
    return this.rearming;
  }

  /** After an event of a root's own watcher: is that root still the folder watched? */
  /**
   * Checks the roots `ms` from now (sooner than a check already due), then every
   * ROOT_POLL_MS: a swap in a folder above a root (the repository moved over, a link to it
   * swapped while the old target is kept) gives no event to any watcher, and a root that went
   * away may come back at any time. A few stats of the roots; no walk.
   */
  private scheduleRootCheck(ms = 100): void {
    if (this.stopped) return;
    const due = this.timers.now() + ms;
    if (this.rootCheck !== undefined) {
      if (this.rootCheckDue <= due) return;
      this.timers.clearTimeout(this.rootCheck);
    }
    this.rootCheckDue = due;
    this.rootCheck = this.timers.setTimeout(() => {
      this.rootCheck = undefined;
      // A root watched again is listed again: the files of the new folder were never seen.
      void this.followRoots().then((moved) => (moved.length > 0 ? this.rearm(moved) : undefined))
        .catch((err: unknown) => this.opts.log.warn(`file watch: ${redact(errorMessage(err))}`))
        .finally(() => this.scheduleRootCheck(ROOT_POLL_MS));
    }, ms);
  }

  /**
   * What chokidar leaves alone. A regular file gets no watcher of its own: the watcher of its
   * folder reports its changes by name ('raw' events, onFolderEvent). chokidar 4 would put one
   * fs.watch on every file, some 4 KB each (80 MB for a folder of 20,000 files). The roots (the
   * config file) and links to resources keep theirs: a link's target may change in a folder
   * that is not watched. Folders a link leads out of the repository through are not watched.
   */
  private ignored(path: string, stats: Stats | undefined): boolean {
    if (this.insideDotFolder(path)) return true;
    if (stats === undefined) return false;
    if (this.rootSet.has(path)) { if (stats.isDirectory()) this.claim(path); return false; }
    // Entries of a folder come lstat-ed (a link is a link); a link chokidar then follows comes
    // stat-ed as what it leads to, under the link's path.
    if (stats.isSymbolicLink()) { this.links.add(path); return false; }
    if (stats.isFile()) return !this.links.has(path) || !this.filter(path);
    if (stats.isDirectory()) return !this.folder(path) || !this.claim(path);
    return false;
  }

  /** Whether the folder at `path` is watched under this path: no other path watches its real folder. */
  private claim(path: string): boolean {
    let real: string;
    try { real = realpathSync(path); } catch { return true; }
    // A link to a folder on its own path (or above one) is a loop, which the loader does not
    // follow: each folder above it, by its real path (only for a folder reached through a link).
    try {
      const parent = realpathSync(dirname(path));
      if (real !== resolve(parent, basename(path))) {
        for (let up = dirname(path); ; up = dirname(up)) {
          if (isInside(real, realpathSync(up))) return false;
          if (dirname(up) === up) break;
        }
      }
    } catch { /* gone: as before */ }
    const by = this.realFolders.get(real);
    if (by !== undefined && by !== path) {
      // (Not a link to a folder above it, a loop: the loader reads nothing through it either.)
      const links = this.aliases.get(by) ?? [];
      if (!path.startsWith(by + sep) && !links.includes(path) && links.length < MAX_ALIASES) this.aliases.set(by, [...links, path]);
      return false;
    }
    this.realFolders.set(real, path);
    return true;
  }

  /** An event of a watched folder's own fs.watch: `name` is the entry of the folder that changed. */
  private onFolderEvent(event: string, name: unknown, details: unknown): void {
    const folder = (details as { watchedPath?: unknown } | undefined)?.watchedPath;
    if (typeof folder === 'string' && this.rootSet.has(resolve(folder))) {
      // The root itself moved or removed (its own name): watched afresh once it is there again,
      // even as the same folder (renamed away and back), which chokidar does not follow.
      if (name === basename(folder)) this.rootsTouched.add(resolve(folder));
      this.scheduleRootCheck();
    }
    if (typeof name !== 'string' || name === '' || typeof folder !== 'string') return;
    const path = resolve(folder, name);
    // A link to a folder swapped to another target (ln -s + mv -T): chokidar keeps watching the
    // old target. It is watched again, and the pass lists everything again.
    if (this.links.has(path) && !this.filter(path)) { void this.rearm([path]); return; }
    // An entry made, removed or renamed that is not a resource may be a folder replaced under the
    // same name (rm -rf x; mkdir x, or mv x old; mv new x): chokidar keeps the old one's watchers.
    if (event === 'rename' && !this.filter(path)) this.scheduleRewatch(path);
    // chokidar reports the paths it watches itself ('all'): the roots and linked resources.
    if (this.rootSet.has(path) || this.links.has(path) || this.insideDotFolder(path)) return;
    const resource = this.filter(path) ? path : this.throughLink(path);
    if (resource === undefined) return;
    // A file's own watcher names the file: that is not an entry of a folder.
    if (name === basename(folder) && !isFolder(folder)) return;
    this.onFsEvent('change', resource);
  }

  /**
   * `path` as a resource through links to folders above it that are watched by other paths, if
   * the globs select it so: the loader's search (src/load/find.ts, throughLinks), on absolute
   * paths, a few hundred paths at most for one event.
   */
  private throughLink(path: string): string | undefined {
    const aliases = [...this.aliases].flatMap(([folder, links]) => links.map((link) => [link, folder] as const));
    const found = throughLinks({ entries: [path], aliases }, () => true, this.filter, MAX_EVENT_PATHS);
    return found === 'too-many' ? undefined : found.get(path);
  }

  private scheduleRewatch(path: string): void {
    if (this.stopped || this.insideDotFolder(path)) return;
    this.rewatch.add(path);
    if (this.rewatchTimer !== undefined) return;
    this.rewatchTimer = this.timers.setTimeout(() => {
      this.rewatchTimer = undefined;
      const paths = [...this.rewatch];
      this.rewatch.clear();
      // Gone: chokidar says unlinkDir. A folder there now was made, or replaced or renamed back
      // under its name, which chokidar does not always follow (its watchers of the folders below
      // are lost or stale): everything is watched afresh. A new folder costs the same walk.
      const replaced = paths.filter((p) => {
        let st: Stats | undefined;
        try { st = lstatSync(p); } catch { st = undefined; }
        // A new link to a folder watched already (by another path) gets no watcher of its own, so
        // chokidar says nothing of it: the pass lists everything again, its files among them.
        if (st?.isSymbolicLink() === true && leadsToFolder(p) && this.folder(p)) this.onFsEvent('addDir', p);
        return st?.isDirectory() === true && this.folder(p);
      });
      if (replaced.length > 0) void this.rearm(replaced);
    }, 100);
  }

  /**
   * A folder watched afresh is listed again at once, and once more a second later: chokidar
   * puts its watchers on the new folder only after reading it, and an edit made meanwhile would
   * otherwise wait for the interval pass.
   */
  private listAgain(path: string): void {
    this.onFsEvent('addDir', path);
    const again = this.timers.setTimeout(() => {
      this.relistTimers.delete(again);
      this.onFsEvent('addDir', path);
    }, RELIST_AFTER_MS);
    this.relistTimers.add(again);
  }

  private onFsEvent(event: string, path: string): void {
    if (this.stopped || !this.relevant(event, path)) return;
    this.opts.log.debug(`file ${event}: ${path}`);
    this.debounceFiles.add(path);
    const now = this.timers.now();
    this.debounceSince ??= now;
    this.clearDebounce(false);
    // A steady stream of writes must not postpone the pass forever.
    const maxWait = this.debounceMs * 10;
    const wait = Math.max(0, Math.min(this.debounceMs, this.debounceSince + maxWait - now));
    this.debounceTimer = this.timers.setTimeout(() => this.flushDebounce(), wait);
  }

  private relevant(event: string, path: string): boolean {
    switch (event) {
      case 'add':
      case 'change':
      case 'unlink':
        return this.rootSet.has(path) || this.filter(path);
      case 'addDir':
      case 'unlinkDir':
        // A folder that came or went may hold resources: chokidar does not report its files
        // (they have no watcher of their own), so the pass lists everything again.
        return true;
      default:
        return false;
    }
  }

  /** Dot folders (.git, .dus-sync with the journal) and node_modules below a root are never resources. */
  private insideDotFolder(path: string): boolean {
    for (const root of this.roots) {
      if (path === root) return false;
      if (path.startsWith(root + sep)) {
        return path.slice(root.length + 1).split(sep).some((s) => s.startsWith('.') || s === 'node_modules');
      }
    }
    return false;
  }

  private flushDebounce(): void {
    const files = [...this.debounceFiles].sort();
    this.clearDebounce();
    if (files.length > 0) this.trigger('file-change', files);
    void this.followRoots().then((moved) => (moved.length > 0 ? this.rearm(moved) : undefined))
      .catch((err: unknown) => this.opts.log.warn(`file watch: ${redact(errorMessage(err))}`));
  }

  private clearDebounce(reset = true): void {
    if (this.debounceTimer !== undefined) this.timers.clearTimeout(this.debounceTimer);
    this.debounceTimer = undefined;
    if (reset) { this.debounceFiles = new Set(); this.debounceSince = undefined; }
  }

  // ------------------------------------------------------------ passes

  private kick(): void {
    if (this.running || !this.pending || this.stopped) return;
    const trigger = takeTrigger(this.pending);
    this.pending = undefined;
    this.clearNext();
    const controller = new AbortController();
    // Every request of the pass listens on this signal (hundreds at once in a large tenant):
    // that is by design, so Node's leak warning would only be noise on standard error.
    setMaxListeners(0, controller.signal);
    this.current = controller;
    this.running = this.runOne(trigger, controller.signal).finally(() => {
      this.running = undefined;
      this.current = undefined;
      this.kick();
      if (!this.running) this.settleIdle();
    });
  }

  private async runOne(trigger: PassTrigger, signal: AbortSignal): Promise<void> {
    const started = this.timers.now();
    let result: PassResult;
    try {
      result = await this.opts.pass(trigger, signal);
    } catch (err) {
      // A pass is meant to report, not throw; if it does, the agent still lives on.
      result = thrownResult(err, this.lastResult?.configValid ?? true);
    }
    const now = this.timers.now();
    const durationMs = now - started;
    if (this.stopped && signal.aborted && !isHealthy(result.result)) {
      // Cut short by the stop (SIGTERM while it waited out a settle window, say): not an API
      // failure, and not counted as one in the metrics of a process that is going away.
      this.opts.log.info(`the ${trigger.reason} pass was stopped before it finished (${result.message})`);
      return;
    }
    this.passes += 1;
    this.lastResult = result;
    this.lastPassAt = now;
    if (isHealthy(result.result)) this.lastSuccessAt = now;
    this.failures = RETRYABLE.has(result.result) ? this.failures + 1 : 0;
    try { this.opts.metrics?.recordPass(result, durationMs, now); } catch (err) { this.opts.log.warn(`metrics: ${errorMessage(err)}`); }
    const delay = this.stopped ? undefined : this.scheduleNext();
    this.logSummary(trigger, result, durationMs, delay);
    this.opts.onPass?.(result, trigger, durationMs);
  }

  private get backoff(): BackoffOptions {
    return this.opts.backoff ?? { baseMs: 1000, maxMs: Math.min(60_000, Math.max(1000, this.currentIntervalMs)) };
  }

  /** Arms the retry (after a failure) or the jittered interval; returns the delay. */
  private scheduleNext(): { reason: 'retry' | 'interval'; ms: number } {
    const interval = jittered(this.currentIntervalMs, this.opts.jitter ?? DEFAULT_JITTER, this.random);
    // Appends that waited for their file to be quiet (--append-quiet) are planned again then.
    const again = this.lastResult?.againInMs;
    const next = this.failures > 0
      ? { reason: 'retry' as const, ms: Math.min(this.backoff.maxMs, this.backoff.baseMs * 2 ** (this.failures - 1)) }
      : again !== undefined && again < interval ? { reason: 'retry' as const, ms: again } : { reason: 'interval' as const, ms: interval };
    this.clearNext();
    this.nextTimer = this.timers.setTimeout(() => { this.nextTimer = undefined; this.trigger(next.reason); }, next.ms);
    return next;
  }

  private clearNext(): void {
    if (this.nextTimer !== undefined) this.timers.clearTimeout(this.nextTimer);
    this.nextTimer = undefined;
  }

  private logSummary(trigger: PassTrigger, r: PassResult, durationMs: number, next: { reason: string; ms: number } | undefined): void {
    // The one line per pass: outcome, counts, duration and the revision it reconciled.
    const fields: Record<string, unknown> = {
      trigger: trigger.reason,
      result: r.result,
      durationMs,
      ...(r.objects ? { inSync: total(r.objects, 'in_sync') } : {}),
      drift: sum(r.drift),
      conflicts: sum(r.conflicts),
      ...(r.objects ? { errors: total(r.objects, 'error') } : {}),
      applied: r.applied.length,
      failed: r.failed?.length ?? 0,
      ...(r.revision ? { revision: r.revision.commit, dirty: r.revision.dirty } : {}),
    };
    if (trigger.files && trigger.files.length > 0) fields.files = trigger.files;
    if (next) fields[next.reason === 'retry' ? 'retryInMs' : 'nextInMs'] = Math.round(next.ms);
    const msg = `reconcile ${r.result}: ${redact(r.message)}`;
    switch (levelOf(r.result)) {
      case 'info': this.opts.log.info(msg, fields); break;
      case 'warn': this.opts.log.warn(msg, fields); break;
      case 'error': this.opts.log.error(msg, fields); break;
    }
  }

  private settleIdle(): void {
    if (this.running || (this.pending && !this.stopped)) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** true when `p` settled within `ms`. */
  private within(p: Promise<void>, ms: number): Promise<boolean> {
    return new Promise((done) => {
      const timer = this.timers.setTimeout(() => done(false), ms);
      void p.then(() => { this.timers.clearTimeout(timer); done(true); });
    });
  }
}

/** Starts a Watcher (watch armed, first pass under way) and returns it. */
export async function startWatch(opts: WatcherOptions): Promise<Watcher> {
  const w = new Watcher(opts);
  await w.start();
  return w;
}

// ------------------------------------------------------------ helpers

const REASON_ORDER: readonly TriggerReason[] = ['start', 'file-change', 'retry', 'interval'];

/** Coalesces what piled up into one trigger: the most telling reason, every changed file. */
function takeTrigger(p: Pending): PassTrigger {
  const reason = REASON_ORDER.find((r) => p.reasons.has(r)) ?? 'interval';
  const files = [...p.files].sort();
  const full = reason === 'file-change' && [...p.reasons].some((r) => r !== 'file-change') ? { full: true } : {};
  return files.length > 0 ? { reason, files, ...full } : { reason, ...full };
}

export function jittered(intervalMs: number, jitter: number, random: () => number): number {
  return Math.max(1, intervalMs * (1 + jitter * (2 * random() - 1)));
}

function levelOf(r: PassOutcome): 'info' | 'warn' | 'error' {
  switch (r) {
    case 'success':
    case 'suspended':
      return 'info';
    case 'invalid-config':
    case 'unsafe':
    case 'conflict':
    case 'locked':
      return 'warn';
    case 'state-error':
    case 'api-error':
    case 'partial-failure':
      return 'error';
  }
}

function total(m: ReadonlyMap<string, ObjectCounts>, state: keyof ObjectCounts): number {
  let n = 0;
  for (const c of m.values()) n += c[state];
  return n;
}

function sum(m: ReadonlyMap<string, number>): number {
  let n = 0;
  for (const v of m.values()) n += v;
  return n;
}

function leadsToFolder(path: string): boolean {
  try { return statSync(path).isDirectory(); } catch { return false; }
}

function isFolder(path: string): boolean {
  try { return lstatSync(path).isDirectory(); } catch { return false; }
}

/** Where each path leads now (its real path) and what is there (device, inode, birth); undefined when gone. */
async function rootIdentities(paths: readonly string[]): Promise<Map<string, string | undefined>> {
  const out = new Map<string, string | undefined>();
  for (const p of paths) {
    const real = await realpath(p).catch(() => undefined);
    const st = real === undefined ? undefined : await stat(real).catch(() => undefined);
    // The birth time too: a folder removed and made again at once often gets the same inode.
    // A file root (the config) is replaced by every editor's save: chokidar follows that itself.
    out.set(p, real === undefined || st === undefined ? undefined : st.isDirectory() ? `${st.dev}:${st.ino}:${st.birthtimeMs}:${real}` : real);
  }
  return out;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function thrownResult(err: unknown, configValid: boolean): PassResult {
  return {
    result: 'api-error',
    message: `the pass failed unexpectedly: ${redact(errorMessage(err))}`,
    drift: new Map(),
    conflicts: new Map(),
    applied: [],
    configValid,
  };
}
