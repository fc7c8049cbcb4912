// One reconcile pass as watch runs it, against the emulator, with a clock the test moves: what a
// pass with a conflict says, and how often it says it.
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentMetrics } from '../../src/agent/metrics.js';
import { createReconcilePass } from '../../src/agent/pass.js';
import { RepeatLimiter } from '../../src/agent/repeat.js';
import { StatusBoard } from '../../src/agent/status-page.js';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { memoryLogger } from './helpers.js';

const KEY = 'pass-test-secret-key-acme-0123456789';
const seed = {
  tenants: { acme: { api_key: KEY, bundles: [{ version: '1', firmwares: [
    { version_number: '2.4.1', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
  ] }], actions: [{ id: 42, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] }] } },
} as unknown as Seed;

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

const CONFIG = 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n';
const realClock = { now: () => Date.now(), sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) };

/** The emulator, a repository in a new folder (dus-sync.yaml and `files`), and a pass against them; `extra` overrides the pass's options. */
async function passOver(prefix: string, files: Record<string, string>, extra: Partial<Parameters<typeof createReconcilePass>[0]> = {}): Promise<ReturnType<typeof createReconcilePass>> {
  emulator = await startEmulator({ seed });
  dir = mkdtempSync(join(tmpdir(), prefix));
  write('dus-sync.yaml', CONFIG);
  for (const [path, text] of Object.entries(files)) write(path, text);
  return createReconcilePass({
    cwd: dir, env: { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY, GIT_CEILING_DIRECTORIES: dir }, filter: {}, dryRun: false,
    concurrency: 2, journal: join(dir, 'state', 'j.jsonl'), log: memoryLogger(), clock: realClock, ...extra,
  });
}

const HOUR = 60 * 60_000;

describe('a pass with a conflict', () => {
  it('never says "in sync", warns with tenant, kind, key, file and line, and repeats the same warning at most hourly', async () => {
    emulator = await startEmulator({ seed });
    dir = mkdtempSync(join(tmpdir(), 'dus-pass-'));
    write('dus-sync.yaml', 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n');
    const action = (name: string) => `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 42\n  phases:\n    - { name: ${name} }\n`;
    write('tenants/actions.yaml', action('first'));
    write('tenants/fw.yaml', 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.4.1" }\n');
    const log = memoryLogger();
    let now = 1_700_000_000_000;
    const clock = { now: () => now, sleep: () => Promise.resolve() };
    const { pass, close } = createReconcilePass({
      cwd: dir, env: { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY, GIT_CEILING_DIRECTORIES: dir }, filter: {}, dryRun: false,
      concurrency: 2, journal: join(dir, 'state', 'j.jsonl'), log, clock,
    });
    const signal = new AbortController().signal;
    const warnings = () => log.lines.filter((l) => l.level === 'warn' && l.msg.startsWith('conflict on action 42'));
    try {
      const first = await pass({ reason: 'start' }, signal);
      expect(first.result).toBe('conflict');
      expect(first.message).not.toMatch(/in sync/);
      expect(first.message).toBe('1 conflict to fix; nothing to apply (1 unchanged)');
      expect(first.objects).toEqual(new Map([['acme', { in_sync: 1, drift: 0, conflict: 1, error: 0 }]]));
      expect(first.synced).toEqual([]);
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]!.fields).toEqual({ tenant: 'acme', kind: 'action', key: '42', file: expect.stringMatching(/tenants\/actions\.yaml$/) as string, line: 7 }); // the phase that differs

      // The same conflict every interval: quiet within the hour, said again after it.
      for (let i = 0; i < 5; i++) { now += 5 * 60_000; await pass({ reason: 'interval' }, signal); }
      expect(warnings()).toHaveLength(1);
      now += HOUR;
      await pass({ reason: 'interval' }, signal);
      expect(warnings()).toHaveLength(2);

      // A different conflict on the same action is news at once.
      write('tenants/actions.yaml', action('second'));
      now += 1000;
      await pass({ reason: 'file-change' }, signal);
      expect(warnings()).toHaveLength(3);
      expect(warnings()[2]!.msg).toContain('second');

      // Fixed, then broken the same way again: logged again, as new.
      write('tenants/actions.yaml', action('canary'));
      now += 1000;
      const fixed = await pass({ reason: 'file-change' }, signal);
      expect(fixed.result).toBe('success');
      expect(fixed.message).toBe('in sync (2 unchanged)');
      expect(fixed.synced).toEqual(['acme']);
      write('tenants/actions.yaml', action('second'));
      now += 1000;
      await pass({ reason: 'file-change' }, signal);
      expect(warnings()).toHaveLength(4);
    } finally {
      await close();
    }
  });
});

describe('a phase from a file just written (--append-quiet)', () => {
  it('waits until the file has been unchanged for the quiet period, then is appended by the pass the result asks for; firmware writes do not wait', async () => {
    const { pass, close } = await passOver('dus-pass-quiet-', {
      // A writer that paused mid-file: valid YAML holding a phase name cut short.
      'tenants/actions.yaml': 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 42\n  phases:\n    - { name: canary }\n    - { name: general }\n',
      'tenants/fw.yaml': 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.4.1", is_deactivated: true }\n',
    }, { appendQuietMs: 1500 });
    const signal = new AbortController().signal;
    const live = () => emulator!.store.getAction('acme', 42)!.phases.map((p) => p.name);
    try {
      const first = await pass({ reason: 'file-change' }, signal);
      expect(first.applied).toEqual([{ tenant: 'acme', kind: 'firmware' }]);
      expect(first.message).toBe('applied 1, failed 0, skipped 1');
      expect(first.againInMs).toBeGreaterThan(0);
      expect(first.againInMs).toBeLessThanOrEqual(1500);
      expect(live()).toEqual(['canary']);
      // The rest of the file comes within the quiet period: the half phase is never appended.
      write('tenants/actions.yaml', 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 42\n  phases:\n    - { name: canary }\n    - { name: general-availability }\n');
      const second = await pass({ reason: 'file-change', files: [join(dir!, 'tenants/actions.yaml')] }, signal);
      expect(second.applied).toEqual([]);
      expect(live()).toEqual(['canary']);
      await new Promise((r) => setTimeout(r, second.againInMs! + 50));
      const third = await pass({ reason: 'retry' }, signal);
      expect(third.applied).toEqual([{ tenant: 'acme', kind: 'phase' }]);
      expect(third.againInMs).toBeUndefined();
      expect(live()).toEqual(['canary', 'general-availability']);
    } finally {
      await close();
    }
  });
});

describe('a phase from a file whose modification time is ahead of the clock (cp -p, tar, a skewed server)', () => {
  it('is appended once the file has been unchanged for the quiet period, not at that future time', async () => {
    const log = memoryLogger();
    const { pass, close } = await passOver('dus-pass-future-', {
      'tenants/actions.yaml': 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 42\n  phases:\n    - { name: canary }\n    - { name: wave-1 }\n',
    }, { appendQuietMs: 1000, log });
    const future = new Date(Date.now() + 30 * 24 * HOUR);
    utimesSync(join(dir!, 'tenants/actions.yaml'), future, future);
    const signal = new AbortController().signal;
    try {
      const first = await pass({ reason: 'start' }, signal);
      expect(first.applied).toEqual([]);
      expect(first.againInMs).toBeLessThanOrEqual(1000);
      // Why it waits is said, not only "skipped 1".
      expect(log.lines.some((l) => l.level === 'info' && /^waiting: phase 42 in acme: .*--append-quiet/.test(l.msg))).toBe(true);
      await new Promise((r) => setTimeout(r, first.againInMs! + 50));
      const second = await pass({ reason: 'retry' }, signal);
      expect(second.applied).toEqual([{ tenant: 'acme', kind: 'phase' }]);
    } finally {
      await close();
    }
  });
});

describe('RepeatLimiter', () => {
  it('says a warning when first seen, when it changes, then once a window; forgets what went away', () => {
    let t = 0;
    const r = new RepeatLimiter(() => t, 1000);
    expect(r.shouldLog('a', 'x')).toBe(true);
    t = 999;
    expect(r.shouldLog('a', 'x')).toBe(false);
    expect(r.shouldLog('a', 'y')).toBe(true);
    r.endRound();
    t = 1998;
    expect(r.shouldLog('a', 'y')).toBe(false);
    t = 1999;
    expect(r.shouldLog('a', 'y')).toBe(true);
    r.endRound();
    r.endRound();
    expect(r.shouldLog('a', 'y')).toBe(true);
  });
});

describe('a pass whose every write is held back', () => {
  it('says what waits, not "in sync": in its message, its synced tenants (dus_sync_last_applied_info) and the status page\'s state', async () => {
    const { pass, close } = await passOver('dus-pass-held-', {
      'tenants/actions.yaml': 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 42\n  paused: true\n  phases:\n    - { name: canary }\n    - { name: wave-1 }\n',
    }, { clock: { now: () => 1_700_000_000_000, sleep: () => Promise.resolve() } });
    try {
      const r = await pass({ reason: 'start' }, new AbortController().signal);
      expect(r.message).toMatch(/^held: 1 object waiting \(action 42 is paused .*\); nothing to apply now \(0 unchanged\)$/);
      expect(emulator!.store.getAction('acme', 42)!.phases).toHaveLength(1);
      // Not the revision the live state matches: wave-1 is not live.
      expect(r.synced).toEqual([]);
      const acme = r.detail!.tenants.find((t) => t.tenant === 'acme')!;
      expect(acme).toMatchObject({ state: 'held', held: 1, heldWhy: expect.stringMatching(/^action 42 is paused/) as string });
      const page = new StatusBoard({ version: 'test', refreshSeconds: 5 });
      page.recordPass(r, 1, 1_700_000_000_000);
      const html = page.render({ passes: 1, running: false, consecutiveFailures: 0, intervalMs: 60_000, ready: true }, 1_700_000_000_000);
      expect(html).toContain('<span class="badge info">held</span>');
      expect(html).not.toContain('in sync</span>');
    } finally {
      await close();
    }
  });
});

// The drift gauges tell the state after a pass, not at its plan: an hour-long interval must not
// keep an applied and verified change counted as drift ("not converging" alerts on a converged
// service), and a change that failed must still be counted.
describe('a pass that applies changes', () => {
  const config = (safety = '') => `apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\n${safety}tenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n`;
  const fw = 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.4.1", uncompressed_size: 2000 }\n';
  const act = 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 42\n  phases:\n    - { name: canary }\n    - { name: wave-1 }\n    - { name: wave-2 }\n';
  const gauges = async (m: AgentMetrics): Promise<Record<string, string | undefined>> => {
    const text = await m.text();
    const at = (series: string) => text.split('\n').find((l) => l.startsWith(`${series} `))?.slice(series.length + 1);
    return {
      drift: at('dus_sync_objects{tenant="acme",state="drift"}'), in_sync: at('dus_sync_objects{tenant="acme",state="in_sync"}'),
      drift_objects: at('dus_sync_drift_objects{tenant="acme"}'),
    };
  };
  async function run(faults: Parameters<typeof startEmulator>[0]['faults'], safety = '') {
    emulator = await startEmulator({ seed, faults });
    dir = mkdtempSync(join(tmpdir(), 'dus-pass-after-'));
    write('dus-sync.yaml', config(safety));
    write('tenants/fw.yaml', fw);
    write('tenants/actions.yaml', act);
    // The files were just written: appends go at once (--append-quiet is tested on its own).
    return createReconcilePass({
      cwd: dir, env: { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY, GIT_CEILING_DIRECTORIES: dir }, filter: {}, dryRun: false,
      concurrency: 2, journal: join(dir, 'state', 'j.jsonl'), appendQuietMs: 0, log: memoryLogger(), clock: { now: () => 1_700_000_000_000, sleep: () => Promise.resolve() },
    });
  }

  it('counts what it applied and verified as in sync, and what failed as drift, until the next pass', async () => {
    // Every firmware PUT is refused (400); the phase appends go through.
    const { pass, close } = await run({ hostile: { mode: 'echo', routes: ['firmware'], status: 400 } });
    const metrics = new AgentMetrics({ defaultMetrics: false });
    try {
      const first = await pass({ reason: 'start' }, new AbortController().signal);
      expect(first.result).toBe('partial-failure');
      expect(first.message).toMatch(/^applied 2, failed 1/);
      expect(emulator!.store.getAction('acme', 42)!.phases).toHaveLength(3);
      // At the plan both objects differed; after it, only the firmware whose write failed does.
      expect(first.objects).toEqual(new Map([['acme', { in_sync: 0, drift: 2, conflict: 0, error: 0 }]]));
      expect(first.after).toEqual(new Map([['acme', { in_sync: 1, drift: 1, conflict: 0, error: 0 }]]));
      metrics.recordPass(first, 10, 0);
      expect(await gauges(metrics)).toEqual({ drift: '1', in_sync: '1', drift_objects: '1' });

      // The API takes firmware writes again: the next pass applies the rest, and nothing is left.
      emulator!.faults.hostile = undefined;
      const second = await pass({ reason: 'interval' }, new AbortController().signal);
      expect(second.result).toBe('success');
      expect(second.message).toMatch(/^applied 1, failed 0/);
      expect(second.after).toEqual(new Map([['acme', { in_sync: 2, drift: 0, conflict: 0, error: 0 }]]));
      metrics.recordPass(second, 10, 0);
      expect(await gauges(metrics)).toEqual({ drift: '0', in_sync: '2', drift_objects: '0' });
    } finally {
      await close();
    }
  });

  it('keeps an action whose appends diverged (another actor raced them) in drift', async () => {
    // Every append finds the same phase appended by another actor a moment before: a phase twice.
    const { pass, close } = await run({ raceAppendEvery: 1 });
    const metrics = new AgentMetrics({ defaultMetrics: false });
    try {
      const r = await pass({ reason: 'start' }, new AbortController().signal);
      expect(r.result).toBe('partial-failure');
      expect(r.diverged).toBeGreaterThan(0);
      // The firmware was written and reads back so; the action is not the YAML's phases.
      expect(r.after).toEqual(new Map([['acme', { in_sync: 1, drift: 1, conflict: 0, error: 0 }]]));
      metrics.recordPass(r, 10, 0);
      expect(await gauges(metrics)).toEqual({ drift: '1', in_sync: '1', drift_objects: '1' });
    } finally {
      await close();
    }
  });

  it('keeps an action whose appends were accepted but do not show in the reads after the apply in drift', async () => {
    // A read replica a minute behind: the verification cannot see the appended phases yet.
    const { pass, close } = await run({ readLagMs: 60_000 });
    try {
      const r = await pass({ reason: 'start' }, new AbortController().signal);
      // wave-1 was accepted (wave-2 waits for it to show); the firmware was written and reads back so.
      expect(r.message).toMatch(/^applied 2, failed 0, skipped 1/);
      expect(emulator!.store.getAction('acme', 42)!.phases.map((p) => p.name)).toEqual(['canary', 'wave-1']);
      expect(r.after).toEqual(new Map([['acme', { in_sync: 1, drift: 1, conflict: 0, error: 0 }]]));
    } finally {
      await close();
    }
  });

  it('still tells the drift of a plan it refused as unsafe (nothing written)', async () => {
    const { pass, close } = await run(undefined, 'safety: { max_changes: 1 }\n');
    const metrics = new AgentMetrics({ defaultMetrics: false });
    try {
      const r = await pass({ reason: 'start' }, new AbortController().signal);
      expect(r.result).toBe('unsafe');
      expect(r.drift).toEqual(new Map([['acme', 2]]));
      metrics.recordPass(r, 10, 0);
      expect(await gauges(metrics)).toEqual({ drift: '2', in_sync: '0', drift_objects: '2' });
    } finally {
      await close();
    }
  });
});
