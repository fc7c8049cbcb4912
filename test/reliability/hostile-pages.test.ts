// Endless pagination and planted targets: the built CLI against a tiny server on 127.0.0.1 whose
// bundle list never ends, each page well under the answer cap. plan kept every bundle version a
// declared firmware appeared in (a Set per record, page after page) and died of V8's
// out-of-memory crash at 3.9 GB; export kept every record of every page (4 GB and growing) and
// read an existing target whole (a 500 MiB file: 1.1 GB; over 2 GiB: a raw error naming no
// file). Each now ends with exit 1 and one sentence, in bounded memory and time.
import { truncateSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, writeTree, type RunResult } from '../e2e/helpers.js';

const KEY = 'hostile-pages-key-acme-0123456789';
const RSS_PRELOAD = pathToFileURL(join(import.meta.dirname, '..', '..', 'bench', 'rss-report.mjs')).href;
/** Without the bounds the same servers took the child past a gigabyte within seconds (then out of memory). */
const RSS_BOUND_MB = 400;

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

const fw = (version: string, id = `fid-${version}`) => ({
  firmware_id: id, version_number: version, component_name: 'modem', file_name: 'm.bin', uncompressed_size: 1000,
  content_length: 1, checksum: 'c', is_deactivated: false, dependencies: [],
});
const bundle = (version: string, firmwares: unknown[]) => ({
  id: `b-${version.slice(0, 20)}`, version, file_name: 'b', uncompressed_size: 1, content_length: 1, checksum: 'c',
  created_by: 'x', created_at: '2024-01-01T00:00:00Z', firmwares,
});

/** A bundle list whose page N is page(N) and whose next link never ends. */
async function endlessList(page: (n: number) => unknown[]): Promise<{ url: string; pages: () => number }> {
  let served = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/api/v1/firmware-bundles') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not found."}');
      return;
    }
    const n = Number(url.searchParams.get('page') ?? 1);
    served++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ count: 1e9, next: `/api/v1/firmware-bundles?page=${n + 1}`, results: page(n) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  open.push(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, pages: () => served };
}

function repo(files: Record<string, string> = {}): string {
  const dir = writeTree({
    'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n',
    'firmware.yaml': 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec:\n  version_number: "2.4.0"\n  is_deactivated: true\n',
    ...files,
  });
  open.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Measured extends RunResult { peakRssMb: number; seconds: number }

async function measured(url: string, dir: string, args: string[], timeoutMs = 60_000): Promise<Measured> {
  const rssFile = join(dir, 'rss.txt');
  const started = Date.now();
  const r = await runCli(args, {
    cwd: dir,
    timeoutMs,
    env: {
      DUS_BASE_URL: url, DUS_API_KEY_ACME: KEY, DUS_BENCH_RSS_FILE: rssFile,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${RSS_PRELOAD}`.trim(),
    },
  });
  return { ...r, seconds: (Date.now() - started) / 1000, peakRssMb: Number(readFileSync(rssFile, 'utf8')) / 1024 };
}

/** stderr is the sentence, after the lines that say what is being read. */
function sentence(r: RunResult): string {
  const lines = r.stderr.trim().split('\n').filter((l) => !/^(still )?reading the live state of |^note: actions are exported only/.test(l));
  expect(lines, r.stderr.slice(0, 2000)).toHaveLength(1);
  return lines[0]!;
}

describe('plan against a bundle list that never ends', () => {
  it('a declared firmware in ever-new bundles, page after page: one sentence, bounded memory', async () => {
    // About 860 KB a page: 1,000 bundles, each a new 490-character version (under the 512 allowed)
    // holding the declared firmware, always the same record.
    const server = await endlessList((n) => Array.from({ length: 1000 }, (_, i) => bundle(`v${n}-${i}-${'x'.repeat(480)}`, [fw('2.4.0')])));
    const r = await measured(server.url, repo(), ['--max-response-size', '1MiB', 'plan'], 90_000);
    expect(r.code, r.stderr.slice(0, 2000)).toBe(1);
    expect(sentence(r)).toMatch(/^error: the bundle list of tenant acme \(GET \/api\/v1\/firmware-bundles\) passed 64 MiB over \d+ pages \(64 × --max-response-size\) and its next links go on, so reading stopped: if the tenant is that large, raise --max-response-size \(api\.max_response_size\); otherwise check the API$/);
    expect(r.peakRssMb).toBeLessThan(RSS_BOUND_MB);
    expect(server.pages()).toBeLessThan(90);
    expect(r.stdout).toBe('');
  }, 120_000);

  it('bundle versions of 64 KiB are refused on the first page, naming the endpoint and the limit', async () => {
    const server = await endlessList((n) => Array.from({ length: 16 }, (_, i) => bundle(`v${n}-${i}-${'x'.repeat(64 * 1024)}`, [fw('2.4.0')])));
    const r = await measured(server.url, repo(), ['plan'], 60_000);
    expect(r.code, r.stderr.slice(0, 2000)).toBe(1);
    expect(sentence(r)).toMatch(/^error: malformed response from GET \/api\/v1\/firmware-bundles: a bundle version is 64\.0 KiB long \("v1-0-x+"…\); versions go into the path of GET \/api\/v1\/firmware-bundles\/version\/\{version\}, and dus-sync takes at most 512 characters, so this is not one$/);
    expect(server.pages()).toBe(1);
    expect(r.peakRssMb).toBeLessThan(RSS_BOUND_MB);
  }, 90_000);
});

describe('export against a bundle list that never ends', () => {
  it('stops when the records it keeps pass their budget: one sentence, bounded memory, nothing written', async () => {
    // Each page one bundle of 2,000 firmwares never seen before (about 500 KB).
    const server = await endlessList((n) => [bundle(`b${n}`, Array.from({ length: 2000 }, (_, i) => fw(`${n}.${i}`)))]);
    const dir = repo();
    const r = await measured(server.url, dir, ['--max-response-size', '1MiB', 'export', '--tenant', 'acme', '--out', 'out'], 90_000);
    expect(r.code, r.stderr.slice(0, 2000)).toBe(1);
    expect(sentence(r)).toMatch(/^error: the firmware records of tenant acme read from the bundle list \(GET \/api\/v1\/firmware-bundles\) passed 2 MiB in memory \(2 × --max-response-size\) after \d+ pages, so reading stopped: if the tenant is that large, raise --max-response-size \(api\.max_response_size\); otherwise check the API \(its next links may never end\)$/);
    expect(r.peakRssMb).toBeLessThan(RSS_BOUND_MB);
    expect(server.pages()).toBeLessThan(10);
    expect(() => statSync(join(dir, 'out', 'firmwares'))).toThrow();
  }, 120_000);
});

describe('export onto a planted target', () => {
  it('a 3 GiB file where export would write is refused by name, quickly, without being read', async () => {
    const finite = await finiteList();
    const dir = repo({ 'out/firmwares/modem.yaml': '' });
    const target = join(dir, 'out', 'firmwares', 'modem.yaml');
    truncateSync(target, 3 * 1024 ** 3); // sparse: no disk is used
    const r = await measured(finite, dir, ['export', '--tenant', 'acme', '--out', 'out'], 60_000);
    expect(r.code, r.stderr.slice(0, 2000)).toBe(1);
    expect(sentence(r)).toBe('error: refusing to overwrite a file in out that differs from the export, so hand edits would be lost: firmwares/modem.yaml; nothing was written. Commit or move it aside, or pass --force to overwrite');
    expect(r.seconds).toBeLessThan(20);
    expect(r.peakRssMb).toBeLessThan(RSS_BOUND_MB);
    expect(statSync(target).size).toBe(3 * 1024 ** 3);
    // --force replaces it, still without reading it.
    const forced = await measured(finite, dir, ['export', '--tenant', 'acme', '--out', 'out', '--force'], 60_000);
    expect(forced.code, forced.stderr.slice(0, 2000)).toBe(0);
    expect(forced.peakRssMb).toBeLessThan(RSS_BOUND_MB);
    expect(readFileSync(target, 'utf8')).toContain('version_number: "2.4.0"');
  }, 90_000);
});

/** A one-page bundle list holding firmware 2.4.0 of modem. */
async function finiteList(): Promise<string> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.writeHead(url.pathname === '/api/v1/firmware-bundles' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(url.pathname === '/api/v1/firmware-bundles' ? JSON.stringify({ count: 1, next: null, results: [bundle('2024.06', [fw('2.4.0')])] }) : '{"detail":"Not found."}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  open.push(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
