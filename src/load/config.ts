// dus-sync.yaml + flags + environment → ResolvedConfig. Never reads a key (see keys.ts).
import { existsSync, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { checkedMaxResponseSize, checkedFetchTimeout, checkedRequestTimeout } from '../api/limits.js';
import { baseUrlFault, baseUrlFaultMessage, type BaseUrlFault } from '../api/url.js';
import { ConfigError, UserError, type ConfigIssue } from '../errors.js';
import { checkSize, describeRange, inRange, MAX_FILE_SIZE, WATCH_INTERVAL_MS, SETTLE_WINDOW_MS } from '../limits.js';
import type { ApiLimits, Config, ReadPolicy, ResolvedConfig, SyncWindow } from '../model/index.js';
import { MAX_WINDOW_DURATION_MS, scheduleProblem } from '../core/windows.js';
import { hint } from './did-you-mean.js';
import { isEnvName, registerKeysOfRawConfig } from './keys.js';
import { holdsWholeKey, redact } from '../redact.js';
import { yamlPosition, type Position } from './documents.js';
import { schemaIssues, scanNodes, validator } from './schema-check.js';
import { isInside, printable, readRegularFile, whyNotAFolder } from './read-file.js';
import { folderAsConfig } from './config-source.js';
import { cleanConfigValue } from './config-fast-path.js';
import { issueAt, MAX_ALIAS_COUNT, offsetOf, parseYamlSource } from './yaml-source.js';
import { tenantFold } from '../tenant.js';

export const DEFAULT_CONFIG_FILE = 'dus-sync.yaml';
export const DEFAULT_WATCH_INTERVAL_MS = 5 * 60 * 1000;

export interface ResolveConfigOptions {
  config?: string;
  dir?: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "30s" → 30000. The schema's pattern has already checked the shape. */
export function parseInterval(text: string): number {
  const m = /^(\d+)(ms|s|m|h)$/.exec(text);
  if (!m) throw new UserError(`"${text}" is not a duration; write it like 30s, 5m or 1h`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

/**
 * Said instead of an environment variable's value in an error: the variable may hold an API key
 * put there by mistake (a CI secret mapped to the wrong name), and errors about it come before
 * any key is read. Flags and the config file are quoted; variables are named, never shown.
 */
const NOT_SHOWN = 'its value is not shown, since environment variables may hold secrets';

function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * How files are read. From the environment only (the CLI lays its --max-file-size and
 * --follow-external-symlinks flags over it), never from dus-sync.yaml: these limits protect the
 * machine from the repository's content, so the repository does not get to loosen them.
 */
export function readPolicyFromEnv(env: NodeJS.ProcessEnv): ReadPolicy {
  const size = envValue(env, 'DUS_MAX_FILE_SIZE');
  const checked = size === undefined ? MAX_FILE_SIZE.default : checkSize('DUS_MAX_FILE_SIZE', size, MAX_FILE_SIZE);
  if (typeof checked === 'string') throw new UserError(`the environment variable DUS_MAX_FILE_SIZE must be ${describeRange('size', MAX_FILE_SIZE)}; ${NOT_SHOWN}`);
  const follow = envValue(env, 'DUS_FOLLOW_EXTERNAL_SYMLINKS')?.toLowerCase();
  if (follow !== undefined && !['1', 'true', 'yes', '0', 'false', 'no'].includes(follow)) {
    throw new UserError(`the environment variable DUS_FOLLOW_EXTERNAL_SYMLINKS must be 1 or 0 (true or false); ${NOT_SHOWN}`);
  }
  return { maxFileBytes: checked, followExternalSymlinks: follow === '1' || follow === 'true' || follow === 'yes' };
}

/**
 * --dir inside the config's folder narrows the config's globs; outside it, every YAML file below
 * it is read (resourceScope). Which one is decided on the paths as written, so a --dir spelt
 * through a link (`--config /srv/repo/dus-sync.yaml --dir ~/repo-link/tenants`) that leads into
 * the config's folder is written the config folder's way: its links followed one at a time, the
 * first first, until the path is inside (so a link inside the repository on the rest of the way,
 * `envs/prod -> ../shared/prod`, stays as written, as when --dir is spelt so). A --dir outside
 * it however its links are followed is kept.
 */
export function spelledUnderConfig(dir: string, file: string | undefined): string {
  if (file === undefined) return dir;
  const folder = dirname(file);
  let realFolder: string | undefined;
  try {
    realFolder = realpathSync.native(folder);
  } catch {
    realFolder = undefined;
  }
  let path = dir;
  for (let hops = 0; hops <= 40; hops++) {
    if (isInside(folder, path)) return path;
    if (realFolder !== undefined && isInside(realFolder, path)) {
      const rel = relative(realFolder, path);
      return rel === '' ? folder : join(folder, rel);
    }
    const next = firstLinkFollowed(path);
    if (next === undefined) return dir;
    path = next;
  }
  return dir;
}

/** `path` (absolute, normalized) with its first component that is a symbolic link replaced by where it leads; undefined when none is. */
function firstLinkFollowed(path: string): string | undefined {
  const parts = path.split(sep);
  for (let i = 2; i <= parts.length; i++) {
    const prefix = parts.slice(0, i).join(sep);
    let link: string;
    try {
      if (!lstatSync(prefix).isSymbolicLink()) continue;
      link = readlinkSync(prefix);
    } catch {
      return undefined;
    }
    // Nothing before it is a link, so `..` in its target climbs where the kernel would.
    return resolve(dirname(prefix), link, ...parts.slice(i));
  }
  return undefined;
}

export async function resolveConfig(opts: ResolveConfigOptions): Promise<ResolvedConfig> {
  // DUS_API_KEY and DUS_API_KEY_*: known to redaction before anything can go wrong.
  registerKeysOfRawConfig(undefined, undefined, opts.env);
  // An empty --dir (an unset variable in a script: --dir "$DIR") is not the working folder.
  if (opts.dir !== undefined && opts.dir.trim() === '') throw new UserError('--dir is empty: name the folder of the desired-state files, or leave --dir out to use the working folder');
  // `..` is taken textually below, as the shell's `cd` does; the kernel takes it after the name
  // before it, which must then be a folder: `--dir file.yaml/..` or `--dir gone/..` names nothing.
  if (opts.dir !== undefined && /(?:^|\/)\.\.(?:\/|$)/.test(opts.dir)) {
    const not = whyNotAFolder(opts.dir.startsWith('/') ? opts.dir : `${opts.cwd.replace(/\/+$/, '')}/${opts.dir}`);
    if (not !== undefined) throw new UserError(`--dir ${printable(opts.dir)} names no folder: ${not.why}; name the folder of the desired-state files`);
  }
  const reading = readPolicyFromEnv(opts.env);
  if (!reading.followExternalSymlinks) {
    // A path named inside the working folder (`--dir tenants`, `--config cfg/dus-sync.yaml`) is
    // the repository's: a pull request can make a folder on it a link, and the config searched
    // for from there, or the files below it, would be another folder's of the machine. A path
    // named outside it is the operator's choice, and read.
    const envConfig = envValue(opts.env, 'DUS_CONFIG');
    for (const [named, what] of [[opts.dir, '--dir'], [opts.config, '--config'], [opts.config === undefined ? envConfig : undefined, 'DUS_CONFIG']] as const) {
      if (named === undefined) continue;
      const out = leavesThroughLink(opts.cwd, named);
      if (out !== undefined) {
        const where = out.checkout ? `the checkout ${printable(out.held)} (it holds .git or dus-sync.yaml)` : `the working folder ${printable(out.held)}`;
        throw new UserError(`${what} ${named} leads through a symbolic link to ${printable(out.to)}, outside ${where}: dus-sync reads only the repository, and a link in it must not lead dus-sync to other files of the machine; name the real folder, or pass --follow-external-symlinks (DUS_FOLLOW_EXTERNAL_SYMLINKS=1)`);
      }
    }
  }
  const found = await findConfigFile(opts);
  const file = found.file;
  if (file === undefined && opts.dir === undefined && !singleTenantEnv(opts.env)) {
    throw new UserError(noConfigMessage(resolve(opts.cwd), found.top));
  }
  const read = file ? await readConfigFile(file, opts.cwd, reading.maxFileBytes, opts.env, reading.followExternalSymlinks) : undefined;
  const raw = read?.config;
  const dir = opts.dir !== undefined ? spelledUnderConfig(resolve(opts.cwd, opts.dir), file) : file ? dirname(file) : resolve(opts.cwd);

  const envBaseUrl = envValue(opts.env, 'DUS_BASE_URL');
  const baseUrl = envBaseUrl ?? raw?.base_url;
  if (baseUrl !== undefined && !/^https?:\/\//i.test(baseUrl)) {
    throw new UserError(envBaseUrl !== undefined
      ? `the environment variable DUS_BASE_URL must be the API's address, starting with http:// or https://; ${NOT_SHOWN}`
      : `base_url must start with http:// or https://, not "${baseUrl}"`);
  }
  // (After the shape: a value that is not an address at all, a key pasted there, gets the shape's sentence.)
  if (baseUrl !== undefined && (holdsWholeKey(baseUrl) || holdsWholeKey(decoded(baseUrl)))) {
    // Sent in every request's path, kept by proxies' and servers' logs, and in the state folder's records.
    throw new UserError(`${envBaseUrl !== undefined ? 'the environment variable DUS_BASE_URL' : 'base_url'} holds an API key (shown as ${redact(baseUrl)}): a key in the address is sent in every request's path and kept in proxies' logs; remove it (a key goes in api_key_env or api_key_file), and rotate it`);
  }
  // What the client would refuse whatever the flags (base_url's were issues at its line above), here
  // and not at the first request: validate too must refuse an address plan cannot use.
  const envFault = envBaseUrl !== undefined ? baseUrlFault(envBaseUrl) : undefined;
  if (envBaseUrl !== undefined && envFault !== undefined) throw new UserError(envBaseUrlMessage(envBaseUrl, envFault));
  const envTenant = envValue(opts.env, 'DUS_TENANT');
  const listed = Object.keys(raw?.tenants ?? {});
  if (envTenant !== undefined && listed.length > 0 && !listed.includes(envTenant)) {
    throw new UserError(`the environment variable DUS_TENANT must name one of the tenants in ${file ? shownPath(file, opts.cwd) : 'the config'} (${listed.join(', ')}); ${NOT_SHOWN}`);
  }
  // A tenant's name is sent in every request's x-service-tenant header, and kept in the state folder.
  for (const [where, name] of [...Object.keys(raw?.tenants ?? {}).map((n) => ['a tenant name under tenants:', n] as const),
    ['default_tenant', raw?.default_tenant] as const, ['the environment variable DUS_TENANT', envValue(opts.env, 'DUS_TENANT')] as const]) {
    if (name !== undefined && holdsWholeKey(name)) {
      throw new UserError(`${where} holds an API key (shown as ${redact(name)}): a tenant's name is sent in every request's x-service-tenant header; name the tenant, keep its key in api_key_env or api_key_file, and rotate it`);
    }
  }
  const tenants: Record<string, { apiKeyEnv?: string; apiKeyFile?: string; tenantId?: string }> = {};
  for (const [name, t] of Object.entries(raw?.tenants ?? {})) {
    tenants[name] = {
      ...(t.api_key_env !== undefined ? { apiKeyEnv: t.api_key_env } : {}),
      ...(t.api_key_file !== undefined ? { apiKeyFile: t.api_key_file } : {}),
      ...(t.tenant_id !== undefined ? { tenantId: t.tenant_id } : {}),
    };
  }
  const resolved: ResolvedConfig = {
    ...(file ? { file } : {}),
    dir,
    ...(baseUrl !== undefined ? { baseUrl } : {}),
    ...(defaultTenant(opts.env, raw) !== undefined ? { defaultTenant: defaultTenant(opts.env, raw) } : {}),
    tenants,
    ...(raw?.resources ? { resources: raw.resources } : {}),
    safety: {
      ...(raw?.safety?.max_changes !== undefined ? { maxChanges: raw.safety.max_changes } : {}),
      ...(raw?.safety?.max_deactivations !== undefined ? { maxDeactivations: raw.safety.max_deactivations } : {}),
      ...(raw?.safety?.settle_window !== undefined ? { settleWindowMs: parseInterval(raw.safety.settle_window) } : {}),
    },
    watchIntervalMs: raw?.watch?.interval ? parseInterval(raw.watch.interval) : DEFAULT_WATCH_INTERVAL_MS,
    ...(raw?.watch?.log_format || raw?.watch?.log_level ? { watchLog: {
      ...(raw.watch.log_format ? { format: raw.watch.log_format } : {}),
      ...(raw.watch.log_level ? { level: raw.watch.log_level } : {}),
    } } : {}),
    suspend: raw?.suspend ?? false,
    ...(raw?.windows && raw.windows.length > 0 ? { windows: raw.windows.map((w, i): SyncWindow => ({
      name: w.name, kind: w.kind, schedule: w.schedule, durationMs: parseInterval(w.duration),
      ...(w.timezone !== undefined ? { timezone: w.timezone } : {}),
      ...(w.tenants !== undefined ? { tenants: w.tenants, tenantsAt: w.tenants.map((_, j) => read!.position(['windows', String(i), 'tenants', String(j)], false)) } : {}),
      ...(w.kinds !== undefined ? { kinds: w.kinds.map((k) => (k === 'Firmware' ? 'firmware' : 'action')) } : {}),
    })) } : {}),
    reading,
    ...(raw?.api ? { api: apiLimits(raw.api, file ? shownPath(file, opts.cwd) : 'the config') } : {}),
    ...(raw ? { raw } : {}),
  };
  // Every key the config can name is known to redaction from here on, in every command (validate
  // and diff too, which need no key): a key pasted into a desired-state file by mistake is then
  // [REDACTED] in the issues, diffs and logs that quote the file, not only once a run reads keys.
  // readConfigFile registered them as soon as the file was parsed (the same variables and files:
  // a key file's path is taken from the config's folder either way), DUS_API_KEY* came first.
  return resolved;
}

/** The schema checked the shapes; the bounds are checked here, with the same words as the flags. */
function apiLimits(api: NonNullable<Config['api']>, shown: string): ApiLimits {
  return {
    ...(api.max_response_size !== undefined ? { maxResponseBytes: checkedMaxResponseSize(api.max_response_size, `api.max_response_size in ${shown}`) } : {}),
    ...(api.request_timeout !== undefined ? { requestTimeoutMs: checkedRequestTimeout(api.request_timeout, `api.request_timeout in ${shown}`) } : {}),
    ...(api.fetch_timeout !== undefined ? { fetchTimeoutMs: checkedFetchTimeout(api.fetch_timeout, `api.fetch_timeout in ${shown}`) } : {}),
  };
}

function defaultTenant(env: NodeJS.ProcessEnv, raw: Config | undefined): string | undefined {
  return envValue(env, 'DUS_TENANT') ?? raw?.default_tenant;
}

interface FoundConfig {
  readonly file?: string;
  /** Where the upward search stopped without finding one: the top of a git work tree. */
  readonly top?: string;
}

/**
 * Where the config is, as git and most tools find theirs: --config, else DUS_CONFIG, else the
 * nearest dus-sync.yaml in the folder the command is about (--dir, else the working folder) or
 * above it. The search ends at the first one found, and at the top of a git work tree (a folder
 * holding .git): a dus-sync.yaml above the repository is not versioned with it, so CI would not
 * see it, and a stray one in a home folder would otherwise claim every repository below.
 */
async function findConfigFile(opts: ResolveConfigOptions): Promise<FoundConfig> {
  if (opts.config !== undefined) {
    const file = resolve(opts.cwd, opts.config);
    if (!(await exists(file))) throw new UserError(`the config file ${opts.config} does not exist; check --config`);
    return { file };
  }
  const fromEnv = envValue(opts.env, 'DUS_CONFIG');
  if (fromEnv !== undefined) {
    const file = resolve(opts.cwd, fromEnv);
    if (!(await exists(file))) throw new UserError(`the config file ${fromEnv} named by DUS_CONFIG does not exist; check DUS_CONFIG`);
    return { file };
  }
  const start = resolve(opts.cwd, opts.dir ?? '.');
  const found = await searchUpwards(start);
  if (found.file !== undefined || found.top !== undefined) return found;
  // Nothing above the path as written: above where the kernel puts it, as `cd DIR && dus-sync`
  // would find it (--dir ~/acme-link, a link to a repository's tenants/acme).
  let real: string;
  try {
    real = realpathSync.native(start);
  } catch {
    return found;
  }
  return real === start ? found : searchUpwards(real);
}

async function searchUpwards(start: string): Promise<FoundConfig> {
  for (let dir = start; ; dir = dirname(dir)) {
    const file = resolve(dir, DEFAULT_CONFIG_FILE);
    if (await exists(file)) return { file };
    if (await exists(resolve(dir, '.git'))) return { top: dir };
    if (dirname(dir) === dir) return {};
  }
}

/** Without a config, --dir or one of these serves a single tenant (SPEC section 1). */
function singleTenantEnv(env: NodeJS.ProcessEnv): boolean {
  return ['DUS_TENANT', 'DUS_BASE_URL', 'DUS_API_KEY'].some((name) => envValue(env, name) !== undefined);
}

function noConfigMessage(cwd: string, top: string | undefined): string {
  const where = top === undefined ? `${cwd} (or above)`
    : top === cwd ? `${cwd} (the top of its git repository)` : `${cwd} (or above, up to ${top}, the top of its git repository)`;
  return `no ${DEFAULT_CONFIG_FILE} found in ${where}; pass --config FILE, or run dus-sync init to write one `
    + '(a single tenant needs none: pass --dir DIR, with DUS_TENANT and DUS_BASE_URL set)';
}

function shownPath(file: string, cwd: string): string {
  const rel = relative(cwd, file);
  const p = rel === '' || isAbsolute(rel) ? file : rel;
  return sep === '/' ? p : p.split(sep).join('/');
}

/** Reads and validates dus-sync.yaml; every problem becomes an issue of one ConfigError. With where each path of it was written. */
async function readConfigFile(file: string, cwd: string, maxBytes: number, env: NodeJS.ProcessEnv, followExternalSymlinks: boolean): Promise<{ config: Config; position: Position }> {
  const shown = shownPath(file, cwd);
  // The config may be a link within its folder (a Kubernetes ConfigMap mounts links to
  // ..data/); it must be a regular file of sane size like any other. A link out of its folder is
  // refused unless the operator says otherwise: dus-sync.yaml is the repository's own, so a pull
  // request could make it one, and have another file of the machine read as the config (its
  // values quoted in issues, its base_url used).
  if (!followExternalSymlinks) {
    const out = linkOutOfFolder(file);
    if (out !== undefined) {
      throw one(shown, `this config file is a link to ${printable(out)}, outside the folder that holds it: the config belongs to the repository, and a change to it must not make dus-sync read other files of the machine it runs on; put the file itself there (a link within the folder is read), or pass --follow-external-symlinks (DUS_FOLLOW_EXTERNAL_SYMLINKS=1)`);
    }
  }
  const read = readRegularFile(file, { maxBytes });
  if (!read.ok) throw folderAsConfig(file, shown) ?? one(shown, read.message);
  const text = read.text;
  // A clean config is read by js-yaml, positions parsed by yaml only if asked for; anything
  // else, an issue included, takes the yaml path below (config-fast-path.ts).
  const clean = cleanConfigValue(text, maxBytes);
  if (clean !== undefined) registerKeysOfRawConfig(clean, file, env);
  if (clean !== undefined && validator('config')(clean)) {
    let parsed: Position | undefined;
    const position: Position = (path, key) => (parsed ??= yamlPositionOf(shown, text, maxBytes))(path, key);
    const config = clean as Config;
    const issues = [...apiKeyEnvIssues(clean, position), ...tenantNameIssues(config, position), ...defaultTenantIssues(config, position), ...intervalIssues(config, position), ...windowIssues(config, position, Date.now()), ...baseUrlIssues(config, position)];
    if (issues.length === 0) return { config, position };
  }
  const src = parseYamlSource(shown, text, maxBytes);
  if (src.issues.length > 0) throw new ConfigError(src.issues);
  if (src.documents.length !== 1) {
    throw one(shown, src.documents.length === 0 ? 'the config file is empty; it needs at least "apiVersion: dus-sync/v1" and "kind: Config"' : 'the config file must hold exactly one YAML document');
  }
  const doc = src.documents[0]!;
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch {
    throw one(shown, `the config expands too many YAML aliases (more than ${MAX_ALIAS_COUNT})`);
  }
  // Before any issue quotes the config: the keys it names are known to redaction (the clean
  // parse above, the same value, registered them already: key files are read once).
  if (clean === undefined) registerKeysOfRawConfig(value, file, env);
  const start = issueAt(shown, src.lineCounter, offsetOf(doc.contents!), '', '');
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError([{ ...start, message: 'the config must be a mapping with apiVersion: dus-sync/v1 and kind: Config' }]);
  }
  const scanned = scanNodes(src, doc);
  const validate = validator('config');
  validate(value);
  // A malformed api_key_env gets its own message below, one that never quotes the value.
  const errors = (validate.errors ?? []).filter((e) => !(e.keyword === 'pattern' && API_KEY_ENV_POINTER.test(e.instancePath)));
  const ok = errors.length === 0;
  const issues: ConfigIssue[] = [...scanned, ...(ok ? [] : schemaIssues(src, doc, errors, new Set(scanned.map((i) => i.pointer)))), ...apiKeyEnvIssues(value, yamlPosition(src, doc))];
  const position = yamlPosition(src, doc);
  if (ok) {
    issues.push(...tenantNameIssues(value as Config, position), ...defaultTenantIssues(value as Config, position), ...intervalIssues(value as Config, position), ...windowIssues(value as Config, position, Date.now()), ...baseUrlIssues(value as Config, position));
  }
  if (issues.length > 0) throw new ConfigError(issues.sort((a, b) => a.line - b.line || a.column - b.column));
  return { config: value as Config, position };
}

/** Where each path of a config was written, for the fast path: the yaml path's own parse. */
function yamlPositionOf(shown: string, text: string, maxBytes: number): Position {
  const src = parseYamlSource(shown, text, maxBytes);
  return yamlPosition(src, src.documents[0]!);
}

const API_KEY_ENV_POINTER = /^\/tenants\/[^/]+\/api_key_env$/;

function apiKeyEnvIssues(value: object, position: Position): ConfigIssue[] {
  const tenants = (value as { tenants?: unknown }).tenants;
  if (typeof tenants !== 'object' || tenants === null || Array.isArray(tenants)) return [];
  const issues: ConfigIssue[] = [];
  for (const [name, t] of Object.entries(tenants as Record<string, unknown>)) {
    const env = typeof t === 'object' && t !== null ? (t as { api_key_env?: unknown }).api_key_env : undefined;
    if (typeof env !== 'string' || env === '' || isEnvName(env)) continue;
    const example = `DUS_API_KEY_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
    issues.push({
      ...position(['tenants', name, 'api_key_env'], false),
      pointer: `/tenants/${name.replace(/~/g, '~0').replace(/\//g, '~1')}/api_key_env`,
      message: `tenants.${name}.api_key_env must be the NAME of an environment variable, such as ${example}; `
        + 'the value given is not one (it is not shown, in case it is a key)',
    });
  }
  return issues;
}

/**
 * Each configured tenant must be its own tenant to the service. Its name travels in the
 * x-service-tenant header, which servers trim and may compare without case, and the API's
 * actions name it by tenant_id (the name, or tenants.NAME.tenant_id): two entries that a server
 * could take for one tenant ("acme" and "acme ", "acme" and "ACME", two of one tenant_id) would
 * plan and apply as two tenants, in parallel, each appending the same phase. Refused, as is a
 * name a header cannot carry as written (a space at an end, a control character).
 */
export function tenantNameIssues(config: Config, position: Position): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const byName = new Map<string, string>();
  const byId = new Map<string, string>();
  for (const [name, t] of Object.entries(config.tenants ?? {})) {
    // Where it was written is parsed only for an issue: a clean config is read without it.
    const at = () => ({ ...position(['tenants', name], true), pointer: `/tenants/${name.replace(/~/g, '~0').replace(/\//g, '~1')}` });
    if (/^\s|\s$/.test(name) || [...name].some((c) => c < ' ' || c === '\u007f')) {
      issues.push({ ...at(), message: `the tenant name ${JSON.stringify(name)} has a space at an end or a control character, which the x-service-tenant header cannot carry as written (servers trim it, so it could name another tenant); write the name without it` });
      continue;
    }
    const folded = tenantFold(name);
    const id = tenantFold(t?.tenant_id ?? name);
    const sameName = byName.get(folded);
    const sameId = byId.get(id);
    if (sameName !== undefined || sameId !== undefined) {
      const other = sameName ?? sameId!;
      const why = sameName !== undefined ? 'their names differ only in case, which a server may ignore' : `their tenant_id is the same to the API, "${id}" without case`;
      issues.push({ ...at(), message: `tenants "${name}" and "${other}" may be one tenant to the service (${why}): as two entries they would be planned and applied apart, and could append the same phase twice; keep one entry per tenant` });
      continue;
    }
    byName.set(folded, name);
    byId.set(id, name);
  }
  return issues;
}

/** The text with its percent escapes decoded, or as it is when they do not decode. */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** What a URL parser stops at, to look for when base_url or DUS_BASE_URL is not a URL. */
const NOT_A_URL_HINT = 'look for a space, an IPv6 address without its closing ], a port above 65535, an empty host';

/**
 * base_url as the client reads it (parseBaseUrl): a value it would refuse whatever the flags is an
 * issue at its line, in every command, validate included. Plain http to a host that is not
 * loopback is not one: --insecure-http allows it, and the run that lacks it says so. A value
 * holding a key is left to resolveConfig's sentence about the key, which never shows it.
 */
function baseUrlIssues(config: Config, position: Position): ConfigIssue[] {
  const raw = config.base_url;
  if (raw === undefined || holdsWholeKey(raw) || holdsWholeKey(decoded(raw))) return [];
  const fault = baseUrlFault(raw);
  if (fault === undefined) return [];
  const at = { ...position(['base_url'], false), pointer: '/base_url' };
  switch (fault.kind) {
    case 'not-a-url':
      return [{ ...at, message: `base_url ${redact(JSON.stringify(raw))} is not a URL (${NOT_A_URL_HINT}): write the API's address as https://host[:port][/prefix]` }];
    case 'scheme':
      return [{ ...at, message: 'base_url must start with http:// or https://' }];
    case 'credentials':
      return [{ ...at, message: 'base_url must not hold a user name or password (user:password@): remove it; a key goes in api_key_env or api_key_file' }];
    case 'api-v1':
      return [{ ...at, message: `base_url should not include /api/v1; dus-sync adds it: write ${redact(fault.base)}` }];
  }
}

/** DUS_BASE_URL refused as the client would refuse it, naming the variable; its value is not quoted (for /api/v1, the address to set is named). */
function envBaseUrlMessage(raw: string, fault: BaseUrlFault): string {
  switch (fault.kind) {
    case 'not-a-url':
      return `the environment variable DUS_BASE_URL is not a URL (${NOT_A_URL_HINT}): set it to the API's address, as https://host[:port][/prefix]; ${NOT_SHOWN}`;
    case 'credentials':
      return `the environment variable DUS_BASE_URL must not hold a user name or password (user:password@): remove it, a key goes in DUS_API_KEY or the config; ${NOT_SHOWN}`;
    case 'scheme': // (the shape was checked above: not reached)
      return `the environment variable DUS_BASE_URL must be the API's address, starting with http:// or https://; ${NOT_SHOWN}`;
    case 'api-v1': // The sentence the client has always given, naming the address to set; a key in it was refused above.
      return baseUrlFaultMessage(raw, fault);
  }
}

/** default_tenant must be one of the listed tenants, when tenants are listed. */
function defaultTenantIssues(config: Config, position: Position): ConfigIssue[] {
  const known = Object.keys(config.tenants ?? {});
  const t = config.default_tenant;
  if (t === undefined || known.length === 0 || known.includes(t)) return [];
  return [{ ...position(['default_tenant'], false), pointer: '/default_tenant', message: `default_tenant "${t}" is not one of the tenants listed below it (${known.map((k) => `"${k}"`).join(', ')})${hint(t, known)}` }];
}

/**
 * The sync windows: a usable time zone and schedule (5 fields, or 6 with seconds, that opens
 * within about 5 years), a duration from 1ms to 8784h, a name of its own. The sentences never
 * quote a schedule or time zone (nor croner's messages, which do): a key pasted into the wrong
 * field would be printed, and validate reads no key that redaction could recognise.
 */
export function windowIssues(config: Config, position: Position, now: number): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const at = (i: number, key: string, message: string): void => {
    issues.push({ ...position(['windows', String(i), key], false), pointer: `/windows/${i}/${key}`, message });
  };
  const named = new Map<string, number>();
  (config.windows ?? []).forEach((w, i) => {
    const first = named.get(w.name);
    if (first === undefined) named.set(w.name, i);
    else {
      const line = position(['windows', String(first), 'name'], false).line;
      at(i, 'name', `windows[${i}].name is the name of windows[${first}] too (line ${line}); give each window its own name, since plan and status tell them apart by it`);
    }
    switch (scheduleProblem(w.schedule, w.timezone, now)) {
      case 'timezone':
        at(i, 'timezone', `windows[${i}].timezone is not an IANA time zone name (like Europe/Berlin or UTC); the value is not shown, in case it is a key`);
        break;
      case 'fields':
        at(i, 'schedule', `windows[${i}].schedule is not a cron expression of 5 fields (or 6 with seconds), like "0 22 * * 1-5"; the value is not shown, in case it is a key`);
        break;
      case 'schedule':
        at(i, 'schedule', `windows[${i}].schedule is not a valid cron expression: each of its 5 fields (or 6 with seconds) must be a value in range, like "0 22 * * 1-5"; the value is not shown, in case it is a key`);
        break;
      case 'never':
        at(i, 'schedule', `windows[${i}].schedule never opens: it gives no start within the next 5 years (like "0 0 30 2 *", February 30th)`);
        break;
      case undefined:
        break;
    }
    const duration = parseInterval(w.duration);
    if (duration <= 0) at(i, 'duration', `windows[${i}].duration must be longer than 0`);
    else if (!(duration <= MAX_WINDOW_DURATION_MS)) at(i, 'duration', `windows[${i}].duration takes at most 8784h (a leap year), not "${w.duration}"`);
  });
  return issues;
}

/** watch.interval and safety.settle_window within their bounds: 0s would run passes back to back, months would overflow the timer. */
function intervalIssues(config: Config, position: Position): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const interval = config.watch?.interval;
  if (interval !== undefined && !inRange(parseInterval(interval), WATCH_INTERVAL_MS)) {
    issues.push({ ...position(['watch', 'interval'], false), pointer: '/watch/interval', message: `watch.interval takes ${describeRange('duration', WATCH_INTERVAL_MS)}, not "${interval}"` });
  }
  const settle = config.safety?.settle_window;
  if (settle !== undefined && !inRange(parseInterval(settle), SETTLE_WINDOW_MS)) {
    issues.push({ ...position(['safety', 'settle_window'], false), pointer: '/safety/settle_window', message: `safety.settle_window takes ${describeRange('duration', SETTLE_WINDOW_MS)}, not "${settle}"` });
  }
  // api.*: the same checks as their flags, reported at their line (not as a sentence without one).
  const checks = [
    ['max_response_size', checkedMaxResponseSize],
    ['request_timeout', checkedRequestTimeout],
    ['fetch_timeout', checkedFetchTimeout],
  ] as const;
  for (const [key, check] of checks) {
    const text = config.api?.[key];
    if (text === undefined) continue;
    try {
      check(text, `api.${key}`);
    } catch (err) {
      issues.push({ ...position(['api', key], false), pointer: `/api/${key}`, message: (err as Error).message });
    }
  }
  return issues;
}

function one(file: string, message: string): ConfigError {
  return new ConfigError([{ file, line: 1, column: 1, pointer: '', message }]);
}

/** Where `path` leads when it is a symbolic link whose target (real path) is outside the real folder `holder`, else undefined; throws when it cannot be resolved. */
function linkLeaving(path: string, holder: string): string | undefined {
  if (!lstatSync(path).isSymbolicLink()) return undefined;
  const real = realpathSync.native(path);
  return isInside(realpathSync.native(holder), real) ? undefined : real;
}

/** Where `file` leads when it is a link to a regular file outside the folder holding it, else undefined. */
function linkOutOfFolder(file: string): string | undefined {
  try {
    // Not a regular file (a device, a FIFO, a folder): the read's own sentence says so.
    if (!statSync(file).isFile()) return undefined;
    return linkLeaving(file, dirname(file));
  } catch {
    // A dangling link or a race: the read that follows says what it finds.
    return undefined;
  }
}

/** A folder that is the top of a checkout: it holds .git (a folder, or a worktree's file) or dus-sync.yaml. */
function isCheckoutTop(folder: string): boolean {
  return existsSync(join(folder, '.git')) || existsSync(join(folder, 'dus-sync.yaml'));
}

/** The nearest folder from `folder` up that holds .git, or undefined. */
function gitTopAbove(folder: string): string | undefined {
  for (let dir = folder; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * The link on the way to `named` (relative to `cwd`) that leads out of the folder it is held to,
 * when `named` is named inside `cwd`, else undefined (also when a part does not exist: the read
 * that follows says so). A link is held to the deepest checkout top above it (a folder holding
 * .git or dus-sync.yaml, on the way or above the working folder), else to the working folder: with the working folder
 * above the checkout (`--dir repo/tenants`), a link `repo/tenants -> ../other` stays inside the
 * working folder but leaves the repository; one that stays in the repository (`a/b -> ../c`,
 * git-sync's `current -> rev-abc`) is read.
 */
function leavesThroughLink(cwd: string, named: string): { readonly to: string; readonly held: string; readonly checkout: boolean } | undefined {
  const top = resolve(cwd);
  const abs = resolve(top, named);
  if (!isInside(top, abs)) return undefined;
  const rel = relative(top, abs);
  let at = top;
  // A working folder inside a checkout (`repo/envs`) is held to the checkout's top, as git is.
  let held = gitTopAbove(top) ?? top;
  let checkout = held !== top || isCheckoutTop(top);
  try {
    for (const part of rel === '' ? [] : rel.split(sep)) {
      const next = join(at, part);
      const to = linkLeaving(next, held);
      if (to !== undefined) return { to, held: realpathSync.native(held), checkout };
      at = next;
      if (isCheckoutTop(at)) {
        held = at;
        checkout = true;
      }
    }
  } catch {
    return undefined;
  }
  return undefined;
}
