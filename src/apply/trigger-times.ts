// When dus-sync first saw each phase of a gated action triggered (docs/rollout-control.md).
// The API says whether a phase has triggered (phases_triggered) but not when, so min_soak counts
// from the first read that showed it. The times are kept in triggered.json beside the journal,
// so that a restart (a new pod, the next CI run) does not start the soak again.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../atomic-write.js';
import { ensurePrivateDir } from './private-dir.js';
import type { DesiredState, LiveState, Logger } from '../model/index.js';

export const TRIGGER_TIMES_FILE = 'triggered.json';

interface Entry {
  readonly tenant: string;
  readonly action: number;
  readonly index: number;
  /** The phase's name, so that a time is never carried over to another phase at the same index. */
  readonly name: string;
  /** ISO 8601: when a read first showed it triggered. */
  readonly first_seen: string;
}

export function triggerTimesPath(journalPath: string): string {
  return join(dirname(journalPath), TRIGGER_TIMES_FILE);
}

function keyOf(tenant: string, action: number, index: number): string {
  return `${tenant}\u0000${action}\u0000${index}`;
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
    for (const e of doc.phases as Entry[]) {
      if (typeof e?.tenant !== 'string' || !Number.isInteger(e.action) || !Number.isInteger(e.index) || typeof e.name !== 'string' || Number.isNaN(Date.parse(e.first_seen))) continue;
      out.set(keyOf(e.tenant, e.action, e.index), e);
    }
  } catch {
    log.warn(`${path} is not a trigger-times file dus-sync wrote; soak times start again from now`);
  }
  return out;
}

/**
 * Records, for every gated action declared, the phases live shows triggered for the first time
 * (at `now`), and returns when each was first seen. A file that cannot be written is warned
 * about; the times of this run are still used.
 */
export async function observeTriggers(path: string, desired: DesiredState, live: LiveState, now: number, log: Logger): Promise<(tenant: string, actionId: number, index: number) => number | undefined> {
  const gated = desired.actions.filter((a) => a.pacing === 'gated');
  if (gated.length === 0) return () => undefined;
  const seen = read(path, log);
  let changed = false;
  for (const a of gated) {
    const action = live.tenants.get(a.tenant)?.actions.get(a.id);
    if (!action) continue;
    action.phases_triggered?.forEach((t, index) => {
      const name = String(action.phases[index]?.name ?? '');
      const k = keyOf(a.tenant, a.id, index);
      const known = seen.get(k);
      if (t !== true || (known && known.name === name)) return;
      seen.set(k, { tenant: a.tenant, action: a.id, index, name, first_seen: new Date(now).toISOString() });
      changed = true;
    });
  }
  if (changed) {
    const phases = [...seen.values()].sort((x, y) => (x.tenant < y.tenant ? -1 : x.tenant > y.tenant ? 1 : x.action - y.action || x.index - y.index));
    try {
      await ensurePrivateDir(dirname(path), 'the times phases were first seen triggered');
      writeFileAtomic(path, JSON.stringify({ version: 1, phases }, null, 2) + '\n', { mode: 0o600 });
    } catch (err) {
      log.warn(`could not save when phases were first seen triggered to ${path} (${(err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err))}); a restart starts their soak again`);
    }
  }
  return (tenant, actionId, index) => {
    const e = seen.get(keyOf(tenant, actionId, index));
    return e ? Date.parse(e.first_seen) : undefined;
  };
}
