// Whatever the API does to our appends (refuses them, commits then drops the answer, fails
// before or after committing, cannot be read for a while), applying and re-planning until
// nothing is left gives exactly the desired phases, and no phase ever appears twice.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executePlan } from '../../src/apply/executor.js';
import { Journal, settleJournal } from '../../src/apply/journal.js';
import type { PhaseSpec } from '../../src/model/index.js';
import { FakeApi, fakeClock, memoryLog, phase, planPhases } from './fakes.js';
import type { AppendFault, ReadFault } from './fakes.js';

let dir: string;
let runs = 0;
beforeAll(async () => { dir = await mkdtemp(join(tmpdir(), 'dus-prop-')); });
afterAll(async () => { await rm(dir, { recursive: true, force: true }); });

const appendFault = fc.constantFrom<AppendFault>('ok', 'fail-before-send', 'drop-after-commit', '5xx-after-commit', '5xx-before-commit', '4xx');
const readFault = fc.constantFrom<ReadFault>('ok', 'ok', 'error');

const scenario = fc.record({
  actions: fc.array(fc.record({ live: fc.nat({ max: 2 }), extra: fc.integer({ min: 1, max: 4 }) }), { minLength: 1, maxLength: 3 }),
  appends: fc.array(appendFault, { maxLength: 25 }),
  reads: fc.array(readFault, { maxLength: 25 }),
  concurrency: fc.integer({ min: 1, max: 4 }),
});

function isPrefix(live: readonly { name: string }[], desired: readonly PhaseSpec[]): boolean {
  return live.length <= desired.length && live.every((p, i) => p.name === desired[i]!.name);
}

describe('executor under random failure schedules', () => {
  it('converges to the desired phases and never appends one twice', async () => {
    await fc.assert(fc.asyncProperty(scenario, async (s) => {
      const api = new FakeApi({
        appendFault: (n) => s.appends[n] ?? 'ok',
        readFault: (n) => s.reads[n] ?? 'ok',
        journalPath: join(dir, `run-${runs}`, 'journal.jsonl'),
      });
      // A folder per run: the history of appends beside the journal belongs to one service.
      const journal = await Journal.open(join(dir, `run-${runs++}`, 'journal.jsonl'));
      const desired = new Map<number, PhaseSpec[]>();
      s.actions.forEach((a, id) => {
        const phases = Array.from({ length: a.live + a.extra }, (_, i) => phase(`a${id}-p${i}`, i));
        desired.set(id, phases);
        api.addAction('acme', id, phases.slice(0, a.live));
      });
      const deps = { client: api, journal, log: memoryLog(), clock: fakeClock(), concurrency: s.concurrency };
      try {
        for (let round = 0; round < s.appends.length + s.reads.length + 5; round++) {
          // Each round is a run: settle what the last one left open, plan, apply.
          const { blocked } = await settleJournal(journal, api, deps.log, { settleMs: 0, clock: deps.clock });
          const plan = planPhases(api, 'acme', desired);
          if (plan.changes.length === 0) break;
          await executePlan(plan, { ...deps, live: api.snapshot(), blocked });
          for (const [id, phases] of desired) expect(isPrefix(api.phases('acme', id), phases)).toBe(true);
        }
        for (const [id, phases] of desired) expect(api.phases('acme', id).map((p) => p.name)).toEqual(phases.map((p) => p.name));
        const names = api.appendsReceived.map((a) => `${a.actionId}/${a.name}`);
        expect(new Set(names).size).toBe(names.length);
        expect(api.violations).toEqual([]);
      } finally {
        await journal.close();
      }
    }), { numRuns: 60 });
  });
});
