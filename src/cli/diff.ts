// `dus-sync diff --base REF`: the desired state at a git ref against the working tree, offline.
// No key, no base_url, no request: it runs in pull requests from forks that get no secrets.
// Exit 0 without differences, 2 with, 1 on error (like plan --detailed-exitcode).
import { dirname } from 'node:path';
import { parseDocument } from 'yaml';
import { ConfigError, UserError } from '../errors.js';
import { baseInvalidWarning, baseSubmoduleWarning, diffDesired, hasDifferences, type DesiredDiff, type DiffWarning } from '../core/desired-diff.js';
import { renderDiffJson } from '../core/render/desired-diff-json.js';
import { renderDiffMarkdown } from '../core/render/desired-diff-markdown.js';
import { renderDiffText } from '../core/render/desired-diff-text.js';
import { redactDeep } from '../redact.js';
import { configTextAtRef, readDesiredAtRef } from '../load/git.js';
import { registerKeysOfRawConfig } from '../load/keys.js';
import { MAX_FILE_SIZE } from '../limits.js';
import { displayPath, listIn, loadDesiredState, loadDocuments, readOutsideFile, refusedConfigLink, refusedOutside, resourceScope, shortGlob, type LoadFilter } from '../load/index.js';
import { globProblem, globsProblem, reachesOutside } from '../load/resource-globs.js';
import type { DesiredState, Logger, ResolvedConfig } from '../model/index.js';
import { setup } from './common.js';
import { paint, useColor, type GlobalOptions } from './context.js';

const EMPTY: DesiredState = { firmwares: [], actions: [], files: [] };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A config file's text as plain data (what a commit's dus-sync.yaml says), or undefined when it is not YAML. */
export function rawConfigOf(text: string, uniqueKeys = true): unknown {
  const doc = parseDocument(text, { uniqueKeys });
  return doc.errors.length === 0 ? doc.toJS({ maxAliasCount: 100 }) : undefined;
}

/**
 * The working config with what the base commit's dus-sync.yaml says about which files are
 * resources and whose they are; the rest (where the API is, keys) does not matter offline.
 */
export function configAtBase(working: ResolvedConfig, text: string | undefined, env: NodeJS.ProcessEnv, log: Logger): ResolvedConfig {
  if (text === undefined) return working;
  const raw = rawConfigOf(text);
  if (!isObject(raw) || raw.kind !== 'Config') {
    log.warn('the config file at the base ref is not a valid dus-sync config; the working one is used for both sides.');
    return working;
  }
  const resources = Array.isArray(raw.resources) && raw.resources.every((r) => typeof r === 'string') ? raw.resources as string[] : undefined;
  // A glob the working tree's load refuses would read other files than it names here too (or
  // none, one that climbs out: a commit holds only the repository): not silently.
  for (const r of resources ?? []) {
    const reason = globProblem(r)?.reason ?? (reachesOutside(r) ? 'reaches outside the repository, where a commit holds no file' : undefined);
    if (reason !== undefined) {
      log.warn(`the config file at the base ref has the resources glob ${JSON.stringify(shortGlob(r))}, which ${reason}; the working one is used for both sides.`);
      return working;
    }
  }
  const together = globsProblem(resources ?? []);
  if (together !== undefined) {
    log.warn(`the config file at the base ref has resources globs that ${together.reason}; the working one is used for both sides.`);
    return working;
  }
  const envTenant = env.DUS_TENANT?.trim() ? env.DUS_TENANT.trim() : undefined;
  const defaultTenant = envTenant ?? (typeof raw.default_tenant === 'string' ? raw.default_tenant : undefined);
  const tenants: Record<string, { apiKeyEnv?: string; apiKeyFile?: string }> = {};
  if (isObject(raw.tenants)) for (const name of Object.keys(raw.tenants)) tenants[name] = {};
  const { resources: _r, defaultTenant: _d, ...rest } = working;
  return {
    ...rest,
    tenants,
    ...(resources ? { resources } : {}),
    ...(defaultTenant !== undefined ? { defaultTenant } : {}),
  };
}

export async function run(opts: Record<string, unknown>, globals: GlobalOptions): Promise<number> {
  const base = typeof opts.base === 'string' ? opts.base : '';
  if (base === '') throw new UserError('diff needs --base GIT_REF, e.g. --base origin/main');
  const format = typeof opts.format === 'string' ? opts.format : 'text';
  const { config, filter, log } = await setup(globals);
  const { diff, commit } = await diffAgainst(config, filter, log, base);
  // Redacted before it is rendered, as plan is: the markdown and mermaid escapes respell
  // characters (`:` as #58;, `@` as &#64;), and a key respelt may not be found in the output.
  const out = render(format, redactDeep(diff), base, commit, useColor(globals));
  process.stdout.write(out);
  return hasDifferences(diff) ? 2 : 0;
}

export interface DiffResult {
  readonly diff: DesiredDiff;
  /** The commit the base ref resolved to. */
  readonly commit: string;
}

/** The desired state at the base ref against the working tree (diff and review share it). */
export async function diffAgainst(config: ResolvedConfig, filter: LoadFilter, log: Logger, base: string, loaded?: { readonly head: DesiredState }): Promise<DiffResult> {
  // (review has loaded the working tree already, after registering the base's keys.)
  let head: { desired: DesiredState };
  if (loaded !== undefined) head = { desired: loaded.head };
  else {
    await registerBaseKeys(config, base);
    const load = await loadDesiredState(config, filter);
    if (load.issues.length > 0) throw new ConfigError(load.issues);
    head = load;
  }

  let baseConfig = config;
  let unlistable: string | undefined;
  const atRef = await readDesiredAtRef({
    dir: config.dir,
    repository: resourceScope(config).base,
    ref: base,
    ...(config.file ? { configFile: config.file } : {}),
    maxBytes: config.reading?.maxFileBytes ?? MAX_FILE_SIZE.default,
    // The base commit's files are found as the working tree's are (links followed inside the
    // repository, a file reached by several paths read once), in the commit's own tree.
    select: (_paths, configText, tree) => {
      baseConfig = configAtBase(config, configText, process.env, log);
      try {
        return listIn(baseConfig, tree).paths;
      } catch (err) {
        // What makes the base's files unlistable (a loop on --dir's way there, a folder name that
        // is not UTF-8) is the base's problem, as an invalid file there is: said, and everything
        // counts as added. The working tree's own listing has passed already.
        if (!(err instanceof UserError)) throw err;
        unlistable = err.message;
        return [];
      }
    },
    // What the working tree's reader refuses, the base's does too: a file out of the repository
    // folder (the config's), unless the operator follows links out.
    refuse: (real) => refusedOutside(config, real),
    refuseConfig: (real) => refusedConfigLink(config, real),
    outside: (real) => readOutsideFile(config, real),
  });
  if (atRef.configRefused !== undefined) log.warn(`the config file at ${base} is not read (${atRef.configRefused}); the working one is used for both sides.`);
  const atBase = loadDocuments(atRef.files, baseConfig, filter, { sent: false });
  const unread = atRef.unread.map((u) => ({ file: displayPath(baseConfig, u.path), line: 1, column: 1, pointer: '', message: u.message }));
  if (unlistable !== undefined) unread.unshift({ file: base, line: 1, column: 1, pointer: '', message: `its files cannot be listed: ${unlistable}` });
  const baseLoad = unread.length === 0 ? atBase : { ...atBase, issues: [...unread, ...atBase.issues] };
  const extra: DiffWarning[] = atRef.submodules.map((path) => baseSubmoduleWarning(base, path));
  let baseDesired = baseLoad.desired;
  if (baseLoad.issues.length > 0) {
    log.warn(`the desired state at ${base} has ${baseLoad.issues.length} problem(s), e.g. ${describeIssue(baseLoad.issues[0]!)}; everything counts as added.`);
    extra.push(baseInvalidWarning(base, baseLoad.issues.length));
    baseDesired = EMPTY;
  }
  log.debug(`base ${base} is commit ${atRef.commit}: ${atRef.files.length} resource file(s)`);
  return { diff: diffDesired(baseDesired, head.desired, extra), commit: atRef.commit };
}

/**
 * The keys the base's config names (its key files and variables) are keys too, known to
 * redaction before anything is loaded: a change that stops naming a key file the CI still writes
 * could otherwise have a resource lead to it, and an issue quote it. Best effort, as for the
 * working config's keys.
 */
export async function registerBaseKeys(config: ResolvedConfig, base: string): Promise<void> {
  if (config.file === undefined) return;
  const text = await configTextAtRef(dirname(config.file), base, config.file);
  if (text === undefined) return;
  try {
    // Duplicate keys allowed: every key a config names, even one that would be refused, is a key.
    registerKeysOfRawConfig(rawConfigOf(text, false), config.file, process.env);
  } catch {
    // Best effort: a config the base cannot parse names no key that can be made out.
  }
}

function describeIssue(i: { file: string; line: number; column: number; message: string }): string {
  return `${i.file}:${i.line}:${i.column}: ${i.message}`;
}

function render(format: string, diff: ReturnType<typeof diffDesired>, base: string, commit: string, color: boolean): string {
  switch (format) {
    case 'json': return renderDiffJson(diff, { base, baseCommit: commit });
    case 'markdown': return renderDiffMarkdown(diff, { base });
    case 'text': return renderDiffText(diff, { base, paint: paint(color) });
    default: throw new UserError(`--format takes text, json or markdown, not "${format}"`);
  }
}
