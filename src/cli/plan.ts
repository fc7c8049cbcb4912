// `dus-sync plan`: fetch the live state, print the plan, optionally save it.
import { writeFileAtomic } from '../atomic-write.js';
import { UnsafePlanError, UserError } from '../errors.js';
import type { DesiredRevision, LiveState, Plan } from '../model/index.js';
import { desiredRevision, shortRevision } from '../load/revision.js';
import { connect, enforceSafety, fetchAndPlan, loadOrThrow, readAhead, rolloutControl, tenantsOf, type ConnectOptions } from '../agent/reconcile.js';
import { renderText } from '../core/render/text.js';
import { renderJson } from '../core/render/json.js';
import { renderMarkdown } from '../core/render/markdown.js';
import { toSavedPlan } from '../apply/saved-plan.js';
import { redact, redactDeep } from '../redact.js';
import { VERSION } from '../version.js';
import { apiLimitFlags, concurrencyFlags, connectConcurrency, useColor, type GlobalOptions } from './context.js';
import { setup } from './common.js';
import { liveProgress, type LiveProgress, type ProgressHooks } from './progress.js';
import { keysInLive, placeholdersInWrites, SHOWN_IN_PLAN, warnKeysInLive } from '../live-keys.js';

interface PlanFlags {
  format: 'text' | 'json' | 'markdown';
  out?: string;
  detailedExitcode?: boolean;
  maxChanges?: number;
  maxDeactivations?: number;
  allowLarge?: boolean;
  allowBrokenDependencies?: boolean;
  ignoreWindows?: boolean;
  /** --no-read-ahead: false. */
  readAhead?: boolean;
}

/** Provenance shown with the plan: the desired state's revision (json, markdown), the tool and the time (markdown). */
interface Provenance {
  readonly revision?: DesiredRevision;
  readonly createdAt: string;
}

export function renderPlan(plan: Plan, format: PlanFlags['format'], color: boolean, live: LiveState | undefined, suspended: boolean, provenance: Provenance): string {
  switch (format) {
    case 'json': return renderJson(plan, { suspended, revision: provenance.revision });
    case 'markdown': return renderMarkdown(plan, { live, suspended, footer: { toolVersion: VERSION, generatedAt: provenance.createdAt, revision: provenance.revision } });
    case 'text': return renderText(plan, { color, suspended });
  }
}

/** 1 on conflicts or errors, else 2 for changes with --detailed-exitcode, else 0. */
export function planExitCode(plan: Plan, detailed: boolean): number {
  if (plan.conflicts.length > 0 || plan.errors.length > 0) return 1;
  return detailed && plan.changes.length > 0 ? 2 : 0;
}

/** Through a new temp file renamed over the target: a link planted at either name is never written through. */
function savePlan(path: string, text: string): void {
  try {
    writeFileAtomic(path, text, { mode: 0o644 });
  } catch (err) {
    if (err instanceof UserError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new UserError(`could not save the plan to ${path} (${code}); check that its folder exists and is writable`);
  }
}

export async function run(rawOpts: Record<string, unknown>, globals: GlobalOptions): Promise<number> {
  const opts = rawOpts as unknown as PlanFlags;
  if (opts.out === '') throw new UserError('--out was given an empty file name (an unset variable?): give the file to save the plan to; nothing was read or saved');
  const concurrency = concurrencyFlags(rawOpts);
  const { config, filter, log } = await setup(globals);
  const started = performance.now();
  // The client exists before the desired state does (the lists are read while it loads), so the
  // progress line, which needs the desired state, is reached through these.
  const current: { progress?: LiveProgress } = {};
  const hooks: ProgressHooks = {
    onRequestStart: (e) => current.progress?.hooks.onRequestStart(e),
    onRequest: (e) => current.progress?.hooks.onRequest(e),
    onPage: (e) => { pagesRead += 1; current.progress?.hooks.onPage(e); },
  };
  let pagesRead = 0;
  const connectOptions: ConnectOptions = {
    env: process.env, log, insecureHttp: globals.insecureHttp, caFile: globals.caFile, ...connectConcurrency(concurrency), limits: apiLimitFlags(globals), ...hooks,
  };
  const ahead = opts.readAhead === false ? undefined : await readAhead(config, filter, connectOptions);
  // git runs while the files load (a process of its own: tens of milliseconds in a real repository).
  const revisionRead = desiredRevision(config, { onAbsent: (why) => log.debug(`no git revision for the desired state: ${why}`) });
  let desired;
  try {
    // The actions the files declare are read as the loader meets them.
    desired = await loadOrThrow(config, filter, ahead ? (o) => { if (o.kind === 'action') ahead.read.ahead.readAction(o.tenant, o.id); } : undefined);
  } catch (err) {
    await ahead?.close();
    throw err;
  }
  const loaded = performance.now();
  const rssLoaded = process.memoryUsage.rss();
  const pagesAhead = pagesRead;
  const revision = await revisionRead;
  const progress = liveProgress(desired);
  current.progress = progress;
  const tenants = tenantsOf(desired);
  const reuse = ahead !== undefined && tenants.every((t) => ahead.tenants.includes(t));
  if (ahead !== undefined && !reuse) await ahead.close();
  const client = reuse ? ahead.client : await connect(config, tenants, connectOptions);
  try {
    const { live, plan } = await progress.during(() => fetchAndPlan(client, desired, concurrency.max, undefined, rolloutControl(config, log, opts), reuse ? ahead.read : undefined));
    const planned = performance.now();
    const rssPlanned = process.memoryUsage.rss();
    // The plan compared the real values; what is shown and saved has the keys redacted.
    warnKeysInLive(log, keysInLive(live, desired), SHOWN_IN_PLAN);
    // Only the markdown flowcharts show live values beyond the plan (live phase names).
    const createdAt = new Date().toISOString();
    process.stdout.write(renderPlan(redactDeep(plan), opts.format, useColor(globals), opts.format === 'markdown' ? redactDeep(live) : undefined, config.suspend, { revision, createdAt }));
    const ms = (a: number, b: number) => `${Math.round(b - a)} ms`;
    const mb = (bytes: number) => `${Math.round(bytes / 1048576)} MB`;
    log.debug(`timings: load ${ms(started, loaded)}${reuse ? ` (${pagesAhead} bundle list pages read meanwhile)` : ''}, read and plan ${ms(loaded, planned)}, show ${ms(planned, performance.now())}; `
      + `resident memory after the load ${mb(rssLoaded)}, after the plan ${mb(rssPlanned)}, at the end ${mb(process.memoryUsage.rss())}`);
    if (opts.out) {
      const saved = redactDeep(toSavedPlan(plan, desired, live, { toolVersion: VERSION, createdAt, revision }));
      savePlan(opts.out, redact(JSON.stringify(saved, null, 2)) + '\n');
      const blocked = placeholdersInWrites(saved);
      if (blocked.length > 0) {
        log.warn(`saved the plan to ${opts.out}, with an API key found in live data replaced by [REDACTED] in what it would write (${blocked.slice(0, 3).join(', ')}${blocked.length > 3 ? ', …' : ''}); `
          + 'apply refuses it, as it would write the placeholder: run dus-sync apply without a plan file');
      } else {
        log.info(`saved the plan to ${opts.out}${revision ? ` (desired state at ${shortRevision(revision)})` : ''}; apply it with: dus-sync apply ${opts.out}`);
      }
    }
    if (plan.conflicts.length > 0) log.error(`${plan.conflicts.length} conflict(s): phases are append-only; fix the YAML to match the live phases`);
    if (plan.errors.length > 0) log.error(`${plan.errors.length} object(s) cannot be planned (see above)`);
    try {
      enforceSafety(plan, config, opts);
    } catch (err) {
      if (err instanceof UnsafePlanError) {
        log.error(`apply would refuse this plan: ${err.message.replace(/ Nothing was written\.$/, '')}`);
        return 1;
      }
      throw err;
    }
    return planExitCode(plan, opts.detailedExitcode === true);
  } finally {
    if (reuse) await ahead.close();
    else await client.close();
  }
}
