// Desired-state files → DesiredState: find, read, parse with positions, validate (Ajv and the
// semantic checks of SPEC section 1), assemble. parseFile is pure and per file so that the
// watch agent can cache its result by path and text and re-parse only what changed.
import { readFile, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import picomatch from 'picomatch';
import { glob } from 'tinyglobby';
import type { Document } from 'yaml';
import type { ConfigIssue } from '../errors.js';
import { UserError } from '../errors.js';
import type {
  DesiredAction, DesiredFirmware, DesiredObject, DesiredState, FirmwareSpec, JsonObject, PhaseSpec, ResolvedConfig, SourceLocation,
} from '../model/index.js';
import { hint } from './did-you-mean.js';
import { scanNodes, schemaIssues, validator } from './schema-check.js';
import { issueAt, locate, MAX_ALIAS_COUNT, MAX_FILE_BYTES, offsetOf, parseYamlSource, type YamlSource } from './yaml-source.js';

export { MAX_FILE_BYTES } from './yaml-source.js';

export interface SourceFile {
  /** Relative to config.dir, posix separators. */
  readonly path: string;
  readonly text: string;
}

/** What one document of a file contributes. */
export interface ParsedDocument {
  /** 0-based index among the file's non-empty documents. */
  readonly index: number;
  /** Where the document starts. */
  readonly source: SourceLocation;
  /** Present when kind, tenant and identity could be read (even if other fields are invalid): for the duplicate check. */
  readonly identity?: {
    readonly kind: 'firmware' | 'action';
    readonly tenant: string;
    readonly key: string;
    readonly location: SourceLocation;
    readonly pointer: string;
  };
  /** Present only when the document is entirely valid. */
  readonly object?: DesiredObject;
}

/** The per-file parse result: depends only on the file's path and text (and the config). */
export interface ParsedFile {
  /** Relative to config.dir, posix separators. */
  readonly path: string;
  /** As the user should see it: relative to the process's working folder, posix separators. */
  readonly file: string;
  readonly documents: readonly ParsedDocument[];
  readonly issues: readonly ConfigIssue[];
}

export interface LoadResult {
  readonly desired: DesiredState;
  readonly issues: readonly ConfigIssue[];
}

export interface LoadFilter {
  readonly tenants?: readonly string[];
  readonly selector?: Readonly<Record<string, string>>;
}

// ---------------------------------------------------------------- finding files

function toPosix(p: string): string {
  return sep === '/' ? p : p.split(sep).join('/');
}

/** A path as the user should see it (like tsc and eslint): relative to the working folder. */
export function displayPath(config: ResolvedConfig, path: string): string {
  const rel = toPosix(relative(process.cwd(), join(config.dir, path)));
  return rel === '' ? '.' : rel;
}

function configFolder(config: ResolvedConfig): string {
  return config.file ? dirname(config.file) : config.dir;
}

const DEFAULT_GLOBS = ['**/*.yaml', '**/*.yml'];

/** Pure: the files among `paths` (relative to config.dir) that are desired-state files. */
export function selectResourcePaths(paths: readonly string[], config: ResolvedConfig): string[] {
  const base = configFolder(config);
  const patterns = config.resources && config.resources.length > 0 ? [...config.resources] : DEFAULT_GLOBS;
  const match = picomatch(patterns, { dot: false });
  const configRel = config.file ? toPosix(relative(config.dir, config.file)) : undefined;
  const out = new Set<string>();
  for (const raw of paths) {
    const p = toPosix(raw);
    if (p === configRel) continue;
    if (p.split('/').some((s) => s === 'node_modules' || (s.startsWith('.') && s !== '..'))) continue;
    const fromBase = toPosix(relative(base, join(config.dir, p)));
    if (match(fromBase)) out.add(p);
  }
  return [...out].sort();
}

/** Every desired-state file, relative to config.dir with posix separators, sorted. */
export async function listResourceFiles(config: ResolvedConfig): Promise<string[]> {
  try {
    const st = await stat(config.dir);
    if (!st.isDirectory()) throw new UserError(`${config.dir} is not a folder; --dir takes the folder of the desired-state files`);
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(`the folder ${config.dir} does not exist; check --dir or the location of dus-sync.yaml`);
  }
  const base = configFolder(config);
  const patterns = config.resources && config.resources.length > 0 ? [...config.resources] : DEFAULT_GLOBS;
  const found = await glob(patterns, { cwd: base, absolute: true, dot: false, onlyFiles: true, ignore: ['**/node_modules/**'] });
  return selectResourcePaths(found.map((abs) => toPosix(relative(config.dir, abs))), config);
}

// ---------------------------------------------------------------- parsing one file

/** Pure: one file's documents, validated on their own. Never throws. */
export function parseFile(file: SourceFile, config: ResolvedConfig): ParsedFile {
  const shown = displayPath(config, file.path);
  try {
    const src = parseYamlSource(shown, file.text);
    const documents: ParsedDocument[] = [];
    const issues: ConfigIssue[] = [...src.issues];
    src.documents.forEach((doc, index) => {
      const r = parseDocument(src, doc, index, config);
      documents.push(r.document);
      issues.push(...r.issues);
    });
    return { path: file.path, file: shown, documents, issues: sortIssues(issues) };
  } catch (err) {
    // A bug in a check must not hide the other files' results.
    const message = `this file could not be checked (${err instanceof Error ? err.message : String(err)}); please report it`;
    return { path: file.path, file: shown, documents: [], issues: [{ file: shown, line: 1, column: 1, pointer: '', message }] };
  }
}

function parseDocument(src: YamlSource, doc: Document.Parsed, index: number, config: ResolvedConfig): { document: ParsedDocument; issues: ConfigIssue[] } {
  const start = issueAt(src.file, src.lineCounter, offsetOf(doc.contents!), '', '');
  const source: SourceLocation = { file: start.file, line: start.line, column: start.column };
  const bare: ParsedDocument = { index, source };
  const fail = (message: string) => ({ document: bare, issues: [{ ...start, message }] });

  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch {
    return fail(`the document expands too many YAML aliases (more than ${MAX_ALIAS_COUNT}); write the values out instead`);
  }
  if (!isPlainObject(value)) {
    return fail('a document must be a mapping with apiVersion, kind, metadata and spec; this one is not');
  }
  if (!('apiVersion' in value)) {
    return fail('this document has no "apiVersion: dus-sync/v1", so it is not a dus-sync document; add it, or keep this file out of the resources (see "resources" in dus-sync.yaml)');
  }

  const scanned = scanNodes(src, doc);
  const refused = scanned.some((i) => i.message.startsWith('the key "'));
  const validate = validator('resource');
  const valid = !refused && validate(value) && scanned.length === 0;
  const issues = [...scanned];
  if (!refused && validate.errors) issues.push(...schemaIssues(src, doc, validate.errors, new Set(scanned.map((i) => i.pointer))));

  const sem = semanticChecks(src, doc, value, config);
  const reported = issues.map((i) => i.pointer);
  issues.push(...sem.issues.filter((i) => !reported.some((p) => i.pointer === p || i.pointer.startsWith(p + '/'))));
  const identity = refused ? undefined : sem.identity;
  const object = valid && sem.issues.length === 0 && identity ? buildObject(value, identity.tenant, source) : undefined;
  return { document: { index, source, identity, object }, issues };
}

function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------- semantic checks

interface Semantic {
  readonly issues: ConfigIssue[];
  readonly identity?: ParsedDocument['identity'];
}

/** The checks of SPEC section 1 that a schema cannot express. Defensive: the document may be schema-invalid. */
function semanticChecks(src: YamlSource, doc: Document.Parsed, value: JsonObject, config: ResolvedConfig): Semantic {
  const issues: ConfigIssue[] = [];
  const at = (path: string[], pointer: string, message: string, key = false) => {
    const l = locate(doc, path);
    const node = key ? (l.key ?? l.nearest) : (l.value ?? l.key ?? l.nearest);
    issues.push(issueAt(src.file, src.lineCounter, offsetOf(node), pointer, message));
  };

  const metadata = isPlainObject(value.metadata) ? value.metadata : undefined;
  const declared = typeof metadata?.tenant === 'string' ? metadata.tenant : undefined;
  const tenant = declared ?? config.defaultTenant;
  const known = Object.keys(config.tenants);
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
        const l = locate(doc, ['spec', 'dependencies', String(prev), 'component_name']);
        const line = src.lineCounter.linePos(offsetOf(l.nearest)).line;
        at(['spec', 'dependencies', String(i), 'component_name'], `/spec/dependencies/${i}/component_name`,
          `the dependency on "${name}" is listed twice (first at line ${line}); keep one entry per component`);
      }
    });
  }

  let identity: Semantic['identity'];
  if (tenant !== undefined && spec) {
    const kind = value.kind === 'Firmware' ? 'firmware' : value.kind === 'Action' ? 'action' : undefined;
    const field = kind === 'firmware' ? 'version_number' : 'id';
    const raw = spec[field];
    const key = kind === 'firmware' && typeof raw === 'string' && raw !== '' ? raw
      : kind === 'action' && typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= 0 ? String(raw) : undefined;
    if (kind && key !== undefined) {
      const l = locate(doc, ['spec', field]);
      const loc = issueAt(src.file, src.lineCounter, offsetOf(l.value ?? l.nearest), '', '');
      identity = { kind, tenant, key, location: { file: loc.file, line: loc.line, column: loc.column }, pointer: `/spec/${field}` };
    }
  }
  return { issues, identity };
}

// ---------------------------------------------------------------- building objects

function stringRecord(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (isPlainObject(v)) for (const [k, s] of Object.entries(v)) if (typeof s === 'string') out[k] = s;
  return out;
}

/** A fresh object with the schema's fields only: nothing from the YAML is passed through blindly. */
function buildObject(value: JsonObject, tenant: string, source: SourceLocation): DesiredObject {
  const labels = stringRecord(isPlainObject(value.metadata) ? value.metadata.labels : undefined);
  const spec = value.spec as JsonObject;
  if (value.kind === 'Firmware') {
    const s = spec as unknown as FirmwareSpec;
    const out: FirmwareSpec = { version_number: s.version_number };
    if (s.component_name !== undefined) out.component_name = s.component_name;
    if (s.bundle_version !== undefined) out.bundle_version = s.bundle_version;
    if (s.is_deactivated !== undefined) out.is_deactivated = s.is_deactivated;
    if (s.uncompressed_size !== undefined) out.uncompressed_size = s.uncompressed_size;
    if (s.dependencies !== undefined) out.dependencies = s.dependencies.map((d) => ({ component_name: d.component_name, min_version: d.min_version }));
    const f: DesiredFirmware = { kind: 'firmware', tenant, labels, source, spec: out };
    return f;
  }
  const phases = (spec.phases as JsonObject[]).map((p): PhaseSpec => ({
    name: p.name as string,
    trigger_on: (p.trigger_on as JsonObject | undefined) ?? {},
    info: (p.info as JsonObject | undefined) ?? {},
  }));
  const a: DesiredAction = { kind: 'action', tenant, labels, source, id: spec.id as number, phases };
  return a;
}

// ---------------------------------------------------------------- assembling

function sortIssues(issues: readonly ConfigIssue[]): ConfigIssue[] {
  return [...issues].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line || a.column - b.column || (a.message < b.message ? -1 : a.message > b.message ? 1 : 0)));
}

function included(o: DesiredObject, filter: LoadFilter | undefined): boolean {
  if (filter?.tenants && filter.tenants.length > 0 && !filter.tenants.includes(o.tenant)) return false;
  if (filter?.selector) for (const [k, v] of Object.entries(filter.selector)) if (o.labels[k] !== v) return false;
  return true;
}

/** Pure: the cross-file checks (an identity defined twice) and the DesiredState. */
export function assemble(files: readonly ParsedFile[], config: ResolvedConfig, filter?: LoadFilter): LoadResult {
  void config;
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const issues: ConfigIssue[] = sorted.flatMap((f) => f.issues);
  const firstSeen = new Map<string, SourceLocation>();
  const firmwares: DesiredFirmware[] = [];
  const actions: DesiredAction[] = [];
  for (const f of sorted) {
    for (const d of f.documents) {
      let duplicate = false;
      if (d.identity) {
        const id = d.identity;
        const k = `${id.kind}\u0000${id.tenant}\u0000${id.key}`;
        const first = firstSeen.get(k);
        if (first) {
          duplicate = true;
          const what = id.kind === 'firmware' ? `firmware "${id.key}"` : `action ${id.key}`;
          issues.push({ ...id.location, pointer: id.pointer, message: `${what} of tenant "${id.tenant}" is defined twice; the first definition is at ${first.file}:${first.line}; keep one` });
        } else firstSeen.set(k, id.location);
      }
      const o = d.object;
      if (!o || duplicate || !included(o, filter)) continue;
      if (o.kind === 'firmware') firmwares.push(o);
      else actions.push(o);
    }
  }
  firmwares.sort((a, b) => cmp(a.tenant, b.tenant) || cmp(a.spec.version_number, b.spec.version_number));
  actions.sort((a, b) => cmp(a.tenant, b.tenant) || a.id - b.id);
  return { desired: { firmwares, actions, files: sorted.map((f) => f.path) }, issues: sortIssues(issues) };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function loadDocuments(files: readonly SourceFile[], config: ResolvedConfig, filter?: LoadFilter): LoadResult {
  return assemble(files.map((f) => parseFile(f, config)), config, filter);
}

// ---------------------------------------------------------------- reading

/** Reads the files, refusing oversize ones before reading them. Unreadable files become issues. */
export async function readParsedFiles(config: ResolvedConfig, paths?: readonly string[]): Promise<ParsedFile[]> {
  const list = paths ?? await listResourceFiles(config);
  return Promise.all(list.map(async (path): Promise<ParsedFile> => {
    const abs = join(config.dir, path);
    const shown = displayPath(config, path);
    const failed = (message: string): ParsedFile => ({ path, file: shown, documents: [], issues: [{ file: shown, line: 1, column: 1, pointer: '', message }] });
    try {
      const st = await stat(abs);
      if (st.size > MAX_FILE_BYTES) return failed(`the file is ${(st.size / 1024 / 1024).toFixed(1)} MiB, larger than the ${MAX_FILE_BYTES / 1024 / 1024} MiB limit; desired-state files are small, so this is probably not one (split it or move it out of the resources)`);
      return parseFile({ path, text: await readFile(abs, 'utf8') }, config);
    } catch (err) {
      return failed(`the file could not be read (${(err as NodeJS.ErrnoException).code ?? String(err)}); check its permissions`);
    }
  }));
}

export async function loadDesiredState(config: ResolvedConfig, filter?: LoadFilter): Promise<LoadResult> {
  return assemble(await readParsedFiles(config), config, filter);
}
