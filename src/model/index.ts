// The vocabulary of dus-sync: desired / live / plan / change / conflict / apply.
// Plain readonly data only; document and API shapes come from schemas/ (schema.gen.ts).
import type {
  Action as ApiAction,
  Config,
  Dependency,
  FirmwareSpec,
  FirmwareUpdate,
} from './schema.gen.js';

export type * from './schema.gen.js';

export type JsonObject = { [key: string]: unknown };

/** Where a document (or a value inside it) was written. Lines and columns are 1-based. */
export interface SourceLocation {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

// ---------------------------------------------------------------- desired

/** A phase as the desired state holds it: trigger_on and info default to {}. */
export interface PhaseSpec {
  readonly name: string;
  readonly trigger_on: JsonObject;
  readonly info: JsonObject;
}

export interface DesiredFirmware {
  readonly kind: 'firmware';
  readonly tenant: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly source: SourceLocation;
  readonly spec: Readonly<FirmwareSpec>;
}

export interface DesiredAction {
  readonly kind: 'action';
  readonly tenant: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly source: SourceLocation;
  readonly id: number;
  readonly phases: readonly PhaseSpec[];
  /** Where each phase was written (same order as phases), when known: conflicts and appends point there. */
  readonly phaseSources?: readonly SourceLocation[];
  /** spec.paused: no phase is appended while true (docs/rollout-control.md). */
  readonly paused?: boolean;
  /** spec.pacing: `all` (the default) appends every missing phase; `gated` one at a time, after the previous triggered. */
  readonly pacing?: 'all' | 'gated';
  /** spec.min_soak in milliseconds: with gated pacing, how long the previous phase must have been seen triggered. */
  readonly minSoakMs?: number;
}

export type DesiredObject = DesiredFirmware | DesiredAction;

export interface DesiredState {
  readonly firmwares: readonly DesiredFirmware[];
  readonly actions: readonly DesiredAction[];
  /** Every file that was read (relative to the config folder), sorted. */
  readonly files: readonly string[];
}

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

/** The config after files, flags and environment are merged. Never holds a key. */
export interface ResolvedConfig {
  /** Absolute path of the config file, when there is one. */
  readonly file?: string;
  /** Absolute folder that resources are relative to. */
  readonly dir: string;
  readonly baseUrl?: string;
  readonly defaultTenant?: string;
  /** Where each tenant's key comes from. A tenant without an entry uses DUS_API_KEY. */
  readonly tenants: Readonly<Record<string, { readonly apiKeyEnv?: string; readonly apiKeyFile?: string; readonly tenantId?: string }>>;
  readonly resources?: readonly string[];
  readonly safety: Readonly<SafetyLimits>;
  /** watch.interval in milliseconds (default 5 minutes). */
  readonly watchIntervalMs: number;
  /** watch.log_format and watch.log_level, when set. */
  readonly watchLog?: { readonly format?: 'json' | 'pretty'; readonly level?: LogLevel };
  readonly suspend: boolean;
  /** windows: the sync windows, in the config's order; absent when there are none. */
  readonly windows?: readonly SyncWindow[];
  /** How desired-state files are read (--max-file-size, --follow-external-symlinks); absent: the defaults. */
  readonly reading?: Readonly<ReadPolicy>;
  /** api.max_response_size and api.request_timeout, read and bounded; flags override them. */
  readonly api?: Readonly<ApiLimits>;
  /** The raw document, for tools that need to echo it. */
  readonly raw?: Readonly<Config>;
}

/** A sync window of the config (docs/rollout-control.md), durations in milliseconds. */
export interface SyncWindow {
  readonly name: string;
  readonly kind: 'allow' | 'deny';
  /** A cron expression: when the window opens. */
  readonly schedule: string;
  readonly durationMs: number;
  /** IANA time zone of the schedule; UTC when absent. */
  readonly timezone?: string;
  /** The tenants it applies to; all when absent. */
  readonly tenants?: readonly string[];
  /** Where each of `tenants` was written in dus-sync.yaml (for the check that each names a tenant). */
  readonly tenantsAt?: readonly SourceLocation[];
  /** The kinds of objects it applies to; both when absent. */
  readonly kinds?: readonly ('firmware' | 'action')[];
}

export interface ReadPolicy {
  /** Desired-state files larger than this many bytes are refused. */
  readonly maxFileBytes: number;
  /** Follow symbolic links that resolve outside the config's folder. */
  readonly followExternalSymlinks: boolean;
}

export interface ApiLimits {
  readonly maxResponseBytes?: number;
  readonly requestTimeoutMs?: number;
  /** Reading the whole live state of a run (api.fetch_timeout, --fetch-timeout). */
  readonly fetchTimeoutMs?: number;
}

export interface SafetyLimits {
  readonly maxChanges?: number;
  readonly maxDeactivations?: number;
  /** safety.settle_window in milliseconds, when set. */
  readonly settleWindowMs?: number;
}

// ---------------------------------------------------------------- live

/** One firmware record as read live (the same firmware in several bundles is one record). */
export interface LiveFirmware {
  readonly version_number: string;
  readonly component_name: string;
  readonly firmware_id: string | null;
  readonly is_deactivated: boolean | null;
  readonly uncompressed_size: number | null;
  readonly dependencies: readonly Dependency[];
  /** Versions of the bundles the record appears in, sorted. */
  readonly bundles: readonly string[];
}

export interface LiveTenant {
  /** version_number → the records with that number, one per component (more than one is ambiguous). */
  readonly firmwares: ReadonlyMap<string, readonly LiveFirmware[]>;
  /** action id → the action, or null when the API said 404. Only the declared actions are read. */
  readonly actions: ReadonlyMap<number, ApiAction | null>;
  /** action id → why its answer was not used (it was not the object asked for); planned as an error. */
  readonly actionErrors?: ReadonlyMap<number, string>;
}

export interface LiveState {
  readonly tenants: ReadonlyMap<string, LiveTenant>;
}

// ---------------------------------------------------------------- plan

/** The managed firmware fields. */
export interface FirmwareFields {
  is_deactivated?: boolean;
  uncompressed_size?: number;
  dependencies?: Dependency[];
}

export interface FirmwareChange {
  readonly tenant: string;
  readonly kind: 'firmware';
  readonly op: 'update';
  /** The version_number. */
  readonly key: string;
  readonly component_name: string;
  /** Only the fields that change, as live has them. */
  readonly before: FirmwareFields;
  /** Only the fields that change, as desired. */
  readonly after: FirmwareFields;
  /** The full PUT body: managed fields from desired, the rest as read live. */
  readonly body: FirmwareUpdate;
  readonly source?: SourceLocation;
}

export interface PhaseChange {
  readonly tenant: string;
  readonly kind: 'phase';
  readonly op: 'append';
  /** The action id, as a string (plan JSON keys are strings). */
  readonly key: string;
  readonly action_id: number;
  /** 0-based index the phase will have in the action's list. */
  readonly index: number;
  readonly after: PhaseSpec;
  readonly source?: SourceLocation;
}

export type Change = FirmwareChange | PhaseChange;

export interface Conflict {
  readonly tenant: string;
  readonly kind: 'action';
  readonly key: string;
  readonly message: string;
  readonly index?: number;
  readonly source?: SourceLocation;
}

export interface PlanError {
  readonly tenant: string;
  readonly kind: 'firmware' | 'action';
  readonly key: string;
  readonly message: string;
  readonly source?: SourceLocation;
}

/** Why writes that differ are not planned now (docs/rollout-control.md). */
export type HoldReason = 'paused' | 'gated' | 'window';

/** An object whose writes are held back: they are not in changes, and it is not unchanged. */
export interface Held {
  readonly tenant: string;
  readonly kind: 'firmware' | 'action';
  readonly key: string;
  readonly reason: HoldReason;
  /** One sentence: what waits and why. */
  readonly message: string;
  /** How many writes wait (phase appends of an action, 1 for a firmware). */
  readonly pending: number;
  /** The index of the first phase that waits (actions). */
  readonly index?: number;
  /** The sync window that holds it (reason window). */
  readonly window?: string;
  /** ISO 8601: when the hold ends at the earliest, where that is known. */
  readonly until?: string;
  readonly source?: SourceLocation;
}

/** A deactivation let through with --allow-broken-dependencies: the dependency it leaves unsatisfied. */
export interface BrokenDependency {
  readonly tenant: string;
  /** The firmware deactivated (its version_number). */
  readonly key: string;
  /** The active firmware whose dependency breaks, and the dependency. */
  readonly dependent: string;
  readonly component_name: string;
  readonly min_version: string;
}

export interface PlanSummary {
  readonly changes: number;
  readonly conflicts: number;
  readonly errors: number;
  readonly unchanged: number;
  /** Unchanged objects per tenant (every tenant with a desired object in scope), for per-tenant tables. */
  readonly unchanged_by_tenant?: Readonly<Record<string, number>>;
  /** Objects held (paused, gated, outside a sync window); there only when some are. */
  readonly held?: number;
}

export interface Plan {
  readonly format_version: 1;
  readonly changes: readonly Change[];
  readonly conflicts: readonly Conflict[];
  readonly errors: readonly PlanError[];
  readonly summary: PlanSummary;
  /** Writes held back (docs/rollout-control.md); there only when some are. */
  readonly held?: readonly Held[];
  /** Dependencies deactivations break, let through with --allow-broken-dependencies; there only when some are. */
  readonly broken_dependencies?: readonly BrokenDependency[];
}

/** The git commit the desired state was read at, and whether files below the config's folder differed from it. */
export interface DesiredRevision {
  readonly commit: string;
  readonly dirty: boolean;
}

/** A plan saved with `plan --out`: enough of the live state to refuse it once live has moved. */
export interface SavedPlan extends Plan {
  readonly tool_version: string;
  readonly created_at: string;
  /** sha256 of the canonical desired state the plan was computed from. */
  readonly desired_digest: string;
  /** sha256 of the canonical managed live fields of every live object the plan read. */
  readonly live_fingerprints: readonly LiveFingerprint[];
  /** The desired state's git revision (absent outside git and in plans of older versions). */
  readonly desired_revision?: DesiredRevision;
}

export interface LiveFingerprint {
  readonly tenant: string;
  readonly kind: 'firmware' | 'action';
  readonly key: string;
  readonly digest: string;
}

// ---------------------------------------------------------------- apply

export type ChangeStatus = 'applied' | 'failed' | 'skipped';

export interface ChangeResult {
  readonly change: Change;
  readonly status: ChangeStatus;
  /** One sentence; never holds a key. */
  readonly message?: string;
  readonly durationMs: number;
  /** A failed append whose outcome is not known yet: the journal keeps it, and a later run settles it (applied, or sent again). */
  readonly inDoubt?: true;
}

export interface ApplyReport {
  readonly results: readonly ChangeResult[];
  readonly applied: number;
  readonly failed: number;
  readonly skipped: number;
  /** Objects that still differ after the re-fetch ("tenant kind key: why"). */
  readonly unconverged: readonly string[];
  /**
   * Actions whose live phases are no longer the YAML's first ones after this apply (a phase
   * twice, a foreign phase): another actor wrote at the same time. One sentence each; a failure.
   */
  readonly diverged: readonly string[];
  /**
   * The objects (src/apply/verify.ts objectId) every change of which was applied and which the
   * read after the apply shows as written. Absent when no such read was made (nothing applied,
   * or the read failed): then no object is known to be in sync.
   */
  readonly verified?: readonly string[];
}

// ---------------------------------------------------------------- edges

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** A clock that is never stepped (CLOCK_MONOTONIC, ms), where there is one: measures waits across runs of one boot. */
  monotonic?(): number;
}
