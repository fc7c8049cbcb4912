// The status page (watch --listen, GET /): what a pass records for it, how it is rendered (every
// name and message escaped, keys redacted, lists and the page bounded) and how it is served.
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startHttp, type AgentHttp } from '../../src/agent/http.js';
import { AgentMetrics } from '../../src/agent/metrics.js';
import { StatusBoard, PAGE_HEADERS, type PageAgentState } from '../../src/agent/status-page.js';
import { plan } from '../../src/core/plan.js';
import { PAGE_BUDGET, PAGE_STYLE, renderStatusPage, type StatusPageInput } from '../../src/core/render/status-page.js';
import { DETAIL_LIMITS, passDetail, type PassDetail } from '../../src/core/status-detail.js';
import type { ChangeResult, PhaseChange, SourceLocation } from '../../src/model/index.js';
import { clearSecretsForTests, containsSecret, registerSecret } from '../../src/redact.js';
import { action, desired, firmware, live, liveAction, liveFirmware } from '../core/builders.js';
import { result } from './helpers.js';

const NOW = 1_700_000_000_000;
const AGENT: PageAgentState = { passes: 3, running: false, intervalMs: 60_000, consecutiveFailures: 0, lastSuccessAt: NOW - 5000, ready: true };

const servers: AgentHttp[] = [];
afterEach(async () => {
  clearSecretsForTests();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function withSources(a: ReturnType<typeof action>, file: string, firstLine: number): ReturnType<typeof action> {
  const phaseSources: SourceLocation[] = a.phases.map((_p, i) => ({ file, line: firstLine + i, column: 7 }));
  return { ...a, source: { file, line: firstLine - 3, column: 1 }, phaseSources };
}

function page(detail: PassDetail | undefined, extra: Partial<StatusPageInput> = {}): string {
  return renderStatusPage({
    now: NOW,
    refreshSeconds: 10,
    agent: AGENT,
    last: { result: 'success', message: 'in sync', at: NOW - 5000 },
    ...(detail ? { tenants: { detail, at: NOW - 5000 } } : {}),
    ...extra,
  });
}

/** Raw characters that must never reach the page: C0 (but tab and line feed), DEL, C1, bidi controls. */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('passDetail: what a pass keeps for the page', () => {
  it('gives each action a timeline: triggered, next, waiting, then declared but not yet appended', () => {
    const want = desired(withSources(action(42, ['canary', 'wave-1', 'wave-2', 'all']), 'tenants/acme/actions.yaml', 10));
    const have = live({ acme: { actions: [liveAction(42, ['canary', 'wave-1'], { status: 'active', phases_triggered: [true, false], next_phase_index: 1 })] } });
    const d = passDetail({ desired: want, live: have, plan: plan(want, have) });
    const t = d.tenants[0]!;
    expect(t).toMatchObject({ tenant: 'acme', state: 'drift', drift: 2, applied: 0, pending: 2, problemTotal: 0, actionTotal: 1 });
    const a = t.actions[0]!;
    expect(a).toMatchObject({ id: 42, found: true, status: 'active', livePhases: 2, declaredPhases: 4, nextIndex: 1, phasesBefore: 0, phasesAfter: 0 });
    expect(a.phases.map((p) => [p.index, p.name, p.state])).toEqual([
      [0, 'canary', 'triggered'], [1, 'wave-1', 'next'], [2, 'wave-2', 'declared'], [3, 'all', 'declared'],
    ]);
    expect(a.phases[2]!.at).toEqual({ file: 'tenants/acme/actions.yaml', line: 12, column: 7 });
  });

  it('shows the phases this pass appended as live, and counts what was applied', () => {
    const want = desired(action(7, ['canary', 'wave-1', 'wave-2']));
    const have = live({ acme: { actions: [liveAction(7, ['canary'], { phases_triggered: [true], next_phase_index: null })] } });
    const p = plan(want, have);
    const appends = p.changes.filter((c): c is PhaseChange => c.kind === 'phase');
    // The first append went through, the second failed: the timeline stops at the failed one.
    const results: ChangeResult[] = [
      { change: appends[0]!, status: 'applied', durationMs: 1 },
      { change: appends[1]!, status: 'failed', message: 'HTTP 500 from the server', durationMs: 1 },
    ];
    const t = passDetail({ desired: want, live: have, plan: p, results }).tenants[0]!;
    expect(t).toMatchObject({ state: 'error', drift: 2, applied: 1, pending: 0, problemTotal: 1 });
    expect(t.problems[0]).toMatchObject({ kind: 'failed', subject: 'phase 2 of action 7', message: 'HTTP 500 from the server' });
    expect(t.actions[0]!.phases.map((p) => [p.name, p.state, p.appended === true])).toEqual([
      ['canary', 'triggered', false], ['wave-1', 'next', true], ['wave-2', 'declared', false],
    ]);
  });

  it('keeps conflicts and plan errors with their file and line, and an unknown action as not found', () => {
    const want = desired(
      action(1, ['canary', 'wave-1'], { file: 'tenants/acme/a.yaml', line: 4 }),
      action(2, ['x'], { file: 'tenants/acme/b.yaml', line: 9 }),
      firmware({ version_number: '9.9.9', uncompressed_size: 5 }, { file: 'tenants/acme/fw.yaml', line: 3 }),
    );
    const have = live({ acme: { actions: [liveAction(1, ['other']), 2], firmwares: [liveFirmware({ version_number: '2.4.0' })] } });
    const t = passDetail({ desired: want, live: have, plan: plan(want, have) }).tenants[0]!;
    expect(t.state).toBe('error');
    const conflict = t.problems.find((p) => p.kind === 'conflict')!;
    expect(conflict).toMatchObject({ subject: 'action 1' });
    expect(conflict.at?.file).toBe('tenants/acme/a.yaml');
    const errors = t.problems.filter((p) => p.kind === 'error');
    expect(errors.map((e) => e.at?.file)).toContain('tenants/acme/fw.yaml');
    expect(t.actions.find((a) => a.id === 2)).toMatchObject({ found: false, livePhases: 0, declaredPhases: 1 });
  });

  it('is bounded: a few dozen of each list with the totals, a window of a long rollout, clipped texts', () => {
    const names = Array.from({ length: 200 }, (_, i) => `phase-${i}`);
    const objects = [
      action(1, names),
      ...Array.from({ length: 120 }, (_, i) => action(100 + i, ['only'], { tenant: `t${String(i).padStart(3, '0')}` })),
      ...Array.from({ length: 80 }, (_, i) => action(1000 + i, ['a'])),
    ];
    const want = desired(...objects);
    const triggered = names.slice(0, 150).map(() => true);
    const have = live({ acme: { actions: [liveAction(1, names.slice(0, 150).map((n) => (n === 'phase-0' ? 'x'.repeat(5000) : n)), { phases_triggered: triggered })] } });
    const d = passDetail({ desired: want, live: have, plan: plan(want, have) });
    expect(d.tenantTotal).toBe(121);
    expect(d.tenants).toHaveLength(DETAIL_LIMITS.tenants);
    const acme = d.tenants.find((t) => t.tenant === 'acme')!;
    expect(acme.actionTotal).toBe(81);
    expect(acme.actions).toHaveLength(DETAIL_LIMITS.actions);
    const long = acme.actions[0]!;
    expect(long.phases).toHaveLength(DETAIL_LIMITS.phases);
    // The window starts just before the first phase still to come (here: the first declared one).
    expect(long.phases[0]!.index).toBe(147);
    expect(long.phasesBefore + long.phases.length + long.phasesAfter).toBe(200);
    expect(acme.problemTotal).toBeGreaterThanOrEqual(1);
    expect(acme.problems.length).toBeLessThanOrEqual(DETAIL_LIMITS.problems);
    for (const p of acme.problems) expect(p.message.length).toBeLessThanOrEqual(DETAIL_LIMITS.message + 1);
  });
});

const HOSTILE = [
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(2)>',
  "'><svg/onload=alert(3)>",
  '</style><script>alert(4)</script>',
  '<!--',
  ']]><iframe src="javascript:alert(5)">',
  'red\u001b[31m\u0000\u0007bell\r\nline\u202egnp.exe\u2028sep\u0085',
  '&lt;already&gt; &amp; <b>bold</b>',
];

function hostileDetail(): PassDetail {
  const want = desired(
    ...HOSTILE.map((h, i) => withSources(action(i + 1, [h, `${h}-declared`], { tenant: h }), `tenants/${h}.yaml`, 5)),
  );
  const have = live(Object.fromEntries(HOSTILE.map((h, i) => [h, {
    actions: [liveAction(i + 1, [`${h}`, `${h}-foreign`], { status: h, phases_triggered: [true, false] })],
  }])));
  return passDetail({ desired: want, live: have, plan: plan(want, have) });
}

describe('renderStatusPage: escaping', () => {
  it('shows hostile tenant, phase, status and file names as text: no element, attribute or raw control character gets through', () => {
    const html = page(hostileDetail(), {
      last: {
        result: 'invalid-config', message: HOSTILE.join(' '), at: NOW - 1000,
        issues: HOSTILE.map((h, i) => ({ file: `${h}.yaml`, line: i + 1, column: 2, message: h })), issueTotal: HOSTILE.length,
      },
    });
    // No tag but the page's own; no script at all.
    expect(html.toLowerCase()).not.toContain('<script');
    expect(html.toLowerCase()).not.toContain('<img');
    expect(html.toLowerCase()).not.toContain('<svg');
    expect(html.toLowerCase()).not.toContain('<iframe');
    expect(html).not.toContain('<!--');
    expect(html).not.toContain('<b>');
    const tags = [...html.matchAll(/<\/?([a-zA-Z0-9]+)/g)].map((m) => m[1]!.toLowerCase());
    expect(new Set(tags)).toEqual(new Set(['html', 'head', 'meta', 'title', 'style', 'body', 'header', 'h1', 'span', 'p', 'main', 'h2', 'ul', 'li',
      'code', 'table', 'thead', 'tr', 'th', 'tbody', 'td', 'section', 'h3', 'ol', 'footer', 'a']));
    // Shown, escaped, readable.
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('&quot;&gt;&lt;img src=x onerror=alert(2)&gt;');
    expect(html).toContain('&amp;lt;already&amp;gt;');
    expect(html).toContain('red\\u001b[31m\\u0000\\u0007bell\\r\\nline\\u202egnp.exe\\u2028sep\\u0085');
    expect(html).not.toMatch(RAW_CONTROL);
    // The only style is the page's own (its hash is what the CSP allows).
    expect([...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1])).toEqual([PAGE_STYLE]);
    // Attributes hold only the page's constants.
    const attrs = [...html.matchAll(/\s([a-z-]+)="([^"]*)"/g)].map((m) => `${m[1]}=${m[2]}`);
    for (const a of attrs) expect(a).toMatch(/^(lang=en|charset=utf-8|http-equiv=refresh|content=\d+|name=(viewport|referrer)|content=width=device-width, initial-scale=1|content=no-referrer|class=[a-z -]+|href=\/(metrics|readyz|healthz))$/);
  });

  it('says when no pass has finished yet, and when the tenants are from an older pass than the last', () => {
    const first = renderStatusPage({ now: NOW, refreshSeconds: 10, agent: { ...AGENT, passes: 0, running: true, ready: false } });
    expect(first).toContain('No reconcile pass has finished yet; the first one is running.');
    expect(first).toContain('No tenant has been planned yet');
    const stale = page(hostileDetail(), { last: { result: 'api-error', message: 'GET /api/v1/firmware-bundles: 503', at: NOW } });
    expect(stale).toContain('later passes did not get as far as a plan');
    expect(stale).toContain('api-error');
  });
});

describe('renderStatusPage: bounded', () => {
  it('cuts lists with "and N more" and keeps the page under its budget however large the pass', () => {
    const big = 'w'.repeat(DETAIL_LIMITS.name);
    const tenants = Array.from({ length: 120 }, (_, i) => `tenant-${String(i).padStart(3, '0')}-${'n'.repeat(150)}`);
    const objects = tenants.flatMap((t) => Array.from({ length: 60 }, (_, j) => action(j + 1, Array.from({ length: 40 }, (_, k) => `${big}-${k}`), { tenant: t })));
    const want = desired(...objects);
    const have = live(Object.fromEntries(tenants.map((t) => [t, { actions: Array.from({ length: 60 }, (_, j) => liveAction(j + 1, ['conflicting'])) }])));
    const detail = passDetail({ desired: want, live: have, plan: plan(want, have) });
    const html = page(detail);
    expect(html.length).toBeLessThan(PAGE_BUDGET + 60_000);
    expect(html).toMatch(/and 70 more tenant\(s\)/);
    expect(html).toMatch(/and \d+ more tenant\(s\) not shown in detail/);
    expect(html).toMatch(/and \d+ more action\(s\)/);
    expect(html).toMatch(/and \d+ more phase\(s\)|… \d+ earlier phase\(s\)/);
    expect(html).toMatch(/and \d+ more conflict\(s\) or error\(s\)/);
  });

  it('a tenant too large for the page does not hide the detail of the tenants after it', () => {
    const huge = '&'.repeat(DETAIL_LIMITS.name);
    const objects = [
      ...Array.from({ length: 50 }, (_, j) => action(j + 1, Array.from({ length: 40 }, (_, k) => `${huge}-${k}`), { tenant: 'big' })),
      action(1, ['canary', 'small-wave'], { tenant: 'small' }),
    ];
    const want = desired(...objects);
    const have = live({
      big: { actions: Array.from({ length: 50 }, (_, j) => liveAction(j + 1, Array.from({ length: 40 }, (_, k) => `${huge}-${k}-live`))) },
      small: { actions: [liveAction(1, ['canary'])] },
    });
    const html = page(passDetail({ desired: want, live: have, plan: plan(want, have) }));
    expect(html.length).toBeLessThan(PAGE_BUDGET + 60_000);
    expect(html).toContain('small-wave');
    expect(html).toMatch(/The detail of big is too large for this page/);
  });

  it('shows a window of a long rollout around the next phase', () => {
    const names = Array.from({ length: 100 }, (_, i) => `p${i}`);
    const want = desired(action(5, names));
    const have = live({ acme: { actions: [liveAction(5, names.slice(0, 60), { phases_triggered: names.slice(0, 60).map((_n, i) => i < 50), next_phase_index: 50 })] } });
    const html = page(passDetail({ desired: want, live: have, plan: plan(want, have) }));
    expect(html).toContain('… 47 earlier phase(s)');
    expect(html).toContain('and 23 more phase(s)');
    expect(html).toContain('next: p50 (#50)');
    expect(html).toContain('60 phase(s) live of 100 declared; next: p50 (#50); 40 declared but not yet appended');
  });
});

describe('StatusBoard: keys never reach the page', () => {
  const KEY = 'sk_live_status-page-Key/with+odd=chars"0123456789';

  it('redacts a key a server echoed into a phase name, a status, a conflict or an error, in any encoding', () => {
    registerSecret(KEY);
    const forms = [KEY, encodeURIComponent(KEY), JSON.stringify(KEY), Buffer.from(KEY).toString('base64'), KEY.slice(0, 20), KEY.replace(/"/g, '&quot;')];
    const want = desired(action(1, ['canary', 'wave-1']), firmware({ version_number: '9.9.9', uncompressed_size: 1 }));
    const have = live({ acme: { actions: [liveAction(1, [`echo ${forms[0]}`], { status: `s ${forms[1]}`, phases_triggered: [false] })] } });
    const board = new StatusBoard({ version: '1.2.3' });
    board.recordPass(result('conflict', {
      message: `server said ${forms.join(' | ')}`,
      detail: passDetail({ desired: want, live: have, plan: plan(want, have) }),
    }), 10, NOW - 1000);
    const html = board.render({ ...AGENT, ready: false, readyReason: `last pass: ${forms[3]}` }, NOW);
    expect(html).toContain('[REDACTED]');
    expect(containsSecret(html)).toBe(false);
    for (const f of forms) expect(html).not.toContain(f);
    expect(html).not.toContain(KEY.slice(0, 12));
  });
});

describe('StatusBoard: cheap reloads', () => {
  it('renders once a second for the same state, again after a pass or when a key is added', () => {
    const board = new StatusBoard();
    const want = desired(action(1, ['canary']));
    const have = live({ acme: { actions: [liveAction(1, ['canary-late-registered-key-0123'], { phases_triggered: [false] })] } });
    board.recordPass(result('conflict', { detail: passDetail({ desired: want, live: have, plan: plan(want, have) }) }), 1, NOW);
    const first = board.render(AGENT, NOW);
    expect(board.render(AGENT, NOW + 999)).toBe(first);
    expect(board.render(AGENT, NOW + 1000)).not.toBe(first);
    // A key read after the page was rendered (a rotated secret) is redacted at the next reload.
    expect(first).toContain('canary-late-registered-key-0123');
    registerSecret('late-registered-key-0123');
    expect(board.render(AGENT, NOW + 1000)).not.toContain('late-registered-key');
    board.recordPass(result('success'), 1, NOW + 1500);
    expect(board.render(AGENT, NOW + 1500)).toContain('Last pass');
  });

  it('serves a key added since the last identical body redacted (the HTTP layer\'s memo follows the keys)', async () => {
    const text = 'phase named after-the-key-registered-later-42';
    const http = await startHttp({ listen: '127.0.0.1:0', metrics: new AgentMetrics(), readiness: () => ({ ready: true }), page: () => text });
    servers.push(http);
    expect(await (await fetch(`${http.url}/`)).text()).toBe(text);
    registerSecret('the-key-registered-later');
    expect(await (await fetch(`${http.url}/`)).text()).toBe('phase named after-[REDACTED]-42');
  });
});

describe('GET / on the agent\'s HTTP server', () => {
  async function serve(pageHtml: () => string) {
    const http = await startHttp({ listen: '127.0.0.1:0', metrics: new AgentMetrics(), readiness: () => ({ ready: true }), page: pageHtml });
    servers.push(http);
    return http;
  }

  it('answers HTML with a strict CSP (no script, the style by hash), nosniff and no caching', async () => {
    const board = new StatusBoard();
    const http = await serve(() => board.render(AGENT, NOW));
    const res = await fetch(`${http.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    const body = await res.text();
    const style = /<style>([\s\S]*?)<\/style>/.exec(body)![1]!;
    expect(csp).toContain(`'sha256-${createHash('sha256').update(style).digest('base64')}'`);
    expect(body).toContain('<meta http-equiv="refresh" content="10">');
    expect(PAGE_HEADERS['content-security-policy']).toBe(csp);
  });

  it('answers HEAD without a body, and refuses other methods', async () => {
    const http = await serve(() => '<p>x</p>');
    const head = await fetch(`${http.url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('8');
    expect(await head.text()).toBe('');
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
      const res = await fetch(`${http.url}/`, { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
    }
  });

  it('renders from memory on each request: the page callback is all it calls', async () => {
    let calls = 0;
    const http = await serve(() => { calls += 1; return 'page'; });
    await Promise.all(Array.from({ length: 5 }, () => fetch(`${http.url}/?refresh=1`).then((r) => r.text())));
    expect(calls).toBe(5);
  });

  it('keeps / a 404 where no page is configured', async () => {
    const http = await startHttp({ listen: '127.0.0.1:0', metrics: new AgentMetrics(), readiness: () => ({ ready: true }) });
    servers.push(http);
    expect((await fetch(`${http.url}/`)).status).toBe(404);
  });
});
