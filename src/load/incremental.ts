// assemble() for watch, from what the last one built: after a file change, only the documents of
// the files that changed are looked at (assemble walks all 200,000 documents of a large
// repository, checks each identity against a Map and sorts every firmware: a third of a second
// of every pass). The result is exactly assemble's (test/load/incremental.property.test.ts holds
// it to that after every step of random edits); whenever it could differ, assemble itself runs.
//
// What is kept (an Assembly) is built only from a repository without issues. Every identity is
// then declared by exactly one document, and that document's object, when the filter includes
// it, is in the desired state; the firmwares are in (tenant, version) order and the actions in
// (tenant, id) order, and these keys are unique. So an edit is: take out what the changed files
// declared, put in what they declare now, each at its place in that order. assemble runs instead
// when there is no Assembly, when the filter or the config's part in assembling changed, when a
// changed file has issues (they must be reported as assemble reports them), when an identity is
// declared twice, when a window names a tenant nothing declares, when more than a few files
// changed, and on anything unexpected (the Assembly is then built again from scratch).
import type { DesiredAction, DesiredFirmware, DesiredObject, ResolvedConfig } from '../model/index.js';

import { assemble, included, type LoadFilter, type LoadResult, type ParsedDocument, type ParsedFile } from './index.js';
import { tenantFold } from '../tenant.js';

type Kind = 'firmware' | 'action';

/** What one tenant's documents declare: identity key → the one document declaring it. */
interface Declared {
  readonly firmware: Map<string, ParsedDocument>;
  readonly action: Map<string, ParsedDocument>;
}

/**
 * What the last assemble built, kept to be updated. Opaque; it is updated in place by
 * assembleFrom, so only the Assembly that call returns may be used afterwards.
 */
export class Assembly {
  private constructor(
    /** The filter and the config as far as assembling reads them. */
    readonly key: string,
    /** The files it was built from, sorted by path (each path once). */
    public files: readonly ParsedFile[],
    /** Every identity declared, by tenant and kind: a tenant is here only while it declares something. */
    readonly declared: Map<string, Declared>,
    /** How many objects of each tenant the desired state holds (the filter's tenants and selector). */
    readonly counts: Map<string, number>,
    public result: LoadResult,
  ) {}

  /** Built from a result of assemble without issues, or undefined when the files break an invariant. */
  static build(key: string, files: readonly ParsedFile[], filter: LoadFilter | undefined, result: LoadResult): Assembly | undefined {
    if (result.issues.length > 0 || !strictlySorted(files)) return undefined;
    const declared = new Map<string, Declared>();
    const counts = new Map<string, number>();
    for (const f of files) {
      for (const d of f.documents) {
        if (!consistent(d)) return undefined;
        if (d.identity === undefined) continue;
        const ids = declaredOf(declared, d.identity.tenant)[d.identity.kind];
        if (ids.has(d.identity.key)) return undefined;
        ids.set(d.identity.key, d);
        if (d.object !== undefined && included(d.object, filter)) counts.set(d.object.tenant, (counts.get(d.object.tenant) ?? 0) + 1);
      }
    }
    return new Assembly(key, files, declared, counts, result);
  }

  /** The tenants the desired state touches, sorted (what tenantsOf gives for it). */
  tenants(): string[] {
    return [...this.counts.keys()].sort();
  }
}

export interface Assembled extends LoadResult {
  /** The files assembled, sorted by path. */
  readonly files: readonly ParsedFile[];
  /** The tenants of the desired state, sorted. */
  readonly tenants: readonly string[];
  /** What to pass to the next call; absent when the files have issues (the next call assembles everything). */
  readonly assembly?: Assembly;
  /** Whether only the changed files were looked at (else: why assemble ran). */
  readonly how: string;
}

/** More changed files than this (and more than an eighth of all), and assemble is as quick. */
const MAX_CHANGED_FILES = 256;

/**
 * assemble(files, config, filter), from the Assembly of the last call. `files` is the whole
 * repository, as the last call's files with the changed ones put in, replaced or taken out
 * (a parse that did not change is the same object: files are compared by reference).
 */
export function assembleFrom(files: readonly ParsedFile[], config: ResolvedConfig, filter: LoadFilter | undefined, last: Assembly | undefined): Assembled {
  const key = assemblyKey(config, filter);
  const why = last === undefined ? 'nothing kept' : last.key !== key ? 'the filter or the config changed' : update(last, files, config, filter);
  if (why === undefined) return { ...last!.result, files: last!.files, tenants: last!.tenants(), assembly: last!, how: 'incremental' };
  return full(key, files, config, filter, why);
}

function full(key: string, files: readonly ParsedFile[], config: ResolvedConfig, filter: LoadFilter | undefined, why: string): Assembled {
  const result = assemble(files, config, filter);
  const assembly = Assembly.build(key, files, filter, result);
  const sorted = assembly?.files ?? (strictlySorted(files) ? files : [...files].sort((a, b) => cmp(a.path, b.path)));
  return { ...result, files: sorted, tenants: assembly?.tenants() ?? tenantsIn(result), ...(assembly ? { assembly } : {}), how: why };
}

/**
 * What assembling reads besides the files: the filter, the tenants the config lists and its
 * default tenant and windows (the check that a window names a known tenant), the config file
 * (where that check points). Anything else changing in the config does not change the result.
 */
function assemblyKey(config: ResolvedConfig, filter: LoadFilter | undefined): string {
  return JSON.stringify([
    filter?.tenants ?? null, filter?.selector ?? null, Object.keys(config.tenants), config.defaultTenant ?? null, config.file ?? null,
    (config.windows ?? []).map((w) => [w.name, w.tenants ?? null, w.tenantsAt ?? null]),
  ]);
}

/** Updates `a` to `files`; undefined when done, else why assemble must run (`a` is then spent). */
function update(a: Assembly, files: readonly ParsedFile[], config: ResolvedConfig, filter: LoadFilter | undefined): string | undefined {
  if (!strictlySorted(files)) return 'the files are not in order';
  // The files that changed: a parse that is not the same object, a file that came or went.
  const gone: ParsedFile[] = [];
  const came: ParsedFile[] = [];
  const old = a.files;
  let i = 0;
  let j = 0;
  const limit = Math.max(MAX_CHANGED_FILES, files.length >> 3);
  while (i < old.length || j < files.length) {
    const o = old[i];
    const n = files[j];
    if (o !== undefined && n !== undefined && o.path === n.path) {
      if (o !== n) { gone.push(o); came.push(n); }
      i++; j++;
    } else if (n === undefined || (o !== undefined && o.path < n.path)) {
      gone.push(o!); i++;
    } else {
      came.push(n); j++;
    }
    if (gone.length + came.length > 2 * limit) return 'many files changed';
  }
  for (const f of came) if (f.issues.length > 0) return 'a changed file has issues';

  // Out first, then in: an identity may move from one changed file to another.
  const removed: DesiredObject[] = [];
  const added: DesiredObject[] = [];
  for (const f of gone) {
    for (const d of f.documents) {
      if (!consistent(d)) return 'a document without its identity';
      if (d.identity === undefined) continue;
      const ids = a.declared.get(d.identity.tenant)?.[d.identity.kind];
      if (ids?.get(d.identity.key) !== d) return 'the kept identities do not match';
      ids.delete(d.identity.key);
      if (d.object !== undefined && included(d.object, filter)) removed.push(d.object);
    }
  }
  for (const f of came) {
    for (const d of f.documents) {
      if (!consistent(d)) return 'a document without its identity';
      if (d.identity === undefined) continue;
      const ids = declaredOf(a.declared, d.identity.tenant)[d.identity.kind];
      if (ids.has(d.identity.key)) return 'an identity is declared twice';
      ids.set(d.identity.key, d);
      if (d.object !== undefined && included(d.object, filter)) added.push(d.object);
    }
  }
  for (const f of gone) {
    for (const d of f.documents) {
      const t = d.identity?.tenant;
      const mine = t === undefined ? undefined : a.declared.get(t);
      if (mine !== undefined && mine.firmware.size === 0 && mine.action.size === 0) a.declared.delete(t!);
    }
  }
  if (new Set([...a.declared.keys()].map(tenantFold)).size < a.declared.size) return 'a tenant is spelt two ways';
  if (windowNamesUnknownTenant(config, a.declared)) return 'a window names a tenant no document declares';

  const desired = a.result.desired;
  const firmwares = patch(desired.firmwares, removed.filter(isFirmware), added.filter(isFirmware), byVersion);
  const actions = patch(desired.actions, removed.filter(isAction), added.filter(isAction), byId);
  if (firmwares === undefined || actions === undefined) return 'the kept desired state does not match';
  for (const o of removed) {
    const n = (a.counts.get(o.tenant) ?? 0) - 1;
    if (n > 0) a.counts.set(o.tenant, n);
    else a.counts.delete(o.tenant);
  }
  for (const o of added) a.counts.set(o.tenant, (a.counts.get(o.tenant) ?? 0) + 1);
  a.files = files;
  a.result = { desired: { firmwares, actions, files: files.map((f) => f.path) }, issues: [] };
  return undefined;
}

/** A document's object and identity agree (buildObject makes the object from the identity). */
function consistent(d: ParsedDocument): boolean {
  const o = d.object;
  if (o === undefined) return true;
  const id = d.identity;
  if (id === undefined || id.kind !== o.kind || id.tenant !== o.tenant) return false;
  return o.kind === 'firmware' ? o.spec.version_number === id.key : String(o.id) === id.key;
}

function declaredOf(declared: Map<string, Declared>, tenant: string): Declared {
  let d = declared.get(tenant);
  if (d === undefined) declared.set(tenant, d = { firmware: new Map(), action: new Map() } satisfies Record<Kind, Map<string, ParsedDocument>>);
  return d;
}

/** assemble's window check finds nothing exactly when every tenant a window names is known. */
function windowNamesUnknownTenant(config: ResolvedConfig, declared: ReadonlyMap<string, Declared>): boolean {
  for (const w of config.windows ?? []) {
    for (const t of w.tenants ?? []) {
      if (!Object.hasOwn(config.tenants, t) && config.defaultTenant !== t && !declared.has(t)) return true;
    }
  }
  return false;
}

const isFirmware = (o: DesiredObject): o is DesiredFirmware => o.kind === 'firmware';
const isAction = (o: DesiredObject): o is DesiredAction => o.kind === 'action';

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** assemble's orders: tenant, then version number; tenant, then id. Keys are unique in a repository without issues. */
const byVersion = (a: DesiredFirmware, b: DesiredFirmware): number => cmp(a.tenant, b.tenant) || cmp(a.spec.version_number, b.spec.version_number);
const byId = (a: DesiredAction, b: DesiredAction): number => cmp(a.tenant, b.tenant) || a.id - b.id;

function strictlySorted(files: readonly ParsedFile[]): boolean {
  for (let i = 1; i < files.length; i++) if (!(files[i - 1]!.path < files[i]!.path)) return false;
  return true;
}

function tenantsIn(result: LoadResult): string[] {
  const set = new Set<string>();
  for (const f of result.desired.firmwares) set.add(f.tenant);
  for (const a of result.desired.actions) set.add(a.tenant);
  return [...set].sort();
}

/** The first index whose item is not before `o`. */
function lowerBound<T>(items: readonly T[], o: T, order: (a: T, b: T) => number): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (order(items[mid]!, o) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * `items` (in `order`, keys unique) without `removed` and with `added`, in order: a new array.
 * undefined when a removed object is not there or an added key is there already. A few objects
 * are spliced in and out; more are merged (a splice moves the whole tail of 200,000).
 */
function patch<T>(items: readonly T[], removed: readonly T[], added: readonly T[], order: (a: T, b: T) => number): T[] | undefined {
  if (removed.length === 0 && added.length === 0) return items.slice();
  if (removed.length + added.length > 32) return merge(items, removed, added, order);
  const out = items.slice();
  for (const o of removed) {
    const at = lowerBound(out, o, order);
    if (out[at] !== o) return undefined;
    out.splice(at, 1);
  }
  for (const o of added) {
    const at = lowerBound(out, o, order);
    if (at < out.length && order(out[at]!, o) === 0) return undefined;
    out.splice(at, 0, o);
  }
  return out;
}

function merge<T>(items: readonly T[], removed: readonly T[], added: readonly T[], order: (a: T, b: T) => number): T[] | undefined {
  const drop = new Set(removed);
  if (drop.size !== removed.length) return undefined;
  const kept = items.filter((o) => !drop.has(o));
  if (kept.length !== items.length - removed.length) return undefined;
  const fresh = [...added].sort(order);
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < kept.length || j < fresh.length) {
    const c = i === kept.length ? 1 : j === fresh.length ? -1 : order(kept[i]!, fresh[j]!);
    if (c === 0) return undefined;
    if (c < 0) out.push(kept[i++]!);
    else {
      if (j > 0 && order(fresh[j - 1]!, fresh[j]!) === 0) return undefined;
      out.push(fresh[j++]!);
    }
  }
  return out;
}
