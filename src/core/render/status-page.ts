// The agent's status page (`watch --listen`, GET /): one small, read-only HTML document, made
// from the last pass's result held in memory. No script: a meta refresh reloads it, so it works
// the same with JavaScript off, and the Content-Security-Policy can forbid every script. The one
// inline style is fixed text (PAGE_STYLE), allowed by its hash.
//
// Every name and message on it comes from YAML files or a server: each goes through text(),
// which makes control and bidi characters visible (safeText) and escapes & < > " ' (entities),
// and nothing from them is ever put in an attribute, a URL or the style. Lists are cut at fixed
// sizes with "and N more", and the whole page at PAGE_BUDGET characters.
import { escapeUTF8 } from 'entities';
import type { ActionTimeline, PassOutcome, Located, PassDetail, PhaseRow, StatusProblem, SyncState, TenantDetail } from '../status-detail.js';
import { safeText } from './ansi.js';

export interface StatusPageInput {
  /** Milliseconds since the epoch, for "N s ago" (the renderer reads no clock). */
  readonly now: number;
  readonly version?: string;
  readonly refreshSeconds: number;
  readonly agent: {
    readonly passes: number;
    readonly running: boolean;
    readonly intervalMs: number;
    readonly consecutiveFailures: number;
    readonly lastSuccessAt?: number;
    readonly ready: boolean;
    readonly readyReason?: string;
  };
  /** The last pass, whatever its outcome. */
  readonly last?: {
    readonly result: PassOutcome;
    readonly message: string;
    readonly at: number;
    readonly issues?: readonly (Located & { readonly message: string })[];
    readonly issueTotal?: number;
  };
  /** The last pass that got as far as a plan (it may be older than `last`). */
  readonly tenants?: { readonly detail: PassDetail; readonly at: number };
}

/** Characters of the page body before tenants are left out (a few hundred KiB at most). */
export const PAGE_BUDGET = 400_000;
/** Most rows a list shows before "and N more". */
export const PAGE_LIMITS = { tenants: 50, problems: 20, actions: 30, issues: 20 } as const;

export const PAGE_STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header,main{max-width:1120px;margin:0 auto;padding:12px 20px}
header{background:#fff;border-bottom:1px solid #d0d7de;max-width:none}
h1{font-size:20px;margin:4px 0}h2{font-size:17px;margin:18px 0 6px}h3{font-size:15px;margin:10px 0 4px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
p,li{overflow-wrap:anywhere}
.muted{color:#656d76}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12.5px;border:1px solid transparent}
.ok{background:#dafbe1;color:#116329;border-color:#4ac26b}
.warn{background:#fff8c5;color:#7d4e00;border-color:#d4a72c}
.bad{background:#ffebe9;color:#a40e26;border-color:#ff8182}
.info{background:#ddf4ff;color:#0550ae;border-color:#54aeff}
table{border-collapse:collapse;background:#fff;width:100%}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.n{text-align:right;font-variant-numeric:tabular-nums}
section.tenant{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:4px 14px 10px;margin:14px 0}
ul.problems{padding-left:20px;margin:4px 0}
ul.problems li{margin:2px 0}
ol.timeline{list-style:none;display:flex;flex-wrap:wrap;gap:6px;padding:0;margin:6px 0}
ol.timeline li{border:1px solid #d0d7de;border-radius:6px;padding:3px 8px;min-width:90px;background:#fff}
ol.timeline li.triggered{background:#dafbe1;border-color:#4ac26b}
ol.timeline li.next{background:#fff8c5;border:2px solid #bf8700}
ol.timeline li.waiting{background:#f6f8fa}
ol.timeline li.declared{border-style:dashed;color:#656d76}
ol.timeline li.gap{border:none;background:none;color:#656d76}
.state{display:block;font-size:11.5px;text-transform:uppercase;letter-spacing:.04em;color:#656d76}
footer{max-width:1120px;margin:0 auto;padding:12px 20px 30px;color:#656d76;font-size:12.5px}
`;

/** Text from a file or a server, made inert in an HTML text node. */
export function escapeHtmlText(value: string | number): string {
  return escapeUTF8(safeText(String(value)));
}

const t = escapeHtmlText;

const OUTCOME_TONE: Readonly<Record<PassOutcome, string>> = {
  success: 'ok', suspended: 'info', conflict: 'warn', unsafe: 'warn',
  'invalid-config': 'bad', 'api-error': 'bad', 'partial-failure': 'bad', 'state-error': 'bad', locked: 'info',
};

const STATE_LABEL: Readonly<Record<SyncState, { readonly tone: string; readonly label: string }>> = {
  'in-sync': { tone: 'ok', label: 'in sync' },
  applied: { tone: 'ok', label: 'synced' },
  held: { tone: 'info', label: 'held' },
  drift: { tone: 'warn', label: 'drift' },
  conflict: { tone: 'warn', label: 'conflict' },
  error: { tone: 'bad', label: 'error' },
};

function badge(tone: string, label: string): string {
  // tone and label are this file's constants, never input.
  return `<span class="badge ${tone}">${t(label)}</span>`;
}

/** An ISO time (UTC, to the second) and how long ago, from the given clock reading. */
export function when(at: number | undefined, now: number): string {
  if (at === undefined) return 'never';
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return 'unknown';
  const iso = date.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC');
  return `${iso} (${ago(now - at)})`;
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

function where(at: Located | undefined): string {
  if (!at) return '';
  return ` <code class="muted">${t(`${at.file}:${at.line}${at.column !== undefined ? `:${at.column}` : ''}`)}</code>`;
}

function more(total: number, shown: number, what: string): string {
  const n = total - shown;
  return n > 0 ? `<p class="muted">and ${n} more ${what}</p>` : '';
}

export function renderStatusPage(input: StatusPageInput): string {
  const { now, agent, last } = input;
  const head = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="${Math.max(1, Math.round(input.refreshSeconds))}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>dus-sync status</title>
<style>${PAGE_STYLE}</style>
</head><body>
`;
  const parts: string[] = [head, '<header>', `<h1>dus-sync status ${last ? badge(OUTCOME_TONE[last.result], last.result) : badge('info', 'starting')}</h1>`];
  if (last) {
    parts.push(`<p>Last pass ${t(when(last.at, now))}: ${t(last.message)}</p>`);
  } else {
    parts.push(`<p>No reconcile pass has finished yet${agent.running ? '; the first one is running' : ''}.</p>`);
  }
  parts.push(`<p class="muted">${agent.ready ? 'Ready' : `Not ready: ${t(agent.readyReason ?? 'no successful pass yet')}`}. `
    + `Last success ${t(when(agent.lastSuccessAt, now))}. ${t(agent.passes)} pass(es)${agent.running ? ', one running now' : ''}; `
    + `drift check every ${t(Math.round(agent.intervalMs / 1000))} s`
    + `${agent.consecutiveFailures > 0 ? `; ${t(agent.consecutiveFailures)} failure(s) in a row` : ''}.</p>`, '</header>', '<main>');

  if (last?.issues && last.issues.length > 0) {
    const shown = last.issues.slice(0, PAGE_LIMITS.issues);
    parts.push('<h2>Configuration problems</h2><p>Nothing is written until they are fixed.</p><ul class="problems">');
    for (const i of shown) parts.push(`<li>${where(i).trim()} ${t(i.message)}</li>`);
    parts.push('</ul>', more(last.issueTotal ?? last.issues.length, shown.length, 'problem(s); run dus-sync validate'));
  }

  const snap = input.tenants;
  if (!snap) {
    parts.push('<p>No tenant has been planned yet: the page fills in once a pass reads the API.</p>');
  } else {
    const stale = last !== undefined && last.at !== snap.at;
    parts.push(`<h2>Tenants</h2><p class="muted">As of the pass at ${t(when(snap.at, now))}${stale ? '; later passes did not get as far as a plan' : ''}.</p>`);
    parts.push(summaryTable(snap.detail, now, snap.at));
    const tenants = snap.detail.tenants.slice(0, PAGE_LIMITS.tenants);
    let size = parts.reduce((n, p) => n + p.length, 0);
    let shown = 0;
    const tooBig: string[] = [];
    for (const tenant of tenants) {
      const block = tenantSection(tenant);
      // One tenant too large to show does not hide the ones after it.
      if (size + block.length > PAGE_BUDGET) {
        tooBig.push(tenant.tenant);
        continue;
      }
      parts.push(block);
      size += block.length;
      shown += 1;
    }
    if (tooBig.length > 0) {
      const names = tooBig.slice(0, 10).map((n) => t(n)).join(', ');
      parts.push(`<p class="muted">The detail of ${names}${tooBig.length > 10 ? ` and ${tooBig.length - 10} more` : ''} is too large for this page (the page is kept small); its row in the table above stands.</p>`);
    }
    const left = snap.detail.tenantTotal - shown - tooBig.length;
    if (left > 0) parts.push(`<p class="muted">and ${left} more tenant(s) not shown in detail (the page is kept small)</p>`);
  }
  parts.push('</main>', `<footer>dus-sync${input.version ? ` ${t(input.version)}` : ''} · read-only · reloads every ${t(Math.round(input.refreshSeconds))} s · `
    + 'also <a href="/metrics">/metrics</a>, <a href="/readyz">/readyz</a>, <a href="/healthz">/healthz</a></footer>', '</body></html>\n');
  return parts.join('');
}

function summaryTable(detail: PassDetail, now: number, at: number): string {
  const rows = detail.tenants.slice(0, PAGE_LIMITS.tenants).map((d) => {
    const s = STATE_LABEL[d.state];
    const conflicts = d.problems.filter((p) => p.kind === 'conflict').length;
    return `<tr><td>${t(d.tenant)}</td><td>${badge(s.tone, s.label)}</td><td class="n">${d.drift}</td><td class="n">${d.applied}</td>`
      + `<td class="n">${d.pending}</td><td class="n">${conflicts}</td><td class="n">${d.problemTotal - conflicts}${d.problemTotal > d.problems.length ? '+' : ''}</td>`
      + `<td>${t(when(at, now))}</td></tr>`;
  });
  return '<table><thead><tr><th>Tenant</th><th>State</th><th>Drift</th><th>Applied</th><th>Not applied</th><th>Conflicts</th><th>Errors</th><th>Last pass</th></tr></thead>'
    + `<tbody>${rows.join('')}</tbody></table>${more(detail.tenantTotal, rows.length, 'tenant(s)')}`;
}

function tenantSection(d: TenantDetail): string {
  const s = STATE_LABEL[d.state];
  const parts = [`<section class="tenant"><h2>${t(d.tenant)} ${badge(s.tone, s.label)}</h2>`,
    `<p>${d.drift} object(s) differed from the YAML; ${d.applied} change(s) applied, ${d.pending} not applied.</p>`];
  if (d.held > 0) parts.push(`<p>Held: ${d.held} object(s) wait${d.heldWhy ? ` (${t(d.heldWhy)}${d.held > 1 ? '; and more' : ''})` : ''}.</p>`);
  if (d.problems.length > 0) {
    const shown = d.problems.slice(0, PAGE_LIMITS.problems);
    parts.push('<ul class="problems">', ...shown.map(problem), '</ul>', more(d.problemTotal, shown.length, 'conflict(s) or error(s)'));
  }
  if (d.actions.length > 0) {
    const shown = d.actions.slice(0, PAGE_LIMITS.actions);
    parts.push(...shown.map(actionBlock), more(d.actionTotal, shown.length, 'action(s)'));
  }
  parts.push('</section>');
  return parts.join('');
}

function problem(p: StatusProblem): string {
  const tone = p.kind === 'conflict' ? 'warn' : 'bad';
  return `<li>${badge(tone, p.kind)} ${t(p.subject)}${where(p.at)}: ${t(p.message)}</li>`;
}

const PHASE_MARK: Readonly<Record<PhaseRow['state'], string>> = { triggered: '✓', next: '→', waiting: '·', declared: '+' };
const PHASE_LABEL: Readonly<Record<PhaseRow['state'], string>> = {
  triggered: 'triggered', next: 'next', waiting: 'waiting', declared: 'not yet appended',
};

function actionBlock(a: ActionTimeline): string {
  const head = `<h3>action ${a.id}${a.found ? (a.status !== undefined ? ` <span class="muted">status ${t(a.status)}</span>` : '') : ` ${badge('bad', 'not found')}`}${where(a.at)}</h3>`;
  const next = a.nextIndex !== undefined ? a.phases.find((p) => p.index === a.nextIndex) : undefined;
  const declaredOnly = a.declaredPhases - a.livePhases;
  const summary = `<p class="muted">${a.livePhases} phase(s) live of ${a.declaredPhases} declared`
    + `${next ? `; next: ${t(next.name)} (#${next.index})` : a.nextIndex !== undefined ? `; next: #${a.nextIndex}` : a.found && a.livePhases > 0 ? '; every live phase is triggered' : ''}`
    + `${declaredOnly > 0 ? `; ${declaredOnly} declared but not yet appended` : ''}${a.note !== undefined ? `; ${t(a.note)}` : ''}${a.held !== undefined ? `; <strong>held</strong>: ${t(a.held)}` : ''}</p>`;
  const items: string[] = [];
  if (a.phasesBefore > 0) items.push(`<li class="gap">… ${a.phasesBefore} earlier phase(s)</li>`);
  for (const p of a.phases) {
    items.push(`<li class="${p.state}"><span class="state">${PHASE_MARK[p.state]} #${p.index} ${PHASE_LABEL[p.state]}${p.appended ? ' (appended now)' : ''}</span>`
      + `${t(p.name)}${p.state === 'declared' ? where(p.at) : ''}</li>`);
  }
  if (a.phasesAfter > 0) items.push(`<li class="gap">and ${a.phasesAfter} more phase(s)</li>`);
  return `${head}${summary}${items.length > 0 ? `<ol class="timeline">${items.join('')}</ol>` : ''}`;
}
