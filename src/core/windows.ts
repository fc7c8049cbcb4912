// Sync windows (docs/rollout-control.md): cron schedules that say when dus-sync may write.
// Pure: the time is passed in; croner only computes the schedule's starts.
import { Cron } from 'croner';

import type { SyncWindow } from '../model/index.js';

export type { SyncWindow };
export type WindowKind = 'firmware' | 'action';

export interface WindowHold {
  /** The window that holds the write now. */
  readonly window: string;
  /** When the write is next allowed by every window together (ms since the epoch); absent when no time within the horizon is. */
  readonly until?: number;
  readonly message: string;
}

/** The times a JavaScript Date can hold: ±8.64e15 ms around the epoch. */
export const MAX_DATE_MS = 8.64e15;

/** Whether `ms` is a time a Date can hold (a finite number within ±8.64e15). */
export function isValidTime(ms: unknown): ms is number {
  return typeof ms === 'number' && Number.isFinite(ms) && Math.abs(ms) <= MAX_DATE_MS;
}

/** The longest window `duration`: 8784h, a leap year (a longer one is a config error). */
export const MAX_WINDOW_DURATION_MS = 8784 * 3_600_000;
/** How far ahead the time writes resume is searched: a (leap) year. */
export const HORIZON_MS = 366 * 24 * 3_600_000;
/** How far ahead a schedule must open at least once to be valid: about 5 years. */
export const OPENS_WITHIN_MS = 5 * 366 * 24 * 3_600_000;
/** Schedule look-ups one search may make (each some 50-100 µs): bounds the work of a pathological set of windows. */
const MAX_LOOKUPS = 12_000;

// ---------------------------------------------------------------- validation

export type ScheduleProblem = 'timezone' | 'fields' | 'schedule' | 'never';

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * What is wrong with a schedule and its time zone, as a code: the caller writes the sentence, and
 * never quotes croner, whose messages repeat the value (which may be a key pasted in the wrong place).
 * - timezone: not an IANA time zone name;
 * - fields: not 5 fields (or 6 with seconds) nor a nickname like @daily;
 * - schedule: croner cannot read it;
 * - never: it does not open within about 5 years of `now` (like "0 0 30 2 *").
 */
export function scheduleProblem(schedule: string, timezone: string | undefined, now: number): ScheduleProblem | undefined {
  if (timezone !== undefined && !isTimeZone(timezone)) return 'timezone';
  const text = schedule.trim();
  if (!text.startsWith('@')) {
    const fields = text.split(/\s+/).length;
    if (fields < 5 || fields > 6) return 'fields';
  }
  let cron: Cron;
  try {
    cron = new Cron(text, { timezone: 'UTC', paused: true });
    cron.nextRun(new Date(now));
  } catch {
    return 'schedule';
  }
  try {
    cron = new Cron(text, { timezone: timezone ?? 'UTC', paused: true });
    const first = cron.nextRun(new Date(now));
    if (first === null || first.getTime() > now + OPENS_WITHIN_MS) return 'never';
  } catch {
    return timezone !== undefined ? 'timezone' : 'schedule';
  }
  return undefined;
}

// ---------------------------------------------------------------- evaluation

class OutOfLookups extends Error {}

interface Schedule {
  readonly w: SyncWindow;
  readonly cron: Cron;
  readonly d: number;
}

const crons = new WeakMap<SyncWindow, Cron>();

function scheduleOf(w: SyncWindow): Schedule {
  let cron = crons.get(w);
  if (cron === undefined) crons.set(w, cron = new Cron(w.schedule, { timezone: w.timezone ?? 'UTC', paused: true }));
  // Bounded here too, in case a window got past validation: date arithmetic stays in range.
  const d = Number.isFinite(w.durationMs) ? Math.min(Math.max(w.durationMs, 0), MAX_WINDOW_DURATION_MS) : 0;
  return { w, cron, d };
}

class Search {
  lookups = 0;
  /** How far the search has seen the write held. */
  reached: number;
  constructor(now: number, readonly limit: number) {
    this.reached = now;
  }

  private count(): void {
    if (++this.lookups > MAX_LOOKUPS) throw new OutOfLookups();
  }

  /** The first start strictly after `after`. */
  next(s: Schedule, after: number): number | undefined {
    if (!isValidTime(after)) return undefined;
    this.count();
    try {
      const d = s.cron.nextRun(new Date(after));
      return d ? d.getTime() : undefined;
    } catch {
      return undefined;
    }
  }

  /** The last start at or before `at`. */
  latest(s: Schedule, at: number): number | undefined {
    if (!isValidTime(at + 1)) return undefined;
    this.count();
    try {
      const [d] = s.cron.previousRuns(1, new Date(at + 1));
      return d ? d.getTime() : undefined;
    } catch {
      return undefined;
    }
  }

  /** Open at t: some start in (t - d, t]. */
  isOpen(s: Schedule, t: number): boolean {
    if (s.d <= 0) return false;
    const start = this.next(s, t - s.d);
    return start !== undefined && start <= t;
  }

  /**
   * For a window open at t: the first time after t at which it is closed (openings that overlap
   * or touch merge), or undefined when that is past the search's limit.
   */
  closes(s: Schedule, t: number): number | undefined {
    let p = this.latest(s, t);
    if (p === undefined) return t;
    for (;;) {
      const c = p + s.d;
      if (c > this.limit) return undefined;
      // Closed at c when no start falls in (c - d, c] = (p, c].
      const q = this.latest(s, c);
      if (q === undefined || q <= p) return c;
      this.reached = Math.max(this.reached, c);
      p = q;
    }
  }
}

interface Holder {
  readonly kind: 'deny' | 'allow';
  readonly name: string;
}

type Resume =
  | { readonly at: number; readonly holders: readonly Holder[] }
  | { readonly none: 'horizon' | 'again' | 'lookups'; readonly reached: number; readonly holders: readonly Holder[] };

/**
 * The earliest time at or after `now` at which no applying deny window is open and, when any allow
 * window applies, one is open: found by walking the windows' openings and closings, the only
 * times the answer can change. Undefined when `now` itself is such a time.
 */
function resume(applying: readonly SyncWindow[], now: number): Resume | undefined {
  const search = new Search(now, now + HORIZON_MS);
  const denies = applying.filter((w) => w.kind === 'deny').map(scheduleOf);
  const allows = applying.filter((w) => w.kind === 'allow').map(scheduleOf);
  const holders: Holder[] = [];
  const held = (h: Holder): void => {
    if (!holders.some((x) => x.kind === h.kind && x.name === h.name)) holders.push(h);
  };
  let t = now;
  try {
    for (;;) {
      // Every deny window open at t stays open until it closes: nothing before the last close is allowed.
      const open = denies.filter((s) => search.isOpen(s, t));
      if (open.length > 0) {
        let end = t;
        for (const s of open) {
          held({ kind: 'deny', name: s.w.name });
          const c = search.closes(s, t);
          if (c === undefined) return { none: 'horizon', reached: t, holders };
          end = Math.max(end, c);
        }
        t = end;
        if (t > search.limit) return { none: 'horizon', reached: t, holders };
        continue;
      }
      // No allow window open at t: none is until the next opening of one.
      if (allows.length > 0 && !allows.some((s) => search.isOpen(s, t))) {
        let at: number | undefined;
        let by = allows[0]!;
        for (const s of allows) {
          const n = search.next(s, t);
          if (n !== undefined && (at === undefined || n < at)) {
            at = n;
            by = s;
          }
        }
        held({ kind: 'allow', name: by.w.name });
        if (at === undefined) return { none: 'again', reached: t, holders };
        t = at;
        if (t > search.limit) return { none: 'horizon', reached: t, holders };
        continue;
      }
      return t === now ? undefined : { at: t, holders };
    }
  } catch (err) {
    if (err instanceof OutOfLookups) return { none: 'lookups', reached: Math.max(t, search.reached), holders };
    throw err;
  }
}

export function appliesTo(w: SyncWindow, tenant: string, kind: WindowKind): boolean {
  return (w.tenants === undefined || w.tenants.includes(tenant)) && (w.kinds === undefined || w.kinds.includes(kind));
}

function iso(ms: number): string {
  return isValidTime(ms) ? new Date(ms).toISOString() : String(ms);
}

function phrase(h: Holder): string {
  return h.kind === 'deny' ? `deny window ${h.name}` : `window ${h.name} (outside every allow window)`;
}

function describe(r: Resume): WindowHold {
  const by = `held by ${r.holders.map(phrase).join(', then by ')}`;
  const window = r.holders[0]?.name ?? '';
  if ('at' in r) return { window, until: r.at, message: `${by} until ${iso(r.at)}` };
  switch (r.none) {
    case 'horizon': return { window, message: `${by}: no time within the next year allows it` };
    case 'again': return { window, message: `${by}: no allow window opens again, so no time allows it` };
    case 'lookups': return { window, message: `${by}: no time up to ${iso(r.reached)} allows it (not searched further)` };
  }
}

/** Per windows list: the holds already computed, by time and the windows that apply (a plan asks once per object). */
const memo = new WeakMap<readonly SyncWindow[], Map<string, WindowHold | null>>();

/**
 * Whether writes of this kind to this tenant are held at `now`: inside an open deny window, or
 * outside every allow window that applies (when any applies). Deny wins over allow. `until` is when
 * the windows together next allow the write, not just when the window holding it now ends.
 */
export function windowHold(windows: readonly SyncWindow[], tenant: string, kind: WindowKind, now: number): WindowHold | undefined {
  const indices: number[] = [];
  windows.forEach((w, i) => { if (appliesTo(w, tenant, kind)) indices.push(i); });
  if (indices.length === 0) return undefined;
  const applying = indices.map((i) => windows[i]!);
  let cache = memo.get(windows);
  if (cache === undefined) memo.set(windows, cache = new Map());
  const key = `${now}:${indices.join(',')}`;
  const cached = cache.get(key);
  if (cached !== undefined) return cached ?? undefined;
  let hold: WindowHold | undefined;
  if (!isValidTime(now)) {
    hold = { window: applying[0]!.name, message: `held by window ${applying[0]!.name}: the current time is not a usable date` };
  } else {
    try {
      const r = resume(applying, now);
      hold = r === undefined ? undefined : describe(r);
    } catch {
      // Never let the windows hold nothing because they could not be evaluated: hold, and say so.
      hold = { window: applying[0]!.name, message: `held by window ${applying[0]!.name}: the sync windows could not be evaluated; check them with dus-sync validate` };
    }
  }
  if (cache.size > 1000) cache.clear();
  cache.set(key, hold ?? null);
  return hold;
}
