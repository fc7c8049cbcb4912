// API keys, read only by the commands that call the API. A key never appears in a message.
import { dirname, resolve } from 'node:path';
import { UserError } from '../errors.js';
import type { ResolvedConfig } from '../model/index.js';
import { registerSecret } from '../redact.js';
import { readRegularFile } from './read-file.js';

/** A key file is a line of text; a larger one is not a key (a PR may point api_key_file at /dev/zero). */
const MAX_KEY_FILE_BYTES = 64 * 1024;

/**
 * Whether api_key_env holds an environment variable's name. A value that is not one, or that
 * looks like a key (20 characters or more, letters and digits, no underscore), is most likely the
 * key itself pasted in: the config check refuses it, and no message ever echoes it.
 */
export function isEnvName(value: string): boolean {
  // A key pasted in place of a name: 20+ letters and digits without a _ (AKIA…), or, in a value
  // not all in capitals, a run of 16+ digits and letters after a prefix (sk_live_…, ghp_…).
  // Names are words joined by _, in capitals (DUS_API_KEY_ACME, MY_SERVICE2024PRODUCTION_KEY).
  // A long run of letters in both cases counts too (a key of letters only: no digit to tell it).
  const mixed = (part: string): boolean => (/[0-9]/.test(part) && /[A-Za-z]/.test(part)) || (/[a-z]/.test(part) && /[A-Z]/.test(part));
  const keyLike = (value.length >= 20 && !value.includes('_') && mixed(value))
    || (value !== value.toUpperCase() && value.split('_').some((part) => part.length >= 16 && mixed(part)));
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(value) && !keyLike;
}

/**
 * tenant → key, for the given tenants. Every key read is registered for redaction, and so is
 * every other key the config can name (registerConfiguredKeys), first.
 */
export async function readApiKeys(config: ResolvedConfig, tenants: readonly string[], env: NodeJS.ProcessEnv): Promise<Map<string, string>> {
  registerConfiguredKeys(config, env);
  const keys = new Map<string, string>();
  for (const tenant of [...new Set(tenants)].sort()) {
    const key = await readKey(config, tenant, env);
    registerSecret(key);
    keys.set(tenant, key);
  }
  return keys;
}

/**
 * The keys of all these tenants, registered for redaction like readApiKeys's, or undefined when
 * any of them is missing or unusable (nothing said: readApiKeys says what is wrong, before any
 * request, once the run knows it needs that tenant). plan reads ahead only when this succeeds.
 */
export async function readAllKeys(config: ResolvedConfig, tenants: readonly string[], env: NodeJS.ProcessEnv): Promise<Map<string, string> | undefined> {
  registerConfiguredKeys(config, env);
  const keys = new Map<string, string>();
  for (const tenant of [...new Set(tenants)].sort()) {
    try {
      keys.set(tenant, await readKey(config, tenant, env));
    } catch {
      return undefined;
    }
  }
  for (const key of keys.values()) registerSecret(key);
  return keys;
}

/** Whether DUS_API_KEY holds a usable key: the key of every tenant dus-sync.yaml does not list. */
export function fallbackKeyUsable(env: NodeJS.ProcessEnv): boolean {
  const value = env.DUS_API_KEY?.trim();
  return value !== undefined && value !== '' && keyProblem(value) === undefined;
}

/**
 * Registers, for redaction only, every key the config can name: the variable and the file of
 * every tenant it lists, and DUS_API_KEY. A run reads the keys of the tenants it touches, but a
 * server that serves several tenants may echo another tenant's key in an acme-only run. Best
 * effort: a variable that is not set, a file that cannot be read, a value that is not a key (not
 * one line of printable ASCII) is skipped without a word. These keys are never sent.
 */
export function registerConfiguredKeys(config: ResolvedConfig, env: NodeJS.ProcessEnv): void {
  const values: (string | undefined)[] = [env.DUS_API_KEY];
  for (const entry of Object.values(config.tenants)) {
    if (entry.apiKeyEnv !== undefined) values.push(env[entry.apiKeyEnv]);
    if (entry.apiKeyFile !== undefined) {
      try {
        const read = readRegularFile(keyFilePath(config, entry.apiKeyFile), { maxBytes: MAX_KEY_FILE_BYTES });
        if (read.ok) values.push(read.text);
      } catch {
        // Best effort: the run reads its own key files again, and says what is wrong with them.
      }
    }
  }
  for (const value of values) {
    const key = value?.trim();
    if (key && keyProblem(key) === undefined) registerSecret(key);
  }
}

/**
 * registerConfiguredKeys for a config that is not resolved yet (maybe not even valid): the
 * variables and files its tenants name, as far as they can be made out, and DUS_API_KEY and
 * every DUS_API_KEY_* variable. Called before the config is checked, so that an issue quoting
 * it (a key pasted as a field name, as default_tenant...) is redacted too.
 */
export function registerKeysOfRawConfig(raw: unknown, file: string | undefined, env: NodeJS.ProcessEnv): void {
  const tenants: Record<string, { apiKeyEnv?: string; apiKeyFile?: string }> = {};
  const listed = typeof raw === 'object' && raw !== null ? (raw as { tenants?: unknown }).tenants : undefined;
  if (typeof listed === 'object' && listed !== null && !Array.isArray(listed)) {
    for (const [name, t] of Object.entries(listed as Record<string, unknown>)) {
      if (typeof t !== 'object' || t === null) continue;
      const { api_key_env: e, api_key_file: f } = t as { api_key_env?: unknown; api_key_file?: unknown };
      tenants[name] = { ...(typeof e === 'string' ? { apiKeyEnv: e } : {}), ...(typeof f === 'string' ? { apiKeyFile: f } : {}) };
    }
  }
  for (const name of Object.keys(env)) if (name.startsWith('DUS_API_KEY_')) tenants[`\u0000${name}`] = { apiKeyEnv: name };
  const dir = file === undefined ? process.cwd() : dirname(file);
  registerConfiguredKeys({ ...(file !== undefined ? { file } : {}), dir, tenants, safety: {}, watchIntervalMs: 0, suspend: false }, env);
}

/** Keys travel in an HTTP header: printable ASCII, one line. A key is short; 4,096 characters is far past any. */
const MAX_KEY_CHARS = 4096;

/** What makes the value unusable as a key, said without quoting any of it; undefined when it is one. */
function keyProblem(key: string): string | undefined {
  if (/[^\u0020-\u007e]/.test(key)) return 'holds a character that an HTTP header cannot carry (a control character, a line break, or one outside ASCII such as é or €); an API key is one line of printable ASCII';
  if (key.length > MAX_KEY_CHARS) return `is longer than ${MAX_KEY_CHARS.toLocaleString('en-US')} characters, which no API key is`;
  return undefined;
}

async function readKey(config: ResolvedConfig, tenant: string, env: NodeJS.ProcessEnv): Promise<string> {
  const entry = Object.hasOwn(config.tenants, tenant) ? config.tenants[tenant] : undefined;
  if (entry?.apiKeyFile !== undefined) return readKeyFile(config, tenant, entry.apiKeyFile);
  const name = entry?.apiKeyEnv ?? 'DUS_API_KEY';
  // Blanks at the ends are dropped: a newline from `echo`, a space pasted with the key.
  const value = env[name]?.trim();
  if (!value) {
    // The config check refuses a name that may be a key; this guards any other way in.
    const shown = isEnvName(name) ? name : `that tenants.${tenant}.api_key_env names (not shown: it does not look like a name)`;
    throw new UserError(`no API key for tenant "${tenant}": set the environment variable ${shown}`);
  }
  const problem = keyProblem(value);
  if (problem !== undefined) throw new UserError(`the API key of tenant "${tenant}" in the environment variable ${name} ${problem}`);
  return value;
}

/** Where a tenant's api_key_file is: relative to the config's folder. */
export function keyFilePath(config: Pick<ResolvedConfig, 'file' | 'dir'>, file: string): string {
  return resolve(config.file ? dirname(config.file) : config.dir, file);
}

async function readKeyFile(config: ResolvedConfig, tenant: string, file: string): Promise<string> {
  const path = keyFilePath(config, file);
  // Mounted secrets are links (Kubernetes: key -> ..data/key), and may live anywhere: only the
  // kind of file and its size are checked.
  const read = readRegularFile(path, { maxBytes: MAX_KEY_FILE_BYTES });
  if (!read.ok) {
    const why = read.message.replace(/; desired-state files are small.*$/, '');
    throw new UserError(`the API key file of tenant "${tenant}" cannot be read: ${path}: ${why}`);
  }
  const key = read.text.trim();
  if (key === '') throw new UserError(`the API key file of tenant "${tenant}" is empty: ${path}`);
  const problem = keyProblem(key);
  if (problem !== undefined) throw new UserError(`the API key file of tenant "${tenant}" (${path}) ${problem}`);
  return key;
}
