// The intent journal (SPEC section 3): one JSON line per append_phase intent, fsync'd before
// the request leaves, and one line per outcome. An intent without an outcome is an append
// whose fate is unknown (the process died or lost the answer); the next apply reads the
// action back to settle it before planning anything new.
import { randomUUID } from 'node:crypto';
import { mkdir, open, readFile, chmod } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Clock, Logger } from '../model/index.js';
import type { TenantClient } from '../api/types.js';
import { redact } from '../redact.js';
import { phaseDigest } from './digest.js';

export interface Intent {
  id: string;
  tenant: string;
  action_id: number;
  index: number;
  name: string;
  /** sha256 of phaseDigestInput(phase). */
  digest: string;
  at: string;
}

export type Outcome = 'applied' | 'not-applied';

type Line =
  | ({ type: 'intent' } & Intent)
  | { type: 'outcome'; id: string; outcome: Outcome; at: string };

export class Journal {
  // Writes are chained so that lines never interleave and each fsync covers its own line.
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(readonly path: string, private handle: FileHandle | null) {}

  /** Creates the folder (0700) and the file (0600) when needed. */
  static async open(path: string): Promise<Journal> {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const handle = await open(path, 'a', 0o600);
    // An existing file created by hand or under a loose umask is tightened: it names actions and phases.
    await chmod(path, 0o600);
    return new Journal(path, handle);
  }

  /** Intents without an outcome: appends a crashed or interrupted run left in doubt. */
  async pending(): Promise<Intent[]> {
    await this.queue;
    return pendingOf(parseLines(await readFile(this.path, 'utf8')));
  }

  /** Durable (fsync'd) before it resolves, so the request may be sent only after. */
  async recordIntent(i: Omit<Intent, 'id' | 'at'>): Promise<Intent> {
    const intent: Intent = {
      id: randomUUID(), tenant: i.tenant, action_id: i.action_id, index: i.index,
      name: i.name, digest: i.digest, at: new Date().toISOString(),
    };
    await this.append({ type: 'intent', ...intent });
    return intent;
  }

  async recordOutcome(id: string, outcome: Outcome): Promise<void> {
    await this.append({ type: 'outcome', id, outcome, at: new Date().toISOString() });
  }

  /**
   * Drops every settled record. After a clean run that empties the file (keeping it and its
   * 0600 mode); an intent still in doubt is kept, so calling this is always safe.
   */
  async compact(): Promise<void> {
    await this.enqueue(async (h) => {
      const keep = pendingOf(parseLines(await readFile(this.path, 'utf8')));
      await h.truncate(0);
      if (keep.length > 0) await h.write(keep.map((i) => JSON.stringify({ type: 'intent', ...i }) + '\n').join(''));
      await h.sync();
    });
  }

  async close(): Promise<void> {
    await this.queue.catch(() => undefined);
    const h = this.handle;
    this.handle = null;
    await h?.close();
  }

  private append(line: Line): Promise<void> {
    return this.enqueue(async (h) => {
      await h.write(JSON.stringify(line) + '\n');
      await h.sync();
    });
  }

  private enqueue(op: (h: FileHandle) => Promise<void>): Promise<void> {
    const run = this.queue.catch(() => undefined).then(() => {
      if (this.handle === null) throw new Error(`the journal ${this.path} is closed`);
      return op(this.handle);
    });
    this.queue = run;
    return run;
  }
}

function pendingOf(lines: readonly Line[]): Intent[] {
  const settled = new Set(lines.filter((l) => l.type === 'outcome').map((l) => l.id));
  return lines
    .filter((l): l is { type: 'intent' } & Intent => l.type === 'intent' && !settled.has(l.id))
    .map(({ type: _type, ...intent }) => intent);
}

function parseLines(text: string): Line[] {
  const out: Line[] = [];
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    // A crash in the middle of a write leaves a torn last line; its request was never sent.
    try {
      const v = JSON.parse(raw) as Partial<Line> | null;
      if (isLine(v)) out.push(v);
    } catch { /* torn line */ }
  }
  return out;
}

function isLine(v: unknown): v is Line {
  if (v === null || typeof v !== 'object') return false;
  const o = v as Record<string, unknown>;
  if (o.type === 'outcome') return typeof o.id === 'string' && (o.outcome === 'applied' || o.outcome === 'not-applied');
  return o.type === 'intent' && typeof o.id === 'string' && typeof o.tenant === 'string'
    && typeof o.action_id === 'number' && typeof o.index === 'number' && typeof o.digest === 'string';
}

export interface RecoverOptions {
  /**
   * The tenants this run has keys for. Intents of other tenants stay in the journal, untouched,
   * with a warning: they cannot be read back here, and they do not affect this run's objects.
   */
  tenants?: ReadonlySet<string>;
  /** Sleeps while a young intent settles (default: the system clock). */
  clock?: Clock;
  /**
   * How old an intent must be before "the phase is not there" is believed (default 10 s): a
   * request sent just before the crash may still be on its way through the server, and
   * resending it too early would append the phase twice.
   */
  settleMs?: number;
}

export const DEFAULT_SETTLE_MS = 10_000;

const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * Settles every pending intent by reading its action: applied when the phase at that index has
 * the same digest, not applied otherwise. A read that fails propagates, and the intent stays
 * pending: nothing may be planned while an append is in doubt.
 */
export async function recoverJournal(
  journal: Journal,
  client: { tenant(name: string): TenantClient },
  log: Logger,
  opts: RecoverOptions = {},
): Promise<{ resolved: number; applied: number; notApplied: number }> {
  const pending = await journal.pending();
  const settleMs = opts.settleMs ?? DEFAULT_SETTLE_MS;
  const clock = opts.clock ?? systemClock;
  const young: Intent[] = [];
  let applied = 0;
  let notApplied = 0;
  const settle = async (intent: Intent, outcome: Outcome): Promise<void> => {
    await journal.recordOutcome(intent.id, outcome);
    if (outcome === 'applied') applied++;
    else notApplied++;
    log.info(redact(`journal: phase ${intent.index} "${intent.name}" of action ${intent.action_id} in ${intent.tenant} from an interrupted run was ${outcome === 'applied' ? 'applied' : 'not applied'}`));
  };
  const skipped = opts.tenants ? pending.filter((i) => !opts.tenants!.has(i.tenant)) : [];
  for (const intent of skipped) {
    log.warn(`journal: phase ${intent.index} "${intent.name}" of action ${intent.action_id} in ${intent.tenant} is in doubt since an interrupted run; it is left for a run that covers tenant ${intent.tenant} (dus-sync apply --tenant ${intent.tenant})`);
  }
  const mine = skipped.length > 0 ? pending.filter((i) => !skipped.includes(i)) : pending;
  for (const intent of mine) {
    const present = await isPresent(client, intent);
    if (present) await settle(intent, 'applied');
    else if (ageMs(intent, clock) < settleMs) young.push(intent);
    else await settle(intent, 'not-applied');
  }
  if (young.length > 0) {
    const wait = Math.max(...young.map((i) => settleMs - ageMs(i, clock)));
    log.info(`journal: waiting ${Math.ceil(wait / 1000)} s for ${young.length} append(s) sent just before the last run stopped`);
    await clock.sleep(wait);
    for (const intent of young) await settle(intent, (await isPresent(client, intent)) ? 'applied' : 'not-applied');
  }
  return { resolved: mine.length, applied, notApplied };
}

async function isPresent(client: { tenant(name: string): TenantClient }, intent: Intent): Promise<boolean> {
  const action = await client.tenant(intent.tenant).getAction(intent.action_id);
  const phase = action?.phases[intent.index];
  return phase !== undefined && phaseDigest(phase) === intent.digest;
}

function ageMs(intent: Intent, clock: Clock): number {
  const at = Date.parse(intent.at);
  return Number.isFinite(at) ? clock.now() - at : Number.POSITIVE_INFINITY;
}
