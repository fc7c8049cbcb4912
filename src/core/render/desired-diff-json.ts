// `diff --format json`: the DesiredDiff as a stable document (fields in a fixed order,
// entries already sorted by diffDesired), with the refs it compared.
import type { DesiredDiff } from '../desired-diff.js';

export interface DiffJsonOptions {
  readonly base: string;
  /** The commit the base ref resolved to. */
  readonly baseCommit?: string;
}

export function renderDiffJson(diff: DesiredDiff, opts: DiffJsonOptions): string {
  const doc = {
    format_version: diff.format_version,
    base: { ref: opts.base, ...(opts.baseCommit ? { commit: opts.baseCommit } : {}) },
    head: { ref: 'working-tree' },
    summary: diff.summary,
    entries: diff.entries,
    warnings: diff.warnings,
  };
  return JSON.stringify(doc, null, 2) + '\n';
}
