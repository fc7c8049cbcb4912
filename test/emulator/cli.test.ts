import { describe, expect, it, beforeAll } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { ACME, SEED, call, tempDir } from './helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'dist/cli.js');

beforeAll(() => {
  // `npm test` builds first (pretest); a direct `vitest run` may find no dist yet.
  if (!existsSync(CLI)) {
    const built = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
  }
});

function start(args: string[]): { child: ChildProcess; firstLine: Promise<string>; stderr: () => string; exit: Promise<number | null> } {
  const child = spawn(process.execPath, [CLI, 'emulator', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => { err += c.toString(); });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const firstLine = new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (l) => resolve(l));
    child.once('exit', () => reject(new Error(`exited before printing its URL: ${err}`)));
  });
  return { child, firstLine, stderr: () => err, exit };
}

describe('dus-sync emulator', () => {
  it('prints its URL first, answers 401 and 200, pages, logs to stderr and exits 0 on SIGTERM', async () => {
    const p = start(['--port', '0', '--seed', SEED, '--page-size', '2', '--absolute-next']);
    const line = await p.firstLine;
    expect(line).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
    const url = line.slice('listening on '.length);
    expect((await call(url, '/api/v1/firmware-bundles', { auth: { tenant: 'acme' } })).status).toBe(401);
    const res = await call(url, '/api/v1/firmware-bundles');
    expect(res.body).toMatchObject({ count: 7, next: `${url}/api/v1/firmware-bundles?page=2` });
    p.child.kill('SIGTERM');
    expect(await p.exit).toBe(0);
    expect(p.stderr()).toContain('GET /api/v1/firmware-bundles 401');
    expect(p.stderr()).not.toContain(ACME.key);
  });

  it('persists to --data and restarts from it without --seed', async () => {
    const data = join(tempDir(), 'state.json');
    const p = start(['--port', '0', '--seed', SEED, '--data', data, '--rate-limit', '50/s']);
    const url = (await p.firstLine).slice('listening on '.length);
    expect((await call(url, '/api/v1/actions/42/append_phase', { method: 'POST', body: { name: 'cli' } })).status).toBe(201);
    p.child.kill('SIGINT');
    expect(await p.exit).toBe(0);
    expect(readFileSync(data, 'utf8')).toContain('"cli"');

    const q = start(['--port', '0', '--data', data]);
    const url2 = (await q.firstLine).slice('listening on '.length);
    expect((await call(url2, '/api/v1/actions/42')).body).toMatchObject({ phases: [{ name: 'canary' }, { name: 'cli' }] });
    q.child.kill('SIGTERM');
    expect(await q.exit).toBe(0);
  });

  it('refuses to start without --seed, or with a bad seed or flag, in one sentence and exit 1', () => {
    const run = (args: string[]) => spawnSync(process.execPath, [CLI, 'emulator', '--port', '0', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 10_000 });
    const none = run([]);
    expect(none.status).toBe(1);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/^error: the emulator needs --seed FILE/);
    const bad = run(['--seed', join(ROOT, 'test/emulator/fixtures/bad-type.yaml')]);
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toContain('bad-type.yaml:7: tenants.acme.bundles[0].firmwares[0].uncompressed_size');
    const rate = run(['--seed', SEED, '--rate-limit', 'lots']);
    expect(rate.status).toBe(1);
    expect(rate.stderr).toContain('--rate-limit takes requests per second');
  });
});
