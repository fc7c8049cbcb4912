// `npm run bench`: every figure of the performance issue (#15), each against its floor measured
// in the same run, printed as a markdown table with the goal beside each figure
// (docs/performance.md carries the latest one).
//   node bench/run.mjs            the issue's sizes: plan at 2,000 / 20,000 / 200,000 records,
//                                 apply of 12,000 changes with and without 20 ms of latency,
//                                 validate of 20,000 / 200,000 documents, watch at 200,000
//   node bench/run.mjs --quick    the same figures at a tenth of the sizes (2 cores: minutes, not tens)
//   node bench/run.mjs --only=watch   only those figures (cold, validate, plan, apply, watch)
//   node bench/run.mjs --smoke    tiny sizes: checks the benchmarks still work (CI), not timed
// The floor is bench/least-client.mjs: it parses with js-yaml (the parser of dus-sync's fast
// path) and makes the bare requests. Everything talks to emulators on 127.0.0.1 started here.
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, mkdirSync, rmSync, readFileSync, writeFileSync, cpSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { generate } from './generate.mjs';

const root = join(import.meta.dirname, '..');
// A private copy of the build: a `npm run build` elsewhere (tests run one first) empties dist/
// while the benchmarks run. It sits under the repo so that node_modules and schemas/ resolve.
const snapshot = join(root, 'bench', 'out', `cli-${process.pid}`);
mkdirSync(snapshot, { recursive: true });
cpSync(join(root, 'dist'), join(snapshot, 'dist'), { recursive: true });
cpSync(join(root, 'schemas'), join(snapshot, 'schemas'), { recursive: true });
const CLI = join(snapshot, 'dist', 'cli.js');
const LEAST = join(root, 'bench', 'least-client.mjs');
const smoke = process.argv.includes('--smoke');
// --only=cold,validate,plan,apply,watch: some of the figures (while working on one of them).
const ONLY = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const quick = process.argv.includes('--quick');
const work = mkdtempSync(join(tmpdir(), 'dus-sync-bench-'));
const RUNS = smoke ? 1 : 3;
const scale = smoke ? 0.001 : quick ? 0.1 : 1;
const n = (x) => Math.max(1, Math.round(x * scale));
const PLAN_SIZES = smoke ? [200, 400] : [n(2000), n(20000), n(200000)];
const BIG = PLAN_SIZES[PLAN_SIZES.length - 1];
const APPLY = { firmwares: smoke ? 200 : n(20000), changes: smoke ? 30 : n(12000), actions: smoke ? 10 : 200 };
const LATENCY_MS = 20;
const VALIDATE_SIZES = smoke ? [200] : [n(20000), n(200000)];
// The bounds of the security fixes hold 64 MiB of records (2 × --max-response-size, some
// 113,000 records) by default; the 200,000-record tenant needs a larger --max-response-size.
const BIG_FLAGS = BIG > 100000 ? ['--max-response-size', '64MiB'] : [];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [];
/** A row of the table: `ok` is whether the goal is met. */
function row(name, value, floor, unit, goal, ok, note = '') {
  rows.push({ name, value, floor, unit, goal, ok, note });
  process.stderr.write(`  ${name}: ${fmt(value, unit)}${floor !== undefined ? ` vs ${fmt(floor, unit)}` : ''}${note ? ` (${note})` : ''} ${ok ? 'ok' : 'GOAL NOT MET'}\n`);
}
function fmt(v, unit) {
  if (v === undefined) return '-';
  if (unit === 'MB') return `${v.toFixed(0)} MB`;
  if (unit === 'ms') return v >= 10000 ? `${(v / 1000).toFixed(1)} s` : `${v.toFixed(0)} ms`;
  return `${v}`;
}
const k = (x) => x.toLocaleString('en-US');

async function startEmulator(seedFile, extra = []) {
  const child = spawn(process.execPath, [CLI, 'emulator', '--port', '0', '--seed', seedFile, '--page-size', '100', ...extra],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err = (err + d).slice(-4000); });
  const url = await new Promise((resolve, reject) => {
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(buf);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`emulator exited with ${code}: ${err}`)));
  });
  return { url, stop: () => new Promise((r) => { child.once('exit', r); child.kill('SIGTERM'); }) };
}

/** Wall time of a whole process; it must succeed, and `check` may test what it printed. */
function timed(cmd, args, env = {}, check = () => true) {
  const started = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { env: { ...process.env, NO_COLOR: '1', ...env }, encoding: 'utf8', maxBuffer: 1 << 30 });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr.slice(-2000)}`);
  if (!check(r.stdout)) throw new Error(`${args.join(' ')} did not do the expected work:\n${r.stdout.slice(-2000)}`);
  return ms;
}

/** The tool's plan must find exactly the changes the generator made. */
function planFinds(expected) {
  return (stdout) => {
    const changes = JSON.parse(stdout).changes;
    return changes.filter((c) => c.kind === 'firmware').length === expected.puts
      && changes.filter((c) => c.kind === 'phase').length === expected.appends;
  };
}

/** Peak RSS in MB of a whole command (the process reports its own maxRSS as it exits). */
function peakRssMb(args, env) {
  const file = join(work, `rss-${process.hrtime.bigint()}.txt`);
  const r = spawnSync(process.execPath, ['--import', pathToFileURL(join(root, 'bench', 'rss-report.mjs')).href, ...args],
    { env: { ...process.env, ...env, DUS_BENCH_RSS_FILE: file }, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr.slice(-2000)}`);
  return Number(readFileSync(file, 'utf8')) / 1024;
}

const tenants = new Map();
/** A generated tenant of `records` firmwares (1 in 20 differ from live), made once per size. */
function tenantOf(records) {
  if (!tenants.has(records)) {
    tenants.set(records, generate({ firmwares: records, bundles: Math.max(1, Math.round(records / 10)), actions: smoke ? 5 : 200,
      changedFirmwares: Math.max(1, Math.round(records / 20)), out: join(work, `t-${records}`) }));
  }
  return tenants.get(records);
}

function benchColdStart() {
  const runs = smoke ? 3 : 15;
  const measure = (args) => median(Array.from({ length: runs }, () => timed(process.execPath, args)));
  const base = measure(['-e', '0']);
  const version = measure([CLI, '--version']);
  const help = measure([CLI, '--help']);
  const validate = measure([CLI, '--config', join(root, 'examples', 'dus-sync.yaml'), 'validate']);
  row('cold start: --version', version, base, 'ms', 'report (floor: node -e 0)', true);
  row('cold start: --help', help, base, 'ms', 'report (floor: node -e 0)', true);
  row('cold start: validate examples/', validate, base, 'ms', '≤ 2× node -e 0', validate <= 2 * base);
}

function benchValidate() {
  for (const size of VALIDATE_SIZES) {
    const g = tenantOf(size);
    const docs = size + (smoke ? 5 : 200);
    const tool = []; const floor = [];
    for (let i = 0; i < RUNS; i += 1) {
      tool.push(timed(process.execPath, [CLI, '--config', g.config, 'validate'], {}, (out) => out.includes(`${docs} documents: valid`)));
      floor.push(timed(process.execPath, [LEAST, 'parse', g.repo], {}, (out) => out.startsWith(`${docs} documents`)));
    }
    row(`validate ${k(docs)} documents`, median(tool), median(floor), 'ms', '≤ 1.3× js-yaml parse alone', median(tool) <= 1.3 * median(floor));
  }
}

async function benchPlan() {
  const rss = new Map();
  for (const size of PLAN_SIZES) {
    const g = tenantOf(size);
    const env = (url) => ({ DUS_BASE_URL: url, DUS_API_KEY_ACME: g.key });
    const flags = size > 100000 ? BIG_FLAGS : [];
    const emu = await startEmulator(g.seedFile);
    const tool = []; const floor = [];
    try {
      // The tool and the least client against the same server, alternating.
      for (let i = 0; i < RUNS; i += 1) {
        tool.push(timed(process.execPath, [CLI, '--config', g.config, ...flags, 'plan', '--format', 'json'], env(emu.url), planFinds(g.expected)));
        floor.push(timed(process.execPath, [LEAST, 'plan', g.repo, emu.url, g.key], {},
          (out) => out.startsWith(`${size} firmwares, ${g.expected.appends} actions, ${size} live`)));
      }
      if (size === PLAN_SIZES[0] || size === BIG) rss.set(size, peakRssMb([CLI, '--config', g.config, ...flags, 'plan', '--format', 'json'], env(emu.url)));
    } finally { await emu.stop(); }
    row(`plan, ${k(size)} records`, median(tool), median(floor), 'ms', '≤ 1.2× least client', median(tool) <= 1.2 * median(floor));
  }
  // Memory per record: what the largest run took beyond the smallest, per record more.
  const small = PLAN_SIZES[0];
  const perRecord = ((rss.get(BIG) - rss.get(small)) * 1024) / (BIG - small);
  row(`plan peak RSS at ${k(BIG)} records`, rss.get(BIG), rss.get(small), 'MB', '≤ 1 KB a record', perRecord <= 1,
    `${perRecord.toFixed(2)} KB a record more than at ${k(small)}`);
}

async function benchApply() {
  const g = generate({ firmwares: APPLY.firmwares, bundles: Math.max(1, APPLY.firmwares / 10), actions: APPLY.actions,
    changedFirmwares: APPLY.changes - APPLY.actions, out: join(work, 'apply') });
  const env = (url) => ({ DUS_BASE_URL: url, DUS_API_KEY_ACME: g.key });
  const changes = g.expected.puts + g.expected.appends;
  const once = async (who, extra) => {
    // A fresh server per run: apply changes it.
    const e = await startEmulator(g.seedFile, extra);
    try {
      return who === 'tool'
        ? timed(process.execPath, [CLI, '--config', g.config, 'apply', '--auto-approve', '--journal', join(work, `j-${process.hrtime.bigint()}.jsonl`)], env(e.url),
          (out) => out.includes(`${changes} applied`))
        : timed(process.execPath, [LEAST, 'apply', g.repo, e.url, g.key], {},
          (out) => out.startsWith(`${g.expected.puts} puts, ${g.expected.appends} appends`));
    } finally { await e.stop(); }
  };
  const tool = []; const floor = [];
  for (let i = 0; i < RUNS; i += 1) {
    tool.push(await once('tool', []));
    floor.push(await once('least', []));
  }
  row(`apply ${k(changes)} changes, no latency`, median(tool), median(floor), 'ms', '≤ 1.2× least client', median(tool) <= 1.2 * median(floor));
  // With latency the floor keeps 8 in flight: what dus-sync did before it adapted.
  const runs = smoke ? 1 : quick ? RUNS : 1;
  const toolL = []; const floorL = [];
  for (let i = 0; i < runs; i += 1) {
    toolL.push(await once('tool', ['--latency', String(LATENCY_MS)]));
    floorL.push(await once('least', ['--latency', String(LATENCY_MS)]));
  }
  const speedup = median(floorL) / median(toolL);
  row(`apply ${k(changes)} changes, ${LATENCY_MS} ms latency`, median(toolL), median(floorL), 'ms', '≥ 2.5× faster than 8 in flight',
    smoke || speedup >= 2.5, `${speedup.toFixed(2)}× faster than the least client at 8 in flight`);
}

async function benchWatch() {
  // Save-to-applied: a watch agent on the largest tenant; edit one firmware's size, poll the server.
  const g = tenantOf(BIG);
  const emu = await startEmulator(g.seedFile);
  const repo = join(work, 'watch-repo');
  cpSync(g.repo, repo, { recursive: true });
  const config = join(repo, 'dus-sync.yaml');
  const rssFile = join(work, 'watch-rss.txt');
  const agent = spawn(process.execPath, [...(process.env.DUS_BENCH_WATCH_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.DUS_BENCH_WATCH_PROF] : []), '--import', pathToFileURL(join(root, 'bench', 'rss-report.mjs')).href,
    CLI, '--config', config, ...BIG_FLAGS, 'watch', '--journal', join(work, 'jw.jsonl'), ...(process.env.DUS_BENCH_WATCH_LOG ? ['--log-level', 'debug', '--log-format', 'json'] : [])],
  { env: { ...process.env, DUS_BASE_URL: emu.url, DUS_API_KEY_ACME: g.key, DUS_BENCH_RSS_FILE: rssFile }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  agent.stderr.on('data', (d) => { log = (log + d).slice(-1_000_000); if (process.env.DUS_BENCH_WATCH_LOG) appendFileSync(process.env.DUS_BENCH_WATCH_LOG, d); });
  const headers = { 'x-service-api-key': g.key, 'x-service-tenant': 'acme' };
  const samples = [];
  try {
    // Wait for the first pass (it applies the generator's changes) to finish and succeed.
    const deadline = Date.now() + (smoke ? 60_000 : 900_000);
    let first;
    while (!(first = /^.*"trigger":"start".*$/m.exec(log))) {
      if (Date.now() > deadline || agent.exitCode !== null) throw new Error(`watch did not finish its first pass:\n${log.slice(-2000)}`);
      await sleep(100);
    }
    if (!first[0].includes('"result":"success"')) throw new Error(`the first watch pass failed:\n${first[0]}`);
    const file = join(repo, 'tenants', 'acme', 'firmwares', 'bundle-00001.yaml');
    const text = readFileSync(file, 'utf8');
    const vn = /version_number: "([^"]+)"/.exec(text)[1];
    const sizeNow = async () => {
      const r = await fetch(`${emu.url}/api/v1/firmware-bundles/version/2024.00001`, { headers });
      const b = await r.json();
      return b.firmwares.find((f) => f.version_number === vn).uncompressed_size;
    };
    const current = Number(/uncompressed_size: (\d+)/.exec(text)[1]);
    if (await sizeNow() !== current) throw new Error(`the first watch pass did not converge:\n${log.slice(-2000)}`);
    for (let i = 0; i < (smoke ? 1 : Number(process.env.DUS_BENCH_WATCH_EDITS ?? 5)); i += 1) {
      const target = 900000 + i;
      const passes = (log.match(/"trigger":"file-change"/g) ?? []).length;
      writeFileSync(file, text.replace(/uncompressed_size: \d+/, `uncompressed_size: ${target}`));
      const t0 = Date.now();
      while (await sizeNow() !== target) {
        if (Date.now() - t0 > 120_000) throw new Error(`watch did not apply the edit:\n${log.slice(-2000)}`);
        await sleep(20);
      }
      samples.push(Date.now() - t0);
      // Let the pass finish (journal, lock) so that the next save does not queue behind it.
      const end = Date.now() + 120_000;
      while ((log.match(/"trigger":"file-change"/g) ?? []).length <= passes && Date.now() < end) await sleep(50);
      await sleep(200);
    }
  } finally {
    agent.kill('SIGTERM');
    await new Promise((r) => agent.once('exit', r));
    await emu.stop();
  }
  const ms = median(samples);
  row(`watch: save to applied, ${k(BIG)} records`, ms, undefined, 'ms', '≤ 500 ms + 300 ms debounce', ms <= 800);
  let mb;
  try { mb = Number(readFileSync(rssFile, 'utf8')) / 1024; } catch { mb = undefined; }
  if (mb !== undefined) {
    row(`watch peak RSS at ${k(BIG)} records`, mb, undefined, 'MB', BIG >= 200000 ? '≤ 400 MB' : 'report (the goal is ≤ 400 MB at 200,000)', BIG < 200000 || mb <= 400);
  }
}

process.stderr.write(`dus-sync benchmarks${smoke ? ' (smoke)' : quick ? ' (quick: a tenth of the sizes)' : ''} in ${work}\n`);
const t0 = Date.now();
try {
  const only = ONLY ? new Set(ONLY.split(',')) : undefined;
  const want = (name) => only === undefined || only.has(name);
  if (want('cold')) benchColdStart();
  if (want('validate')) benchValidate();
  if (want('plan')) await benchPlan();
  if (want('apply')) await benchApply();
  if (want('watch')) await benchWatch();
} finally {
  rmSync(work, { recursive: true, force: true });
  rmSync(snapshot, { recursive: true, force: true });
}

const cpu = cpus()[0]?.model ?? 'unknown CPU';
const lines = [
  `Measured ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`
    + `${smoke ? ' (smoke sizes: not meaningful)' : quick ? ' (--quick: a tenth of the issue\'s sizes)' : ''}, median of ${RUNS} (the latency row: ${smoke || quick ? RUNS : 1}), ${((Date.now() - t0) / 60000).toFixed(1)} minutes in all.`,
  '',
  '| work | dus-sync | floor | ratio | goal | met |',
  '|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.name} | ${fmt(r.value, r.unit)}${r.note ? ` (${r.note})` : ''} | ${r.floor === undefined ? '-' : fmt(r.floor, r.unit)} | ${r.floor ? (r.value / r.floor).toFixed(2) + '×' : '-'} | ${r.goal} | ${r.ok ? 'yes' : '**no**'} |`),
];
process.stdout.write(lines.join('\n') + '\n');
if (!smoke && rows.some((r) => !r.ok)) process.exitCode = 1;
