// Sync windows (docs/rollout-control.md, section 3): when a held write is next allowed, by all the
// windows together; and the schedule checks behind validate.
import fc from 'fast-check';
import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { HORIZON_MS, scheduleProblem, windowHold, type SyncWindow } from '../../src/core/windows.js';

const H = 3_600_000;
const M = 60_000;
const T0 = Date.parse('2025-03-03T10:00:00Z'); // a Monday

const deny = (name: string, schedule: string, durationMs: number, extra: Partial<SyncWindow> = {}): SyncWindow => ({ name, kind: 'deny', schedule, durationMs, ...extra });
const allow = (name: string, schedule: string, durationMs: number, extra: Partial<SyncWindow> = {}): SyncWindow => ({ name, kind: 'allow', schedule, durationMs, ...extra });

/**
 * The oracle, independent of the code under test: a window (of whole-minute starts) is open at t
 * when one of the minutes in (t - duration, t] matches its schedule; the write is held when an
 * applying deny window is open, or allow windows apply and none is open.
 */
const crons = new WeakMap<SyncWindow, Cron>();

function openAt(w: SyncWindow, t: number): boolean {
  let cron = crons.get(w);
  if (!cron) crons.set(w, cron = new Cron(w.schedule, { timezone: w.timezone ?? 'UTC', paused: true }));
  for (let m = Math.floor(t / M) * M; m > t - w.durationMs; m -= M) if (cron.match(new Date(m))) return true;
  return false;
}

function heldAt(windows: readonly SyncWindow[], t: number): boolean {
  if (windows.some((w) => w.kind === 'deny' && openAt(w, t))) return true;
  const allows = windows.filter((w) => w.kind === 'allow');
  return allows.length > 0 && !allows.some((w) => openAt(w, t));
}

describe('when a held write is next allowed', () => {
  it('a deny window whose openings overlap for ever gives no until, and says so', () => {
    const hold = windowHold([deny('always', '* * * * *', H)], 'acme', 'action', T0);
    expect(hold).toEqual({ window: 'always', message: 'held by deny window always: no time within the next year allows it' });
  });

  it('an allow window that only opens while a deny window is open never allows the write', () => {
    const windows = [allow('night', '0 0 * * *', H), deny('nightfreeze', '0 0 * * *', H)];
    const hold = windowHold(windows, 'acme', 'action', T0);
    expect(hold?.until).toBeUndefined();
    expect(hold?.message).toBe('held by window night (outside every allow window), then by deny window nightfreeze: no time within the next year allows it');
    // At the allow window's opening the deny window holds.
    expect(windowHold(windows, 'acme', 'action', Date.parse('2025-03-04T00:00:00Z'))?.window).toBe('nightfreeze');
  });

  it('overlapping deny windows hold until the last of them closes', () => {
    const hold = windowHold([deny('a', '0 9 * * *', 2 * H), deny('b', '30 10 * * *', H)], 'acme', 'action', T0);
    expect(hold).toMatchObject({ window: 'a', until: Date.parse('2025-03-03T11:30:00Z') });
    expect(hold!.message).toBe('held by deny window a, then by deny window b until 2025-03-03T11:30:00.000Z');
  });

  it('a deny window that closes outside every allow window holds until the next allow window opens', () => {
    const hold = windowHold([deny('freeze', '0 9 * * *', 2 * H), allow('evening', '0 18 * * *', H)], 'acme', 'action', T0);
    expect(hold).toMatchObject({ window: 'freeze', until: Date.parse('2025-03-03T18:00:00Z') });
  });

  it('an allow window that opens into a deny window allows the write when the deny window closes', () => {
    const hold = windowHold([allow('day', '0 11 * * *', 8 * H), deny('lunch', '0 11 * * *', H)], 'acme', 'action', T0);
    expect(hold).toMatchObject({ window: 'day', until: Date.parse('2025-03-03T12:00:00Z') });
  });

  it('a deny window that reopens at the moment it closes stays closed to writes', () => {
    const hold = windowHold([deny('chain', '0 */2 * * *', 2 * H, {}), deny('tail', '0 0 * * *', 30 * M)], 'acme', 'action', Date.parse('2025-03-03T10:00:00Z'));
    expect(hold?.until).toBeUndefined();
    expect(windowHold([deny('one', '0 10 * * *', 2 * H)], 'acme', 'action', T0 + 2 * H)).toBeUndefined();
  });

  it('never throws, and a time that is no date holds', () => {
    expect(windowHold([deny('x', '0 0 * * *', H)], 'acme', 'action', 8.64e15 + 1)?.message).toContain('not a usable date');
    expect(windowHold([deny('x', '0 0 * * *', 1e20)], 'acme', 'action', T0)).toBeDefined();
  });

  it('property: at until the write is allowed, and from now to just before it, it is held', () => {
    const schedules = ['0 * * * *', '30 */2 * * *', '0 9 * * 1-5', '15 22 * * *', '0 0 * * 0', '*/20 8-17 * * *', '45 3 1 * *', '0 12 * * 6'];
    const window = fc.record({
      kind: fc.constantFrom<'allow' | 'deny'>('allow', 'deny'),
      schedule: fc.constantFrom(...schedules),
      minutes: fc.constantFrom(20, 45, 60, 90, 180, 600),
      timezone: fc.constantFrom(undefined, 'Europe/Berlin', 'America/New_York'),
    });
    fc.assert(fc.property(fc.array(window, { minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 60 * 24 * 14 }), (specs, offsetMin) => {
      const windows: SyncWindow[] = specs.map((s, i) => ({ name: `w${i}`, kind: s.kind, schedule: s.schedule, durationMs: s.minutes * M, ...(s.timezone ? { timezone: s.timezone } : {}) }));
      const now = T0 + offsetMin * M + 7_000;
      const hold = windowHold(windows, 'acme', 'action', now);
      expect(heldAt(windows, now)).toBe(hold !== undefined);
      if (!hold) return;
      if (hold.until === undefined) {
        // No time within the horizon: spot checks (the whole year is too long to walk here).
        for (let i = 1; i <= 20; i++) expect(heldAt(windows, now + Math.floor((HORIZON_MS * i) / 20))).toBe(true);
        return;
      }
      expect(hold.until).toBeGreaterThan(now);
      expect(heldAt(windows, hold.until)).toBe(false);
      expect(heldAt(windows, hold.until - 1)).toBe(true);
      // Held all the way: at 100 minutes spread between now and until (every minute when fewer).
      const step = Math.max(M, Math.ceil((hold.until - now) / 100 / M) * M);
      for (let t = Math.ceil(now / M) * M; t < hold.until; t += step) expect(heldAt(windows, t)).toBe(true);
      expect(hold.message).toContain(`until ${new Date(hold.until).toISOString()}`);
    }), { numRuns: 50, seed: 20251103 });
  }, 120_000);
});

describe('schedule checks', () => {
  const now = T0;
  it('refuses a time zone that is no IANA name, before anything else', () => {
    expect(scheduleProblem('0 0 * * *', 'Zq7vK2pLm9XwR4tYbN8s', now)).toBe('timezone');
    expect(scheduleProblem('0 0 * * *', 'Europe/Berlin', now)).toBeUndefined();
    expect(scheduleProblem('0 0 * * *', 'UTC', now)).toBeUndefined();
  });

  it('takes 5 fields or 6 with seconds, or a nickname; not 4 or 7', () => {
    expect(scheduleProblem('0 0 * *', undefined, now)).toBe('fields');
    expect(scheduleProblem('0 0 0 1 1 * 2030', undefined, now)).toBe('fields');
    expect(scheduleProblem('Zq7vK2pLm9XwR4tYbN8s', undefined, now)).toBe('fields');
    expect(scheduleProblem('0 0 0 * * *', undefined, now)).toBeUndefined();
    expect(scheduleProblem('@daily', undefined, now)).toBeUndefined();
    expect(scheduleProblem('0 25 * * *', undefined, now)).toBe('schedule');
  });

  it('refuses a schedule that never opens', () => {
    expect(scheduleProblem('0 0 30 2 *', undefined, now)).toBe('never');
    expect(scheduleProblem('0 0 31 4 *', 'Europe/Berlin', now)).toBe('never');
    expect(scheduleProblem('0 0 29 2 *', undefined, now)).toBeUndefined();
  });
});
