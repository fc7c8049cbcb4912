// `dus-sync init`: writes a first dus-sync.yaml, every section commented, in the working folder
// (or --dir). It asks nothing: what it cannot know
// (the API's address, the tenants) comes from --base-url and --tenant, or stays a commented
// example to fill in. It never replaces a config without --force.
import { lstatSync, mkdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parse } from 'yaml';
import { writeFileAtomic } from '../atomic-write.js';
import { UserError } from '../errors.js';
import { DEFAULT_CONFIG_FILE } from '../load/config.js';
import { validator } from '../load/schema-check.js';
import type { GlobalOptions } from './context.js';

const SCHEMA_URL = 'https://dus-sync.dev/schemas/v1/config.schema.json';
interface InitFlags {
  baseUrl?: string;
  force?: boolean;
}

function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === '' ? '.' : rel.startsWith('..') ? path : rel;
}

/** A tenant name as YAML: plain when it cannot be read as anything but a string. */
function yamlName(name: string): string {
  const plain = /^[A-Za-z][A-Za-z0-9._-]*$/.test(name) && !/^(true|false|null|yes|no|on|off|y|n)$/i.test(name);
  return plain ? name : JSON.stringify(name);
}

/** The environment variable init names for a tenant's key: DUS_API_KEY_ACME for acme. */
export function keyEnvFor(tenant: string): string {
  return `DUS_API_KEY_${tenant.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

function checkedTenants(names: readonly string[]): string[] {
  const out: string[] = [];
  for (const name of names) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name)) {
      throw new UserError(`init takes tenant names of letters, digits, ".", "_" and "-" (at most 100), not ${JSON.stringify(name)}; write another name into ${DEFAULT_CONFIG_FILE} by hand`);
    }
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

function checkedBaseUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !/^https?:$/.test(parsed.protocol) || /\s/.test(url)) {
    throw new UserError(`--base-url takes the API's address, starting with https:// (or http://), not ${JSON.stringify(url)}`);
  }
  return url;
}

/** The first config: every section there, with a comment saying what it is for. Pure. */
export function configText(o: { readonly baseUrl?: string; readonly tenants: readonly string[] }): string {
  const [first] = o.tenants;
  const example = first ?? 'acme';
  const lines = [
    `# yaml-language-server: $schema=${SCHEMA_URL}`,
    '# The dus-sync config: where the Device Update Service is, where each tenant\'s API key comes',
    '# from, which files hold the desired state, and how careful apply is. dus-sync finds it by',
    '# searching upwards from the working folder (or pass --config). Reference: dus-sync schema config',
    'apiVersion: dus-sync/v1',
    'kind: Config',
    '',
    '# The API\'s base URL (the environment variable DUS_BASE_URL overrides it).',
    o.baseUrl !== undefined ? `base_url: ${/^[A-Za-z0-9:/._~%?&=+@-]+$/.test(o.baseUrl) ? o.baseUrl : JSON.stringify(o.baseUrl)}` : '# base_url: https://updates.example.com',
    '',
    '# The tenant of documents that do not name one in metadata.tenant (DUS_TENANT overrides it).',
    o.tenants.length === 1 ? `default_tenant: ${yamlName(example)}`
      : `# default_tenant: ${yamlName(example)}${o.tenants.length > 1 ? '   # with several tenants, naming the tenant in each document is safer' : ''}`,
    '',
    '# Where each tenant\'s API key comes from: an environment variable (api_key_env), or a file',
    '# (api_key_file, for container secrets). Never write a key here: this file belongs in git.',
    '# A tenant without an entry uses DUS_API_KEY.',
    ...(o.tenants.length > 0
      ? ['tenants:', ...o.tenants.map((t) => `  ${yamlName(t)}: { api_key_env: ${keyEnvFor(t)} }`)]
      : ['# tenants:', `#   ${example}: { api_key_env: ${keyEnvFor(example)} }`]),
    '',
    '# The desired-state files: globs relative to this file ("!glob" leaves files out).',
    `# dus-sync export --tenant ${example} --out tenants/${example} writes a tenant's live state there.`,
    'resources: ["tenants/**/*.yaml", "tenants/**/*.yml"]',
    '',
    '# apply and watch refuse a plan with more changes or deactivations unless --allow-large.',
    'safety:',
    '  max_changes: 100',
    '  max_deactivations: 10',
    '  # How long reads must show a phase append whose outcome was unknown absent before it is',
    '  # sent again (--settle-window overrides it).',
    '  settle_window: 30s',
    '',
    '# The agent (dus-sync watch) reconciles at start, on every file change, and at this interval.',
    'watch:',
    '  interval: 5m',
    '',
    '# true stops every write of apply and watch: an emergency stop, from git.',
    'suspend: false',
    '',
  ];
  return lines.join('\n');
}

export async function run(rawOpts: Record<string, unknown>, globals: GlobalOptions): Promise<number> {
  const opts = rawOpts as InitFlags;
  const folder = resolve(process.cwd(), globals.dir ?? '.');
  const target = join(folder, DEFAULT_CONFIG_FILE);
  const tenants = checkedTenants(globals.tenant ?? []);
  const baseUrl = checkedBaseUrl(opts.baseUrl);

  let existing: ReturnType<typeof lstatSync> | undefined;
  try {
    existing = lstatSync(target);
  } catch {
    existing = undefined;
  }
  if (existing && opts.force !== true) {
    throw new UserError(`${shown(target)} already exists; nothing was written (pass --force to replace it)`);
  }
  if (existing && existing.isDirectory()) throw new UserError(`${shown(target)} is a folder; nothing was written`);

  const text = configText({ ...(baseUrl !== undefined ? { baseUrl } : {}), tenants });
  // What init writes must be what every other command accepts.
  if (!validator('config')(parse(text))) throw new Error('init built a config that its own schema refuses; please report it');
  mkdirSync(folder, { recursive: true });
  writeFileAtomic(target, text, { mode: 0o644 });

  const next = [
    ...(baseUrl === undefined ? ['set base_url in it (or DUS_BASE_URL) to the API\'s address'] : []),
    ...(tenants.length === 0 ? ['list your tenants under tenants:, each with the environment variable of its key'] : []),
    `export ${keyEnvFor(tenants[0] ?? 'acme')}=<its key>, then bring the live state into files: dus-sync export --tenant ${tenants[0] ?? 'NAME'} --out tenants/${tenants[0] ?? 'NAME'} --action ID`,
    'then: dus-sync validate, and dus-sync plan (it should show no changes)',
  ];
  // The journal lives outside the repository (see journalPathFor): nothing to add to .gitignore.
  process.stdout.write(`Wrote ${shown(target)}${existing ? ' (replaced the one that was there)' : ''}.\nNext:\n${next.map((l) => `  - ${l}\n`).join('')}`);
  return 0;
}
