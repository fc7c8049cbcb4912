// `dus-sync apply [PLANFILE]`: plan (or load a saved plan), ask, apply, verify.
import { createInterface } from 'node:readline/promises';
import type { ApplyReport, Change, ChangeResult, DesiredState, FirmwareChange, LiveState, Logger, Plan, ResolvedConfig, SavedPlan } from '../model/index.js';
import { dependentsLeft, unsatisfiedAfter } from '../core/plan.js';
import { canonicalJson, normalizePhase } from '../core/canonical.js';
import { assemble, readParsedFiles, resourceScope, type LoadFilter } from '../load/index.js';
import { ConfigError, UserError } from '../errors.js';
import {
  connect, enforceSafety, execute, fetchAndPlan, journalPathFor, loadOrThrow, planLive, rolloutControl, systemClock, tenantsOf, windowGuard,
  withApplyLock, type ApplyOptions,
} from '../agent/reconcile.js';
import { fetchLive } from '../api/fetch-live.js';
import type { ApiClient } from '../api/client.js';
import { DEFAULT_SETTLE_MS } from '../apply/journal.js';
import { readSavedPlan, staleObjects, writesNotFromPlan } from '../apply/saved-plan.js';
import { desiredRevision, shortRevision } from '../load/revision.js';
import { renderText } from '../core/render/text.js';
import { renderApplyReport } from '../core/render/report.js';
import { NOTHING_APPLIED, renderApplyReportJson } from '../core/render/report-json.js';
import { describeChange } from '../core/render/describe.js';
import { windowHold } from '../core/windows.js';
import { safeText } from '../core/render/ansi.js';
import { REDACTED, redactDeep } from '../redact.js';
import { liveProgress } from './progress.js';
import { apiLimitFlags, concurrencyFlags, connectConcurrency, useColor, type ConcurrencyFlags, type GlobalOptions } from './context.js';
import { setup } from './common.js';
import { onInterrupt } from './interrupt.js';
import { writeJsonError } from './json-error.js';
import { keysInLive, keysInWrites, refusePlaceholders, SHOWN_IN_PLAN, warnKeysInLive } from '../live-keys.js';

interface ApplyFlags {
  /** text: the plan and the report on stdout; json: the report as one JSON document, the plan on stderr. */
  format?: 'text' | 'json';
  autoApprove?: boolean;
  /** The ceiling of requests in flight per tenant (the width of reads and writes); set from `adaptive`. */
  concurrency: number;
  adaptive: ConcurrencyFlags;
  maxChanges?: number;
  maxDeactivations?: number;
  allowLarge?: boolean;
  failFast?: boolean;
  journal?: string;
  allowBrokenDependencies?: boolean;
  ignoreWindows?: boolean;
  settleWindow?: number;
  /** Milliseconds writes in flight may take to finish after SIGINT/SIGTERM. */
  grace?: number;
}

export async function run(rawOpts: Record<string, unknown>, globals: GlobalOptions, args: string[]): Promise<number> {
  const adaptive = concurrencyFlags(rawOpts);
  const opts = { ...rawOpts, adaptive, concurrency: adaptive.max } as unknown as ApplyFlags;
  const { config, filter, log } = await setup(globals);
  if (config.suspend) {
    throw new UserError('writes are suspended by "suspend: true" in the config; nothing was written');
  }
  const interrupt = onInterrupt({ log, graceMs: opts.grace ?? 10_000 });
  try {
    const code = await applyCommand(args[0], config, filter, opts, globals, log, interrupt.signal);
    return interrupt.exitCode() ?? code;
  } catch (err) {
    const code = interrupt.exitCode();
    if (code === undefined) throw err;
    // Interrupted before the first write (while reading, settling or asking): nothing to report.
    const sentence = `interrupted by ${interrupt.received()!}; nothing was written`;
    log.error(sentence);
    if (opts.format === 'json') writeJsonError({ code: 'INTERRUPTED', message: sentence });
    return code;
  } finally {
    interrupt.dispose();
  }
}

async function applyCommand(planFile: string | undefined, config: ResolvedConfig, filter: LoadFilter, opts: ApplyFlags, globals: GlobalOptions,
  log: Logger, signal: AbortSignal): Promise<number> {
  const color = useColor(globals);
  const options = { ...applyOptions(config, opts, log), signal };
  if (planFile) return applySavedPlan(planFile, config, opts, options, globals, log, color);

  const desired = await loadOrThrow(config, filter);
  const revision = await desiredRevision(config, { onAbsent: (why) => log.debug(`no git revision for the desired state: ${why}`) });
  const progress = liveProgress(desired);
  const client = await connect(config, tenantsOf(desired), {
    env: process.env, log, insecureHttp: globals.insecureHttp, caFile: globals.caFile, ...connectConcurrency(opts.adaptive), limits: apiLimitFlags(globals), ...progress.hooks,
  });
  try {
    return await withApplyLock({ ...options, tenants: tenantsOf(desired), ...(revision ? { revision } : {}) }, client, async (locked) => {
      // Planned inside the lock, from reads taken after it: nothing another run did is missed.
      const { plan, live } = await progress.during(() => fetchAndPlan(client, desired, opts.concurrency, signal, rolloutControl(config, log, opts)));
      // Applied with the real values; shown with the keys found in live data redacted.
      warnKeysInLive(log, keysInLive(live, desired), SHOWN_IN_PLAN);
      const shown = redactDeep(plan);
      showPlan(shown, opts, globals);
      enforceSafety(plan, config, opts);
      const problems = plan.conflicts.length + plan.errors.length;
      if (plan.changes.length === 0) return nothingToApply(shown, problems, opts);
      if (problems > 0) log.warn(`${problems} object(s) with conflicts or errors are left out; the other changes are applied`);
      await approve(plan, opts.autoApprove === true, signal);
      if (revision) log.info(`applying the desired state at ${shortRevision(revision)}`);
      const report = await execute(plan, live, client, locked, options);
      return finish(shown, report, problems, opts, color, log);
    });
  } finally {
    await client.close();
  }
}

/** A saved plan is written when it is applied: the sync windows of now decide (--ignore-windows to override, logged). */
function refuseOutsideWindows(saved: Plan, config: ResolvedConfig, opts: ApplyFlags, log: Logger): void {
  const windows = config.windows ?? [];
  if (windows.length === 0) return;
  const now = Date.now();
  const held = new Map<string, string>();
  for (const c of saved.changes) {
    const kind = c.kind === 'firmware' ? 'firmware' : 'action';
    const hold = windowHold(windows, c.tenant, kind, now);
    if (hold) held.set(`${c.tenant} ${kind} ${c.key}`, hold.message);
  }
  if (held.size === 0) return;
  const list = [...held].map(([what, why]) => `${what} ${why}`).join('; ');
  if (opts.ignoreWindows) {
    log.warn(`--ignore-windows: applying the saved plan although ${list}`);
    return;
  }
  throw new UserError(`the saved plan writes outside the sync windows: ${list}; nothing was written. Apply it when the window allows, or pass --ignore-windows in an emergency`);
}

/**
 * A saved plan must still be what the checkout's YAML asks for. Its appends must be ones the
 * desired state allows now: `paused: true` is the emergency brake, and `pacing: gated` allows
 * one triggered-and-soaked phase at a time, whenever they were put in git. And each change of an
 * object the checkout declares must be the change the checkout plans now, the same PUT body, the
 * same phase: a plan file edited after it was made (a CI artifact), or YAML changed since, is
 * refused. The declared objects of the plan are planned again against the fresh reads (the
 * whole repository, whatever --dir narrowed). Objects the checkout does not declare (a plan
 * applied where the YAML is not) cannot be checked: a warning says so.
 */
async function refuseAgainstCheckout(saved: Plan, config: ResolvedConfig, live: LiveState, opts: ApplyFlags, log: Logger): Promise<void> {
  if (saved.changes.length === 0) return;
  const appends = saved.changes.filter((c): c is Extract<Change, { kind: 'phase' }> => c.kind === 'phase');
  const writes = saved.changes.filter((c): c is FirmwareChange => c.kind === 'firmware');
  // The whole repository, whatever --dir narrowed (an action paused in a file outside DIR is
  // paused): the config's folder, or DIR when it lies outside it (src/load/index.ts).
  const whole: ResolvedConfig = { ...config, dir: resourceScope(config).base };
  const loaded = assemble(await readParsedFiles(whole), whole);
  // An invalid checkout may be the very file that pauses an action: nothing is written.
  if (loaded.issues.length > 0) throw new ConfigError(loaded.issues);
  const ids = new Set(appends.map((c) => `${c.tenant}\0${c.action_id}`));
  const keys = new Set(writes.map((c) => `${c.tenant}\0${c.key}`));
  const declared = loaded.desired.actions.filter((a) => ids.has(`${a.tenant}\0${a.id}`));
  const declaredFirmwares = loaded.desired.firmwares.filter((f) => keys.has(`${f.tenant}\0${f.spec.version_number}`));
  // dus-sync changes only what the YAML declares: a change of anything else was not planned from
  // this checkout (a file removed since, a change added to the plan file by hand).
  const undeclared = [
    ...appends.filter((c) => !declared.some((a) => a.tenant === c.tenant && a.id === c.action_id)).map((c) => `action ${c.action_id} in ${c.tenant}`),
    ...writes.filter((c) => !declaredFirmwares.some((f) => f.tenant === c.tenant && f.spec.version_number === c.key)).map((c) => `firmware ${c.key} in ${c.tenant}`),
  ];
  if (undeclared.length > 0) {
    const named = [...new Set(undeclared)];
    throw new UserError(`the saved plan changes what the checkout's YAML does not declare (${named.slice(0, 3).join('; ')}${named.length > 3 ? `; and ${named.length - 3} more` : ''}): it was made from other files, or edited; nothing was written. Apply a saved plan from the checkout it was planned from, or run dus-sync plan again`);
  }
  const now = await planLive({ firmwares: declaredFirmwares, actions: declared, files: [] }, live, rolloutControl(config, log, opts));
  const planned = new Map(now.changes.map((c) => [c.kind === 'phase' ? `${c.tenant}\0${c.action_id}\0${c.index}` : `${c.tenant}\0${c.key}\0${c.component_name}`, c] as const));
  const refused = new Map<string, string>();
  for (const c of appends) {
    if (planned.has(`${c.tenant}\0${c.action_id}\0${c.index}`)) continue;
    const held = now.held?.find((h) => h.tenant === c.tenant && h.kind === 'action' && h.key === String(c.action_id));
    refused.set(`${c.tenant}\0${c.action_id}`, `action ${c.action_id} in ${c.tenant}: ${held ? held.message : `the desired state no longer appends phase ${c.index} (${c.after.name})`}`);
  }
  if (refused.size > 0) {
    throw new UserError(`the saved plan appends phases the desired state now holds back (${[...refused.values()].join('; ')}); nothing was written. Run dus-sync plan again`);
  }
  const differs: string[] = [];
  for (const c of appends) {
    const m = planned.get(`${c.tenant}\0${c.action_id}\0${c.index}`);
    if (m?.kind === 'phase' && canonicalJson(normalizePhase(m.after)) !== canonicalJson(normalizePhase(c.after))) {
      differs.push(`phase ${c.index} of action ${c.action_id} in ${c.tenant} is not the phase the YAML declares there`);
    }
  }
  for (const c of writes) {
    const m = planned.get(`${c.tenant}\0${c.key}\0${c.component_name}`);
    if (m?.kind !== 'firmware') differs.push(`the YAML no longer changes firmware ${c.key} in ${c.tenant}`);
    else if (canonicalJson(m.body) !== canonicalJson(c.body)) differs.push(`firmware ${c.key} in ${c.tenant} would be written with other values than the YAML's`);
  }
  if (differs.length > 0) {
    throw new UserError(`the saved plan is not what the checkout's YAML plans now (${differs.slice(0, 3).join('; ')}${differs.length > 3 ? `; and ${differs.length - 3} more` : ''}): the plan file was edited, or the YAML changed since it was made; nothing was written. Run dus-sync plan again`);
  }
}

async function applySavedPlan(path: string, config: ResolvedConfig, opts: ApplyFlags, options: ApplyOptions, globals: GlobalOptions,
  log: Logger, color: boolean): Promise<number> {
  // A saved plan is applied whole, as it was reviewed (Terraform refuses -target with a plan
  // file too): a filter given now would seem to narrow it and would not.
  const narrowing = [
    ...((globals.tenant ?? []).length > 0 ? ['--tenant'] : []),
    ...((globals.selector ?? []).length > 0 ? ['--selector'] : []),
    ...(resourceScope(config).under !== '' ? ['--dir (a folder inside the repository)'] : []),
  ];
  if (narrowing.length > 0) {
    throw new UserError(`apply ${path} applies the saved plan whole, as it was made; ${narrowing.join(' and ')} cannot narrow it. Pass ${narrowing.length > 1 ? 'them' : 'it'} to dus-sync plan --out instead, and apply that plan; nothing was written`);
  }
  const saved = await readSavedPlan(path);
  refusePlaceholders(path, saved);
  const desired = desiredFromFingerprints(saved);
  const progress = liveProgress(desired);
  const client: ApiClient = await connect(config, tenantsOf(desired), {
    env: process.env, log, insecureHttp: globals.insecureHttp, caFile: globals.caFile, ...connectConcurrency(opts.adaptive), limits: apiLimitFlags(globals), ...progress.hooks,
  });
  try {
    // The journal's intents name the revision the plan was made from, not today's checkout.
    const revision = saved.desired_revision;
    return await withApplyLock({ ...options, tenants: tenantsOf(desired), ...(revision ? { revision } : {}) }, client, async (locked) => {
      const live = await progress.during(() => fetchLive(client, desired, { concurrency: opts.concurrency, signal: options.signal }));
      const stale = staleObjects(saved, live);
      if (stale.length > 0) {
        throw new UserError(`plan is stale: ${stale.join('; ')}; nothing was written. Run dus-sync plan again`);
      }
      // What is sent must be what the plan shows: its changes over the live state it read.
      const forged = writesNotFromPlan(saved, live);
      if (forged.length > 0) {
        throw new UserError(`${path} writes what its changes do not say: ${forged.slice(0, 3).join('; ')}${forged.length > 3 ? `; and ${forged.length - 3} more` : ''}; nothing was written. Run dus-sync plan again`);
      }
      const keyed = keysInWrites(saved);
      if (keyed.length > 0) {
        throw new UserError(`${path} would send an API key to the API (${keyed.slice(0, 3).join(', ')}${keyed.length > 3 ? `, and ${keyed.length - 3} more` : ''}, shown as ${REDACTED}); nothing was written: take the key out of the YAML, plan again, and rotate it`);
      }
      // The fingerprints cover the declared objects only: another actor may since have made a
      // firmware depend on one the plan deactivates, or deactivated what the plan counted on.
      // The dependency check is made again on these reads (--allow-broken-dependencies lets it go).
      if (opts.allowBrokenDependencies !== true) {
        const broken = brokenBySavedDeactivations(saved, live);
        if (broken.length > 0) {
          throw new UserError(`plan is stale: ${broken.join('; ')}, on the reads of now; nothing was written. Run dus-sync plan again (or pass --allow-broken-dependencies)`);
        }
      }
      showPlan(saved, opts, globals);
      enforceSafety(saved, config, opts);
      refuseOutsideWindows(saved, config, opts, log);
      await refuseAgainstCheckout(saved, config, live, opts, log);
      if (saved.changes.length === 0) return nothingToApply(saved, 0, opts);
      // As in Terraform, the saved plan is the approval: it was reviewed when it was made, and
      // it is applied only as it was saved (checked above against fresh reads and against the
      // checkout's YAML), so no prompt and no --auto-approve, on a terminal or not.
      log.info(`applying the saved plan ${path} as approved when it was made${revision ? ` (desired state at ${shortRevision(revision)})` : ''}`);
      // Every write is still decided on a fresh read of its object, against this checked live state.
      const report = await execute(saved, live, client, locked, options);
      return finish(saved, report, 0, opts, color, log);
    });
  } finally {
    await client.close();
  }
}

/** What the saved plan's deactivations would leave unsatisfied on `live`, with all its firmware writes applied, in words. */
function brokenBySavedDeactivations(saved: SavedPlan, live: LiveState): string[] {
  const firmware = saved.changes.filter((c): c is FirmwareChange => c.kind === 'firmware');
  const out: string[] = [];
  for (const tenant of [...new Set(firmware.filter((c) => c.after.is_deactivated === true).map((c) => c.tenant))].sort()) {
    const unsatisfied = unsatisfiedAfter(tenant, live, firmware.filter((c) => c.tenant === tenant));
    for (const c of firmware) {
      if (c.tenant !== tenant || c.after.is_deactivated !== true) continue;
      const lost = dependentsLeft(c, unsatisfied);
      if (lost.length > 0) out.push(`deactivating firmware ${c.key} in ${tenant} leaves no active firmware to satisfy ${lost.slice(0, 3).join(', ')}${lost.length > 3 ? ` and ${lost.length - 3} more` : ''}`);
    }
  }
  return out;
}

/** The objects a saved plan read, as a desired state, so that exactly those are fetched again. */
function desiredFromFingerprints(saved: SavedPlan): DesiredState {
  const source = { file: '(saved plan)', line: 1, column: 1 };
  // A firmware the plan deactivates is declared so: the read then keeps what the dependency
  // check needs (the tenant's dependents and the highest versions of each component).
  const deactivated = new Set(saved.changes.filter((c) => c.kind === 'firmware' && c.after.is_deactivated === true).map((c) => `${c.tenant}\0${c.key}`));
  return {
    firmwares: saved.live_fingerprints.filter((f) => f.kind === 'firmware').map((f) => ({
      kind: 'firmware' as const, tenant: f.tenant, labels: {}, source,
      spec: { version_number: f.key, ...(deactivated.has(`${f.tenant}\0${f.key}`) ? { is_deactivated: true } : {}) },
    })),
    actions: saved.live_fingerprints.filter((f) => f.kind === 'action').map((f) => ({
      kind: 'action' as const, tenant: f.tenant, labels: {}, source, id: Number(f.key), phases: [],
    })),
    files: [],
  };
}

function applyOptions(config: ResolvedConfig, opts: ApplyFlags, log: Logger): ApplyOptions {
  return {
    journalPath: journalPathFor(config, opts.journal),
    log,
    clock: systemClock,
    concurrency: opts.concurrency,
    failFast: opts.failFast,
    settleMs: settleWindow(opts.settleWindow, config),
    onResult: progressReporter(),
    beforeWrite: windowGuard(config, opts.ignoreWindows, () => Date.now()),
  };
}

/** --settle-window, else safety.settle_window, else 30 s. */
function settleWindow(flag: number | undefined, config: ResolvedConfig): number {
  return flag ?? config.safety.settleWindowMs ?? DEFAULT_SETTLE_MS;
}

async function approve(plan: Plan, autoApprove: boolean, signal?: AbortSignal): Promise<void> {
  if (autoApprove) return;
  if (!process.stdin.isTTY || !process.stderr.isTTY) {
    throw new UserError('refusing to apply without approval: there is no terminal to ask on; review the plan and pass --auto-approve');
  }
  const tenants = [...new Set(plan.changes.map((c) => c.tenant))].sort().join(', ');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  // The terminal is raw while asking: Ctrl-C reaches readline, not the process. Pass it on.
  rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
  try {
    const answer = await rl.question(`Apply ${plan.changes.length} change${plan.changes.length === 1 ? '' : 's'} to ${tenants}? [y/N] `, signal ? { signal } : {});
    if (!/^y(es)?$/i.test(answer.trim())) throw new UserError('apply cancelled; nothing was written');
  } finally {
    rl.close();
  }
}

/** One line: names come from YAML files and messages from servers, control characters escaped. */
function describe(change: Change): string {
  return safeText(`${describeChange(change)} in ${change.tenant}`);
}

/** On a TTY one live line (done/total, failures, rate); in CI one line per change. */
function progressReporter(): (r: ChangeResult, done: number, total: number) => void {
  const started = Date.now();
  let failed = 0;
  const tty = process.stderr.isTTY === true;
  return (r, done, total) => {
    if (r.status === 'failed') failed += 1;
    if (tty) {
      const rate = done / Math.max((Date.now() - started) / 1000, 0.001);
      process.stderr.write(`\r\x1b[K[${done}/${total}] ${failed} failed, ${rate.toFixed(1)}/s`);
      if (done === total) process.stderr.write('\n');
      if (r.status === 'failed') process.stderr.write(`\n${r.status} ${describe(r.change)}: ${safeText(r.message ?? '')}\n`);
    } else {
      process.stderr.write(`[${done}/${total}] ${r.status} ${describe(r.change)}${r.message ? `: ${safeText(r.message)}` : ''}\n`);
    }
  };
}

/** The plan about to be applied: on stdout, or on stderr when stdout is kept for the JSON report. */
function showPlan(plan: Plan, opts: ApplyFlags, globals: GlobalOptions): void {
  if (opts.format === 'json') process.stderr.write(renderText(plan, { color: useColor(globals, process.stderr) }));
  else process.stdout.write(renderText(plan, { color: useColor(globals) }));
}

/** No changes: the text plan said so already; the JSON report is still the one document on stdout. */
function nothingToApply(plan: Plan, problems: number, opts: ApplyFlags): number {
  if (opts.format === 'json') process.stdout.write(renderApplyReportJson(plan, NOTHING_APPLIED));
  return problems > 0 ? 1 : 0;
}

function finish(plan: Plan, report: ApplyReport, problems: number, opts: ApplyFlags, color: boolean, log: Logger): number {
  process.stdout.write(opts.format === 'json' ? renderApplyReportJson(plan, report) : renderApplyReport(report, { color }));
  if (report.diverged.length > 0) log.error(`${report.diverged.length} action(s) are no longer the YAML's first phases: another actor wrote at the same time`);
  if (report.unconverged.length > 0) log.error(`${report.unconverged.length} object(s) did not converge`);
  return report.failed > 0 || report.unconverged.length > 0 || report.diverged.length > 0 || problems > 0 ? 1 : 0;
}
