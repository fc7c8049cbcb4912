// The Terraform-like plan for a terminal: one block per tenant, a symbol per line
// (~ update, + append, ! conflict, x error), and the summary as the last line.
import type { Change, Conflict, FirmwareChange, PhaseChange, Plan, PlanError } from '../../model/index.js';
import { canonicalJson } from '../canonical.js';
import { painter, safeText, type Painter } from './ansi.js';
import {
  dependencyEdits,
  describeChange,
  describeHeld,
  describeSource,
  formatField,
  SCALAR_FIELDS,
  sectionOf,
  summaryLine,
  SUSPENDED,
  tenantsOf,
} from './describe.js';

const ARROW = '→';

function firmwareLines(change: FirmwareChange, paint: Painter): string[] {
  const lines = [`  ${paint('yellow', '~')} ${safeText(describeChange(change))}`];
  for (const field of SCALAR_FIELDS) {
    if (change.after[field] === undefined) continue;
    lines.push(`      ${field}: ${safeText(formatField(change.before, field))} ${ARROW} ${safeText(formatField(change.after, field))}`);
  }
  if (change.after.dependencies) {
    lines.push('      dependencies:');
    for (const edit of dependencyEdits(change.before.dependencies ?? [], change.after.dependencies)) {
      const text =
        edit.sign === '~'
          ? `${edit.component} ${edit.before ?? ''} ${ARROW} ${edit.after ?? ''}`
          : `${edit.component} >= ${edit.before ?? edit.after ?? ''}`;
      const tone = edit.sign === '+' ? 'green' : edit.sign === '-' ? 'red' : 'yellow';
      lines.push(`        ${paint(tone, edit.sign)} ${safeText(text)}`);
    }
  }
  return lines;
}

function phaseLines(change: PhaseChange, paint: Painter): string[] {
  return [
    `  ${paint('green', '+')} ${safeText(describeChange(change))}`,
    `      trigger_on: ${safeText(canonicalJson(change.after.trigger_on))}`,
    `      info: ${safeText(canonicalJson(change.after.info))}`,
  ];
}

function changeLines(change: Change, paint: Painter): string[] {
  switch (change.kind) {
    case 'firmware':
      return firmwareLines(change, paint);
    case 'phase':
      return phaseLines(change, paint);
  }
}

function problemLines(symbol: string, label: string, item: Conflict | PlanError, paint: Painter): string[] {
  const lines = [`  ${paint('red', symbol)} ${label} on ${item.kind} ${safeText(item.key)}: ${safeText(item.message)}`];
  const source = describeSource(item);
  if (source) lines.push(`      ${paint('dim', `at ${safeText(source)}`)}`);
  return lines;
}

export function renderText(plan: Plan, opts: { color: boolean; suspended?: boolean }): string {
  const paint = painter(opts.color);
  const blocks: string[] = [];
  if (opts.suspended) blocks.push(paint('yellow', `Suspended: ${SUSPENDED}`));
  for (const tenant of tenantsOf(plan)) {
    const section = sectionOf(plan, tenant);
    blocks.push(
      [
        paint('bold', safeText(tenant)),
        ...section.changes.flatMap((c) => changeLines(c, paint)),
        ...section.conflicts.flatMap((c) => problemLines('!', 'conflict', c, paint)),
        ...section.errors.flatMap((e) => problemLines('x', 'error', e, paint)),
        ...section.held.map((h) => `  ${paint('yellow', '=')} ${safeText(describeHeld(h))}`),
      ].join('\n'),
    );
  }
  for (const b of plan.broken_dependencies ?? []) {
    blocks.push(paint('red', safeText(`Broken dependency (--allow-broken-dependencies): deactivating firmware ${b.key} in ${b.tenant} leaves firmware ${b.dependent} without ${b.component_name} >= ${b.min_version}`)));
  }
  blocks.push(paint('bold', summaryLine(plan)));
  return blocks.join('\n\n') + '\n';
}
