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

/** Each violated limit as one sentence; an empty list means the plan is within the limits. */
export function checkSafety(plan: Plan, limits: SafetyLimits): string[] {
  const violations: string[] = [];
  const changes = plan.changes.length;
  if (limits.maxChanges !== undefined && changes > limits.maxChanges) {
    violations.push(
      `the plan has ${plural(changes, 'change', 'changes')}, more than safety.max_changes (${limits.maxChanges}); review it and pass --allow-large`,
    );
  }
  const deactivations = countDeactivations(plan);
  if (limits.maxDeactivations !== undefined && deactivations > limits.maxDeactivations) {
    violations.push(
      `the plan deactivates ${plural(deactivations, 'firmware record', 'firmware records')}, more than safety.max_deactivations (${limits.maxDeactivations}); review it and pass --allow-large`,
    );
  }
  return violations;
}
