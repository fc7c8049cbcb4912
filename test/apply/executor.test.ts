import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executePlan } from '../../src/apply/executor.js';
import type { ExecutorDeps } from '../../src/apply/executor.js';
import { Journal } from '../../src/apply/journal.js';
import { ApiError } from '../../src/errors.js';
import type { Change, FirmwareChange } from '../../src/model/index.js';
import { FakeApi, fakeClock, memoryLog, phase, phaseChange, planOf } from './fakes.js';
import type { FakeOptions, AppendFault } from './fakes.js';

let dir: string;
let journal: Journal;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dus-exec-'));
  journal = await Journal.open(join(dir, '.dus-sync', 'journal.jsonl'));
});
afterEach(async () => {
  await journal.close();
  await rm(dir, { recursive: true, force: true });
});

function deps(api: FakeApi, extra: Partial<Omit<ExecutorDeps, 'log' | 'clock'>> = {}) {
  return { client: api, journal, log: memoryLog(), clock: fakeClock(), concurrency: 8, ...extra };
}

function fakeWith(opts: FakeOptions): FakeApi {
  return new FakeApi({ journalPath: journal.path, ...opts });
}

function faultsFor(schedule: AppendFault[]): (n: number) => AppendFault {
  return (n) => schedule[n] ?? 'ok';
}

function firmware(tenant: string, key: string): FirmwareChange {
  return {
    tenant, kind: 'firmware', op: 'update', key, component_name: 'modem',
    before: { is_deactivated: false }, after: { is_deactivated: true },
    body: { is_deactivated: true, uncompressed_size: 1000, dependencies: [] },
  };
}

describe('executePlan', () => {
  it('appends the phases of one action in index order, whatever the plan order', async () => {
    const api = fakeWith({});
    api.addAction('acme', 42, [phase('canary')]);
    const plan = planOf([
      phaseChange('acme', 42, 3, phase('wave-3')),
      phaseChange('acme', 42, 1, phase('wave-1')),
      phaseChange('acme', 42, 2, phase('wave-2')),
    ]);
    const report = await executePlan(plan, deps(api));
    expect(api.phases('acme', 42).map((p) => p.name)).toEqual(['canary', 'wave-1', 'wave-2', 'wave-3']);
    expect(report).toMatchObject({ applied: 3, failed: 0, skipped: 0, unconverged: [] });
    // The report follows the plan's order, not the order of execution.
    expect(report.results.map((r) => r.change)).toEqual(plan.changes);
    expect(api.violations).toEqual([]);
  });

  it('keeps the number of requests in flight within the concurrency', async () => {
    const api = fakeWith({ latencyTurns: 5 });
    const changes: Change[] = Array.from({ length: 20 }, (_, i) => firmware('acme', `1.0.${i}`));
    for (let a = 0; a < 6; a++) {
      api.addAction('acme', a);
      changes.push(phaseChange('acme', a, 0, phase('p0')), phaseChange('acme', a, 1, phase('p1')));
    }
    const report = await executePlan(planOf(changes), deps(api, { concurrency: 3 }));
    expect(report.applied).toBe(32);
    expect(api.maxInFlight).toBe(3);
  });

  it('sends each firmware body as the plan holds it', async () => {
    const api = fakeWith({});
    await executePlan(planOf([firmware('acme', '2.4.1')]), deps(api));
    expect(api.firmwares.get('acme/2.4.1')).toEqual({ is_deactivated: true, uncompressed_size: 1000, dependencies: [] });
  });

  it('goes on with other objects when one change fails, and skips the later phases of that action', async () => {
    const api = fakeWith({ putFault: (v) => v === '1.0.0', appendFault: (_n, id) => (id === 1 ? '4xx' : 'ok') });
    api.addAction('acme', 1);
    api.addAction('acme', 2);
    const plan = planOf([
      firmware('acme', '1.0.0'), firmware('acme', '1.0.1'),
      phaseChange('acme', 1, 0, phase('a')), phaseChange('acme', 1, 1, phase('b')),
      phaseChange('acme', 2, 0, phase('a')),
    ]);
    const report = await executePlan(plan, deps(api));
    expect(report.results.map((r) => r.status)).toEqual(['failed', 'applied', 'failed', 'skipped', 'applied']);
    expect(report.results[0]!.message).toContain('answered 400');
    expect(report.results[3]!.message).toBe('skipped because phase 0 "a" of action 1 in acme did not apply');
    expect(report).toMatchObject({ applied: 2, failed: 2, skipped: 1 });
    expect(api.phases('acme', 1)).toEqual([]);
  });

  it('with failFast, skips everything that had not started after the first failure', async () => {
    const api = fakeWith({ putFault: (v) => v === '1.0.0' });
    const plan = planOf([firmware('acme', '1.0.0'), firmware('acme', '1.0.1'), firmware('acme', '1.0.2')]);
    const report = await executePlan(plan, deps(api, { failFast: true, concurrency: 1 }));
    expect(report.results.map((r) => r.status)).toEqual(['failed', 'skipped', 'skipped']);
    expect(report.results[1]!.message).toContain('--fail-fast');
    expect(api.puts).toEqual([]);
  });

  it('starts nothing new once the signal is aborted and reports progress for every change', async () => {
    const api = fakeWith({});
    const ctl = new AbortController();
    const seen: string[] = [];
    const plan = planOf([firmware('acme', '1.0.0'), firmware('acme', '1.0.1'), firmware('acme', '1.0.2')]);
    const report = await executePlan(plan, deps(api, {
      concurrency: 1, signal: ctl.signal,
      onResult: (r, done, total) => { seen.push(`${done}/${total} ${r.status}`); ctl.abort(); },
    }));
    expect(seen).toEqual(['1/3 applied', '2/3 skipped', '3/3 skipped']);
    expect(report.results[1]!.message).toBe('skipped because the apply was interrupted');
    expect(api.puts).toEqual(['acme/1.0.0']);
  });

  it('finishes every change even when the progress callback throws', async () => {
    const api = fakeWith({});
    const plan = planOf([firmware('acme', '1.0.0'), firmware('acme', '1.0.1')]);
    const report = await executePlan(plan, deps(api, { onResult: () => { throw new Error('EPIPE'); } }));
    expect(report.applied).toBe(2);
  });

  it('counts a dropped answer as applied when the read-back shows the phase, without sending again', async () => {
    const api = fakeWith({ appendFault: faultsFor(['drop-after-commit', '5xx-after-commit']) });
    api.addAction('acme', 42);
    const plan = planOf([phaseChange('acme', 42, 0, phase('a')), phaseChange('acme', 42, 1, phase('b'))]);
    const report = await executePlan(plan, deps(api));
    expect(report.applied).toBe(2);
    expect(api.appendsReceived.map((a) => a.name)).toEqual(['a', 'b']);
    expect(await journal.pending()).toEqual([]);
  });

  it('sends again, once, when the read-back shows the phase absent', async () => {
    const api = fakeWith({ appendFault: faultsFor(['5xx-before-commit']) });
    api.addAction('acme', 42);
    const d = deps(api);
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), d);
    expect(report.applied).toBe(1);
    expect(api.phases('acme', 42).map((p) => p.name)).toEqual(['a']);
    expect(d.log.lines.some((l) => l.includes('sending it again'))).toBe(true);
  });

  it('reads again after a pause before resending, and counts a phase that landed late as applied', async () => {
    const api = fakeWith({ appendFault: faultsFor(['5xx-before-commit']) });
    api.addAction('acme', 42);
    const d = deps(api);
    // The first request reaches the server while we wait (a proxy answered 504 too early).
    d.clock.sleep = (ms: number) => {
      d.clock.slept.push(ms);
      if (api.phases('acme', 42).length === 0) api.addAction('acme', 42, [phase('a')]);
      return Promise.resolve();
    };
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), d);
    expect(report.applied).toBe(1);
    // Only the late first request: nothing was sent again.
    expect(api.appendsReceived).toEqual([]);
    expect(api.phases('acme', 42)).toHaveLength(1);
    expect(d.clock.slept).toEqual([1_000]);
  });

  it('gives up after a bounded number of sends that are each proven absent', async () => {
    const api = fakeWith({ appendFault: () => '5xx-before-commit' });
    api.addAction('acme', 42);
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), deps(api));
    expect(report.failed).toBe(1);
    expect(report.results[0]!.message).toMatch(/after 3 tries/);
    expect(api.phases('acme', 42)).toEqual([]);
  });

  it('fails, without sending again, when the read-back shows someone else\'s phase at that index', async () => {
    const api = fakeWith({ appendFault: faultsFor(['5xx-before-commit']) });
    api.addAction('acme', 42);
    const tc = api.tenant('acme');
    const original = tc.getAction;
    // Another writer appends between our failed append and our read-back.
    let raced = false;
    api.tenant = () => ({ ...tc, getAction: async (id) => {
      if (!raced) { raced = true; api.addAction('acme', 42, [phase('theirs')]); }
      return original(id);
    } });
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('mine'))]), deps(api));
    expect(report.failed).toBe(1);
    expect(report.results[0]!.message).toContain('already has a different phase at index 0');
    expect(api.phases('acme', 42).map((p) => p.name)).toEqual(['theirs']);
    expect(await journal.pending()).toEqual([]);
  });

  it('retries the read-back, and leaves the intent pending when the action cannot be read at all', async () => {
    const api = fakeWith({ appendFault: faultsFor(['drop-after-commit']), readFault: () => 'error' });
    api.addAction('acme', 42);
    const d = deps(api, { checkIndex: false });
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), d);
    expect(report.failed).toBe(1);
    expect(report.results[0]!.message).toContain('the next apply settles it from the journal');
    expect(d.clock.slept.length).toBe(4);
    expect((await journal.pending()).map((i) => i.name)).toEqual(['a']);
  });

  it('resolves a flaky read-back once it answers', async () => {
    const api = fakeWith({ appendFault: faultsFor(['drop-after-commit']), readFault: (n) => (n < 2 ? 'error' : 'ok') });
    api.addAction('acme', 42);
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), deps(api, { checkIndex: false }));
    expect(report.applied).toBe(1);
    expect(api.appendsReceived).toHaveLength(1);
  });

  it('resends after a refusal the client marks not-sent and retryable, such as 429', async () => {
    let n = 0;
    const api = new FakeApi({ journalPath: journal.path });
    api.addAction('acme', 42);
    const tc = api.tenant('acme');
    api.tenant = () => ({ ...tc, appendPhase: (id, p) => (n++ === 0 ? Promise.reject(rateLimited()) : tc.appendPhase(id, p)) });
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), deps(api));
    expect(report.applied).toBe(1);
    expect(api.phases('acme', 42)).toHaveLength(1);
  });

  it('sends nothing when the action cannot be read before its first append', async () => {
    const api = fakeWith({ readFault: () => 'error' });
    api.addAction('acme', 42);
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a')), phaseChange('acme', 42, 1, phase('b'))]), deps(api));
    expect(report.results.map((r) => r.status)).toEqual(['failed', 'skipped']);
    expect(api.appendsReceived).toEqual([]);
    expect(await journal.pending()).toEqual([]);
  });

  it('refuses to append when the live action no longer ends where the plan thought', async () => {
    const api = fakeWith({});
    api.addAction('acme', 42, [phase('canary'), phase('extra')]);
    const report = await executePlan(planOf([phaseChange('acme', 42, 1, phase('wave-1'))]), deps(api));
    expect(report.failed).toBe(1);
    expect(api.appendsReceived).toEqual([]);
  });

  it('counts a phase that is already there as applied without sending it', async () => {
    const api = fakeWith({});
    api.addAction('acme', 42, [phase('canary'), phase('wave-1')]);
    const report = await executePlan(planOf([phaseChange('acme', 42, 1, phase('wave-1'))]), deps(api));
    expect(report.applied).toBe(1);
    expect(api.appendsReceived).toEqual([]);
  });

  it('never puts a key into a failure message', async () => {
    const { registerSecret, clearSecretsForTests } = await import('../../src/redact.js');
    registerSecret('sk-live-very-secret');
    try {
      const api = fakeWith({});
      const tc = api.tenant('acme');
      api.tenant = () => ({ ...tc, putFirmware: () => Promise.reject(new Error('rejected key sk-live-very-secret.\nsee logs')) });
      const report = await executePlan(planOf([firmware('acme', '1.0.0')]), deps(api));
      expect(report.results[0]!.message).toBe('rejected key [REDACTED]. see logs');
    } finally {
      clearSecretsForTests();
    }
  });
});

function rateLimited(): Error {
  return new ApiError('append_phase answered 429', { status: 429, retryable: true, outcome: 'not-sent' });
}
