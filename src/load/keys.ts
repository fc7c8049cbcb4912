// API keys, read only by the commands that call the API. A key never appears in a message.
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { UserError } from '../errors.js';
import type { ResolvedConfig } from '../model/index.js';
import { registerSecret } from '../redact.js';

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
    throw new UserError(`no API key for tenant "${tenant}": set the environment variable ${name}`);
  }
  return value;
}

async function readKeyFile(config: ResolvedConfig, tenant: string, file: string): Promise<string> {
  const path = resolve(config.file ? dirname(config.file) : config.dir, file);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new UserError(`the API key file of tenant "${tenant}" cannot be read: ${path} (${code})`);
  }
  const key = text.trim();
  if (key === '') throw new UserError(`the API key file of tenant "${tenant}" is empty: ${path}`);
  return key;
}
