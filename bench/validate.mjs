// Times `dus-sync validate` on 5,000 documents (target: well under a second).
// Usage: npm run build && node bench/validate.mjs [documents] [runs]
// DUS_SYNC_CLI points at another build of the CLI. Not a test: the numbers depend on the machine.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const DOCS = Number(process.argv[2] ?? 5000);
const RUNS = Number(process.argv[3] ?? 5);
const PER_FILE = 10;
const cli = resolve(process.env.DUS_SYNC_CLI ?? 'dist/cli.js');

const dir = mkdtempSync(join(tmpdir(), 'dus-bench-'));
try {
  writeFileSync(join(dir, 'dus-sync.yaml'), `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
  globex: { api_key_env: DUS_API_KEY_GLOBEX }
resources: ["tenants/**/*.yaml"]
`);
  let n = 0;
  for (let file = 0; n < DOCS; file++) {
    const tenant = file % 2 === 0 ? 'acme' : 'globex';
    const kind = file % 10 === 9 ? 'actions' : 'firmwares';
    mkdirSync(join(dir, 'tenants', tenant, kind), { recursive: true });
    const docs = [];
    for (let i = 0; i < PER_FILE && n < DOCS; i++, n++) docs.push(kind === 'actions' ? action(tenant, n) : firmware(tenant, n));
    writeFileSync(join(dir, 'tenants', tenant, kind, `f${file}.yaml`), docs.join('---\n'));
  }

  const times = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    const res = spawnSync(process.execPath, [cli, 'validate'], { cwd: dir, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (res.status !== 0) throw new Error(`validate failed (${res.status}):\n${res.stdout}${res.stderr}`);
    if (r === 0) process.stderr.write(res.stdout);
  }
  const noop = spawnTime(['--version']);
  times.sort((a, b) => a - b);
  process.stdout.write(`validate ${DOCS} documents: median ${times[Math.floor(RUNS / 2)].toFixed(0)} ms, min ${times[0].toFixed(0)} ms over ${RUNS} runs (node start + --version: ${noop.toFixed(0)} ms)\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

function spawnTime(args) {
  const t0 = process.hrtime.bigint();
  spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

function firmware(tenant, n) {
  return `apiVersion: dus-sync/v1
kind: Firmware
metadata:
  tenant: ${tenant}
  labels: { team: radio }
spec:
  version_number: "${Math.floor(n / 100)}.${n % 100}.0"
  component_name: modem
  is_deactivated: ${n % 7 === 0}
  uncompressed_size: ${1_000_000 + n}
  dependencies:
    - { component_name: bootloader, min_version: "1.2.0" }
    - { component_name: power-mgmt, min_version: "0.9.${n % 10}" }
`;
}

function action(tenant, n) {
  return `apiVersion: dus-sync/v1
kind: Action
metadata:
  tenant: ${tenant}
spec:
  id: ${n}
  phases:
    - { name: canary, trigger_on: { after_minutes: 0 }, info: { fleet_percent: 1 } }
    - { name: wave-1, trigger_on: { after_minutes: 240, min_success_rate: 0.98 }, info: { fleet_percent: 10 } }
    - { name: general, trigger_on: { after_minutes: 1440, min_success_rate: 0.99 }, info: { fleet_percent: 100 } }
`;
}
