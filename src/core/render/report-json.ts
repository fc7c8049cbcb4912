// The apply report as JSON (`apply --format json`, format_version 1): the plan that was applied,
// in the plan JSON's own shape, then one result per change in plan order, the totals, and what
// did not converge or diverged. Field order is fixed so that the same run gives the same bytes
// (apart from durations).
import type { ApplyReport, ChangeResult, Plan } from '../../model/index.js';
import { compareChanges } from '../order.js';
import { planToJson } from './json.js';

function resultJson(r: ChangeResult): Record<string, unknown> {
  const c = r.change;
  return {
    tenant: c.tenant,
    kind: c.kind,
    op: c.op,
    key: c.key,
    ...(c.kind === 'phase' ? { index: c.index } : {}),
    status: r.status,
    ...(r.message !== undefined ? { message: r.message } : {}),
    duration_ms: Math.max(0, Math.round(r.durationMs)),
  };
}

/** The report of an apply that wrote nothing (no changes): every total 0. */
export const NOTHING_APPLIED: ApplyReport = { results: [], applied: 0, failed: 0, skipped: 0, unconverged: [], diverged: [] };

export function applyReportToJson(plan: Plan, report: ApplyReport): Record<string, unknown> {
  const results = [...report.results].sort((a, b) => compareChanges(a.change, b.change));
  return {
    format_version: 1,
    plan: planToJson(plan),
    results: results.map(resultJson),
    summary: {
      applied: report.applied,
      failed: report.failed,
      skipped: report.skipped,
      unconverged: report.unconverged.length,
      diverged: report.diverged.length,
    },
    unconverged: [...report.unconverged],
    diverged: [...report.diverged],
  };
}

export function renderApplyReportJson(plan: Plan, report: ApplyReport): string {
  return JSON.stringify(applyReportToJson(plan, report), null, 2) + '\n';
}
