// `npm run bench`: every budget of the performance issue, each against its baseline measured
// in the same run, printed as a markdown table (the README carries the latest one).
//   node bench/run.mjs            full sizes (20,000 firmwares in 2,000 bundles, 200 actions)
//   node bench/run.mjs --smoke    tiny sizes: checks the benchmarks still work (CI), not timed
// Everything talks to an emulator on 127.0.0.1 started by this script.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, readFileSync, writeFileSync, cpSync } from 'node:fs';
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
const smoke = process.argv.includes('--smoke');
const work = mkdtempSync(join(tmpdir(), 'dus-sync-bench-'));
const RUNS = smoke ? 1 : 3;
const size = smoke
  ? { firmwares: 200, bundles: 20, actions: 10, changedFirmwares: 20 }
  : { firmwares: 20000, bundles: 2000, actions: 200, changedFirmwares: 1000 };

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [];
function row(name, value, baseline, unit, budget, ok) {
  rows.push({ name, value, baseline, unit, budget, ok });
  process.stderr.write(`  ${name}: ${fmt(value, unit)}${baseline !== undefined ? ` vs ${fmt(baseline, unit)}` : ''} ${ok ? 'ok' : 'OVER BUDGET'}\n`);
}
function fmt(v, unit) {
  if (v === undefined) return '-';
  return unit === 'MB' ? `${v.toFixed(0)} MB` : unit === 'ms' ? `${v.toFixed(0)} ms` : `${v}`;
}

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
  const r = spawnSync(cmd, args, { env: { ...process.env, NO_COLOR: '1', ...env }, encoding: 'utf8', maxBuffer: 1 << 28 });
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

/** Peak RSS of a whole command (the process reports its own maxRSS as it exits). */
function peakRssMb(args, env) {
  const file = join(work, `rss-${process.hrtime.bigint()}.txt`);
  const r = spawnSync(process.execPath, ['--import', pathToFileURL(join(root, 'bench', 'rss-report.mjs')).href, ...args],
    { env: { ...process.env, ...env, DUS_BENCH_RSS_FILE: file }, encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr.slice(-2000)}`);
  return Number(readFileSync(file, 'utf8')) / 1024;
}

async function benchPlanAndApply() {
  const g = generate({ ...size, out: join(work, 'main') });
  const env = (url) => ({ DUS_BASE_URL: url, DUS_API_KEY_ACME: g.key });
  // plan: the tool and the least client against the same server, alternating.
  const emu = await startEmulator(g.seedFile);
  const tool = []; const least = [];
  try {
    for (let i = 0; i < RUNS; i += 1) {
      tool.push(timed(process.execPath, [CLI, '--config', g.config, 'plan', '--format', 'json'], env(emu.url), planFinds(g.expected)));
      least.push(timed(process.execPath, [join(root, 'bench', 'least-client.mjs'), 'plan', g.repo, emu.url, g.key], {},
        (out) => out.startsWith(`${size.firmwares} firmwares, ${size.actions} actions, ${size.firmwares} live`)));
    }
  } finally { await emu.stop(); }
  row(`plan, ${size.firmwares} firmwares / ${size.bundles} bundles / ${size.actions} actions`, median(tool), median(least), 'ms',
    '≤ 1.3× least client', median(tool) <= 1.3 * median(least));

  // apply: a fresh server per run (apply changes it).
  const toolA = []; const leastA = [];
  for (let i = 0; i < RUNS; i += 1) {
    let e = await startEmulator(g.seedFile);
    try {
      toolA.push(timed(process.execPath, [CLI, '--config', g.config, 'apply', '--auto-approve', '--journal', join(work, `j${i}.jsonl`)], env(e.url),
        (out) => out.includes(`${g.expected.puts + g.expected.appends} applied`)));
    } finally { await e.stop(); }
    e = await startEmulator(g.seedFile);
    try {
      leastA.push(timed(process.execPath, [join(root, 'bench', 'least-client.mjs'), 'apply', g.repo, e.url, g.key], {},
        (out) => out.startsWith(`${g.expected.puts} puts, ${g.expected.appends} appends`)));
    } finally { await e.stop(); }
  }
  row(`apply, ${size.changedFirmwares} PUTs + ${size.actions} appends`, median(toolA), median(leastA), 'ms',
    '≤ 1.3× least client', median(toolA) <= 1.3 * median(leastA));
  return g;
}

function benchColdStart() {
  const n = smoke ? 3 : 15;
  const measure = (args) => median(Array.from({ length: n }, () => timed(process.execPath, args)));
  const base = measure(['-e', '0']);
  const version = measure([CLI, '--version']);
  const help = measure([CLI, '--help']);
  const validate = measure([CLI, '--config', join(root, 'examples', 'dus-sync.yaml'), 'validate']);
  row('cold start: --version', version, base, 'ms', '≤ 3× node -e 0', version <= 3 * base);
  row('cold start: --help', help, base, 'ms', 'report', true);
  row('cold start: validate examples/', validate, base, 'ms', 'report', true);
}

async function benchRss() {
  const sizes = smoke ? [200, 400] : [2000, 20000, 100000];
  const results = [];
  for (const n of sizes) {
    const g = generate({ firmwares: n, bundles: Math.max(1, n / 10), actions: smoke ? 5 : 200, changedFirmwares: Math.max(1, n / 20), out: join(work, `rss-${n}`) });
    const emu = await startEmulator(g.seedFile);
    try {
      const mb = peakRssMb([CLI, '--config', g.config, 'plan', '--format', 'json'], { DUS_BASE_URL: emu.url, DUS_API_KEY_ACME: g.key });
      results.push({ n, mb });
    } finally { await emu.stop(); }
    rmSync(join(work, `rss-${n}`), { recursive: true, force: true });
  }
  for (const r of results) {
    row(`plan peak RSS at ${r.n} records`, r.mb, undefined, 'MB', r.n === 20000 ? '≤ 300 MB' : 'linear', r.n !== 20000 || r.mb <= 300);
  }
  if (results.length >= 2) {
    const [a, b] = [results[results.length - 2], results[results.length - 1]];
    const growth = (b.mb - results[0].mb) / (a.mb - results[0].mb || 1);
    const ratio = (b.n - results[0].n) / (a.n - results[0].n || 1);
    // 1.0 is exactly linear; 10% is left for the garbage collector's heap sizing.
    row('RSS growth vs records growth (last step)', Number((growth / ratio).toFixed(2)), undefined, '', '≤ 1 (linear), 10% GC slack', growth <= ratio * 1.1);
  }
}

function benchValidate() {
  const n = smoke ? 200 : 5000;
  const g = generate({ firmwares: n, bundles: n / 10, actions: 0, changedFirmwares: 1, out: join(work, 'validate') });
  const ms = median(Array.from({ length: RUNS }, () => timed(process.execPath, [CLI, '--config', g.config, 'validate'])));
  row(`validate ${n} documents`, ms, undefined, 'ms', '< 1000 ms', ms < 1000);
}

async function benchWatch(g) {
  // Save-to-applied: a watch agent on the big repo; edit one firmware's size, poll the server.
  const emu = await startEmulator(g.seedFile);
  const repo = join(work, 'watch-repo');
  cpSync(g.repo, repo, { recursive: true });
  const config = join(repo, 'dus-sync.yaml');
  const agent = spawn(process.execPath, [CLI, '--config', config, 'watch', '--journal', join(work, 'jw.jsonl')],
    { env: { ...process.env, DUS_BASE_URL: emu.url, DUS_API_KEY_ACME: g.key }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  agent.stderr.on('data', (d) => { log += d; });
  const headers = { 'x-service-api-key': g.key, 'x-service-tenant': 'acme' };
  const samples = [];
  try {
    // Wait for the first pass (it applies the generator's changes) to finish and succeed.
    const deadline = Date.now() + (smoke ? 60_000 : 300_000);
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
    for (let i = 0; i < (smoke ? 1 : 5); i += 1) {
      const target = 900000 + i;
      writeFileSync(file, text.replace(/uncompressed_size: \d+/, `uncompressed_size: ${target}`));
      const t0 = Date.now();
      while (await sizeNow() !== target) {
        if (Date.now() - t0 > 60_000) throw new Error(`watch did not apply the edit:\n${log.slice(-2000)}`);
        await sleep(20);
      }
      samples.push(Date.now() - t0);
      // Let the pass finish (journal, lock) so that the next save does not queue behind it.
      await sleep(1000);
    }
  } finally {
    agent.kill('SIGTERM');
    await new Promise((r) => agent.once('exit', r));
    await emu.stop();
  }
  const ms = median(samples);
  row(`watch: save to applied (${size.firmwares} documents)`, ms, undefined, 'ms', '< 1000 ms + 300 ms debounce', ms < 1300);
}

process.stderr.write(`dus-sync benchmarks${smoke ? ' (smoke)' : ''} in ${work}\n`);
try {
  benchColdStart();
  benchValidate();
  const g = await benchPlanAndApply();
  await benchRss();
  await benchWatch(g);
} finally {
  rmSync(work, { recursive: true, force: true });
  rmSync(snapshot, { recursive: true, force: true });
}

const cpu = cpus()[0]?.model ?? 'unknown CPU';
const lines = [
  `Measured ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}${smoke ? ' (smoke sizes: not meaningful)' : ''}, median of ${RUNS}.`,
  '',
  '| benchmark | dus-sync | baseline | ratio | budget | met |',
  '|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.name} | ${fmt(r.value, r.unit)} | ${r.baseline === undefined ? '-' : fmt(r.baseline, r.unit)} | ${r.baseline ? (r.value / r.baseline).toFixed(2) + '×' : '-'} | ${r.budget} | ${r.ok ? 'yes' : '**no**'} |`),
];
process.stdout.write(lines.join('\n') + '\n');
if (!smoke && rows.some((r) => !r.ok)) process.exitCode = 1;
