// Progress while plan and apply read the live state (issue 13): against a slow server they used
// to print nothing for minutes. The built CLI against the emulator with latency; stderr is not a
// terminal here, so it is the line mode (one line at the start, then one per interval, which
// DUS_SYNC_PROGRESS_INTERVAL_MS shortens for tests only).
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { formatElapsed, liveProgress } from '../../src/cli/progress.js';
import { action, desired, firmware } from '../core/builders.js';
import { runCli, writeTree } from './helpers.js';

const KEY = 'progress-test-key-acme-0123456789';

function seed(bundles: number): Seed {
  return {
    tenants: {
      acme: {
        api_key: KEY,
        bundles: Array.from({ length: bundles }, (_, i) => ({
          version: `2024.${i}`,
          firmwares: [{ version_number: `1.0.${i}`, component_name: 'modem', uncompressed_size: 1, is_deactivated: false, dependencies: [] }],
        })),
        actions: [{ id: 42, status: 'pending', phases: [] }],
      },
    },
  } as unknown as Seed;
}

const DOCS = `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "1.0.0"
  is_deactivated: false
---
apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 42
  phases: []
`;

let emulator: RunningEmulator | undefined;
afterEach(async () => { await emulator?.close(); emulator = undefined; });

describe('progress on standard error while reading the live state', () => {
  it('plan: a line at the start, then lines with pages, actions, requests in flight, retries and time; stdout stays the JSON', async () => {
    // 6 pages of one bundle, 250 ms each: about 1.5 s of reading.
    emulator = await startEmulator({ seed: seed(6), pageSize: 1, faults: { latencyMs: 250 } });
    const dir = writeTree({ 'a.yaml': DOCS });
    const r = await runCli(['--dir', dir, 'plan', '--format', 'json'], {
      cwd: dir, env: { DUS_BASE_URL: emulator.url, DUS_API_KEY: KEY, DUS_TENANT: 'acme', DUS_SYNC_PROGRESS_INTERVAL_MS: '200' },
    });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { summary: { unchanged: number } }).summary.unchanged).toBe(2);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe('reading the live state of tenant acme…');
    const updates = lines.slice(1);
    expect(updates.length, r.stderr).toBeGreaterThanOrEqual(3);
    for (const line of updates) {
      expect(line).toMatch(/^still reading the live state of tenant acme: (\d+ pages?|\d+ of \d+ pages?), [01] of 1 action, \d+ requests? in flight, \d+ retr(y|ies), \d+s$/);
    }
    // Once the first page has told the count, the total is known.
    expect(updates.at(-1)).toMatch(/: [1-6] of 6 pages, /);
  });

  it('counts retries', async () => {
    // Every answer is a 5xx until the client has retried twice, then 3 pages of 150 ms.
    emulator = await startEmulator({ seed: seed(3), pageSize: 1, faults: { latencyMs: 150, failRate: 1 } });
    const healed = setInterval(() => { if (emulator && emulator.stats.requests >= 4) emulator.faults.failRate = 0; }, 10);
    const dir = writeTree({ 'a.yaml': DOCS });
    try {
      const r = await runCli(['--dir', dir, 'plan'], {
        cwd: dir, env: { DUS_BASE_URL: emulator.url, DUS_API_KEY: KEY, DUS_TENANT: 'acme', DUS_SYNC_PROGRESS_INTERVAL_MS: '100' },
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/, [1-9]\d* retr(y|ies), /);
    } finally {
      clearInterval(healed);
    }
  });

  it('apply shows it too; a fast read prints just the first line (then at most one a minute)', async () => {
    emulator = await startEmulator({ seed: seed(2) });
    const dir = writeTree({ 'a.yaml': DOCS });
    const env = { DUS_BASE_URL: emulator.url, DUS_API_KEY: KEY, DUS_TENANT: 'acme' };
    const plan = await runCli(['--dir', dir, 'plan'], { cwd: dir, env });
    expect([plan.code, plan.stderr]).toEqual([0, 'reading the live state of tenant acme…\n']);
    expect(plan.stdout).not.toContain('reading');
    const apply = await runCli(['--dir', dir, 'apply', '--auto-approve', '--journal', `${dir}/j/journal.jsonl`], { cwd: dir, env });
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stderr).toContain('reading the live state of tenant acme…\n');
  });
});

describe('the progress line on a terminal', () => {
  function fakeTerminal(columns = 200) {
    const stream = new PassThrough() as PassThrough & { isTTY: boolean; columns: number };
    stream.isTTY = true;
    stream.columns = columns;
    let out = '';
    stream.on('data', (d: Buffer) => { out += d.toString(); });
    return { stream: stream as unknown as NodeJS.WriteStream, text: () => out };
  }

  it('is redrawn in place with the counts, and erased at the end', async () => {
    const term = fakeTerminal();
    let clock = 1_000;
    const p = liveProgress(desired(firmware({ version_number: '1' }), action(42, []), action(43, [])), { stream: term.stream, now: () => clock, redrawMs: 5 });
    await p.during(async () => {
      p.hooks.onRequestStart({ method: 'GET', route: 'GET /firmware-bundles', tenant: 'acme', attempt: 0 });
      p.hooks.onRequestStart({ method: 'GET', route: 'GET /actions/{id}', tenant: 'acme', attempt: 0 });
      p.hooks.onRequest({ method: 'GET', route: 'GET /actions/{id}', tenant: 'acme', attempt: 0, status: 503, durationMs: 1 });
      p.hooks.onRequestStart({ method: 'GET', route: 'GET /actions/{id}', tenant: 'acme', attempt: 1 });
      p.hooks.onRequest({ method: 'GET', route: 'GET /actions/{id}', tenant: 'acme', attempt: 1, status: 200, durationMs: 1 });
      p.hooks.onRequest({ method: 'GET', route: 'GET /firmware-bundles', tenant: 'acme', attempt: 0, status: 200, durationMs: 1 });
      p.hooks.onPage({ tenant: 'acme', read: 1, total: 40 });
      clock += 65_000;
      await new Promise((resolve) => setTimeout(resolve, 30));
    });
    const out = term.text();
    expect(out).toContain('\r\x1b[Kreading the live state of tenant acme… 1 of 40 pages, 1 of 2 actions, 0 requests in flight, 1 retry, 1m05s');
    expect(out.endsWith('\r\x1b[K')).toBe(true);
    expect(out).not.toContain('\n');
  });

  it('is cut to the terminal width, so that it can be redrawn', async () => {
    const term = fakeTerminal(30);
    const p = liveProgress(desired(firmware({ version_number: '1' })), { stream: term.stream });
    await p.during(() => Promise.resolve());
    expect(term.text()).toBe('\r\x1b[Kreading the live state of te…\r\x1b[K');
  });

  it('formats elapsed time', () => {
    expect([formatElapsed(0), formatElapsed(59_999), formatElapsed(61_000), formatElapsed(3_600_000)]).toEqual(['0s', '59s', '1m01s', '60m00s']);
  });
});
