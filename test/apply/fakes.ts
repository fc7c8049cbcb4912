// An in-memory TenantClient with injectable failures, a fake clock and a tiny planner for
// phase appends: enough to drive the executor through every failure mode without a server.
import { readFileSync } from 'node:fs';
import type { TenantClient } from '../../src/api/types.js';
import type {
  Action, Clock, FirmwareBundle, FirmwareUpdate, LiveFirmware, LiveState, Logger, Phase, PhaseChange, PhaseSpec, Plan, Change,
} from '../../src/model/index.js';
import { ApiError } from '../../src/errors.js';

export type AppendFault = 'ok' | 'fail-before-send' | 'drop-after-commit' | '5xx-after-commit' | '5xx-before-commit' | '4xx';
export type ReadFault = 'ok' | 'error';

export interface FakeOptions {
  /** Decides the fate of the n-th append (0-based, over all actions). */
  appendFault?: (n: number, actionId: number) => AppendFault;
  readFault?: (n: number) => ReadFault;
  putFault?: (versionNumber: string) => boolean;
  /** When set, every append checks that its intent is already durable in this journal file. */
  journalPath?: string;
  /** Event-loop turns each request takes, so that requests overlap. */
  latencyTurns?: number;
}

export class FakeApi {
  readonly actions = new Map<string, Action>();
  readonly firmwares = new Map<string, FirmwareUpdate>();
  /** Firmware records by tenant/version, each in one bundle, read back by getBundle. */
  readonly records = new Map<string, { bundle: string; component_name: string; fields: FirmwareUpdate }>();
  readonly puts: string[] = [];
  readonly appendsReceived: Array<{ tenant: string; actionId: number; name: string }> = [];
  readonly violations: string[] = [];
  inFlight = 0;
  maxInFlight = 0;
  private appendCount = 0;
  private readCount = 0;

  constructor(private readonly opts: FakeOptions = {}) {}

  addAction(tenant: string, id: number, phases: PhaseSpec[] = []): void {
    this.actions.set(`${tenant}/${id}`, { id, status: 'pending', phases: phases.map((p) => ({ ...p })) });
  }

  addFirmware(tenant: string, versionNumber: string, fields: Partial<FirmwareUpdate> = {}, bundle = '2024.01'): void {
    this.records.set(`${tenant}/${versionNumber}`, {
      bundle, component_name: 'modem',
      fields: { is_deactivated: false, uncompressed_size: 1000, dependencies: [], ...fields },
    });
  }

  /** The live state as a fetch would see it now: what a plan is made from. */
  snapshot(): LiveState {
    const tenants = new Map<string, { firmwares: Map<string, LiveFirmware[]>; actions: Map<number, Action | null> }>();
    const get = (t: string) => {
      let v = tenants.get(t);
      if (!v) tenants.set(t, (v = { firmwares: new Map(), actions: new Map() }));
      return v;
    };
    for (const [key, a] of this.actions) get(key.split('/')[0]!).actions.set(a.id, structuredClone(a));
    for (const [key, r] of this.records) {
      const [tenant, version] = key.split('/') as [string, string];
      get(tenant).firmwares.set(version, [{
        version_number: version, component_name: r.component_name, firmware_id: null, bundles: [r.bundle], ...structuredClone(r.fields),
      }]);
    }
    return { tenants };
  }

  phases(tenant: string, id: number): Phase[] {
    return this.actions.get(`${tenant}/${id}`)?.phases ?? [];
  }

  tenant(name: string): TenantClient {
    return {
      tenant: name,
      listBundles: () => Promise.resolve([] as FirmwareBundle[]),
      bundlePages: () => (async function* () { /* no bundles */ })(),
      getBundle: (version) => this.request(() => this.getBundle(name, version)),
      getAction: (id) => this.request(() => this.getAction(name, id)),
      putFirmware: (v, body) => this.request(() => this.putFirmware(name, v, body)),
      appendPhase: (id, phase) => this.request(() => this.appendPhase(name, id, phase)),
    };
  }

  private async request<T>(fn: () => T): Promise<T> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      for (let i = 0; i < (this.opts.latencyTurns ?? 1); i++) await new Promise((r) => setImmediate(r));
      return fn();
    } finally {
      this.inFlight--;
    }
  }

  private getAction(tenant: string, id: number): Action | null {
    const fault = this.opts.readFault?.(this.readCount++) ?? 'ok';
    if (fault === 'error') throw new ApiError('GET action: connection reset', { retryable: true });
    const a = this.actions.get(`${tenant}/${id}`);
    return a === undefined ? null : structuredClone(a);
  }

  private getBundle(tenant: string, version: string): FirmwareBundle {
    const firmwares = [...this.records].filter(([k, r]) => k.startsWith(`${tenant}/`) && r.bundle === version)
      .map(([k, r]) => ({ version_number: k.slice(tenant.length + 1), component_name: r.component_name, ...structuredClone(r.fields) }));
    if (firmwares.length === 0) throw new ApiError('GET bundle answered 404', { status: 404 });
    return { version, firmwares } as FirmwareBundle;
  }

  private putFirmware(tenant: string, v: string, body: FirmwareUpdate): void {
    if (this.opts.putFault?.(v)) throw new ApiError(`PUT /api/v1/firmwares/${v} answered 400: bad dependencies`, { status: 400 });
    this.puts.push(`${tenant}/${v}`);
    this.firmwares.set(`${tenant}/${v}`, body);
    const r = this.records.get(`${tenant}/${v}`);
    if (r) r.fields = structuredClone(body);
  }

  private appendPhase(tenant: string, id: number, phase: PhaseSpec): Action {
    const n = this.appendCount++;
    this.checkJournal(id, phase);
    const fault = this.opts.appendFault?.(n, id) ?? 'ok';
    if (fault === 'fail-before-send') throw new ApiError('connect ECONNREFUSED', { outcome: 'not-sent' });
    if (fault === '4xx') throw new ApiError('append_phase answered 400: name is required', { status: 400 });
    if (fault === '5xx-before-commit') throw new ApiError('append_phase answered 503', { status: 503, outcome: 'unknown', retryable: true });
    const a = this.actions.get(`${tenant}/${id}`);
    if (a === undefined) throw new ApiError('append_phase answered 404', { status: 404 });
    a.phases.push({ name: phase.name, trigger_on: structuredClone(phase.trigger_on), info: structuredClone(phase.info) });
    this.appendsReceived.push({ tenant, actionId: id, name: phase.name });
    if (fault === 'drop-after-commit') throw new ApiError('socket hang up', { outcome: 'unknown' });
    if (fault === '5xx-after-commit') throw new ApiError('append_phase answered 502', { status: 502, outcome: 'unknown', retryable: true });
    return structuredClone(a);
  }

  private checkJournal(id: number, phase: PhaseSpec): void {
    const path = this.opts.journalPath;
    if (path === undefined) return;
    // Whole lines only. Another chain's journal write may be under way as this append arrives, and
    // a read can see a write(2) that crosses a 4 KiB page boundary cut at that boundary (ext4
    // publishes it a page at a time): the line after the last newline is a write not finished,
    // never this append's intent, which was fsync'd before the request left.
    const text = readFileSync(path, 'utf8');
    const whole = text.slice(0, text.lastIndexOf('\n') + 1);
    const lines = whole.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const settled = new Set(lines.filter((l) => l.type === 'outcome').map((l) => l.id));
    const open = lines.some((l) => l.type === 'intent' && l.action_id === id && l.name === phase.name && !settled.has(l.id));
    if (!open) this.violations.push(`append of "${phase.name}" on action ${id} arrived without a pending intent in the journal`);
  }
}

export function fakeClock(): Clock & { slept: number[] } {
  let t = 1_000_000;
  const slept: number[] = [];
  return {
    slept,
    now: () => t,
    sleep: (ms: number) => {
      slept.push(ms);
      t += ms;
      return Promise.resolve();
    },
  };
}

export function memoryLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (msg: string) => { lines.push(`${level}: ${msg}`); };
  return { lines, debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') };
}

export function phase(name: string, percent = 1): PhaseSpec {
  return { name, trigger_on: { after_minutes: 60 }, info: { percent } };
}

export function phaseChange(tenant: string, actionId: number, index: number, p: PhaseSpec): PhaseChange {
  return { tenant, kind: 'phase', op: 'append', key: String(actionId), action_id: actionId, index, after: p };
}

export function planOf(changes: Change[]): Plan {
  return {
    format_version: 1, changes, conflicts: [], errors: [],
    summary: { changes: changes.length, conflicts: 0, errors: 0, unchanged: 0 },
  };
}

/** The missing tail of each desired action, as the planner would append it. */
export function planPhases(api: FakeApi, tenant: string, desired: ReadonlyMap<number, PhaseSpec[]>): Plan {
  const changes: PhaseChange[] = [];
  for (const [id, phases] of [...desired].sort((a, b) => a[0] - b[0])) {
    const live = api.phases(tenant, id);
    for (let i = live.length; i < phases.length; i++) changes.push(phaseChange(tenant, id, i, phases[i]!));
  }
  return planOf(changes);
}
