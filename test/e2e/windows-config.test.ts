// Sync windows and min_soak through the built CLI (docs/rollout-control.md): a key pasted into a
// window's timezone or schedule is never printed; durations past their bounds are refused at their
// line by validate (not a bare library error from plan); a first-seen time at the end of the dates
// holds its action only; and the window configs that would silently hold nothing are refused.
import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { runCli, treesRemovedAfterAll } from './helpers.js';

const KEY = 'Zq7vK2pLm9XwR4tYbN8s';
const tree = treesRemovedAfterAll();

const CONFIG = (extra = '') => `apiVersion: dus-sync/v1
kind: Config
base_url: http://127.0.0.1:9
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
${extra}`;

const ACTION = 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec: { id: 43, phases: [ { name: p0 } ] }\n';

let emu: RunningEmulator | undefined;
afterEach(async () => { await emu?.close(); emu = undefined; });

function env(dir: string, extra: Record<string, string> = {}) {
  return { DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(dir, '.state'), ...extra };
}

describe('window and soak configs through the CLI', () => {
  it('a key pasted into timezone or schedule is never printed: one sentence at its line, exit 1, no stack', async () => {
    for (const [field, window] of [
      ['timezone', `{ name: w, kind: deny, duration: 1h, schedule: "0 0 * * *", timezone: "${KEY}" }`],
      ['schedule', `{ name: w, kind: deny, duration: 1h, schedule: "${KEY}" }`],
    ] as const) {
      const dir = tree({ 'dus-sync.yaml': CONFIG(`windows:\n  - ${window}\n`), 'a.yaml': ACTION });
      for (const args of [['validate'], ['validate', '--format', 'json'], ['plan'], ['plan', '--format', 'json'], ['plan', '--format', 'markdown'], ['status']]) {
        const r = await runCli(args, { cwd: dir, env: env(dir) });
        const out = r.stdout + r.stderr;
        expect(r.code, `${args.join(' ')}: ${out}`).toBe(1);
        expect(out, args.join(' ')).not.toContain(KEY);
        expect(out).not.toMatch(/Zq7vK2pL|Cron(Pattern|Date)|\n\s+at /);
        expect(out).toContain(`windows[0].${field} is not`);
        expect(out).toMatch(/dus-sync\.yaml:8:\d+|"line": 8/);
      }
    }
  }, 60_000);

  it('min_soak and window durations past their bounds are refused by validate at their line', async () => {
    const soak = tree({
      'dus-sync.yaml': CONFIG(),
      'a.yaml': 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec: { id: 43, pacing: gated, min_soak: 9999999999h, phases: [ { name: canary } ] }\n',
    });
    const v = await runCli(['validate'], { cwd: soak, env: env(soak) });
    expect(v.code).toBe(1);
    expect(v.stdout).toContain('a.yaml:4:42: spec.min_soak takes at most 8760h (a year), not "9999999999h"');
    const p = await runCli(['plan'], { cwd: soak, env: env(soak) });
    expect(p.code).toBe(1);
    expect(p.stderr).toContain('a.yaml:4:42: spec.min_soak takes at most 8760h');
    expect(p.stderr).not.toContain('Invalid time value');

    const win = tree({ 'dus-sync.yaml': CONFIG('windows:\n  - { name: freeze, kind: deny, schedule: "0 0 * * *", duration: 99999999999h }\n'), 'a.yaml': ACTION });
    const w = await runCli(['validate'], { cwd: win, env: env(win) });
    expect(w.code).toBe(1);
    expect(w.stdout).toMatch(/dus-sync\.yaml:8:\d+: windows\[0\]\.duration takes at most 8784h \(a leap year\), not "99999999999h"/);
  }, 60_000);

  it('a first-seen time at the end of the dates holds its action only; the unrelated action is appended', async () => {
    emu = await startEmulator({
      seed: { tenants: { acme: { api_key: KEY, bundles: [], actions: [
        { id: 43, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }], phases_triggered: [true] },
        { id: 44, status: 'pending', phases: [] },
      ] } } } as unknown as Seed,
      port: 0, host: '127.0.0.1',
    });
    const dir = tree({
      'dus-sync.yaml': CONFIG(),
      'a.yaml': 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec: { id: 43, pacing: gated, min_soak: 1h, phases: [ { name: canary }, { name: wave-1 } ] }\n'
        + '---\napiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec: { id: 44, phases: [ { name: unrelated } ] }\n',
    });
    const state = join(dir, '.state');
    mkdirSync(state, { mode: 0o700 });
    writeFileSync(join(state, 'triggered.json'), JSON.stringify({ version: 1, phases: [{ tenant: 'acme', action: 43, index: 0, name: 'canary', first_seen: '+275760-09-13T00:00:00.000Z' }] }));
    chmodSync(join(state, 'triggered.json'), 0o600);
    const r = await runCli(['apply', '--auto-approve'], { cwd: dir, env: env(dir, { DUS_BASE_URL: emu.url }) });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).not.toContain('Invalid time value');
    expect(emu.store.getAction('acme', 44)!.phases.map((p) => p.name)).toEqual(['unrelated']);
    expect(emu.store.getAction('acme', 43)!.phases.map((p) => p.name)).toEqual(['canary']);
  }, 60_000);

  it('validate and plan refuse a window tenant nothing names, two windows of one name, 7 fields, a schedule that never opens', async () => {
    const cases: [string, RegExp][] = [
      ['{ name: freeze, kind: deny, schedule: "* * * * *", duration: 1h, tenants: [acme-prod] }', /dus-sync\.yaml:8:\d+: window "freeze" \(windows\[0\]\) names tenant "acme-prod", which no tenants: entry, default_tenant or document names, so it would hold nothing/],
      ['{ name: w, kind: deny, schedule: "0 0 * * *", duration: 1h }\n  - { name: w, kind: allow, schedule: "0 9 * * *", duration: 1h }', /dus-sync\.yaml:9:\d+: windows\[1\]\.name is the name of windows\[0\] too \(line 8\)/],
      ['{ name: w, kind: deny, schedule: "0 0 0 1 1 * 2030", duration: 1h }', /dus-sync\.yaml:8:\d+: windows\[0\]\.schedule is not a cron expression of 5 fields \(or 6 with seconds\)/],
      ['{ name: w, kind: allow, schedule: "0 0 30 2 *", duration: 1h }', /dus-sync\.yaml:8:\d+: windows\[0\]\.schedule never opens/],
      // An empty list would make a freeze hold nothing (the second tester round).
      ['{ name: w, kind: deny, schedule: "* * * * *", duration: 1h, tenants: [] }', /dus-sync\.yaml:8:\d+: tenants must not be an empty list; leave it out to mean all/],
      ['{ name: w, kind: deny, schedule: "* * * * *", duration: 1h, kinds: [] }', /dus-sync\.yaml:8:\d+: kinds must not be an empty list; leave it out to mean all/],
    ];
    for (const [window, message] of cases) {
      const dir = tree({ 'dus-sync.yaml': CONFIG(`windows:\n  - ${window}\n`), 'a.yaml': ACTION });
      const v = await runCli(['validate'], { cwd: dir, env: env(dir) });
      expect(v.code, v.stdout).toBe(1);
      expect(v.stdout).toMatch(message);
      const p = await runCli(['plan'], { cwd: dir, env: env(dir) });
      expect(p.code, p.stderr).toBe(1);
      expect(p.stderr).toMatch(message);
    }
  }, 60_000);
});
