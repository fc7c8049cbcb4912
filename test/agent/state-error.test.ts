// A journal or lock that cannot be used is said as what it is: the pass result is
// `state-error` (not an API failure), the message names the state folder and what to do, and
// the agent keeps running and retries. A path on which Node's recursive mkdir spins (under
// /proc) fails at once instead of hanging every pass.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type Seed } from '../../src/emulator/index.js';
import { REPO } from '../diff/built-cli.js';

const CLI = join(REPO, 'dist', 'cli.js');
const KEY = 'k3y-for-the-folder-test-0123456789';
const work = mkdtempSync(join(tmpdir(), 'dus-state-error-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('watch with a state folder it cannot use', () => {
  it.each([
    ['a file in the path', () => { writeFileSync(join(work, 'a-file'), ''); return join(work, 'a-file', 'state'); }, /ENOTDIR/],
    ['a path under /proc', () => '/proc/dus-sync-nope/state', /ENOENT|EACCES|EPERM/],
  ])('%s: result state-error, one clear message, the agent keeps running', async (_name, stateDir, code) => {
    const em = await startEmulator({ seed: { tenants: { acme: { api_key: KEY, bundles: [], actions: [{ id: 1, status: 'pending', phases: [] }] } } } as unknown as Seed });
    const repo = join(work, `repo-${Math.random().toString(36).slice(2)}`);
    mkdirSync(join(repo, 't'), { recursive: true });
    writeFileSync(join(repo, 'dus-sync.yaml'), 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: K }\nresources: ["t/*.yaml"]\n');
    writeFileSync(join(repo, 't', 'a.yaml'), 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 1\n  phases:\n    - { name: p0, trigger_on: {}, info: {} }\n');
    const child = spawn(process.execPath, [CLI, 'watch', '--interval', '1s', '--log-format', 'json'], {
      cwd: repo, stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, K: KEY, DUS_BASE_URL: em.url, DUS_SYNC_STATE_DIR: stateDir() },
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    const exited = new Promise<number | null>((done) => child.on('exit', done));
    try {
      const passes = () => out.split('\n').filter((l) => l.includes('"result":"state-error"'));
      for (let i = 0; i < 100 && passes().length < 2; i++) await new Promise((r) => setTimeout(r, 100));
      expect(passes().length, out).toBeGreaterThanOrEqual(2);
      const msg = (JSON.parse(passes()[0]!) as { msg: string }).msg;
      expect(msg).toMatch(code);
      expect(msg).toMatch(/the state folder: cannot create the folder .* set DUS_SYNC_STATE_DIR \(or --journal\) to a writable folder/);
      expect(out).not.toContain('api-error');
      expect(out).not.toContain(KEY);
      expect(em.store.getAction('acme', 1)!.phases).toEqual([]);
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await em.close();
    }
  }, 30_000);
});
