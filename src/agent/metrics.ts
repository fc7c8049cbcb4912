// Prometheus metrics of the agent, in a Registry of their own so that embedding dus-sync (or
// running several agents in one test process) never collides with the global registry.
// Names and meanings are listed in docs/metrics-and-logs.md; they follow what Argo CD and Flux
// export for their own reconcilers (objects by sync state, a request-duration histogram by
// templated route, build and revision info series).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { VERSION } from '../version.js';
import { isHealthy, mapOf, OBJECT_STATES, type ObjectCounts, type PassOutcome, type PassResult } from './types.js';

export interface ApiRequestEvent {
  readonly method: string;
  /**
   * The operation without ids as the client names it, e.g. "GET /actions/{id}" (or just
   * "/actions/{id}"); never a raw path: every id would be a new series.
   */
  readonly route?: string;
  /** HTTP status; a word such as 'error' (or nothing) when no response came back. */
  readonly status?: number | string;
  readonly durationMs?: number;
}

// Results that computed a plan: their drift and conflict maps (after the pass's writes, when it
// wrote) are the current truth. The others (invalid config, API failure) saw nothing, so the last
// known values stay.
const PLANNED: ReadonlySet<PassOutcome> = new Set<PassOutcome>(['success', 'unsafe', 'conflict', 'partial-failure', 'suspended']);

/**
 * prom-client samples the event loop's delay every 10 ms by default: about 100 wake-ups a
 * second in an agent that is otherwise idle for minutes. A coarser sample is plenty for
 * nodejs_eventloop_lag_* and lets the process sleep.
 */
export const EVENT_LOOP_PRECISION_MS = 500;

/** The API's own path prefix: routes are labelled as the API document writes them. */
const API_PREFIX = '/api/v1';
const KNOWN_ROUTES = new Set(['/firmware-bundles', '/firmware-bundles/version/{version}', '/actions/{id}', '/firmwares/{version_number}', '/actions/{id}/append_phase']);

export class AgentMetrics {
  readonly registry = new Registry();
  private readonly reconcileTotal: Counter<'result'>;
  private readonly reconcileDuration: Histogram;
  private readonly changesApplied: Counter<'tenant' | 'kind'>;
  private readonly changesFailed: Counter<'tenant' | 'kind'>;
  private readonly objects: Gauge<'tenant' | 'state'>;
  private readonly driftObjects: Gauge<'tenant'>;
  private readonly conflicts: Gauge<'tenant'>;
  private readonly configValid: Gauge;
  private readonly lastSuccess: Gauge;
  private readonly apiRequests: Counter<'method' | 'status'>;
  private readonly apiDuration: Histogram<'method' | 'route' | 'status_class'>;
  private readonly diverged: Counter;
  private readonly inDoubt: Gauge;
  private readonly lockHeld: Gauge;
  private readonly heldObjects: Gauge<'tenant' | 'reason'>;
  private readonly suspended: Gauge;
  private readonly lastApplied: Gauge<'tenant' | 'revision' | 'dirty'>;
  private readonly lastAppliedByTenant = new Map<string, { revision: string; dirty: string }>();

  constructor(opts: { defaultMetrics?: boolean; version?: string; node?: string } = {}) {
    const registers = [this.registry];
    if (opts.defaultMetrics !== false) {
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_PRECISION_MS });
    }
    this.reconcileTotal = new Counter({
      name: 'dus_sync_reconcile_total', help: 'Reconcile passes by result.', labelNames: ['result'], registers,
    });
    this.reconcileDuration = new Histogram({
      name: 'dus_sync_reconcile_duration_seconds', help: 'Duration of a reconcile pass.',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300], registers,
    });
    this.changesApplied = new Counter({
      name: 'dus_sync_changes_applied_total', help: 'Changes applied, by tenant and kind (firmware, phase).',
      labelNames: ['tenant', 'kind'], registers,
    });
    this.changesFailed = new Counter({
      name: 'dus_sync_changes_failed_total', help: 'Changes tried and failed, by tenant and kind (firmware, phase).',
      labelNames: ['tenant', 'kind'], registers,
    });
    this.objects = new Gauge({
      name: 'dus_sync_objects', help: 'Desired objects by tenant and state (in_sync, drift, conflict, error) after the last pass that planned: an object whose changes it applied and verified is in_sync.',
      labelNames: ['tenant', 'state'], registers,
    });
    this.heldObjects = new Gauge({
      name: 'dus_sync_held_objects', help: 'Objects whose writes were held at the last plan, by tenant and reason (paused, gated, window).',
      labelNames: ['tenant', 'reason'], registers,
    });
    this.driftObjects = new Gauge({
      name: 'dus_sync_drift_objects', help: 'Objects (not changes) whose live state differs from the desired state after the last pass that planned: what it did not apply and verify (failed, skipped, in doubt, diverged).',
      labelNames: ['tenant'], registers,
    });
    this.conflicts = new Gauge({
      name: 'dus_sync_conflicts', help: 'Conflicts (live phases that differ from the desired ones) after the last pass that planned.',
      labelNames: ['tenant'], registers,
    });
    this.configValid = new Gauge({
      name: 'dus_sync_config_valid', help: '1 when the last load of the config and resources was valid, else 0.', registers,
    });
    this.lastSuccess = new Gauge({
      name: 'dus_sync_last_success_timestamp_seconds', help: 'Unix time of the last successful (or suspended) pass.', registers,
    });
    this.apiRequests = new Counter({
      name: 'dus_sync_api_requests_total', help: 'Requests to the Device Update Service API by method and status.',
      labelNames: ['method', 'status'], registers,
    });
    this.apiDuration = new Histogram({
      name: 'dus_sync_api_request_duration_seconds',
      help: 'Duration of each try of a request to the API, by method, templated route and status class (2xx, 3xx, 4xx, 5xx, error).',
      labelNames: ['method', 'route', 'status_class'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers,
    });
    this.diverged = new Counter({
      name: 'dus_sync_diverged_actions_total',
      help: 'Actions found after an apply with live phases that are no longer the YAML\'s first ones (a phase twice, a foreign phase).',
      registers,
    });
    this.inDoubt = new Gauge({
      name: 'dus_sync_journal_intents_in_doubt',
      help: 'Phase appends in the intent journal whose outcome is unknown (settled by a later pass), read at the end of the last pass.',
      registers,
    });
    this.lockHeld = new Gauge({
      name: 'dus_sync_apply_lock_held', help: '1 while this agent holds the apply lock, else 0.', registers,
    });
    this.suspended = new Gauge({
      name: 'dus_sync_suspended', help: '1 when the config says suspend: true (no writes), else 0.', registers,
    });
    this.lastApplied = new Gauge({
      name: 'dus_sync_last_applied_info',
      help: 'Always 1: the git revision (commit) whose desired state the tenant\'s live state last matched; dirty="true" when files below the config\'s folder differed from it.',
      labelNames: ['tenant', 'revision', 'dirty'], registers,
    });
    const buildInfo = new Gauge({
      name: 'dus_sync_build_info', help: 'Always 1: the version of dus-sync and of Node.js running it.',
      labelNames: ['version', 'node'], registers,
    });
    buildInfo.set({ version: opts.version ?? VERSION, node: opts.node ?? process.version }, 1);
    this.lockHeld.set(0);
    this.suspended.set(0);
    this.inDoubt.set(0);
    // Every result shows up as 0 from the start, so rate() and alerts work before the first failure.
    for (const r of ['success', 'invalid-config', 'api-error', 'state-error', 'locked', 'unsafe', 'conflict', 'partial-failure', 'suspended'] as const) {
      this.reconcileTotal.inc({ result: r }, 0);
    }
  }

  /** Records one finished pass; `now` is epoch milliseconds. */
  recordPass(result: PassResult, durationMs: number, now: number): void {
    this.reconcileTotal.inc({ result: result.result });
    this.reconcileDuration.observe(durationMs / 1000);
    for (const a of result.applied) this.changesApplied.inc({ tenant: a.tenant, kind: a.kind });
    for (const f of result.failed ?? []) this.changesFailed.inc({ tenant: f.tenant, kind: f.kind });
    this.diverged.inc(result.diverged ?? 0);
    this.configValid.set(result.configValid ? 1 : 0);
    if (result.inDoubt !== undefined) this.inDoubt.set(result.inDoubt);
    if (PLANNED.has(result.result)) {
      // The state after the pass: a pass that wrote tells what is left once its writes were verified.
      const objects = result.after ?? result.objects;
      replace(this.driftObjects, result.after ? mapOf(result.after, (c) => c.drift) : result.drift);
      replace(this.conflicts, result.after ? mapOf(result.after, (c) => c.conflict) : result.conflicts);
      if (result.held) {
        this.heldObjects.reset();
        const counts = new Map<string, { tenant: string; reason: string; n: number }>();
        for (const h of result.held) {
          const k = `${h.tenant}\0${h.reason}`;
          const c = counts.get(k) ?? { tenant: h.tenant, reason: h.reason, n: 0 };
          c.n += 1;
          counts.set(k, c);
        }
        for (const c of counts.values()) this.heldObjects.set({ tenant: c.tenant, reason: c.reason }, c.n);
      }
      if (objects) {
        this.replaceObjects(objects);
        for (const [tenant, before] of [...this.lastAppliedByTenant]) {
          if (!objects.has(tenant)) { this.lastApplied.remove({ tenant, ...before }); this.lastAppliedByTenant.delete(tenant); }
        }
      }
    }
    if (result.revision) {
      for (const tenant of result.synced ?? []) this.setLastApplied(tenant, result.revision.commit, result.revision.dirty);
    }
    if (isHealthy(result.result)) this.lastSuccess.set(now / 1000);
  }

  /** For the API client's onRequest hook. */
  readonly onApiRequest = (e: ApiRequestEvent): void => {
    const method = e.method.toUpperCase();
    const status = e.status === undefined ? 'error' : String(e.status);
    this.apiRequests.inc({ method, status });
    if (e.durationMs !== undefined) {
      this.apiDuration.observe({ method, route: routeLabel(e.route), status_class: statusClass(e.status) }, e.durationMs / 1000);
    }
  };

  setLockHeld(held: boolean): void {
    this.lockHeld.set(held ? 1 : 0);
  }

  setSuspended(suspended: boolean): void {
    this.suspended.set(suspended ? 1 : 0);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  // A tenant that left the config leaves the gauge; one still there shows every state, 0 included.
  private replaceObjects(objects: ReadonlyMap<string, ObjectCounts>): void {
    this.objects.reset();
    for (const tenant of [...objects.keys()].sort(compare)) {
      const counts = objects.get(tenant)!;
      for (const state of OBJECT_STATES) this.objects.set({ tenant, state }, counts[state]);
    }
  }

  // One series per tenant: the old revision's series goes when a new one is applied.
  private setLastApplied(tenant: string, revision: string, dirty: boolean): void {
    const before = this.lastAppliedByTenant.get(tenant);
    const now = { revision, dirty: String(dirty) };
    if (before && (before.revision !== now.revision || before.dirty !== now.dirty)) this.lastApplied.remove({ tenant, ...before });
    this.lastApplied.set({ tenant, ...now }, 1);
    this.lastAppliedByTenant.set(tenant, now);
  }
}

/** "/api/v1/actions/{id}" from the client's "GET /actions/{id}"; anything unknown is "other" (a label must stay bounded). */
export function routeLabel(route: string | undefined): string {
  const path = (route ?? '').replace(/^[A-Z]+ /, '');
  return KNOWN_ROUTES.has(path) ? `${API_PREFIX}${path}` : 'other';
}

export function statusClass(status: number | string | undefined): string {
  if (typeof status === 'number' && Number.isInteger(status) && status >= 100 && status <= 599) return `${Math.floor(status / 100)}xx`;
  return 'error';
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// A tenant that left the config must leave the gauge too, so it is rebuilt on every plan.
function replace(gauge: Gauge<'tenant'>, values: ReadonlyMap<string, number>): void {
  gauge.reset();
  for (const [tenant, n] of [...values].sort(([a], [b]) => compare(a, b))) gauge.set({ tenant }, n);
}
