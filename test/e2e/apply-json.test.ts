// apply --format json: the report as one JSON document on stdout (the plan, each result, the
// totals, what did not converge or diverged); the plan text and the progress stay on stderr.
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { runCli } from './helpers.js';
import { env, KEY, repo, seed } from './habits-fixture.js';

let emulator: RunningEmulator | undefined;
afterEach(async () => { await emulator?.close(); emulator = undefined; });

interface Result { tenant: string; kind: string; op: string; key: string; index?: number; status: string; message?: string; duration_ms: number }
interface Report {
  format_version: number;
  plan: { format_version: number; changes: { kind: string; key: string }[]; summary: { changes: number } };
  results: Result[];
  summary: { applied: number; failed: number; skipped: number; unconverged: number; diverged: number };
  unconverged: string[];
  diverged: string[];
}

const parse = <T>(text: string): T => JSON.parse(text) as T;

describe('apply --format json', () => {
  it('prints the report as one JSON document on stdout; the plan and the progress go to stderr', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--format', 'json', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(r.code, r.stderr).toBe(0);
    const report = parse<Report>(r.stdout);
    expect(Object.keys(report)).toEqual(['format_version', 'plan', 'results', 'summary', 'unconverged', 'diverged']);
    expect(report.format_version).toBe(1);
    expect(report.plan.format_version).toBe(1);
    expect(report.plan.summary.changes).toBe(4);
    expect(report.results.map((x) => [x.kind, x.key, x.index, x.status])).toEqual([
      ['firmware', '2.4.0', undefined, 'applied'],
      ['firmware', '2.4.1', undefined, 'applied'],
      ['phase', '42', 1, 'applied'],
      ['phase', '42', 2, 'applied'],
    ]);
    for (const x of report.results) {
      expect(x.tenant).toBe('acme');
      expect(Number.isInteger(x.duration_ms) && x.duration_ms >= 0).toBe(true);
    }
    expect(report.summary).toEqual({ applied: 4, failed: 0, skipped: 0, unconverged: 0, diverged: 0 });
    expect(report.unconverged).toEqual([]);
    expect(report.diverged).toEqual([]);
    expect(r.stderr).toMatch(/Plan: 2 firmware updates, 2 phase appends\./);
    expect(r.stderr).toMatch(/\[3\/4\] applied phase 2 "all" on action 42 in acme/);
    // Deactivations go last (the dependency check may count on the other writes).
    expect(r.stderr).toMatch(/\[4\/4\] applied firmware 2\.4\.0 \(modem\) in acme/);
    expect(r.stdout + r.stderr).not.toContain(KEY);

    // Nothing left to do: still one report, with no results.
    const again = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--format', 'json', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(again.code, again.stderr).toBe(0);
    const empty = parse<Report>(again.stdout);
    expect(empty.plan.changes).toEqual([]);
    expect(empty.results).toEqual([]);
    expect(empty.summary).toEqual({ applied: 0, failed: 0, skipped: 0, unconverged: 0, diverged: 0 });
  });

  it('reports skipped changes, messages and diverged actions, exit 1, when another actor appends at the same time', async () => {
    emulator = await startEmulator({ seed: seed(), faults: { raceAppendEvery: 1 } });
    const dir = repo();
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--format', 'json', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(r.code).toBe(1);
    const report = parse<Report>(r.stdout);
    expect(report.summary).toMatchObject({ diverged: 1, skipped: 1 });
    expect(report.diverged).toHaveLength(1);
    expect(report.diverged[0]).toMatch(/^action 42 in acme: no longer the YAML's first phases/);
    const skipped = report.results.find((x) => x.status === 'skipped')!;
    expect(skipped).toMatchObject({ kind: 'phase', key: '42', index: 2 });
    expect(skipped.message).toMatch(/no longer the YAML's first phases/);
  });

  it('applies a saved plan with a JSON report', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const c = ['--config', `${dir}/dus-sync.yaml`];
    expect((await runCli([...c, 'plan', '--out', `${dir}/saved.plan`], { env: env(emulator.url) })).code).toBe(0);
    const r = await runCli([...c, 'apply', `${dir}/saved.plan`, '--format', 'json', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(r.code, r.stderr).toBe(0);
    expect(parse<Report>(r.stdout).summary.applied).toBe(4);
  });

});

