// The emulator's hostile modes, read with a plain client that has no bounds of its own: what each
// mode puts on the wire (status, headers, bytes, timing), which routes it takes, what it commits.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { hostileFrom } from '../../src/cli/emulator.js';
import { echoForms, type HostileSettings } from '../../src/emulator/index.js';
import { UserError } from '../../src/errors.js';
import { ACME, SEED, call, emulator } from './helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'dist/cli.js');

const agents: Agent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

/** Reads at most `limit` bytes of an answer, then lets go of it. */
async function peek(base: string, path: string, limit: number, method: 'GET' | 'POST' = 'GET', body?: unknown) {
  const agent = new Agent();
  agents.push(agent);
  const res = await request(`${base}${path}`, {
    method, dispatcher: agent,
    headers: { 'x-service-api-key': ACME.key, 'x-service-tenant': ACME.tenant, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const chunks: Buffer[] = [];
  let size = 0;
  let ended = true;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) { ended = false; res.body.destroy(); break; }
  }
  return { status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), size, ended };
}

async function hostile(h: HostileSettings) {
  return emulator({ faults: { hostile: h } });
}

describe('huge', () => {
  it('pads the route\'s own answer to N bytes, still valid JSON, with its Content-Length', async () => {
    const emu = await hostile({ mode: 'huge', bytes: 300_000 });
    const r = await peek(emu.url, '/api/v1/actions/42', 10_000_000);
    expect(r.status).toBe(200);
    expect(Number(r.headers['content-length'])).toBe(r.size);
    expect(r.size).toBeGreaterThan(300_000);
    const action = JSON.parse(r.text) as { id: number; padding: string };
    expect(action.id).toBe(42);
    expect(action.padding).toHaveLength(300_000);
  });

  it('with an error status, the padding is the detail', async () => {
    const emu = await hostile({ mode: 'huge', bytes: 100_000, status: 400 });
    const r = await peek(emu.url, '/api/v1/firmware-bundles', 10_000_000);
    expect(r.status).toBe(400);
    expect((JSON.parse(r.text) as { detail: string }).detail).toHaveLength(100_000);
  });

  it('defaults to 200 MiB, and stops sending when the client goes away', async () => {
    const emu = await hostile({ mode: 'huge' });
    const r = await peek(emu.url, '/api/v1/actions/42', 1024 * 1024);
    expect(Number(r.headers['content-length'])).toBeGreaterThan(200 * 1024 * 1024);
    expect(r.ended).toBe(false);
  });

  it('a write is performed before its answer is padded', async () => {
    const emu = await hostile({ mode: 'huge', bytes: 50_000, routes: ['append'] });
    const r = await peek(emu.url, '/api/v1/actions/42/append_phase', 10_000_000, 'POST', { name: 'padded' });
    expect(r.status).toBe(201);
    expect(emu.store.getAction('acme', 42)!.phases.at(-1)!.name).toBe('padded');
  });
});

describe('endless', () => {
  it('sends a chunked body that never ends', async () => {
    const emu = await hostile({ mode: 'endless', routes: ['bundles'] });
    const r = await peek(emu.url, '/api/v1/firmware-bundles', 8 * 1024 * 1024);
    expect(r.status).toBe(200);
    expect(r.headers['content-length']).toBeUndefined();
    expect(r.headers['transfer-encoding']).toBe('chunked');
    expect(r.ended).toBe(false);
    expect(r.text.startsWith('{"padding":"xxx')).toBe(true);
  });
});

describe('drip', () => {
  it('sends the route\'s own answer one byte at a time', async () => {
    const emu = await hostile({ mode: 'drip', intervalMs: 5, routes: ['action'] });
    const started = Date.now();
    const r = await peek(emu.url, '/api/v1/actions/42', 1_000_000);
    const plain = await call(emu.url, '/api/v1/firmware-bundles');
    expect(plain.status).toBe(200);
    expect(r.ended).toBe(true);
    expect(Number(r.headers['content-length'])).toBe(r.size);
    expect((JSON.parse(r.text) as { id: number }).id).toBe(42);
    // One interval per byte (timers may be late, never early).
    expect(Date.now() - started).toBeGreaterThanOrEqual(r.size * 5 - 50);
  });
});

describe('echo', () => {
  const key = 'sk/"live"+key=0123456789';

  it('gives each form of the key, each differing from the raw key', () => {
    const f = echoForms(key);
    expect(f.prefix).toBe(key.slice(0, -2));
    expect(f.json).toBe('{"api_key":"sk\\/\\"live\\"+key=0123456789"}');
    expect(f.percent).toBe(encodeURIComponent(key));
    expect(Buffer.from(f.base64, 'base64').toString()).toBe(key);
    expect(new Set(Object.values(f)).size).toBe(5);
  });

  it('answers 400 with a detail that echoes the request\'s key, and runs nothing behind it', async () => {
    const emu = await emulator({ seed: { tenants: { acme: { api_key: key, bundles: [], actions: [{ id: 42, phases: [] }] } } }, faults: { hostile: { mode: 'echo' } } });
    const res = await call(emu.url, '/api/v1/actions/42/append_phase', { method: 'POST', body: { name: 'x' }, auth: { tenant: 'acme', key } });
    expect(res.status).toBe(400);
    const detail = (res.body as { detail: string }).detail;
    for (const form of Object.values(echoForms(key))) expect(detail).toContain(form);
    expect(emu.store.getAction('acme', 42)!.phases).toHaveLength(0);
  });

  it('takes another status, and only the routes named', async () => {
    const emu = await hostile({ mode: 'echo', status: 502, routes: ['bundle'] });
    expect((await call(emu.url, '/api/v1/firmware-bundles/version/2024.06')).status).toBe(502);
    expect((await call(emu.url, '/api/v1/actions/42')).status).toBe(200);
  });
});

describe('flags', () => {
  it('reads the hostile flags, and refuses companions without a mode', () => {
    expect(hostileFrom({ hostile: 'drip', hostileRoute: ['action', 'bundles'], hostileInterval: 250 })).toEqual({ mode: 'drip', routes: ['action', 'bundles'], intervalMs: 250 });
    expect(hostileFrom({ hostile: 'huge', hostileSize: '5MB', hostileStatus: 400 })).toEqual({ mode: 'huge', bytes: 5_000_000, status: 400 });
    expect(hostileFrom({ hostileInterval: 1000 })).toBeUndefined();
    expect(() => hostileFrom({ hostileSize: '5MB' })).toThrow(UserError);
    expect(() => hostileFrom({ hostile: 'huge', hostileSize: 'big' })).toThrow(/--hostile-size takes a size/);
    expect(() => hostileFrom({ hostile: 'echo', hostileStatus: 99 })).toThrow(/--hostile-status takes an HTTP status/);
  });

  it('the emulator command takes them', async () => {
    const child = spawn(process.execPath, [CLI, 'emulator', '--port', '0', '--seed', SEED, '--hostile', 'echo', '--hostile-route', 'action', '--hostile-status', '418'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
      const url = line.slice('listening on '.length);
      expect((await call(url, '/api/v1/actions/42')).status).toBe(418);
      expect((await call(url, '/api/v1/firmware-bundles')).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    const bad = spawnSync(process.execPath, [CLI, 'emulator', '--port', '0', '--seed', SEED, '--hostile', 'huge', '--hostile-route', 'everything'], { cwd: ROOT, encoding: 'utf8', timeout: 10_000 });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('--hostile-route takes one of bundles, bundle, action, firmware, append.');
  });
});
