// Safety limits: a plan larger than the operator expects is refused before anything is written
// (octoDNS-style thresholds), so a bad merge cannot deactivate a fleet's firmware by accident.
import type { Plan, SafetyLimits } from '../model/index.js';

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Firmware changes that turn is_deactivated on. */
export function countDeactivations(plan: Plan): number {
  return plan.changes.filter((c) => c.kind === 'firmware' && c.after.is_deactivated === true).length;
}

/**
 * Where each limit was set, as it should be named: "--max-changes" for a flag, or the config
 * setting with its place ("safety.max_changes", with at "dus-sync.yaml:14"). Default: the setting.
 */
export interface LimitSources {
  readonly maxChanges?: LimitSource;
  readonly maxDeactivations?: LimitSource;
}

export interface LimitSource {
  readonly name: string;
  /** file:line of a config setting. */
  readonly at?: string;
}

function named(limit: number, source: LimitSource): string {
  return `${source.name} (${limit}${source.at ? `, set at ${source.at}` : ''})`;
}

/** Each violated limit as one sentence; an empty list means the plan is within the limits. */
export function checkSafety(plan: Plan, limits: SafetyLimits, sources: LimitSources = {}): string[] {
  const violations: string[] = [];
  const changes = plan.changes.length;
  if (limits.maxChanges !== undefined && changes > limits.maxChanges) {
    const source = named(limits.maxChanges, sources.maxChanges ?? { name: 'safety.max_changes' });
    violations.push(`the plan has ${plural(changes, 'change', 'changes')}, more than ${source}; review it and pass --allow-large`);
  }
  const deactivations = countDeactivations(plan);
  if (limits.maxDeactivations !== undefined && deactivations > limits.maxDeactivations) {
    const source = named(limits.maxDeactivations, sources.maxDeactivations ?? { name: 'safety.max_deactivations' });
    violations.push(`the plan deactivates ${plural(deactivations, 'firmware record', 'firmware records')}, more than ${source}; review it and pass --allow-large`);
  }
  return violations;
}
