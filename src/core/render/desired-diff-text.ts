// `diff --format text`: the plan's terminal style (+ added, ~ changed, - removed, ! warning).
import type { DesiredDiff, DiffEntry } from '../desired-diff.js';
import { diffTenants } from '../desired-diff.js';
import { showDependency, showDependencyList, showManaged, showPhase, showValue, summaryLine } from './desired-diff-format.js';
import { safeText as s } from './ansi.js';

export type Painter = (style: 'green' | 'yellow' | 'red' | 'bold' | 'dim', text: string) => string;

export interface DiffTextOptions {
  /** The base ref as the user named it. */
  readonly base: string;
  readonly paint?: Painter;
}

const plain: Painter = (_s, t) => t;

// Everything shown comes from YAML files (a pull request's, maybe a stranger's): each value is
// escaped with s() so that it stays on its line and cannot move the cursor.
function entryLines(e: DiffEntry, paint: Painter): string[] {
  const where = paint('dim', `(${s(e.source.file)}:${e.source.line})`);
  if (e.kind === 'firmware') {
    const component = e.op === 'change' ? e.component_name : e.spec.component_name ?? null;
    const name = s(`firmware ${JSON.stringify(e.key)}${component ? ` (${component})` : ''}`);
    switch (e.op) {
      case 'add': return [paint('green', `  + ${name}`) + ` ${where}`, `      ${s(showManaged(e.spec))}`];
      case 'remove': return [paint('red', `  - ${name}`) + ` ${where} no longer managed; nothing changes live`];
      case 'change': {
        const out = [paint('yellow', `  ~ ${name}`) + ` ${where}`];
        for (const f of e.fields) out.push(`      ${f.field}: ${s(showValue(f.before, f.field))} → ${s(showValue(f.after, f.field))}`);
        if (e.dependencies) {
          if ((e.dependencies.before === null) !== (e.dependencies.after === null)) {
            out.push(`      dependencies: ${s(showDependencyList(e.dependencies.before))} → ${s(showDependencyList(e.dependencies.after))}`);
          } else {
            out.push('      dependencies:');
            for (const d of e.dependencies.items) out.push(`        ${s(showDependency(d))}`);
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
      for (const r of e.rewritten) out.push(paint('red', `      ! phase ${r.index} changed: ${s(showPhase(r.before))} → ${s(showPhase(r.after))}`));
      for (const p of e.removed) out.push(paint('red', `      ! phase ${p.index} removed: ${s(showPhase(p.phase))}`));
      for (const p of e.appended) out.push(paint('green', `      + phase ${p.index} ${s(showPhase(p.phase))}`));
      return out;
    }
  }
}

export function renderDiffText(diff: DesiredDiff, opts: DiffTextOptions): string {
  const paint = opts.paint ?? plain;
  const lines: string[] = [`Desired state: ${s(opts.base)} → working tree`, ''];
  for (const tenant of diffTenants(diff)) {
    const entries = diff.entries.filter((e) => e.tenant === tenant);
    if (entries.length === 0) continue;
    lines.push(paint('bold', `Tenant ${s(tenant)}`));
    for (const e of entries) lines.push(...entryLines(e, paint));
    lines.push('');
  }
  if (diff.warnings.length > 0) {
    lines.push(paint('bold', 'Warnings'));
    for (const w of diff.warnings) lines.push(paint('yellow', `  ! ${s(`${w.tenant ? `${w.tenant}: ` : ''}${w.message}`)}`));
    lines.push('');
  }
  lines.push(summaryLine(diff.summary));
  return lines.join('\n') + '\n';
}
