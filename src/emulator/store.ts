// The emulator's state: per tenant, bundles that reference firmware records (one record per
// version_number + component, however many bundles list it) and actions. Tests reach it
// directly to read or change the state behind the tool's back.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Seed, SeedAction, SeedBundle, SeedDependency, SeedFirmware, SeedPhase } from './seed.js';
import { SeedProblem, validateSeed } from './seed.js';

export type Dependency = SeedDependency;

export interface FirmwareObject {
  firmware_id: string;
  version_number: string;
  component_name: string;
  file_name: string;
  uncompressed_size: number;
  content_length: number;
  checksum: string;
  is_deactivated: boolean;
  dependencies: Dependency[];
}

export interface BundleObject {
  id: string;
  version: string;
  file_name: string;
  uncompressed_size: number;
  content_length: number;
  checksum: string;
  created_by: string;
  created_at: string;
  firmwares: FirmwareObject[];
}

export interface PhaseObject {
  name: string;
  trigger_on: Record<string, unknown>;
  info: Record<string, unknown>;
}

export interface ActionObject {
  id: number;
  tenant_id: string;
  status: string;
  release_notes: string;
  phases: PhaseObject[];
  phases_triggered: boolean[];
  next_phase_index: number;
  end_timestamp: number;
  retry_on_failure_until: number;
}

export interface FirmwarePatch {
  is_deactivated?: boolean;
  uncompressed_size?: number;
  dependencies?: Dependency[];
}

/** Why a store operation failed; the server maps it to a DRF-shaped answer. */
export class StoreError extends Error {
  constructor(readonly kind: 'not-found' | 'ambiguous' | 'bad-index', message: string) {
    super(message);
    this.name = 'StoreError';
  }
}

type BundleRecord = Omit<BundleObject, 'firmwares'> & { firmwareKeys: string[] };

interface TenantState {
  name: string;
  apiKey: string;
  keyHash: Buffer;
  bundles: BundleRecord[];
  /** Keyed by component + NUL + version_number: the identity of a firmware record. */
  firmwares: Map<string, FirmwareObject>;
  /** The same records by version_number (records are only ever added while seeding). */
  byVersion: Map<string, FirmwareObject[]>;
  actions: Map<number, ActionObject>;
}

function hex(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex');
}

/** A UUID (version 4 layout) derived from a hash, so fill-ins are the same on every start. */
export function derivedUuid(...parts: string[]): string {
  const h = hex('uuid', ...parts);
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

function derivedInt(min: number, span: number, ...parts: string[]): number {
  return min + (parseInt(hex('int', ...parts).slice(0, 8), 16) % span);
}

function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, '_');
}

const EPOCH_2024 = Date.UTC(2024, 0, 1);
const DAY = 86_400_000;
/** Fixed action deadlines (2030-01-01 and a day later), in unix seconds. */
const DEFAULT_END = 1_893_456_000;

function firstUntriggered(triggered: readonly boolean[]): number {
  const i = triggered.indexOf(false);
  return i === -1 ? triggered.length : i;
}

function fillFirmware(tenant: string, f: SeedFirmware): FirmwareObject {
  const id = [tenant, f.component_name, f.version_number];
  const size = f.uncompressed_size ?? derivedInt(100_000, 9_900_000, 'size', ...id);
  return {
    firmware_id: f.firmware_id ?? derivedUuid('firmware', ...id),
    version_number: f.version_number,
    component_name: f.component_name,
    file_name: f.file_name ?? `${safeName(f.component_name)}-${safeName(f.version_number)}.bin`,
    uncompressed_size: size,
    content_length: f.content_length ?? Math.max(1, Math.floor(size * 0.6)),
    checksum: f.checksum ?? hex('checksum', ...id),
    is_deactivated: f.is_deactivated ?? false,
    dependencies: (f.dependencies ?? []).map((d) => ({ component_name: d.component_name, min_version: d.min_version })),
  };
}

function fillBundle(tenant: string, b: SeedBundle, firmwares: readonly FirmwareObject[]): BundleRecord {
  const size = b.uncompressed_size ?? firmwares.reduce((n, f) => n + f.content_length, 4096);
  const created = EPOCH_2024 + derivedInt(0, 365, 'created', tenant, b.version) * DAY;
  return {
    id: b.id ?? derivedUuid('bundle', tenant, b.version),
    version: b.version,
    file_name: b.file_name ?? `bundle-${safeName(b.version)}.tar.gz`,
    uncompressed_size: size,
    content_length: b.content_length ?? Math.max(1, Math.floor(size * 0.5)),
    checksum: b.checksum ?? hex('checksum', tenant, 'bundle', b.version),
    created_by: b.created_by ?? 'release-bot@example.com',
    created_at: b.created_at ?? new Date(created).toISOString().replace('.000Z', 'Z'),
    firmwareKeys: firmwares.map(firmwareKey),
  };
}

function fillPhase(p: SeedPhase): PhaseObject {
  return { name: p.name, trigger_on: { ...(p.trigger_on ?? {}) }, info: { ...(p.info ?? {}) } };
}

function fillAction(tenant: string, a: SeedAction): ActionObject {
  const phases = (a.phases ?? []).map(fillPhase);
  const triggered = a.phases_triggered ? [...a.phases_triggered] : phases.map(() => false);
  const end = a.end_timestamp ?? DEFAULT_END;
  return {
    id: a.id,
    tenant_id: a.tenant_id ?? tenant,
    status: a.status ?? 'pending',
    release_notes: a.release_notes ?? '',
    phases,
    phases_triggered: triggered,
    next_phase_index: a.next_phase_index ?? firstUntriggered(triggered),
    end_timestamp: end,
    retry_on_failure_until: a.retry_on_failure_until ?? end + 86_400,
  };
}

function firmwareKey(f: Pick<FirmwareObject, 'component_name' | 'version_number'>): string {
  return `${f.component_name}\0${f.version_number}`;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A firmware listed again in another bundle must not contradict the first listing. */
function mergeFirmware(existing: FirmwareObject, again: SeedFirmware, path: (string | number)[]): void {
  for (const [k, v] of Object.entries(again)) {
    if (v === undefined) continue;
    if (!sameJson(existing[k as keyof FirmwareObject], v)) {
      throw new SeedProblem([...path, k], `differs from the same firmware (${existing.component_name} ${existing.version_number}) listed in an earlier bundle`);
    }
  }
}

function buildTenant(name: string, t: Seed['tenants'][string]): TenantState {
  const firmwares = new Map<string, FirmwareObject>();
  const bundles: BundleRecord[] = [];
  (t.bundles ?? []).forEach((b, bi) => {
    const members: FirmwareObject[] = [];
    (b.firmwares ?? []).forEach((f, fi) => {
      const key = firmwareKey(f);
      const existing = firmwares.get(key);
      if (existing) {
        mergeFirmware(existing, f, ['tenants', name, 'bundles', bi, 'firmwares', fi]);
        members.push(existing);
      } else {
        const rec = fillFirmware(name, f);
        firmwares.set(key, rec);
        members.push(rec);
      }
    });
    bundles.push(fillBundle(name, b, members));
  });
  const byVersion = new Map<string, FirmwareObject[]>();
  for (const f of firmwares.values()) {
    const list = byVersion.get(f.version_number);
    if (list) list.push(f);
    else byVersion.set(f.version_number, [f]);
  }
  const actions = new Map<number, ActionObject>();
  for (const a of t.actions ?? []) actions.set(a.id, fillAction(name, a));
  return { name, apiKey: t.api_key, keyHash: createHash('sha256').update(t.api_key).digest(), bundles, firmwares, byVersion, actions };
}

const clone = <T>(v: T): T => structuredClone(v);

export class EmulatorStore {
  private readonly tenants = new Map<string, TenantState>();
  /** Called after every change (HTTP or direct), before the change is answered. */
  onWrite: (() => void) | undefined;
  /** When each phase appended since start was stored (ms, performance.now), per tenant/action: for read lag. */
  private readonly appendedAt = new Map<string, number[]>();
  /**
   * The service's rollout, on a clock tests control: a phase appended while this is set is marked
   * triggered once `now()` has passed its append time by `triggerAfterMs` (checked on every read).
   */
  phaseClock: { triggerAfterMs: number; now: () => number } | undefined;
  /** tenant NUL action id → phase index → when it triggers (phaseClock's time). */
  private readonly triggerDue = new Map<string, Map<number, number>>();

  /** Validates and fills a seed; throws SeedProblem on the first problem. */
  constructor(seed: Seed) {
    const valid = validateSeed(seed);
    for (const [name, t] of Object.entries(valid.tenants)) this.tenants.set(name, buildTenant(name, t));
  }

  tenantNames(): string[] {
    return [...this.tenants.keys()];
  }

  hasTenant(tenant: string): boolean {
    return this.tenants.has(tenant);
  }

  /** Every tenant's key: the request log hides them. */
  apiKeys(): string[] {
    return [...this.tenants.values()].map((t) => t.apiKey);
  }

  /** The tenant that owns this key, comparing hashes in constant time against every key. */
  tenantForKey(key: string): string | undefined {
    const given = createHash('sha256').update(key).digest();
    let found: string | undefined;
    for (const t of this.tenants.values()) {
      if (timingSafeEqual(given, t.keyHash) && found === undefined) found = t.name;
    }
    return found;
  }

  /** The bundles in list order; `start`/`end` as in Array.slice (a page copies only its own). */
  listBundles(tenant: string, start?: number, end?: number): BundleObject[] {
    const t = this.tenant(tenant);
    return t.bundles.slice(start, end).map((b) => this.materialize(t, b));
  }

  bundleCount(tenant: string): number {
    return this.tenant(tenant).bundles.length;
  }

  getBundle(tenant: string, version: string): BundleObject | undefined {
    const t = this.tenant(tenant);
    const b = t.bundles.find((x) => x.version === version);
    return b ? this.materialize(t, b) : undefined;
  }

  /** Every firmware record of the tenant with this version number (one per component). */
  firmwaresByVersion(tenant: string, versionNumber: string): FirmwareObject[] {
    return (this.tenant(tenant).byVersion.get(versionNumber) ?? []).map(clone);
  }

  /** Changes the one record with this version number; fields the patch omits are kept. */
  updateFirmware(tenant: string, versionNumber: string, patch: FirmwarePatch): FirmwareObject {
    const matches = this.tenant(tenant).byVersion.get(versionNumber) ?? [];
    if (matches.length === 0) throw new StoreError('not-found', 'Not found.');
    if (matches.length > 1) {
      const components = matches.map((f) => f.component_name).sort().join(', ');
      throw new StoreError('ambiguous', `Version number "${versionNumber}" matches firmwares of several components (${components}); it cannot be updated by version number.`);
    }
    const rec = matches[0]!;
    if (patch.is_deactivated !== undefined) rec.is_deactivated = patch.is_deactivated;
    if (patch.uncompressed_size !== undefined) rec.uncompressed_size = patch.uncompressed_size;
    if (patch.dependencies !== undefined) rec.dependencies = clone(patch.dependencies);
    this.changed();
    return clone(rec);
  }

  getAction(tenant: string, id: number): ActionObject | undefined {
    this.runDueTriggers();
    const a = this.tenant(tenant).actions.get(id);
    return a ? clone(a) : undefined;
  }

  /** The action as a reader lagging behind the writer sees it: phases appended after `cutoff` are not there yet. */
  getActionAsOf(tenant: string, id: number, cutoff: number): ActionObject | undefined {
    const a = this.getAction(tenant, id);
    if (!a) return undefined;
    const times = this.appendedAt.get(`${tenant}\0${id}`) ?? [];
    const hidden = times.filter((t) => t > cutoff).length;
    if (hidden === 0) return a;
    const keep = a.phases.length - hidden;
    a.phases = a.phases.slice(0, keep);
    a.phases_triggered = a.phases_triggered.slice(0, keep);
    a.next_phase_index = firstUntriggered(a.phases_triggered);
    return a;
  }

  /** Appends an untriggered phase; next_phase_index becomes the first untriggered phase. */
  appendPhase(tenant: string, id: number, phase: SeedPhase): ActionObject {
    const a = this.action(tenant, id);
    a.phases.push(fillPhase(phase));
    a.phases_triggered.push(false);
    const key = `${tenant}\0${id}`;
    const times = this.appendedAt.get(key);
    if (times) times.push(performance.now());
    else this.appendedAt.set(key, [performance.now()]);
    a.next_phase_index = firstUntriggered(a.phases_triggered);
    if (this.phaseClock) {
      const due = this.triggerDue.get(key) ?? new Map<number, number>();
      due.set(a.phases.length - 1, this.phaseClock.now() + this.phaseClock.triggerAfterMs);
      this.triggerDue.set(key, due);
    }
    this.changed();
    return clone(a);
  }

  /** Marks the phases whose time has come (phaseClock) triggered. */
  runDueTriggers(): void {
    if (!this.phaseClock || this.triggerDue.size === 0) return;
    const now = this.phaseClock.now();
    let changed = false;
    for (const [key, due] of this.triggerDue) {
      const [tenant, id] = key.split('\0') as [string, string];
      const a = this.tenants.get(tenant)?.actions.get(Number(id));
      for (const [index, at] of due) {
        if (at > now) continue;
        due.delete(index);
        if (a && index < a.phases_triggered.length && !a.phases_triggered[index]) {
          a.phases_triggered[index] = true;
          a.next_phase_index = firstUntriggered(a.phases_triggered);
          changed = true;
        }
      }
      if (due.size === 0) this.triggerDue.delete(key);
    }
    if (changed) this.changed();
  }

  /** Replaces the phase at an index (tests plant conflicts with it). */
  setPhase(tenant: string, id: number, index: number, phase: SeedPhase): ActionObject {
    const a = this.action(tenant, id);
    if (!Number.isInteger(index) || index < 0 || index >= a.phases.length) throw new StoreError('bad-index', `action ${id} has no phase ${index}`);
    a.phases[index] = fillPhase(phase);
    this.changed();
    return clone(a);
  }

  /** Marks a phase triggered, as the service does when a rollout phase starts. */
  triggerPhase(tenant: string, id: number, index: number): ActionObject {
    const a = this.action(tenant, id);
    if (!Number.isInteger(index) || index < 0 || index >= a.phases.length) throw new StoreError('bad-index', `action ${id} has no phase ${index}`);
    a.phases_triggered[index] = true;
    a.next_phase_index = firstUntriggered(a.phases_triggered);
    this.changed();
    return clone(a);
  }

  /** The whole state as a seed with every field filled in: loading it gives the same state. */
  snapshot(): Seed {
    const tenants: Seed['tenants'] = {};
    for (const t of this.tenants.values()) {
      tenants[t.name] = {
        api_key: t.apiKey,
        bundles: this.listBundles(t.name),
        actions: [...t.actions.values()].map(clone),
      };
    }
    return { tenants };
  }

  private changed(): void {
    this.onWrite?.();
  }

  private tenant(name: string): TenantState {
    const t = this.tenants.get(name);
    if (!t) throw new StoreError('not-found', `no tenant "${name}"`);
    return t;
  }

  private action(tenant: string, id: number): ActionObject {
    const a = this.tenant(tenant).actions.get(id);
    if (!a) throw new StoreError('not-found', 'Not found.');
    return a;
  }

  private materialize(t: TenantState, b: BundleRecord): BundleObject {
    const { firmwareKeys, ...rest } = b;
    return clone({ ...rest, firmwares: firmwareKeys.map((k) => t.firmwares.get(k)!) });
  }
}
