// The seed format of the emulator (SPEC section 4) and its loader. The seed is user input,
// so every problem becomes one sentence naming the file, the line when known, and the field.
import { readRegularFile } from '../load/read-file.js';
import { MAX_FILE_SIZE } from '../limits.js';
import { LineCounter, parseDocument } from 'yaml';
import { UserError } from '../errors.js';

export interface SeedDependency { component_name: string; min_version: string }

export interface SeedFirmware {
  version_number: string;
  component_name: string;
  firmware_id?: string;
  file_name?: string;
  uncompressed_size?: number;
  content_length?: number;
  checksum?: string;
  is_deactivated?: boolean;
  dependencies?: SeedDependency[];
}

export interface SeedBundle {
  version: string;
  id?: string;
  file_name?: string;
  uncompressed_size?: number;
  content_length?: number;
  checksum?: string;
  created_by?: string;
  created_at?: string;
  firmwares?: SeedFirmware[];
}

export interface SeedPhase {
  name: string;
  trigger_on?: Record<string, unknown>;
  info?: Record<string, unknown>;
}

export interface SeedAction {
  id: number;
  tenant_id?: string;
  status?: string;
  release_notes?: string;
  phases?: SeedPhase[];
  phases_triggered?: boolean[];
  next_phase_index?: number;
  end_timestamp?: number;
  retry_on_failure_until?: number;
}

export interface SeedTenant {
  api_key: string;
  bundles?: SeedBundle[];
  actions?: SeedAction[];
}

export type Seed = { tenants: Record<string, SeedTenant> };

/** A seed problem at a path inside the seed (e.g. ['tenants', 'acme', 'bundles', 0, 'version']). */
export class SeedProblem extends Error {
  constructor(readonly path: readonly (string | number)[], message: string) {
    super(message);
    this.name = 'SeedProblem';
  }
}

export function pathText(path: readonly (string | number)[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : (out === '' ? p : `.${p}`);
  return out === '' ? 'the seed' : out;
}

/** Reads a YAML or JSON seed (or a data file, which has the same shape). Throws UserError. */
export function readSeedFile(file: string): { seed: unknown; lineOf: (path: readonly (string | number)[]) => number | undefined } {
  // A regular file, bounded while reading: --seed /dev/zero hung, and --data on it aborted.
  const read = readRegularFile(file, { maxBytes: MAX_FILE_SIZE.max });
  if (!read.ok) throw new UserError(`${file}: cannot read the seed: ${read.message.replace(/desired-state files are small, so this is probably not one: .*$/, 'this is not a seed').replace(/: remove it, or keep it out of the resources$/, '')}; check the --seed or --data path.`);
  const text = read.text;
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true });
  const first = doc.errors[0];
  if (first) {
    const line = first.linePos?.[0].line;
    throw new UserError(`${file}${line ? `:${line}` : ''}: the seed is not valid YAML or JSON: ${first.message.split('\n')[0]}`);
  }
  const lineOf = (path: readonly (string | number)[]): number | undefined => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined;
      if (node && Array.isArray(node.range)) return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  };
  return { seed: doc.toJS({ maxAliasCount: 100 }) as unknown, lineOf };
}

/** Loads, validates and returns a seed file; a malformed one is one UserError sentence. */
export function loadSeedFile(file: string): Seed {
  return useSeedFile(file, validateSeed);
}

/**
 * Reads a seed file and hands it to `use` (which may find deeper problems, like two
 * contradicting listings of one firmware); any SeedProblem becomes a UserError at file:line.
 */
export function useSeedFile<T>(file: string, use: (seed: Seed) => T): T {
  const { seed, lineOf } = readSeedFile(file);
  try {
    return use(validateSeed(seed));
  } catch (err) {
    if (err instanceof SeedProblem) {
      const line = lineOf(err.path);
      throw new UserError(`${file}${line ? `:${line}` : ''}: ${pathText(err.path)} ${err.message}; fix the seed and start again.`);
    }
    throw err;
  }
}

type Path = (string | number)[];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function onlyKeys(obj: Record<string, unknown>, allowed: readonly string[], path: Path): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) throw new SeedProblem([...path, k], `is not a known field (known: ${allowed.join(', ')})`);
  }
}

function str(obj: Record<string, unknown>, key: string, path: Path, required: boolean): void {
  const v = obj[key];
  if (v === undefined && !required) return;
  if (typeof v !== 'string' || (required && v === '')) throw new SeedProblem([...path, key], 'must be a non-empty string');
}

function int(obj: Record<string, unknown>, key: string, path: Path): void {
  const v = obj[key];
  if (v === undefined) return;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new SeedProblem([...path, key], 'must be a whole number of 0 or more');
}

function bool(obj: Record<string, unknown>, key: string, path: Path): void {
  const v = obj[key];
  if (v !== undefined && typeof v !== 'boolean') throw new SeedProblem([...path, key], 'must be true or false');
}

function list(obj: Record<string, unknown>, key: string, path: Path): unknown[] {
  const v = obj[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new SeedProblem([...path, key], 'must be a list');
  return v;
}

function dict(obj: Record<string, unknown>, key: string, path: Path): void {
  const v = obj[key];
  if (v !== undefined && v !== null && !isObject(v)) throw new SeedProblem([...path, key], 'must be a mapping');
}

const FIRMWARE_KEYS = ['version_number', 'component_name', 'firmware_id', 'file_name', 'uncompressed_size', 'content_length', 'checksum', 'is_deactivated', 'dependencies'] as const;
const BUNDLE_KEYS = ['version', 'id', 'file_name', 'uncompressed_size', 'content_length', 'checksum', 'created_by', 'created_at', 'firmwares'] as const;
const ACTION_KEYS = ['id', 'tenant_id', 'status', 'release_notes', 'phases', 'phases_triggered', 'next_phase_index', 'end_timestamp', 'retry_on_failure_until'] as const;

function checkDependency(v: unknown, path: Path): void {
  if (!isObject(v)) throw new SeedProblem(path, 'must be a mapping with component_name and min_version');
  onlyKeys(v, ['component_name', 'min_version'], path);
  str(v, 'component_name', path, true);
  str(v, 'min_version', path, true);
}

function checkFirmware(v: unknown, path: Path): void {
  if (!isObject(v)) throw new SeedProblem(path, 'must be a mapping');
  onlyKeys(v, FIRMWARE_KEYS, path);
  str(v, 'version_number', path, true);
  str(v, 'component_name', path, true);
  for (const k of ['firmware_id', 'file_name', 'checksum']) str(v, k, path, false);
  int(v, 'uncompressed_size', path);
  int(v, 'content_length', path);
  bool(v, 'is_deactivated', path);
  list(v, 'dependencies', path).forEach((d, i) => checkDependency(d, [...path, 'dependencies', i]));
}

function checkBundle(v: unknown, path: Path): void {
  if (!isObject(v)) throw new SeedProblem(path, 'must be a mapping');
  onlyKeys(v, BUNDLE_KEYS, path);
  str(v, 'version', path, true);
  for (const k of ['id', 'file_name', 'checksum', 'created_by', 'created_at']) str(v, k, path, false);
  if (typeof v.created_at === 'string' && Number.isNaN(Date.parse(v.created_at))) {
    throw new SeedProblem([...path, 'created_at'], 'must be an ISO 8601 date-time');
  }
  int(v, 'uncompressed_size', path);
  int(v, 'content_length', path);
  list(v, 'firmwares', path).forEach((f, i) => checkFirmware(f, [...path, 'firmwares', i]));
}

function checkPhase(v: unknown, path: Path): void {
  if (!isObject(v)) throw new SeedProblem(path, 'must be a mapping with a name');
  onlyKeys(v, ['name', 'trigger_on', 'info'], path);
  str(v, 'name', path, true);
  dict(v, 'trigger_on', path);
  dict(v, 'info', path);
}

function checkAction(v: unknown, path: Path): void {
  if (!isObject(v)) throw new SeedProblem(path, 'must be a mapping');
  onlyKeys(v, ACTION_KEYS, path);
  if (typeof v.id !== 'number' || !Number.isSafeInteger(v.id) || v.id < 0) throw new SeedProblem([...path, 'id'], 'must be a whole number of 0 or more');
  for (const k of ['tenant_id', 'status', 'release_notes']) str(v, k, path, false);
  for (const k of ['next_phase_index', 'end_timestamp', 'retry_on_failure_until']) int(v, k, path);
  const phases = list(v, 'phases', path);
  phases.forEach((p, i) => checkPhase(p, [...path, 'phases', i]));
  const triggered = list(v, 'phases_triggered', path);
  triggered.forEach((t, i) => { if (typeof t !== 'boolean') throw new SeedProblem([...path, 'phases_triggered', i], 'must be true or false'); });
  if (v.phases_triggered !== undefined && triggered.length !== phases.length) {
    throw new SeedProblem([...path, 'phases_triggered'], `has ${triggered.length} entries but the action has ${phases.length} phases`);
  }
  if (typeof v.next_phase_index === 'number' && v.next_phase_index > phases.length) {
    throw new SeedProblem([...path, 'next_phase_index'], `is past the last phase (${phases.length} phases)`);
  }
}

function checkTenant(v: unknown, path: Path): void {
  if (!isObject(v)) throw new SeedProblem(path, 'must be a mapping with api_key, bundles and actions');
  onlyKeys(v, ['api_key', 'bundles', 'actions'], path);
  str(v, 'api_key', path, true);
  const versions = new Set<string>();
  list(v, 'bundles', path).forEach((b, i) => {
    checkBundle(b, [...path, 'bundles', i]);
    const version = (b as SeedBundle).version;
    if (versions.has(version)) throw new SeedProblem([...path, 'bundles', i, 'version'], `repeats the bundle version "${version}"`);
    versions.add(version);
  });
  const ids = new Set<number>();
  list(v, 'actions', path).forEach((a, i) => {
    checkAction(a, [...path, 'actions', i]);
    const id = (a as SeedAction).id;
    if (ids.has(id)) throw new SeedProblem([...path, 'actions', i, 'id'], `repeats the action id ${id}`);
    ids.add(id);
  });
}

/** Checks the shape of a seed; throws SeedProblem with the path of the first problem. */
export function validateSeed(raw: unknown): Seed {
  if (!isObject(raw)) throw new SeedProblem([], 'must be a mapping with a "tenants" key');
  onlyKeys(raw, ['tenants'], []);
  if (!isObject(raw.tenants)) throw new SeedProblem(['tenants'], 'must be a mapping of tenant name to tenant');
  const keys = new Map<string, string>();
  for (const [name, tenant] of Object.entries(raw.tenants)) {
    checkTenant(tenant, ['tenants', name]);
    const key = (tenant as SeedTenant).api_key;
    const other = keys.get(key);
    // One key for two tenants would make a 403 impossible to produce; refuse it.
    if (other !== undefined) throw new SeedProblem(['tenants', name, 'api_key'], `is the same as the key of tenant "${other}"`);
    keys.set(key, name);
  }
  return raw as unknown as Seed;
}
