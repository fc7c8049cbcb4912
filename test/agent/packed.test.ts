// What the container image does, without a Docker engine: pack the package, install it with
// production dependencies only (as the runtime stage does), and run `watch` from there
// against the emulator. This catches a runtime import of a dev dependency, a file missing from
// "files", or a bundling problem (pino-pretty, chokidar, prom-client) before an image is built.
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type Seed } from '../../src/emulator/index.js';
import { waitFor } from './helpers.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');
const KEY = 'packed-secret-key-acme-0123456789';
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const work = mkdtempSync(join(tmpdir(), 'dus-packed-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the packed package, production dependencies only', () => {
  it('installs without dev dependencies and runs watch: ready, metrics, exit 0 on SIGTERM', async () => {
    const npmEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
    await run(NPM, ['pack', '--ignore-scripts', '--pack-destination', work], { cwd: ROOT, env: npmEnv });
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'))!;
    // As the image's build stage does: the package's files plus the lockfile, `npm ci --omit=dev`.
    // The lockfile pins what `npm ci` already fetched, so npm's cache serves it; --prefer-offline
    // still reaches the npm registry for anything the cache lacks.
    await run('tar', ['-xzf', join(work, tarball), '-C', work], { cwd: work, env: npmEnv });
    const app = join(work, 'package');
    copyFileSync(join(ROOT, 'package-lock.json'), join(app, 'package-lock.json'));
    await run(NPM, ['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline'], { cwd: app, env: npmEnv });
    expect(existsSync(join(app, 'node_modules', 'vitest'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'esbuild'))).toBe(false);

    const emulator = await startEmulator({
      seed: { tenants: { acme: { api_key: KEY, bundles: [{ version: '1', firmwares: [
        { version_number: '1.0.0', component_name: 'modem', uncompressed_size: 1, is_deactivated: false, dependencies: [] },
      ] }], actions: [] } } } as unknown as Seed,
    });
    const repo = join(work, 'repo');
    mkdirSync(join(repo, 'tenants'), { recursive: true });
    writeFileSync(join(repo, 'dus-sync.yaml'), 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\nwatch: { interval: 1s }\n');
    writeFileSync(join(repo, 'tenants', 'modem.yaml'), 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "1.0.0"\n  uncompressed_size: 2\n');
    try {
      const bin = join(app, 'dist', 'cli.js');
      const child = spawn(process.execPath, [bin, 'watch', '--listen', '127.0.0.1:0', '--journal', join(work, 'journal', 'j.jsonl')], {
        cwd: repo, env: { ...process.env, NODE_ENV: 'production', DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY }, stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
      const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
      try {
        await waitFor(() => /on (http:\/\/127\.0\.0\.1:\d+)/.test(stderr), 15_000, 'the probes');
        const base = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)![1]!;
        await waitFor(() => emulator.store.firmwaresByVersion('acme', '1.0.0')[0]!.uncompressed_size === 2, 15_000, 'the apply');
        let ready = 0;
        for (let i = 0; i < 50 && ready !== 200; i++) {
          ready = (await fetch(`${base}/readyz`)).status;
          if (ready !== 200) await new Promise((r) => setTimeout(r, 100));
        }
        expect(ready, stderr).toBe(200);
        const metrics = await (await fetch(`${base}/metrics`)).text();
        expect(metrics).toContain('dus_sync_reconcile_total{result="success"}');
        expect(metrics).toContain('process_cpu_user_seconds_total');
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
        expect(stderr).not.toContain(KEY);
      } finally {
        child.kill('SIGKILL');
      }
    } finally {
      await emulator.close();
    }
  }, 90_000);
});
