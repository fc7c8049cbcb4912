// Shared helpers of the emulator tests: every server listens on 127.0.0.1 port 0.
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterEach } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import type { EmulatorOptions, RunningEmulator } from '../../src/emulator/index.js';

export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
export const SEED = join(FIXTURES, 'seed.yaml');
export const ACME = { tenant: 'acme', key: 'dev-key-acme-0001' };
export const GLOBEX = { tenant: 'globex', key: 'dev-key-globex-0002' };

const running: RunningEmulator[] = [];
const agents: Agent[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
  await Promise.all(running.splice(0).map((e) => e.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

export async function emulator(opts: Partial<EmulatorOptions> = {}): Promise<RunningEmulator> {
  const e = await startEmulator({ seed: SEED, ...opts });
  running.push(e);
  return e;
}

export function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'dus-emu-'));
  dirs.push(d);
  return d;
}

export interface Answer { status: number; headers: Record<string, string | string[] | undefined>; body: unknown }

export interface CallOptions {
  method?: 'GET' | 'PUT' | 'POST' | 'DELETE' | 'PATCH' | 'HEAD';
  auth?: { tenant?: string; key?: string } | null;
  body?: unknown;
  rawBody?: string;
  contentType?: string | null;
}

/** One request with its own keep-alive agent (closed after the test). */
export async function call(base: string, path: string, o: CallOptions = {}): Promise<Answer> {
  const agent = new Agent({ keepAliveTimeout: 1000 });
  agents.push(agent);
  const auth = o.auth === undefined ? ACME : o.auth;
  const headers: Record<string, string> = {};
  if (auth?.key !== undefined) headers['x-service-api-key'] = auth.key;
  if (auth?.tenant !== undefined) headers['x-service-tenant'] = auth.tenant;
  const body = o.rawBody ?? (o.body === undefined ? undefined : JSON.stringify(o.body));
  if (body !== undefined && o.contentType !== null) headers['content-type'] = o.contentType ?? 'application/json';
  const res = await request(`${base}${path}`, { method: o.method ?? 'GET', headers, body, dispatcher: agent });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) as unknown };
}
