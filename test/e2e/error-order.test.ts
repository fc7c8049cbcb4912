// When the reads of two tenants fail, the error said is the same whatever the timing: the first
// tenant by name, and within a tenant the bundle list before the actions. It was whichever failed
// first (the final adversarial tester, B4), and plan's read-ahead changes which that is.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, treesRemovedAfterAll } from './helpers.js';

const tree = treesRemovedAfterAll();
let server: Server | undefined;
afterEach(async () => { if (server) await new Promise<void>((r) => server!.close(() => r())); server = undefined; });

/** acme's bundle list and globex's action 42 answer 400 after the given delays; nothing else is asked. */
async function failing(listDelay: number, actionDelay: number): Promise<string> {
  server = createServer((req, res) => {
    const tenant = req.headers['x-service-tenant'];
    const fail = (ms: number, detail: string) => setTimeout(() => { res.writeHead(400, { 'content-type': 'application/json' }); res.end(JSON.stringify({ detail })); }, ms);
    if (tenant === 'acme' && (req.url ?? '').startsWith('/api/v1/firmware-bundles')) return fail(listDelay, 'acme list broken');
    if (tenant === 'globex' && req.url === '/api/v1/actions/42') return fail(actionDelay, 'globex action broken');
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"detail":"Not found."}');
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

const CONFIG = 'apiVersion: dus-sync/v1\nkind: Config\ntenants:\n  acme: { api_key_env: KEY_ACME }\n  globex: { api_key_env: KEY_GLOBEX }\n';
const FILES = {
  'dus-sync.yaml': CONFIG,
  'acme.yaml': 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "1.0.0", uncompressed_size: 1 }\n',
  'globex.yaml': 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: globex }\nspec:\n  id: 42\n  phases:\n    - { name: canary }\n',
};

describe('two tenants whose reads fail', () => {
  it('the error said is the first tenant\'s, whichever failed first, with and without read-ahead', async () => {
    const seen = new Set<string>();
    for (const [listDelay, actionDelay] of [[0, 200], [200, 0], [0, 0]] as const) {
      for (const flags of [[], ['--no-read-ahead']]) {
        const url = await failing(listDelay, actionDelay);
        const dir = tree(FILES);
        const r = await runCli(['plan', ...flags], { cwd: dir, env: { DUS_BASE_URL: url, KEY_ACME: 'acme-key-0123456789abc', KEY_GLOBEX: 'globex-key-0123456789abc' } });
        expect(r.code).toBe(1);
        seen.add(r.stderr.split('\n').find((l) => l.startsWith('error:')) ?? r.stderr);
        await new Promise<void>((res) => server!.close(() => res()));
        server = undefined;
      }
    }
    expect([...seen]).toHaveLength(1);
    expect([...seen][0]).toMatch(/GET \/api\/v1\/firmware-bundles .*acme.*acme list broken/);
  });
});
