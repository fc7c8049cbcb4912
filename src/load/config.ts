// dus-sync.yaml + flags + environment → ResolvedConfig. Never reads a key (see keys.ts).
import { access, readFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { checkedMaxResponseSize, checkedRequestTimeout } from '../api/limits.js';
import { ConfigError, UserError, type ConfigIssue } from '../errors.js';
import type { ApiLimits, Config, ResolvedConfig } from '../model/index.js';
import { hint } from './did-you-mean.js';
import { yamlPosition, type Position } from './documents.js';
import { schemaIssues, scanNodes, validator } from './schema-check.js';
import { issueAt, MAX_ALIAS_COUNT, MAX_FILE_BYTES, offsetOf, parseYamlSource } from './yaml-source.js';

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

export async function resolveConfig(opts: ResolveConfigOptions): Promise<ResolvedConfig> {
  const file = await findConfigFile(opts);
  const raw = file ? await readConfigFile(file, opts.cwd) : undefined;
  const dir = opts.dir !== undefined ? resolve(opts.cwd, opts.dir) : file ? dirname(file) : resolve(opts.cwd);

  const baseUrl = envValue(opts.env, 'DUS_BASE_URL') ?? raw?.base_url;
  if (baseUrl !== undefined && !/^https?:\/\//i.test(baseUrl)) {
    throw new UserError(`DUS_BASE_URL must start with http:// or https://, not "${baseUrl}"`);
  }
  const envTenant = envValue(opts.env, 'DUS_TENANT');
  const listed = Object.keys(raw?.tenants ?? {});
  if (envTenant !== undefined && listed.length > 0 && !listed.includes(envTenant)) {
    throw new UserError(`DUS_TENANT is "${envTenant}", which is not one of the tenants in ${file ? shownPath(file, opts.cwd) : 'the config'} (${listed.join(', ')})`);
  }
  const tenants: Record<string, { apiKeyEnv?: string; apiKeyFile?: string }> = {};
  for (const [name, t] of Object.entries(raw?.tenants ?? {})) {
    tenants[name] = {
      ...(t.api_key_env !== undefined ? { apiKeyEnv: t.api_key_env } : {}),
      ...(t.api_key_file !== undefined ? { apiKeyFile: t.api_key_file } : {}),
    };
  }
  return {
    ...(file ? { file } : {}),
    dir,
    ...(baseUrl !== undefined ? { baseUrl } : {}),
    ...(defaultTenant(opts.env, raw) !== undefined ? { defaultTenant: defaultTenant(opts.env, raw) } : {}),
    tenants,
    ...(raw?.resources ? { resources: raw.resources } : {}),
    safety: {
      ...(raw?.safety?.max_changes !== undefined ? { maxChanges: raw.safety.max_changes } : {}),
      ...(raw?.safety?.max_deactivations !== undefined ? { maxDeactivations: raw.safety.max_deactivations } : {}),
    },
    watchIntervalMs: raw?.watch?.interval ? parseInterval(raw.watch.interval) : DEFAULT_WATCH_INTERVAL_MS,
    suspend: raw?.suspend ?? false,
    ...(raw?.api ? { api: apiLimits(raw.api, file ? shownPath(file, opts.cwd) : 'the config') } : {}),
    ...(raw ? { raw } : {}),
  };
}

/** The schema checked the shapes; the bounds are checked here, with the same words as the flags. */
function apiLimits(api: NonNullable<Config['api']>, shown: string): ApiLimits {
  return {
    ...(api.max_response_size !== undefined ? { maxResponseBytes: checkedMaxResponseSize(api.max_response_size, `api.max_response_size in ${shown}`) } : {}),
    ...(api.request_timeout !== undefined ? { requestTimeoutMs: checkedRequestTimeout(api.request_timeout, `api.request_timeout in ${shown}`) } : {}),
  };
}

function defaultTenant(env: NodeJS.ProcessEnv, raw: Config | undefined): string | undefined {
  return envValue(env, 'DUS_TENANT') ?? raw?.default_tenant;
}

async function findConfigFile(opts: ResolveConfigOptions): Promise<string | undefined> {
  if (opts.config !== undefined) {
    const file = resolve(opts.cwd, opts.config);
    if (!(await exists(file))) throw new UserError(`the config file ${opts.config} does not exist; check --config`);
    return file;
  }
  const fallback = resolve(opts.cwd, DEFAULT_CONFIG_FILE);
  return (await exists(fallback)) ? fallback : undefined;
}

function shownPath(file: string, cwd: string): string {
  const rel = relative(cwd, file);
  const p = rel === '' || isAbsolute(rel) ? file : rel;
  return sep === '/' ? p : p.split(sep).join('/');
}

/** Reads and validates dus-sync.yaml; every problem becomes an issue of one ConfigError. */
async function readConfigFile(file: string, cwd: string): Promise<Config> {
  const shown = shownPath(file, cwd);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UserError(`the config file ${shown} could not be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  if (text.length > MAX_FILE_BYTES) throw one(shown, 'the config file is larger than 5 MiB; this is not a dus-sync config');
  const src = parseYamlSource(shown, text);
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
  const start = issueAt(shown, src.lineCounter, offsetOf(doc.contents!), '', '');
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError([{ ...start, message: 'the config must be a mapping with apiVersion: dus-sync/v1 and kind: Config' }]);
  }
  const scanned = scanNodes(src, doc);
  const validate = validator('config');
  const ok = validate(value);
  const issues: ConfigIssue[] = [...scanned, ...(ok ? [] : schemaIssues(src, doc, validate.errors ?? [], new Set(scanned.map((i) => i.pointer))))];
  if (ok) issues.push(...defaultTenantIssues(value as Config, yamlPosition(src, doc)));
  if (issues.length > 0) throw new ConfigError(issues.sort((a, b) => a.line - b.line || a.column - b.column));
  return value as Config;
}

/** default_tenant must be one of the listed tenants, when tenants are listed. */
function defaultTenantIssues(config: Config, position: Position): ConfigIssue[] {
  const known = Object.keys(config.tenants ?? {});
  const t = config.default_tenant;
  if (t === undefined || known.length === 0 || known.includes(t)) return [];
  return [{ ...position(['default_tenant'], false), pointer: '/default_tenant', message: `default_tenant "${t}" is not one of the tenants listed below it (${known.map((k) => `"${k}"`).join(', ')})${hint(t, known)}` }];
}

function one(file: string, message: string): ConfigError {
  return new ConfigError([{ file, line: 1, column: 1, pointer: '', message }]);
}
