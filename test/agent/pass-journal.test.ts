// An append answered 504 and stored later stays in doubt in the journal; once a later pass
// finds everything in sync, the journal must be settled and emptied, as a clean apply run does.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createReconcilePass } from '../../src/agent/pass.js';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { memoryLogger } from './helpers.js';

const KEY = 'pass-journal-secret-key-acme-0123456789';
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

describe('appends left in doubt, then found live', () => {
  it('are settled by the next pass that finds everything in sync: the journal holds no intent, none is in doubt, and the append counts as applied', async () => {
    const seed = { tenants: { acme: { api_key: KEY, bundles: [], actions: [{ id: 42, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] }] } } } as unknown as Seed;
    emulator = await startEmulator({ seed, faults: { lateCommitMs: 1500 } });
    dir = mkdtempSync(join(tmpdir(), 'dus-pass-journal-'));
    write('dus-sync.yaml', 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n');
    write('tenants/a.yaml', 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 42\n  phases:\n    - { name: canary, trigger_on: {}, info: {} }\n    - { name: wave, trigger_on: {}, info: {} }\n');
    const journal = join(dir, 'state', 'j.jsonl');
    const { pass, close } = createReconcilePass({
      cwd: dir, env: { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY, GIT_CEILING_DIRECTORIES: dir }, filter: {}, dryRun: false,
      concurrency: 2, journal, settleWindowMs: 3000, log: memoryLogger(), clock: { now: () => Date.now(), sleep: (ms: number) => new Promise((r) => setTimeout(r, ms)) },
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
