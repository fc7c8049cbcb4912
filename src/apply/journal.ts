// The intent journal (SPEC section 3): one JSON line per append_phase intent, fsync'd before
// the action is read for the last time and the request leaves, and one line per outcome:
//
//   intent        an append is about to be decided and maybe sent
//   acknowledged  the API answered 2xx: final, never sent again, kept until a read shows it
//   applied       a read showed the phase at its index: settled
//   not-applied   certainly not stored (not sent, refused with a 4xx, or absent from reads for
//                 the whole settle window): settled
//   absent        a read showed the phase absent (its first time starts the settle window)
//
// An intent without a final outcome is "open": pending (the outcome is unknown: the process died
// or the answer was lost) or acknowledged (stored by the API's word, not yet visible in reads).
// Every run settles the open intents of its tenants before it plans, and appends nothing to an
// action that still has one.
import { randomUUID } from 'node:crypto';
import { constants, readFileSync } from 'node:fs';
import { lstat, open as openFile, readdir, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Action, Clock, Logger } from '../model/index.js';
import type { TenantClient } from '../api/types.js';
import { StateError } from '../errors.js';
import { redact } from '../redact.js';
import { tenantFold } from '../tenant.js';
import { SETTLE_WINDOW_MS } from '../limits.js';
import { phaseDigest } from './digest.js';
import { appendAll, ensurePrivateDir, openPrivateFile, readWhole, replacePrivateFile } from './private-dir.js';
import { AppendHistory, HISTORY_FILE } from './history.js';

export interface Intent {
  id: string;
  tenant: string;
  action_id: number;
  index: number;
  name: string;
  /** sha256 of phaseDigestInput(phase). */
  digest: string;
  at: string;
  /**
   * The API it was sent to (base URL). Intents of another API are left alone: settling them by
   * reading this one would be reading the wrong service. Absent in journals of older versions.
   */
  api?: string;
  /** The boot and CLOCK_MONOTONIC (ms) when it was written: elapsed time that a wall-clock step cannot shorten. */
  boot?: string;
  mono?: number;
  /**
   * The git revision of the desired state that asked for this append (provenance: which commit
   * wrote a phase). Absent outside git and in journals of older versions.
   */
  revision?: { commit: string; dirty: boolean };
}

export type Outcome = 'applied' | 'not-applied' | 'acknowledged';

/** An intent whose fate is not settled. */
export interface OpenIntent extends Intent {
  readonly state: 'pending' | 'acknowledged';
  /** When a read first showed the phase absent (ms since the epoch). */
  readonly absentSince?: number;
  /** The same moment on the monotonic clock of boot `absentBoot` (ms). */
  readonly absentMono?: number;
  readonly absentBoot?: string;
  readonly acknowledgedAt?: string;
}

type Line =
  | ({ type: 'intent' } & Intent)
  | { type: 'outcome'; id: string; outcome: Outcome; at: string }
  | { type: 'absent'; id: string; at: string; boot?: string; mono?: number };

const OPEN_FLAGS = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT;
/** The journal holds only what is in doubt; past this it is not a journal of ours (or something is badly wrong). */
export const MAX_JOURNAL_BYTES = 64 * 1024 * 1024;

export class Journal {
  /** The desired state's git revision, stamped on every intent recorded from now on. */
  revision: { readonly commit: string; readonly dirty: boolean } | undefined;

  // Writes are chained so that lines never interleave and each fsync covers its own line.
  private queue: Promise<unknown> = Promise.resolve();

  /**
   * Every line of the file, parsed once at open and kept up to date by this, its only writer
   * (the lock keeps other processes out): reading the file again for every append would make a
   * run of n appends cost n² bytes.
   */
  private constructor(readonly path: string, private handle: FileHandle | null, private readonly lines: Line[],
    private readonly history: AppendHistory, readonly api: string | undefined) {
    this.index();
  }

  /** Creates the folder (0700) and the file (0600) when needed; never follows a symbolic link. */
  static async open(path: string, address?: string): Promise<Journal> {
    // The API's address as the state folder keeps it: redacted (a key in base_url's path is never written there).
    const api = address === undefined ? undefined : redact(address);
    await ensurePrivateDir(dirname(path), 'its journal and lock');
    const handle = await openPrivateFile(path, OPEN_FLAGS, 'the journal');
    try {
      const text = await readWhole(handle, MAX_JOURNAL_BYTES, `the journal ${path}`);
      // A last line without its newline (torn by a crash, or cut by a hand edit) must not swallow
      // the next record: end it first, so the torn line stays one unreadable line of its own.
      if (text.length > 0 && !text.endsWith('\n')) {
        await appendAll(handle, '\n');
        await handle.sync();
      }
      return new Journal(path, handle, parseLines(text), await AppendHistory.openBeside(path, api), api);
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /**
   * How many intents sent to `api` have an unknown outcome (pending), read without the lock and
   * without creating anything: for the in-doubt gauge of watch. 0 when there is no journal yet.
   */
  static async peekInDoubt(path: string, address?: string): Promise<number> {
    const api = address === undefined ? undefined : redact(address);
    let handle: FileHandle;
    try {
      // O_NONBLOCK: a FIFO planted at the name must not hang the agent.
      handle = await openFile(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch {
      return 0;
    }
    try {
      if (!(await handle.stat()).isFile()) return 0;
      const text = await readWhole(handle, MAX_JOURNAL_BYTES, `the journal ${path}`);
      return openOf(parseLines(text)).filter((i) => i.state === 'pending' && (i.api === undefined || api === undefined || i.api === api)).length;
    } finally {
      await handle.close();
    }
  }

  /** Intents without a final outcome sent to this journal's API, oldest first. */
  open(): OpenIntent[] {
    return openOf(this.lines).filter((i) => this.isMine(i));
  }

  /** Open intents sent to another API: kept, and named in a warning. */
  foreign(): OpenIntent[] {
    return openOf(this.lines).filter((i) => !this.isMine(i));
  }

  private isMine(i: Pick<Intent, 'api'>): boolean {
    return i.api === undefined || this.api === undefined || i.api === this.api;
  }

  /** Durable (fsync'd) before it resolves, so the request may be sent only after. */
  async recordIntent(i: Omit<Intent, 'id' | 'at' | 'api' | 'revision'>): Promise<Intent> {
    const intent: Intent = {
      id: randomUUID(), tenant: i.tenant, action_id: i.action_id, index: i.index,
      // The name is for people (intents are matched by digest): a key typed into it, or sent back in
      // it by a server, is not written to the state folder.
      name: redact(i.name), digest: i.digest, at: new Date().toISOString(), ...(this.api !== undefined ? { api: this.api } : {}),
      ...stamp(),
      ...(this.revision ? { revision: { commit: this.revision.commit, dirty: this.revision.dirty } } : {}),
    };
    await this.append({ type: 'intent', ...intent });
    return intent;
  }

  async recordOutcome(id: string, outcome: Outcome): Promise<void> {
    await this.append({ type: 'outcome', id, outcome, at: new Date().toISOString() });
    const intent = this.intents.get(id);
    if (outcome === 'applied' && intent) {
      await this.history.add({ tenant: intent.tenant, action_id: intent.action_id, index: intent.index, digest: intent.digest, name: intent.name });
    }
  }

  /** When a read showed dus-sync's append of this very phase at this index, within the last day. */
  storedBefore(tenant: string, actionId: number, index: number, digest: string): string | undefined {
    return this.history.find(tenant, actionId, index, digest)?.at;
  }

  async recordAbsent(id: string, at: number): Promise<void> {
    await this.append({ type: 'absent', id, at: new Date(at).toISOString(), ...stamp() });
  }

  /** Marks as applied every acknowledged intent that this fresh read of its action shows at its index. */
  async confirm(tenant: string, action: Action): Promise<number> {
    const shown = this.acknowledged.get(actionKey(tenant, action.id));
    if (shown === undefined || shown.size === 0) return 0;
    let n = 0;
    for (const i of [...shown.values()]) {
      if (!shownAt(action, i)) continue;
      await this.recordOutcome(i.id, 'applied');
      n++;
    }
    return n;
  }

  /**
   * Rewrites the file with only the open intents (their intent, acknowledgement and first
   * absence), through an exclusive temporary file renamed over it. After a clean run the file is
   * empty; an intent still open is kept, so calling this is always safe.
   */
  async compact(): Promise<void> {
    await this.enqueue(async (h) => {
      const keep = openOf(this.lines).flatMap(linesOf);
      const text = keep.map((l) => JSON.stringify(l) + '\n').join('');
      await replacePrivateFile(this.path, text, 'the journal');
      await h.close();
      this.handle = await openPrivateFile(this.path, OPEN_FLAGS, 'the journal');
      this.lines.splice(0, this.lines.length, ...keep);
      this.index();
      await this.history.compact();
    });
  }

  async close(): Promise<void> {
    await this.queue.catch(() => undefined);
    const h = this.handle;
    this.handle = null;
    await h?.close();
    await this.history.close();
  }

  /** Acknowledged intents not yet seen in a read, by action: what confirm() looks for. */
  private readonly acknowledged = new Map<string, Map<string, Intent>>();

  /** Every intent by id, for the outcome lines that refer to them. */
  private readonly intents = new Map<string, Intent>();

  private index(): void {
    this.acknowledged.clear();
    this.intents.clear();
    for (const l of this.lines) if (l.type === 'intent') this.intents.set(l.id, l);
    for (const i of openOf(this.lines)) if (i.state === 'acknowledged' && this.isMine(i)) this.track(i);
  }

  private track(i: Intent): void {
    const key = actionKey(i.tenant, i.action_id);
    let m = this.acknowledged.get(key);
    if (!m) this.acknowledged.set(key, (m = new Map()));
    m.set(i.id, i);
  }

  private live(): FileHandle {
    if (this.handle === null) throw new Error(`the journal ${this.path} is closed`);
    return this.handle;
  }

  /** A write that failed (a full disk): nothing more is recorded, so nothing more is sent. */
  private broken: Error | undefined;

  private append(line: Line): Promise<void> {
    return this.enqueue(async (h) => {
      if (this.broken) throw new StateError(`the journal ${this.path} could not be written before (${this.broken.message}); nothing more is sent`);
      try {
        await this.assertSameFile(h);
        await appendAll(h, JSON.stringify(line) + '\n');
      } catch (err) {
        this.broken = err as Error;
        throw err;
      }
      await h.sync();
      this.lines.push(line);
      if (line.type === 'intent') this.intents.set(line.id, line);
      if (line.type === 'outcome') this.noteOutcome(line.id, line.outcome);
    });
  }

  private noteOutcome(id: string, outcome: Outcome): void {
    if (outcome === 'acknowledged') {
      const intent = this.intents.get(id);
      if (intent && this.isMine(intent)) this.track(intent);
      return;
    }
    for (const m of this.acknowledged.values()) m.delete(id);
  }

  /** The path still names the file this handle writes: another process did not rewrite it. */
  private async assertSameFile(h: FileHandle): Promise<void> {
    const [mine, there] = await Promise.all([h.stat(), lstat(this.path).catch(() => undefined)]);
    if (there === undefined || there.ino !== mine.ino || there.dev !== mine.dev) {
      throw new StateError(`the journal ${this.path} was replaced by another process (which must hold the lock now)`);
    }
  }

  private enqueue(op: (h: FileHandle) => Promise<void>): Promise<void> {
    const run = this.queue.catch(() => undefined).then(() => op(this.live()));
    this.queue = run;
    return run;
  }
}

/**
 * Other journals in the folder of `path` that hold appends in doubt. The lock is the folder's,
 * so a second journal there (`--journal state/ci.jsonl` beside `state/journal.jsonl`) would pass
 * the lock without seeing the first one's intents: such a folder is refused until they are
 * settled through their own journal.
 */
export async function otherJournalsInDoubt(path: string): Promise<{ path: string; open: number }[]> {
  const dir = dirname(path);
  const own = basename(path);
  const names = await readdir(dir).catch(() => [] as string[]);
  const out: { path: string; open: number }[] = [];
  for (const name of names.sort()) {
    if (name === own || name === HISTORY_FILE || !name.endsWith('.jsonl')) continue;
    const other = join(dir, name);
    let handle: FileHandle;
    try {
      handle = await openFile(other, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch {
      continue; // a link or something unreadable: not a journal of ours
    }
    try {
      if (!(await handle.stat()).isFile()) continue;
      const n = openOf(parseLines(await readWhole(handle, MAX_JOURNAL_BYTES, `the journal ${other}`))).length;
      if (n > 0) out.push({ path: other, open: n });
    } catch {
      out.push({ path: other, open: -1 });
    } finally {
      await handle.close();
    }
  }
  return out;
}

/** Whether a read of the action shows this intent's phase at its index. */
export function shownAt(action: Action, i: Pick<Intent, 'index' | 'digest'>): boolean {
  const p = action.phases[i.index];
  return p !== undefined && phaseDigest(p) === i.digest;
}

function linesOf(i: OpenIntent): Line[] {
  const { state, absentSince, absentMono, absentBoot, acknowledgedAt, ...intent } = i;
  return [
    { type: 'intent', ...intent },
    ...(state === 'acknowledged' ? [{ type: 'outcome' as const, id: i.id, outcome: 'acknowledged' as const, at: acknowledgedAt ?? i.at }] : []),
    ...(absentSince !== undefined ? [{
      type: 'absent' as const, id: i.id, at: new Date(absentSince).toISOString(),
      ...(absentBoot !== undefined && absentMono !== undefined ? { boot: absentBoot, mono: absentMono } : {}),
    }] : []),
  ];
}

function openOf(lines: readonly Line[]): OpenIntent[] {
  const last = new Map<string, { outcome: Outcome; at: string }>();
  const absent = new Map<string, { t: number; boot?: string; mono?: number }>();
  for (const l of lines) {
    if (l.type === 'outcome') {
      // A final outcome is never undone by a later acknowledgement line.
      const before = last.get(l.id)?.outcome;
      if (before === 'applied' || before === 'not-applied') continue;
      last.set(l.id, { outcome: l.outcome, at: l.at });
    } else if (l.type === 'absent' && !absent.has(l.id)) {
      const t = Date.parse(l.at);
      if (Number.isFinite(t)) {
        absent.set(l.id, { t, ...(typeof l.boot === 'string' && typeof l.mono === 'number' && Number.isFinite(l.mono) ? { boot: l.boot, mono: l.mono } : {}) });
      }
    }
  }
  const out: OpenIntent[] = [];
  for (const l of lines) {
    if (l.type !== 'intent') continue;
    const { type: _type, ...intent } = l;
    const o = last.get(l.id);
    if (o?.outcome === 'applied' || o?.outcome === 'not-applied') continue;
    const since = absent.get(l.id);
    out.push({
      ...intent,
      state: o?.outcome === 'acknowledged' ? 'acknowledged' : 'pending',
      ...(o?.outcome === 'acknowledged' ? { acknowledgedAt: o.at } : {}),
      ...(since !== undefined ? { absentSince: since.t } : {}),
      ...(since?.boot !== undefined && since.mono !== undefined ? { absentBoot: since.boot, absentMono: since.mono } : {}),
    });
  }
  return out;
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
  if (o.type === 'outcome') {
    return typeof o.id === 'string' && (o.outcome === 'applied' || o.outcome === 'not-applied' || o.outcome === 'acknowledged');
  }
  if (o.type === 'absent') return typeof o.id === 'string' && typeof o.at === 'string';
  return o.type === 'intent' && typeof o.id === 'string' && typeof o.tenant === 'string'
    && typeof o.action_id === 'number' && typeof o.index === 'number' && typeof o.digest === 'string';
}

/** This boot's id (Linux), so that monotonic readings are compared only within one boot. */
const BOOT_ID: string | undefined = (() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
})();

/** CLOCK_MONOTONIC in ms: shared by every process of one boot, and never stepped like the wall clock. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() / 1_000_000n);
}

/** This moment on the monotonic clock, with the boot it belongs to (nothing where there is no boot id). */
export function stamp(monotonic: () => number = monotonicMs): { boot?: string; mono?: number } {
  return BOOT_ID === undefined ? {} : { boot: BOOT_ID, mono: monotonic() };
}

/**
 * How long ago a stamped moment was: on the monotonic clock when it was stamped in this boot
 * (a wall clock stepped forward must not end a settle window early), else on the wall clock.
 * The smaller of the two when both are known, so that neither clock can shorten a wait.
 */
export function elapsedMs(wallAt: number, boot: string | undefined, mono: number | undefined, clock: Clock): number {
  const wall = clock.now() - wallAt;
  if (boot === undefined || mono === undefined || boot !== BOOT_ID || clock.monotonic === undefined) return wall;
  return Math.min(wall, clock.monotonic() - mono);
}

// ---------------------------------------------------------------- settling before a run

export interface SettleOptions {
  /**
   * The tenants this run has keys for. Intents of other tenants stay in the journal, untouched,
   * with a warning: they cannot be read back here, and they do not affect this run's objects.
   */
  readonly tenants?: ReadonlySet<string>;
  readonly clock?: Clock;
  /**
   * How long reads must show an unknown append absent before it counts as not applied (the
   * settle window, default 30 s): a request a gateway gave up on, or that was sent just before
   * a crash, may still be on its way through the server.
   */
  readonly settleMs?: number;
  readonly signal?: AbortSignal;
}

export const DEFAULT_SETTLE_MS = SETTLE_WINDOW_MS.default;

export interface Settled {
  readonly resolved: number;
  readonly applied: number;
  readonly notApplied: number;
  /** tenant\0action id → why nothing may be appended to that action in this run. */
  readonly blocked: ReadonlyMap<string, string>;
  /** The tenant of each append settled as applied (an earlier run could not tell): for the applied counters. */
  readonly appliedIn: readonly string[];
}

/** An action's key: its tenant folded, as a server may take the name (`ACME` and `acme` are one tenant's). */
export function actionKey(tenant: string, actionId: number): string {
  return `${tenantFold(tenant)}\0${actionId}`;
}

const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: monotonicMs,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

type Read = { action: Action | null } | { error: unknown };

/**
 * Settles every open intent of the covered tenants by reading its action: shown → applied;
 * acknowledged but not shown → kept, and its action blocked (a 2xx is never sent again);
 * pending and absent → not applied once reads have shown it absent for the settle window (the
 * run waits for the rest of the window when it has begun); unreadable → kept, action blocked.
 */
export async function settleJournal(
  journal: Journal,
  client: { tenant(name: string): TenantClient },
  log: Logger,
  opts: SettleOptions = {},
): Promise<Settled> {
  const all = journal.open();
  const settleMs = opts.settleMs ?? DEFAULT_SETTLE_MS;
  const clock = opts.clock ?? systemClock;
  const blocked = new Map<string, string>();
  let applied = 0;
  let notApplied = 0;
  const appliedIn: string[] = [];
  const what = (i: Intent) => `phase ${i.index} "${i.name}" of action ${i.action_id} in ${i.tenant}`;
  const settle = async (i: Intent, outcome: 'applied' | 'not-applied', why: string): Promise<void> => {
    await journal.recordOutcome(i.id, outcome);
    if (outcome === 'applied') { applied++; appliedIn.push(ownerOf(i) ?? i.tenant); } else notApplied++;
    log.info(redact(`journal: ${what(i)}, in doubt since ${i.at}, ${outcome === 'applied' ? 'was applied' : 'was not applied'} (${why})`));
  };

  // An intent belongs to the covered tenant of its name, or of the same name spelled otherwise
  // (the config entry renamed from ACME to acme): a server that ignores case took both for one
  // tenant, so the append may be there, and it is settled by reading that tenant's action.
  const covered = new Map<string, string>();
  if (opts.tenants) for (const t of opts.tenants) covered.set(tenantFold(t), t);
  const ownerOf = (i: Intent): string | undefined => (opts.tenants === undefined || opts.tenants.has(i.tenant) ? i.tenant : covered.get(tenantFold(i.tenant)));

  for (const i of journal.foreign()) {
    log.warn(`journal: ${what(i)} is in doubt since ${i.at}, sent to another API (${i.api ?? '?'}); it is left for a run against that API`);
    // That API may be this service under another name: until the settle window has passed since
    // the append was sent, the same tenant's action waits (after it, this run's own fresh read
    // decides, and an append that landed late is seen there).
    const wall = Date.parse(i.at);
    const age = Number.isFinite(wall) ? elapsedMs(wall, i.boot, i.mono, clock) : Infinity;
    if (ownerOf(i) !== undefined && age < settleMs) {
      blocked.set(actionKey(i.tenant, i.action_id), `${what(i)} was sent through another API (${i.api ?? '?'}) at ${i.at} and is in doubt; if that is this service under another address it may still land, so the action waits until the settle window (${Math.round(settleMs / 1000)} s) has passed`);
    }
  }
  const others = all.filter((i) => ownerOf(i) === undefined);
  for (const i of others) {
    log.warn(`journal: ${what(i)} is in doubt since ${i.at}; it is left for a run that covers tenant ${i.tenant} (dus-sync apply --tenant ${i.tenant})`);
  }
  const mine = all.filter((i) => !others.includes(i));
  const reads = new Map<string, Read>();
  const read = async (i: Intent, fresh: boolean): Promise<Read> => {
    const key = actionKey(i.tenant, i.action_id);
    const cached = fresh ? undefined : reads.get(key);
    if (cached) return cached;
    let r: Read;
    try {
      r = { action: await client.tenant(ownerOf(i) ?? i.tenant).getAction(i.action_id, opts.signal) };
    } catch (error) {
      r = { error };
    }
    reads.set(key, r);
    return r;
  };

  const waiting: OpenIntent[] = [];
  for (const i of mine) {
    const r = await read(i, false);
    const decided = await decide(i, r, 'first');
    if (decided === 'wait') waiting.push(i);
  }
  if (waiting.length > 0) {
    const wait = Math.max(0, ...waiting.map((i) => settleMs - absentFor(i)));
    log.info(`journal: waiting ${Math.ceil(wait / 1000)} s (the settle window) before believing that ${waiting.length} append(s) in doubt did not land`);
    await clock.sleep(wait, opts.signal);
    for (const i of waiting) await decide(i, await read(i, true), 'last');
  }
  return { resolved: applied + notApplied, applied, notApplied, blocked, appliedIn };

  async function decide(i: OpenIntent, r: Read, round: 'first' | 'last'): Promise<'done' | 'wait'> {
    const key = actionKey(i.tenant, i.action_id);
    if ('error' in r) {
      blocked.set(key, `${what(i)} is in doubt since ${i.at} and the action could not be read to settle it (${redact(String((r.error as Error)?.message ?? r.error))})`);
      return 'done';
    }
    const action = r.action;
    // A 404 is "not there" like an absent phase, not proof: a proxy or a replica can say it for a
    // moment. It goes through the same settle window (after which, if the action is really gone,
    // nothing can be appended to it twice).
    if (action !== null && shownAt(action, i)) {
      await settle(i, 'applied', 'a read shows it');
      return 'done';
    }
    if (action !== null && action.phases.some((p, at) => at > i.index && phaseDigest(p) === i.digest)) {
      // It landed behind a phase someone else appended meanwhile: there, not to be sent again.
      await settle(i, 'applied', `a read shows it at another index`);
      return 'done';
    }
    if (i.state === 'acknowledged') {
      blocked.set(key, `${what(i)} was accepted by the API (2xx) at ${i.acknowledgedAt ?? i.at} but its reads do not show it yet; it is never sent again, and the action waits until reads show it (if the API lost it, remove its lines from ${journal.path})`);
      return 'done';
    }
    if (i.absentSince === undefined) {
      const now = clock.now();
      await journal.recordAbsent(i.id, now);
      const s = stamp();
      Object.assign(i, { absentSince: now, ...(s.boot !== undefined ? { absentBoot: s.boot, absentMono: s.mono } : {}) });
    }
    const absent = absentFor(i);
    if (absent >= settleMs || (round === 'last' && absent >= settleMs - 1)) {
      await settle(i, 'not-applied', `reads showed it absent for ${Math.round(absent / 1000)} s`);
      return 'done';
    }
    if (round === 'last') {
      blocked.set(key, `${what(i)} is in doubt since ${i.at}; reads show it absent, but not yet for the settle window`);
      return 'done';
    }
    return 'wait';
  }

  function absentFor(i: OpenIntent): number {
    return i.absentSince === undefined ? 0 : elapsedMs(i.absentSince, i.absentBoot, i.absentMono, clock);
  }
}
