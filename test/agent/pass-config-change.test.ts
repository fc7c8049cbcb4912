// The watch pass keeps the parse of every file between passes: a change of dus-sync.yaml, a
// rotated key or a second path to a folder must not leave old parses in use; and the journal it
// keeps must be settled once appends left in doubt are live.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createReconcilePass } from '../../src/agent/pass.js';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { memoryLogger } from './helpers.js';

const KEY_A = 'pass-cfg-secret-key-acme-0123456789';
const KEY_B = 'pass-cfg-secret-key-beta-0123456789';
const tenant = (key: string) => ({ api_key: key, bundles: [{ version: '1', firmwares: [
  { version_number: '2.4.1', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
  { version_number: '2.5.0', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
] }], actions: [] });
const seed = { tenants: { acme: tenant(KEY_A), beta: tenant(KEY_B) } } as unknown as Seed;

let emulator: RunningEmulator | undefined;
let dir: string | undefined;
afterEach(async () => {
  await emulator?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  emulator = undefined; dir = undefined;
});

function write(path: string, text: string): void {
  mkdirSync(dirname(join(dir!, path)), { recursive: true });
  writeFileSync(join(dir!, path), text);
}

const config = (tenants: string[], defaultTenant: string) => `apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: ${defaultTenant}\ntenants:\n${tenants.map((t) => `  ${t}: { api_key_env: DUS_API_KEY_${t.toUpperCase()} }\n`).join('')}`;

const clock = { now: () => 1_700_000_000_000, sleep: () => Promise.resolve() };
/** A dry-run pass over `dir` against the emulator, with acme's key (and `env`). */
function dryPass(env: Record<string, string> = {}, log = memoryLogger()) {
  return createReconcilePass({
    cwd: dir!, env: { DUS_BASE_URL: emulator!.url, DUS_API_KEY_ACME: KEY_A, GIT_CEILING_DIRECTORIES: dir!, ...env }, filter: {}, dryRun: true,
    concurrency: 2, journal: join(dir!, 'state', 'j.jsonl'), log, clock,
  });
}

describe('a pass after dus-sync.yaml changed', () => {
  it('parses the files again: a tenant added to the config, and a new default tenant, are seen without touching the files', async () => {
    emulator = await startEmulator({ seed });
    dir = mkdtempSync(join(tmpdir(), 'dus-pass-cfg-'));
    write('dus-sync.yaml', config(['acme'], 'acme'));
    write('tenants/beta.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: beta }\nspec: { version_number: "2.4.1", uncompressed_size: 1000 }\n');
    write('tenants/default.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { labels: { team: a } }\nspec: { version_number: "2.5.0", uncompressed_size: 1000 }\n');
    const log = memoryLogger();
    const { pass, close } = dryPass({ DUS_API_KEY_BETA: KEY_B }, log);
    const signal = new AbortController().signal;
    try {
      const first = await pass({ reason: 'start' }, signal);
      expect(first.result).toBe('invalid-config');
      expect(first.issues?.[0]?.message).toMatch(/unknown tenant "beta"/);
      // The config now lists beta and makes it the default: both files are beta's.
      write('dus-sync.yaml', config(['acme', 'beta'], 'beta'));
      const second = await pass({ reason: 'file-change', files: [join(dir, 'dus-sync.yaml')] }, signal);
      expect(second.issues ?? []).toEqual([]);
      expect(second.result).toBe('success');
      expect([...(second.objects?.keys() ?? [])]).toEqual(['beta']);
      const third = await pass({ reason: 'interval' }, signal);
      expect([...(third.objects?.keys() ?? [])]).toEqual(['beta']);
    } finally {
      await close();
    }
  });
});

describe('a pass after a folder went away', () => {
  it('lists everything again when the path given is gone and listed files were below it (even a folder named like a file)', async () => {
    emulator = await startEmulator({ seed });
    dir = mkdtempSync(join(tmpdir(), 'dus-pass-rm-'));
    write('dus-sync.yaml', config(['acme'], 'acme'));
    write('tenants/a.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.4.1", uncompressed_size: 1000 }\n');
    write('tenants/more.yaml/b.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.5.0", uncompressed_size: 1000 }\n');
    const { pass, close } = dryPass();
    const signal = new AbortController().signal;
    try {
      const first = await pass({ reason: 'start' }, signal);
      expect(first.objects?.get('acme')?.in_sync).toBe(2);
      rmSync(join(dir, 'tenants', 'more.yaml'), { recursive: true });
      const second = await pass({ reason: 'file-change', files: [join(dir, 'tenants', 'more.yaml')] }, signal);
      expect(second.objects?.get('acme')?.in_sync).toBe(1);
    } finally {
      await close();
    }
  });
});

describe('a pass after a key file was rotated', () => {
  it('checks every kept file again for the new key: a value that now holds it is an issue at its line, and nothing is planned', async () => {
    const rotated = 'Zq81rotatedTok3nXy77';
    emulator = await startEmulator({ seed });
    dir = mkdtempSync(join(tmpdir(), 'dus-pass-rot-'));
    write('dus-sync.yaml', `apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n  beta: { api_key_file: ${join(dir, 'beta.key')} }\n`);
    write('beta.key', `${KEY_B}\n`);
    write('tenants/a.yaml', `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "2.4.1"\n  uncompressed_size: 1000\n  dependencies: [{ component_name: boot, min_version: "${rotated}" }]\n`);
    const { pass, close } = dryPass();
    const signal = new AbortController().signal;
    try {
      const first = await pass({ reason: 'start' }, signal);
      expect(first.issues ?? []).toEqual([]);
      expect(first.result).toBe('success');
      // The mounted secret rotates to a value tenants/a.yaml already holds; the file is untouched.
      write('beta.key', `${rotated}\n`);
      const second = await pass({ reason: 'interval' }, signal);
      expect(second.result).toBe('invalid-config');
      expect(second.issues?.map((i) => [i.file.endsWith('tenants/a.yaml'), i.line])).toEqual([[true, 7]]);
      expect(second.issues?.[0]?.message).toMatch(/holds an API key/);
      expect(JSON.stringify(second)).not.toContain(rotated);
    } finally {
      await close();
    }
  });
});

describe('a pass told of a file under a second path to its folder', () => {
  it('lists everything again, as the loader reads each real folder once: no "defined twice"', async () => {
    emulator = await startEmulator({ seed });
    dir = mkdtempSync(join(tmpdir(), 'dus-pass-alias-'));
    write('dus-sync.yaml', config(['acme'], 'acme'));
    write('tenants/acme/a.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.4.1", uncompressed_size: 1000 }\n');
    mkdirSync(join(dir, 'tenants', 'other'));
    symlinkSync('../acme', join(dir, 'tenants', 'other', 'acme-again'));
    symlinkSync('../..', join(dir, 'tenants', 'acme', 'up'));
    const { pass, close } = dryPass();
    const signal = new AbortController().signal;
    try {
      const first = await pass({ reason: 'start' }, signal);
      expect(first.issues ?? []).toEqual([]);
      expect(first.objects?.get('acme')?.in_sync).toBe(1);
      write('tenants/acme/a.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.4.1", uncompressed_size: 2000 }\n');
      // What watchers of both paths report.
      for (const alias of ['tenants/other/acme-again/a.yaml', 'tenants/acme/up/acme/a.yaml']) {
        const next = await pass({ reason: 'file-change', files: [join(dir, 'tenants/acme/a.yaml'), join(dir, alias)] }, signal);
        expect(next.issues ?? []).toEqual([]);
        expect(next.result).toBe('success');
        expect(next.objects?.get('acme')?.drift).toBe(1);
      }
    } finally {
      await close();
    }
  });
});

describe('appends left in doubt, then found live', () => {
  it('are settled by the next pass that finds everything in sync: the journal holds no intent, none is in doubt, and the append counts as applied', async () => {
    const seedDoubt = { tenants: { acme: { api_key: KEY_A, bundles: [], actions: [{ id: 42, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] }] } } } as unknown as Seed;
    emulator = await startEmulator({ seed: seedDoubt, faults: { lateCommitMs: 1500 } });
    dir = mkdtempSync(join(tmpdir(), 'dus-pass-journal-'));
    write('dus-sync.yaml', 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n');
    write('tenants/a.yaml', 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 42\n  phases:\n    - { name: canary, trigger_on: {}, info: {} }\n    - { name: wave, trigger_on: {}, info: {} }\n');
    const journal = join(dir, 'state', 'j.jsonl');
    const { pass, close } = createReconcilePass({
      cwd: dir, env: { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY_A, GIT_CEILING_DIRECTORIES: dir }, filter: {}, dryRun: false,
      concurrency: 2, journal, settleWindowMs: 3000, appendQuietMs: 0, log: memoryLogger(), clock: { now: () => Date.now(), sleep: (ms: number) => new Promise((r) => setTimeout(r, ms)) },
    });
    const signal = new AbortController().signal;
    try {
      const first = await pass({ reason: 'start' }, signal);
      expect(first.result).toBe('partial-failure');
      expect(first.inDoubt).toBe(1);
      // Not counted as failed: its fate is not known yet (counted once, as applied, below).
      expect(first.failed).toEqual([]);
      await new Promise((r) => setTimeout(r, 1700));
      const second = await pass({ reason: 'interval' }, signal);
      expect(second.result).toBe('success');
      expect(second.inDoubt).toBe(0);
      // The append the first pass could not confirm counts as applied once the journal finds it.
      expect(second.applied).toEqual([{ tenant: 'acme', kind: 'phase' }]);
      const lines = existsSync(journal) ? readFileSync(journal, 'utf8').split('\n').filter((l) => l.includes('"type":"intent"')) : [];
      expect(lines).toEqual([]);
      expect(emulator.store.getAction('acme', 42)!.phases.map((p) => p.name)).toEqual(['canary', 'wave']);
    } finally {
      await close();
    }
  });
});
