// The plan as a pull-request comment: summary table and risk callouts first (what a reviewer
// needs in five seconds), then a section per tenant with diffs and phase flowcharts.
// GitHub caps comments at 65536 characters, so the document shrinks gracefully: detail blocks
// turn into one-line entries from the end, then entries are dropped, always leaving valid markdown.
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff';
import type { Action, Change, Conflict, Dependency, DesiredRevision, FirmwareChange, FirmwareFields, Held, LiveState, PhaseChange, Plan, PlanError } from '../../model/index.js';
import { atLeast } from '../version-order.js';
import { canonicalJson, compareStrings } from '../canonical.js';
import { countDeactivations } from '../safety.js';
import { safeText } from './ansi.js';
import { escapeMarkdown, escapeMermaid, fenced, INLINE_JSON_MAX, jsonDetails } from './markdown-escape.js';
import { countsOf, dependencyEdits, plural, SCALAR_FIELDS, sectionOf, summaryLine, SUSPENDED, tenantsOf } from './describe.js';

export interface MarkdownOptions {
  readonly title?: string;
  /** Upper bound on the document's length in characters (GitHub's comment limit by default). */
  readonly maxLength?: number;
  /** The live state the plan was made from: names and triggered marks of live phases in the flowcharts. */
  readonly live?: LiveState;
  /** The config has `suspend: true`: said right under the title. */
  readonly suspended?: boolean;
  /** Provenance in a footer: the tool, the desired state's git revision and when it was made. */
  readonly footer?: MarkdownFooter;
}

export interface MarkdownFooter {
  readonly toolVersion: string;
  /** ISO 8601 time the plan was made (passed in: the renderer has no clock). */
  readonly generatedAt: string;
  readonly revision?: DesiredRevision;
}

const DEFAULT_MAX_LENGTH = 65536;
const LIST_CAP = 5;

// ---------------------------------------------------------------- escaping

export { escapeMarkdown };

function code(text: string): string {
  return `<code>${escapeMarkdown(text)}</code>`;
}

// ---------------------------------------------------------------- head

function summaryTable(plan: Plan): string | undefined {
  const byTenant = plan.summary.unchanged_by_tenant ?? {};
  const tenants = [...new Set([...tenantsOf(plan), ...Object.keys(byTenant)])].sort(compareStrings);
  if (tenants.length === 0) return undefined;
  const row = (cells: readonly (string | number)[]) => `| ${cells.join(' | ')} |`;
  const rows = tenants.map((tenant) => {
    const s = sectionOf(plan, tenant);
    const c = countsOf(s.changes, s.conflicts.length, s.errors.length);
    const unchanged = byTenant[tenant];
    return row([escapeMarkdown(tenant), c.firmwareUpdates, c.phaseAppends, c.conflicts, c.errors, unchanged ?? '–']);
  });
  const total = countsOf(plan.changes, plan.conflicts.length, plan.errors.length);
  return [
    row(['tenant', 'firmware updates', 'phase appends', 'conflicts', 'errors', 'unchanged']),
    '|---|---:|---:|---:|---:|---:|',
    ...rows,
    ...(tenants.length > 1
      ? [row(['**total**', total.firmwareUpdates, total.phaseAppends, total.conflicts, total.errors, plan.summary.unchanged])]
      : []),
  ].join('\n');
}

function cappedList(items: readonly string[]): string {
  const shown = items.slice(0, LIST_CAP).join(', ');
  return items.length > LIST_CAP ? `${shown} and ${items.length - LIST_CAP} more` : shown;
}

function riskCallout(plan: Plan): string | undefined {
  const lines: string[] = [];
  if (plan.conflicts.length > 0) {
    lines.push(
      `**${plural(plan.conflicts.length, 'conflict', 'conflicts')}**: live phases differ from the YAML; phases are append-only, so restore them in the YAML (apply exits 1 until then).`,
    );
  }
  if (plan.errors.length > 0) {
    lines.push(
      `**${plural(plan.errors.length, 'error', 'errors')}**: objects that cannot be planned (not found, ambiguous or a guard mismatch); see below.`,
    );
  }
  const deactivations = countDeactivations(plan);
  if (deactivations > 0) {
    const which = plan.changes
      .filter((c): c is FirmwareChange => c.kind === 'firmware' && c.after.is_deactivated === true)
      .map((c) => `${code(c.key)} (${escapeMarkdown(c.tenant)})`);
    lines.push(`**${plural(deactivations, 'firmware deactivation', 'firmware deactivations')}**: ${cappedList(which)}.`);
  }
  const broken = plan.broken_dependencies ?? [];
  if (broken.length > 0) {
    const which = broken.map((b) => `${code(b.key)} leaves ${code(b.dependent)} without ${code(`${b.component_name} >= ${b.min_version}`)} (${escapeMarkdown(b.tenant)})`);
    lines.push(`**${plural(broken.length, 'broken dependency', 'broken dependencies')}** (--allow-broken-dependencies): ${cappedList(which)}.`);
  }
  const held = plan.held ?? [];
  if (held.length > 0) {
    const which = held.map((h) => `${h.kind} ${code(h.key)} (${h.reason}${h.window !== undefined ? ` ${escapeMarkdown(h.window)}` : ''})`);
    lines.push(`**${held.length} held**: writes that wait (paused, gated, or a sync window): ${cappedList(which)}.`);
  }
  if (lines.length === 0) return undefined;
  return ['> [!WARNING]', ...lines.map((l) => `> - ${l}`)].join('\n');
}

// ---------------------------------------------------------------- units

/** One plan entry, in a full form (a block, or a line) and a compact one-line form. */
interface Unit {
  readonly tenant: string;
  readonly full: string;
  readonly fullIsLine: boolean;
  readonly compact: string;
  /** How many changes it stands for (conflicts and errors count one each). */
  readonly items: number;
  readonly isChange: boolean;
}

function problemUnit(label: string, item: Conflict | PlanError): Unit {
  const source = item.source ? ` (${code(`${item.source.file}:${item.source.line}`)})` : '';
  const line = `- **${label}** on ${item.kind} ${code(item.key)}: ${escapeMarkdown(item.message)}${source}`;
  return { tenant: item.tenant, full: line, fullIsLine: true, compact: line, items: 1, isChange: false };
}

function fieldLines(fields: FirmwareFields, present: FirmwareFields): string[] {
  const lines: string[] = [];
  for (const field of SCALAR_FIELDS) {
    if (present[field] === undefined) continue;
    const value = fields[field];
    lines.push(`${field}: ${value === undefined ? '(unknown)' : canonicalJson(value)}`);
  }
  if (present.dependencies !== undefined) {
    const deps = fields.dependencies ?? [];
    lines.push(deps.length === 0 ? 'dependencies: []' : 'dependencies:');
    for (const d of deps) lines.push(`  - ${d.component_name} >= ${d.min_version}`);
  }
  return lines.map(safeText);
}

function firmwareDiff(change: FirmwareChange): string {
  const before = fieldLines(change.before, change.after).join('\n') + '\n';
  const after = fieldLines(change.after, change.after).join('\n') + '\n';
  return createTwoFilesPatch('live', 'desired', before, after, undefined, undefined, {
    context: 3,
    headerOptions: FILE_HEADERS_ONLY,
  }).trimEnd();
}

/** In the fixed field order, whatever key order a plan loaded from a file has. */
function changedFieldNames(change: FirmwareChange): string {
  return [...SCALAR_FIELDS, 'dependencies' as const].filter((f) => change.after[f] !== undefined).join(', ');
}

function dependencySummary(change: FirmwareChange): string {
  if (!change.after.dependencies) return '';
  const edits = dependencyEdits(change.before.dependencies ?? [], change.after.dependencies);
  return edits.length > 0 ? ` (${plural(edits.length, 'dependency edit', 'dependency edits')})` : '';
}

function firmwareUnit(change: FirmwareChange): Unit {
  const what = `firmware ${code(change.key)} (${escapeMarkdown(change.component_name)}): ${escapeMarkdown(changedFieldNames(change))}`;
  // Markdown is not rendered inside <summary>, so the bold there is HTML.
  const full = [
    '<details>',
    `<summary><b>update</b> ${what}${escapeMarkdown(dependencySummary(change))}</summary>`,
    '',
    fenced('diff', firmwareDiff(change)),
    '',
    '</details>',
  ].join('\n');
  return { tenant: change.tenant, full, fullIsLine: false, compact: `- **update** ${what}`, items: 1, isChange: true };
}

function liveAction(live: LiveState | undefined, change: PhaseChange): Action | null | undefined {
  return live?.tenants.get(change.tenant)?.actions.get(change.action_id);
}

function flowchart(appends: readonly PhaseChange[], live: LiveState | undefined): string {
  const first = appends[0]!;
  const action = liveAction(live, first);
  const nodes: string[] = [];
  for (let i = 0; i < first.index; i++) {
    const phase = action?.phases[i];
    const label = phase ? phase.name : `phase ${i}`;
    const triggered = action?.phases_triggered?.[i] === true ? ' ✓' : '';
    nodes.push(`  p${i}["${escapeMermaid(label)}${triggered}"]`);
  }
  for (const change of appends) nodes.push(`  p${change.index}["${escapeMermaid(change.after.name)} (new)"]:::new`);
  const ids = [...Array(first.index).keys(), ...appends.map((c) => c.index)].map((i) => `p${i}`);
  return fenced(
    'mermaid',
    ['flowchart LR', ...nodes, ...(ids.length > 1 ? [`  ${ids.join(' --> ')}`] : []), '  classDef new fill:#dafbe1,stroke:#1a7f37,stroke-width:2px'].join('\n'),
  );
}

/** JSON that fits a table cell inline; longer JSON is said to be below, in a details block. */
function jsonCell(value: unknown): string {
  const json = canonicalJson(value);
  return json.length <= INLINE_JSON_MAX ? code(json) : '<i>below</i>';
}

function appendTable(appends: readonly PhaseChange[]): string {
  const table = [
    '| index | name | trigger_on | info |',
    '|---:|---|---|---|',
    ...appends.map((c) => `| ${c.index} | ${escapeMarkdown(c.after.name)} | ${jsonCell(c.after.trigger_on)} | ${jsonCell(c.after.info)} |`),
  ].join('\n');
  const long = appends.filter((c) => canonicalJson(c.after.trigger_on).length > INLINE_JSON_MAX || canonicalJson(c.after.info).length > INLINE_JSON_MAX);
  const details = long.map((c) => jsonDetails(
    `phase ${c.index} ${escapeMarkdown(c.after.name)}: trigger&#95;on and info`,
    { trigger_on: JSON.parse(canonicalJson(c.after.trigger_on)), info: JSON.parse(canonicalJson(c.after.info)) },
  ));
  return [table, ...details].join('\n\n');
}

function actionUnit(appends: readonly PhaseChange[], live: LiveState | undefined): Unit {
  const first = appends[0]!;
  const names = appends.map((c) => `phase ${c.index} ${code(JSON.stringify(c.after.name))}`);
  const title = `**append** to action ${code(first.key)}: ${plural(appends.length, 'phase', 'phases')}`;
  const full = [title, flowchart(appends, live), appendTable(appends)].join('\n\n');
  return {
    tenant: first.tenant,
    full,
    fullIsLine: false,
    compact: `- ${title}: ${cappedList(names)}`,
    items: appends.length,
    isChange: true,
  };
}

/** Appends to one action become one unit: one flowchart shows them together. */
function changeUnits(changes: readonly Change[], live: LiveState | undefined): Unit[] {
  const units: Unit[] = [];
  let group: PhaseChange[] = [];
  const flush = () => {
    if (group.length > 0) units.push(actionUnit(group, live));
    group = [];
  };
  for (const change of changes) {
    switch (change.kind) {
      case 'firmware':
        flush();
        units.push(firmwareUnit(change));
        break;
      case 'phase':
        if (group.length > 0 && group[0]!.key !== change.key) flush();
        group.push(change);
        break;
    }
  }
  flush();
  return units;
}

function heldUnit(h: Held): Unit {
  const source = h.source ? ` (${code(`${h.source.file}:${h.source.line}`)})` : '';
  const line = `- **held** (${h.reason}) ${h.kind} ${code(h.key)}: ${escapeMarkdown(h.message)}${source}`;
  return { tenant: h.tenant, full: line, fullIsLine: true, compact: line, items: 1, isChange: false };
}

const GRAPH_EDGES_MAX = 60;

/**
 * The dependencies of the changed firmware of a tenant as a mermaid flowchart: each changed
 * firmware to the components it depends on, and (from live) each active firmware that depends on
 * a changed component. A dependency no active firmware satisfies once the plan is applied is dashed.
 */
function dependencyGraph(plan: Plan, tenant: string, live: LiveState | undefined): Unit | undefined {
  const changed = plan.changes.filter((c): c is FirmwareChange => c.kind === 'firmware' && c.tenant === tenant);
  if (changed.length === 0) return undefined;
  const records = [...(live?.tenants.get(tenant)?.firmwares.values() ?? [])].flat();
  const changeOf = (component: string, version: string) => changed.find((c) => c.component_name === component && c.key === version);
  const active = (component: string, version: string, liveDeactivated: boolean | null) => {
    const c = changeOf(component, version);
    return c ? !c.body.is_deactivated : liveDeactivated !== true;
  };
  const satisfied = (d: Dependency) => records.some((r) => r.component_name === d.component_name && active(r.component_name, r.version_number, r.is_deactivated) && atLeast(r.version_number, d.min_version));
  const nodes = new Map<string, { id: string; label: string; cls?: string }>();
  const node = (key: string, label: string, cls?: string) => {
    let n = nodes.get(key);
    if (!n) { n = { id: `n${nodes.size}`, label, ...(cls ? { cls } : {}) }; nodes.set(key, n); }
    return n.id;
  };
  const edges: string[] = [];
  const edge = (from: string, d: Dependency) => {
    const to = node(`c\0${d.component_name}`, d.component_name);
    const arrow = live && !satisfied(d) ? '-.->' : '-->';
    edges.push(`  ${from} ${arrow}|"${escapeMermaid(`>= ${d.min_version}`)}"| ${to}`);
  };
  const changedComponents = new Set(changed.map((c) => c.component_name));
  for (const c of changed) {
    const id = node(`f\0${c.component_name}\0${c.key}`, `${c.component_name} ${c.key}${c.body.is_deactivated ? ' (deactivated)' : ''}`, c.body.is_deactivated ? 'off' : 'changed');
    for (const d of c.body.dependencies) edge(id, d);
  }
  for (const r of records) {
    if (changeOf(r.component_name, r.version_number) || r.is_deactivated === true) continue;
    for (const d of r.dependencies) {
      if (!changedComponents.has(d.component_name)) continue;
      edge(node(`f\0${r.component_name}\0${r.version_number}`, `${r.component_name} ${r.version_number}`), d);
    }
  }
  if (edges.length === 0) return undefined;
  const shownEdges = edges.slice(0, GRAPH_EDGES_MAX);
  const lines = [
    'flowchart LR',
    ...[...nodes.values()].map((n) => `  ${n.id}["${escapeMermaid(n.label)}"]${n.cls ? `:::${n.cls}` : ''}`),
    ...shownEdges,
    '  classDef changed fill:#fff8c5,stroke:#9a6700',
    '  classDef off fill:#ffebe9,stroke:#cf222e',
  ];
  const more = edges.length > shownEdges.length ? `\n\n${edges.length - shownEdges.length} more dependencies are not drawn.` : '';
  const title = `**dependencies** of the changed firmware (${plural(edges.length, 'dependency', 'dependencies')}; dashed: unsatisfied once applied)`;
  return { tenant, full: `${title}\n\n${fenced('mermaid', lines.join('\n'))}${more}`, fullIsLine: false, compact: `- ${title}`, items: 0, isChange: true };
}

function unitsOf(plan: Plan, live: LiveState | undefined): Unit[] {
  return tenantsOf(plan).flatMap((tenant) => {
    const s = sectionOf(plan, tenant);
    const graph = dependencyGraph(plan, tenant, live);
    return [
      ...s.conflicts.map((c) => problemUnit('conflict', c)),
      ...s.errors.map((e) => problemUnit('error', e)),
      ...s.held.map(heldUnit),
      ...changeUnits(s.changes, live),
      ...(graph ? [graph] : []),
    ];
  });
}

// ---------------------------------------------------------------- layout

/** Units [0, full) in full form, [full, shown) compact, the rest left out. */
function layout(head: string, units: readonly Unit[], full: number, shown: number, note: string | undefined): string {
  const parts: string[] = [head];
  let tenant: string | undefined;
  let prevLine = false;
  for (let i = 0; i < shown; i++) {
    const unit = units[i]!;
    const useFull = i < full;
    const isLine = useFull ? unit.fullIsLine : true;
    if (unit.tenant !== tenant) {
      parts.push('\n\n', `### ${escapeMarkdown(unit.tenant)}`);
      tenant = unit.tenant;
      prevLine = false;
    }
    parts.push(prevLine && isLine ? '\n' : '\n\n', useFull ? unit.full : unit.compact);
    prevLine = isLine;
  }
  if (note !== undefined) parts.push('\n\n', note);
  return parts.join('') + '\n';
}

function note(text: string): string {
  return `> [!NOTE]\n> … ${text}; run \`dus-sync plan\` locally for the full plan.`;
}

function detailsNote(units: readonly Unit[], full: number): string {
  const hidden = units.slice(full).filter((u) => u.full !== u.compact).reduce((n, u) => n + u.items, 0);
  return note(`the details of ${plural(hidden, 'change', 'changes')} are not shown`);
}

function droppedNote(units: readonly Unit[], shown: number): string {
  const dropped = units.slice(shown);
  const n = dropped.reduce((sum, u) => sum + u.items, 0);
  const noun = dropped.every((u) => u.isChange) ? plural(n, 'more change', 'more changes') : `${n} more entries (changes, conflicts, errors)`;
  return note(`${noun} not shown`);
}

/** The largest value in [lo, hi] for which fits() holds, assuming it holds less often as the value grows. */
function largestFitting(lo: number, hi: number, fits: (n: number) => boolean): number | undefined {
  if (!fits(lo)) return undefined;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function shrink(head: string, units: readonly Unit[], max: number, minimalHead: string): string {
  const m = units.length;
  const whole = layout(head, units, m, m, undefined);
  if (whole.length <= max) return whole;

  const withDetails = (k: number) => layout(head, units, k, m, detailsNote(units, k));
  const full = largestFitting(0, m - 1, (k) => withDetails(k).length <= max);
  if (full !== undefined) return withDetails(full);

  const named = (j: number) => layout(head, units, 0, j, droppedNote(units, j));
  const shown = largestFitting(0, m - 1, (j) => named(j).length <= max);
  if (shown !== undefined) return named(shown);

  // Not even the head fits: the title, the summary line and the note are all that is left.
  const bare = layout(minimalHead, units, 0, 0, droppedNote(units, 0));
  return bare.length <= max ? bare : bare.slice(0, Math.max(0, max - 1)).replace(/[^\n]*$/, '') + '\n';
}

/** One line in small print: which tool made the plan, from which commit, when. */
function footerLine(f: MarkdownFooter): string {
  const revision = f.revision
    ? `from commit ${code(f.revision.commit.slice(0, 12))}${f.revision.dirty ? ' with uncommitted changes' : ''}`
    : 'outside git (no commit)';
  return `<sub>dus-sync ${escapeMarkdown(f.toolVersion)} · ${revision} · ${escapeMarkdown(f.generatedAt)}</sub>`;
}

export function renderMarkdown(plan: Plan, opts: MarkdownOptions = {}): string {
  // The footer is kept whatever the shrinking: the body gets the room that is left.
  const footer = opts.footer ? footerLine(opts.footer) : undefined;
  const body = renderBody(plan, opts, footer ? (opts.maxLength ?? DEFAULT_MAX_LENGTH) - footer.length - 2 : opts.maxLength ?? DEFAULT_MAX_LENGTH);
  return footer ? `${body}\n${footer}\n` : body;
}

function renderBody(plan: Plan, opts: MarkdownOptions, maxLength: number): string {
  const title = `## ${escapeMarkdown(opts.title ?? 'dus-sync plan')}`;
  const top = opts.suspended ? `${title}\n\n> [!CAUTION]\n> **Suspended**: ${escapeMarkdown(SUSPENDED).replace('suspend: true', '`suspend: true`')}` : title;
  const summary = `**${summaryLine(plan)}**`;
  const head = [top, summary, summaryTable(plan), riskCallout(plan)].filter((p): p is string => p !== undefined).join('\n\n');
  return shrink(head, unitsOf(plan, opts.live), maxLength, `${top}\n\n${summary}`);
}
