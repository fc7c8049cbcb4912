// Rollout control through the built CLI against the emulator (docs/rollout-control.md): a paused
// action, a gated one whose phases the emulator triggers on a clock this test moves, a deny
// window, and a deactivation that would break a dependency.
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { runCli, treesRemovedAfterAll } from './helpers.js';

const KEY = 'e2e-secret-key-acme-rollout-0123';
const tree = treesRemovedAfterAll();

function seed(): Seed {
  return {
    tenants: {
      acme: {
        api_key: KEY,
        bundles: [{ version: '2025.01', firmwares: [
          { version_number: '1.2.0', component_name: 'bootloader', uncompressed_size: 10, is_deactivated: false, dependencies: [] },
          { version_number: '2.4.1', component_name: 'modem', uncompressed_size: 10, is_deactivated: false, dependencies: [{ component_name: 'bootloader', min_version: '1.1.0' }] },
        ] }],
        actions: [
          { id: 1, status: 'pending', phases: [] },
          { id: 2, status: 'pending', phases: [] },
        ],
      },
    },
  } as unknown as Seed;
}

const CONFIG = (extra = '') => `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
${extra}`;

const action = (id: number, spec: string) => `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: ${id}
${spec}  phases:
    - { name: canary }
    - { name: wave-1 }
    - { name: wave-2 }
`;

let emu: RunningEmulator | undefined;
afterEach(async () => { await emu?.close(); emu = undefined; });

function env(dir: string) {
  return { DUS_BASE_URL: emu!.url, DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(dir, '.state') };
}

describe('rollout control through the CLI', () => {
  it('paused holds, gated appends one phase per trigger and soak, and status shows both', async () => {
    let clock = 0;
    emu = await startEmulator({ seed: seed(), port: 0, host: '127.0.0.1', phaseClock: { triggerAfterMs: 1000, now: () => clock } });
    const dir = tree({
      'dus-sync.yaml': CONFIG(),
      'actions/one.yaml': action(1, '  paused: true\n'),
      'actions/two.yaml': action(2, '  pacing: gated\n  min_soak: 1s\n'),
    });
    const plan = await runCli(['plan', '--format', 'json'], { cwd: dir, env: env(dir) });
    expect(plan.code, plan.stderr).toBe(0);
    const json = JSON.parse(plan.stdout);
    expect(json.format_version).toBe(1);
    expect(json.changes.map((c: { key: string; index: number }) => `${c.key}:${c.index}`)).toEqual(['2:0']);
    expect(json.held).toEqual([expect.objectContaining({ key: '1', reason: 'paused', pending: 3, index: 0 })]);
    expect(json.summary.held).toBe(1);

    const text = await runCli(['plan'], { cwd: dir, env: env(dir) });
    expect(text.stdout).toContain('held (paused) action 1: action 1 is paused');

    let apply = await runCli(['apply', '--auto-approve'], { cwd: dir, env: env(dir) });
    expect(apply.code, apply.stderr).toBe(0);
    expect(emu.store.getAction('acme', 2)!.phases.map((p) => p.name)).toEqual(['canary']);
    expect(emu.store.getAction('acme', 1)!.phases).toEqual([]);

    // Not triggered yet: wave-1 waits.
    const waiting = JSON.parse((await runCli(['plan', '--format', 'json'], { cwd: dir, env: env(dir) })).stdout);
    expect(waiting.held.find((h: { key: string }) => h.key === '2')).toMatchObject({ reason: 'gated', index: 1 });
    // The emulator's rollout triggers canary; the first read that sees it starts the soak (kept in the state folder).
    clock = 1000;
    const soaking = JSON.parse((await runCli(['plan', '--format', 'json'], { cwd: dir, env: env(dir) })).stdout);
    expect(soaking.held.find((h: { key: string }) => h.key === '2').message).toContain('min_soak 1s');
    const times = JSON.parse(readFileSync(join(dir, '.state', 'triggered.json'), 'utf8'));
    expect(times.phases).toEqual([expect.objectContaining({ tenant: 'acme', action: 2, index: 0, name: 'canary' })]);
    expect(times.phases[0].api).toBe(emu.url);
    // Age the first-seen time past the soak, as a later run would find it (both clocks moved on).
    // Ten seconds, not an hour: the monotonic clock counts from boot, and a machine up for less
    // than an hour (a fresh CI machine) made the stamp negative, which is dropped as impossible.
    times.phases[0].first_seen = new Date(Date.now() - 10_000).toISOString();
    if (times.phases[0].mono !== undefined) times.phases[0].mono = Math.max(0, times.phases[0].mono - 10_000);
    writeFileSync(join(dir, '.state', 'triggered.json'), JSON.stringify(times));
    apply = await runCli(['apply', '--auto-approve'], { cwd: dir, env: env(dir) });
    expect(apply.code, apply.stderr).toBe(0);
    expect(emu.store.getAction('acme', 2)!.phases.map((p) => p.name)).toEqual(['canary', 'wave-1']);

    const status = await runCli(['status', '--format', 'json'], { cwd: dir, env: env(dir) });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('paused');

    // Unpaused: everything is appended at once (pacing all is the default).
    writeFileSync(join(dir, 'actions/one.yaml'), action(1, ''));
    apply = await runCli(['apply', '--auto-approve'], { cwd: dir, env: env(dir) });
    expect(apply.code, apply.stderr).toBe(0);
    expect(emu.store.getAction('acme', 1)!.phases).toHaveLength(3);
  });

  it('a saved plan that is not what the checkout plans now (the file edited, or the YAML changed) is refused, nothing written', async () => {
    emu = await startEmulator({ seed: seed(), port: 0, host: '127.0.0.1' });
    const firmware = (size: number) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.4.1", is_deactivated: true${size ? `, uncompressed_size: ${size}` : ''} }\n`;
    const dir = tree({ 'dus-sync.yaml': CONFIG(), 'actions/one.yaml': action(1, ''), 'firmwares/modem.yaml': firmware(0) });
    const planFile = join(dir, 'plan.json');
    const made = await runCli(['plan', '--out', planFile], { cwd: dir, env: env(dir) });
    expect(made.code, made.stderr).toBe(0);
    const original = readFileSync(planFile, 'utf8');
    type Edited = { kind: string; index?: number; before: Record<string, unknown>; after: Record<string, unknown>; body: Record<string, unknown> };
    const edit = (change: (p: { changes: Edited[] }) => void) => {
      const p = JSON.parse(original) as { changes: Edited[] };
      change(p);
      writeFileSync(planFile, JSON.stringify(p));
    };
    const refusedWith = async (message: RegExp) => {
      const r = await runCli(['apply', planFile], { cwd: dir, env: env(dir) });
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toContain('nothing was written');
      expect(emu!.store.getAction('acme', 1)!.phases).toEqual([]);
    };
    // Edited the same way in before, after and body: the body is its change over live, but not the YAML's.
    edit((p) => { const fw = p.changes.find((c) => c.kind === 'firmware')!; fw.after.uncompressed_size = 5; fw.before.uncompressed_size = 10; fw.body.uncompressed_size = 5; });
    await refusedWith(/the saved plan is not what the checkout's YAML plans now \(firmware 2\.4\.1 in acme would be written with other values than the YAML's\)/);
    // An append renamed in the file.
    edit((p) => { p.changes.find((c) => c.kind === 'phase' && c.index === 2)!.after.name = 'wave-2-EDITED'; });
    await refusedWith(/phase 2 of action 1 in acme is not the phase the YAML declares there/);
    // The file as made, the YAML changed since.
    writeFileSync(planFile, original);
    writeFileSync(join(dir, 'firmwares/modem.yaml'), firmware(77));
    await refusedWith(/firmware 2\.4\.1 in acme would be written with other values than the YAML's/);
    // As made, against the YAML it was made from: applied.
    writeFileSync(join(dir, 'firmwares/modem.yaml'), firmware(0));
    const ok = await runCli(['apply', planFile], { cwd: dir, env: env(dir) });
    expect(ok.code, ok.stderr).toBe(0);
    expect(emu.store.getAction('acme', 1)!.phases.map((p) => p.name)).toEqual(['canary', 'wave-1', 'wave-2']);
  });

  it('a saved plan is applied whole: --dir inside the repository, --tenant and --selector are refused with it, not silently ignored', async () => {
    emu = await startEmulator({ seed: seed(), port: 0, host: '127.0.0.1' });
    const dir = tree({
      'dus-sync.yaml': CONFIG(),
      'actions/one.yaml': action(1, ''),
      'other/readme.yaml': '',
    });
    const saved = await runCli(['plan', '--out', join(dir, 'plan.json')], { cwd: dir, env: env(dir) });
    expect(saved.code, saved.stderr).toBe(0);
    for (const flags of [['--dir', join(dir, 'other')], ['--tenant', 'globex'], ['--tenant', 'nosuch'], ['--selector', 'team=nobody']]) {
      const apply = await runCli([...flags, 'apply', join(dir, 'plan.json')], { cwd: dir, env: env(dir) });
      expect(apply.code, apply.stderr).toBe(1);
      expect(apply.stderr).toMatch(/applies the saved plan whole, as it was made; --(dir|tenant|selector)\b.* cannot narrow it\. Pass it to dus-sync plan --out instead, and apply that plan; nothing was written/);
      expect(emu.store.getAction('acme', 1)!.phases).toEqual([]);
    }
    expect(emu.stats.writes).toBe(0);
  });

  it('a saved plan made with --dir outside the config\'s folder is checked against DIR, not the config\'s folder', async () => {
    emu = await startEmulator({ seed: seed(), port: 0, host: '127.0.0.1' });
    // The documented layout: -c cfg/dus-sync.yaml --dir desired (DIR is then the repository).
    const dir = tree({ 'cfg/dus-sync.yaml': CONFIG(), 'desired/actions/one.yaml': action(1, '') });
    const c = ['-c', join(dir, 'cfg/dus-sync.yaml'), '--dir', join(dir, 'desired')];
    const planFile = join(dir, 'plan.json');
    const made = await runCli([...c, 'plan', '--out', planFile], { cwd: dir, env: env(dir) });
    expect(made.code, made.stderr).toBe(0);
    const original = readFileSync(planFile, 'utf8');
    const p = JSON.parse(original) as { changes: { kind: string; index?: number; after: Record<string, unknown> }[] };
    p.changes.find((ch) => ch.kind === 'phase' && ch.index === 2)!.after.name = 'wave-2-EDITED';
    writeFileSync(planFile, JSON.stringify(p));
    const edited = await runCli([...c, 'apply', planFile], { cwd: dir, env: env(dir) });
    expect(edited.code, edited.stderr).toBe(1);
    expect(edited.stderr).toContain('phase 2 of action 1 in acme is not the phase the YAML declares there');
    // As made, but the action paused in DIR since.
    writeFileSync(planFile, original);
    writeFileSync(join(dir, 'desired/actions/one.yaml'), action(1, '  paused: true\n'));
    const paused = await runCli([...c, 'apply', planFile], { cwd: dir, env: env(dir) });
    expect(paused.code, paused.stderr).toBe(1);
    expect(paused.stderr).toContain('action 1 in acme: action 1 is paused');
    expect(emu.store.getAction('acme', 1)!.phases).toEqual([]);
    writeFileSync(join(dir, 'desired/actions/one.yaml'), action(1, ''));
    const ok = await runCli([...c, 'apply', planFile], { cwd: dir, env: env(dir) });
    expect(ok.code, ok.stderr).toBe(0);
    expect(emu.store.getAction('acme', 1)!.phases.map((ph) => ph.name)).toEqual(['canary', 'wave-1', 'wave-2']);
  });

  it('a saved plan that changes what the checkout does not declare (a file removed since, a write added by hand) is refused', async () => {
    emu = await startEmulator({ seed: seed(), port: 0, host: '127.0.0.1' });
    const dir = tree({ 'dus-sync.yaml': CONFIG(), 'actions/one.yaml': action(1, ''), 'actions/two.yaml': action(2, '') });
    const planFile = join(dir, 'plan.json');
    const made = await runCli(['plan', '--out', planFile], { cwd: dir, env: env(dir) });
    expect(made.code, made.stderr).toBe(0);
    // Action 2's file removed after the plan was made: the plan still appends to it.
    rmSync(join(dir, 'actions/two.yaml'));
    const removed = await runCli(['apply', planFile], { cwd: dir, env: env(dir) });
    expect(removed.code, removed.stderr).toBe(1);
    expect(removed.stderr).toContain("the saved plan changes what the checkout's YAML does not declare (action 2 in acme)");
    expect(removed.stderr).toContain('nothing was written');
    expect(emu.store.getAction('acme', 1)!.phases).toEqual([]);
    expect(emu.store.getAction('acme', 2)!.phases).toEqual([]);
    // A whole checkout without any of the plan's objects is refused too, not only warned about.
    rmSync(join(dir, 'actions/one.yaml'));
    const none = await runCli(['apply', planFile], { cwd: dir, env: env(dir) });
    expect(none.code, none.stderr).toBe(1);
    expect(none.stderr).toContain('action 1 in acme; action 2 in acme');
    expect(emu.store.getAction('acme', 1)!.phases).toEqual([]);
  });

  it('a deactivation of a firmware no YAML declares, added to a saved plan with a matching fingerprint, is refused', async () => {
    emu = await startEmulator({ seed: seed(), port: 0, host: '127.0.0.1' });
    const firmware = (v: string) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "${v}", is_deactivated: true }\n`;
    // The forger plans 1.2.0's deactivation in a scratch checkout to get a real fingerprint and body.
    const scratch = tree({ 'dus-sync.yaml': CONFIG(), 'firmwares/boot.yaml': firmware('1.2.0'), 'actions/one.yaml': action(1, '') });
    const forged = await runCli(['plan', '--out', join(scratch, 'plan.json'), '--allow-broken-dependencies'], { cwd: scratch, env: env(scratch) });
    const dir = tree({ 'dus-sync.yaml': CONFIG(), 'actions/one.yaml': action(1, '') });
    const planFile = join(dir, 'plan.json');
    expect(forged.code, forged.stderr).toBe(0);
    writeFileSync(planFile, readFileSync(join(scratch, 'plan.json')));
    const r = await runCli(['apply', planFile, '--allow-broken-dependencies'], { cwd: dir, env: env(dir) });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain("the saved plan changes what the checkout's YAML does not declare (firmware 1.2.0 in acme)");
    expect(emu.store.getAction('acme', 1)!.phases).toEqual([]);
    expect(emu.stats.writes).toBe(0);
  });

  it('a saved plan does not append to an action paused or gated in git after it was saved', async () => {
    emu = await startEmulator({ seed: seed(), port: 0, host: '127.0.0.1' });
    const dir = tree({
      'dus-sync.yaml': CONFIG(),
      'actions/one.yaml': action(1, ''),
      'actions/two.yaml': action(2, ''),
    });
    const saved = await runCli(['plan', '--out', join(dir, 'plan.json')], { cwd: dir, env: env(dir) });
    expect(saved.code, saved.stderr).toBe(0);
    // The brake is pulled in git after the plan was saved (and action 2 is switched to gated).
    writeFileSync(join(dir, 'actions/one.yaml'), action(1, '  paused: true\n'));
    writeFileSync(join(dir, 'actions/two.yaml'), action(2, '  pacing: gated\n'));
    const apply = await runCli(['apply', join(dir, 'plan.json')], { cwd: dir, env: env(dir) });
    expect(apply.code).toBe(1);
    expect(apply.stderr).toContain('action 1 in acme: action 1 is paused');
    expect(apply.stderr).toContain('action 2 in acme');
    expect(apply.stderr).toContain('nothing was written');
    expect(emu.store.getAction('acme', 1)!.phases).toEqual([]);
    expect(emu.store.getAction('acme', 2)!.phases).toEqual([]);
    // Paused in a file that does not validate (a typo beside the pause): refused, nothing written.
    // (action 2's file moved away: the only file naming a plan's action is the invalid one)
    writeFileSync(join(dir, 'actions/one.yaml'), action(1, '  paused: true\n  min_sok: 30m\n'));
    rmSync(join(dir, 'actions/two.yaml'));
    const typo = await runCli(['apply', join(dir, 'plan.json')], { cwd: dir, env: env(dir) });
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('min_sok');
    expect(emu.store.getAction('acme', 1)!.phases).toEqual([]);
    expect(emu.store.getAction('acme', 2)!.phases).toEqual([]);
    // Taken off again, the same saved plan applies as it was approved.
    writeFileSync(join(dir, 'actions/one.yaml'), action(1, ''));
    writeFileSync(join(dir, 'actions/two.yaml'), action(2, ''));
    const again = await runCli(['apply', join(dir, 'plan.json')], { cwd: dir, env: env(dir) });
    expect(again.code, again.stderr).toBe(0);
    expect(emu.store.getAction('acme', 1)!.phases).toHaveLength(3);
    expect(emu.store.getAction('acme', 2)!.phases).toHaveLength(3);
  });

  it('a deny window that opens during an apply stops its writes', async () => {
    // Every request takes 300 ms: twenty appends (a read and a send each) take over 12 s; the window opens after 5.
    emu = await startEmulator({ seed: seed(), port: 0, host: '127.0.0.1', faults: { latencyMs: 300 } });
    const opens = new Date(Math.ceil((Date.now() + 5000) / 1000) * 1000);
    const cron = `${opens.getUTCSeconds()} ${opens.getUTCMinutes()} ${opens.getUTCHours()} ${opens.getUTCDate()} ${opens.getUTCMonth() + 1} *`;
    const phases = Array.from({ length: 20 }, (_, i) => `    - { name: p${i} }\n`).join('');
    const dir = tree({
      'dus-sync.yaml': CONFIG(`windows:\n  - { name: freeze, kind: deny, schedule: "${cron}", duration: 1h }\n`),
      'actions/two.yaml': `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 2\n  phases:\n${phases}`,
    });
    const apply = await runCli(['apply', '--auto-approve'], { cwd: dir, env: env(dir) });
    const after = Date.now();
    expect(after).toBeGreaterThan(opens.getTime());
    const appended = emu.store.getAction('acme', 2)!.phases.length;
    expect(appended, apply.stderr).toBeGreaterThan(0);
    expect(appended).toBeLessThan(20);
    expect(apply.stdout + apply.stderr).toContain('held by deny window freeze');
    // The next plan holds the rest, until the window closes.
    const plan = await runCli(['plan'], { cwd: dir, env: env(dir) });
    expect(plan.stdout).toContain('held (window) action 2');
  });

  it('a deny window holds writes; --ignore-windows writes and says so', async () => {
    emu = await startEmulator({ seed: seed(), port: 0, host: '127.0.0.1' });
    const dir = tree({
      'dus-sync.yaml': CONFIG('windows:\n  - { name: freeze, kind: deny, schedule: "* * * * *", duration: 2h, kinds: [Action] }\n'),
      'actions/two.yaml': action(2, ''),
    });
    const plan = await runCli(['plan'], { cwd: dir, env: env(dir) });
    expect(plan.code, plan.stderr).toBe(0);
    // Opening every minute for 2h, it never closes: no time allows the write, and the plan says so (no until).
    expect(plan.stdout).toContain('held (window) action 2: action 2: 3 phase appends held by deny window freeze: no time within the next year allows it');
    const apply = await runCli(['apply', '--auto-approve'], { cwd: dir, env: env(dir) });
    expect(apply.code, apply.stderr).toBe(0);
    expect(emu.store.getAction('acme', 2)!.phases).toEqual([]);
    const forced = await runCli(['apply', '--auto-approve', '--ignore-windows'], { cwd: dir, env: env(dir) });
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).toContain('--ignore-windows');
    expect(emu.store.getAction('acme', 2)!.phases).toHaveLength(3);
  });

  it('refuses a deactivation that breaks a dependency unless --allow-broken-dependencies, and draws the graph', async () => {
    emu = await startEmulator({ seed: seed(), port: 0, host: '127.0.0.1' });
    const dir = tree({
      'dus-sync.yaml': CONFIG(),
      'fw.yaml': 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "1.2.0", is_deactivated: true }\n',
    });
    const plan = await runCli(['plan'], { cwd: dir, env: env(dir) });
    expect(plan.code).toBe(1);
    expect(plan.stdout).toContain('deactivating firmware 1.2.0 leaves no active firmware to satisfy the dependency of modem 2.4.1 (needs bootloader >= 1.1.0)');
    const allowed = await runCli(['plan', '--format', 'markdown', '--allow-broken-dependencies'], { cwd: dir, env: env(dir) });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toContain('broken dependency');
    expect(allowed.stdout).toContain('```mermaid');
    expect(allowed.stdout).toMatch(/modem 2\.4\.1"\]\n[\s\S]*-\.->\|"#62;= 1\.1\.0"\|/);
    const apply = await runCli(['apply', '--auto-approve', '--allow-broken-dependencies'], { cwd: dir, env: env(dir) });
    expect(apply.code, apply.stderr).toBe(0);
    expect(emu.store.snapshot().tenants.acme!.bundles![0]!.firmwares!.find((f) => f.version_number === '1.2.0')!.is_deactivated).toBe(true);
  });
});
