// The per-document checks and the building of desired objects, shared by the yaml path
// (positions from nodes) and the fast path (positions found in the text).
import type { Document } from 'yaml';
import type { ConfigIssue } from '../errors.js';
import type { ActionSpec, DesiredAction, DesiredFirmware, DesiredObject, FirmwareSpec, JsonObject, PhaseSpec, ResolvedConfig, SourceLocation } from '../model/index.js';
import { parseDurationMs } from '../limits.js';
import { REDACTED } from '../redact.js';
import { intern, internDependencies, NO_DEPENDENCIES } from '../intern.js';
import { hint } from './did-you-mean.js';
import { issueAt, locate, offsetOf, type YamlSource } from './yaml-source.js';

/** What identifies a document (kind, tenant, key) and where the key was written. */
export interface Identity {
  readonly kind: 'firmware' | 'action';
  readonly tenant: string;
  readonly key: string;
  readonly location: SourceLocation;
  readonly pointer: string;
}


/**
 * A document whose identity could be read, as the loader keeps it: the identity is built when
 * asked for, from the object (or, for an invalid document, the few fields kept for it) and the
 * key's line and column. 200,000 documents kept by watch held an Identity and a location each
 * besides the document: 22 MB.
 */
export class IdentifiedDocument {
  private readonly keyLine: number;
  private readonly keyColumn: number;
  /** kind, tenant and key, kept only when no object carries them (an invalid document). */
  private readonly loose: Pick<Identity, 'kind' | 'tenant' | 'key'> | undefined;

  constructor(
    /** 0-based index among the file's non-empty documents. */
    readonly index: number,
    /** Where the document starts. */
    readonly source: SourceLocation,
    identity: Identity,
    /** Present only when the document is entirely valid; made from `identity`. */
    readonly object: DesiredObject | undefined,
  ) {
    this.keyLine = identity.location.line;
    this.keyColumn = identity.location.column;
    this.loose = object === undefined || identity.location.file !== source.file || !agrees(object, identity)
      ? { kind: identity.kind, tenant: identity.tenant, key: identity.key } : undefined;
  }

  get identity(): Identity {
    const o = this.object;
    const { kind, tenant, key } = this.loose ?? { kind: o!.kind, tenant: o!.tenant, key: o!.kind === 'firmware' ? o!.spec.version_number : String(o!.id) };
    return { kind, tenant, key, location: { file: this.source.file, line: this.keyLine, column: this.keyColumn }, pointer: kind === 'firmware' ? '/spec/version_number' : '/spec/id' };
  }
}

function agrees(o: DesiredObject, id: Identity): boolean {
  return o.kind === id.kind && o.tenant === id.tenant && (o.kind === 'firmware' ? o.spec.version_number === id.key : String(o.id) === id.key);
}

export function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------- semantic checks

interface Semantic {
  readonly issues: ConfigIssue[];
  readonly identity?: Identity;
}

/** Where a path of the document was written: its value, or its key when `key` is set. */
export type Position = (path: readonly string[], key: boolean) => SourceLocation;

export function yamlPosition(src: YamlSource, doc: Document.Parsed): Position {
  return (path, key) => {
    const l = locate(doc, path);
    const node = key ? (l.key ?? l.nearest) : (l.value ?? l.key ?? l.nearest);
    const { file, line, column } = issueAt(src.file, src.lineCounter, offsetOf(node), '', '');
    return { file, line, column };
  };
}

/**
 * The checks of SPEC section 1 that a schema cannot express. Defensive: the document may be
 * schema-invalid. Exported for the fast path, which gives up on any issue.
 */
/** The tenants the config lists, per config: every document asked for them (an array per document). */
const KNOWN = new WeakMap<ResolvedConfig, readonly string[]>();

function knownTenants(config: ResolvedConfig): readonly string[] {
  let known = KNOWN.get(config);
  if (known === undefined) KNOWN.set(config, known = Object.keys(config.tenants));
  return known;
}

/**
 * Whether a document of this text can hold the placeholder: its letters, or a backslash (a
 * double-quoted YAML string can spell any character with an escape, or join lines). Plain,
 * single-quoted and block scalars and keys hold only what is written. Most files hold neither,
 * and then no document of theirs is walked for it.
 */
export function mayHoldPlaceholder(text: string): boolean {
  return text.includes('\\') || text.includes('REDACTED');
}

export function semanticChecks(value: JsonObject, config: ResolvedConfig, position: Position, placeholderPossible = true): Semantic {
  const issues: ConfigIssue[] = [];
  const at = (path: string[], pointer: string, message: string, key = false) => {
    issues.push({ ...position(path, key), pointer, message });
  };

  const metadata = isPlainObject(value.metadata) ? value.metadata : undefined;
  const declared = typeof metadata?.tenant === 'string' ? metadata.tenant : undefined;
  const tenant = declared ?? config.defaultTenant;
  const known = knownTenants(config);
  if (tenant === undefined) {
    at(metadata ? ['metadata'] : [], '/metadata/tenant', 'no tenant: set metadata.tenant, or default_tenant in dus-sync.yaml (or the DUS_TENANT environment variable)', true);
  } else if (declared !== undefined && known.length > 0 && !known.includes(declared)) {
    at(['metadata', 'tenant'], '/metadata/tenant', `unknown tenant "${declared}": dus-sync.yaml lists ${known.map((k) => `"${k}"`).join(', ')}${hint(declared, known)}`);
  }

  const spec = isPlainObject(value.spec) ? value.spec : undefined;
  if (value.kind === 'Firmware' && spec && Array.isArray(spec.dependencies)) {
    const first = new Map<string, number>();
    spec.dependencies.forEach((d: unknown, i) => {
      const name = isPlainObject(d) && typeof d.component_name === 'string' ? d.component_name : undefined;
      if (name === undefined) return;
      const prev = first.get(name);
      if (prev === undefined) first.set(name, i);
      else {
        const line = position(['spec', 'dependencies', String(prev), 'component_name'], false).line;
        at(['spec', 'dependencies', String(i), 'component_name'], `/spec/dependencies/${i}/component_name`,
          `the dependency on "${name}" is listed twice (first at line ${line}); keep one entry per component`);
      }
    });
  }

  if (value.kind === 'Action' && spec && typeof spec.min_soak === 'string') {
    const soak = parseDurationMs(spec.min_soak);
    if (soak !== undefined && !(soak <= MAX_MIN_SOAK_MS)) {
      at(['spec', 'min_soak'], '/spec/min_soak', `spec.min_soak takes at most 8760h (a year), not "${spec.min_soak}"`);
    }
    if (spec.pacing !== 'gated') {
      at(['spec', 'min_soak'], '/spec/min_soak', 'spec.min_soak has no effect without pacing: gated; add `pacing: gated` to soak each phase, or remove min_soak');
    }
  }

  if (spec && placeholderPossible && hasPlaceholder(spec)) {
    for (const { path, key } of placeholders(spec, ['spec'])) {
      at(path, `/${path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`, PLACEHOLDER_MESSAGE, key);
    }
  }

  let identity: Identity | undefined;
  if (tenant !== undefined && spec) {
    const kind = value.kind === 'Firmware' ? 'firmware' : value.kind === 'Action' ? 'action' : undefined;
    const field = kind === 'firmware' ? 'version_number' : 'id';
    const raw = spec[field];
    const key = kind === 'firmware' && typeof raw === 'string' && raw !== '' ? raw
      : kind === 'action' && typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= 0 ? String(raw) : undefined;
    if (kind && key !== undefined) {
      // Interned and constant strings: 200,000 identities kept by watch held 200,000 copies of each.
      identity = { kind, tenant: intern(tenant), key, location: position(['spec', field], false), pointer: kind === 'firmware' ? '/spec/version_number' : '/spec/id' };
    }
  }
  return { issues, identity };
}

/** The longest spec.min_soak: a year. Longer is a mistake, and its end would not be a date. */
export const MAX_MIN_SOAK_MS = 8760 * 3_600_000;

const PLACEHOLDER_MESSAGE = `the placeholder ${REDACTED} is here: dus-sync export writes it where the live data held an API key, `
  + 'and applying it would write the placeholder itself; write the value that belongs here, or leave this field out';

/**
 * Where a value (or an object key) holds the placeholder that export writes in place of an API
 * key. Such a document must not be planned: plan compares real values, so it would see a
 * difference and apply would write "[REDACTED]" over the live value.
 */
function hasPlaceholder(value: unknown): boolean {
  if (typeof value === 'string') return value.includes(REDACTED);
  if (Array.isArray(value)) return value.some(hasPlaceholder);
  if (!isPlainObject(value)) return false;
  for (const k in value) if (k.includes(REDACTED) || hasPlaceholder(value[k])) return true;
  return false;
}

function placeholders(value: unknown, path: string[]): { path: string[]; key: boolean }[] {
  if (typeof value === 'string') return value.includes(REDACTED) ? [{ path, key: false }] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => placeholders(v, [...path, String(i)]));
  if (!isPlainObject(value)) return [];
  return Object.entries(value).flatMap(([k, v]) => [
    ...(k.includes(REDACTED) ? [{ path: [...path, k], key: true }] : []),
    ...placeholders(v, [...path, k]),
  ]);
}

// ---------------------------------------------------------------- building objects

/** No labels (most documents): one shared empty record, never written to (DesiredObject is readonly). */
const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

function stringRecord(v: unknown): Readonly<Record<string, string>> {
  if (!isPlainObject(v)) return NO_LABELS;
  let out: Record<string, string> | undefined;
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    const s = v[k];
    if (typeof s === 'string') (out ??= {})[k] = s;
  }
  return out ?? NO_LABELS;
}

/**
 * A fresh object with the schema's fields only: nothing from the YAML is passed through blindly.
 * `position` gives where each phase was written (an action's conflicts and appends point there).
 */
export function buildObject(value: JsonObject, tenant: string, source: SourceLocation, position: Position): DesiredObject {
  const labels = stringRecord(isPlainObject(value.metadata) ? value.metadata.labels : undefined);
  const spec = value.spec as JsonObject;
  if (value.kind === 'Firmware') {
    const s = spec as unknown as FirmwareSpec;
    const dependencies = s.dependencies === undefined ? undefined : s.dependencies.length === 0 ? NO_DEPENDENCIES as unknown as FirmwareSpec['dependencies']
      : internDependencies(s.dependencies.map((d) => ({ component_name: intern(d.component_name), min_version: intern(d.min_version) })));
    // The usual specs (every field present, bundle_version optional) as one literal: their fields
    // in the object itself, not in a property store added field by field (64 bytes more a record;
    // 12 MB of watch's heap at 200,000 documents without bundle_version). Same key order either way.
    const usual = s.component_name !== undefined && s.is_deactivated !== undefined && s.uncompressed_size !== undefined && dependencies !== undefined;
    const out: FirmwareSpec = !usual ? { version_number: s.version_number }
      : s.bundle_version !== undefined
        ? { version_number: s.version_number, component_name: intern(s.component_name!), bundle_version: s.bundle_version, is_deactivated: s.is_deactivated!, uncompressed_size: s.uncompressed_size!, dependencies: dependencies! }
        : { version_number: s.version_number, component_name: intern(s.component_name!), is_deactivated: s.is_deactivated!, uncompressed_size: s.uncompressed_size!, dependencies: dependencies! };
    if (out.component_name === undefined) {
      if (s.component_name !== undefined) out.component_name = intern(s.component_name);
      if (s.bundle_version !== undefined) out.bundle_version = s.bundle_version;
      if (s.is_deactivated !== undefined) out.is_deactivated = s.is_deactivated;
      if (s.uncompressed_size !== undefined) out.uncompressed_size = s.uncompressed_size;
      if (dependencies !== undefined) out.dependencies = dependencies;
    }
    const f: DesiredFirmware = { kind: 'firmware', tenant: intern(tenant), labels, source, spec: out };
    return f;
  }
  const phases = (spec.phases as JsonObject[]).map((p): PhaseSpec => ({
    name: p.name as string,
    trigger_on: (p.trigger_on as JsonObject | undefined) ?? {},
    info: (p.info as JsonObject | undefined) ?? {},
  }));
  const phaseSources = phases.map((_, i) => position(['spec', 'phases', String(i)], false));
  const control = spec as unknown as ActionSpec;
  const minSoakMs = control.min_soak !== undefined ? parseDurationMs(control.min_soak) : undefined;
  const a: DesiredAction = {
    kind: 'action', tenant: intern(tenant), labels, source, id: spec.id as number, phases, phaseSources,
    ...(control.paused === true ? { paused: true } : {}),
    ...(control.pacing !== undefined ? { pacing: control.pacing } : {}),
    ...(minSoakMs !== undefined ? { minSoakMs } : {}),
  };
  return a;
}

