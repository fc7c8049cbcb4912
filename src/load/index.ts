// Desired-state files → DesiredState: find, read, parse with positions, validate (Ajv and the
// semantic checks of SPEC section 1), assemble. parseFile is pure and per file so that the
// watch agent can cache its result by path and text and re-parse only what changed.
import { realpathSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { isAlias, visit, type Document } from 'yaml';
import type { ConfigIssue } from '../errors.js';
import { UserError } from '../errors.js';
import { MAX_FILE_SIZE } from '../limits.js';
import { anySecrets, holdsWholeKey, redact, REDACTED, showsKey } from '../redact.js';
import type { DesiredAction, DesiredFirmware, DesiredObject, DesiredState, ReadPolicy, ResolvedConfig, SourceLocation } from '../model/index.js';
import { buildObject, IdentifiedDocument, isPlainObject, mayHoldPlaceholder, semanticChecks, yamlPosition, type Identity } from './documents.js';
import { hint } from './did-you-mean.js';
import { fastParseFile } from './fast-path.js';
import { DISK, findCandidates, loopsOnTheWay, MAX_LINK_PATHS, throughLinks, type WalkFs } from './find.js';
import { fileNameMayMatch, globMatcher } from './glob-match.js';
import { FirstSeen } from './first-seen.js';
import { globOf, globProblem, globsProblem, isExclusion, reachesOutside } from './resource-globs.js';
import { ambiguousPath, closeFolderCache, confirmFolder, isInside, printable, readRegularFile, whyNotAFolder, type FileStamp, type FolderCache, type ReadOptions, type ReadResult } from './read-file.js';
import { findSlips, scanNodes, schemaIssues, validator } from './schema-check.js';
import { issueAt, MAX_ALIAS_COUNT, offsetOf, parseYamlSource, type YamlSource } from './yaml-source.js';
import { tenantFold } from '../tenant.js';

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
  readonly identity?: Identity;
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

/** A relative posix path without `.` or `..` segments, empty segments or a leading slash: it joins without normalizing. */
function isPlainRelative(path: string): boolean {
  return path !== '' && !path.startsWith('/') && !path.includes('//') && !/(^|\/)\.\.?(\/|$)/.test(path);
}

/** config.dir relative to the working folder, per config and working folder (path.relative per file was 3% of a load). */
const DIR_SHOWN = new WeakMap<ResolvedConfig, { readonly cwd: string; readonly dir: string }>();

/** A path as the user should see it (like tsc and eslint): relative to the working folder. */
export function displayPath(config: ResolvedConfig, path: string): string {
  const cwd = process.cwd();
  let shown = DIR_SHOWN.get(config);
  if (shown === undefined || shown.cwd !== cwd) DIR_SHOWN.set(config, shown = { cwd, dir: toPosix(relative(cwd, config.dir)) });
  // The folder at or below the working folder, a plain path below it: the two just join.
  if (!shown.dir.startsWith('..') && !isAbsolute(shown.dir) && isPlainRelative(path)) return shown.dir === '' ? path : `${shown.dir}/${path}`;
  const rel = toPosix(relative(cwd, join(config.dir, path)));
  return rel === '' ? '.' : rel;
}

function configFolder(config: ResolvedConfig): string {
  return config.file ? dirname(config.file) : config.dir;
}

const DEFAULT_READ_POLICY: ReadPolicy = { maxFileBytes: MAX_FILE_SIZE.default, followExternalSymlinks: false };

function readPolicy(config: ResolvedConfig): ReadPolicy {
  return config.reading ?? DEFAULT_READ_POLICY;
}

export const DEFAULT_GLOBS: readonly string[] = ['**/*.yaml', '**/*.yml'];

/** Which files are resources: globs relative to `base`, limited to the folder `under` it. */
export interface ResourceScope {
  /** Absolute: the folder the globs are relative to, and the repository that links must stay in. */
  readonly base: string;
  readonly patterns: readonly string[];
  /** Relative to `base`, posix: the --dir folder ('' for all of `base`). */
  readonly under: string;
  /** Whether the patterns are the config's `resources` (else the default: every YAML file). */
  readonly fromConfig: boolean;
}

/**
 * --dir is the resources folder. Inside the config's folder it narrows the config's `resources`
 * globs (relative to the config file, as always) to the files below it. Outside it (only with
 * --config or DUS_CONFIG) those globs cannot reach it: every YAML file below --dir is read,
 * and --dir is the repository. Without --dir the config's folder holds the resources.
 */
export function resourceScope(config: ResolvedConfig): ResourceScope {
  const folder = configFolder(config);
  const rel = toPosix(relative(folder, config.dir));
  const inside = rel === '' || (!rel.startsWith('../') && rel !== '..' && !isAbsolute(rel));
  // Only exclusions ("!archive/**") exclude from the default: every YAML file.
  const globs = config.resources ?? [];
  const own = globs.length === 0 ? undefined : globs.some((g) => !isExclusion(g)) ? globs : [...DEFAULT_GLOBS, ...globs];
  if (!inside) return { base: config.dir, patterns: DEFAULT_GLOBS, under: '', fromConfig: false };
  return { base: folder, patterns: own ?? DEFAULT_GLOBS, under: rel, fromConfig: own !== undefined };
}

/** The repository: the resources' base folder, as a real path (links resolved), that files must stay in. */
function repositoryRoot(config: ResolvedConfig): string {
  const base = resourceScope(config).base;
  try {
    return realpathSync.native(base);
  } catch {
    return base;
  }
}

const matchers = new Map<string, (path: string) => boolean>();

/** The bounded matcher of `globs` (src/load/glob-match.ts), kept: watch asks for one file at a time. */
function matcherOf(globs: readonly string[]): (path: string) => boolean {
  const key = JSON.stringify(globs);
  let m = matchers.get(key);
  if (m === undefined) {
    if (matchers.size >= 16) matchers.clear();
    m = globMatcher(globs);
    matchers.set(key, m);
  }
  return m;
}

/** Pure: the files among `paths` (relative to config.dir) that are desired-state files. */
export function selectResourcePaths(paths: readonly string[], config: ResolvedConfig): string[] {
  const selects = resourcePredicate(config);
  const out = new Set<string>();
  for (const raw of paths) {
    const p = toPosix(raw);
    if (selects(p)) out.add(p);
  }
  return [...out].sort();
}

/** Pure: whether a path (relative to config.dir, posix) is a desired-state file's. */
function resourcePredicate(config: ResolvedConfig): (path: string) => boolean {
  const { base, patterns, under } = resourceScope(config);
  // A list of globs is ORed, so a negation in it would match everything: split them.
  const positives = patterns.filter((p) => !isExclusion(p));
  const negatives = patterns.filter(isExclusion).map(globOf);
  const included = matcherOf(positives.length > 0 ? positives : [...DEFAULT_GLOBS]);
  const excluded = matcherOf(negatives);
  const match = (path: string): boolean => included(path) && !excluded(path) && (under === '' || path.startsWith(`${under}/`));
  const configRel = config.file ? toPosix(relative(config.dir, config.file)) : undefined;
  return (p) => {
    if (p === configRel) return false;
    if (p.split('/').some((s) => s === 'node_modules' || (s.startsWith('.') && s !== '..'))) return false;
    const fromBase = base === config.dir && isPlainRelative(p) ? p : toPosix(relative(base, join(config.dir, p)));
    return match(fromBase);
  };
}

/** Every desired-state file, relative to config.dir with posix separators, sorted. */
export async function listResourceFiles(config: ResolvedConfig): Promise<string[]> {
  return (await listWithTypes(config)).paths;
}

export interface Listed {
  readonly paths: string[];
  /** Those of `paths` the listing saw as regular files: read without an lstat first (src/load/read-file.ts). */
  readonly regular: ReadonlySet<string>;
}

async function listWithTypes(config: ResolvedConfig): Promise<Listed> {
  try {
    const st = await stat(config.dir);
    if (!st.isDirectory()) throw new UserError(`${config.dir} is not a folder; --dir takes the folder of the desired-state files`);
  } catch (err) {
    if (err instanceof UserError) throw err;
    // A dangling link or a loop of links on the way is named, not taken for a missing folder.
    const not = whyNotAFolder(config.dir);
    if (not === undefined || not.kind === 'missing') throw new UserError(`the folder ${config.dir} does not exist; check --dir or the location of dus-sync.yaml`);
    throw new UserError(`the folder ${config.dir} cannot be read: ${not.why}; check --dir or the location of dus-sync.yaml`);
  }
  return listIn(config);
}

/**
 * The desired-state files that the config's globs select in `fs` (the disk unless told; for
 * `diff --base`, the base commit's tree), by the working tree's rules: links followed inside the
 * repository only, a file reached by several paths read once, links not walked listed for the
 * reader to report. Throws a UserError for what the config or the folders make unreadable.
 */
export function listIn(config: ResolvedConfig, fs?: WalkFs): Listed {
  const { base, patterns, under } = resourceScope(config);
  const realRoot = repositoryRoot(config);
  const followExternalSymlinks = readPolicy(config).followExternalSymlinks;
  if (ambiguousPath(realRoot) && followExternalSymlinks !== true) {
    throw new UserError(`the repository folder ${printable(realRoot)} has a name holding U+FFFD, which is also how bytes that are not UTF-8 are shown: dus-sync cannot tell which folders are inside it, so it reads none; move or rename it to a path without such characters (or pass --follow-external-symlinks, which reads outside the repository too)`);
  }
  // A glob that would read other files than it names (src/load/resource-globs.ts) is refused,
  // whatever the flags, saying how to write it.
  for (const p of config.resources ?? []) {
    const problem = globProblem(p);
    if (problem !== undefined) throw new UserError(`${configShown(config)}: the resources glob ${JSON.stringify(shortGlob(p))} ${problem.reason}: ${problem.advice}`);
  }
  const together = globsProblem(config.resources ?? []);
  if (together !== undefined) throw new UserError(`${configShown(config)}: the resources globs ${together.reason}: ${together.advice}`);
  if (followExternalSymlinks !== true) {
    // The config is the repository's own: a change to it must not make dus-sync read (and quote,
    // in its issues) files elsewhere on the machine, as a link out may not (Argo CD and kustomize
    // keep to the repository's root the same way).
    const out = patterns.find(reachesOutside);
    if (out !== undefined) {
      throw new UserError(`${configShown(config)}: the resources glob ${JSON.stringify(out)} reaches outside the repository folder ${printable(realRoot)} (the folder of the config file); dus-sync reads only files inside it, so that a change to dus-sync.yaml cannot make it read other files of the machine it runs on: keep dus-sync.yaml in a folder that holds the files (the top of the repository), or pass --follow-external-symlinks (DUS_FOLLOW_EXTERNAL_SYMLINKS=1) to read outside it`);
    }
  }
  const found = findCandidates({ base, realRoot, patterns, under, followExternalSymlinks, ...(fs ? { fs } : {}) });
  // (A folder an exclusion rules out whole matters only when a link might lead into it.)
  const undecodable = found.aliases.length > 0 ? [...found.undecodable, ...found.undecodableExcluded].sort() : found.undecodable;
  if (undecodable.length > 0) {
    const folder = undecodable[0]!;
    const shown = displayPath(config, toPosix(relative(config.dir, join(base, folder))) || '.');
    throw new UserError(`${shown}: this folder holds a name that is not valid UTF-8 (shown with U+FFFD), which dus-sync cannot open by name or tell apart from another: rename it with UTF-8 characters${undecodable.length > 1 ? ` (${undecodable.length - 1} more folders hold such names)` : ''}`);
  }
  const same = base === config.dir;
  const fromDir = (p: string): string => (same && isPlainRelative(p) ? p : toPosix(relative(config.dir, join(base, p))));
  if (found.loops.length > 0) {
    const [link, to] = found.loops[0]!;
    throw new UserError(`${displayPath(config, fromDir(link))}: this symbolic link leads to ${printable(to)}, a folder on its own way (a loop), and --dir or a resources glob passes through it; dus-sync does not follow such links, whose paths are the same files again: name the folder itself`);
  }
  const tooManyLinkPaths = (): UserError => {
    const [link, listedAs] = found.aliases[0]!;
    return new UserError(`${displayPath(config, fromDir(link))}: this symbolic link leads to ${displayPath(config, fromDir(listedAs))}, a folder listed by its own path (whether the globs select it there or not), and with the ${found.aliases.length.toLocaleString('en-US')} links like it makes more than ${MAX_LINK_PATHS.toLocaleString('en-US')} paths (or 64 MiB of them) to try for files the globs leave out by their own paths, or for links that lead nowhere or out below them; dus-sync tries such paths through links, and stops there: name the real folders in "resources" of ${configShown(config)}, or remove links`);
  };
  if (found.tooManyPaths === true) throw tooManyLinkPaths();
  // Links to folders that were not walked are listed too, so that reading them reports why.
  const unwalked = found.unwalked.filter((p) => under === '' || p === under || p.startsWith(`${under}/`));
  const selected = new Set([...selectResourcePaths(found.entries.map(fromDir), config), ...unwalked.map(fromDir)]);
  // A folder listed by one path is not walked again through a link to it; a file below it that
  // the globs leave out by the path listed may be selected by its path through the link.
  const realOf = new Map(found.realOf);
  const entries = [...found.entries];
  if (found.aliases.length > 0) {
    const selects = resourcePredicate(config);
    // Only files whose name some glob may match by any path are tried (not the binaries beside
    // the YAML), and a path through links that loops is never taken (loopsOnTheWay).
    const nameMay = fileNameMayMatch(patterns.filter((p) => !isExclusion(p)));
    const through = throughLinks(found, (e) => !selected.has(fromDir(e)) && nameMay(e.slice(e.lastIndexOf('/') + 1)), (p) => selects(fromDir(p)) && !loopsOnTheWay(fs ?? DISK, base, p));
    if (through === 'too-many') throw tooManyLinkPaths();
    for (const [e, p] of through) {
      if (realOf.has(p) || selected.has(fromDir(p))) continue;
      selected.add(fromDir(p));
      entries.push(p);
      realOf.set(p, found.realOf.get(e) ?? join(realRoot, e));
    }
  }
  // A file the globs select by several paths (its own, and through links) is read once: by its
  // own path when that is selected, else by the first. Only paths through links need a look.
  if (realOf.size > 0) {
    const byReal = new Map<string, string>();
    const toDir = new Map(entries.map((e) => [fromDir(e), e] as const));
    const realOfSelected = (p: string): string => {
      const e = toDir.get(p);
      return e === undefined ? join(realRoot, p) : realOf.get(e) ?? join(realRoot, e);
    };
    const ownFirst = [...selected].sort((a, b) => Number(realOf.has(toDir.get(a) ?? '')) - Number(realOf.has(toDir.get(b) ?? '')) || (a < b ? -1 : a > b ? 1 : 0));
    for (const p of ownFirst) {
      const real = realOfSelected(p);
      if (byReal.has(real)) selected.delete(p);
      else byReal.set(real, p);
    }
  }
  const regular = new Set<string>();
  for (const p of found.regular) regular.add(fromDir(p));
  return { paths: [...selected].sort(), regular };
}

// ---------------------------------------------------------------- parsing one file

export interface ParseOptions {
  /** false: the documents are only compared, never sent (the base of diff): a key in them is no issue. */
  readonly sent?: boolean;
  /**
   * false: the caller keeps no object (validate without --tenant or --selector), so the fast
   * path makes none (a valid document then has an identity and no object; the yaml path still
   * makes them). Made anyway when a key is known, which the search for keys in values needs.
   */
  readonly objects?: boolean;
}

/**
 * One file's documents, validated on their own. Never throws. Pure but for the keys known to
 * redaction: a value that holds one is an issue (keysInValues).
 */
export function parseFile(file: SourceFile, config: ResolvedConfig, opts: ParseOptions = {}): ParsedFile {
  const shown = displayPath(config, file.path);
  try {
    // Without objects only when no key is known: the search for keys in values reads the objects.
    const parsed = fastParseFile(file, shown, config, opts.objects !== false || anySecrets()) ?? parseFileWithYaml(file, shown, config);
    // (The base of diff is never sent: a change that takes a key out of a file must diff.)
    return opts.sent === false ? parsed : keysInValues(file, parsed, readPolicy(config).maxFileBytes);
  } catch (err) {
    // A bug in a check must not hide the other files' results.
    const message = `this file could not be checked (${err instanceof Error ? err.message : String(err)}); please report it`;
    return { path: file.path, file: shown, documents: [], issues: [{ file: shown, line: 1, column: 1, pointer: '', message }] };
  }
}

/**
 * A valid document whose spec holds an API key known to redaction (a tenant's key pasted into a
 * phase name, a note, a file name) is refused: apply would send the key to the API, where it is
 * stored and shown to anyone who can read the tenant, while every output of dus-sync shows it as
 * [REDACTED] and nobody notices. A sent value counts when redaction would change it (any 8
 * characters of a key, as written or encoded: what plan shows as [REDACTED] is never sent, a key
 * cut short included); the tenant's name, sent in a header, when it holds a whole key
 * (holdsWholeKey), so that a name sharing a word with a key stays usable. A number counts as
 * the digits JSON sends. One search of the sent
 * values' strings, joined, decides for nearly every file; only on a hit is each string searched,
 * and the file parsed again for the places.
 */
function keysInValues(file: SourceFile, parsed: ParsedFile, maxFileBytes: number): ParsedFile {
  if (!anySecrets()) return parsed;
  // What apply sends: a firmware's spec, an action's phases.
  const sent = (o: DesiredObject): { value: unknown; at: string[] } => (o.kind === 'firmware' ? { value: o.spec, at: ['spec'] } : { value: o.phases, at: ['spec', 'phases'] });
  const strings: string[] = [];
  for (const d of parsed.documents) {
    if (d.object === undefined) continue;
    gatherStrings(sent(d.object).value, strings);
    // An action's id is sent in every request path about it.
    if (d.object.kind === 'action') gatherStrings(d.object.id, strings);
  }
  const tenantHolds = parsed.documents.some((d) => d.object !== undefined && holdsWholeKey(d.object.tenant));
  if (!tenantHolds && (strings.length === 0 || !showsKey(strings.join('\n')))) return parsed;
  const found: { index: number; path: string[]; key: boolean }[] = [];
  const walk = (v: unknown, path: string[], index: number): void => {
    if (typeof v === 'string' || typeof v === 'number') {
      if (showsKey(String(v))) found.push({ index, path, key: false });
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, [...path, String(i)], index));
    } else if (isPlainObject(v)) {
      for (const [k, x] of Object.entries(v)) {
        if (showsKey(k)) found.push({ index, path: [...path, k], key: true });
        walk(x, [...path, k], index);
      }
    }
  };
  for (const d of parsed.documents) {
    if (d.object === undefined) continue;
    const { value, at } = sent(d.object);
    walk(value, at, d.index);
    if (d.object.kind === 'action') walk(d.object.id, ['spec', 'id'], d.index);
    if (holdsWholeKey(d.object.tenant)) found.push({ index: d.index, path: ['metadata', 'tenant'], key: false });
  }
  if (found.length === 0) return parsed;
  const src = parseYamlSource(parsed.file, file.text, maxFileBytes);
  const issues: ConfigIssue[] = found.map(({ index, path, key }) => {
    const doc = src.documents[index];
    const at = doc === undefined ? parsed.documents.find((d) => d.index === index)!.source : yamlPosition(src, doc)(path, key);
    return {
      ...at, pointer: redact(`/${path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`),
      message: `${redact(path.join('.'))}${key ? ' (the field name)' : ''} holds an API key or part of one (shown as ${REDACTED}), which dus-sync would send to the API, where anyone who can read the tenant sees it: remove the key from this value, and rotate it if this file was ever pushed`,
    };
  });
  // Nothing of such a document is desired state: the file is invalid, as with any other issue.
  const bad = new Set(found.map((f) => f.index));
  return {
    ...parsed,
    documents: parsed.documents.map((d) => (bad.has(d.index) ? (d.identity ? new IdentifiedDocument(d.index, d.source, d.identity, undefined) : { index: d.index, source: d.source }) : d)),
    issues: sortIssues([...parsed.issues, ...issues]),
  };
}

/**
 * Every string of a parsed value, every field name, and every number as the text it is sent as
 * (a key of digits, or 8 digits of one, written as a YAML number is sent as those digits), into `into`.
 */
function gatherStrings(v: unknown, into: string[]): void {
  if (typeof v === 'string') into.push(v);
  // Fewer than 8 characters hold no 8 of a key (most sizes): not made into text.
  else if (typeof v === 'number') { if (!(v >= 0 && v < 1e7 && Number.isInteger(v))) into.push(String(v)); }
  else if (Array.isArray(v)) for (const x of v) gatherStrings(x, into);
  else if (isPlainObject(v)) {
    for (const k in v) {
      into.push(k);
      gatherStrings(v[k], into);
    }
  }
}

/** The reference path: every node keeps its position, so every issue gets an exact place. */
export function parseFileWithYaml(file: SourceFile, shown: string, config: ResolvedConfig): ParsedFile {
  {
    const src = parseYamlSource(shown, file.text, readPolicy(config).maxFileBytes);
    const documents: ParsedDocument[] = [];
    const issues: ConfigIssue[] = [...src.issues];
    src.documents.forEach((doc, index) => {
      const r = parseDocument(src, doc, index, config, file.path);
      documents.push(r.document);
      issues.push(...r.issues);
    });
    return { path: file.path, file: shown, documents, issues: sortIssues(issues) };
  }
}

function parseDocument(src: YamlSource, doc: Document.Parsed, index: number, config: ResolvedConfig, path: string): { document: ParsedDocument; issues: ConfigIssue[] } {
  const start = issueAt(src.file, src.lineCounter, offsetOf(doc.contents!), '', '');
  const source: SourceLocation = { file: start.file, line: start.line, column: start.column };
  const bare: ParsedDocument = { index, source };
  const fail = (message: string) => ({ document: bare, issues: [{ ...start, message }] });

  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    const unresolved = err instanceof ReferenceError ? unresolvedAlias(doc) : undefined;
    if (unresolved !== undefined) {
      const at = issueAt(src.file, src.lineCounter, unresolved.offset, '', '');
      const name = JSON.stringify(unresolved.name).slice(1, -1);
      return { document: bare, issues: [{ ...at, message: `the alias *${name} names no anchor &${name} set before it in this document (an anchor does not reach into another document); set the anchor first, or write the value out` }] };
    }
    return fail(`the document expands too many YAML aliases (more than ${MAX_ALIAS_COUNT}); write the values out instead`);
  }
  if (!isPlainObject(value)) {
    return fail('a document must be a mapping with apiVersion, kind, metadata and spec; this one is not');
  }
  if (!('apiVersion' in value)) {
    return fail('this document has no "apiVersion: dus-sync/v1", so it is not a dus-sync document; add it, or keep this file out of the resources (see "resources" in dus-sync.yaml)');
  }
  if (value.apiVersion === 'dus-sync/v1' && value.kind === 'Config') {
    // The config in use met again through a link (tenants/acme/root -> ../..): not a document.
    if (isConfigInUse(config, path)) return { document: bare, issues: [] };
    return fail(anotherConfig(config, path, src.file));
  }

  const scanned = scanNodes(src, doc);
  const refused = scanned.some((i) => i.message.startsWith('the key "'));
  const validate = validator('resource');
  const valid = !refused && validate(value) && scanned.length === 0;
  const issues = [...scanned];
  if (!refused && validate.errors) issues.push(...schemaIssues(src, doc, validate.errors, new Set(scanned.map((i) => i.pointer))));

  const position = yamlPosition(src, doc);
  const sem = semanticChecks(value, config, position, mayHoldPlaceholder(src.text));
  // A required field whose absence an unknown field explains covers what its absence implies too.
  const explained = !refused && validate.errors ? [...findSlips(doc, validate.errors).explained] : [];
  const reported = [...issues.map((i) => i.pointer), ...explained];
  issues.push(...sem.issues.filter((i) => !reported.some((p) => i.pointer === p || i.pointer.startsWith(p + '/'))));
  const identity = refused ? undefined : sem.identity;
  const object = valid && sem.issues.length === 0 && identity ? buildObject(value, identity.tenant, source, position) : undefined;
  return { document: identity ? new IdentifiedDocument(index, source, identity, object) : bare, issues };
}

/** The first alias of the document that names no anchor set before it, and where it is. */
function unresolvedAlias(doc: Document.Parsed): { name: string; offset: number } | undefined {
  let found: { name: string; offset: number } | undefined;
  visit(doc, {
    Alias(_key, node) {
      if (isAlias(node) && node.resolve(doc) === undefined) {
        found = { name: node.source, offset: node.range?.[0] ?? 0 };
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return found;
}

/** Whether the file at `path` is the config in use, reached through a link. */
function isConfigInUse(config: ResolvedConfig, path: string): boolean {
  if (!config.file) return false;
  try {
    return realpathSync(join(config.dir, path)) === realpathSync(config.file);
  } catch {
    return false;
  }
}

/**
 * A config among the resources that is not the one in use (that one is never listed): another
 * environment's, or a nested repository's. Its documents are not desired state, and the files
 * beside it were probably meant for it, so it is an error that says how to go either way.
 */
function anotherConfig(config: ResolvedConfig, path: string, shown: string): string {
  const what = 'this is a dus-sync config (kind: Config), not a desired-state document';
  if (!config.file) return `${what}; to use it, pass --config ${shown}; otherwise move it out of the resources folder`;
  const { base } = resourceScope(config);
  const glob = toPosix(relative(base, join(config.dir, path)));
  const inUse = toPosix(relative(process.cwd(), config.file)) || config.file;
  const away = base === configFolder(config) ? `add "!${glob}" to resources in ${inUse}` : 'move it out of the --dir folder';
  return `${what}, and not the config in use (${inUse}); to use it, pass --config ${shown}; otherwise keep it out of the resources: ${away}`;
}

// ---------------------------------------------------------------- assembling

function sortIssues(issues: readonly ConfigIssue[]): ConfigIssue[] {
  return [...issues].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line || a.column - b.column || (a.message < b.message ? -1 : a.message > b.message ? 1 : 0)));
}

export function included(o: DesiredObject, filter: LoadFilter | undefined): boolean {
  if (filter?.tenants && filter.tenants.length > 0 && !filter.tenants.includes(o.tenant)) return false;
  if (filter?.selector) for (const [k, v] of Object.entries(filter.selector)) if (o.labels[k] !== v) return false;
  return true;
}

/**
 * Pure: the cross-file checks (an identity defined twice) and the DesiredState. `sorted: false`
 * (validate, which uses only the issues) leaves the desired objects in file order: sorting
 * 200,000 firmwares was a tenth of a validate.
 */
export function assemble(files: readonly ParsedFile[], config: ResolvedConfig, filter?: LoadFilter, opts: AssembleOptions = {}): LoadResult {
  // The files come sorted from listResourceFiles (and watch's cache keeps them so): check in one
  // pass before sorting a copy.
  const byPath = (a: ParsedFile, b: ParsedFile): number => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  const sorted = inOrder(files, byPath) ? files : [...files].sort(byPath);
  const a = assembler(config, filter, opts);
  for (const f of sorted) a.add(f);
  return a.finish();
}

export interface AssembleOptions {
  readonly sorted?: boolean;
  /** Told each object the desired state takes (past the filter, not a duplicate), as its file is assembled: plan starts reading its actions then. */
  readonly onObject?: (o: DesiredObject) => void;
  /**
   * false: the objects are checked (duplicates, windows) but not kept, and the desired state
   * comes back empty: validate shows only the issues, and keeping 200,000 objects it never reads
   * was most of its garbage collection.
   */
  readonly keepObjects?: boolean;
}

/** assemble, one file at a time, in path order: what plan keeps of a file is its objects, not its parse. */
export interface Assembler {
  add(file: ParsedFile): void;
  finish(): LoadResult;
}

/**
 * First definitions' places, by a small number each (the FirstSeen table's value): a place kept as one
 * number of file × 2^32 + line was a heap-allocated number per identity (past V8's small
 * integers), 200,000 of them rehashed and collected in a large load.
 */
class Places {
  private files = new Uint32Array(1024);
  private lines = new Uint32Array(1024);
  private count = 0;
  /** The place's number. */
  add(file: number, line: number): number {
    if (this.count === this.files.length) {
      const files = new Uint32Array(this.count * 2);
      files.set(this.files);
      this.files = files;
      const lines = new Uint32Array(this.count * 2);
      lines.set(this.lines);
      this.lines = lines;
    }
    this.files[this.count] = file;
    this.lines[this.count] = line;
    return this.count++;
  }
  file(n: number): number { return this.files[n]!; }
  line(n: number): number { return this.lines[n]!; }
}

export function assembler(config: ResolvedConfig, filter?: LoadFilter, opts: AssembleOptions = {}): Assembler {
  const issues: ConfigIssue[] = [];
  // kind and tenant, then key (a FirstSeen table, src/load/first-seen.ts): no joined string per
  // document (a new string to hash, 200,000 of them).
  // The first definition's place is one number (Places), its file an index in `shownFiles`: a
  // location object each was 10 MB held at 200,000 documents, for a message seldom made.
  const firstSeen = new Map<string, FirstSeen>();
  const shownFiles: string[] = [];
  const places = new Places();
  let lastKind: string | undefined;
  let lastTenant: string | undefined;
  let lastSeen: FirstSeen | undefined;
  const firmwares: DesiredFirmware[] = [];
  const actions: DesiredAction[] = [];
  const paths: string[] = [];
  // Every document's tenant, for the check of the windows' tenants.
  const windowTenants = config.windows?.some((w) => w.tenants !== undefined) === true;
  const tenants = new Set<string>();
  let lastPath: string | undefined;
  const keep = opts.keepObjects !== false;
  // Each spelling of a tenant, by the name a server may take it for (tenantFold): two spellings
  // of one would be planned and applied as two tenants, each appending the same phase.
  const spellings = new Map<string, { name: string; at: SourceLocation }>();
  const reported = new Set<string>();
  let lastSpelling: string | undefined;
  const checkSpelling = (tenant: string, at: SourceLocation): void => {
    lastSpelling = tenant;
    const fold = tenantFold(tenant);
    const first = spellings.get(fold);
    if (first === undefined) spellings.set(fold, { name: tenant, at });
    else if (first.name !== tenant && !reported.has(tenant)) {
      reported.add(tenant);
      issues.push({ ...at, pointer: '/metadata/tenant', message: `tenant ${JSON.stringify(tenant)} of this document and ${JSON.stringify(first.name)} (${first.at.file}:${first.at.line}) may be one tenant to the service, which may ignore case and spaces at the ends: as two they would be planned and applied apart, and could append the same phase twice; write the name one way` });
    }
  };
  return {
    add(f) {
      // The first definition of an identity is the one in the first file in path order.
      if (lastPath !== undefined && f.path < lastPath) throw new Error(`assembler: ${f.path} came after ${lastPath}`);
      lastPath = f.path;
      paths.push(f.path);
      for (const i of f.issues) issues.push(i);
      for (const d of f.documents) {
        let duplicate = false;
        // (A getter: it makes the identity each time it is asked.)
        const id = d.identity;
        if (id) {
          if (windowTenants) tenants.add(id.tenant);
          if (id.tenant !== lastSpelling) checkSpelling(id.tenant, d.source);
          // Documents come grouped by kind and tenant, mostly: the last scope is asked first.
          if (id.kind !== lastKind || id.tenant !== lastTenant) {
            const scope = `${id.kind}\u0000${id.tenant}`;
            lastSeen = firstSeen.get(scope);
            if (lastSeen === undefined) firstSeen.set(scope, lastSeen = new FirstSeen());
            lastKind = id.kind;
            lastTenant = id.tenant;
          }
          const seen = lastSeen!;
          const first = seen.find(id.key);
          const at = id.location;
          if (first >= 0) {
            duplicate = true;
            const what = id.kind === 'firmware' ? `firmware "${id.key}"` : `action ${id.key}`;
            const firstAt = `${shownFiles[places.file(first)]}:${places.line(first)}`;
            issues.push({ ...at, pointer: id.pointer, message: `${what} of tenant "${id.tenant}" is defined twice; the first definition is at ${firstAt}; keep one` });
          } else {
            if (shownFiles[shownFiles.length - 1] !== at.file) shownFiles.push(at.file);
            seen.add(id.key, places.add(shownFiles.length - 1, at.line));
          }
        }
        const o = d.object;
        if (!keep || !o || duplicate || !included(o, filter)) continue;
        if (o.kind === 'firmware') firmwares.push(o);
        else actions.push(o);
        opts.onObject?.(o);
      }
    },
    finish() {
      if (windowTenants) issues.push(...windowTenantIssues(config, tenants));
      if (opts.sorted !== false) {
        sortFirmwares(firmwares);
        const byId = (a: DesiredAction, b: DesiredAction): number => cmp(a.tenant, b.tenant) || a.id - b.id;
        if (!inOrder(actions, byId)) actions.sort(byId);
      }
      return { desired: { firmwares, actions, files: paths }, issues: sortIssues(issues) };
    },
  };
}

/**
 * A window's `tenants` entry must name a tenant of the repository (listed under tenants:, the
 * default tenant, or a document's): a misspelt one would make a freeze hold nothing, silently.
 * Every document counts, whatever --tenant or --selector leave out.
 */
function windowTenantIssues(config: ResolvedConfig, documentTenants: ReadonlySet<string>): ConfigIssue[] {
  const known = new Set(Object.keys(config.tenants));
  if (config.defaultTenant !== undefined) known.add(config.defaultTenant);
  for (const t of documentTenants) known.add(t);
  const issues: ConfigIssue[] = [];
  (config.windows ?? []).forEach((w, i) => {
    (w.tenants ?? []).forEach((t, j) => {
      if (known.has(t)) return;
      const at = w.tenantsAt?.[j] ?? { file: config.file ? toPosix(relative(process.cwd(), config.file)) || config.file : 'dus-sync.yaml', line: 1, column: 1 };
      issues.push({
        ...at, pointer: `/windows/${i}/tenants/${j}`,
        message: `window "${w.name}" (windows[${i}]) names tenant "${t}", which no tenants: entry, default_tenant or document names, so it would hold nothing${hint(t, [...known]) || knownList(known)}`,
      });
    });
  });
  return issues;
}

function knownList(known: ReadonlySet<string>): string {
  const names = [...known].sort();
  if (names.length === 0) return '';
  return `; the tenants known are ${names.slice(0, 5).map((k) => `"${k}"`).join(', ')}${names.length > 5 ? ` and ${names.length - 5} more` : ''}`;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function inOrder<T>(items: readonly T[], compare: (a: T, b: T) => number): boolean {
  for (let i = 1; i < items.length; i++) if (compare(items[i - 1]!, items[i]!) > 0) return false;
  return true;
}

/**
 * By tenant, then version number (unique within a tenant once duplicates are dropped). Each
 * tenant's firmwares are sorted on their own with a single string comparison: the two-key
 * comparator over all 200,000 documents took a quarter of a second of every pass.
 */
function sortFirmwares(firmwares: DesiredFirmware[]): void {
  const byVersion = (a: DesiredFirmware, b: DesiredFirmware): number => cmp(a.spec.version_number, b.spec.version_number);
  const byTenant = new Map<string, DesiredFirmware[]>();
  for (const f of firmwares) {
    let list = byTenant.get(f.tenant);
    if (list === undefined) byTenant.set(f.tenant, list = []);
    list.push(f);
  }
  let i = 0;
  for (const tenant of [...byTenant.keys()].sort()) {
    const list = byTenant.get(tenant)!;
    if (!inOrder(list, byVersion)) list.sort(byVersion);
    for (const f of list) firmwares[i++] = f;
  }
}

/** `sent: false`: the documents are only compared, never sent (the base of diff): a key in them is no issue. */
export function loadDocuments(files: readonly SourceFile[], config: ResolvedConfig, filter?: LoadFilter, opts: Pick<ParseOptions, 'sent'> = {}): LoadResult {
  return assemble(files.map((f) => parseFile(f, config, opts)), config, filter);
}

// ---------------------------------------------------------------- reading

/**
 * Reads the files through readParsedFile. Synchronously, one at a time: thousands of small
 * files through the promise API cost some ten times more (a thread-pool round trip per open,
 * stat, read and close: 0.3 s of CPU for a 20,000-document repo), and only one file is ever
 * open. The event loop gets a turn every few milliseconds: plan reads the bundle list while the
 * files load, and its answers are taken between files (every 256 files left the list waiting
 * tens of milliseconds a page); in one long synchronous burst V8 also grows the heap more.
 */
export async function readParsedFiles(config: ResolvedConfig, paths?: readonly string[]): Promise<ParsedFile[]> {
  const out: ParsedFile[] = [];
  await eachParsedFile(config, (f) => { out.push(f); }, paths);
  return out;
}

/** readParsedFiles, each file given to `onFile` as it is parsed (in path order) and not kept. */
export async function eachParsedFile(config: ResolvedConfig, onFile: (file: ParsedFile) => void, paths?: readonly string[], parse: ParseOptions = {}): Promise<void> {
  let list = paths;
  let regular: ReadonlySet<string> | undefined;
  if (list === undefined) ({ paths: list, regular } = await listWithTypes(config));
  const base = readOptions(config, repositoryRoot(config));
  // The last folder read stays open for the next file in it (closed at the end of the load).
  const folders: FolderCache = {};
  // Files are read a few at a time before they are parsed: where their folder is (it must still
  // be inside the repository after each open, see FolderCache) is then checked once for them, not
  // once a file (a readlink in /proc a file was 2% of a validate at 200,000 documents). A batch
  // is one folder's files, at most BATCH_FILES of them and about BATCH_BYTES of text.
  let batch: { path: string; read: ReadResult }[] = [];
  let batchDir: string | undefined;
  let batchBytes = 0;
  const flush = (): void => {
    if (batch.length === 0) return;
    const moved = batch.some((b) => b.read.ok && b.read.unconfirmed === true) ? confirmFolder(folders) : undefined;
    const done = batch;
    batch = [];
    batchBytes = 0;
    for (const { path, read } of done) {
      onFile(parsedRead(config, path, moved !== undefined && read.ok && read.unconfirmed === true ? { ok: false, message: moved } : read, parse));
    }
  };
  try {
    let turn = performance.now();
    for (let i = 0; i < list.length; i++) {
      if ((i & 7) === 0 && i > 0 && performance.now() - turn >= TURN_MS) {
        flush();
        await new Promise<void>((resolve) => setImmediate(resolve));
        turn = performance.now();
      }
      const path = list[i]!;
      const abs = join(config.dir, path);
      const dir = dirname(abs);
      if (dir !== batchDir || batch.length >= BATCH_FILES || batchBytes >= BATCH_BYTES) {
        flush();
        batchDir = dir;
      }
      const read = readRegularFile(abs, { ...base, listedRegular: regular?.has(path) === true, folders, deferFolderCheck: true });
      batch.push({ path, read });
      if (read.ok) batchBytes += read.text.length;
    }
    flush();
  } finally {
    closeFolderCache(folders);
  }
}

/** Files read before their folder's place is checked and they are parsed (eachParsedFile). */
const BATCH_FILES = 32;
const BATCH_BYTES = 1024 * 1024;

/** What the selection checks need of the files (src/load/selection.ts): counts, and every object when --tenant or --selector asks. */
export interface SelectionFacts {
  readonly files: number;
  /** Files with at least one document. */
  readonly withDocuments: number;
  /** Documents in all (valid or not). */
  readonly documents?: number;
  /** Every valid document's object, whatever the filter; only when the filter names tenants or labels. */
  readonly objects?: readonly DesiredObject[];
}

export function filters(filter: LoadFilter | undefined): boolean {
  return (filter?.tenants ?? []).length > 0 || Object.keys(filter?.selector ?? {}).length > 0;
}

/**
 * Reads, parses and assembles in one go, each file as it is parsed: what is kept of a file is
 * its objects, not its parse (the parses of 200,000 documents, with their identities and
 * positions, were some 45 MB held until the end of the load, and the heap grew by several times that).
 */
export async function loadAssembled(config: ResolvedConfig, filter?: LoadFilter, opts: AssembleOptions = {}): Promise<{ result: LoadResult; facts: SelectionFacts }> {
  const a = assembler(config, filter, opts);
  let files = 0;
  let withDocuments = 0;
  let documents = 0;
  const objects: DesiredObject[] | undefined = filters(filter) ? [] : undefined;
  // Nothing reads the objects of a load that keeps none, selects none and is told of none.
  const unread = opts.keepObjects === false && objects === undefined && opts.onObject === undefined;
  await eachParsedFile(config, (f) => {
    a.add(f);
    files += 1;
    documents += f.documents.length;
    if (f.documents.length > 0) withDocuments += 1;
    if (objects !== undefined) for (const d of f.documents) if (d.object) objects.push(d.object);
  }, undefined, unread ? { objects: false } : {});
  return { result: a.finish(), facts: { files, withDocuments, documents, ...(objects !== undefined ? { objects } : {}) } };
}

/** How long loading runs before the event loop gets a turn. */
const TURN_MS = 4;

/**
 * Reads one desired-state file and parses it. The one way the loader (and watch's cache) reads a
 * file: a regular file only, at most --max-file-size bytes (counted while reading), not through a
 * link that leaves the repository unless --follow-external-symlinks; anything else becomes an
 * issue at the file's first line, never a hang or an exception.
 */
export function readParsedFile(config: ResolvedConfig, path: string, got?: { stat?: FileStamp }): ParsedFile {
  const read = readRegularFile(join(config.dir, path), readOptions(config, repositoryRoot(config)));
  if (got !== undefined && read.ok && read.stat !== undefined) got.stat = read.stat;
  return parsedRead(config, path, read, {});
}

/**
 * For `diff --base`: a file outside the git repository that a link of the base commit leads to,
 * which git does not hold, read from the disk as it is now, as the working tree's is (the reader
 * holds it to the repository unless --follow-external-symlinks; refusedOutside says why first).
 */
export function readOutsideFile(config: ResolvedConfig, real: string): { readonly text: string } | { readonly message: string } {
  const read = readRegularFile(real, readOptions(config, repositoryRoot(config)));
  return read.ok ? { text: read.text } : { message: read.message };
}

/** Why a file at the real path `real` is not read, as the working tree's reader says it: out of the repository folder, without --follow-external-symlinks. */
export function refusedOutside(config: ResolvedConfig, real: string): string | undefined {
  const root = repositoryRoot(config);
  if (readPolicy(config).followExternalSymlinks || isInside(root, real)) return undefined;
  return `this symbolic link leads to ${printable(real)}, outside the repository folder ${printable(root)}; dus-sync reads only files inside it: copy the file into the repository, or pass --follow-external-symlinks to allow links that leave it`;
}

/**
 * Why the config file at a commit, leading to `real`, is not read: a link out of the folder that
 * holds it (the working tree's rule for dus-sync.yaml, src/load/config.ts), without --follow-external-symlinks.
 */
export function refusedConfigLink(config: ResolvedConfig, real: string): string | undefined {
  if (config.file === undefined || readPolicy(config).followExternalSymlinks) return undefined;
  let folder: string;
  try {
    folder = realpathSync.native(dirname(config.file));
  } catch {
    folder = dirname(config.file);
  }
  if (isInside(folder, real)) return undefined;
  return `this config file is a link to ${printable(real)}, outside the folder that holds it; pass --follow-external-symlinks to read it`;
}

/** How a desired-state file of this config is read: the size limit, the repository, the link rule. */
function readOptions(config: ResolvedConfig, root: string): ReadOptions {
  const policy = readPolicy(config);
  return { maxBytes: policy.maxFileBytes, root, followExternalSymlinks: policy.followExternalSymlinks };
}

/** A file's read, parsed; a refused read is an issue at the file's first line. */
function parsedRead(config: ResolvedConfig, path: string, read: ReadResult, parse: ParseOptions): ParsedFile {
  if (!read.ok) {
    const shown = displayPath(config, path);
    return { path, file: shown, documents: [], issues: [{ file: shown, line: 1, column: 1, pointer: '', message: read.message }] };
  }
  return parseFile({ path, text: read.text }, config, parse);
}

export async function loadDesiredState(config: ResolvedConfig, filter?: LoadFilter): Promise<LoadResult> {
  return assemble(await readParsedFiles(config), config, filter);
}

/** How an issue names the config file: as given, relative to the working folder when inside it. */
function configShown(config: ResolvedConfig): string {
  return config.file ? displayPath(config, relative(config.dir, config.file)) : 'the config';
}

/** A glob as quoted in a sentence: at most 200 characters of it. */
export function shortGlob(glob: string): string {
  return glob.length > 200 ? `${glob.slice(0, 200)}…` : glob;
}
