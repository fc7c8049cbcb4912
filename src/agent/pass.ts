// One reconcile pass of `watch`, built from the same steps as `plan` and `apply`
// (src/agent/reconcile.ts). It keeps what it parsed between passes and re-reads only the
// files whose size or modification time changed, so a save in a large repo costs one file.
import { lstatSync, realpathSync, statSync, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import type { ApiLimits, Change, Clock, DesiredObject, DesiredState, LiveState, Logger, Plan, ResolvedConfig, SourceLocation } from '../model/index.js';
import { ApiError, ConfigError, LockHeldError, StateError, UnsafePlanError, UserError, type ConfigIssue } from '../errors.js';
import { resolveConfig } from '../load/config.js';
import { included, listResourceFiles, readParsedFile, selectResourcePaths, type LoadFilter, type ParsedFile } from '../load/index.js';
import type { FileStamp } from '../load/read-file.js';
import { checkSelection } from '../load/selection.js';
import { assembleFrom, type Assembly } from '../load/incremental.js';
import type { ApiClient, RequestEvent } from '../api/client.js';
import { effectiveLimits } from '../api/limits.js';
import { APPEND_QUIET_MS } from '../limits.js';
import { redact, secretsGeneration } from '../redact.js';
import { DEFAULT_SETTLE_MS, Journal } from '../apply/journal.js';
import { objectOf } from '../apply/verify.js';
import { desiredRevision, type Revision } from '../load/revision.js';
import { RepeatLimiter } from './repeat.js';
import { keysInLive, SHOWN_IN_PLAN, warnKeysInLive, type KeyLocation } from '../live-keys.js';
import { clip } from '../core/canonical.js';
import { DETAIL_LIMITS, passDetail, type PassDetail } from '../core/status-detail.js';
import {
  connect, enforceSafety, execute, fetchAndPlan, journalPathFor, liveFor, planLive, putLive, refreshTargetsOf, windowGuard, withApplyLock, type Planned,
} from './reconcile.js';
import { mergeLive, refreshLive, type RefreshTargets } from '../api/fetch-live.js';
import { editedObjects } from '../core/edited.js';
import { resourcesKey } from './targets.js';
import { editBetween, indexDesired, replan, type DesiredIndex, type Edit } from '../core/replan.js';
import { mapOf, type ObjectCounts, type PassResult, type PassTrigger, type ReconcilePass } from './types.js';
import { lowerBound } from '../sorted.js';

export interface PassOptions {
  readonly configFile?: string;
  readonly dir?: string;
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly filter: LoadFilter;
  readonly dryRun: boolean;
  /** The ceiling of requests in flight per tenant (and the width of reads and writes). */
  readonly concurrency: number;
  /** Where the adaptive limit starts (default: the ceiling) and its floor (default 1). */
  readonly startConcurrency?: number;
  readonly minConcurrency?: number;
  readonly journal?: string;
  /** --allow-broken-dependencies and --ignore-windows (docs/rollout-control.md). */
  readonly allowBrokenDependencies?: boolean;
  readonly ignoreWindows?: boolean;
  /** --settle-window, when given (else safety.settle_window, else 30 s). */
  readonly settleWindowMs?: number;
  /** --append-quiet: a phase is appended only from a file unchanged this long (default 2 s). */
  readonly appendQuietMs?: number;
  readonly insecureHttp?: boolean;
  readonly caFile?: string;
  /** --max-response-size and --request-timeout; the config's api.* fills in the rest each pass. */
  readonly limits?: ApiLimits;
  readonly log: Logger;
  readonly clock: Clock;
  readonly onRequest?: (e: RequestEvent) => void;
  /** Called with each resolved config, so the loop can follow watch.interval and the resources. */
  readonly onConfig?: (config: ResolvedConfig) => void;
  /** Told when the apply lock is taken (true) and let go (false). */
  readonly onLockHeld?: (held: boolean) => void;
}

/**
 * A parse, and the file it came from: size, modification time, change time and inode. The
 * modification time alone can be set back (rsync -a, cp -p, tar, a checkout that restores
 * times), and an edit of the same size then went unseen forever; the change time cannot be set,
 * and a file replaced by rename has another inode.
 */
interface CachedFile { readonly stamp: string; readonly parsed: ParsedFile }

function stampOf(st: { size: number; mtimeMs: number; ctimeMs: number; ino: number; dev: number }): string {
  return `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}:${st.dev}`;
}

/**
 * What a file's parse depends on besides its text: where the resources are and how they are read
 * (resourcesKey), the tenants dus-sync.yaml lists and the default tenant (a document without
 * metadata.tenant is the default tenant's; one naming a tenant the config does not list is an
 * error), the working folder (the file names shown), and the keys known (a value that holds a
 * key is an issue: a rotated key file may name a value of a file that did not change). When it changes, every kept parse is
 * dropped: adding a tenant to dus-sync.yaml left "unknown tenant" in force until the file itself
 * was saved again, and a new default_tenant left the documents with the old one.
 */
function parseKey(config: ResolvedConfig): string {
  return JSON.stringify([resourcesKey(config), Object.keys(config.tenants), config.defaultTenant ?? null, process.cwd(), secretsGeneration()]);
}

/** Whether the folder of `rel` (relative to `dir`) is reached through a symbolic link. */
function throughLink(dir: string, rel: string): boolean {
  try {
    return realpathSync(dirname(join(dir, rel))) !== join(realpathSync(dir), dirname(rel));
  } catch {
    return true;
  }
}

/** The changed files of a file-change pass, as parsed before it and now. */
interface Reread { readonly before: readonly ParsedFile[]; readonly after: readonly ParsedFile[] }

/** What a pass loaded: the desired state, its issues, the files (sorted by path) and tenants (sorted). */
interface Loaded {
  readonly desired: DesiredState;
  readonly issues: readonly ConfigIssue[];
  readonly files: readonly ParsedFile[];
  readonly tenants: readonly string[];
  readonly load: number;
  readonly reread?: Reread;
}

/** More changed files than this in one file-change pass, and everything is listed again. */
const MAX_RELISTED = 1024;


function listed(paths: readonly string[], path: string): boolean {
  return paths[lowerBound(paths, path)] === path;
}

/** The objects a set of parsed files declares into the desired state (the filter's tenants and selector). */
function declaredIn(files: readonly ParsedFile[], filter: LoadFilter): Set<DesiredObject> {
  const out = new Set<DesiredObject>();
  for (const f of files) for (const d of f.documents) if (d.object && included(d.object, filter)) out.add(d.object);
  return out;
}

/**
 * The live state as the last pass left it: the last full read, with every record and action
 * read since (targeted reads, the verification after apply) put in. A file change is planned
 * against it after reading again only what the edit touched; `key` is the API, the tenants, the
 * limits and the journal it was read for.
 */
interface LiveView {
  readonly key: string;
  readonly desired: DesiredState;
  /** The objects of `desired` by key (replan updates it with each edit). */
  readonly index: DesiredIndex;
  /**
   * Which load of the files `desired` came from: an edit is taken from the files re-read by the
   * next load only, so a pass that loaded files without planning (an invalid file, say) ends
   * the chain, and the next pass reads and plans everything.
   */
  readonly load: number;
  readonly live: LiveState;
  /** The plan of `desired` against `live`: a file change plans only what it touched and what this did not leave unchanged. */
  readonly plan: Plan;
}

function empty(): Map<string, number> { return new Map(); }

function result(partial: Partial<PassResult> & Pick<PassResult, 'result' | 'message'>): PassResult {
  return { drift: empty(), conflicts: empty(), applied: [], configValid: true, ...partial };
}

/**
 * The desired objects of every planned tenant by state, 0 included: a gauge must drop to 0, not
 * vanish. `verified` (objectId) are objects this pass applied every change of and read back as
 * written: they count as in sync, not drift (the state after the pass, not at its plan).
 */
export function objectCounts(tenants: readonly string[], plan: Plan, verified: readonly string[] = []): Map<string, ObjectCounts> {
  const done = new Set(verified);
  const drifting = new Map<string, Set<string>>();
  const healed = new Map<string, Set<string>>();
  for (const c of plan.changes) {
    const id = objectOf(c);
    const into = done.has(id) ? healed : drifting;
    const set = into.get(c.tenant) ?? new Set<string>();
    // Phase appends to one action are one object in drift, however many phases.
    set.add(id);
    into.set(c.tenant, set);
  }
  const unchanged = plan.summary.unchanged_by_tenant ?? {};
  return new Map(tenants.map((t) => [t, {
    in_sync: (unchanged[t] ?? 0) + (healed.get(t)?.size ?? 0),
    drift: drifting.get(t)?.size ?? 0,
    conflict: plan.conflicts.filter((c) => c.tenant === t).length,
    error: plan.errors.filter((e) => e.tenant === t).length,
  }]));
}

function countObjects(plan: Plan): number {
  return new Set(plan.changes.map((c) => `${c.tenant}\0${c.kind === 'firmware' ? 'firmware' : 'action'}\0${c.key}`)).size;
}


function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** "1 conflict and 2 errors": what keeps a pass from being in sync. */
function problemWords(plan: Plan): string {
  const parts = [
    ...(plan.conflicts.length > 0 ? [plural(plan.conflicts.length, 'conflict')] : []),
    ...(plan.errors.length > 0 ? [plural(plan.errors.length, 'error')] : []),
  ];
  return parts.join(' and ');
}

/** tenant, kind, key, file and line as log fields (file and line when the object has a source). */
function where(o: { readonly tenant: string; readonly kind: string; readonly key: string; readonly source?: SourceLocation }): Record<string, unknown> {
  return { tenant: o.tenant, kind: o.kind, key: o.key, ...(o.source ? { file: o.source.file, line: o.source.line } : {}) };
}

/** Like Promise.all over map, with at most `limit` at a time (file descriptors are finite). */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export function createReconcilePass(opts: PassOptions): { pass: ReconcilePass; close(): Promise<void> } {
  const cache = new Map<string, CachedFile>();
  // --append-quiet: each file's stamp as this process first saw it, on its own clock. A change
  // time ahead of the clock (a server's skew, a file from elsewhere) still comes of age.
  const quietSeen = new Map<string, { readonly stamp: string; readonly since: number }>();
  /** The parseKey the cached parses were made for. */
  let cacheKey: string | undefined;
  let client: { key: string; api: ApiClient } | undefined;
  let view: LiveView | undefined;

  /** The files of the last listing (sorted), for the config they were listed for. */
  let listing: { key: string; paths: readonly string[] } | undefined;
  let loads = 0;
  /** What the last assemble built: a file change assembles from it and the changed files (src/load/incremental.ts). */
  let assembly: Assembly | undefined;

  /**
   * The resource files after a file change: the last listing with the changed files put in or
   * taken out, when every changed path is a file this config reads (or may read); else (a
   * folder, the config file, a path outside) undefined, and everything is listed again. The
   * interval pass always lists again, so an event the watcher missed is caught there. The
   * listing is sorted (as listResourceFiles sorts it): a changed path is found and put in its
   * place by binary search, not by a Set of every path and a sort of them all.
   */
  function relisted(config: ResolvedConfig, key: string, trigger: PassTrigger): { paths: readonly string[]; changed: Set<string> } | undefined {
    if (trigger.reason !== 'file-change' || trigger.full === true || !trigger.files || listing?.key !== key) return undefined;
    // Thousands of changed files (a checkout): listing everything is as quick, and simpler.
    if (trigger.files.length > MAX_RELISTED) return undefined;
    const listed = listing.paths;
    const changed = new Set<string>();
    for (const abs of trigger.files) {
      if (config.file !== undefined && abs === config.file) return undefined;
      const rel = relative(config.dir, abs).split(sep).join('/');
      if (rel === '' || rel.startsWith('../') || rel === '..' || isAbsolute(rel)) return undefined;
      if (listed[lowerBound(listed, rel)] !== rel && selectResourcePaths([rel], config).length !== 1) return undefined;
      changed.add(rel);
    }
    let paths: string[] | undefined;
    for (const rel of changed) {
      let st;
      try { st = lstatSync(join(config.dir, rel)); } catch { st = undefined; }
      if (st?.isDirectory() === true) return undefined;
      // Gone, and listed files were below it: a folder (even one named like a file) went away.
      if (st === undefined && (listed[lowerBound(listed, `${rel}/`)] ?? '').startsWith(`${rel}/`)) return undefined;
      const now = paths ?? listed;
      const at = lowerBound(now, rel);
      const there = now[at] === rel;
      // A new path through a linked folder may be a second path to a folder already listed
      // (the listing reads each real folder once): everything is listed again.
      if (st !== undefined && !there && throughLink(config.dir, rel)) return undefined;
      if (st === undefined && there) (paths ??= listed.slice()).splice(at, 1);
      else if (st !== undefined && !there) (paths ??= listed.slice()).splice(at, 0, rel);
    }
    return { paths: paths ?? listed, changed };
  }

  /** A changed file read again: the kept parse when its stamp did not change, else a new parse (kept when it could be statted). */
  function reread(config: ResolvedConfig, path: string, st: Stats | undefined): ParsedFile {
    // A dangling link cannot be statted; readParsedFile says why (and refuses special files,
    // links out of the repository and oversize files, bounded while reading).
    const hit = cache.get(path);
    if (st && hit && hit.stamp === stampOf(st)) return hit.parsed;
    const got: { stat?: FileStamp } = {};
    const file = readParsedFile(config, path, got);
    // Kept only when the file read (its fstat) is the one the path led to when statted: a read
    // that went elsewhere (a folder on the way swapped for a link meanwhile) is not kept as this
    // path's, so the next pass reads it again instead of trusting it until the file changes.
    if (st && got.stat !== undefined && stampOf(got.stat) === stampOf(st)) cache.set(path, { stamp: stampOf(st), parsed: file });
    else cache.delete(path);
    return file;
  }

  async function loadCached(config: ResolvedConfig, trigger: PassTrigger): Promise<Loaded> {
    const key = resourcesKey(config);
    const parses = parseKey(config);
    const reparse = parses !== cacheKey;
    if (reparse) { cache.clear(); cacheKey = parses; }
    const quick = reparse ? undefined : relisted(config, key, trigger);
    const paths = quick?.paths ?? await listResourceFiles(config);
    listing = { key, paths };
    let parsed: ParsedFile[];
    let rereadFiles: Reread | undefined;
    if (quick !== undefined) {
      // After a file change, only the changed files are looked at again; the edit is what they
      // declared before this pass and declare now.
      const before = [...quick.changed].flatMap((p) => { const c = cache.get(p); return c ? [c.parsed] : []; });
      const after: ParsedFile[] = [];
      parsed = new Array<ParsedFile>(paths.length);
      for (let i = 0; i < paths.length; i++) {
        const path = paths[i]!;
        const kept = quick.changed.has(path) ? undefined : cache.get(path);
        if (kept !== undefined) { parsed[i] = kept.parsed; continue; }
        // A file the last pass could not stat (a dangling link) is read again, as before.
        let st: Stats | undefined;
        try { st = statSync(join(config.dir, path)); } catch { st = undefined; }
        const file = reread(config, path, st);
        parsed[i] = file;
        if (quick.changed.has(path)) after.push(file);
      }
      for (const path of quick.changed) if (!listed(paths, path)) cache.delete(path);
      rereadFiles = { before, after };
    } else {
      const seen = new Set(paths);
      // Statted a few dozen at a time: one after the other, thousands of stats cost more than the pass.
      parsed = await mapLimited(paths, 32, async (path) => reread(config, path, await stat(join(config.dir, path)).catch(() => undefined)));
      for (const path of cache.keys()) if (!seen.has(path)) cache.delete(path);
    }
    const assembled = assembleFrom(parsed, config, opts.filter, assembly);
    assembly = assembled.assembly;
    if (assembled.how !== 'incremental' && trigger.reason === 'file-change') opts.log.debug(`assembled every document: ${assembled.how}`);
    return { desired: assembled.desired, issues: assembled.issues, files: assembled.files, tenants: assembled.tenants, load: ++loads, ...(rereadFiles ? { reread: rereadFiles } : {}) };
  }

  async function clientFor(config: ResolvedConfig, tenants: readonly string[]): Promise<ApiClient> {
    // Keys are read on every pass (a mounted secret may rotate); the connection pool is kept
    // while the URL and the tenants stay the same.
    const limits = effectiveLimits(config, opts.limits);
    const key = `${config.baseUrl ?? ''}|${tenants.join(',')}|${limits.maxResponseBytes ?? ''}|${limits.requestTimeoutMs ?? ''}`;
    if (client && client.key === key) return client.api;
    await client?.api.close();
    const api = await connect(config, tenants, {
      env: opts.env, log: opts.log, insecureHttp: opts.insecureHttp, caFile: opts.caFile,
      concurrency: opts.startConcurrency ?? opts.concurrency, minConcurrency: opts.minConcurrency, maxConcurrency: opts.concurrency, limits, onRequest: opts.onRequest,
    });
    client = { key, api };
    return api;
  }

  // A key in live data is warned about when it is found, not on every pass: the same warning
  // every interval would bury everything else in the log.
  let warnedKeys = '';
  const warnKeysOnce = (found: readonly KeyLocation[]): void => {
    const now = found.map((l) => `${l.tenant}\0${l.object}\0${l.path}`).sort().join('\n');
    if (now !== warnedKeys) warnKeysInLive(opts.log, found.filter((l) => !warnedKeys.split('\n').includes(`${l.tenant}\0${l.object}\0${l.path}`)), SHOWN_IN_PLAN);
    warnedKeys = now;
  };

  const pass: ReconcilePass = async (trigger: PassTrigger, signal: AbortSignal): Promise<PassResult> => {
    let config: ResolvedConfig;
    let configStamp: string | undefined;
    try {
      config = await resolveConfig({ config: opts.configFile, dir: opts.dir, cwd: opts.cwd, env: opts.env });
      // Taken now, before anything is planned from it: see fileGuard.
      try { configStamp = config.file !== undefined ? stampOf(statSync(config.file)) : undefined; } catch { configStamp = undefined; }
      opts.onConfig?.(config);
    } catch (err) {
      return invalid(err, opts.log);
    }
    // git status runs while the files load and the pass plans (tens of milliseconds in a large
    // repository); it is awaited where the revision is first needed.
    const revisionRead = desiredRevision(config, { onAbsent: (why) => opts.log.debug(`no git revision for the desired state: ${why}`) });
    const loaded = await loadCached(config, trigger).catch((err: unknown) => err);
    if (loaded instanceof Error) return invalid(loaded, opts.log);
    const { desired, issues, files, reread, load, tenants } = loaded as Loaded;
    if (issues.length > 0) return invalid(new ConfigError(issues), opts.log);
    // An empty repository, or a --tenant or --selector that matches nothing, is an error the
    // agent logs and reports (not ready) until the files or flags are fixed; it keeps running.
    try {
      checkSelection(files, config, opts.filter);
    } catch (err) {
      return invalid(err, opts.log);
    }

    // What the status page shows of this pass; kept when safety refuses the plan.
    let detail: PassDetail | undefined;
    /** The objects by state at the first plan: an unsafe plan (refused, nothing written) still tells its drift. */
    let planned: Pick<PassResult, 'drift' | 'conflicts' | 'objects'> | undefined;
    // The revision, once git has answered (it is taken in every outcome below, awaited no earlier).
    let rev: { revision?: Revision } = {};
    const revisionKnown = async (): Promise<void> => { const revision = await revisionRead; rev = revision ? { revision } : {}; };
    try {
      // Only a tenant dus-sync.yaml lists, with nothing declared yet, gets here (see checkSelection).
      if (tenants.length === 0) {
        await revisionKnown();
        return result({ ...rev, result: 'success', message: `no desired-state documents for tenant ${(opts.filter.tenants ?? []).join(', ')}` });
      }
      const api = await clientFor(config, tenants);
      const journalPath = journalPathFor(config, opts.journal);
      const inDoubt = () => Journal.peekInDoubt(journalPath, api.api).catch(() => undefined);
      const control = {
        config, journalPath, api: api.api, log: opts.log, now: () => opts.clock.now(),
        allowBrokenDependencies: opts.allowBrokenDependencies === true, ignoreWindows: opts.ignoreWindows === true,
      };
      const viewKey = `${client!.key}|${journalPath}`;
      // A file change is planned against the live view of the last pass, reading again only what
      // the edit touched; the first pass, the interval, retries and anything a targeted read
      // cannot establish read everything (the drift of what was not edited is healed there).
      const since = trigger.reason === 'file-change' && trigger.full !== true && view?.key === viewKey && view.load === load - 1 ? view : undefined;
      // What the edit declared and took away: from the changed files, or (after a full listing) by comparing everything.
      let edit: Edit | undefined;
      if (since) {
        if (reread) {
          const before = declaredIn(reread.before, opts.filter);
          const after = declaredIn(reread.after, opts.filter);
          edit = { index: since.index, added: [...after].filter((o) => !before.has(o)), removed: [...before].filter((o) => !after.has(o)) };
        } else {
          edit = { ...editBetween(since.desired, desired) };
        }
      }
      const edited = edit ? editedObjects(edit) : undefined;
      let targeted = since !== undefined && edited !== undefined && edited.moreDeactivations.length === 0;
      let pending: RefreshTargets = edited ?? { firmwares: [], actions: [] };
      if (since && !targeted) opts.log.debug('reading everything: the edit declares more deactivations, whose dependency check needs the whole tenant');
      /** Reads (targeted, or everything) and plans; the view then holds what was read. */
      const readAndPlan = async (after?: Plan): Promise<Planned & { full: boolean }> => {
        // A deactivation is written only after a full read: its dependency check needs the
        // tenant as it is now (another actor may have deactivated what satisfied it), and the
        // view holds only what the edits touched since the last full read.
        const deactivates = after?.changes.some((c) => c.kind === 'firmware' && c.after.is_deactivated === true) === true;
        if (deactivates) opts.log.debug('reading everything: the plan deactivates firmware');
        if (targeted && !deactivates && view?.key === viewKey) {
          const targets = refreshTargetsOf(after?.changes ?? [], pending);
          const read = targets.firmwares.length + targets.actions.length === 0
            ? { live: view.live, reads: 0 }
            : await refreshLive(api, liveFor(view.live, targets), targets, { concurrency: opts.concurrency, signal });
          if ('live' in read) {
            const last = view;
            // What was read goes into the view in place: the view is the pass's own, and the last
            // plan was made against it (replan needs only that it moved in the touched objects).
            if (read.live !== view.live) putLive(view.live, read.live);
            const live = view.live;
            // The edit is put into the index once (the read inside the lock has none left).
            const change: Edit = edit ?? { index: last.index, added: [], removed: [] };
            edit = { index: change.index, added: [], removed: [] };
            const replanned = await planLive(desired, live, control, (_d, l, o) => replan(last.plan, change, l, targets, o));
            opts.log.debug(`planned against the live view after ${read.reads} targeted read(s)`);
            view = { key: viewKey, desired, index: change.index, load, live, plan: replanned };
            pending = { firmwares: [], actions: [] };
            return { live, plan: replanned, full: false };
          }
          opts.log.debug(`reading everything: ${read.fallback}`);
        }
        view = undefined;
        const planned = await fetchAndPlan(api, desired, opts.concurrency, signal, control);
        view = { key: viewKey, desired, index: indexDesired(desired), load, live: planned.live, plan: planned.plan };
        edit = undefined;
        pending = { firmwares: [], actions: [] };
        // Within a file-change pass, the read inside the lock is then targeted at what the plan writes.
        targeted = since !== undefined;
        return { ...planned, full: true };
      };
      // The first plan's live state is not held past this: inside the lock everything it writes
      // is read again (a full read keeps a second copy of every record while the first is held).
      const { plan, detail: firstDetail } = await (async () => {
        const first = await readAndPlan();
        // A key in live data is looked for in full reads (the interval's at the latest).
        if (first.full) warnKeysOnce(keysInLive(first.live, desired));
        return { plan: first.plan, detail: passDetail({ desired, live: first.live, plan: first.plan, tenants }) };
      })();
      await revisionKnown();
      const objects = objectCounts(tenants, plan);
      const drift = mapOf(objects, (c) => c.drift);
      const conflicts = mapOf(objects, (c) => c.conflict);
      planned = { drift, conflicts, objects };
      warnProblems(plan);
      detail = firstDetail;
      const base = { ...rev, drift, conflicts, objects, changedFiles: trigger.files, detail, held: plan.held ?? [] };
      const problems = plan.conflicts.length + plan.errors.length;
      const outcome = problems > 0 ? 'conflict' : 'success';
      const troubles = problemWords(plan);
      // A tenant with writes held back (paused, gated, a deny window) is not in sync with the revision.
      const heldTenants = new Set((plan.held ?? []).map((h) => h.tenant));
      const cleanTenants = tenants.filter((t) => objects.get(t)!.conflict === 0 && objects.get(t)!.error === 0 && !heldTenants.has(t));
      const settleMs = opts.settleWindowMs ?? config.safety.settleWindowMs ?? DEFAULT_SETTLE_MS;
      if (plan.changes.length === 0) {
        // Nothing to write, but appends an earlier pass left in doubt may have landed since:
        // they are settled (and the journal emptied) as a clean apply run settles them.
        let settledApplied: PassResult['applied'] = [];
        if (!opts.dryRun && !config.suspend && ((await inDoubt()) ?? 0) > 0) {
          settledApplied = await withApplyLock({ journalPath, log: opts.log, clock: opts.clock, signal, settleMs, tenants, ...rev, onLockHeld: opts.onLockHeld }, api,
            (locked) => Promise.resolve(locked.settled.appliedIn.map((tenant) => ({ tenant, kind: 'phase' as const }))));
        }
        return result({ ...base, result: outcome, synced: cleanTenants, inDoubt: await inDoubt(), applied: settledApplied,
          message: problems > 0
            ? `${troubles} to fix; nothing to apply (${plan.summary.unchanged} unchanged)`
            // Held back (paused, gated, outside a sync window) is not in sync: say what waits.
            : base.held.length > 0
              ? `held: ${plural(base.held.length, 'object')} waiting (${base.held[0]!.message}${base.held.length > 1 ? `; and ${base.held.length - 1} more` : ''}); nothing to apply now (${plan.summary.unchanged} unchanged)`
              : `in sync (${plan.summary.unchanged} unchanged)` });
      }
      const inSyncNow = cleanTenants.filter((t) => objects.get(t)!.drift === 0);
      enforceSafety(plan, config, {});
      const driftWords = `${plural(countObjects(plan), 'object')} with ${plural(plan.changes.length, 'change')}`;
      if (opts.dryRun) {
        return result({ ...base, result: outcome, synced: inSyncNow, inDoubt: await inDoubt(),
          message: `drift: ${driftWords} not applied (--dry-run)${problems > 0 ? `; ${troubles}` : ''}` });
      }
      if (config.suspend) {
        return result({ ...base, result: 'suspended', synced: inSyncNow, inDoubt: await inDoubt(),
          message: `drift: ${driftWords} not applied (suspend: true)${problems > 0 ? `; ${troubles}` : ''}` });
      }
      let firstPlan: Plan | undefined = plan;
      const windows = windowGuard(config, opts.ignoreWindows, () => opts.clock.now());
      const quiet = { ms: opts.appendQuietMs ?? APPEND_QUIET_MS.default, againInMs: undefined as number | undefined };
      const fileChanged = fileGuard(config, files, configStamp, quiet);
      const applyOpts = {
        journalPath, log: opts.log, clock: opts.clock, concurrency: opts.concurrency, signal, settleMs,
        beforeWrite: (c: Change) => fileChanged(c) ?? windows?.(c),
        // What the verification read goes into the view (a partial read is merged in).
        // (A complete read of the touched objects goes in in place; a partial one is merged into a copy.)
        onVerified: (after: LiveState, complete: boolean) => {
          if (!view) return;
          if (complete) putLive(view.live, after);
          else view = { ...view, live: mergeLive(view.live, after) };
        },
      };
      // Appends an earlier pass left in doubt that the journal now finds applied count as applied.
      let settledApplied: PassResult['applied'] = [];
      const { report, fresh } = await withApplyLock({ ...applyOpts, tenants, ...rev, onLockHeld: opts.onLockHeld }, api, async (locked) => {
        settledApplied = locked.settled.appliedIn.map((tenant) => ({ tenant, kind: 'phase' as const }));
        // The plan above told that there is drift; the one executed is made again inside the
        // lock, from reads taken after it, so that an apply that ran meanwhile is seen.
        // (The first plan is not held while this one is executed.)
        const again = await readAndPlan(firstPlan);
        firstPlan = undefined;
        detail = passDetail({ desired, live: again.live, plan: again.plan, tenants });
        enforceSafety(again.plan, config, {});
        const done = await execute(again.plan, again.live, api, locked, applyOpts);
        detail = passDetail({ desired, live: again.live, plan: again.plan, results: done.results, tenants });
        return { report: done, fresh: again.plan };
      });
      for (const r of report.results) {
        // Held back as it was about to be written (the file is still new, a window closed): why.
        if (r.status === 'skipped' && r.message !== undefined) opts.log.info(`waiting: ${r.change.kind} ${r.change.key} in ${r.change.tenant}: ${r.message}`, where(r.change));
        if (r.status === 'failed') opts.log.warn(`failed: ${r.change.kind} ${r.change.key} in ${r.change.tenant}: ${r.message ?? ''}`, where(r.change));
      }
      for (const d of report.diverged) opts.log.error(`diverged: ${d}`);
      for (const u of report.unconverged) opts.log.warn(`not converged: ${u}`);
      const applied = [...settledApplied, ...report.results.filter((r) => r.status === 'applied').map((r) => ({ tenant: r.change.tenant, kind: r.change.kind }))];
      // An append in doubt is counted once its fate is known: applied when the journal finds it, or by the run that sends it again.
      const failed = report.results.filter((r) => r.status === 'failed' && r.inDoubt !== true).map((r) => ({ tenant: r.change.tenant, kind: r.change.kind }));
      const freshProblems = fresh.conflicts.length + fresh.errors.length;
      const converged = report.diverged.length === 0 && report.unconverged.length === 0;
      // A tenant is in sync at this revision when the plan made inside the lock found no problem
      // in it and every one of its changes was applied.
      const synced = !converged ? inSyncNow : tenants.filter((t) => !fresh.conflicts.some((c) => c.tenant === t) && !fresh.errors.some((e) => e.tenant === t)
        && !(fresh.held ?? []).some((h) => h.tenant === t) && report.results.every((r) => r.change.tenant !== t || r.status === 'applied'));
      const outcomeAfter = report.failed > 0 || !converged ? 'partial-failure' : freshProblems > 0 ? 'conflict' : 'success';
      // What the gauges tell until the next pass: the plan executed, less what it applied and verified.
      const objectsAfter = objectCounts(tenants, fresh, report.verified ?? []);
      return result({ ...base, after: objectsAfter, detail, result: outcomeAfter, applied, failed, diverged: report.diverged.length, synced, inDoubt: await inDoubt(),
        ...(quiet.againInMs !== undefined ? { againInMs: quiet.againInMs } : {}),
        message: `applied ${report.applied}, failed ${report.failed}, skipped ${report.skipped}${report.diverged.length > 0 ? `, ${report.diverged.length} action(s) diverged` : ''}${freshProblems > 0 ? `; ${problemWords(fresh)}` : ''}` });
    } catch (err) {
      // Whatever failed may have left the view behind what the service holds now.
      view = undefined;
      await revisionKnown();
      if (err instanceof UnsafePlanError) return result({ ...rev, ...planned, result: 'unsafe', message: err.message, ...(detail ? { detail } : {}) });
      if (err instanceof ConfigError) return invalid(err, opts.log);
      // The journal or the lock: said as what it is, not as an API failure.
      if (err instanceof LockHeldError) return result({ ...rev, result: 'locked', message: redact(err.message) });
      if (err instanceof StateError) return result({ ...rev, result: 'state-error', message: redact(`the state folder: ${err.message}`) });
      if (err instanceof UserError && !(err instanceof ApiError)) return result({ ...rev, result: 'api-error', message: redact(err.message) });
      return result({ ...rev, result: 'api-error', message: redact(err instanceof Error ? err.message : String(err)) });
    }
  };

  /**
   * Each conflict and plan error as a warning with its tenant, kind, key, file and line as
   * fields: when first seen, when its message changes, then at most hourly while it stays.
   */
  const repeats = new RepeatLimiter(() => opts.clock.now());
  function warnProblems(plan: Plan): void {
    for (const c of plan.conflicts) {
      if (repeats.shouldLog(`conflict\0${c.tenant}\0${c.key}`, c.message)) {
        opts.log.warn(`conflict on action ${c.key} in ${c.tenant}: ${c.message}`, where(c));
      }
    }
    for (const e of plan.errors) {
      if (repeats.shouldLog(`error\0${e.tenant}\0${e.kind}\0${e.key}`, e.message)) {
        opts.log.warn(`${e.kind} ${e.key} in ${e.tenant}: ${e.message}`, where(e));
      }
    }
    repeats.endRound();
  }

  /**
   * The files by the name a change gives for its file (the shown name), kept while the listing
   * (the same array: an edit of a file leaves it as it is) and what the names depend on (the
   * parse key: the folder and the working folder) stay the same: a Map of 20,000 files for
   * every pass that writes was most of the rest of a pass.
   */
  let shownNames: { readonly paths: readonly string[]; readonly key: string | undefined; readonly byShown: ReadonlyMap<string, string> } | undefined;
  function filesByShownName(files: readonly ParsedFile[]): ReadonlyMap<string, string> {
    const paths = listing?.paths;
    if (paths !== undefined && shownNames?.paths === paths && shownNames.key === cacheKey) return shownNames.byShown;
    const byShown = new Map(files.map((f) => [f.file, f.path] as const));
    // Only for the files of this listing: a pass that did not load from it (none does) keeps nothing.
    if (paths !== undefined && paths.length === files.length && files.every((f, i) => f.path === paths[i])) shownNames = { paths, key: cacheKey, byShown };
    return byShown;
  }

  /**
   * A write whose desired-state file changed since this pass read it is held back: the edit
   * (`paused: true` pulled during a long apply, say) is planned by the next pass, which the
   * change triggers. One stat per write, against what the pass read.
   */
  function fileGuard(config: ResolvedConfig, files: readonly ParsedFile[], configStamp: string | undefined, quiet: { readonly ms: number; againInMs: number | undefined }): (c: Change) => string | undefined {
    const byShown = filesByShownName(files);
    return (c) => {
      // The config too: a deny window or suspend: true saved mid-pass holds what is left.
      if (config.file !== undefined) {
        let now: string | undefined;
        try { now = stampOf(statSync(config.file)); } catch { now = undefined; }
        if (now !== configStamp) return `${config.file} changed during the pass, so it was not written; the next pass plans with the new config`;
      }
      const shown = c.source?.file;
      const path = shown === undefined ? undefined : byShown.get(shown);
      if (path === undefined) return undefined;
      const was = cache.get(path);
      let st: Stats | undefined;
      try { st = statSync(join(config.dir, path)); } catch { st = undefined; }
      const now = st === undefined ? undefined : stampOf(st);
      if (was === undefined || now === undefined || now !== was.stamp) return `${shown} changed during the pass, so it was not written; the next pass plans it from the new file`;
      // A phase only from a file left alone for a while: a writer that paused mid-file left
      // valid YAML holding half a phase (a name cut short, a phase before its trigger_on line).
      // By the change time, which every write sets and nobody can set back or ahead (touch -d,
      // cp -p and tar set the modification time), or by how long this process has seen the file
      // unchanged, whichever is longer.
      if (c.kind === 'phase' && quiet.ms > 0) {
        let seen = quietSeen.get(path);
        if (seen === undefined || seen.stamp !== now) quietSeen.set(path, seen = { stamp: now, since: performance.now() });
        const age = Math.max(Date.now() - st!.ctimeMs, performance.now() - seen.since);
        if (age < quiet.ms) {
          const wait = Math.max(1, Math.ceil(quiet.ms - age));
          quiet.againInMs = Math.max(quiet.againInMs ?? 0, wait);
          return `${shown} was written ${Math.max(0, Math.round(age))} ms ago, and a phase is appended only from a file unchanged for ${quiet.ms} ms (--append-quiet), so that a file still being written never appends half a phase; the pass ${wait} ms from now appends it`;
        }
      }
      return undefined;
    };
  }

  return {
    pass,
    close: async () => { await client?.api.close(); client = undefined; },
  };
}

function invalid(err: unknown, log: Logger): PassResult {
  if (err instanceof ConfigError) {
    for (const i of err.issues) log.error(`${i.file}:${i.line}:${i.column}: ${i.message}`, { file: i.file, line: i.line, column: i.column });
  } else {
    log.error(redact(err instanceof Error ? err.message : String(err)));
  }
  const issues = err instanceof ConfigError
    ? { issues: err.issues.slice(0, DETAIL_LIMITS.problems).map((i) => ({ file: clip(i.file, DETAIL_LIMITS.message), line: i.line, column: i.column, message: clip(redact(i.message), DETAIL_LIMITS.message) })), issueTotal: err.issues.length }
    : {};
  return result({ result: 'invalid-config', configValid: false, ...issues,
    message: err instanceof ConfigError ? `${err.issues.length} problem(s) in the configuration; nothing was written` : redact(String(err instanceof Error ? err.message : err)) });
}
