// Config resolution: files, flags and environment; and reading the API keys.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, UserError } from '../../src/errors.js';
import { parseInterval, resolveConfig } from '../../src/load/config.js';
import { listResourceFiles, loadDesiredState, selectResourcePaths } from '../../src/load/index.js';
import { readApiKeys } from '../../src/load/keys.js';
import { clearSecretsForTests, redact } from '../../src/redact.js';

const tmp = mkdtempSync(join(tmpdir(), 'dus-config-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function folder(name: string, files: Record<string, string>): string {
  const dir = join(tmp, name);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

const CONFIG = `apiVersion: dus-sync/v1
kind: Config
base_url: https://updates.example.com
default_tenant: acme
tenants:
  acme: { api_key_env: KEY_ACME }
  globex: { api_key_file: secrets/globex }
resources: ["tenants/**/*.yaml"]
safety: { max_changes: 10, max_deactivations: 2 }
watch: { interval: 30s }
suspend: true
`;

describe('resolveConfig', () => {
  it('reads ./dus-sync.yaml by default and resolves everything relative to it', async () => {
    const dir = folder('full', { 'dus-sync.yaml': CONFIG });
    const c = await resolveConfig({ cwd: dir, env: {} });
    expect(c).toMatchObject({
      file: join(dir, 'dus-sync.yaml'), dir, baseUrl: 'https://updates.example.com', defaultTenant: 'acme',
      tenants: { acme: { apiKeyEnv: 'KEY_ACME' }, globex: { apiKeyFile: 'secrets/globex' } },
      resources: ['tenants/**/*.yaml'], safety: { maxChanges: 10, maxDeactivations: 2 }, watchIntervalMs: 30_000, suspend: true,
    });
  });

  it('reads the bounds on answers (api.*), and refuses them out of bounds or misspelt', async () => {
    const base = 'apiVersion: dus-sync/v1\nkind: Config\n';
    const ok = await resolveConfig({ cwd: folder('api-ok', { 'dus-sync.yaml': `${base}api: { max_response_size: 8MiB, request_timeout: 90s }\n` }), env: {} });
    expect(ok.api).toEqual({ maxResponseBytes: 8 * 1024 * 1024, requestTimeoutMs: 90_000 });
    expect((await resolveConfig({ cwd: folder('api-none', { 'dus-sync.yaml': base }), env: {} })).api).toBeUndefined();
    await expect(resolveConfig({ cwd: folder('api-big', { 'dus-sync.yaml': `${base}api: { max_response_size: 2GiB }\n` }), env: {} }))
      .rejects.toThrow(/dus-sync\.yaml:3:\d+: api\.max_response_size takes a size from 1 KiB to 256 MiB \(e\.g\. 16MiB\), not "2GiB"/);
    await expect(resolveConfig({ cwd: folder('api-typo', { 'dus-sync.yaml': `${base}api: { max_respons_size: 8MiB, request_timeout: soon }\n` }), env: {} }))
      .rejects.toThrow(ConfigError);
  });

  it('lets DUS_BASE_URL and DUS_TENANT override the file', async () => {
    const dir = folder('env', { 'dus-sync.yaml': CONFIG });
    const c = await resolveConfig({ cwd: dir, env: { DUS_BASE_URL: 'http://127.0.0.1:9', DUS_TENANT: 'globex' } });
    expect([c.baseUrl, c.defaultTenant]).toEqual(['http://127.0.0.1:9', 'globex']);
  });

  it('works without a config file: cwd, env tenant, no tenants map, 5 minute interval', async () => {
    const dir = folder('none', { 'a.yaml': 'x: 1\n' });
    const c = await resolveConfig({ cwd: dir, env: { DUS_TENANT: 'solo', DUS_BASE_URL: 'http://127.0.0.1:1' } });
    expect(c).toEqual({ dir, baseUrl: 'http://127.0.0.1:1', defaultTenant: 'solo', tenants: {}, safety: {}, watchIntervalMs: 300_000, suspend: false,
      reading: { maxFileBytes: 5 * 1024 * 1024, followExternalSymlinks: false } });
  });

  it('takes --config and --dir relative to cwd; dir defaults to the config folder', async () => {
    const dir = folder('flags', { 'conf/main.yaml': 'apiVersion: dus-sync/v1\nkind: Config\n', 'desired/a.yaml': '' });
    expect((await resolveConfig({ cwd: dir, config: 'conf/main.yaml', env: {} })).dir).toBe(join(dir, 'conf'));
    expect((await resolveConfig({ cwd: dir, config: 'conf/main.yaml', dir: 'desired', env: {} })).dir).toBe(join(dir, 'desired'));
  });

  it('refuses a missing --config with one sentence', async () => {
    await expect(resolveConfig({ cwd: tmp, config: 'nope.yaml', env: {} })).rejects.toThrow(new UserError('the config file nope.yaml does not exist; check --config'));
  });

  it('reports every config problem at its line, with did-you-mean', async () => {
    const dir = folder('bad', { 'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\nbase_url: ftp://x\nsafety:\n  max_change: 1\n' });
    const err = await resolveConfig({ cwd: dir, env: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues.map((i) => `${i.file}:${i.line}:${i.column}: ${i.message}`)).toEqual([
      'dus-sync.yaml:3:11: base_url must start with http:// or https://',
      'dus-sync.yaml:5:3: unknown field "max_change" in safety; did you mean "max_changes"?',
    ]);
  });

  it('reports a config file with broken YAML as a ConfigError', async () => {
    const dir = folder('broken', { 'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: [Config\n' });
    await expect(resolveConfig({ cwd: dir, env: {} })).rejects.toBeInstanceOf(ConfigError);
  });

  it('parses intervals', () => {
    expect([parseInterval('250ms'), parseInterval('30s'), parseInterval('5m'), parseInterval('1h')]).toEqual([250, 30_000, 300_000, 3_600_000]);
    expect(() => parseInterval('5 minutes')).toThrow(UserError);
  });
});

describe('finding the files', () => {
  it('takes every yaml below the folder but the config, dot folders and node_modules', async () => {
    const dir = folder('scan', {
      'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\n', 'a.yaml': '', 'b/c.yml': '', 'b/readme.md': '',
      '.git/x.yaml': '', '.github/workflows/ci.yaml': '', 'node_modules/p/x.yaml': '', 'b/node_modules/y.yaml': '',
    });
    expect(await listResourceFiles(await resolveConfig({ cwd: dir, env: {} }))).toEqual(['a.yaml', 'b/c.yml']);
  });

  it('honours resources globs relative to the config file', async () => {
    const dir = folder('globs', {
      'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\nresources: ["tenants/**/*.yaml"]\n',
      'tenants/acme/f.yaml': '', 'tenants/acme/g.yml': '', 'emulator-seed.yaml': '',
    });
    const config = await resolveConfig({ cwd: dir, env: {} });
    expect(await listResourceFiles(config)).toEqual(['tenants/acme/f.yaml']);
    expect(selectResourcePaths(['emulator-seed.yaml', 'tenants/b/x.yaml', 'tenants/.hidden/y.yaml', 'dus-sync.yaml'], config)).toEqual(['tenants/b/x.yaml']);
  });

  it('honours negated globs in resources (a file is read when a positive glob matches and no negation does)', async () => {
    const dir = folder('negated', {
      'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\nresources: ["tenants/**/*.yaml", "!tenants/old/**"]\n',
      'tenants/acme/f.yaml': '', 'tenants/old/g.yaml': '', 'emulator-seed.yaml': '',
    });
    const config = await resolveConfig({ cwd: dir, env: {} });
    expect(await listResourceFiles(config)).toEqual(['tenants/acme/f.yaml']);
    expect(selectResourcePaths(['tenants/old/g.yaml', 'tenants/acme/f.yaml', 'emulator-seed.yaml'], config)).toEqual(['tenants/acme/f.yaml']);
  });

  it('refuses a file over 5 MiB before reading it, naming the file', async () => {
    const dir = folder('huge', { 'big.yaml': '#'.repeat(5 * 1024 * 1024 + 1), 'ok.yaml': 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: {}\nspec: { id: 1, phases: [] }\n' });
    const { issues, desired } = await loadDesiredState(await resolveConfig({ cwd: dir, env: { DUS_TENANT: 'acme' } }));
    expect(issues.map((i) => [i.file.endsWith('/big.yaml'), i.line, i.message.slice(0, 28)])).toEqual([[true, 1, 'the file is 5.0 MiB, larger ']]);
    expect(desired.actions).toHaveLength(1);
  });

  it('says so when the folder does not exist', async () => {
    const config = await resolveConfig({ cwd: tmp, dir: 'missing', env: {} });
    await expect(listResourceFiles(config)).rejects.toBeInstanceOf(UserError);
  });
});

describe('readApiKeys', () => {
  const dir = folder('keys', { 'dus-sync.yaml': CONFIG, 'secrets/globex': '  file-key-globex-123\n' });

  it('reads env, file (relative to the config file) and DUS_API_KEY, and registers them', async () => {
    clearSecretsForTests();
    const config = await resolveConfig({ cwd: dir, env: {} });
    const keys = await readApiKeys(config, ['globex', 'acme', 'other'], { KEY_ACME: 'env-key-acme-456', DUS_API_KEY: 'fallback-key-789' });
    expect(Object.fromEntries(keys)).toEqual({ acme: 'env-key-acme-456', globex: 'file-key-globex-123', other: 'fallback-key-789' });
    expect(redact('x env-key-acme-456 file-key-globex-123')).toBe('x [REDACTED] [REDACTED]');
  });

  it('names the env var and the tenant when a key is missing', async () => {
    const config = await resolveConfig({ cwd: dir, env: {} });
    await expect(readApiKeys(config, ['acme'], {})).rejects.toThrow('no API key for tenant "acme": set the environment variable KEY_ACME');
    await expect(readApiKeys(config, ['solo'], { KEY_ACME: 'x' })).rejects.toThrow('set the environment variable DUS_API_KEY');
  });

  it('never names an api_key_env that does not look like a name (it may be the key), however it got there', async () => {
    const config = { dir, tenants: { acme: { apiKeyEnv: 'sk-live-0123456789abcdef' }, hex: { apiKeyEnv: 'a3f9c2e1b4d5a6f7e8d9c0b1' },
      stripe: { apiKeyEnv: 'sk_live_51HqZ8vR2mK7pXw4Lb9Tn3Hc6Yd1Fs5Gj0A' }, gh: { apiKeyEnv: 'ghp_16C7e42F292c6912E7710c838347Ae178B4a' },
      lower: { apiKeyEnv: 'sk_live_abcdef1234567890' }, ghlower: { apiKeyEnv: 'ghp_abcdefghijklmnopqrstuvwxyz0123456789' } }, safety: {}, watchIntervalMs: 1, suspend: false };
    for (const tenant of ['acme', 'hex', 'stripe', 'gh', 'lower', 'ghlower']) {
      const err = await readApiKeys(config, [tenant], {}).then(() => new Error('no error'), (e: unknown) => e as Error);
      expect(err.message).toBe(`no API key for tenant "${tenant}": set the environment variable that tenants.${tenant}.api_key_env names (not shown: it does not look like a name)`);
    }
  });

  it('names the file when it is missing, and never prints a key', async () => {
    const d = folder('keys-missing', { 'dus-sync.yaml': CONFIG });
    const config = await resolveConfig({ cwd: d, env: {} });
    const err = await readApiKeys(config, ['acme', 'globex'], { KEY_ACME: 'secret-acme-value' }).then(() => new Error('no error'), (e: unknown) => e as Error);
    expect(err).toBeInstanceOf(UserError);
    expect(err.message).toContain('tenant "globex"');
    expect(err.message).toContain(join(d, 'secrets/globex'));
    expect(err.message).not.toContain('secret-acme-value');
  });
});

describe('default tenant', () => {
  it('default_tenant must be a listed tenant', async () => {
    const dir = folder('default-unknown', { 'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acmee\ntenants:\n  acme: {}\n' });
    const err = await resolveConfig({ cwd: dir, env: {} }).catch((e: unknown) => e);
    expect((err as ConfigError).issues.map((i) => `${i.line}:${i.column}: ${i.message}`)).toEqual([
      '3:17: default_tenant "acmee" is not one of the tenants listed below it ("acme"); did you mean "acme"?',
    ]);
  });
  it('DUS_TENANT must be a listed tenant', async () => {
    const dir = folder('env-unknown', { 'dus-sync.yaml': CONFIG });
    const err = await resolveConfig({ cwd: dir, env: { DUS_TENANT: 'initech' } }).catch((e: unknown) => e) as Error;
    expect(err.message).toBe('the environment variable DUS_TENANT must name one of the tenants in dus-sync.yaml (acme, globex); its value is not shown, since environment variables may hold secrets');
  });
});

describe('one entry per service tenant', () => {
  const config = (tenants: string) => `apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:9\ntenants:\n${tenants}`;
  const refused: [string, string, RegExp][] = [
    ['a space at the end of a name', '  acme: { api_key_env: K }\n  "acme ": { api_key_env: K, tenant_id: acme }\n', /dus-sync\.yaml:6:3: the tenant name "acme " has a space at an end/],
    ['a space at the start', '  " acme": { api_key_env: K }\n', /dus-sync\.yaml:5:3: the tenant name " acme" has a space/],
    ['a control character', '  "ac\\tme": { api_key_env: K }\n', /dus-sync\.yaml:5:3: the tenant name "ac\\tme" .* control character/],
    ['names that differ only in case', '  acme: { api_key_env: K }\n  ACME: { api_key_env: K }\n', /dus-sync\.yaml:6:3: tenants "ACME" and "acme" may be one tenant to the service \(their names differ only in case/],
    ['one tenant_id for two', '  acme: { api_key_env: K, tenant_id: t-1 }\n  acme2: { api_key_env: K, tenant_id: T-1 }\n', /dus-sync\.yaml:6:3: tenants "acme2" and "acme" may be one tenant .*tenant_id is the same to the API, "t-1"/],
    ['a tenant_id that is another tenant\'s name', '  acme: { api_key_env: K }\n  corp: { api_key_env: K, tenant_id: acme }\n', /dus-sync\.yaml:6:3: tenants "corp" and "acme" may be one tenant/],
  ];
  for (const [what, tenants, message] of refused) {
    for (const extra of ['', 'x-anchor: &a 1\n']) {
      it(`refuses ${what}${extra ? ' (yaml path)' : ''}`, async () => {
        const dir = folder(`tenants-${what.replace(/\W/g, '')}${extra ? '-y' : ''}`, { 'dus-sync.yaml': config(tenants) + extra.replace(/x-anchor.*/, 'safety: &a { max_changes: 1 }\n') });
        const err = await resolveConfig({ cwd: dir, env: {} }).then(() => undefined, (e: unknown) => e);
        expect(err).toBeInstanceOf(ConfigError);
        expect(String((err as ConfigError).message)).toMatch(message);
      });
    }
  }
  it('accepts distinct tenants, tenant_id that is its own name', async () => {
    const dir = folder('tenants-ok', { 'dus-sync.yaml': config('  acme: { api_key_env: K, tenant_id: acme }\n  globex: { api_key_env: K, tenant_id: g-1 }\n  acme-eu: { api_key_env: K }\n') });
    const resolved = await resolveConfig({ cwd: dir, env: {} });
    expect(Object.keys(resolved.tenants)).toEqual(['acme', 'globex', 'acme-eu']);
  });
});

describe('a key in the address', () => {
  const KEY = 'Sup3rSecretKeyValue99';
  for (const [what, config, env] of [
    ['base_url', `apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:9/${KEY}/x\ntenants:\n  acme: { api_key_env: K }\n`, { K: KEY }],
    ['DUS_BASE_URL', 'apiVersion: dus-sync/v1\nkind: Config\ntenants:\n  acme: { api_key_env: K }\n', { K: KEY, DUS_BASE_URL: `http://127.0.0.1:9/?token=${KEY}` }],
  ] as const) {
    it(`${what} holding a key is refused, without showing it`, async () => {
      const dir = folder(`key-in-url-${what}`, { 'dus-sync.yaml': config });
      const err = await resolveConfig({ cwd: dir, env: { ...env } }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toMatch(new RegExp(`^${what === 'base_url' ? 'base_url' : 'the environment variable DUS_BASE_URL'} holds an API key \\(shown as http://127\\.0\\.0\\.1:9/.*\\[REDACTED\\]`));
      expect((err as Error).message).not.toContain(KEY);
      clearSecretsForTests();
    });
  }
});

describe('base_url that is not a URL', () => {
  const NOT_URLS = ['http://127.0.0.1:99999', 'http://[::1', 'http://a b'];
  const body = (url: string) => `apiVersion: dus-sync/v1\nkind: Config\nbase_url: ${JSON.stringify(url)}\ntenants:\n  acme: { api_key_env: K }\n`;
  for (const url of NOT_URLS) {
    it(`base_url ${url} is an issue at its line, when the config is read (validate too)`, async () => {
      const dir = folder(`base-url-${url.replace(/\W/g, '_')}`, { 'dus-sync.yaml': body(url) });
      const err = await resolveConfig({ cwd: dir, env: {} }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).issues.map((i) => `${i.file}:${i.line}:${i.column}: ${i.message}`)).toEqual([
        `dus-sync.yaml:3:11: base_url ${JSON.stringify(url)} is not a URL (look for a space, an IPv6 address without its closing ], a port above 65535, an empty host): write the API's address as https://host[:port][/prefix]`,
      ]);
    });
    it(`DUS_BASE_URL=${url} is refused naming the variable, not its value`, async () => {
      const dir = folder(`env-base-url-${url.replace(/\W/g, '_')}`, { 'dus-sync.yaml': body('https://updates.example.com') });
      const err = await resolveConfig({ cwd: dir, env: { DUS_BASE_URL: url } }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toMatch(/^the environment variable DUS_BASE_URL is not a URL \(.*\): set it to the API's address, as https:\/\/host\[:port\]\[\/prefix\]; its value is not shown/);
      expect((err as Error).message).not.toContain(url);
    });
  }
  it('a user name or password in base_url is an issue at its line', async () => {
    const dir = folder('base-url-userinfo', { 'dus-sync.yaml': body('https://user:pass@updates.example.com') });
    const err = await resolveConfig({ cwd: dir, env: {} }).then(() => undefined, (e: unknown) => e);
    expect((err as ConfigError).issues.map((i) => `${i.line}:${i.column}: ${i.message}`)).toEqual([
      '3:11: base_url must not hold a user name or password (user:password@): remove it; a key goes in api_key_env or api_key_file',
    ]);
  });
  it('takes a valid base_url, and plain http to another host (--insecure-http is for the run to allow)', async () => {
    for (const url of ['http://127.0.0.1:65535', 'https://updates.example.com/dus/', 'http://updates.example.com']) {
      const dir = folder(`base-url-ok-${url.replace(/\W/g, '_')}`, { 'dus-sync.yaml': body(url) });
      expect((await resolveConfig({ cwd: dir, env: {} })).baseUrl).toBe(url);
      expect((await resolveConfig({ cwd: dir, env: { DUS_BASE_URL: 'http://[::1]:8080' } })).baseUrl).toBe('http://[::1]:8080');
    }
  });
  it('a key in a base_url that is not a URL is refused as a key, and never shown', async () => {
    const KEY = 'Sup3rSecretKeyValue99';
    for (const [name, config, env] of [
      ['file', body(`http://[::1/${KEY}`), { K: KEY }],
      ['env', body('https://updates.example.com'), { K: KEY, DUS_BASE_URL: `http://a b/${KEY}` }],
    ] as const) {
      const dir = folder(`base-url-key-${name}`, { 'dus-sync.yaml': config });
      const err = await resolveConfig({ cwd: dir, env: { ...env } }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toMatch(/holds an API key \(shown as .*\[REDACTED\]/);
      expect((err as Error).message).not.toContain(KEY);
      clearSecretsForTests();
    }
  });
});

describe('the sentence says what is wrong', () => {
  const cases: [string, string, string][] = [
    ['an empty base_url', 'base_url:\n', 'dus-sync.yaml:3:10: base_url must be a string'],
    ['a number as base_url', 'base_url: 123\n', 'dus-sync.yaml:3:11: base_url must start with http:// or https://'],
    ['a number as settle_window', 'base_url: http://127.0.0.1:9\nsafety: { settle_window: 5 }\n', 'dus-sync.yaml:4:26: settle_window must be a duration such as 30s, 5m or 1h, not the number 5 (a number alone has no unit: 5s is 5 seconds)'],
  ];
  for (const [what, body, message] of cases) {
    it(`${what}: ${message.replace(/^\S+ /, '')}`, async () => {
      const dir = folder(`sentence-${what.replace(/\W/g, '')}`, { 'dus-sync.yaml': `apiVersion: dus-sync/v1\nkind: Config\n${body}` });
      const err = await resolveConfig({ cwd: dir, env: {} }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).issues.map((i) => `${i.file}:${i.line}:${i.column}: ${i.message}`)).toEqual([message]);
    });
  }
});

describe('a key as a tenant name', () => {
  const KEY = 'Sup3rSecretKeyValue99';
  const base = 'apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:9\n';
  for (const [what, config, env, where] of [
    ['default_tenant', `${base}default_tenant: ${KEY}\n`, { DUS_API_KEY: KEY }, 'default_tenant'],
    ['a tenants: entry', `${base}tenants:\n  ${KEY}: { api_key_env: K }\n`, { K: KEY }, 'a tenant name under tenants:'],
    ['DUS_TENANT', base, { DUS_API_KEY: KEY, DUS_TENANT: KEY }, 'the environment variable DUS_TENANT'],
  ] as const) {
    it(`${what} holding a key is refused (it would be sent in every request's header)`, async () => {
      const dir = folder(`key-tenant-${what.replace(/\W/g, '')}`, { 'dus-sync.yaml': config });
      const err = await resolveConfig({ cwd: dir, env: { ...env } }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toBe(`${where} holds an API key (shown as [REDACTED]): a tenant's name is sent in every request's x-service-tenant header; name the tenant, keep its key in api_key_env or api_key_file, and rotate it`);
      clearSecretsForTests();
    });
  }
});
