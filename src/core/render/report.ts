// The final apply report: what happened to each change, the totals, and what did not converge.
import type { ApplyReport, ChangeResult } from '../../model/index.js';
import { compareStrings } from '../canonical.js';
import { compareChanges } from '../order.js';
import { painter, safeText, type Painter } from './ansi.js';
import { describeChange, describeSource } from './describe.js';

function resultLine(result: ChangeResult, paint: Painter): string {
  const what = safeText(describeChange(result.change));
  const why = result.message ? `: ${safeText(result.message)}` : '';
  switch (result.status) {
    case 'applied':
      return `  ${paint('green', '✓')} ${what}: applied`;
    case 'failed': {
      // What failed is to be fixed in the YAML, or looked at there: say where it was written.
      const source = describeSource(result.change);
      return `  ${paint('red', '✗')} ${what}: failed${why}${source ? `\n      ${paint('dim', `at ${safeText(source)}`)}` : ''}`;
    }
    case 'skipped':
      return `  ${paint('yellow', '-')} ${what}: skipped${why}`;
  }
}

export function renderApplyReport(report: ApplyReport, opts: { color: boolean }): string {
  const paint = painter(opts.color);
  // Results arrive in completion order; the report reads in plan order so that runs compare.
  const results = [...report.results].sort((a, b) => compareChanges(a.change, b.change));
  const tenants = [...new Set(results.map((r) => r.change.tenant))].sort(compareStrings);
  const blocks = tenants.map((tenant) =>
    [paint('bold', safeText(tenant)), ...results.filter((r) => r.change.tenant === tenant).map((r) => resultLine(r, paint))].join('\n'),
  );
  const totals = `Apply: ${report.applied} applied, ${report.failed} failed, ${report.skipped} skipped.`;
  const tail = [paint('bold', totals)];
  if (report.diverged.length > 0) {
    tail.push(paint('red', 'Diverged (the live phases are no longer the YAML\'s first ones):'));
    tail.push(...report.diverged.map((d) => `  - ${safeText(d)}`));
  }
  if (report.unconverged.length > 0) {
    tail.push(paint('red', 'Not converged (still different after apply):'));
    tail.push(...report.unconverged.map((u) => `  - ${safeText(u)}`));
  }
  blocks.push(tail.join('\n'));
  return blocks.join('\n\n') + '\n';
}
