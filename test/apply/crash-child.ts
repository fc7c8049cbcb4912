// The apply side of one run, as a separate process the crash test can SIGKILL at any moment:
// settle the journal, plan the missing phases, execute, compact. Bundled by crash.test.ts.
import { createApiClient } from '../../src/api/client.js';
import { executePlan } from '../../src/apply/executor.js';
import { Journal, settleJournal } from '../../src/apply/journal.js';
import type { Action, Clock, Logger, PhaseChange } from '../../src/model/index.js';

const env = (name: string): string => process.env[name] ?? '';
const clock: Clock = { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) };
const log: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

const actions = JSON.parse(env('CRASH_DESIRED')) as Record<string, string[]>;
const client = createApiClient({ baseUrl: env('CRASH_URL'), keys: new Map([['acme', env('CRASH_KEY')]]) });
const journal = await Journal.open(env('CRASH_JOURNAL'));
const recovered = await settleJournal(journal, client, log, { clock, settleMs: Number(env('CRASH_SETTLE_MS')) });
process.stdout.write(`recovered ${recovered.resolved}\n`);

const changes: PhaseChange[] = [];
const read = new Map<number, Action | null>();
for (const [id, names] of Object.entries(actions)) {
  const action = await client.tenant('acme').getAction(Number(id));
  read.set(Number(id), action);
  const live = action?.phases ?? [];
  for (let i = live.length; i < names.length; i++) {
    changes.push({ tenant: 'acme', kind: 'phase', op: 'append', key: id, action_id: Number(id), index: i, after: { name: names[i]!, trigger_on: {}, info: { wave: i } } });
  }
}
process.stdout.write(`executing ${changes.length}\n`);
const report = await executePlan({ format_version: 1, changes, conflicts: [], errors: [], summary: { changes: changes.length, conflicts: 0, errors: 0, unchanged: 0 } }, {
  client, journal, log, clock, concurrency: 3, readBackPauseMs: 50, blocked: recovered.blocked,
  live: { tenants: new Map([['acme', { firmwares: new Map(), actions: read }]]) },
});
// As apply's verify step does: reads of the touched actions confirm the acknowledged appends.
for (const id of Object.keys(actions)) {
  const action = await client.tenant('acme').getAction(Number(id));
  if (action) await journal.confirm('acme', action);
}
if (report.failed === 0) await journal.compact();
await journal.close();
await client.close();
process.stdout.write(`done ${report.applied} ${report.failed}\n`);
