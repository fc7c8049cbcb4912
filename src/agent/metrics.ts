// Prometheus metrics of the agent, in a Registry of their own so that embedding dus-sync (or
// running several agents in one test process) never collides with the global registry.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { isHealthy, type PassOutcome, type PassResult } from './types.js';

export interface ApiRequestEvent {
  readonly method: string;
  /** HTTP status; a word such as 'error' (or nothing) when no response came back. */
  readonly status?: number | string;
}

// Results that computed a plan: their drift and conflict maps are the current truth. The
// others (invalid config, API failure) saw nothing, so the last known values stay.
const PLANNED: ReadonlySet<PassOutcome> = new Set<PassOutcome>(['success', 'unsafe', 'conflict', 'partial-failure', 'suspended']);

export class AgentMetrics {
  readonly registry = new Registry();
  private readonly reconcileTotal: Counter<'result'>;
  private readonly reconcileDuration: Histogram;
  private readonly changesApplied: Counter<'tenant' | 'kind'>;
  private readonly driftObjects: Gauge<'tenant'>;
  private readonly conflicts: Gauge<'tenant'>;
  private readonly configValid: Gauge;
  private readonly lastSuccess: Gauge;
  private readonly apiRequests: Counter<'method' | 'status'>;
  private readonly diverged: Counter;

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
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
    this.driftObjects = new Gauge({
      name: 'dus_sync_drift_objects', help: 'Objects whose live state differed from the desired state at the last plan.',
      labelNames: ['tenant'], registers,
    });
    this.conflicts = new Gauge({
      name: 'dus_sync_conflicts', help: 'Conflicts (live phases that differ from the desired ones) at the last plan.',
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
    this.diverged = new Counter({
      name: 'dus_sync_diverged_actions_total',
      help: 'Actions found after an apply with live phases that are no longer the YAML\'s first ones (a phase twice, a foreign phase).',
      registers,
    });
    // Every result shows up as 0 from the start, so rate() and alerts work before the first failure.
    for (const r of ['success', 'invalid-config', 'api-error', 'unsafe', 'conflict', 'partial-failure', 'suspended'] as const) {
      this.reconcileTotal.inc({ result: r }, 0);
    }
  }

  /** Records one finished pass; `now` is epoch milliseconds. */
  recordPass(result: PassResult, durationMs: number, now: number): void {
    this.reconcileTotal.inc({ result: result.result });
    this.reconcileDuration.observe(durationMs / 1000);
    for (const a of result.applied) this.changesApplied.inc({ tenant: a.tenant, kind: a.kind });
    this.diverged.inc(result.diverged ?? 0);
    this.configValid.set(result.configValid ? 1 : 0);
    if (PLANNED.has(result.result)) {
      replace(this.driftObjects, result.drift);
      replace(this.conflicts, result.conflicts);
    }
    if (isHealthy(result.result)) this.lastSuccess.set(now / 1000);
  }

  /** For the API client's onRequest hook. */
  readonly onApiRequest = (e: ApiRequestEvent): void => {
    this.apiRequests.inc({ method: e.method.toUpperCase(), status: e.status === undefined ? 'error' : String(e.status) });
  };

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

// A tenant that left the config must leave the gauge too, so it is rebuilt on every plan.
function replace(gauge: Gauge<'tenant'>, values: ReadonlyMap<string, number>): void {
  gauge.reset();
  for (const [tenant, n] of [...values].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) gauge.set({ tenant }, n);
}
