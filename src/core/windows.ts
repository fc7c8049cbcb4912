// Sync windows (docs/rollout-control.md): cron schedules that say when dus-sync may write.
// Pure: the time is passed in; croner only computes the schedule's next starts.
import { Cron } from 'croner';

import type { SyncWindow } from '../model/index.js';

export type { SyncWindow };
export type WindowKind = 'firmware' | 'action';

export interface WindowHold {
  readonly window: string;
  /** When the hold ends at the earliest (ms since the epoch), where the schedule says. */
  readonly until?: number;
  readonly message: string;
}

/** How many chained openings are followed to find where an open window closes. */
const MAX_CHAIN = 1000;

function cronOf(w: SyncWindow): Cron {
  return new Cron(w.schedule, { timezone: w.timezone ?? 'UTC', paused: true });
}

/** Whether a schedule parses (and its time zone exists); the message croner gives when not. */
export function scheduleProblem(schedule: string, timezone?: string): string | undefined {
  try {
    const c = new Cron(schedule, { timezone: timezone ?? 'UTC', paused: true });
    c.nextRun(new Date(0));
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

function nextStart(cron: Cron, after: number): number | undefined {
  const d = cron.nextRun(new Date(after));
  return d ? d.getTime() : undefined;
}

/** When the window is open at `now`: the time it closes (chained openings merged); undefined when closed. */
export function openUntil(w: SyncWindow, now: number): number | undefined {
  const cron = cronOf(w);
  // An opening at s covers [s, s + duration): open now when one started in (now - duration, now].
  const s = nextStart(cron, now - w.durationMs);
  if (s === undefined || s > now) return undefined;
  let end = s + w.durationMs;
  for (let i = 0, t = s; i < MAX_CHAIN; i++) {
    const n = nextStart(cron, t);
    if (n === undefined || n > end) break;
    end = Math.max(end, n + w.durationMs);
    t = n;
  }
  return end;
}

export function appliesTo(w: SyncWindow, tenant: string, kind: WindowKind): boolean {
  return (w.tenants === undefined || w.tenants.includes(tenant)) && (w.kinds === undefined || w.kinds.includes(kind));
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * Whether writes of this kind to this tenant are held at `now`: inside an open deny window, or
 * outside every allow window that applies (when any applies). Deny wins over allow.
 */
export function windowHold(windows: readonly SyncWindow[], tenant: string, kind: WindowKind, now: number): WindowHold | undefined {
  const applying = windows.filter((w) => appliesTo(w, tenant, kind));
  let deny: { w: SyncWindow; end: number } | undefined;
  for (const w of applying) {
    if (w.kind !== 'deny') continue;
    const end = openUntil(w, now);
    if (end !== undefined && (deny === undefined || end > deny.end)) deny = { w, end };
  }
  if (deny) return { window: deny.w.name, until: deny.end, message: `held by deny window ${deny.w.name} until ${iso(deny.end)}` };
  const allows = applying.filter((w) => w.kind === 'allow');
  if (allows.length === 0 || allows.some((w) => openUntil(w, now) !== undefined)) return undefined;
  let next: { w: SyncWindow; at: number } | undefined;
  for (const w of allows) {
    const at = nextStart(cronOf(w), now);
    if (at !== undefined && (next === undefined || at < next.at)) next = { w, at };
  }
  if (!next) return { window: allows[0]!.name, message: `held by window ${allows[0]!.name}: outside every allow window, and none opens again` };
  return { window: next.w.name, until: next.at, message: `held by window ${next.w.name} until ${iso(next.at)} (outside every allow window)` };
}
