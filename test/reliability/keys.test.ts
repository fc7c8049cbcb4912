// Keys that the run does not send, and keys in the wrong place, through the built CLI:
// - every key the config can name is redacted, not only the keys of the tenants a run touches:
//   a server serving several tenants may echo another tenant's key in an acme-only run;
//   reading them never fails the run (a missing file, a FIFO, a device, an unset variable);
// - a key put in another variable by mistake (DUS_BASE_URL, DUS_TENANT, DUS_MAX_FILE_SIZE,
//   DUS_FOLLOW_EXTERNAL_SYMLINKS) is not quoted by the error about that variable;
// - a key an HTTP header cannot carry (a control character, `€`) is refused when it is read, in
//   one sentence naming the variable or the file, before any request.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Seed } from '../../src/emulator/index.js';
import { runCli, writeTree } from './helpers.js';

const ACME = 'acme-key-0123456789abcdef';
const GLOBEX = 'globex-SECRET-key-9f8e7d6c5b4a';
const INITECH = 'initech-file-key-a1b2c3d4e5f6';
const FALLBACK = 'dus-api-key-fallback-777888999';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

/** Every 8-character run of the key: any of them in the output is a leak. */
function runsOf(key: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 8 <= key.length; i++) out.push(key.slice(i, i + 8));
  return out;
}

function expectNoKey(text: string, keys: readonly string[]): void {
  for (const key of keys) expect(runsOf(key).filter((r) => text.includes(r)), `${key} in:\n${text}`).toEqual([]);
}

/** A server for several tenants that answers every request 400, quoting the keys it knows. */
async function echoingServer(detail: string): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server: Server = createServer((_req, res) => {
    requests++;
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ detail }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

const FIRMWARE = `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec: { version_number: "1.0.0", is_deactivated: false }
`;

const ACTION = `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 7
  phases:
    - { name: canary }
`;

/** acme by variable, globex by variable, initech by file, and three tenants whose keys cannot be read. */
function repo(baseUrl: string): string {
  const dir = writeTree({
    'dus-sync.yaml': `apiVersion: dus-sync/v1
kind: Config
base_url: ${baseUrl}
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
  globex: { api_key_env: DUS_API_KEY_GLOBEX }
  initech: { api_key_file: secrets/initech }
  hooli: { api_key_file: secrets/fifo }
  umbrella: { api_key_file: secrets/missing }
  zero: { api_key_file: /dev/zero }
  unset: { api_key_env: DUS_API_KEY_UNSET }
  fallback: {}
resources: ["tenants/**/*.yaml"]
`,
    'tenants/fw.yaml': FIRMWARE,
    'tenants/action.yaml': ACTION,
    'secrets/initech': `${INITECH}\n`,
  });
  execFileSync('mkfifo', [join(dir, 'secrets/fifo')]);
  return dir;
}

const ENV = { DUS_API_KEY_ACME: ACME, DUS_API_KEY_GLOBEX: GLOBEX, DUS_API_KEY: FALLBACK };

describe('the keys of tenants a run does not touch', () => {
  it('are redacted when a shared server echoes them: plan, plan --tenant acme, status, export', async () => {
    const server = await echoingServer(`keys ${GLOBEX} and ${INITECH.slice(0, 14)} and ${encodeURIComponent(FALLBACK)} are revoked`);
    const dir = repo(server.url);
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const runs = await Promise.all([
      runCli([...c, 'plan'], { env: ENV }),
      runCli([...c, '--tenant', 'acme', '--debug', 'plan', '--format', 'json'], { env: ENV }),
      runCli([...c, 'status'], { env: ENV }),
      runCli([...c, 'export', '--out', join(dir, 'exported')], { env: ENV }),
    ]);
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain('the API rejected GET');
      expect(r.stderr).toContain('keys [REDACTED] and [REDACTED] and [REDACTED] are revoked');
      expectNoKey(r.stdout + r.stderr, [ACME, GLOBEX, INITECH, FALLBACK]);
    }
  });

  it('never fail the run: unset, missing, a FIFO or a device, the acme-only plan goes on', async () => {
    const em = await startEmulator({ seed: { tenants: { acme: { api_key: ACME, bundles: [{ version: '2024.01', firmwares: [
      { version_number: '1.0.0', component_name: 'modem', uncompressed_size: 1, is_deactivated: false, dependencies: [] },
    ] }], actions: [{ id: 7, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] }] } } } as unknown as Seed });
    closers.push(() => em.close());
    const dir = repo(em.url);
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--detailed-exitcode'], { env: { DUS_API_KEY_ACME: ACME }, timeoutMs: 20_000 });
    // Nothing but the progress line of the read.
    expect(r.stderr).toMatch(/^reading the live state of tenant acme…\n$/);
    expect(r.stdout).toContain('No changes.');
    expect(r.code).toBe(0);
  });
});

describe('a key put in the wrong variable', () => {
  const KEY = 'Zq8xK3mP9wR2tY7aB4cD6eF1';
  const cases: [string, Record<string, string>, RegExp][] = [
    ['DUS_BASE_URL', { DUS_BASE_URL: KEY }, /^error: the environment variable DUS_BASE_URL must be the API's address, starting with http:\/\/ or https:\/\/; its value is not shown/],
    ['DUS_TENANT', { DUS_TENANT: KEY }, /^error: the environment variable DUS_TENANT must name one of the tenants in dus-sync\.yaml \(acme\); its value is not shown/],
    ['DUS_MAX_FILE_SIZE', { DUS_MAX_FILE_SIZE: KEY }, /^error: the environment variable DUS_MAX_FILE_SIZE must be a size from 1 KiB to 256 MiB \(e\.g\. 16MiB\); its value is not shown/],
    ['DUS_FOLLOW_EXTERNAL_SYMLINKS', { DUS_FOLLOW_EXTERNAL_SYMLINKS: KEY }, /^error: the environment variable DUS_FOLLOW_EXTERNAL_SYMLINKS must be 1 or 0 \(true or false\); its value is not shown/],
  ];
  it.each(cases)('%s: the error names the variable and the shape it needs, and does not quote it', async (_name, env, message) => {
    const dir = writeTree({
      'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:9\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n',
      'fw.yaml': FIRMWARE,
    });
    // With the key also where it belongs, and without: either way the error is about the other variable alone.
    const runs = await Promise.all([['plan'], ['validate'], ['status']].flatMap((command) =>
      [{ DUS_API_KEY_ACME: KEY }, {}].map((own) => runCli(command, { cwd: dir, env: { ...own, ...env } }))));
    for (const r of runs) {
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expectNoKey(r.stdout + r.stderr, [KEY]);
    }
  });
});

describe('a key an HTTP header cannot carry', () => {
  it.each([
    ['€ in it', 'acme-key-€-0123456789'],
    ['a control character', 'acme-key-\u0001-0123456789'],
    ['a line break', 'acme-key-0123\n456789'],
    ['a no-break space', 'acme-key\u00a00123456789'],
  ])('%s, in a variable: one sentence naming the variable, before any request', async (_name, bad) => {
    const server = await echoingServer('unused');
    const dir = repo(server.url);
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan'], { env: { DUS_API_KEY_ACME: bad } });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: the API key of tenant "acme" in the environment variable DUS_API_KEY_ACME holds a character that an HTTP header cannot carry (a control character, a line break, or one outside ASCII such as é or €); an API key is one line of printable ASCII\n');
    expect(server.requests()).toBe(0);
  });

  it('in a key file: the file is named, the key is not shown; blanks and a final newline around a key are dropped', async () => {
    const server = await echoingServer('unused');
    const dir = repo(server.url);
    writeFileSync(join(dir, 'secrets/initech'), 'initech-\u001b[2J-key-0123456789\n');
    writeFileSync(join(dir, 'tenants/fw.yaml'), FIRMWARE.replace('tenant: acme', 'tenant: initech'));
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, '--tenant', 'initech', 'plan'], { env: {} });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: the API key file of tenant "initech" (${join(dir, 'secrets/initech')}) holds a character that an HTTP header cannot carry (a control character, a line break, or one outside ASCII such as é or €); an API key is one line of printable ASCII\n`);
    expect(server.requests()).toBe(0);
    writeFileSync(join(dir, 'secrets/initech'), `  ${INITECH} \n`);
    const ok = await runCli(['--config', `${dir}/dus-sync.yaml`, '--tenant', 'initech', 'plan'], { env: {} });
    expect(ok.stderr).toContain('the API rejected GET');
    expect(server.requests()).toBeGreaterThan(0);
  });
});
