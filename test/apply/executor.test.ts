import { appendFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
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

/** Deps for a plan made now: the fake's current state is the baseline every write is checked against. */
function deps(api: FakeApi, extra: Partial<Omit<ExecutorDeps, 'log' | 'clock'>> = {}) {
  return { client: api, journal, log: memoryLog(), clock: fakeClock(), concurrency: 8, live: api.snapshot(), ...extra };
}

function fakeWith(opts: FakeOptions): FakeApi {
  return new FakeApi({ journalPath: journal.path, ...opts });
}

function faultsFor(schedule: AppendFault[]): (n: number) => AppendFault {
  return (n) => schedule[n] ?? 'ok';
}

/** A firmware change that deactivates a record; `api` gets the live record the plan saw. */
function firmware(tenant: string, key: string, api?: FakeApi): FirmwareChange {
  api?.addFirmware(tenant, key);
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
    const changes: Change[] = Array.from({ length: 20 }, (_, i) => firmware('acme', `1.0.${i}`, api));
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
    await executePlan(planOf([firmware('acme', '2.4.1', api)]), deps(api));
    expect(api.firmwares.get('acme/2.4.1')).toEqual({ is_deactivated: true, uncompressed_size: 1000, dependencies: [] });
  });

  it('goes on with other objects when one change fails, and skips the later phases of that action', async () => {
    const api = fakeWith({ putFault: (v) => v === '1.0.0', appendFault: (_n, id) => (id === 1 ? '4xx' : 'ok') });
    api.addAction('acme', 1);
    api.addAction('acme', 2);
    const plan = planOf([
      firmware('acme', '1.0.0', api), firmware('acme', '1.0.1', api),
      phaseChange('acme', 1, 0, phase('a')), phaseChange('acme', 1, 1, phase('b')),
      phaseChange('acme', 2, 0, phase('a')),
    ]);
    const report = await executePlan(plan, deps(api));
    expect(report.results.map((r) => r.status)).toEqual(['failed', 'applied', 'failed', 'skipped', 'applied']);
    expect(report.results[0]!.message).toContain('answered 400');
    expect(report.results[3]!.message).toBe('skipped because the API refused phase 0');
    // A 400 leaves the append in doubt (a server may store it and still say 400): not sent again.
    expect(report.results[2]!.message).toMatch(/refused the append: .*400.*not sent again in this run, and a later run sends it only after reads have shown it absent for 30 s/);
    expect(report).toMatchObject({ applied: 2, failed: 2, skipped: 1 });
    expect(api.phases('acme', 1)).toEqual([]);
  });

  it('with failFast, skips everything that had not started after the first failure', async () => {
    const api = fakeWith({ putFault: (v) => v === '1.0.0' });
    const plan = planOf([firmware('acme', '1.0.0', api), firmware('acme', '1.0.1', api), firmware('acme', '1.0.2', api)]);
    const report = await executePlan(plan, deps(api, { failFast: true, concurrency: 1 }));
    expect(report.results.map((r) => r.status)).toEqual(['failed', 'skipped', 'skipped']);
    expect(report.results[1]!.message).toContain('--fail-fast');
    expect(api.puts).toEqual([]);
  });

  it('starts nothing new once the signal is aborted and reports progress for every change', async () => {
    const api = fakeWith({});
    const ctl = new AbortController();
    const seen: string[] = [];
    const plan = planOf([firmware('acme', '1.0.0', api), firmware('acme', '1.0.1', api), firmware('acme', '1.0.2', api)]);
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
    const plan = planOf([firmware('acme', '1.0.0', api), firmware('acme', '1.0.1', api)]);
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
    expect(journal.open()).toEqual([]);
  });

  it('does not send again in the same run when the read-back shows the phase absent: the intent stays open, marked absent', async () => {
    const api = fakeWith({ appendFault: faultsFor(['5xx-before-commit']) });
    api.addAction('acme', 42);
    const d = deps(api, { settleMs: 30_000 });
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a')), phaseChange('acme', 42, 1, phase('b'))]), d);
    expect(report.results.map((r) => r.status)).toEqual(['failed', 'skipped']);
    expect(report.results[0]!.message).toMatch(/not sent again in this run: a later run sends it only after reads have shown it absent for 30 s/);
    expect(api.phases('acme', 42)).toEqual([]);
    const open = journal.open();
    expect(open).toEqual([expect.objectContaining({ name: 'a', state: 'pending', absentSince: expect.any(Number) })]);
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

  it('gives up after a bounded number of sends that were each certainly refused (429)', async () => {
    const api = new FakeApi({ journalPath: journal.path });
    api.addAction('acme', 42);
    const tc = api.tenant('acme');
    api.tenant = () => ({ ...tc, appendPhase: () => Promise.reject(rateLimited()) });
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), deps(api));
    expect(report.failed).toBe(1);
    expect(report.results[0]!.message).toMatch(/refused the append 3 times: append_phase answered 429/);
    expect(journal.open()).toEqual([]);
  });

  it('fails, without sending again, when the read-back shows someone else\'s phase at that index', async () => {
    const api = fakeWith({ appendFault: faultsFor(['5xx-before-commit']) });
    api.addAction('acme', 42);
    const d = deps(api);
    const tc = api.tenant('acme');
    const original = tc.getAction;
    // Another writer appends between our failed append and our read-back (the second read).
    let reads = 0;
    api.tenant = () => ({ ...tc, getAction: async (id) => {
      if (++reads === 2) api.addAction('acme', 42, [phase('theirs')]);
      return original(id);
    } });
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('mine'))]), d);
    expect(report.failed).toBe(1);
    expect(report.results[0]!.message).toMatch(/outcome of the append is unknown/);
    expect(api.phases('acme', 42).map((p) => p.name)).toEqual(['theirs']);
    expect(api.appendsReceived).toEqual([]);
    // Still open: it may land later, and is not sent again before the settle window.
    expect(journal.open()).toHaveLength(1);
  });

  it('retries the read-back, and leaves the intent pending when the action cannot be read at all', async () => {
    const api = fakeWith({ appendFault: faultsFor(['drop-after-commit']), readFault: (n) => (n === 0 ? 'ok' : 'error') });
    api.addAction('acme', 42);
    const d = deps(api);
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), d);
    expect(report.failed).toBe(1);
    expect(report.results[0]!.message).toContain('the next run settles it from the journal');
    expect(d.clock.slept).toEqual([200, 400]);
    expect(journal.open().map((i) => i.name)).toEqual(['a']);
  });

  it('resolves a flaky read-back once it answers', async () => {
    const api = fakeWith({ appendFault: faultsFor(['drop-after-commit']), readFault: (n) => (n === 1 || n === 2 ? 'error' : 'ok') });
    api.addAction('acme', 42);
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), deps(api));
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

  describe('a 429 from the server (the client says refused, not not-sent)', () => {
    const answered429 = () => new ApiError('append_phase answered 429', { status: 429, retryable: true, outcome: 'refused' });
    /** A server that may store the append before it answers 429, and whose reads lag `lagMs` behind its writes. */
    function lying(api: FakeApi, d: ReturnType<typeof deps>, opts: { stores: boolean; lagMs: number; status?: number }) {
      const tc = api.tenant('acme');
      let storedAt: number | undefined;
      let first = true;
      api.tenant = () => ({
        ...tc,
        appendPhase: async (id, p) => {
          if (first) {
            first = false;
            if (opts.stores) { await tc.appendPhase(id, p); storedAt = d.clock.now(); }
            throw opts.status === undefined ? answered429() : new ApiError(`append_phase answered ${opts.status}`, { status: opts.status, retryable: false, outcome: 'refused' });
          }
          return tc.appendPhase(id, p);
        },
        getAction: async (id) => {
          const a = await tc.getAction(id);
          if (a && storedAt !== undefined && d.clock.now() - storedAt < opts.lagMs) return { ...a, phases: a.phases.slice(0, -1) };
          return a;
        },
      });
    }

    /** One append of phase "a" to action 42 against such a server, with this settle window. */
    async function appendAgainst(settleMs: number, opts: { stores: boolean; lagMs: number; status?: number }) {
      const api = new FakeApi({ journalPath: journal.path });
      api.addAction('acme', 42);
      const d = deps(api, { settleMs });
      lying(api, d, opts);
      const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), d);
      return { api, d, report };
    }

    it('stored anyway, with reads lagging less than the settle window: not sent again, applied', async () => {
      const { api, d, report } = await appendAgainst(30_000, { stores: true, lagMs: 20_000 });
      expect(api.phases('acme', 42).map((p) => p.name)).toEqual(['a']);
      expect(report.applied).toBe(1);
      expect(report.results[0]!.message).toMatch(/answered 429 but a read shows the phase stored/);
      expect(d.clock.slept).toContain(30_000);
      expect(journal.open()).toEqual([]);
    });

    it('not stored: sent again once reads have shown it absent for the settle window, once', async () => {
      const { api, d, report } = await appendAgainst(5_000, { stores: false, lagMs: 0 });
      expect(report.applied).toBe(1);
      expect(api.phases('acme', 42).map((p) => p.name)).toEqual(['a']);
      expect(d.clock.slept).toContain(5_000);
      // The refused send is settled; the second is acknowledged (2xx), kept until a read shows it.
      expect(journal.open().map((i) => i.state)).toEqual(['acknowledged']);
    });

    it('a 403 after storing it, with lagging reads: not sent again in this run, left in doubt for the next', async () => {
      const { api, report } = await appendAgainst(30_000, { stores: true, lagMs: 60_000, status: 403 });
      expect(report.failed).toBe(1);
      expect(report.results[0]!.message).toMatch(/not sent again in this run/);
      expect(api.phases('acme', 42).map((p) => p.name)).toEqual(['a']);
      expect(journal.open()).toHaveLength(1);
    });
  });

  it('sends nothing when the action cannot be read before an append', async () => {
    const api = fakeWith({ readFault: () => 'error' });
    api.addAction('acme', 42);
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a')), phaseChange('acme', 42, 1, phase('b'))]), deps(api));
    expect(report.results.map((r) => r.status)).toEqual(['failed', 'skipped']);
    expect(report.results[0]!.message).toMatch(/could not be read before appending, so nothing was sent/);
    expect(api.appendsReceived).toEqual([]);
    expect(journal.open()).toEqual([]);
  });

  it('refuses to append when the live action gained a foreign phase since the plan: a conflict naming it', async () => {
    const api = fakeWith({});
    api.addAction('acme', 42, [phase('canary')]);
    const d = deps(api);
    api.addAction('acme', 42, [phase('canary'), phase('extra')]);
    const report = await executePlan(planOf([phaseChange('acme', 42, 1, phase('wave-1')), phaseChange('acme', 42, 2, phase('wave-2'))]), d);
    expect(report.results.map((r) => r.status)).toEqual(['failed', 'skipped']);
    expect(report.results[0]!.message).toMatch(/action 42 has phase 1 "extra" where the YAML has "wave-1" \(live \["canary", "extra"\]\); nothing was appended/);
    expect(api.appendsReceived).toEqual([]);
  });

  it('a stale plan: phases another actor appended since are not sent again, the rest are (never an inferred index)', async () => {
    const api = fakeWith({});
    api.addAction('acme', 42, [phase('p0')]);
    const d = deps(api);
    const plan = planOf([1, 2, 3, 4].map((i) => phaseChange('acme', 42, i, phase(`p${i}`))));
    api.addAction('acme', 42, [phase('p0'), phase('p1'), phase('p2')]);
    const report = await executePlan(plan, d);
    expect(report.results.map((r) => r.status)).toEqual(['skipped', 'skipped', 'applied', 'applied']);
    expect(report.results[0]!.message).toMatch(/already there/);
    expect(api.appendsReceived.map((a) => a.name)).toEqual(['p3', 'p4']);
    expect(api.phases('acme', 42).map((p) => p.name)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
  });

  it('each append is decided on its own read: one that lands between two of ours stops the action', async () => {
    const api = fakeWith({});
    api.addAction('acme', 42, [phase('p0')]);
    const d = deps(api);
    const tc = api.tenant('acme');
    let appended = 0;
    api.tenant = () => ({ ...tc, appendPhase: async (id, p) => {
      const a = await tc.appendPhase(id, p);
      if (++appended === 1) api.actions.get('acme/42')!.phases.push(phase('theirs'));
      return a;
    } });
    const report = await executePlan(planOf([1, 2, 3].map((i) => phaseChange('acme', 42, i, phase(`p${i}`)))), d);
    expect(report.results.map((r) => r.status)).toEqual(['applied', 'failed', 'skipped']);
    expect(api.phases('acme', 42).map((p) => p.name)).toEqual(['p0', 'p1', 'theirs']);
  });

  it('a 2xx is final: an answer it cannot use still counts as applied, is journaled as acknowledged, and is never sent again', async () => {
    const api = new FakeApi({ journalPath: journal.path });
    api.addAction('acme', 42);
    const d = deps(api);
    const tc = api.tenant('acme');
    api.tenant = () => ({ ...tc, appendPhase: async (id, p) => {
      await tc.appendPhase(id, p);
      throw new ApiError('malformed response from POST /api/v1/actions/42/append_phase: phases is missing', { status: 201, outcome: 'unknown' });
    } });
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a'))]), d);
    expect(report.results[0]).toMatchObject({ status: 'applied' });
    expect(report.results[0]!.message).toMatch(/accepted it \(201\)/);
    expect(journal.open()).toEqual([expect.objectContaining({ name: 'a', state: 'acknowledged' })]);
    expect(api.appendsReceived).toHaveLength(1);
  });

  it('an append accepted but not yet shown by reads stops the action for this run instead of being sent again', async () => {
    const api = fakeWith({});
    api.addAction('acme', 42, [phase('p0')]);
    const d = deps(api);
    const tc = api.tenant('acme');
    // A server behind a queue: the answer and the reads show the action as it was.
    api.tenant = () => ({ ...tc,
      appendPhase: async (id, p) => { const before = await tc.getAction(id); await tc.appendPhase(id, p); api.actions.get('acme/42')!.phases.pop(); hidden.push(p); return before!; },
      getAction: (id) => tc.getAction(id),
    });
    const hidden: unknown[] = [];
    const report = await executePlan(planOf([1, 2].map((i) => phaseChange('acme', 42, i, phase(`p${i}`)))), d);
    expect(report.results.map((r) => r.status)).toEqual(['applied', 'skipped']);
    expect(report.results[1]!.message).toMatch(/accepted phase 1 but its reads do not show it yet/);
    expect(hidden).toHaveLength(1);
    expect(journal.open()).toEqual([expect.objectContaining({ name: 'p1', state: 'acknowledged' })]);
  });

  it('a duplicate that a concurrent append created is reported as diverged, and the action stops', async () => {
    const api = fakeWith({});
    api.addAction('acme', 42, [phase('p0')]);
    const d = deps(api);
    const tc = api.tenant('acme');
    api.tenant = () => ({ ...tc, appendPhase: async (id, p) => { api.actions.get('acme/42')!.phases.push(structuredClone(p)); return tc.appendPhase(id, p); } });
    const report = await executePlan(planOf([1, 2].map((i) => phaseChange('acme', 42, i, phase(`p${i}`)))), d);
    expect(report.results.map((r) => r.status)).toEqual(['applied', 'skipped']);
    expect(report.diverged).toEqual([expect.stringMatching(/^action 42 in acme: no longer the YAML's first phases after phase 1 "p1" was appended: .*phase "p1" twice/)]);
  });

  it('an action left blocked by the journal gets nothing', async () => {
    const api = fakeWith({});
    api.addAction('acme', 42);
    const report = await executePlan(planOf([phaseChange('acme', 42, 0, phase('a')), phaseChange('acme', 42, 1, phase('b'))]),
      deps(api, { blocked: new Map([['acme\u000042', 'phase 0 "a" is in doubt']]) }));
    expect(report.results.map((r) => r.status)).toEqual(['failed', 'skipped']);
    expect(report.results[0]!.message).toBe('nothing is appended to action 42 while phase 0 "a" is in doubt');
    expect(api.appendsReceived).toEqual([]);
  });

  it('a holder that lost the lock sends nothing more', async () => {
    const api = fakeWith({});
    let checks = 0;
    const plan = planOf([firmware('acme', '1.0.0', api), firmware('acme', '1.0.1', api), firmware('acme', '1.0.2', api)]);
    const report = await executePlan(plan, deps(api, {
      concurrency: 1,
      // Two checks per write: before it starts, and after its fresh read, just before the send.
      assertLockHeld: () => (++checks > 2 ? Promise.reject(new Error('the lock .dus-sync/apply.lock was taken over by another process')) : Promise.resolve()),
    }));
    expect(report.results.map((r) => r.status)).toEqual(['applied', 'failed', 'skipped']);
    expect(report.results[2]!.message).toMatch(/skipped because the lock .* was taken over/);
    expect(api.puts).toEqual(['acme/1.0.0']);
  });

  it('a lock taken over while the fresh read was on its way: the append decided on that read is not sent', async () => {
    const api = fakeWith({});
    api.addAction('acme', 1);
    let checks = 0;
    const d = deps(api, {
      concurrency: 1,
      // The first check (before the read) passes; the one after the read finds the lock gone.
      assertLockHeld: () => (++checks > 1 ? Promise.reject(new Error('the lock state/apply.lock was taken over by another process')) : Promise.resolve()),
    });
    const report = await executePlan(planOf([phaseChange('acme', 1, 0, phase('a')), phaseChange('acme', 1, 1, phase('b'))]), d);
    expect(report.results.map((r) => r.status)).toEqual(['failed', 'skipped']);
    expect(report.results[0]!.message).toMatch(/taken over/);
    expect(api.phases('acme', 1)).toEqual([]);
    expect(d.journal.open()).toEqual([]);
  });

  it('a write held back just before it is sent (a window that opened, a file that changed) is skipped, and so is the rest of its action', async () => {
    const api = fakeWith({});
    api.addAction('acme', 7);
    let writes = 0;
    const plan = planOf([
      phaseChange('acme', 7, 0, phase('a')), phaseChange('acme', 7, 1, phase('b')), phaseChange('acme', 7, 2, phase('c')), firmware('acme', '1.0.0', api),
    ]);
    const d = deps(api, {
      concurrency: 1,
      // The first write goes; then the deny window "opens".
      beforeWrite: () => (++writes > 1 ? 'held by deny window freeze until 2030-01-01T00:00:00.000Z' : undefined),
    });
    const report = await executePlan(plan, d);
    const byKey = new Map(report.results.map((r) => [`${r.change.kind}:${r.change.key}:${'index' in r.change ? r.change.index : ''}`, r]));
    expect(byKey.get('phase:7:0')!.status).toBe('applied');
    expect(byKey.get('phase:7:1')).toMatchObject({ status: 'skipped', message: expect.stringContaining('deny window freeze') });
    expect(byKey.get('phase:7:2')).toMatchObject({ status: 'skipped', message: expect.stringContaining('skipped because held by deny window') });
    expect(byKey.get('firmware:1.0.0:'), JSON.stringify(report.results.map((r) => r.message))).toMatchObject({ status: 'skipped' });
    expect(api.phases('acme', 7)).toHaveLength(1);
    expect(api.puts).toEqual([]);
    // Nothing held back is left in doubt.
    expect(d.journal.open()).toEqual([]);
  });

  it('a deactivation the plan allowed only because of an activation in the same run is not sent when that activation fails', async () => {
    const setup = (failing: string | undefined) => {
      const api = fakeWith({ putFault: (v) => v === failing });
      api.addFirmware('acme', '1.1.0', {}, 'b1');
      api.addFirmware('acme', '1.2.0', { is_deactivated: true }, 'b1');
      api.addFirmware('acme', '2.0.0', { dependencies: [{ component_name: 'boot', min_version: '1.1.0' }] }, 'b2');
      api.records.get('acme/1.1.0')!.component_name = 'boot';
      api.records.get('acme/1.2.0')!.component_name = 'boot';
      const change = (key: string, deactivate: boolean): FirmwareChange => ({
        tenant: 'acme', kind: 'firmware', op: 'update', key, component_name: 'boot',
        before: { is_deactivated: !deactivate }, after: { is_deactivated: deactivate },
        body: { is_deactivated: deactivate, uncompressed_size: 1000, dependencies: [] },
      });
      // The deactivation first in the plan: the executor still runs it after the activation.
      return { api, plan: planOf([change('1.1.0', true), change('1.2.0', false)]) };
    };
    const failed = setup('1.2.0');
    const report = await executePlan(failed.plan, deps(failed.api));
    expect(report.results.map((r) => `${r.change.key}:${r.status}`)).toEqual(['1.1.0:failed', '1.2.0:failed']);
    expect(report.results[0]!.message).toMatch(/firmware 1\.1\.0 was not deactivated: the plan counted on firmware 1\.2\.0, which was not applied.*modem 2\.0\.0 \(needs boot >= 1\.1\.0\)/);
    expect(failed.api.puts).not.toContain('acme/1.1.0');
    // When the activation goes through, so does the deactivation.
    const ok = setup(undefined);
    const fine = await executePlan(ok.plan, deps(ok.api));
    expect(fine.results.map((r) => r.status)).toEqual(['applied', 'applied']);
    expect(ok.api.puts).toEqual(['acme/1.2.0', 'acme/1.1.0']);
  });

  it('a deactivation of a record whose live is_deactivated is unknown (null: active) is checked again like any other', async () => {
    const api = fakeWith({ putFault: (v) => v === '1.2.0' });
    api.addFirmware('acme', '1.1.0', { is_deactivated: null as unknown as boolean }, 'b1');
    api.addFirmware('acme', '1.2.0', { is_deactivated: true }, 'b1');
    api.addFirmware('acme', '2.0.0', { dependencies: [{ component_name: 'boot', min_version: '1.1.0' }] }, 'b2');
    api.records.get('acme/1.1.0')!.component_name = 'boot';
    api.records.get('acme/1.2.0')!.component_name = 'boot';
    const plan = planOf([
      // null live: the plan's before has no is_deactivated, its after says true.
      { tenant: 'acme', kind: 'firmware', op: 'update', key: '1.1.0', component_name: 'boot', before: {}, after: { is_deactivated: true },
        body: { is_deactivated: true, uncompressed_size: 1000, dependencies: [] } },
      { tenant: 'acme', kind: 'firmware', op: 'update', key: '1.2.0', component_name: 'boot', before: { is_deactivated: true }, after: { is_deactivated: false },
        body: { is_deactivated: false, uncompressed_size: 1000, dependencies: [] } },
    ]);
    const report = await executePlan(plan, deps(api));
    expect(report.results.map((r) => `${r.change.key}:${r.status}`)).toEqual(['1.1.0:failed', '1.2.0:failed']);
    expect(report.results[0]!.message).toMatch(/firmware 1\.1\.0 was not deactivated: the plan counted on firmware 1\.2\.0/);
    expect(api.puts).not.toContain('acme/1.1.0');
  });

  it('when deactivating a dependent fails, what it depends on is not deactivated after it', async () => {
    const api = fakeWith({ putFault: (v) => v === '2.0.0' });
    api.addFirmware('acme', '1.1.0', {}, 'b1');
    api.addFirmware('acme', '2.0.0', { dependencies: [{ component_name: 'boot', min_version: '1.1.0' }] }, 'b2');
    api.records.get('acme/1.1.0')!.component_name = 'boot';
    const off = (key: string, component: string): FirmwareChange => ({
      tenant: 'acme', kind: 'firmware', op: 'update', key, component_name: component,
      before: { is_deactivated: false }, after: { is_deactivated: true },
      body: { is_deactivated: true, uncompressed_size: 1000, dependencies: key === '2.0.0' ? [{ component_name: 'boot', min_version: '1.1.0' }] : [] },
    });
    const report = await executePlan(planOf([off('1.1.0', 'boot'), off('2.0.0', 'modem')]), deps(api));
    expect(report.results.map((r) => `${r.change.key}:${r.status}`)).toEqual(['1.1.0:failed', '2.0.0:failed']);
    expect(report.results[0]!.message).toMatch(/firmware 1\.1\.0 was not deactivated: the plan counted on firmware 2\.0\.0/);
    expect(api.puts).toEqual([]);
  });

  it('deactivations of a component nothing depends on go at once; those of one something depends on, one at a time after them', async () => {
    const run = async (failing?: string) => {
      const api = fakeWith({ putFault: (v) => v === failing });
      const modems = ['2.0.0', '2.1.0', '2.2.0', '2.3.0'];
      for (const v of modems) api.addFirmware('acme', v, { dependencies: [{ component_name: 'boot', min_version: '1.1.0' }] }, 'b2');
      api.addFirmware('acme', '1.1.0', { dependencies: [{ component_name: 'dsp', min_version: '1.0.0' }] }, 'b1');
      api.addFirmware('acme', '1.0.9', { is_deactivated: true }, 'b1');
      api.records.get('acme/1.1.0')!.component_name = 'boot';
      api.records.get('acme/1.0.9')!.component_name = 'boot';
      const off = (key: string, component: string, dependencies: FirmwareChange['body']['dependencies']): FirmwareChange => ({
        tenant: 'acme', kind: 'firmware', op: 'update', key, component_name: component,
        before: { is_deactivated: false }, after: { is_deactivated: true },
        body: { is_deactivated: true, uncompressed_size: 1000, dependencies },
      });
      const plan = planOf([
        off('1.1.0', 'boot', [{ component_name: 'dsp', min_version: '1.0.0' }]),
        ...modems.map((v) => off(v, 'modem', [{ component_name: 'boot', min_version: '1.1.0' }])),
      ]);
      const report = await executePlan(plan, deps(api));
      return { api, report };
    };
    const { api, report } = await run();
    expect(report.results.every((r) => r.status === 'applied')).toBe(true);
    // The modems at once (nothing depends on modem), then boot, which the modems depend on.
    expect(api.maxInFlight).toBeGreaterThan(1);
    expect(api.puts[api.puts.length - 1]).toBe('acme/1.1.0');
    // One modem stays active (its deactivation failed): boot 1.1.0, the last boot it can use, stays.
    const failed = await run('2.2.0');
    const byKey = new Map(failed.report.results.map((r) => [r.change.key, r]));
    expect(byKey.get('2.2.0')!.status).toBe('failed');
    expect(byKey.get('1.1.0')!.status).toBe('failed');
    expect(byKey.get('1.1.0')!.message).toMatch(/firmware 1\.1\.0 was not deactivated: the plan counted on firmware 2\.2\.0/);
    expect(failed.api.puts).not.toContain('acme/1.1.0');
  });

  it('a PUT decided on a read is not sent when the lock was taken over meanwhile', async () => {
    const api = fakeWith({});
    let checks = 0;
    const report = await executePlan(planOf([firmware('acme', '1.0.0', api)]), deps(api, {
      assertLockHeld: () => (++checks > 1 ? Promise.reject(new Error('the lock state/apply.lock was taken over by another process')) : Promise.resolve()),
    }));
    expect(report.results[0]).toMatchObject({ status: 'failed' });
    expect(api.puts).toEqual([]);
  });

  it('a PUT is refused when a field the YAML does not manage moved since the plan; never overwritten', async () => {
    const api = fakeWith({});
    const change = firmware('acme', '1.0.0', api);
    const d = deps(api);
    api.records.get('acme/1.0.0')!.fields.uncompressed_size = 999;
    const report = await executePlan(planOf([change]), d);
    expect(report.results[0]).toMatchObject({ status: 'failed' });
    expect(report.results[0]!.message).toMatch(/firmware 1\.0\.0 changed since the plan was made \(uncompressed_size 1000 → 999\); it was not written/);
    expect(api.puts).toEqual([]);
  });

  it('a PUT is refused when a field of a dependency entry the YAML does not manage moved since the plan', async () => {
    const api = fakeWith({});
    api.addFirmware('acme', '1.0.0');
    const deps0 = [{ component_name: 'boot', min_version: '1.2.0', max_version: '1.9' }];
    api.records.get('acme/1.0.0')!.fields.dependencies = deps0;
    const change: FirmwareChange = { ...firmware('acme', '1.0.0'), body: { is_deactivated: true, uncompressed_size: 1000, dependencies: deps0.map((d) => ({ ...d })) } };
    const d = deps(api);
    const moved = [{ component_name: 'boot', min_version: '1.2.0', max_version: '2.0' }];
    api.records.get('acme/1.0.0')!.fields.dependencies = moved;
    const report = await executePlan(planOf([change]), d);
    expect(report.results[0]).toMatchObject({ status: 'failed' });
    expect(report.results[0]!.message).toMatch(/changed since the plan was made \(dependencies \[\{"component_name":"boot","max_version":"1\.9","min_version":"1\.2\.0"\}\] → .*"2\.0"/);
    expect(api.puts).toEqual([]);
  });

  it('a PUT whose record already holds the desired values is not sent', async () => {
    const api = fakeWith({});
    const change = firmware('acme', '1.0.0', api);
    const d = deps(api);
    api.records.get('acme/1.0.0')!.fields.is_deactivated = true;
    const report = await executePlan(planOf([change]), d);
    expect(report.results[0]).toMatchObject({ status: 'skipped', message: 'it already has the desired values; nothing sent' });
    expect(api.puts).toEqual([]);
  });

  it('a firmware no longer in its bundle is not written', async () => {
    const api = fakeWith({});
    const change = firmware('acme', '1.0.0', api);
    const d = deps(api);
    api.records.get('acme/1.0.0')!.bundle = 'elsewhere';
    api.addFirmware('acme', '9.9.9');
    const report = await executePlan(planOf([change]), d);
    expect(report.results[0]!.message).toMatch(/no longer in bundle 2024\.01/);
    expect(api.puts).toEqual([]);
  });

  it('never puts a key into a failure message', async () => {
    const { registerSecret, clearSecretsForTests } = await import('../../src/redact.js');
    registerSecret('sk-live-very-secret');
    try {
      const api = fakeWith({});
      const tc = api.tenant('acme');
      api.tenant = () => ({ ...tc, putFirmware: () => Promise.reject(new Error('rejected key sk-live-very-secret.\nsee logs')) });
      const report = await executePlan(planOf([firmware('acme', '1.0.0', api)]), deps(api));
      expect(report.results[0]!.message).toBe('rejected key [REDACTED]. see logs');
    } finally {
      clearSecretsForTests();
    }
  });
});

function rateLimited(): Error {
  return new ApiError('append_phase answered 429', { status: 429, retryable: true, outcome: 'not-sent' });
}

describe('executePlan under an adaptive limit', () => {
  /** The fake, with a per-tenant limit the test moves as an AIMD limiter would. */
  function adaptive(api: FakeApi, limit: { now: number }) {
    return { tenant: (name: string) => ({ ...api.tenant(name), concurrencyNow: () => limit.now }) };
  }

  it('runs no more chains of a tenant than its limit allows now, however wide the ceiling, and keeps each action\'s appends in order', async () => {
    const api = fakeWith({ latencyTurns: 5 });
    const changes: Change[] = Array.from({ length: 30 }, (_, i) => firmware('acme', `1.0.${i}`, api));
    for (let a = 0; a < 6; a++) {
      api.addAction('acme', a);
      changes.push(phaseChange('acme', a, 2, phase('p2')), phaseChange('acme', a, 0, phase('p0')), phaseChange('acme', a, 1, phase('p1')));
    }
    const limit = { now: 2 };
    const report = await executePlan(planOf(changes), { ...deps(api, { concurrency: 64 }), client: adaptive(api, limit) });
    expect(report.applied).toBe(48);
    expect(api.maxInFlight).toBe(2);
    for (let a = 0; a < 6; a++) expect(api.phases('acme', a).map((p) => p.name)).toEqual(['p0', 'p1', 'p2']);
    expect(api.violations).toEqual([]);
  });

  it('follows the limit as it grows during the run, up to the ceiling', async () => {
    const api = fakeWith({ latencyTurns: 5 });
    const changes: Change[] = Array.from({ length: 60 }, (_, i) => firmware('acme', `1.0.${i}`, api));
    const limit = { now: 1 };
    const grow = setInterval(() => { limit.now = Math.min(limit.now + 1, 40); }, 0);
    try {
      const report = await executePlan(planOf(changes), { ...deps(api, { concurrency: 5 }), client: adaptive(api, limit) });
      expect(report.applied).toBe(60);
    } finally {
      clearInterval(grow);
    }
    expect(api.maxInFlight).toBeLessThanOrEqual(5);
    expect(api.maxInFlight).toBeGreaterThan(1);
  });
});

describe('the fake API\'s check that an append\'s intent is in the journal', () => {
  // A read of the journal can see another chain's write(2) under way, cut at a 4 KiB page
  // boundary; the check parsed that half line and threw, and the executor (rightly) took the
  // append as in doubt: one change of 48 not applied, now and then, in the adaptive-limit test.
  it('reads whole lines only: a line another chain is still writing does not fail the append', async () => {
    const api = fakeWith({});
    api.addAction('acme', 1);
    const tc = api.tenant('acme');
    api.tenant = () => ({ ...tc, appendPhase: async (id, p) => {
      const size = statSync(journal.path).size;
      appendFileSync(journal.path, '{"type":"intent","id":"');
      try {
        return await tc.appendPhase(id, p);
      } finally {
        truncateSync(journal.path, size);
      }
    } });
    const report = await executePlan(planOf([phaseChange('acme', 1, 0, phase('a')), phaseChange('acme', 1, 1, phase('b'))]), deps(api));
    expect(report.results.map((r) => r.status)).toEqual(['applied', 'applied']);
    expect(api.violations).toEqual([]);
  });

  it('an intent whose line is not whole is not durable: the append is a violation', async () => {
    const path = join(dir, 'torn.jsonl');
    const intent = JSON.stringify({ type: 'intent', id: 'i1', tenant: 'acme', action_id: 1, index: 0, name: 'a', digest: 'd' });
    writeFileSync(path, intent.slice(0, 40));
    const api = new FakeApi({ journalPath: path });
    api.addAction('acme', 1);
    await api.tenant('acme').appendPhase(1, phase('a'));
    expect(api.violations).toEqual(['append of "a" on action 1 arrived without a pending intent in the journal']);
    writeFileSync(path, `${intent}\n`);
    await api.tenant('acme').appendPhase(1, phase('a'));
    expect(api.violations).toHaveLength(1);
  });
});
