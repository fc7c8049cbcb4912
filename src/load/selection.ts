// A command that selects nothing must say so: an empty folder, a --tenant or a --selector that
// matches no document would otherwise print "No changes" and exit 0, and a nightly drift job
// would report "in sync". These checks run once the files are valid; each error names what
// exists, so that a typo is one look away from its fix.
import { isAbsolute, relative, sep } from 'node:path';
import { UserError } from '../errors.js';
import type { DesiredObject, ResolvedConfig } from '../model/index.js';
import { didYouMean } from './did-you-mean.js';
import { filters, resourceScope, type LoadFilter, type ParsedFile, type SelectionFacts } from './index.js';

/** Relative to the working folder when below it, else absolute. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  const p = rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? path : rel;
  return sep === '/' ? p : p.split(sep).join('/');
}

function list(values: Iterable<string>): string {
  const sorted = [...new Set(values)].sort();
  return sorted.length === 0 ? 'none' : sorted.join(', ');
}

function maybe(word: string, candidates: Iterable<string>): string {
  const m = didYouMean(word, candidates);
  return m === undefined ? '' : ` (did you mean ${m}?)`;
}

/** What was searched, in words: the globs and where they are relative to. */
export function searched(config: ResolvedConfig): string {
  const scope = resourceScope(config);
  const below = scope.under === '' ? '' : `, below ${scope.under}`;
  if (scope.fromConfig) return `${scope.patterns.join(', ')} relative to ${shown(config.file!)}${below}`;
  return 'every *.yaml and *.yml file below it, dot folders and node_modules skipped';
}

/** Throws when the files hold no document at all: an empty or wrong folder is not "valid". */
export function checkNotEmpty(files: readonly ParsedFile[] | SelectionFacts, config: ResolvedConfig): void {
  const facts = factsOf(files, undefined);
  // Absolute: a wrong working folder is what this error most often reveals.
  const dir = config.dir;
  const hint = 'check --dir and "resources" in dus-sync.yaml, or write the live state of a tenant into files with dus-sync export --tenant NAME --out DIR';
  if (facts.files === 0) throw new UserError(`no desired-state files found in ${dir} (searched for ${searched(config)}); ${hint}`);
  if (facts.withDocuments === 0) {
    throw new UserError(`the ${facts.files === 1 ? 'file' : `${facts.files} files`} found in ${dir} hold${facts.files === 1 ? 's' : ''} no desired-state document (kind: Firmware or Action); ${hint}`);
  }
}

/** The facts of parsed files (watch keeps the parses; validate, plan and apply keep only the facts). */
function factsOf(files: readonly ParsedFile[] | SelectionFacts, filter: LoadFilter | undefined): SelectionFacts {
  if (!Array.isArray(files)) return files as SelectionFacts;
  const list = files as readonly ParsedFile[];
  return {
    files: list.length,
    withDocuments: list.filter((f) => f.documents.length > 0).length,
    ...(filters(filter) ? { objects: list.flatMap((f) => f.documents.flatMap((d) => (d.object ? [d.object] : []))) } : {}),
  };
}

/** The tenants a --tenant may name without documents: those dus-sync.yaml lists, and the default. */
function configuredTenants(config: ResolvedConfig): Set<string> {
  return new Set([...Object.keys(config.tenants), ...(config.defaultTenant !== undefined ? [config.defaultTenant] : [])]);
}

/**
 * Throws when the files are empty, or when --tenant or --selector match nothing. `files` are
 * valid (no issues): every document has its object. A --tenant that dus-sync.yaml lists (or the
 * default tenant) may have no documents: it exists, it just has nothing declared yet.
 */
export function checkSelection(files: readonly ParsedFile[] | SelectionFacts, config: ResolvedConfig, filter: LoadFilter | undefined): void {
  const facts = factsOf(files, filter);
  checkNotEmpty(facts, config);
  // Without --tenant or --selector there is nothing to match (and no walk of every document).
  if (!filters(filter)) return;
  const objects = facts.objects ?? [];
  const withDocuments = new Set(objects.map((o) => o.tenant));
  const tenants = filter?.tenants ?? [];
  const configured = configuredTenants(config);
  const unknown = [...new Set(tenants)].filter((t) => !withDocuments.has(t) && !configured.has(t));
  if (unknown.length > 0) {
    const t = unknown[0]!;
    throw new UserError(`no desired-state document is for tenant ${unknown.join(' or ')}; tenants with documents: ${list(withDocuments)}${maybe(t, [...withDocuments, ...configured])}`);
  }
  const selector = Object.entries(filter?.selector ?? {});
  if (selector.length === 0) return;
  const inTenants = tenants.length > 0 ? objects.filter((o) => tenants.includes(o.tenant)) : objects;
  const scope = tenants.length > 0 ? ` of tenant ${tenants.join(' or ')}` : '';
  for (const [key, value] of selector) {
    if (inTenants.some((o) => o.labels[key] === value)) continue;
    const values = inTenants.flatMap((o) => (Object.hasOwn(o.labels, key) ? [o.labels[key]!] : []));
    if (values.length === 0) {
      const keys = inTenants.flatMap((o) => Object.keys(o.labels));
      throw new UserError(`no desired-state document${scope} has the label ${key}=${value}: none has a label "${key}"; label keys in use: ${list(keys)}${maybe(key, keys)}`);
    }
    throw new UserError(`no desired-state document${scope} has the label ${key}=${value}; the values of ${key} are: ${list(values)}${maybe(value, values)}`);
  }
  const all = (o: DesiredObject) => selector.every(([k, v]) => o.labels[k] === v);
  if (!inTenants.some(all)) {
    throw new UserError(`no desired-state document${scope} has all the labels ${selector.map(([k, v]) => `${k}=${v}`).join(', ')}; each matches some documents on its own, but none matches all of them`);
  }
}

/** export needs no document, but a tenant that dus-sync.yaml does not list is a typo (its key would be DUS_API_KEY's). */
export function checkExportTenant(config: ResolvedConfig, tenant: string): void {
  const listed = Object.keys(config.tenants);
  if (listed.length === 0 || listed.includes(tenant)) return;
  const file = config.file ? shown(config.file) : 'the config';
  throw new UserError(`tenant ${tenant} is not one of the tenants in ${file}: ${list(listed)}${maybe(tenant, listed)}; add it there first, with the environment variable or file of its API key`);
}
