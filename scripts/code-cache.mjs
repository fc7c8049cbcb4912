// V8's code cache of dist/ (src/cli/code-cache.ts): runs the built CLI a few times, as users do,
// each run writing what V8 compiled of the files it loaded into FILE.v8cache as it exits
// (scripts/code-cache-writer.cjs). Run by scripts/build.mjs after bundling.
//
// The cache is for the Node that runs this and for its V8 flags: a flag in NODE_OPTIONS here and
// not where the CLI runs (or the reverse) makes V8 refuse it, and the CLI compiles as it would
// without one. The container image builds with the NODE_OPTIONS it runs with (Dockerfile).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const cli = resolve('dist', 'cli.js');
const writer = resolve('scripts', 'code-cache-writer.cjs');
const repo = mkdtempSync(join(tmpdir(), 'dus-sync-code-cache-'));
try {
  mkdirSync(join(repo, 'tenants', 'acme'), { recursive: true });
  writeFileSync(join(repo, 'dus-sync.yaml'), 'apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:8080\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\nresources: ["tenants/**/*.yaml"]\n');
  writeFileSync(join(repo, 'tenants', 'acme', 'modem.yaml'), [
    'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme, labels: { team: radio } }\nspec:\n  version_number: "1.2.0"\n  uncompressed_size: 1048576\n  is_deactivated: false\n  dependencies:\n    - { component_name: bootloader, min_version: "1.0.0" }\n',
    'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 7\n  phases:\n    - name: canary\n      info: { percent: 5 }\n    - name: fleet\n      info: { percent: 100 }\n',
  ].join('---\n'));
  // The last run writes dist/main.cjs's cache: validate, the command whose start is a goal.
  const runs = [['schema', 'config'], ['completion', 'bash'], ['--config', join(repo, 'dus-sync.yaml'), 'validate']];
  for (const args of runs) {
    const r = spawnSync(process.execPath, ['--require', writer, cli, ...args], { cwd: repo, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
    if (r.status !== 0) throw new Error(`scripts/code-cache.mjs: dus-sync ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  }
} finally {
  rmSync(repo, { recursive: true, force: true });
}
