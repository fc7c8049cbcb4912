// `diff --format markdown`: a pull-request comment. Summary table first, risk callouts, then a
// section per tenant in <details>, with a mermaid picture of each rollout that gains phases.
// GitHub refuses comments over 65,536 characters, so the body is cut at a budget with a note.
import type { PhaseSpec } from '../../model/index.js';
import type { ActionDiff, DesiredDiff, DiffEntry, FirmwareDiff, IndexedPhase } from '../desired-diff.js';
import { diffTenants } from '../desired-diff.js';
import { compactJson, showDependency, showDependencyList, showManaged, showValue, summaryLine } from './desired-diff-format.js';
import { safeText } from './ansi.js';
import { escapeMarkdown, escapeMermaid, INLINE_JSON_MAX, jsonDetails } from './markdown-escape.js';

export interface DiffMarkdownOptions {
  readonly base: string;
  /** Characters at most (default 60,000: under GitHub's 65,536 with room for a marker). */
  readonly maxLength?: number;
}

export const MARKDOWN_MAX_LENGTH = 60_000;

/**
 * An inline code span that survives backticks in the value: its fence is one backtick longer
 * than the longest run inside, so no run can close it early. A backslash is literal inside a
 * code span, so `|` is left as it is here; in a table cell use mdCellCode.
 */
export function mdCode(text: string): string {
  const clean = safeText(text);
  const longest = Math.max(0, ...(clean.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  const pad = longest > 0 || clean.startsWith(' ') || clean.endsWith(' ') ? ' ' : '';
  return `${fence}${pad}${clean}${pad}${fence}`;
}

/** mdCode for a table cell: GitHub splits the row at a bare `|` before it reads code spans, and drops the `\` of `\|`. */
export function mdCellCode(text: string): string {
  return mdCode(text).replace(/\|/g, '\\|');
}

const SIGN = { add: '➕', remove: '➖', change: '✏️' } as const;

function firmwareRow(e: FirmwareDiff): string {
  const component = e.op === 'change' ? e.component_name : e.spec.component_name ?? null;
  const what: string[] = [];
  switch (e.op) {
    case 'add': what.push(`added to git: ${mdCellCode(showManaged(e.spec))}`); break;
    case 'remove': what.push('removed from git: no longer managed (nothing changes live)'); break;
    case 'change':
      for (const f of e.fields) what.push(`${mdCellCode(f.field)}: ${mdCellCode(showValue(f.before, f.field))} → ${mdCellCode(showValue(f.after, f.field))}`);
      if (e.dependencies) {
        if ((e.dependencies.before === null) !== (e.dependencies.after === null)) {
          what.push(`dependencies: ${mdCellCode(showDependencyList(e.dependencies.before))} → ${mdCellCode(showDependencyList(e.dependencies.after))}`);
        } else {
          for (const d of e.dependencies.items) what.push(`dependency ${mdCellCode(showDependency(d))}`);
        }
      }
  }
  return `| ${SIGN[e.op]} | ${mdCellCode(e.key)} | ${component ? mdCellCode(component) : ''} | ${what.join('<br>')} |`;
}

/** A left-to-right picture of the whole rollout; new phases are highlighted. */
export function rolloutMermaid(phases: readonly PhaseSpec[], firstNew: number): string {
  const nodes = phases.map((p, i) => `p${i}["${i}: ${escapeMermaid(p.name)}${i >= firstNew ? ' (new)' : ''}"]`);
  const lines = ['```mermaid', 'flowchart LR', `  ${nodes.join(' --> ')}`];
  if (firstNew < phases.length) {
    lines.push('  classDef new fill:#dafbe1,stroke:#1a7f37');
    lines.push(`  class ${phases.map((_, i) => i).filter((i) => i >= firstNew).map((i) => `p${i}`).join(',')} new`);
  }
  lines.push('```');
  return lines.join('\n');
}

function isLongJson(value: unknown): boolean {
  return compactJson(value).length > INLINE_JSON_MAX;
}

/** One line per phase; trigger_on and info inline when short, else in a details block after the list. */
function phaseItem(sign: string, index: number, p: PhaseSpec): string {
  if (isLongJson(p.trigger_on) || isLongJson(p.info)) return `- ${sign} phase ${index} ${mdCode(p.name)}: trigger_on and info below`;
  return `- ${sign} phase ${index} ${mdCode(p.name)}: trigger_on ${mdCode(compactJson(p.trigger_on))}, info ${mdCode(compactJson(p.info))}`;
}

function phaseDetails(phases: readonly IndexedPhase[]): string[] {
  return phases.filter(({ phase: p }) => isLongJson(p.trigger_on) || isLongJson(p.info)).flatMap(({ index, phase: p }) => [
    '', jsonDetails(`phase ${index} ${escapeMarkdown(p.name)}: trigger&#95;on and info`, { trigger_on: JSON.parse(compactJson(p.trigger_on)), info: JSON.parse(compactJson(p.info)) }),
  ]);
}

function actionBlock(e: ActionDiff): string {
  const head = `**${SIGN[e.op]} action ${mdCode(e.key)}**`;
  switch (e.op) {
    case 'add':
      return [`${head}: added to git with ${e.phases.length} phase${e.phases.length === 1 ? '' : 's'}`, '',
        ...e.phases.map((p, i) => phaseItem('•', i, p)), ...phaseDetails(e.phases.map((phase, index) => ({ index, phase }))), '', ...(e.phases.length > 0 ? [rolloutMermaid(e.phases, e.phases.length), ''] : [])].join('\n');
    case 'remove':
      return `${head}: removed from git: no longer managed (nothing changes live)\n`;
    case 'change': {
      const lines = [head, ''];
      for (const r of e.rewritten) lines.push(isLongJson(r.before) || isLongJson(r.after)
        ? `- ⚠️ phase ${r.index} changed: before and after below`
        : `- ⚠️ phase ${r.index} changed: ${mdCode(compactJson(r.before))} → ${mdCode(compactJson(r.after))}`);
      for (const p of e.removed) lines.push(phaseItem('⚠️ removed', p.index, p.phase));
      for (const p of e.appended) lines.push(phaseItem('➕', p.index, p.phase));
      for (const r of e.rewritten.filter((x) => isLongJson(x.before) || isLongJson(x.after))) {
        lines.push('', jsonDetails(`phase ${r.index}: before and after`, JSON.parse(compactJson({ before: r.before, after: r.after }))));
      }
      lines.push(...phaseDetails([...e.removed, ...e.appended]));
      if (e.appended.length > 0) lines.push('', rolloutMermaid(e.phases, e.appended[0]!.index));
      lines.push('');
      return lines.join('\n');
    }
  }
}

function summaryTable(diff: DesiredDiff): string[] {
  // The words and layout of the plan's table (markdown.ts): one style for both comments.
  const rows = ['| tenant | firmware added | firmware changed | firmware removed | actions added/changed/removed | phase appends | deactivations | warnings |',
    '|---|---:|---:|---:|---:|---:|---:|---:|'];
  for (const tenant of diffTenants(diff)) {
    const es = diff.entries.filter((e) => e.tenant === tenant);
    const n = (kind: DiffEntry['kind'], op: DiffEntry['op']) => es.filter((e) => e.kind === kind && e.op === op).length;
    const phases = es.reduce((s, e) => s + (e.kind === 'action' && e.op === 'change' ? e.appended.length : 0), 0);
    const deact = es.filter((e) => e.kind === 'firmware'
      && ((e.op === 'add' && e.spec.is_deactivated === true) || (e.op === 'change' && e.fields.some((f) => f.field === 'is_deactivated' && f.after === true)))).length;
    const warnings = diff.warnings.filter((w) => w.tenant === tenant).length;
    rows.push(`| ${escapeMarkdown(tenant)} | ${n('firmware', 'add')} | ${n('firmware', 'change')} | ${n('firmware', 'remove')} | ${n('action', 'add')}/${n('action', 'change')}/${n('action', 'remove')} | ${phases} | ${deact ? `**${deact}**` : 0} | ${warnings ? `**${warnings}**` : 0} |`);
  }
  return rows;
}

const MAX_WARNINGS = 50;

function warningCallout(diff: DesiredDiff): string[] {
  if (diff.warnings.length === 0) return [];
  const lines = ['> [!WARNING]', '> **Review these edits carefully**', '>'];
  for (const w of diff.warnings.slice(0, MAX_WARNINGS)) lines.push(`> - ${w.tenant ? `${mdCode(w.tenant)}: ` : ''}${escapeMarkdown(w.message)}`);
  if (diff.warnings.length > MAX_WARNINGS) lines.push(`> - … and ${diff.warnings.length - MAX_WARNINGS} more (see the full output of \`dus-sync diff\`)`);
  return [...lines, ''];
}

interface Budget {
  /** Appends the text when it fits and nothing was cut before; says whether it did. */
  add(text: string): boolean;
  /** Appends regardless (closing tags), from the room kept for them. */
  force(text: string): void;
  /** Marks that something was left out: nothing more is added after it. */
  cut(): void;
  readonly isCut: () => boolean;
  text(): string;
}

function budget(limit: number): Budget {
  const parts: string[] = [];
  let used = 0;
  let cut = false;
  const push = (text: string) => { parts.push(text); used += text.length + 1; };
  return {
    add: (text) => {
      if (cut || used + text.length + 1 > limit) return false;
      push(text);
      return true;
    },
    force: push,
    cut: () => { cut = true; },
    isCut: () => cut,
    text: () => parts.join('\n'),
  };
}

export function renderDiffMarkdown(diff: DesiredDiff, opts: DiffMarkdownOptions): string {
  const max = opts.maxLength ?? MARKDOWN_MAX_LENGTH;
  const note = (n: number) => `\n> [!NOTE]\n> This comment was cut to stay under GitHub's size limit: ${n} more entr${n === 1 ? 'y is' : 'ies are'} not shown. Run ${mdCode(`dus-sync diff --base ${opts.base}`)} for the whole difference.\n`;
  // Room for closing tags and the note, whatever is cut.
  const b = budget(Math.max(0, max - 400));
  const header = [`## dus-sync diff: ${mdCode(opts.base)} → this change`, '', `**${summaryLine(diff.summary)}**`, ''];
  b.force(header.join('\n'));
  if (diff.entries.length === 0 && diff.warnings.length === 0) return `${b.text()}\n`;
  if (diff.entries.length > 0) b.add([...summaryTable(diff), ''].join('\n'));
  b.add(warningCallout(diff).join('\n'));

  let dropped = 0;
  for (const tenant of diffTenants(diff)) {
    const es = diff.entries.filter((e) => e.tenant === tenant);
    if (es.length === 0) continue;
    if (b.isCut()) { dropped += es.length; continue; }
    const fws = es.filter((e): e is FirmwareDiff => e.kind === 'firmware');
    const acs = es.filter((e): e is ActionDiff => e.kind === 'action');
    const open = [`### ${escapeMarkdown(tenant)}`, '', `<details${es.length <= 20 ? ' open' : ''}><summary>${fws.length} firmware, ${acs.length} action difference${acs.length === 1 ? '' : 's'}</summary>`, ''].join('\n');
    if (!b.add(open)) { b.cut(); dropped += es.length; continue; }
    let i = 0;
    if (fws.length > 0) {
      b.add('| | firmware | component | difference |\n|---|---|---|---|');
      for (; i < fws.length && b.add(firmwareRow(fws[i]!)); i++);
      b.force('');
    }
    let j = 0;
    if (i === fws.length) for (; j < acs.length && b.add(actionBlock(acs[j]!)); j++);
    const left = fws.length - i + acs.length - j;
    if (left > 0) { b.cut(); dropped += left; }
    b.force('</details>\n');
  }
  let out = b.text();
  if (dropped > 0) out += note(dropped);
  out += '\n<sub>Computed from git alone (no API access): the live state may differ. `dus-sync plan` shows what apply would do.</sub>\n';
  return out;
}
