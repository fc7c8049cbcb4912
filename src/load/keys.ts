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
  const keyLike = value.length >= 20 && !value.includes('_') && /[0-9]/.test(value) && /[A-Za-z]/.test(value);
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(value) && !keyLike;
}

/** tenant → key, for the given tenants. Every key read is registered for redaction. */
export async function readApiKeys(config: ResolvedConfig, tenants: readonly string[], env: NodeJS.ProcessEnv): Promise<Map<string, string>> {
  const keys = new Map<string, string>();
  for (const tenant of [...new Set(tenants)].sort()) {
    const key = await readKey(config, tenant, env);
    registerSecret(key);
    keys.set(tenant, key);
  }
  return keys;
}

async function readKey(config: ResolvedConfig, tenant: string, env: NodeJS.ProcessEnv): Promise<string> {
  const entry = Object.hasOwn(config.tenants, tenant) ? config.tenants[tenant] : undefined;
  if (entry?.apiKeyFile !== undefined) return readKeyFile(config, tenant, entry.apiKeyFile);
  const name = entry?.apiKeyEnv ?? 'DUS_API_KEY';
  const value = env[name]?.trim();
  if (!value) {
    // The config check refuses a name that may be a key; this guards any other way in.
    const shown = isEnvName(name) ? name : `that tenants.${tenant}.api_key_env names (not shown: it does not look like a name)`;
    throw new UserError(`no API key for tenant "${tenant}": set the environment variable ${shown}`);
  }
  return value;
}

async function readKeyFile(config: ResolvedConfig, tenant: string, file: string): Promise<string> {
  const path = resolve(config.file ? dirname(config.file) : config.dir, file);
  // Mounted secrets are links (Kubernetes: key -> ..data/key), and may live anywhere: only the
  // kind of file and its size are checked.
  const read = readRegularFile(path, { maxBytes: MAX_KEY_FILE_BYTES });
  if (!read.ok) {
    const why = read.message.replace(/; desired-state files are small.*$/, '');
    throw new UserError(`the API key file of tenant "${tenant}" cannot be read: ${path}: ${why}`);
  }
  const key = read.text.trim();
  if (key === '') throw new UserError(`the API key file of tenant "${tenant}" is empty: ${path}`);
  return key;
}
