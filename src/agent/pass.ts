// One reconcile pass of `watch`, built from the same steps as `plan` and `apply`
// (src/agent/reconcile.ts). It keeps what it parsed between passes and re-reads only the
// files whose size or modification time changed, so a save in a large repo costs one file.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApiLimits, Clock, DesiredState, Logger, ResolvedConfig } from '../model/index.js';
import { ApiError, ConfigError, UnsafePlanError, UserError, type ConfigIssue } from '../errors.js';
import { resolveConfig } from '../load/config.js';
import { assemble, listResourceFiles, readParsedFile, type LoadFilter, type ParsedFile } from '../load/index.js';
import { checkSelection } from '../load/selection.js';
import type { ApiClient, RequestEvent } from '../api/client.js';
import { effectiveLimits } from '../api/limits.js';
import { redact } from '../redact.js';
import { DEFAULT_SETTLE_MS } from '../apply/journal.js';
import { keysInLive, SHOWN_IN_PLAN, warnKeysInLive, type KeyLocation } from '../live-keys.js';
import { clip } from '../core/canonical.js';
import { DETAIL_LIMITS, passDetail, type PassDetail } from '../core/status-detail.js';
import {
  connect, enforceSafety, execute, fetchAndPlan, journalPathFor, tenantsOf, withApplyLock,
} from './reconcile.js';
import type { PassResult, PassTrigger, ReconcilePass } from './types.js';

export interface PassOptions {
  readonly configFile?: string;
  readonly dir?: string;
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly filter: LoadFilter;
  readonly dryRun: boolean;
  readonly concurrency: number;
  readonly journal?: string;
  /** --settle-window, when given (else safety.settle_window, else 30 s). */
  readonly settleWindowMs?: number;
  readonly insecureHttp?: boolean;
  readonly caFile?: string;
  /** --max-response-size and --request-timeout; the config's api.* fills in the rest each pass. */
  readonly limits?: ApiLimits;
  readonly log: Logger;
  readonly clock: Clock;
  readonly onRequest?: (e: RequestEvent) => void;
  /** Called with each resolved config, so the loop can follow watch.interval and the resources. */
  readonly onConfig?: (config: ResolvedConfig) => void;
}

interface CachedFile { readonly mtimeMs: number; readonly size: number; readonly parsed: ParsedFile }

function empty(): Map<string, number> { return new Map(); }

function result(partial: Partial<PassResult> & Pick<PassResult, 'result' | 'message'>): PassResult {
  return { drift: empty(), conflicts: empty(), applied: [], configValid: true, ...partial };
}

function countBy<T>(items: readonly T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of items) m.set(key(i), (m.get(key(i)) ?? 0) + 1);
  return m;
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
  let client: { key: string; api: ApiClient } | undefined;

  async function loadCached(config: ResolvedConfig): Promise<{ desired: DesiredState; issues: readonly ConfigIssue[]; files: readonly ParsedFile[] }> {
    const paths = await listResourceFiles(config);
    const seen = new Set(paths);
    // Statted a few dozen at a time: one after the other, thousands of stats cost more than the pass.
    const parsed = await mapLimited(paths, 32, async (path): Promise<ParsedFile> => {
      // A dangling link cannot be statted; readParsedFile says why (and refuses special files,
      // links out of the repository and oversize files, bounded while reading).
      const st = await stat(join(config.dir, path)).catch(() => undefined);
      const hit = cache.get(path);
      if (st && hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.parsed;
      const file = readParsedFile(config, path);
      if (st) cache.set(path, { mtimeMs: st.mtimeMs, size: st.size, parsed: file });
      return file;
    });
    for (const path of cache.keys()) if (!seen.has(path)) cache.delete(path);
    return { ...assemble(parsed, config, opts.filter), files: parsed };
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
      concurrency: opts.concurrency, limits, onRequest: opts.onRequest,
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
    try {
      config = await resolveConfig({ config: opts.configFile, dir: opts.dir, cwd: opts.cwd, env: opts.env });
      opts.onConfig?.(config);
    } catch (err) {
      return invalid(err, opts.log);
    }
    const loaded = await loadCached(config).catch((err: unknown) => err);
    if (loaded instanceof Error) return invalid(loaded, opts.log);
    const { desired, issues, files } = loaded as Awaited<ReturnType<typeof loadCached>>;
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
    try {
      const tenants = tenantsOf(desired);
      // Only a tenant dus-sync.yaml lists, with nothing declared yet, gets here (see checkSelection).
      if (tenants.length === 0) return result({ result: 'success', message: `no desired-state documents for tenant ${(opts.filter.tenants ?? []).join(', ')}` });
      const api = await clientFor(config, tenants);
      const { plan, live } = await fetchAndPlan(api, desired, opts.concurrency, signal);
      warnKeysOnce(keysInLive(live, desired));
      const drift = countBy(plan.changes, (c) => c.tenant);
      const conflicts = countBy(plan.conflicts, (c) => c.tenant);
      for (const c of plan.conflicts) opts.log.warn(`conflict on action ${c.key} in ${c.tenant}: ${c.message}`);
      for (const e of plan.errors) opts.log.warn(`${e.kind} ${e.key} in ${e.tenant}: ${e.message}`);
      detail = passDetail({ desired, live, plan });
      const base = { drift, conflicts, changedFiles: trigger.files, detail };
      const problems = plan.conflicts.length + plan.errors.length;
      if (plan.changes.length === 0) {
        return result({ ...base, result: problems > 0 ? 'conflict' : 'success',
          message: `in sync (${plan.summary.unchanged} unchanged${problems > 0 ? `, ${problems} conflict(s) or error(s)` : ''})` });
      }
      enforceSafety(plan, config, {});
      if (opts.dryRun) {
        return result({ ...base, result: problems > 0 ? 'conflict' : 'success', message: `drift: ${plan.changes.length} change(s) not applied (--dry-run)` });
      }
      if (config.suspend) {
        return result({ ...base, result: 'suspended', message: `drift: ${plan.changes.length} change(s) not applied (suspend: true)` });
      }
      const journalPath = journalPathFor(config, opts.journal);
      const settleMs = opts.settleWindowMs ?? config.safety.settleWindowMs ?? DEFAULT_SETTLE_MS;
      const applyOpts = { journalPath, log: opts.log, clock: opts.clock, concurrency: opts.concurrency, signal, settleMs };
      const report = await withApplyLock({ ...applyOpts, tenants }, api, async (locked) => {
        // The plan above told that there is drift; the one executed is made again inside the
        // lock, from reads taken after it, so that an apply that ran meanwhile is seen.
        const fresh = await fetchAndPlan(api, desired, opts.concurrency, signal);
        detail = passDetail({ desired, live: fresh.live, plan: fresh.plan });
        enforceSafety(fresh.plan, config, {});
        const done = await execute(fresh.plan, fresh.live, api, locked, applyOpts);
        detail = passDetail({ desired, live: fresh.live, plan: fresh.plan, results: done.results });
        return done;
      });
      for (const r of report.results) {
        if (r.status === 'failed') opts.log.warn(`failed: ${r.change.kind} ${r.change.key} in ${r.change.tenant}: ${r.message ?? ''}`);
      }
      for (const d of report.diverged) opts.log.error(`diverged: ${d}`);
      for (const u of report.unconverged) opts.log.warn(`not converged: ${u}`);
      const applied = report.results.filter((r) => r.status === 'applied').map((r) => ({ tenant: r.change.tenant, kind: r.change.kind }));
      const outcome = report.failed > 0 || report.diverged.length > 0 || report.unconverged.length > 0 ? 'partial-failure' : problems > 0 ? 'conflict' : 'success';
      return result({ ...base, detail, result: outcome, applied, diverged: report.diverged.length,
        message: `applied ${report.applied}, failed ${report.failed}, skipped ${report.skipped}${report.diverged.length > 0 ? `, ${report.diverged.length} action(s) diverged` : ''}` });
    } catch (err) {
      if (err instanceof UnsafePlanError) return result({ result: 'unsafe', message: err.message, ...(detail ? { detail } : {}) });
      if (err instanceof ConfigError) return invalid(err, opts.log);
      if (err instanceof UserError && !(err instanceof ApiError)) return result({ result: 'api-error', message: redact(err.message) });
      return result({ result: 'api-error', message: redact(err instanceof Error ? err.message : String(err)) });
    }
  };

  return {
    pass,
    close: async () => { await client?.api.close(); client = undefined; },
  };
}

function invalid(err: unknown, log: Logger): PassResult {
  if (err instanceof ConfigError) {
    for (const i of err.issues) log.error(`${i.file}:${i.line}:${i.column}: ${i.message}`);
  } else {
    log.error(redact(err instanceof Error ? err.message : String(err)));
  }
  const issues = err instanceof ConfigError
    ? { issues: err.issues.slice(0, DETAIL_LIMITS.problems).map((i) => ({ file: clip(i.file, DETAIL_LIMITS.message), line: i.line, column: i.column, message: clip(redact(i.message), DETAIL_LIMITS.message) })), issueTotal: err.issues.length }
    : {};
  return result({ result: 'invalid-config', configValid: false, ...issues,
    message: err instanceof ConfigError ? `${err.issues.length} problem(s) in the configuration; nothing was written` : redact(String(err instanceof Error ? err.message : err)) });
}
