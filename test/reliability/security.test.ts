// Security, end to end through the built CLI: plain http to a remote host is refused before any
// connection; TLS is always verified; API keys never reach any output or file, whatever the
// server echoes; the emulator compares keys in constant time and caps bodies; odd version
// numbers stay inside one path segment; the journal is owner-only; two applies on one machine
// do not interleave; nothing is written on invalid input.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { CLI, runCli, spawnCli, STACK, writeTree, type RunResult } from './helpers.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'reliability');
const GUARD = join(FIXTURES, 'no-network.cjs');
const KEY = 'sec-KEY-3f9a1c7e5b2d4f6a8c0e';
const WRONG = 'sec-WRONG-7d1e9b3a5c2f4e6d';
/** A key with characters that JSON escapes and URLs encode: base64 keys have `+/=`. */
const ODD_KEY = 'sec"ODD\\key with/+=%and-more-0123';
const REMOTE = 'updates.example.com';

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => { await Promise.all(servers.splice(0).map((s) => s.close())); });

async function emulator(seed: Seed, opts: Partial<Parameters<typeof startEmulator>[0]> = {}): Promise<RunningEmulator> {
  const em = await startEmulator({ seed, ...opts });
  servers.push(em);
  return em;
}

function seed(extra: { firmwares?: { version_number: string; component_name?: string }[] } = {}): Seed {
  const fws = [
    { version_number: '1.0.0', component_name: 'modem', uncompressed_size: 10, is_deactivated: false, dependencies: [] },
    ...(extra.firmwares ?? []).map((f) => ({ component_name: 'odd', uncompressed_size: 5, is_deactivated: false, dependencies: [], ...f })),
  ];
  return {
    tenants: {
      acme: {
        api_key: KEY,
        bundles: [{ version: '2024.01', firmwares: fws }],
        actions: [{ id: 7, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] }],
      },
    },
  } as unknown as Seed;
}

const CONFIG = (baseUrl?: string) => `apiVersion: dus-sync/v1
kind: Config
${baseUrl ? `base_url: ${baseUrl}\n` : ''}default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
`;

const FIRMWARE = (vn: string, deactivated = true) => `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: ${JSON.stringify(vn)}
  is_deactivated: ${String(deactivated)}
`;

const ACTION = (names: string[]) => `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 7
  phases:
${names.map((n) => `    - { name: ${n}, trigger_on: {}, info: {} }`).join('\n')}
`;

function repo(baseUrl?: string, files: Record<string, string> = {}): string {
  return writeTree({
    'dus-sync.yaml': CONFIG(baseUrl),
    'tenants/fw.yaml': FIRMWARE('1.0.0'),
    'tenants/action.yaml': ACTION(['canary', 'wave-1']),
    ...files,
  });
}

/** The CLI with the network guard preloaded: a non-loopback connection is blocked and reported. */
function guarded(args: string[], env: Record<string, string>, cwd?: string): Promise<RunResult> {
  return runCli(args, { cwd, env: { ...env, NODE_OPTIONS: `--require ${GUARD}` }, timeoutMs: 30_000 });
}

/** The key as written, as JSON text holds it, and as a URL holds it. */
function forms(key: string): string[] {
  return [...new Set([key, JSON.stringify(key).slice(1, -1), encodeURIComponent(key)])];
}

function expectNoKey(texts: string[], keys = [KEY, WRONG]): void {
  for (const t of texts) {
    for (const k of keys.flatMap(forms)) {
      expect(t).not.toContain(k);
      // A key cut short by a truncated message still leaks its start.
      expect(t).not.toContain(k.slice(0, 8));
    }
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

// ---------------------------------------------------------------- plain http

describe('plain http to a remote host', () => {
  const commands: [string, string[]][] = [
    ['plan', ['plan']],
    ['apply', ['apply', '--auto-approve']],
    ['status', ['status']],
    ['export', ['export', '--out', 'out']],
  ];

  it.each(commands)('%s is refused before any connection, with a sentence saying to use https or --insecure-http', async (_name, args) => {
    const dir = repo(`http://${REMOTE}`);
    const started = Date.now();
    const r = await guarded(['--config', `${dir}/dus-sync.yaml`, ...args], { DUS_API_KEY_ACME: KEY }, dir);
    const elapsed = Date.now() - started;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`refusing to send API keys over plain http to ${REMOTE.replace(/\./g, '\\.')}: use https:// or pass --insecure-http`));
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/BLOCKED/);
    expect(r.stderr).not.toMatch(STACK);
    // No retries, no timeouts: the refusal comes before the first request.
    expect(elapsed).toBeLessThan(5_000);
    expectNoKey([r.stdout, r.stderr]);
    expect(existsSync(join(dir, 'out'))).toBe(false);
  });

  it('DUS_BASE_URL=http://remote is refused the same way', async () => {
    const dir = repo();
    const r = await guarded(['--config', `${dir}/dus-sync.yaml`, 'plan'], { DUS_API_KEY_ACME: KEY, DUS_BASE_URL: `http://${REMOTE}:8080/dus` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/plain http to updates\.example\.com:8080: use https:\/\/ or pass --insecure-http/);
    expect(r.stderr).not.toMatch(/BLOCKED/);
  });

  it('with --insecure-http the tool does try the remote host (caught by the test\'s guard, never sent)', async () => {
    const dir = repo(`http://${REMOTE}`);
    const r = await guarded(['--insecure-http', '--config', `${dir}/dus-sync.yaml`, 'plan'], { DUS_API_KEY_ACME: KEY });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`BLOCKED connect ${REMOTE}`);
    expect(r.stderr).not.toMatch(/refusing to send API keys/);
    expectNoKey([r.stdout, r.stderr]);
  });

  it('the key never leaves for another host: a next link or a redirect pointing elsewhere is not followed', async () => {
    const elsewhere = `http://${REMOTE}/api/v1/firmware-bundles?page=2`;
    for (const mode of ['next', '302', '307', 'next-https'] as const) {
      const server = createHttpServer((req, res) => {
        // The repository declares action 7: plan reads it as it loads the files; not there.
        if ((req.url ?? '').startsWith('/api/v1/actions/')) {
          res.writeHead(404, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ detail: 'Not found.' }));
        }
        if (mode === 'next' || mode === 'next-https') {
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ count: 2, next: mode === 'next' ? elsewhere : elsewhere.replace('http:', 'https:'), previous: null, results: [] }));
        }
        res.writeHead(Number(mode), { location: `http://${REMOTE}${req.url ?? '/'}` });
        return res.end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      servers.push({ close: () => closeServer(server) });
      const dir = repo(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      const r = await guarded(['--config', `${dir}/dus-sync.yaml`, 'plan'], { DUS_API_KEY_ACME: KEY });
      expect(r.code, mode).toBe(1);
      expect(r.stderr, mode).not.toMatch(/BLOCKED/);
      expect(r.stderr).not.toMatch(STACK);
      if (mode.startsWith('next')) expect(r.stderr).toMatch(/refusing to follow the next link .*: it leads to another origin than the API's/);
      expectNoKey([r.stdout, r.stderr]);
    }
  });

  it('http to loopback is allowed without the flag (the emulator)', async () => {
    const em = await emulator(seed());
    const dir = repo(em.url.replace('127.0.0.1', 'localhost'));
    const r = await guarded(['--config', `${dir}/dus-sync.yaml`, 'plan'], { DUS_API_KEY_ACME: KEY });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/BLOCKED/);
  });
});

// ---------------------------------------------------------------- TLS

const TLS = { key: readFileSync(join(FIXTURES, 'tls', 'loopback-key.pem')), cert: readFileSync(join(FIXTURES, 'tls', 'loopback-cert.pem')) };

/** An https API on 127.0.0.1 with the self-signed certificate: one bundle, one firmware, already as desired. */
async function httpsApi(): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = createHttpsServer(TLS, (req, res) => {
    requests++;
    const json = (status: number, body: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
    if (req.url?.startsWith('/api/v1/firmware-bundles')) {
      return json(200, { count: 1, next: null, previous: null, results: [{
        id: '00000000-0000-4000-8000-000000000001', version: '2024.01', file_name: 'b.bin', uncompressed_size: 1, content_length: 1, checksum: 'x',
        created_by: 'ci', created_at: '2024-01-01T00:00:00Z',
        firmwares: [{ firmware_id: '00000000-0000-4000-8000-000000000002', version_number: '1.0.0', component_name: 'modem', file_name: 'f.bin',
          uncompressed_size: 10, content_length: 10, checksum: 'y', is_deactivated: true, dependencies: [] }],
      }] });
    }
    return json(404, { detail: 'Not found.' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push({ close: () => closeServer(server) });
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); });
}

describe('TLS is always verified', () => {
  it('a self-signed server is refused without --ca-file, even with NODE_TLS_REJECT_UNAUTHORIZED=0, and trusted with it', async () => {
    const api = await httpsApi();
    const dir = writeTree({ 'dus-sync.yaml': CONFIG(api.url), 'tenants/fw.yaml': FIRMWARE('1.0.0') });
    const args = ['--config', `${dir}/dus-sync.yaml`, 'plan', '--detailed-exitcode'];

    const plain = await runCli(args, { env: { DUS_API_KEY_ACME: KEY }, timeoutMs: 30_000 });
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/certificate|self.signed|SELF_SIGNED/i);
    expect(plain.stderr).not.toMatch(STACK);

    const switchedOff = await runCli(args, { env: { DUS_API_KEY_ACME: KEY, NODE_TLS_REJECT_UNAUTHORIZED: '0' }, timeoutMs: 30_000 });
    expect(switchedOff.code, 'NODE_TLS_REJECT_UNAUTHORIZED=0 must not switch verification off').toBe(1);
    expect(switchedOff.stderr).toMatch(/certificate|self.signed|SELF_SIGNED/i);
    expect(api.requests(), 'no request got through an unverified connection').toBe(0);

    const trusted = await runCli(['--ca-file', join(FIXTURES, 'tls', 'loopback-cert.pem'), ...args], { env: { DUS_API_KEY_ACME: KEY }, timeoutMs: 30_000 });
    expect(trusted.code, trusted.stderr).toBe(0);
    expect(trusted.stdout).toMatch(/No changes/);
    expectNoKey([plain.stdout, plain.stderr, switchedOff.stdout, switchedOff.stderr, trusted.stdout, trusted.stderr]);
  });
});

// ---------------------------------------------------------------- keys

type EchoMode = 'read-500' | 'read-text-500' | 'read-malformed' | 'read-401' | 'write-echo';

/**
 * A server on 127.0.0.1 that puts the request's key (and all its headers) into its answers,
 * padded so that the key straddles wherever a message might be cut short.
 */
async function echoServer(mode: EchoMode, pad: number): Promise<string> {
  const server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    const key = String(req.headers['x-service-api-key'] ?? '');
    const echo = `${'p'.repeat(pad)}${key} headers=${JSON.stringify(req.headers)} in-a-url=https://x.test/?k=${encodeURIComponent(key)}`;
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', 'x-echo-key': key, ...headers });
      res.end(JSON.stringify(body));
    };
    const isRead = req.method === 'GET' || req.method === 'HEAD';
    if (mode === 'read-500') return json(500, { detail: echo });
    if (mode === 'read-text-500') { res.writeHead(500, { 'content-type': 'text/plain' }); return res.end(echo); }
    if (mode === 'read-malformed') return json(200, { count: 'many', next: echo, results: echo });
    if (mode === 'read-401') return json(401, { detail: `Invalid API key ${echo}` }, { 'www-authenticate': `Key ${key}` });
    // write-echo: reads are valid, writes fail with the key in a field map and a detail.
    if (isRead && req.url?.startsWith('/api/v1/firmware-bundles')) {
      return json(200, { count: 1, next: null, previous: null, results: [{
        id: '00000000-0000-4000-8000-000000000001', version: '2024.01', file_name: 'b.bin', uncompressed_size: 1, content_length: 1, checksum: 'x',
        created_by: 'ci', created_at: '2024-01-01T00:00:00Z',
        firmwares: [{ firmware_id: '00000000-0000-4000-8000-000000000002', version_number: '1.0.0', component_name: 'modem', file_name: 'f.bin',
          uncompressed_size: 10, content_length: 10, checksum: 'y', is_deactivated: false, dependencies: [] }],
      }] });
    }
    if (isRead && req.url === '/api/v1/actions/7') {
      return json(200, { id: 7, tenant_id: 'acme', status: 'pending', release_notes: echo, phases: [{ name: 'canary', trigger_on: {}, info: {} }],
        phases_triggered: [false], next_phase_index: 0, end_timestamp: 0, retry_on_failure_until: 0 });
    }
    if (req.method === 'PUT') return json(500, { detail: echo });
    if (req.method === 'POST') return json(400, { name: [echo], non_field_errors: [`key ${key} may not append`] });
    return json(404, { detail: echo });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push({ close: () => closeServer(server) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('API keys are never shown', () => {
  it('a full session with the right key: validate, plan (and --out, --debug), apply, status, export: no key in any output or file', async () => {
    const em = await emulator(seed());
    const dir = repo(em.url);
    const env = { DUS_API_KEY_ACME: KEY };
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const runs = [
      await runCli([...c, 'validate'], { env }),
      await runCli([...c, '--debug', 'plan', '--out', `${dir}/plan.json`], { env }),
      await runCli([...c, 'plan', '--format', 'json'], { env }),
      await runCli([...c, 'plan', '--format', 'markdown'], { env }),
      await runCli([...c, '--debug', 'apply', '--auto-approve', '--journal', `${dir}/state/journal.jsonl`], { env }),
      await runCli([...c, '--debug', 'status'], { env }),
      await runCli([...c, 'status', '--format', 'json'], { env }),
      await runCli([...c, '--debug', 'export', '--out', `${dir}/exported`, '--action', '7'], { env }),
    ];
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    expect(filesUnder(`${dir}/exported`).length).toBeGreaterThan(0);
    expectNoKey(runs.flatMap((r) => [r.stdout, r.stderr]));
    expectNoKey(filesUnder(dir).map((f) => readFileSync(f, 'utf8')));
    expect(em.store.getAction('acme', 7)!.phases.map((p) => p.name)).toEqual(['canary', 'wave-1']);
  });

  it('a wrong key: every command fails in one sentence that shows neither key', async () => {
    const em = await emulator(seed());
    const dir = repo(em.url);
    const c = ['--config', `${dir}/dus-sync.yaml`];
    for (const args of [['plan'], ['--debug', 'apply', '--auto-approve'], ['status'], ['export', '--out', `${dir}/exported`]]) {
      const r = await runCli([...c, ...args], { env: { DUS_API_KEY_ACME: WRONG } });
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toMatch(/401|key/i);
      // --debug prints stack traces on purpose; without it, never.
      if (!args.includes('--debug')) expect(r.stderr).not.toMatch(STACK);
      expectNoKey([r.stdout, r.stderr]);
    }
    expect(em.stats.writes).toBe(0);
  });

  const modes: [EchoMode, number][] = [
    // Text bodies and JSON details alike are cut at 500 characters: the key straddles the cut.
    ['read-500', 0], ['read-500', 486],
    ['read-text-500', 60], ['read-text-500', 486], ['read-text-500', 492], ['read-malformed', 120], ['read-401', 30],
  ];

  it.each(modes)('a server that echoes the key (%s, padded %i): plan, status and export never show it', async (mode, pad) => {
    const url = await echoServer(mode, pad);
    const dir = repo(url);
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const env = { DUS_API_KEY_ACME: KEY };
    const runs = await Promise.all([
      runCli([...c, 'plan'], { env }),
      runCli([...c, '--debug', 'plan', '--format', 'json'], { env }),
      runCli([...c, '--debug', 'status'], { env }),
      runCli([...c, 'export', '--out', `${dir}/exported`], { env }),
    ]);
    for (const r of runs) expect(r.code).toBe(1);
    // The key was there to leak: the server's text reached the user, with the key replaced.
    if (mode !== 'read-malformed') expect(runs[0]!.stderr).toMatch(/\[REDACT/);
    // --debug prints stack traces on purpose (redacted too); without it, never.
    expect(runs[0]!.stderr).not.toMatch(STACK);
    expect(runs[3]!.stderr).not.toMatch(STACK);
    expectNoKey(runs.flatMap((r) => [r.stdout, r.stderr]));
    expectNoKey(filesUnder(dir).map((f) => readFileSync(f, 'utf8')));
  });

  it.each(['read-500', 'read-text-500', 'read-401'] as const)('a key with characters JSON escapes and URLs encode, echoed by the server (%s): never shown in any form', async (mode) => {
    const url = await echoServer(mode, 40);
    const dir = repo(url);
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const env = { DUS_API_KEY_ACME: ODD_KEY };
    const runs = await Promise.all([
      runCli([...c, 'plan'], { env }),
      runCli([...c, '--debug', 'apply', '--auto-approve'], { env }),
      runCli([...c, 'status', '--format', 'json'], { env }),
    ]);
    for (const r of runs) expect(r.code).toBe(1);
    expect(runs[0]!.stderr).toContain('[REDACTED]');
    expectNoKey(runs.flatMap((r) => [r.stdout, r.stderr]), [ODD_KEY]);
  });

  it('keys from DUS_API_KEY (no config file) and from api_key_file are hidden the same way', async () => {
    const url = await echoServer('read-500', 70);
    const bare = writeTree({ 'fw.yaml': FIRMWARE('1.0.0').replace('metadata: { tenant: acme }', 'metadata: {}') });
    const viaEnv = await runCli(['--dir', bare, 'plan'], { env: { DUS_BASE_URL: url, DUS_TENANT: 'acme', DUS_API_KEY: KEY } });
    expect(viaEnv.code).toBe(1);
    expect(viaEnv.stderr).toContain('[REDACTED]');

    const secrets = writeTree({ 'globex.key': `${WRONG}\n` });
    const dir = writeTree({
      'dus-sync.yaml': `apiVersion: dus-sync/v1\nkind: Config\nbase_url: ${url}\ndefault_tenant: globex\ntenants:\n  globex: { api_key_file: ${secrets}/globex.key }\n`,
      'fw.yaml': FIRMWARE('1.0.0').replace('tenant: acme', 'tenant: globex'),
    });
    const viaFile = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan'], { env: {} });
    expect(viaFile.code).toBe(1);
    expect(viaFile.stderr).toContain('[REDACTED]');
    expectNoKey([viaEnv.stdout, viaEnv.stderr, viaFile.stdout, viaFile.stderr]);
  });

  it('a server that echoes the key in its 500 to a PUT and its 400 to an append: apply never shows it', async () => {
    const url = await echoServer('write-echo', 150);
    const dir = repo(url);
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const env = { DUS_API_KEY_ACME: KEY };
    const runs = [
      await runCli([...c, 'apply', '--auto-approve', '--journal', `${dir}/state/journal.jsonl`, '--settle-window', '1s'], { env }),
      await runCli([...c, '--debug', 'apply', '--auto-approve', '--journal', `${dir}/state/journal.jsonl`, '--settle-window', '1s'], { env }),
      await runCli([...c, 'status', '--format', 'json'], { env }),
    ];
    expect(runs[0]!.code).toBe(1);
    expect(runs[0]!.stdout + runs[0]!.stderr).toMatch(/failed/);
    expect(runs[0]!.stderr).not.toMatch(STACK);
    expect(runs[2]!.stderr).not.toMatch(STACK);
    expectNoKey(runs.flatMap((r) => [r.stdout, r.stderr]));
    expectNoKey(filesUnder(dir).map((f) => readFileSync(f, 'utf8')));
  });
});

// ---------------------------------------------------------------- the emulator

describe('the emulator', () => {
  it('compares keys in constant time: hashes compared with timingSafeEqual against every tenant, no early exit', () => {
    const source = readFileSync(join(import.meta.dirname, '..', '..', 'src', 'emulator', 'store.ts'), 'utf8');
    const fn = /tenantForKey\(key: string\)[^{]*\{([\s\S]*?)\n {2}\}/.exec(source)?.[1] ?? '';
    expect(fn).toMatch(/createHash\('sha256'\)\.update\(key\)/);
    expect(fn).toMatch(/for \(const t of this\.tenants\.values\(\)\)/);
    expect(fn).toMatch(/timingSafeEqual\(given, t\.keyHash\)/);
    expect(fn).not.toMatch(/return [^f]|break/);
    expect(source).not.toMatch(/api_?[kK]ey\s*===|===\s*\w*\.api_?[kK]ey/);
  });

  it('answers 401, not a crash, to keys of any length, and 413 to a body over its limit without storing it', async () => {
    const em = await emulator(seed(), { bodyLimit: 64 * 1024 });
    for (const key of ['', 'x', KEY.slice(0, -1), `${KEY}x`, 'k'.repeat(8000), 'ü🔑']) {
      const r = await fetch(`${em.url}/api/v1/actions/7`, { headers: { 'x-service-api-key': encodeURIComponent(key), 'x-service-tenant': 'acme' } });
      expect(r.status, `key of length ${key.length}`).toBe(401);
    }
    const headers = { 'x-service-api-key': KEY, 'x-service-tenant': 'acme', 'content-type': 'application/json' };
    const big = JSON.stringify({ name: 'huge', trigger_on: {}, info: { blob: 'x'.repeat(200 * 1024) } });
    const post = await fetch(`${em.url}/api/v1/actions/7/append_phase`, { method: 'POST', headers, body: big });
    expect(post.status).toBe(413);
    const put = await fetch(`${em.url}/api/v1/firmwares/1.0.0`, { method: 'PUT', headers, body: JSON.stringify({ is_deactivated: true, uncompressed_size: 1, dependencies: Array(5000).fill({ component_name: 'c', min_version: '1.0.0' }) }) });
    expect(put.status).toBe(413);
    expect(em.stats.writes).toBe(0);
    expect(em.store.getAction('acme', 7)!.phases).toHaveLength(1);
    // The default limit is there too (1 MiB).
    const dflt = await emulator(seed());
    const r = await fetch(`${dflt.url}/api/v1/actions/7/append_phase`, { method: 'POST', headers, body: JSON.stringify({ name: 'x', info: { b: 'x'.repeat(1100 * 1024) } }) });
    expect(r.status).toBe(413);
  });
});

// ---------------------------------------------------------------- odd version numbers

describe('odd version numbers', () => {
  const ODD = ['1.0/../x', 'a b', 'ü', '#1', '?x=1', '..', '.', '%2F', '1.0/..', 'a\\b', '+1&2=3', '~tilde', "quote'\"s"];

  it('plan and apply address exactly the record they name, each path parameter one encoded segment', async () => {
    const lines: string[] = [];
    const em = await emulator(seed({ firmwares: ODD.map((vn) => ({ version_number: vn })) }), { log: (l) => lines.push(l) });
    const files: Record<string, string> = { 'tenants/fw.yaml': ODD.map((vn) => FIRMWARE(vn)).join('---\n') };
    const dir = repo(em.url, files);
    const env = { DUS_API_KEY_ACME: KEY };
    const c = ['--config', `${dir}/dus-sync.yaml`];

    const plan = await runCli([...c, 'plan', '--format', 'json'], { env });
    expect(plan.code, plan.stderr).toBe(0);
    const keys = (JSON.parse(plan.stdout) as { changes: { kind: string; key: string }[] }).changes.filter((x) => x.kind === 'firmware').map((x) => x.key).sort();
    expect(keys).toEqual([...ODD].sort());
    for (const format of ['text', 'markdown']) {
      const r = await runCli([...c, 'plan', '--format', format], { env });
      expect(r.code, r.stderr).toBe(0);
    }

    const apply = await runCli([...c, 'apply', '--auto-approve', '--journal', `${dir}/j.jsonl`], { env });
    expect(apply.code, apply.stderr).toBe(0);
    for (const vn of ODD) expect(em.store.firmwaresByVersion('acme', vn)[0]!.is_deactivated, vn).toBe(true);
    // Every PUT went to /api/v1/firmwares/{one segment}: no 404, no route escaped, nothing unmatched.
    const puts = lines.filter((l) => l.startsWith('PUT '));
    expect(puts).toHaveLength(ODD.length);
    for (const l of puts) {
      const path = l.split(' ')[1]!;
      expect(path).toMatch(/^\/api\/v1\/firmwares\/[^/?#\s]+$/);
      expect(l).toMatch(/ 200 /);
    }
    expect(em.stats.byRoute.unmatched ?? 0).toBe(0);
    const again = await runCli([...c, 'plan', '--detailed-exitcode'], { env });
    expect(again.code, again.stdout).toBe(0);
  });

  it('export writes them so that they read back as the same strings: plan right after export has no changes', async () => {
    const em = await emulator(seed({ firmwares: [...ODD, 'yes', 'null', '1.10', '0x1F', '- a', ': b', '{c}', '*d', '&e', '!f', '|g', '>h', '@i', '`j'].map((vn) => ({ version_number: vn })) }));
    const dir = writeTree({ 'dus-sync.yaml': CONFIG(em.url) });
    const env = { DUS_API_KEY_ACME: KEY };
    const exported = await runCli(['--config', `${dir}/dus-sync.yaml`, 'export', '--out', `${dir}/tenants/acme`], { env });
    expect(exported.code, exported.stderr).toBe(0);
    const validate = await runCli(['--config', `${dir}/dus-sync.yaml`, 'validate'], { env });
    expect(validate.code, validate.stdout + validate.stderr).toBe(0);
    const plan = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--format', 'json', '--detailed-exitcode'], { env });
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    const summary = (JSON.parse(plan.stdout) as { summary: { unchanged: number } }).summary;
    expect(summary.unchanged).toBeGreaterThanOrEqual(ODD.length + 14);
  });
});

// ---------------------------------------------------------------- journal, lock, invalid input

describe('the journal and the lock', () => {
  it('the journal is created 0600 in a 0700 folder even under umask 000, and an existing loose one is tightened', async () => {
    const em = await emulator(seed());
    const dir = repo(em.url);
    // The default place: a folder of the API under $XDG_STATE_HOME/dus-sync (set for the tests).
    const state = mkdtempSync(join(tmpdir(), 'dus-sec-state-'));
    const r = await new Promise<number | null>((resolve) => {
      const child = spawn('sh', ['-c', `umask 000 && exec "${process.execPath}" "${CLI}" --config "${dir}/dus-sync.yaml" apply --auto-approve`], {
        env: { ...process.env, DUS_API_KEY_ACME: KEY, NO_COLOR: '1', XDG_STATE_HOME: state }, stdio: 'ignore',
      });
      child.on('close', resolve);
    });
    expect(r).toBe(0);
    const [folder] = readdirSync(join(state, 'dus-sync'));
    expect(folder).toMatch(/^127\.0\.0\.1_\d+-[0-9a-f]{12}$/);
    const journal = join(state, 'dus-sync', folder!, 'journal.jsonl');
    expect(existsSync(join(dir, '.dus-sync'))).toBe(false);
    expect(statSync(journal).mode & 0o777).toBe(0o600);
    expect(statSync(join(state, 'dus-sync', folder!)).mode & 0o777).toBe(0o700);
    expect(readFileSync(journal, 'utf8')).toBe('');

    chmodSync(journal, 0o644);
    const again = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve'], { env: { DUS_API_KEY_ACME: KEY, XDG_STATE_HOME: state } });
    expect(again.code, again.stderr).toBe(0);
    expect(statSync(journal).mode & 0o777).toBe(0o600);
  });

  it('two applies at once on one machine: the second refuses with the lock sentence, the first converges alone', async () => {
    const names = ['canary', ...Array.from({ length: 8 }, (_, i) => `wave-${i}`)];
    const em = await emulator(seed(), { faults: { latencyMs: 150 } });
    const dir = repo(em.url, { 'tenants/action.yaml': ACTION(names) });
    const env = { DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(dir, '.dus-sync') };
    const args = ['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve'];
    const first = spawnCli(args, env);
    // Wait until the first is writing, so it surely holds the lock.
    let firstExited = false;
    void first.done.then(() => { firstExited = true; });
    for (let waited = 0; (em.stats.byRoute['POST /actions/{id}/append_phase'] ?? 0) < 1; waited += 10) {
      expect(firstExited || waited > 20_000, `the first apply never started writing\n${first.stderr()}`).toBe(false);
      await new Promise((r) => setTimeout(r, 10));
    }
    const second = await runCli(args, { env });
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/another dus-sync apply \(pid \d+, started [^)]+\) holds \.?\S*apply\.lock; wait for it: the lock is taken over once its heartbeat is 30 s old/);
    expect(second.stderr.trim().split('\n')).toHaveLength(1);
    expect(second.stdout).toBe('');
    const done = await first.done;
    expect(done.code, done.stderr).toBe(0);
    expect(em.store.getAction('acme', 7)!.phases.map((p) => p.name)).toEqual(names);
    expect(existsSync(join(dir, '.dus-sync', 'apply.lock'))).toBe(false);
  });

  it('on a terminal, apply asks first: anything but yes writes nothing, yes applies', async () => {
    const em = await emulator(seed());
    const dir = repo(em.url);
    // util-linux `script` gives the CLI a pseudo-terminal, as a person at a shell has.
    const onTty = (answer: string) => new Promise<{ code: number | null; out: string }>((resolve) => {
      const cmd = `"${process.execPath}" "${CLI}" --config "${dir}/dus-sync.yaml" apply`;
      const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: { ...process.env, DUS_API_KEY_ACME: KEY, NO_COLOR: '1' }, stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (/\[y\/N\]/.test(out) && !child.stdin.writableEnded) child.stdin.end(`${answer}\n`);
      });
      child.on('close', (code) => resolve({ code, out }));
    });
    for (const answer of ['', 'n', 'no', 'yes please']) {
      const r = await onTty(answer);
      expect(r.out).toMatch(/Apply 2 changes to acme\? \[y\/N\]/);
      expect(r.code, r.out).toBe(1);
      expect(r.out).toMatch(/cancelled; nothing was written/);
      expect(em.stats.writes).toBe(0);
    }
    const yes = await onTty('y');
    expect(yes.code, yes.out).toBe(0);
    expect(em.stats.writes).toBe(2);
    expectNoKey([yes.out]);
  });

  it('a saved plan is refused, before any write, when someone appended a phase to its action since', async () => {
    const em = await emulator(seed());
    const dir = repo(em.url);
    const env = { DUS_API_KEY_ACME: KEY };
    const plan = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--out', `${dir}/plan.json`], { env });
    expect(plan.code, plan.stderr).toBe(0);
    em.store.appendPhase('acme', 7, { name: 'wave-1', trigger_on: {}, info: {} });
    const writes = em.stats.writes;
    const apply = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', `${dir}/plan.json`, '--auto-approve'], { env });
    expect(apply.code).toBe(1);
    expect(apply.stderr).toMatch(/plan is stale: .*7.*nothing was written/);
    expect(em.stats.writes).toBe(writes);
    expect(em.store.getAction('acme', 7)!.phases.map((p) => p.name)).toEqual(['canary', 'wave-1']);
  });

  it('an append left in doubt for a tenant this run does not cover is kept for that tenant, and the run goes on', async () => {
    const em = await emulator(seed());
    const dir = repo(em.url);
    mkdirSync(join(dir, '.dus-sync'), { recursive: true });
    writeFileSync(join(dir, '.dus-sync', 'journal.jsonl'), `${JSON.stringify({ type: 'intent', id: 'x1', tenant: 'globex', action_id: 7, index: 1, name: 'w1', digest: 'abc', at: '2020-01-01T00:00:00Z' })}\n`, { mode: 0o600 });
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve'], { env: { DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(dir, '.dus-sync') } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/in doubt .*--tenant globex/);
    expect(r.stderr).not.toMatch(STACK);
    expect(em.stats.writes).toBeGreaterThan(0);
    expect(readFileSync(join(dir, '.dus-sync', 'journal.jsonl'), 'utf8')).toContain('"x1"');
  });

  it('nothing is written, nor even read, when any desired-state file is invalid', async () => {
    const em = await emulator(seed());
    const dir = repo(em.url, { 'tenants/bad.yaml': FIRMWARE('2.0.0').replace('is_deactivated: true', 'is_deactivated: maybe') });
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve'], { env: { DUS_API_KEY_ACME: KEY } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/tenants\/bad\.yaml:6:\d+/);
    expect(em.stats.requests).toBe(0);
    expect(em.stats.writes).toBe(0);
  });
});

// ---------------------------------------------------------------- export

describe('export never writes outside --out', () => {
  it('component names with path tricks stay inside the folder, and a symbolic link out of it is refused', async () => {
    const em = await emulator(seed({ firmwares: [
      { version_number: '9.9.9', component_name: '../../escaped' },
      { version_number: '9.9.8', component_name: '/etc/passwd' },
      { version_number: '9.9.7', component_name: '..' },
    ] }));
    const dir = repo(em.url);
    const outside = join(dir, 'outside');
    mkdirSync(outside);
    const before = filesUnder(dir).sort();
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'export', '--out', `${dir}/a/b/out`], { env: { DUS_API_KEY_ACME: KEY } });
    expect(r.stderr).not.toMatch(STACK);
    const after = filesUnder(dir).sort();
    const added = after.filter((f) => !before.includes(f));
    expect(r.code, r.stderr).toBe(0);
    // One file per component, each a plain name directly in out/firmwares.
    expect(added).toHaveLength(4);
    for (const f of added) expect(f, f).toMatch(new RegExp(`^${dir}/a/b/out/firmwares/[A-Za-z0-9][\\w.-]*\\.yaml$`));
    for (const f of added) expect(f.slice(dir.length)).not.toMatch(/\.\.|\/etc\/passwd/);

    // A symbolic link inside --out that leads elsewhere.
    const { symlinkSync } = await import('node:fs');
    mkdirSync(`${dir}/out2`);
    symlinkSync(outside, `${dir}/out2/firmwares`);
    const viaLink = await runCli(['--config', `${dir}/dus-sync.yaml`, 'export', '--out', `${dir}/out2`], { env: { DUS_API_KEY_ACME: KEY } });
    expect(viaLink.code).toBe(1);
    expect(viaLink.stderr).toMatch(/refusing to write/);
    expect(readdirSync(outside)).toEqual([]);
    writeFileSync(join(dir, 'done'), '');
  });
});
