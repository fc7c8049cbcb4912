// `diff --format text`: the plan's terminal style (+ added, ~ changed, - removed, ! warning).
import type { DesiredDiff, DiffEntry } from '../desired-diff.js';
import { diffTenants } from '../desired-diff.js';
import { showDependency, showDependencyList, showManaged, showPhase, showValue, summaryLine } from './desired-diff-format.js';

export type Painter = (style: 'green' | 'yellow' | 'red' | 'bold' | 'dim', text: string) => string;

export interface DiffTextOptions {
  /** The base ref as the user named it. */
  readonly base: string;
  readonly paint?: Painter;
}

const plain: Painter = (_s, t) => t;

function entryLines(e: DiffEntry, paint: Painter): string[] {
  const where = paint('dim', `(${e.source.file}:${e.source.line})`);
  if (e.kind === 'firmware') {
    const component = e.op === 'change' ? e.component_name : e.spec.component_name ?? null;
    const name = `firmware ${JSON.stringify(e.key)}${component ? ` (${component})` : ''}`;
    switch (e.op) {
      case 'add': return [paint('green', `  + ${name}`) + ` ${where}`, `      ${showManaged(e.spec)}`];
      case 'remove': return [paint('red', `  - ${name}`) + ` ${where} no longer managed; nothing changes live`];
      case 'change': {
        const out = [paint('yellow', `  ~ ${name}`) + ` ${where}`];
        for (const f of e.fields) out.push(`      ${f.field}: ${showValue(f.before, f.field)} → ${showValue(f.after, f.field)}`);
        if (e.dependencies) {
          if ((e.dependencies.before === null) !== (e.dependencies.after === null)) {
            out.push(`      dependencies: ${showDependencyList(e.dependencies.before)} → ${showDependencyList(e.dependencies.after)}`);
          } else {
            out.push('      dependencies:');
            for (const d of e.dependencies.items) out.push(`        ${showDependency(d)}`);
          }
        }
        return out;
      }
    }
  }
  const name = `action ${e.key}`;
  switch (e.op) {
    case 'add': return [paint('green', `  + ${name}`) + ` ${where} ${e.phases.length} phase${e.phases.length === 1 ? '' : 's'}`];
    case 'remove': return [paint('red', `  - ${name}`) + ` ${where} no longer managed; nothing changes live`];
    case 'change': {
      const out = [paint('yellow', `  ~ ${name}`) + ` ${where}`];
      for (const r of e.rewritten) out.push(paint('red', `      ! phase ${r.index} changed: ${showPhase(r.before)} → ${showPhase(r.after)}`));
      for (const p of e.removed) out.push(paint('red', `      ! phase ${p.index} removed: ${showPhase(p.phase)}`));
      for (const p of e.appended) out.push(paint('green', `      + phase ${p.index} ${showPhase(p.phase)}`));
      return out;
    }
  }
}

export function renderDiffText(diff: DesiredDiff, opts: DiffTextOptions): string {
  const paint = opts.paint ?? plain;
  const lines: string[] = [`Desired state: ${opts.base} → working tree`, ''];
  for (const tenant of diffTenants(diff)) {
    const entries = diff.entries.filter((e) => e.tenant === tenant);
    if (entries.length === 0) continue;
    lines.push(paint('bold', `Tenant ${tenant}`));
    for (const e of entries) lines.push(...entryLines(e, paint));
    lines.push('');
  }
  if (diff.warnings.length > 0) {
    lines.push(paint('bold', 'Warnings'));
    for (const w of diff.warnings) lines.push(paint('yellow', `  ! ${w.tenant ? `${w.tenant}: ` : ''}${w.message}`));
    lines.push('');
  }
  lines.push(summaryLine(diff.summary));
  return lines.join('\n') + '\n';
}
