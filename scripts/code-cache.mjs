// V8's code cache of dist/ (src/cli/code-cache.ts): runs the built CLI as users do, each run
// writing what V8 compiled of the files it loaded into FILE.v8cache as it exits
// (scripts/code-cache-writer.cjs). Run by scripts/build.mjs after bundling.
//
//   schema, completion     their own files
//   apply                  dist/commands/online.cjs (plan's code and apply's), against the
//                          emulator of dist/index.js on 127.0.0.1, port 0, in this process
//   validate               last: dist/main.cjs's cache is the last run's, and validate's start is a goal
//
// The cache is for the Node that runs this and for its V8 flags: a flag in NODE_OPTIONS here and
// not where the CLI runs (or the reverse) makes V8 refuse it, and the CLI compiles as it would
// without one. The container image builds with the NODE_OPTIONS it runs with (Dockerfile).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = resolve('dist');
const cli = join(dist, 'cli.js');
const writer = resolve('scripts', 'code-cache-writer.cjs');
const KEY = 'code-cache-training-key-0123456789';
const repo = mkdtempSync(join(tmpdir(), 'dus-sync-code-cache-'));
// The builder's own DUS_* variables (DUS_CONFIG, DUS_API_KEY_*, DUS_BASE_URL...) would point the
// runs elsewhere, and GIT_* ones (GIT_DIR...) would have apply's git read another repository:
// none reaches them, and git stops at the temporary folder rather than find a checkout above it.
// Nothing but the emulator here is ever asked anything.
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(DUS|GIT)_/i.test(name))),
  GIT_CEILING_DIRECTORIES: dirname(repo),
};

/** One run of the CLI with the writer preloaded; throws unless it exits 0. Not spawnSync: the emulator answers from this process. */
function cliRun(args, extra = {}) {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--require', writer, cli, ...args], {
      cwd: repo, env: { ...env, NO_COLOR: '1', ...extra }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', fail);
    child.on('close', (code) => (code === 0 ? done() : fail(new Error(`scripts/code-cache.mjs: dus-sync ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

const { startEmulator } = await import(pathToFileURL(join(dist, 'index.js')).href);
const emulator = await startEmulator({
  host: '127.0.0.1',
  port: 0,
  seed: {
    tenants: {
      acme: {
        api_key: KEY,
        bundles: [{ version: '1', firmwares: [
          { version_number: '1.0.0', component_name: 'bootloader', uncompressed_size: 4096, is_deactivated: false, dependencies: [] },
          { version_number: '1.2.0', component_name: 'modem', uncompressed_size: 1024, is_deactivated: false, dependencies: [] },
        ] }],
        actions: [{ id: 7, status: 'pending', phases: [{ name: 'canary', info: { percent: 5 } }] }],
      },
    },
  },
});
try {
  mkdirSync(join(repo, 'tenants', 'acme'), { recursive: true });
  writeFileSync(join(repo, 'dus-sync.yaml'), 'apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:8080\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\nresources: ["tenants/**/*.yaml"]\n');
  writeFileSync(join(repo, 'tenants', 'acme', 'modem.yaml'), [
    'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme, labels: { team: radio } }\nspec:\n  version_number: "1.2.0"\n  uncompressed_size: 1048576\n  is_deactivated: false\n  dependencies:\n    - { component_name: bootloader, min_version: "1.0.0" }\n',
    'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 7\n  phases:\n    - name: canary\n      info: { percent: 5 }\n    - name: fleet\n      info: { percent: 100 }\n',
  ].join('---\n'));
  await cliRun(['schema', 'config']);
  await cliRun(['completion', 'bash']);
  // A firmware to update and a phase to append; the journal and the lock in the temporary folder.
  await cliRun(['apply', '--auto-approve'], { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(repo, 'state') });
  await cliRun(['validate']);
} finally {
  await emulator.close();
  rmSync(repo, { recursive: true, force: true });
}
