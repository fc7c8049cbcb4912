// When dus-sync first saw each phase of a gated action triggered (docs/rollout-control.md).
// The API says whether a phase has triggered (phases_triggered) but not when, so min_soak counts
// from the first read that showed it. The times are kept in triggered.json beside the journal,
// so that a restart (a new pod, the next CI run) does not start the soak again.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { redact } from '../redact.js';
import { writeFileAtomic } from '../atomic-write.js';
import { ensurePrivateDir } from './private-dir.js';
import type { Clock, DesiredState, LiveState, Logger } from '../model/index.js';
import { elapsedMs, monotonicMs, stamp } from './journal.js';

export const TRIGGER_TIMES_FILE = 'triggered.json';

interface Entry {
  /**
   * The API (normalized base URL) the phase was seen on: two services may share a state folder
   * (DUS_SYNC_STATE_DIR, one CI runner for staging and prod), and a phase that soaked on one
   * must not count as soaked on the other.
   */
  readonly api: string;
  readonly tenant: string;
  readonly action: number;
  readonly index: number;
  /** The phase's name, so that a time is never carried over to another phase at the same index. */
  readonly name: string;
  /** ISO 8601: when a read first showed it triggered. */
  readonly first_seen: string;
  /** The same moment on the boot's monotonic clock: a wall clock stepped forward must not end a soak early. */
  readonly boot?: string;
  readonly mono?: number;
}

/** Times outside these years are not ones dus-sync wrote (and break date arithmetic). */
const EARLIEST = Date.UTC(2000, 0, 1);
const LATEST = Date.UTC(9999, 0, 1);

export function triggerTimesPath(journalPath: string): string {
  return join(dirname(journalPath), TRIGGER_TIMES_FILE);
}

function keyOf(api: string, tenant: string, action: number, index: number): string {
  return `${api}\u0000${tenant}\u0000${action}\u0000${index}`;
}

function validEntry(e: Entry): boolean {
  if (typeof e?.api !== 'string' || typeof e.tenant !== 'string' || !Number.isInteger(e.action) || !Number.isInteger(e.index) || typeof e.name !== 'string') return false;
  const at = typeof e.first_seen === 'string' ? Date.parse(e.first_seen) : NaN;
  if (!(at >= EARLIEST && at <= LATEST)) return false;
  return (e.boot === undefined && e.mono === undefined) || (typeof e.boot === 'string' && Number.isFinite(e.mono) && (e.mono as number) >= 0);
}

function read(path: string, log: Logger): Map<string, Entry> {
  const out = new Map<string, Entry>();
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn(`could not read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)}); soak times start again from now`);
    return out;
  }
  try {
    const doc = JSON.parse(text) as { version?: number; phases?: unknown };
    if (doc.version !== 1 || !Array.isArray(doc.phases)) throw new Error('not version 1');
    // An entry without the API it was seen on (or with an impossible time) is dropped: its
    // phase soaks again from now, the safe direction.
    for (const e of doc.phases as Entry[]) {
      if (!validEntry(e)) continue;
      out.set(keyOf(e.api, e.tenant, e.action, e.index), e);
    }
  } catch {
    log.warn(`${path} is not a trigger-times file dus-sync wrote; soak times start again from now`);
  }
  return out;
}

/**
 * Records, for every gated action declared, the phases live shows triggered for the first time
 * on this API (at `now`), and returns when each was first seen, as the time it would be if no
 * clock had been stepped since: within one boot the soak is measured on the monotonic clock
 * (the smaller of the two, as for the settle window). A file that cannot be written is warned
 * about; the times of this run are still used. Entries of this API's tenants that no declared
 * gated action needs any more are dropped, so the file does not grow forever.
 */
export async function observeTriggers(path: string, address: string, desired: DesiredState, live: LiveState, now: number, log: Logger, monotonic: () => number = monotonicMs): Promise<(tenant: string, actionId: number, index: number) => number | undefined> {
  const gated = desired.actions.filter((a) => a.pacing === 'gated');
  if (gated.length === 0) return () => undefined;
  // The API's address as the state folder keeps it: redacted (a key in base_url's path is never written there).
  const api = redact(address);
  const seen = read(path, log);
  let changed = false;
  const wanted = new Set<string>();
  for (const a of gated) {
    const action = live.tenants.get(a.tenant)?.actions.get(a.id);
    if (!action) continue;
    action.phases_triggered?.forEach((t, index) => {
      // Kept redacted (a server may send a key back in a name): compared redacted too.
      const name = redact(String(action.phases[index]?.name ?? ''));
      const k = keyOf(api, a.tenant, a.id, index);
      wanted.add(k);
      const known = seen.get(k);
      if (t !== true || (known && known.name === name)) return;
      seen.set(k, { api, tenant: a.tenant, action: a.id, index, name, first_seen: new Date(now).toISOString(), ...stamp(monotonic) });
      changed = true;
    });
  }
  // What this run can vouch for: entries of its API and tenants (a --tenant run keeps the others).
  const tenants = new Set(live.tenants.keys());
  for (const [k, e] of seen) {
    if (e.api === api && tenants.has(e.tenant) && !wanted.has(k) && live.tenants.get(e.tenant)?.actions.has(e.action) !== true) {
      seen.delete(k);
      changed = true;
    }
  }
  if (changed) {
    const phases = [...seen.values()].sort((x, y) => (x.api < y.api ? -1 : x.api > y.api ? 1 : x.tenant < y.tenant ? -1 : x.tenant > y.tenant ? 1 : x.action - y.action || x.index - y.index));
    try {
      await ensurePrivateDir(dirname(path), 'the times phases were first seen triggered');
      writeFileAtomic(path, JSON.stringify({ version: 1, phases }, null, 2) + '\n', { mode: 0o600 });
    } catch (err) {
      log.warn(`could not save when phases were first seen triggered to ${path} (${(err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err))}); a restart starts their soak again`);
    }
  }
  const clock: Clock = { now: () => now, monotonic, sleep: () => Promise.resolve() };
  return (tenant, actionId, index) => {
    const e = seen.get(keyOf(api, tenant, actionId, index));
    return e ? now - Math.max(0, elapsedMs(Date.parse(e.first_seen), e.boot, e.mono, clock)) : undefined;
  };
}
