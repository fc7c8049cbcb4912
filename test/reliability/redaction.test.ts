// Issue 12, end to end through the built CLI, against servers on 127.0.0.1 only:
// - a server that echoes the key cut short, base64, JSON-escaped or percent-encoded: no form of
//   it reaches stdout, stderr, the apply report, --debug, watch logs, /readyz or /metrics;
// - a key in live data (a phase's info, a dependency's min_version): replaced by [REDACTED] in
//   every plan format, the saved plan, the export, status and watch, with a warning naming
//   where; apply refuses a saved plan that would write the placeholder, validate refuses an
//   exported file that holds it, and apply without a plan file keeps the real live value;
// - control characters, bidi overrides and `::error` lines from a server or a file name are
//   escaped in every terminal format, and the GitHub format escapes its data as GitHub documents.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { CLI, runCli, STACK, writeTree } from './helpers.js';

/** 17 characters, like the key the issue saw echoed 15 characters long. */
const KEY = 'k3y-9f8e7d6c5b4a3';
/** Characters JSON escapes and URLs encode. */
const ODD = 'sec"ODD\\key with/+=%and-more-0123';

const json = (s: string) => JSON.stringify(s).slice(1, -1);
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const b64url = (s: string) => b64(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** Every 8-character run of the key, and of its encodings, that would let a reader take it back. */
function runsOf(key: string): string[] {
  const forms = [key, json(key), encodeURIComponent(key), new URLSearchParams({ k: key }).toString().slice(2)];
  // base64's last group mixes in what follows the key: only the runs before it are the key's.
  for (let r = 0; r < 3; r++) forms.push(b64(key.slice(r)).slice(0, -4), b64url(key.slice(r)).slice(0, -4));
  const out = new Set<string>();
  for (const f of forms) for (let i = 0; i + 8 <= f.length; i++) out.add(f.slice(i, i + 8));
  return [...out];
}

function expectNoKey(texts: readonly string[], keys: readonly string[] = [KEY]): void {
  for (const key of keys) {
    const runs = runsOf(key);
    for (const t of texts) {
      const leaked = runs.filter((r) => t.includes(r));
      expect(leaked, `a form of the key in:\n${t.slice(0, 2000)}`).toEqual([]);
    }
  }
}

// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** Nothing a terminal or a CI runner would act on: no control character, no workflow command line. */
function expectDefused(texts: readonly string[], opts: { workflowCommands?: boolean } = {}): void {
  for (const t of texts) {
    expect(RAW_CONTROL.exec(t), `a raw control character in:\n${JSON.stringify(t.slice(0, 2000))}`).toBeNull();
    if (!opts.workflowCommands) expect(t, 'a line a CI runner reads as a workflow command').not.toMatch(/^\s*::|##\[/m);
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

const closers: (() => Promise<void>)[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await Promise.all(closers.splice(0).map((c) => c()));
});

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); });
}

// ---------------------------------------------------------------- an echoing server

interface Echo {
  /** The text the server puts in its answers, made from the key it was sent. */
  readonly detail: (key: string) => string;
  /** Answer with a text body (shown as written) instead of {"detail": ...}. */
  readonly text?: boolean;
}

const HOSTILE_DETAIL = 'boom\u001b[2J\u001b]0;owned\u0007\r\n::error file=x.yaml::injected \u202eevil\u009b31m ##[warning]x';

const ECHOES: Record<string, Echo> = {
  'cut short (15 of its 17 characters)': { detail: (k) => `Invalid API key ${k.slice(0, 15)}…` },
  'cut short at the start': { detail: (k) => `…${k.slice(-10)} is not valid` },
  'base64': { detail: (k) => `credential ${b64(k)} rejected` },
  'base64url after a prefix, unpadded': { detail: (k) => `token=${b64url(`Bearer ${k}`)}` },
  'base64 of user:key (Basic auth)': { detail: (k) => `Authorization: Basic ${b64(`user:${k}`)}` },
  'JSON-escaped inside a JSON detail': { detail: (k) => JSON.stringify({ upstream: { 'x-service-api-key': k } }) },
  'JSON-escaped in a text body': { detail: (k) => `gateway error: {"key":"${json(k)}","status":500`, text: true },
  'percent-encoded': { detail: (k) => `see https://gw.test/deny?k=${encodeURIComponent(k)}&again=${encodeURIComponent(k).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())}` },
  'control characters and a workflow command': { detail: () => HOSTILE_DETAIL },
};

const BUNDLES = {
  count: 1, next: null, previous: null, results: [{
    id: '00000000-0000-4000-8000-000000000001', version: '2024.01', file_name: 'b.bin', uncompressed_size: 1, content_length: 1, checksum: 'x',
    created_by: 'ci', created_at: '2024-01-01T00:00:00Z',
    firmwares: [{ firmware_id: '00000000-0000-4000-8000-000000000002', version_number: '1.0.0', component_name: 'modem', file_name: 'f.bin',
      uncompressed_size: 10, content_length: 10, checksum: 'y', is_deactivated: false, dependencies: [] }],
  }],
};
const ACTION_7 = { id: 7, tenant_id: 'acme', status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }],
  phases_triggered: [false], next_phase_index: 0, end_timestamp: 0, retry_on_failure_until: 0 };

/**
 * `reads`: every request fails with the echo. `writes`: reads answer as a real API would, and
 * the PUT and the append fail with it (so it lands in the apply report and the progress lines).
 */
async function echoServer(echo: Echo, where: 'reads' | 'writes'): Promise<string> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const key = String(req.headers['x-service-api-key'] ?? '');
    const send = (status: number, body: unknown) => {
      if (echo.text && status >= 400) {
        res.writeHead(status, { 'content-type': 'text/plain' });
        return res.end(echo.detail(key));
      }
      res.writeHead(status, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(body));
    };
    const detail = { detail: echo.detail(key) };
    if (where === 'reads') return send(500, detail);
    // Each write is decided on a fresh read of its object: the bundle by version, then the action.
    if (req.method === 'GET' && req.url === '/api/v1/firmware-bundles/version/2024.01') return send(200, BUNDLES.results[0]);
    if (req.method === 'GET' && req.url?.startsWith('/api/v1/firmware-bundles')) return send(200, BUNDLES);
    if (req.method === 'GET' && req.url === '/api/v1/actions/7') return send(200, ACTION_7);
    if (req.method === 'PUT') return send(400, detail);
    if (req.method === 'POST') return send(400, { name: [echo.detail(key)] });
    return send(404, { detail: 'Not found.' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => closeServer(server));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const CONFIG = (baseUrl: string) => `apiVersion: dus-sync/v1
kind: Config
base_url: ${baseUrl}
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
`;

const FIRMWARE = (vn: string, spec = 'is_deactivated: true') => `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "${vn}"
  ${spec}
`;

const ACTION = (id: number, phases: string) => `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: ${id}
  phases:
${phases}`;

function repo(baseUrl: string, files: Record<string, string> = {}): string {
  return writeTree({
    'dus-sync.yaml': CONFIG(baseUrl),
    'tenants/fw.yaml': FIRMWARE('1.0.0'),
    'tenants/action.yaml': ACTION(7, '    - { name: canary }\n    - { name: wave-1 }\n'),
    ...files,
  });
}

/** `dus-sync watch` until `until` holds for its stderr; then its probes, then SIGTERM. */
async function watchRun(dir: string, env: Record<string, string>, until: (stderr: string) => boolean, extra: string[] = []) {
  const child = spawn(process.execPath, [CLI, '--config', `${dir}/dus-sync.yaml`, 'watch', '--listen', '127.0.0.1:0', '--interval', '1s', ...extra], {
    env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const deadline = Date.now() + 20_000;
  while (!(/on (http:\/\/127\.0\.0\.1:\d+)/.test(stderr) && until(stderr))) {
    if (Date.now() > deadline) throw new Error(`watch never got there:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const base = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)![1]!;
  const get = async (path: string) => { const r = await fetch(`${base}${path}`); return { status: r.status, text: await r.text() }; };
  const probes = { healthz: await get('/healthz'), readyz: await get('/readyz'), metrics: await get('/metrics') };
  child.kill('SIGTERM');
  const code = await exited;
  return { code, stdout, stderr, probes };
}

describe('a server that echoes the key in some encoding: no form of it is ever shown', () => {
  it.each(Object.entries(ECHOES))('%s, in its answers to reads: plan (every format, --debug), status, export', async (_name, echo) => {
    const url = await echoServer(echo, 'reads');
    const dir = repo(url);
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const env = { DUS_API_KEY_ACME: KEY };
    const runs = await Promise.all([
      runCli([...c, 'plan'], { env }),
      runCli([...c, '--debug', 'plan', '--format', 'json', '--out', `${dir}/plan.json`], { env }),
      runCli([...c, 'plan', '--format', 'markdown'], { env }),
      runCli([...c, '--debug', 'status'], { env }),
      runCli([...c, 'export', '--out', `${dir}/exported`, '--action', '7'], { env }),
    ]);
    for (const r of runs) expect(r.code, r.stderr).toBe(1);
    // The server's words reached the user, with the key cut out and the controls escaped.
    expect(runs[0]!.stderr).toMatch(/the API failed on GET \/api\/v1\/firmware-bundles/);
    if (echo.detail(KEY).includes('\u001b')) expect(runs[0]!.stderr).toContain('boom\\u001b[2J\\u001b]0;owned\\u0007\\r\\n::error file=x.yaml::injected \\u202eevil\\u009b31m \\u0023#[warning]x');
    else expect(runs[0]!.stderr).toContain('[REDACTED]');
    expect(runs[0]!.stderr).not.toMatch(STACK);
    expectNoKey(runs.flatMap((r) => [r.stdout, r.stderr]));
    expectNoKey(filesUnder(dir).map((f) => readFileSync(f, 'utf8')));
    expectDefused(runs.flatMap((r) => [r.stdout, r.stderr]));
  });

  it.each(Object.entries(ECHOES))('%s, in its answers to writes: the apply report and progress, with and without --debug', async (_name, echo) => {
    const url = await echoServer(echo, 'writes');
    const dir = repo(url);
    // A short settle window: an append the server refused with a 4xx stays in doubt for the window.
    const c = ['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--journal', `${dir}/state/journal.jsonl`, '--settle-window', '1s'];
    const runs = [
      await runCli(c, { env: { DUS_API_KEY_ACME: KEY } }),
      await runCli(['--debug', ...c], { env: { DUS_API_KEY_ACME: KEY } }),
    ];
    for (const r of runs) {
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/✗ firmware 1\.0\.0 \(modem\): failed: the API rejected PUT/);
      expect(r.stderr).toMatch(/\[\d\/2\] failed firmware 1\.0\.0 \(modem\) in acme: /);
    }
    expect(runs[0]!.stderr).not.toMatch(STACK);
    expectNoKey(runs.flatMap((r) => [r.stdout, r.stderr]));
    expectNoKey(filesUnder(dir).map((f) => readFileSync(f, 'utf8')));
    expectDefused(runs.flatMap((r) => [r.stdout, r.stderr]));
  });

  it.each(['cut short (15 of its 17 characters)', 'base64', 'control characters and a workflow command'])(
    '%s: watch logs, /readyz and /metrics', async (name) => {
      const url = await echoServer(ECHOES[name]!, 'reads');
      const dir = repo(url);
      const w = await watchRun(dir, { DUS_API_KEY_ACME: KEY }, (e) => /reconcile api-error/.test(e));
      expect(w.code).toBe(0);
      expect(w.probes.healthz.status).toBe(200);
      expect(w.probes.readyz.status).toBe(503);
      const reason = (JSON.parse(w.probes.readyz.text) as { reason: string }).reason;
      expect(reason).toMatch(/the API failed on GET/);
      expect(w.probes.metrics.text).toContain('dus_sync_reconcile_total{result="api-error"}');
      // Logs are JSON lines, each one whole.
      for (const line of w.stderr.trim().split('\n')) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
      expectNoKey([w.stdout, w.stderr, w.probes.readyz.text, w.probes.metrics.text]);
      expectDefused([w.stdout, w.stderr]);
      // HTTP bodies are not log lines: one line each, no control character.
      expectDefused([w.probes.readyz.text, reason, w.probes.metrics.text], { workflowCommands: true });
      expect(reason.split('\n')).toHaveLength(1);
    }, 40_000);

  it.each([['read', 'reads'], ['write', 'writes']] as const)('a key with characters JSON escapes and URLs encode, echoed in every encoding on %s', async (_n, where) => {
    const all: Echo = { detail: (k) => Object.values(ECHOES).map((e) => e.detail(k)).join(' | ') };
    const url = await echoServer(all, where);
    const dir = repo(url);
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const env = { DUS_API_KEY_ACME: ODD };
    const runs = await Promise.all([
      runCli([...c, '--debug', 'plan'], { env }),
      runCli([...c, 'apply', '--auto-approve', '--journal', `${dir}/j.jsonl`], { env }),
      runCli([...c, 'status', '--format', 'json'], { env }),
    ]);
    expect(runs[0]!.code).toBe(where === 'reads' ? 1 : 0);
    expect(runs[1]!.code).toBe(1);
    expect(runs.map((r) => r.stdout + r.stderr).join('')).toContain('[REDACTED]');
    expectNoKey(runs.flatMap((r) => [r.stdout, r.stderr]), [ODD]);
    expectDefused(runs.flatMap((r) => [r.stdout, r.stderr]));
  });
});

describe('a crash', () => {
  it('is printed through the same guard: one line, the key redacted, controls escaped, exit 1', async () => {
    const em = await startEmulator({ seed: { tenants: { acme: { api_key: KEY, bundles: [], actions: [] } } } as unknown as Seed, faults: { latencyMs: 3000 } });
    closers.push(() => em.close());
    const dir = repo(em.url);
    // Thrown from a timer while plan waits for the slow server, after the key was read.
    writeFileSync(join(dir, 'crash.cjs'), `setTimeout(() => { throw new Error('crash \\u001b[2J\\n::error::x ' + process.env.DUS_API_KEY_ACME.slice(0, 12)); }, 800);\n`);
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan'], { env: { DUS_API_KEY_ACME: KEY, NODE_OPTIONS: `--require ${join(dir, 'crash.cjs')}` } });
    expect(r.code).toBe(1);
    // The crash is one line, after the progress line of the read it interrupted.
    expect(r.stderr).toBe('reading the live state of tenant acme…\nerror: crash \\u001b[2J\\n::error::x [REDACTED] (run with --debug for details)\n');
  });
});

// ---------------------------------------------------------------- a key in live data

const LIVE_KEY = 'live-KEY-5e4d3c2b1a0f9e8d';

async function emulator(seed: Seed): Promise<RunningEmulator> {
  const em = await startEmulator({ seed });
  closers.push(() => em.close());
  return em;
}

/**
 * Live data that holds the key: a dependency of 1.0.0 (unmanaged there, so every PUT carries it
 * back), a dependency of 2.0.0 that the YAML changes, and a phase of action 7 (info, also in
 * base64, and trigger_on) that the YAML does not match.
 */
function liveKeySeed(): Seed {
  return {
    tenants: {
      acme: {
        api_key: LIVE_KEY,
        bundles: [{ version: '2024.01', firmwares: [
          { version_number: '1.0.0', component_name: 'modem', uncompressed_size: 10, is_deactivated: false,
            dependencies: [{ component_name: 'boot', min_version: `9-${LIVE_KEY.slice(0, 12)}` }] },
          { version_number: '2.0.0', component_name: 'radio', uncompressed_size: 10, is_deactivated: false,
            dependencies: [{ component_name: 'boot', min_version: LIVE_KEY }] },
        ] }],
        actions: [
          { id: 7, status: 'pending', phases: [{ name: 'canary', trigger_on: { note: `by ${LIVE_KEY}` }, info: { token: LIVE_KEY, basic: b64(`ci:${LIVE_KEY}`) } }] },
          { id: 8, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] },
        ],
      },
    },
  } as unknown as Seed;
}

function liveKeyRepo(url: string): string {
  return writeTree({
    'dus-sync.yaml': CONFIG(url),
    'tenants/fw.yaml': `${FIRMWARE('1.0.0')}---\n${FIRMWARE('2.0.0', 'dependencies: [ { component_name: boot, min_version: "2.0" } ]')}`,
    'tenants/a7.yaml': ACTION(7, '    - { name: canary }\n'),
    'tenants/a8.yaml': ACTION(8, '    - { name: canary }\n    - { name: wave-1 }\n'),
  });
}

describe('a key in live data', () => {
  it('is [REDACTED] in plan (text, json, markdown), the saved plan and status, each place named in a warning', async () => {
    const em = await emulator(liveKeySeed());
    const dir = liveKeyRepo(em.url);
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const env = { DUS_API_KEY_ACME: LIVE_KEY };
    const [text, jsonRun, md, saved, status, statusJson] = await Promise.all([
      runCli([...c, 'plan'], { env }),
      runCli([...c, 'plan', '--format', 'json'], { env }),
      runCli([...c, 'plan', '--format', 'markdown'], { env }),
      runCli([...c, '--debug', 'plan', '--out', `${dir}/plan.json`], { env }),
      runCli([...c, 'status'], { env }),
      runCli([...c, 'status', '--format', 'json'], { env }),
    ]);
    // Action 7's live phase differs from the YAML: a conflict, so exit 1.
    for (const r of [text, jsonRun, md, saved]) expect(r.code, r.stderr).toBe(1);
    for (const r of [status, statusJson]) expect(r.code, r.stderr).toBe(0);

    // What is shown: the placeholder where the key was, the rest as it is.
    expect(text.stdout).toContain('~ boot [REDACTED] → 2.0');
    expect(text.stdout).toMatch(/conflict on action 7: .*"token":"\[REDACTED\]"/);
    const plan = JSON.parse(jsonRun.stdout) as { changes: { key: string; before: unknown; body: { dependencies: unknown } }[] };
    expect(plan.changes.find((ch) => ch.key === '1.0.0')!.body.dependencies).toEqual([{ component_name: 'boot', min_version: '9-[REDACTED]' }]);
    expect(plan.changes.find((ch) => ch.key === '2.0.0')!.before).toEqual({ dependencies: [{ component_name: 'boot', min_version: '[REDACTED]' }] });
    expect(md.stdout).toContain('[REDACTED]'.replace(/[[\]]/g, (b) => `&#${b.charCodeAt(0)};`));
    expect(status.stdout).toMatch(/0 canary +next +trigger_on \{"note":"by \[REDACTED\]"\}/);

    // Where: tenant, object, field path, on stderr; never the key.
    for (const r of [text, jsonRun, md, saved]) {
      expect(r.stderr).toContain('warning: the live data of tenant acme holds an API key: firmware 1.0.0 (modem), at dependencies[0].min_version. It is shown as [REDACTED]; the plan compares the real value.');
      expect(r.stderr).toContain('holds an API key: firmware 2.0.0 (radio), at dependencies[0].min_version.');
      expect(r.stderr).toContain('holds an API key: action 7, at phases[0].trigger_on.note.');
      expect(r.stderr).toContain('holds an API key: action 7, at phases[0].info.token.');
      expect(r.stderr).toContain('holds an API key: action 7, at phases[0].info.basic.');
    }
    expect(status.stderr).toContain('holds an API key: action 7, at phases[0].info.token. It is shown as [REDACTED].');
    expect(saved.stderr).toMatch(/saved the plan to .*plan\.json, with an API key found in live data replaced by \[REDACTED\] in what it would write \(changes\[0\]\.body\.dependencies\[0\]\.min_version\); apply refuses it/);

    const all = [text, jsonRun, md, saved, status, statusJson].flatMap((r) => [r.stdout, r.stderr]);
    expectNoKey([...all, readFileSync(`${dir}/plan.json`, 'utf8')], [LIVE_KEY]);
  });

  it('a saved plan that would write the placeholder is refused before any write; apply without one keeps the real value', async () => {
    const em = await emulator(liveKeySeed());
    const dir = liveKeyRepo(em.url);
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const env = { DUS_API_KEY_ACME: LIVE_KEY };
    expect((await runCli([...c, 'plan', '--out', `${dir}/plan.json`], { env })).code).toBe(1);
    const refused = await runCli([...c, 'apply', `${dir}/plan.json`, '--auto-approve'], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/plan\.json holds \[REDACTED\] where the live data held an API key \(changes\[0\]\.body\.dependencies\[0\]\.min_version.*\); applying it would write the placeholder to the service, so nothing was written/);
    expect(em.stats.writes).toBe(0);

    const applied = await runCli([...c, 'apply', '--auto-approve', '--journal', `${dir}/j.jsonl`], { env });
    // Action 7 is a conflict (exit 1); the firmware updates and action 8's append go through.
    expect(applied.code, applied.stderr).toBe(1);
    expect(applied.stdout).toContain('Apply: 3 applied, 0 failed, 0 skipped.');
    const fw1 = em.store.firmwaresByVersion('acme', '1.0.0')[0]!;
    expect(fw1.is_deactivated).toBe(true);
    // The PUT carried the real live value back, not the placeholder that was shown.
    expect(fw1.dependencies).toEqual([{ component_name: 'boot', min_version: `9-${LIVE_KEY.slice(0, 12)}` }]);
    expect(em.store.getAction('acme', 7)!.phases[0]!.info).toEqual({ token: LIVE_KEY, basic: b64(`ci:${LIVE_KEY}`) });
    expectNoKey([refused.stdout, refused.stderr, applied.stdout, applied.stderr], [LIVE_KEY]);
  });

  it('export writes [REDACTED] and warns where; validate refuses the placeholder at its line', async () => {
    const em = await emulator(liveKeySeed());
    const dir = writeTree({ 'dus-sync.yaml': CONFIG(em.url) });
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const env = { DUS_API_KEY_ACME: LIVE_KEY };
    const exported = await runCli([...c, 'export', '--out', `${dir}/tenants/acme`, '--action', '7'], { env });
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toContain('warning: the live data of tenant acme holds an API key: action 7, at phases[0].info.token. It is written as [REDACTED], which validate and plan refuse');
    expect(exported.stderr).toContain('holds an API key: firmware 2.0.0 (radio), at dependencies[0].min_version.');
    const files = filesUnder(`${dir}/tenants/acme`);
    expect(readFileSync(`${dir}/tenants/acme/actions/7.yaml`, 'utf8')).toContain('token: "[REDACTED]"');
    expectNoKey([exported.stdout, exported.stderr, ...files.map((f) => readFileSync(f, 'utf8'))], [LIVE_KEY]);

    const validate = await runCli([...c, 'validate', '--format', 'github'], { env: {}, cwd: dir });
    expect(validate.code).toBe(1);
    expect(validate.stdout).toMatch(/^::error file=tenants\/acme\/actions\/7\.yaml,line=\d+,col=\d+::the placeholder \[REDACTED\] is here/m);
    expect(validate.stdout).toMatch(/^::error file=tenants\/acme\/firmwares\/radio\.yaml,line=\d+,col=\d+::the placeholder/m);
    const plan = await runCli([...c, 'plan'], { env });
    expect(plan.code).toBe(1);
    expect(em.stats.writes).toBe(0);
  });

  it('watch (dry run): its logs and /metrics never show it; where it is found is warned once, not every pass', async () => {
    const em = await emulator(liveKeySeed());
    const dir = liveKeyRepo(em.url);
    // Three passes (1 s interval): the warning naming where the key is comes once, not every pass
    // (and the conflict itself, unchanged, is repeated at most hourly).
    const w = await watchRun(dir, { DUS_API_KEY_ACME: LIVE_KEY }, (e) => (e.match(/"msg":"reconcile /g) ?? []).length >= 3, ['--dry-run']);
    expect(w.code).toBe(0);
    expect(w.stderr).toMatch(/conflict on action 7 in acme: .*\[REDACTED\]/);
    const warnings = w.stderr.split('\n').filter((l) => l.includes('holds an API key'));
    expect(warnings.length, w.stderr).toBeGreaterThan(0);
    expect(warnings.join('\n')).toMatch(/action 7, at phases\[\d+\]/);
    expect(new Set(warnings.map((l) => (JSON.parse(l) as { msg: string }).msg)).size).toBe(warnings.length);
    expectNoKey([w.stdout, w.stderr, w.probes.readyz.text, w.probes.metrics.text], [LIVE_KEY]);
    expect(em.stats.writes).toBe(0);
  }, 40_000);
});

// ---------------------------------------------------------------- terminal and CI injection

const HOSTILE_NAME = 'evil\u001b[2J\u001b]8;;http://x.test\u0007link\r\n::error file=a.yaml::pwned \u202etxt.exe\u009b31m | <img src=x> `code`';

describe('control characters and workflow commands from a server or a file name', () => {
  it('live phase names: status (text and json) and plan (text, json, markdown) show them escaped', async () => {
    const em = await emulator({
      tenants: { acme: { api_key: KEY, bundles: [], actions: [
        { id: 9, status: `pending\u001b[31m\n::warning::x`, phases: [{ name: HOSTILE_NAME, trigger_on: { n: '\u202e' }, info: {} }] },
      ] } },
    } as unknown as Seed);
    const dir = writeTree({ 'dus-sync.yaml': CONFIG(em.url), 'tenants/a.yaml': ACTION(9, '    - { name: canary }\n') });
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const env = { DUS_API_KEY_ACME: KEY };
    const runs = await Promise.all([
      runCli([...c, 'status'], { env }),
      runCli([...c, 'status', '--format', 'json'], { env }),
      runCli([...c, 'plan'], { env }),
      runCli([...c, 'plan', '--format', 'json'], { env }),
      runCli([...c, 'plan', '--format', 'markdown'], { env }),
    ]);
    const [status, statusJson, , planJson, md] = runs;
    expect(status!.code, status!.stderr).toBe(0);
    expect(status!.stdout).toContain('status pending\\u001b[31m\\n::warning::x');
    expect(status!.stdout).toContain('0 evil\\u001b[2J\\u001b]8;;http://x.test\\u0007link\\r\\n::error file=a.yaml::pwned \\u202etxt.exe\\u009b31m');
    // JSON readers get the exact value back.
    expect((JSON.parse(statusJson!.stdout) as { phases: { name: string }[] }[])[0]!.phases[0]!.name).toBe(HOSTILE_NAME);
    // (A sentence quotes live names cut at 100 characters: a server may make them huge.)
    expect((JSON.parse(planJson!.stdout) as { conflicts: { message: string }[] }).conflicts[0]!.message).toContain(`live ${JSON.stringify(HOSTILE_NAME).slice(0, 100)}…`);
    expect(md!.stdout).not.toMatch(/<img|`code`/);
    expectDefused(runs.flatMap((r) => [r.stdout, r.stderr]));
  });

  it('file names: validate text escapes them, and the GitHub format escapes them as GitHub documents', async () => {
    const dir = writeTree({
      'dus-sync.yaml': CONFIG('http://127.0.0.1:1'),
      'tenants/x\n::error file=evil.yaml,line=1::pwned.yaml': 'apiVersion: dus-sync/v1\nkind: Firmware\nspec: { version_number: 1.10 }\n',
      '::warning::at-the-start, 100%.yaml': 'apiVersion: dus-sync/v1\nkind: Nope\n',
      'tenants/\u001b[31mred\u202e.yaml': 'apiVersion: dus-sync/v1\nkind: Firmware\nspec: { version_number: 1.10 }\n',
    });
    const c = ['--config', `${dir}/dus-sync.yaml`];
    const text = await runCli([...c, 'validate'], { env: {}, cwd: dir });
    const github = await runCli([...c, 'validate', '--format', 'github'], { env: {}, cwd: dir });
    const jsonRun = await runCli([...c, 'validate', '--format', 'json'], { env: {}, cwd: dir });
    for (const r of [text, github, jsonRun]) expect(r.code).toBe(1);

    expect(text.stdout).toContain('tenants/x\\n::error file=evil.yaml,line=1::pwned.yaml:');
    expect(text.stdout).toContain('tenants/\\u001b[31mred\\u202e.yaml:');
    // A file name at the start of a line cannot start a command either.
    expect(text.stdout).toMatch(/^\\u003a:warning::at-the-start, 100%\.yaml:/m);
    expectDefused([text.stdout, text.stderr, github.stderr, jsonRun.stdout, jsonRun.stderr]);

    // One command per issue, each a whole line, data escaped: % CR LF, and : , in properties.
    const lines = github.stdout.trimEnd().split('\n');
    const issues = JSON.parse(jsonRun.stdout) as { file: string }[];
    expect(lines).toHaveLength(issues.length);
    for (const l of lines) expect(l).toMatch(/^::error file=[^:,\n]*,line=\d+,col=\d+::[^\n]*$/);
    expect(github.stdout).toContain('::error file=%3A%3Awarning%3A%3Aat-the-start%2C 100%25.yaml,line=');
    expect(github.stdout).toContain('::error file=tenants/x%0A%3A%3Aerror file=evil.yaml%2Cline=1%3A%3Apwned.yaml,line=');
    expect(github.stdout).toContain('::error file=tenants/\\u001b[31mred\\u202e.yaml,line=');
    expectDefused([github.stdout], { workflowCommands: true });
    // JSON readers get the exact names.
    expect(issues.map((i) => i.file)).toContain('tenants/x\n::error file=evil.yaml,line=1::pwned.yaml');
  });
});
