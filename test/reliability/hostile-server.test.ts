// Issue 12, hostile servers: the built CLI against the emulator's hostile modes. A 200 MB body,
// an endless one, one dripping a byte at a time, a 20 MB error detail: each ends within a
// bounded time with exit 1 and one sentence naming the endpoint, in bounded memory (the peak
// RSS of the child, reported by the benchmark's preload as it exits).
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type HostileSettings, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { CLI, runCli, writeTree, type RunResult } from '../e2e/helpers.js';

const KEY = 'hostile-e2e-key-acme-0123456789';
const RSS_PRELOAD = pathToFileURL(join(import.meta.dirname, '..', '..', 'bench', 'rss-report.mjs')).href;
/** Without the caps the 200 MB answer took plan to about 900 MB, the endless one to gigabytes. */
const RSS_BOUND_MB = 256;

const seed = {
  tenants: {
    acme: {
      api_key: KEY,
      bundles: [{ version: '2024.06', firmwares: [{ version_number: '2.4.1', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] }] }],
      actions: [{ id: 42, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: { percent: 1 } }] }],
    },
  },
} as unknown as Seed;

const CONFIG = (extra = '') => `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
${extra}`;

const FILES = (extra = '') => ({
  'dus-sync.yaml': CONFIG(extra),
  'firmware.yaml': 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec:\n  version_number: "2.4.1"\n  uncompressed_size: 2048\n',
  'action.yaml': 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: {}\nspec:\n  id: 42\n  phases:\n    - { name: canary, info: { percent: 1 } }\n    - { name: wave-1, info: { percent: 10 } }\n',
});

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function hostile(h: HostileSettings): Promise<RunningEmulator> {
  const emu = await startEmulator({ seed, faults: { hostile: h } });
  open.push(() => emu.close());
  return emu;
}

function repo(extra = ''): string {
  const dir = writeTree(FILES(extra));
  open.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Measured extends RunResult { peakRssMb: number; seconds: number }

/** Runs the CLI in `dir` against `emu`, timing it and reading its peak RSS. */
async function measured(emu: RunningEmulator, dir: string, args: string[], timeoutMs = 60_000): Promise<Measured> {
  const rssFile = join(dir, 'rss.txt');
  const started = Date.now();
  const r = await runCli(args, {
    cwd: dir,
    timeoutMs,
    env: {
      DUS_BASE_URL: emu.url, DUS_API_KEY_ACME: KEY, DUS_BENCH_RSS_FILE: rssFile,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${RSS_PRELOAD}`.trim(),
    },
  });
  return { ...r, seconds: (Date.now() - started) / 1000, peakRssMb: Number(readFileSync(rssFile, 'utf8')) / 1024 };
}

/** stderr is one line: the sentence (after the progress line that says the live state is being read). */
function sentence(r: RunResult): string {
  const lines = r.stderr.trim().split('\n').filter((l) => !/^(still )?reading the live state of /.test(l));
  expect(lines, r.stderr.slice(0, 2000)).toHaveLength(1);
  return lines[0]!;
}

const LIST = 'GET /api/v1/firmware-bundles';
const at = 'for tenant acme at 127\\.0\\.0\\.1:\\d+';
const escape = (s: string) => s.replace(/[/.()]/g, (c) => `\\${c}`);

describe('plan against hostile answers', () => {
  it('a 200 MB answer is refused at the default 32 MiB cap, in bounded memory', async () => {
    const emu = await hostile({ mode: 'huge', routes: ['bundles'] });
    const r = await measured(emu, repo(), ['plan']);
    expect(r.code).toBe(1);
    expect(sentence(r)).toMatch(new RegExp(`^error: could not complete ${escape(LIST)} ${at}: the answer is larger than 32 MiB, so it was not read further \\(--max-response-size\\)$`));
    expect(r.peakRssMb).toBeLessThan(RSS_BOUND_MB);
    expect(r.stdout).toBe('');
  }, 90_000);

  it('an endless chunked answer is cut at the default cap, in bounded memory', async () => {
    const emu = await hostile({ mode: 'endless', routes: ['bundles'] });
    const r = await measured(emu, repo(), ['plan']);
    expect(r.code).toBe(1);
    expect(sentence(r)).toMatch(new RegExp(`^error: could not complete ${escape(LIST)} ${at}: the answer is larger than 32 MiB`));
    expect(r.peakRssMb).toBeLessThan(RSS_BOUND_MB);
    // Not retried: the same server would send the same endless answer.
    expect(emu.stats.byRoute['GET /firmware-bundles']).toBe(1);
  }, 90_000);

  it('the cap comes from --max-response-size, else from api.max_response_size in dus-sync.yaml', async () => {
    const emu = await hostile({ mode: 'endless', routes: ['action'] });
    const dir = repo('api: { max_response_size: 128KiB }\n');
    const fromConfig = await measured(emu, dir, ['plan'], 30_000);
    expect(fromConfig.code).toBe(1);
    expect(sentence(fromConfig)).toMatch(new RegExp(`^error: could not complete GET /api/v1/actions/42 ${at}: the answer is larger than 128 KiB`));
    const fromFlag = await measured(emu, dir, ['--max-response-size', '64KiB', 'plan'], 30_000);
    expect(sentence(fromFlag)).toMatch(/the answer is larger than 64 KiB, so it was not read further \(--max-response-size\)$/);
  }, 60_000);

  it('an answer dripping a byte every 500 ms ends at the deadline of each try: exit 1 in bounded time', async () => {
    // The action is about 400 bytes: 200 s to drip whole. undici's body timeout alone restarts on
    // every byte and never fires.
    const emu = await hostile({ mode: 'drip', intervalMs: 500, routes: ['action'] });
    const r = await measured(emu, repo('api: { request_timeout: 1s }\n'), ['plan'], 60_000);
    expect(r.code).toBe(1);
    expect(sentence(r)).toMatch(new RegExp(`^error: could not complete GET /api/v1/actions/42 ${at}: no complete answer within 1s \\(--request-timeout, 6 tries\\)$`));
    // 6 tries of 1 s and at most 6.2 s of backoff; generous for a loaded machine.
    expect(r.seconds).toBeLessThan(40);
  }, 90_000);

  it('a 20 MB error detail is one short line, JSON or cut short', async () => {
    for (const bytes of [20_000_000, 60_000]) {
      const emu = await hostile({ mode: 'huge', status: 400, bytes, routes: ['bundles'] });
      const r = await measured(emu, repo(), ['plan'], 30_000);
      expect(r.code).toBe(1);
      const line = sentence(r);
      expect(line).toMatch(new RegExp(`^error: the API rejected ${escape(LIST)} for tenant acme \\(400\\): `));
      expect(line.length, `${bytes} bytes`).toBeLessThan(700);
      expect(line.endsWith('…')).toBe(true);
      await emu.close();
    }
  }, 60_000);

  it('an echoing server gets one sentence naming the endpoint', async () => {
    const emu = await hostile({ mode: 'echo', routes: ['bundles'] });
    const r = await measured(emu, repo(), ['plan'], 30_000);
    expect(r.code).toBe(1);
    expect(sentence(r)).toMatch(new RegExp(`^error: the API rejected ${escape(LIST)} for tenant acme \\(400\\): The API key \\[REDACTED\\] is not accepted here`));
    expect(r.stderr).not.toContain(KEY);
  }, 60_000);

  it('limits out of bounds are refused before any request, with the bounds', async () => {
    const emu = await hostile({ mode: 'echo' });
    const tiny = await measured(emu, repo(), ['--max-response-size', '10B', 'plan'], 30_000);
    expect(tiny.code).toBe(1);
    expect(tiny.stderr).toContain('--max-response-size takes a size from 1 KiB to 256 MiB (e.g. 16MiB), not "10B".');
    const zero = await measured(emu, repo(), ['plan', '--request-timeout', '0s'], 30_000);
    expect(zero.code).toBe(1);
    expect(zero.stderr).toContain('--request-timeout takes a duration from 1s to 10m (e.g. 30s, 5m), not "0s".');
    const config = await measured(emu, repo('api: { request_timeout: 2h }\n'), ['plan'], 30_000);
    expect(config.code).toBe(1);
    // In the config, at its line, like every config issue.
    expect(config.stderr).toMatch(/^dus-sync\.yaml:\d+:\d+: api\.request_timeout takes a duration from 1s to 10m \(e\.g\. 30s, 5m\), not "2h"\n/);
    expect(emu.stats.requests).toBe(0);
  }, 60_000);
});

describe('apply against hostile answers', () => {
  it('an append whose answer drips is cut at the deadline, read back, and counted once', async () => {
    const emu = await hostile({ mode: 'drip', intervalMs: 500, routes: ['append'] });
    const dir = repo('api: { request_timeout: 1s }\n');
    const r = await measured(emu, dir, ['apply', '--auto-approve'], 60_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('warning: the outcome of appending phase 1 "wave-1" of action 42 in acme is unknown (the outcome of POST /api/v1/actions/42/append_phase for tenant acme is unknown: no complete answer within 1s (--request-timeout)); reading the action back');
    expect(emu.store.getAction('acme', 42)!.phases.map((p) => p.name)).toEqual(['canary', 'wave-1']);
    expect(emu.stats.byRoute['POST /actions/{id}/append_phase']).toBe(1);
    expect(r.seconds).toBeLessThan(30);
  }, 90_000);
});

describe('watch against a 20 MB error detail', () => {
  it('/readyz and the log carry a short reason', async () => {
    const emu = await hostile({ mode: 'huge', status: 400, bytes: 20_000_000, routes: ['bundles'] });
    const dir = repo('watch: { interval: 1m }\n');
    const child = spawn(process.execPath, [CLI, 'watch', '--dry-run', '--listen', '127.0.0.1:0'], {
      cwd: dir, env: { ...process.env, DUS_BASE_URL: emu.url, DUS_API_KEY_ACME: KEY, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    open.push(() => { child.kill('SIGKILL'); });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const deadline = Date.now() + 30_000;
    let body = '';
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      const m = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (!m) continue;
      body = await (await fetch(`${m[1]}/readyz`)).text();
      if (body.includes(LIST)) break;
    }
    expect(body).toContain(`the API rejected ${LIST} for tenant acme (400)`);
    expect(body.length).toBeLessThan(1500);
    expect(Math.max(...stderr.split('\n').map((l) => l.length))).toBeLessThan(1500);
  }, 60_000);
});
