// What an adversarial tester did to the bounds of issue 12 with a server of its own, and what
// must happen instead (each case failed before its fix): many answers each under the cap, a page
// that makes indexing quadratic, pages sent each just in time for ever, a 5 MB next link, a next
// link whose host is the key, numbers JavaScript cannot hold, a "__proto__" key, JSON nested
// 100,000 deep, actions that each fit the cap but not together.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, writeTree, type RunResult } from '../e2e/helpers.js';

const KEY = 'LyingKEYabcDEFghiJKL7788';
const RSS_PRELOAD = pathToFileURL(join(import.meta.dirname, '..', '..', 'bench', 'rss-report.mjs')).href;

const open: Array<() => void | Promise<void>> = [];
afterEach(async () => { for (const c of open.splice(0).reverse()) await c(); });

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void;

/** A server on 127.0.0.1 that answers GET /api/v1/actions/{id} and the bundle routes as `handler` says. */
async function server(handler: Handler): Promise<string> {
  const s = createServer((req, res) => handler(req, res, new URL(req.url ?? '/', 'http://127.0.0.1')));
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  open.push(() => new Promise<void>((r) => { s.closeAllConnections(); s.close(() => r()); }));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

const fw = (version: string, component: string, extra: Record<string, unknown> = {}) => ({
  firmware_id: null, version_number: version, component_name: component, uncompressed_size: 10, is_deactivated: false, dependencies: [], ...extra,
});
const bundle = (version: string, firmwares: unknown[]) => ({ version, firmwares });
// A count as large as a big tenant's: these servers lie about other things (the page count
// bound, which a smaller count tightens, is tested in test/api).
const page = (results: unknown[], next: string | null, count = 1_000_000) => ({ count, next, previous: null, results });

const CONFIG = 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n';
const FIRMWARE = (v = '1.0.0') => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec:\n  version_number: "${v}"\n  is_deactivated: true\n`;
const ACTION = (id: number, names: string[]) => `apiVersion: dus-sync/v1\nkind: Action\nmetadata: {}\nspec:\n  id: ${id}\n  phases:\n${names.map((n) => `    - { name: ${n} }`).join('\n')}\n`;

function repo(files: Record<string, string>): string {
  const dir = writeTree({ 'dus-sync.yaml': CONFIG, ...files });
  open.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function plan(dir: string, url: string, extra: string[] = [], timeoutMs = 60_000): Promise<RunResult & { rssMb: number; seconds: number }> {
  const rssFile = join(dir, 'rss.txt');
  const started = Date.now();
  const r = await runCli(['--config', `${dir}/dus-sync.yaml`, ...extra, 'plan'], {
    timeoutMs,
    env: { DUS_BASE_URL: url, DUS_API_KEY_ACME: KEY, DUS_BENCH_RSS_FILE: rssFile, NODE_OPTIONS: `--import=${RSS_PRELOAD}` },
  });
  return { ...r, seconds: (Date.now() - started) / 1000, rssMb: Number(readFileSync(rssFile, 'utf8')) / 1024 };
}

function expectOneSentence(r: RunResult): string {
  expect(r.code, r.stderr.slice(0, 2000)).toBe(1);
  // The progress line of the read comes first; then one sentence.
  const lines = r.stderr.trim().split('\n').filter((l) => !/^(still )?reading the live state of /.test(l));
  expect(lines, r.stderr.slice(0, 2000)).toHaveLength(1);
  expect(lines[0]!.length).toBeLessThan(2000);
  expect(r.stdout + r.stderr).not.toContain(KEY);
  return lines[0]!;
}

describe('a server that stays under every per-answer bound', () => {
  it('200 pages of 0.5 MB of records the YAML does not declare: only the declared ones are kept, memory stays bounded', async () => {
    const filler = (n: number) => Array.from({ length: 1200 }, (_, i) => fw(`9.${n}.${i}`, `c${i}`.padEnd(300, 'x')));
    const pages = 200;
    const url = await server((_req, res, u) => {
      const n = Number(u.searchParams.get('page') ?? '1');
      const results = [bundle(`b${n}`, n === pages ? [fw('1.0.0', 'modem'), ...filler(n)] : filler(n))];
      json(res, 200, page(results, n < pages ? `/api/v1/firmware-bundles?page=${n + 1}` : null));
    });
    const r = await plan(repo({ 'fw.yaml': FIRMWARE() }), url);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/firmware 1\.0\.0/);
    // About 100 MB of answers went through; kept whole, they took the process to 440 MB (now about 130).
    // (Node 24 starts about 40 MB higher than Node 20: the bound leaves room for both.)
    expect(r.rssMb).toBeLessThan(320);
  }, 120_000);

  it('60,000 records under one version number (each a component): indexed in linear time, and the ambiguity names ten of them', async () => {
    const many = Array.from({ length: 60_000 }, (_, i) => fw('1.0.0', `component-${i}`));
    const url = await server((_req, res) => json(res, 200, page([bundle('b1', many)], null)));
    const r = await plan(repo({ 'fw.yaml': FIRMWARE() }), url);
    expect(r.code).toBe(1);
    // Quadratic, this took about 27 s; linear, under 3.
    expect(r.seconds).toBeLessThan(12);
    expect(r.stdout).toMatch(/is ambiguous: it matches firmware of components component-0, .* and \d+ more/);
    for (const line of r.stdout.split('\n')) expect(line.length).toBeLessThan(2000);
  }, 60_000);

  it('pages each sent in time, for ever: the whole read ends at --fetch-timeout, in one sentence', async () => {
    const url = await server((_req, res, u) => {
      const n = Number(u.searchParams.get('page') ?? '1');
      setTimeout(() => json(res, 200, page([bundle(`b${n}`, [fw('1.0.0', 'modem')])], `/api/v1/firmware-bundles?page=${n + 1}`)), 200);
    });
    const r = await plan(repo({ 'fw.yaml': FIRMWARE() }), url, ['--fetch-timeout', '10s']);
    const line = expectOneSentence(r);
    expect(line).toMatch(/reading the live state of acme took longer than 10s; raise --fetch-timeout/);
    expect(r.seconds).toBeLessThan(30);
  }, 60_000);

  it('a next link 5 MB long: the sentence quotes a cut path, not 5 MB', async () => {
    const long = `/api/v1/firmware-bundles?x=${'a'.repeat(5_000_000)}`;
    const url = await server((_req, res) => json(res, 200, page([bundle('b1', [fw('1.0.0', 'modem')])], long)));
    const r = await plan(repo({ 'fw.yaml': FIRMWARE() }), url);
    // (Node's own server refuses so long a URL with 431; a server that took it would loop: either
    // way the sentence quotes the path cut.)
    expect(expectOneSentence(r)).toMatch(/GET \/api\/v1\/firmware-bundles\?x=a+… for tenant acme/);
  }, 60_000);

  it('a next link to another host whose name is the key: refused without quoting the host (the URL parser lowercases it)', async () => {
    const url = await server((_req, res) => json(res, 200, page([bundle('b1', [fw('1.0.0', 'modem')])], `http://${KEY}.attacker.test/api/v1/firmware-bundles?page=2`)));
    const r = await plan(repo({ 'fw.yaml': FIRMWARE() }), url);
    const line = expectOneSentence(r);
    expect(line).toMatch(/refusing to follow the next link .*: it leads to another origin than the API's/);
    expect(line.toLowerCase()).not.toContain(KEY.toLowerCase());
  });

  it.each([['1e400', 'Infinity'], ['9007199254740993', '2^53 + 1']])('a live uncompressed_size of %s (%s) is a malformed answer, never sent back rounded', async (size) => {
    const body = `{"count":1,"next":null,"previous":null,"results":[{"version":"b1","firmwares":[{"firmware_id":null,"version_number":"1.0.0","component_name":"modem","uncompressed_size":${size},"is_deactivated":false,"dependencies":[]}]}]}`;
    const url = await server((req, res) => {
      if (req.method !== 'GET') { json(res, 500, { detail: 'no write expected' }); return; }
      json(res, 200, body);
    });
    const r = await plan(repo({ 'fw.yaml': FIRMWARE() }), url);
    expect(expectOneSentence(r)).toMatch(/malformed response from GET \/api\/v1\/firmware-bundles: results\/0\/firmwares\/0\/uncompressed_size must be <= 9007199254740991/);
  });

  it('a "__proto__" key in a live phase\'s info is a difference like any other key: a conflict, not "unchanged"', async () => {
    const url = await server((_req, res, u) => {
      if (u.pathname === '/api/v1/actions/7') json(res, 200, '{"id":7,"status":"pending","phases":[{"name":"canary","trigger_on":{},"info":{"__proto__":{"x":1}}}]}');
      else json(res, 404, { detail: 'Not found.' });
    });
    const r = await plan(repo({ 'action.yaml': ACTION(7, ['canary']) }), url);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/phase 0 of action 7 differs in info/);
  });

  it('JSON nested 100,000 levels deep: one sentence naming the endpoint, not a stack overflow', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const url = await server((_req, res) => json(res, 200, `{"id":7,"status":"pending","phases":[{"name":"canary","trigger_on":{},"info":{"x":${deep}}}]}`));
    const r = await plan(repo({ 'action.yaml': ACTION(7, ['canary']) }), url);
    expect(expectOneSentence(r)).toMatch(/malformed response from GET \/api\/v1\/actions\/7: the body nests deeper than 64 levels/);
  });

  it('declared actions each under the cap but together over 8 times it: one sentence, bounded memory', async () => {
    const pad = 'p'.repeat(900 * 1024);
    const url = await server((_req, res, u) => {
      const id = Number(/\/actions\/(\d+)/.exec(u.pathname)?.[1]);
      json(res, 200, { id, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: { pad } }] });
    });
    const files: Record<string, string> = {};
    for (let id = 1; id <= 12; id++) files[`a${id}.yaml`] = ACTION(id, ['canary']);
    const r = await plan(repo(files), url, ['--max-response-size', '1MiB']);
    expect(expectOneSentence(r)).toMatch(/the declared actions of tenant acme total more than 8 MiB \(8 × --max-response-size\)/);
  });
});
