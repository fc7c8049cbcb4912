// The live state of one tenant as desired-state YAML (for `export`), pure: the files and their
// text, in a layout meant for review: one file per component (one document per firmware,
// sorted by version number) and one file per action, keys in a fixed order, versions quoted.
//
// Decisions (documented in the README):
// - `bundle_version` is the first of the record's bundles in sorted order. The guard means "the
//   record appears in this bundle", so any of them holds; the first is the stable choice.
// - A version number shared by several components cannot be addressed by the PUT, so plan
//   could not manage it: it is left out, with a comment in each component file and a warning.
// - Fields the API left null are left out (unmanaged), so that plan never writes a guess.
import { Document, Scalar, YAMLMap, isMap, isScalar, isSeq } from 'yaml';
import type { Action, Dependency, LiveFirmware } from '../model/index.js';
import { compareStrings, normalizePhase, sortKeysDeep } from './canonical.js';

export interface ExportInput {
  /** version_number → records (one per component), as indexFirmwares gives them. */
  readonly firmwares: ReadonlyMap<string, readonly LiveFirmware[]>;
  readonly actions: readonly Action[];
}

export interface ExportOptions {
  readonly tenant: string;
  /** The API's base URL; userinfo and query are dropped before it is written. */
  readonly sourceUrl: string;
  /** ISO 8601 time of the export. */
  readonly generatedAt: string;
  /** For the yaml-language-server modeline: a URL or a path relative to the output folder. */
  readonly schemaPath: string;
  readonly toolVersion: string;
}

export interface ExportedFile {
  /** Relative to the output folder, forward slashes, always inside it. */
  readonly path: string;
  readonly text: string;
}

export interface ExportSkip {
  readonly version_number: string;
  readonly components: readonly string[];
  readonly reason: string;
}

export interface ExportResult {
  readonly files: readonly ExportedFile[];
  readonly skipped: readonly ExportSkip[];
  readonly firmwares: number;
  readonly components: number;
  readonly actions: number;
}

/** Version order a reader expects (2.9 before 2.10), with a plain tie-break so it is total. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/(\d+)/);
  const pb = b.split(/(\d+)/);
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i]!;
    const y = pb[i]!;
    if (x === y) continue;
    // split() with a capture group puts the digit runs at the odd indexes.
    if (i % 2 === 0) return compareStrings(x, y);
    const d = compareDigits(x.replace(/^0+(?=\d)/, ''), y.replace(/^0+(?=\d)/, ''));
    if (d !== 0) return d;
  }
  return pa.length - pb.length || compareStrings(a, b);
}

/** Digit strings of any length compared as numbers (no float rounding past 2^53). */
function compareDigits(x: string, y: string): number {
  return x.length - y.length || compareStrings(x, y);
}

/** Names no file system accepts as a plain file name (Windows devices). */
const RESERVED = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/i;

/**
 * A file name for a component: lower case (two names differing by case would collide on
 * macOS and Windows), only [a-z0-9._-], no leading dot, never empty, never a path.
 */
export function slugComponent(name: string): string {
  let s = name.normalize('NFKD').toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/-{2,}/g, '-');
  s = s.replace(/^[.-]+/, '').replace(/[.-]+$/, '');
  if (s === '') s = 'component';
  if (RESERVED.test(s)) s = `${s}-component`;
  return s.slice(0, 100);
}

/** Unique file names for the components, given in sorted order so numbering is stable. */
export function componentFileNames(components: readonly string[]): Map<string, string> {
  const used = new Set<string>();
  const out = new Map<string, string>();
  for (const c of [...components].sort(compareStrings)) {
    const base = slugComponent(c);
    let name = base;
    for (let i = 2; used.has(name); i++) name = `${base}-${i}`;
    used.add(name);
    out.set(c, name);
  }
  return out;
}

/** The base URL as it may be written down: no user, no password, no query, no fragment. */
export function publicUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '(an invalid URL)';
  }
}

function header(opts: ExportOptions, what: string): string {
  const line = (text: string) => `# ${text.replace(/[\r\n]+/g, ' ')}`;
  return [
    line(`yaml-language-server: $schema=${opts.schemaPath}`),
    line(`Exported by dus-sync ${opts.toolVersion} from ${publicUrl(opts.sourceUrl)} tenant ${opts.tenant} at ${opts.generatedAt}`),
    line(what),
  ].join('\n') + '\n';
}

const VERSION_KEYS = new Set(['version_number', 'min_version', 'bundle_version']);

/** Version strings double-quoted wherever they are, so that 1.10 never becomes 1.1. */
function quoteVersions(node: unknown): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? pair.key.value : undefined;
      if (typeof key === 'string' && VERSION_KEYS.has(key) && isScalar(pair.value)) pair.value.type = Scalar.QUOTE_DOUBLE;
      else quoteVersions(pair.value);
    }
  } else if (isSeq(node)) {
    for (const item of node.items) quoteVersions(item);
  }
}

function toYaml(value: unknown, flowDependencies: boolean): string {
  const doc = new Document(value);
  quoteVersions(doc.contents);
  if (flowDependencies && isMap(doc.contents)) {
    const spec = doc.contents.get('spec');
    if (spec instanceof YAMLMap) {
      const deps = spec.get('dependencies');
      if (isSeq(deps)) for (const d of deps.items) if (isMap(d)) d.flow = true;
    }
  }
  return doc.toString({ lineWidth: 0, flowCollectionPadding: true });
}

function sortedDependencies(deps: readonly Dependency[]): Dependency[] {
  return deps.map((d) => ({ component_name: d.component_name, min_version: d.min_version }))
    .sort((a, b) => compareStrings(a.component_name, b.component_name) || compareStrings(a.min_version, b.min_version));
}

function firmwareDocument(tenant: string, r: LiveFirmware): Record<string, unknown> {
  const spec: Record<string, unknown> = { version_number: r.version_number, component_name: r.component_name };
  const firstBundle = [...r.bundles].sort(compareStrings)[0];
  if (firstBundle !== undefined) spec.bundle_version = firstBundle;
  if (r.is_deactivated !== null) spec.is_deactivated = r.is_deactivated;
  if (r.uncompressed_size !== null) spec.uncompressed_size = r.uncompressed_size;
  spec.dependencies = sortedDependencies(r.dependencies);
  return { apiVersion: 'dus-sync/v1', kind: 'Firmware', metadata: { tenant }, spec };
}

function actionDocument(tenant: string, a: Action): Record<string, unknown> {
  const phases = a.phases.map(normalizePhase).map((p) => ({
    name: p.name,
    trigger_on: sortKeysDeep(p.trigger_on),
    info: sortKeysDeep(p.info),
  }));
  return { apiVersion: 'dus-sync/v1', kind: 'Action', metadata: { tenant }, spec: { id: a.id, phases } };
}

/** A record whose dependencies name one component twice cannot be written as valid YAML. */
function duplicateDependency(r: LiveFirmware): string | undefined {
  const seen = new Set<string>();
  for (const d of r.dependencies) {
    if (seen.has(d.component_name)) return d.component_name;
    seen.add(d.component_name);
  }
  return undefined;
}

export function exportFiles(input: ExportInput, opts: ExportOptions): ExportResult {
  const byComponent = new Map<string, LiveFirmware[]>();
  const skipped: ExportSkip[] = [];
  const skippedByComponent = new Map<string, string[]>();
  for (const number of [...input.firmwares.keys()].sort(compareVersions)) {
    const records = input.firmwares.get(number)!;
    if (records.length > 1) {
      const components = records.map((r) => r.component_name).sort(compareStrings);
      const reason = `version number ${JSON.stringify(number)} belongs to ${components.length} components (${components.join(', ')}); PUT /firmwares/{version-number} cannot address one of them, so dus-sync cannot manage it`;
      skipped.push({ version_number: number, components, reason });
      for (const c of components) skippedByComponent.set(c, [...(skippedByComponent.get(c) ?? []), number]);
      continue;
    }
    const r = records[0];
    if (!r) continue;
    const dup = duplicateDependency(r);
    if (dup !== undefined) {
      const reason = `firmware ${JSON.stringify(number)} lists the dependency ${dup} twice live, which the desired state cannot express`;
      skipped.push({ version_number: number, components: [r.component_name], reason });
      skippedByComponent.set(r.component_name, [...(skippedByComponent.get(r.component_name) ?? []), number]);
      continue;
    }
    byComponent.set(r.component_name, [...(byComponent.get(r.component_name) ?? []), r]);
  }

  // Names are given over every component (skipped ones too) so that a file keeps its name
  // when a component's last ambiguous version is cleaned up.
  const components = [...new Set([...byComponent.keys(), ...skippedByComponent.keys()])];
  const names = componentFileNames(components);
  const files: ExportedFile[] = [];
  let firmwares = 0;
  for (const component of [...components].sort((a, b) => compareStrings(names.get(a)!, names.get(b)!))) {
    const records = byComponent.get(component) ?? [];
    // A file of comments only would be a file without documents: the warning says it instead.
    if (records.length === 0) continue;
    const docs = records.map((r) => toYaml(firmwareDocument(opts.tenant, r), true));
    firmwares += records.length;
    const skips = (skippedByComponent.get(component) ?? []).map((n) =>
      `# Not exported: ${skipped.find((s) => s.version_number === n)!.reason.replace(/[\r\n]+/g, ' ')}.\n`);
    const body = docs.join('---\n');
    const text = header(opts, `Firmware records of component ${JSON.stringify(component)}, one document each, by version number.`)
      + skips.join('') + body;
    files.push({ path: `firmwares/${names.get(component)!}.yaml`, text });
  }

  const actions = [...input.actions].sort((a, b) => a.id - b.id);
  for (const a of actions) {
    files.push({
      path: `actions/${a.id}.yaml`,
      text: header(opts, `Action ${a.id}: every live phase, oldest first. Phases are append-only: add new ones at the end.`)
        + toYaml(actionDocument(opts.tenant, a), false),
    });
  }
  return { files, skipped, firmwares, components: byComponent.size, actions: actions.length };
}
