// The checks of `windows:` in dus-sync.yaml and of spec.min_soak (docs/rollout-control.md): each a
// sentence at its line that never quotes a schedule or time zone, bounded durations, unique names,
// and window tenants that name a tenant of the repository.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { resolveConfig } from '../../src/load/config.js';
import { loadDocuments } from '../../src/load/index.js';

const tmp = mkdtempSync(join(tmpdir(), 'dus-windows-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

const KEY = 'Zq7vK2pLm9XwR4tYbN8s';
const BASE = 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n';

async function issuesOf(config: string): Promise<string[]> {
  const dir = join(tmp, String(n++));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'dus-sync.yaml'), config);
  const err = await resolveConfig({ cwd: dir, env: {} }).then(() => undefined, (e: unknown) => e);
  if (err === undefined) return [];
  expect(err).toBeInstanceOf(ConfigError);
  return (err as ConfigError).issues.map((i) => `${i.line}: ${i.message}`);
}

describe('windows in dus-sync.yaml', () => {
  it('a key pasted into timezone or schedule is refused at its line and never quoted', async () => {
    const tz = await issuesOf(`${BASE}windows:\n  - { name: w, kind: deny, duration: 1h, schedule: "0 0 * * *", timezone: "${KEY}" }\n`);
    expect(tz).toEqual(['7: windows[0].timezone is not an IANA time zone name (like Europe/Berlin or UTC); the value is not shown, in case it is a key']);
    const sched = await issuesOf(`${BASE}windows:\n  - name: w\n    kind: deny\n    duration: 1h\n    schedule: "${KEY}"\n`);
    expect(sched).toEqual(['10: windows[0].schedule is not a cron expression of 5 fields (or 6 with seconds), like "0 22 * * 1-5"; the value is not shown, in case it is a key']);
    const fiveBad = await issuesOf(`${BASE}windows:\n  - { name: w, kind: deny, duration: 1h, schedule: "0 0 * * ${KEY}" }\n`);
    expect(fiveBad).toHaveLength(1);
    expect(fiveBad[0]).toContain('windows[0].schedule is not a valid cron expression');
    for (const m of [...tz, ...sched, ...fiveBad]) expect(m).not.toMatch(/Zq7vK2pL|CronPattern|CronDate/);
  });

  it('takes 5 fields or 6 with seconds: 4 or 7 are refused at the schedule', async () => {
    expect(await issuesOf(`${BASE}windows:\n  - { name: w, kind: deny, schedule: "0 0 0 1 1 * 2030", duration: 1h }\n`))
      .toEqual(['7: windows[0].schedule is not a cron expression of 5 fields (or 6 with seconds), like "0 22 * * 1-5"; the value is not shown, in case it is a key']);
    expect(await issuesOf(`${BASE}windows:\n  - { name: w, kind: deny, schedule: "0 0 * *", duration: 1h }\n`)).toHaveLength(1);
    expect(await issuesOf(`${BASE}windows:\n  - { name: w, kind: deny, schedule: "0 0 0 * * *", duration: 1h }\n`)).toEqual([]);
  });

  it('refuses a schedule that never opens', async () => {
    expect(await issuesOf(`${BASE}windows:\n  - { name: w, kind: allow, schedule: "0 0 30 2 *", duration: 1h }\n`))
      .toEqual(['7: windows[0].schedule never opens: it gives no start within the next 5 years (like "0 0 30 2 *", February 30th)']);
  });

  it('refuses two windows of one name, at the second', async () => {
    expect(await issuesOf(`${BASE}windows:\n  - { name: w, kind: deny, schedule: "0 0 * * *", duration: 1h }\n  - { name: w, kind: allow, schedule: "0 9 * * *", duration: 1h }\n`))
      .toEqual(['8: windows[1].name is the name of windows[0] too (line 7); give each window its own name, since plan and status tell them apart by it']);
  });

  it('bounds the duration: more than 0, at most 8784h', async () => {
    expect(await issuesOf(`${BASE}windows:\n  - { name: w, kind: deny, schedule: "0 0 * * *", duration: 99999999999h }\n`))
      .toEqual(['7: windows[0].duration takes at most 8784h (a leap year), not "99999999999h"']);
    expect(await issuesOf(`${BASE}windows:\n  - { name: w, kind: deny, schedule: "0 0 * * *", duration: 8784h }\n`)).toEqual([]);
    expect(await issuesOf(`${BASE}windows:\n  - { name: w, kind: deny, schedule: "0 0 * * *", duration: 0s }\n`))
      .toEqual(['7: windows[0].duration must be longer than 0']);
  });
});

describe('a window tenant must be a tenant of the repository', () => {
  const doc = (tenant: string) => `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: ${tenant} }\nspec: { id: 1, phases: [ { name: p0 } ] }\n`;

  async function load(config: string, docs: Record<string, string>) {
    const dir = join(tmp, String(n++));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'dus-sync.yaml'), config);
    const resolved = await resolveConfig({ cwd: dir, env: {} });
    return loadDocuments(Object.entries(docs).map(([path, text]) => ({ path, text })), resolved, { tenants: ['acme'] });
  }

  it('a tenant nothing names is an error at its entry, with the closest known name', async () => {
    const typo = await load(`${BASE}windows:\n  - { name: f, kind: deny, schedule: "* * * * *", duration: 1h, tenants: [acmee] }\n`, { 'a.yaml': doc('acme') });
    expect(typo.issues.map((i) => i.message)).toEqual([expect.stringMatching(/names tenant "acmee".*; did you mean "acme"\?$/)]);
    const r = await load(`${BASE}windows:\n  - name: freeze\n    kind: deny\n    schedule: "* * * * *"\n    duration: 1h\n    tenants: [acme, acme-prod]\n`, { 'a.yaml': doc('acme') });
    expect(r.issues.map((i) => `${i.file}:${i.line}:${i.column}: ${i.message}`)).toEqual([
      expect.stringMatching(/dus-sync\.yaml:11:21: window "freeze" \(windows\[0\]\) names tenant "acme-prod", which no tenants: entry, default_tenant or document names, so it would hold nothing; the tenants known are "acme"$/),
    ]);
  });

  it('a tenant that only a document names is fine, whatever --tenant leaves out', async () => {
    const config = 'apiVersion: dus-sync/v1\nkind: Config\nwindows:\n  - { name: freeze, kind: deny, schedule: "* * * * *", duration: 1h, tenants: [globex] }\n';
    expect((await load(config, { 'a.yaml': doc('acme'), 'g.yaml': doc('globex') })).issues).toEqual([]);
    expect((await load(config, { 'a.yaml': doc('acme') })).issues).toHaveLength(1);
  });
});

describe('spec.min_soak', () => {
  const action = (soak: string) => `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec: { id: 43, pacing: gated, min_soak: ${soak}, phases: [ { name: canary } ] }\n`;

  async function issues(soak: string): Promise<string[]> {
    const dir = join(tmp, String(n++));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'dus-sync.yaml'), BASE);
    const resolved = await resolveConfig({ cwd: dir, env: {} });
    return loadDocuments([{ path: "a.yaml", text: action(soak) }], resolved).issues.map((i) => `${i.line}: ${i.message}`);
  }

  it('without pacing: gated is refused: it would have no effect', async () => {
    const dir = join(tmp, String(n++));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'dus-sync.yaml'), BASE);
    const resolved = await resolveConfig({ cwd: dir, env: {} });
    const text = 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec: { id: 43, min_soak: 30m, phases: [ { name: canary } ] }\n';
    expect(loadDocuments([{ path: 'a.yaml', text }], resolved).issues.map((i) => `${i.line}: ${i.message}`))
      .toEqual(['4: spec.min_soak has no effect without pacing: gated; add `pacing: gated` to soak each phase, or remove min_soak']);
  });

  it('takes at most 8760h (a year), refused at its line', async () => {
    expect(await issues('9999999999h')).toEqual(['4: spec.min_soak takes at most 8760h (a year), not "9999999999h"']);
    expect(await issues('8761h')).toHaveLength(1);
    expect(await issues('8760h')).toEqual([]);
  });
});
