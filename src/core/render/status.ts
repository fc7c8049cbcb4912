// `dus-sync status` rendering: each declared action's live phases as a compact timeline.
import type { Action } from '../../model/index.js';
import { safeText } from './ansi.js';

export interface ActionStatus {
  readonly tenant: string;
  readonly id: number;
  /** null when the API does not know the action. */
  readonly live: Action | null;
  /** How many phases the YAML declares (to show what is still to be appended). */
  readonly declaredPhases: number;
  /** spec.paused (docs/rollout-control.md). */
  readonly paused?: boolean;
  /** spec.pacing and spec.min_soak, when gated. */
  readonly pacing?: 'all' | 'gated';
  readonly minSoak?: string;
  /** The sync window that holds writes to this action now, in one sentence. */
  readonly heldBy?: string;
}

const ESC = '\x1b[';
const style = (on: boolean, code: string, text: string) => (on ? `${ESC}${code}m${text}${ESC}0m` : text);

/** Integer timestamps as ISO dates; seconds or milliseconds since the epoch, told apart by size. */
export function formatTimestamp(value: number | null | undefined): string {
  if (value === null || value === undefined || value === 0) return '-';
  const ms = value > 1e12 ? value : value * 1000;
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(value) : date.toISOString().replace('T', ' ').replace(/:\d\d\.\d{3}Z$/, ' UTC');
}

export function renderStatusText(actions: readonly ActionStatus[], opts: { color: boolean }): string {
  const lines: string[] = [];
  for (const a of actions) {
    if (a.live === null) {
      lines.push(`${style(opts.color, '1', `${safeText(a.tenant)} action ${a.id}`)}: ${style(opts.color, '31', 'not found')}`, '');
      continue;
    }
    const act = a.live;
    const triggered = act.phases_triggered ?? [];
    const next = act.next_phase_index ?? triggered.findIndex((t) => !t);
    // Live names and values are the server's words: one line each, control characters escaped.
    lines.push(`${style(opts.color, '1', `${safeText(a.tenant)} action ${a.id}`)}  status ${safeText(String(act.status ?? '-'))}  phases ${act.phases.length}/${a.declaredPhases} declared`);
    if (a.paused) lines.push(`  ${style(opts.color, '33', 'paused')} (spec.paused): no phase is appended until it is removed`);
    if (a.pacing === 'gated') lines.push(`  gated pacing: the next phase is appended after the previous one triggered${a.minSoak ? ` and soaked ${safeText(a.minSoak)}` : ''}`);
    if (a.heldBy) lines.push(`  ${style(opts.color, '33', safeText(a.heldBy))}`);
    const names = act.phases.map((p) => safeText(String(p.name)));
    const width = Math.max(16, ...names.map((n) => n.length));
    act.phases.forEach((p, i) => {
      const mark = triggered[i] ? style(opts.color, '32', '✓') : i === next ? style(opts.color, '33', '→') : style(opts.color, '2', '·');
      const state = triggered[i] ? 'triggered' : i === next ? 'next' : 'waiting';
      lines.push(`  ${mark} ${String(i).padStart(2)} ${names[i]!.padEnd(width)} ${state.padEnd(9)} trigger_on ${safeText(JSON.stringify(p.trigger_on ?? {}))}`);
    });
    for (let i = act.phases.length; i < a.declaredPhases; i += 1) {
      lines.push(`  ${style(opts.color, '2', '+')} ${String(i).padStart(2)} ${'(in YAML)'.padEnd(16)} not yet appended: run dus-sync apply`);
    }
    lines.push(`  ends ${formatTimestamp(act.end_timestamp)}, retries on failure until ${formatTimestamp(act.retry_on_failure_until)}`, '');
  }
  if (actions.length === 0) lines.push('No actions are declared.');
  return lines.join('\n').replace(/\n+$/, '') + '\n';
}

export function renderStatusJson(actions: readonly ActionStatus[]): string {
  return JSON.stringify(actions.map((a) => ({
    tenant: a.tenant,
    id: a.id,
    found: a.live !== null,
    status: a.live?.status ?? null,
    phases: (a.live?.phases ?? []).map((p, i) => ({
      index: i, name: p.name, triggered: a.live?.phases_triggered?.[i] ?? false,
    })),
    next_phase_index: a.live?.next_phase_index ?? null,
    declared_phases: a.declaredPhases,
    paused: a.paused === true,
    pacing: a.pacing ?? 'all',
    ...(a.minSoak !== undefined ? { min_soak: a.minSoak } : {}),
    ...(a.heldBy !== undefined ? { held_by_window: a.heldBy } : {}),
    end_timestamp: a.live?.end_timestamp ?? null,
    retry_on_failure_until: a.live?.retry_on_failure_until ?? null,
  })), null, 2) + '\n';
}
