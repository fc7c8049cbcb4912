// The documented ways to get dus-sync, run as a user (or a CI runner) would, from this
// repository alone: the package is not on the npm registry, so no route may fetch it by name.
//
// 1. A pinned git reference: `npm pack git+URL#REF` clones it, installs its locked dependencies,
//    builds it (the `prepare` script) and packs it; `npm install --global` of that package puts
//    `dus-sync` on the PATH (what the GitLab example and the README's Install do).
// 2. The GitHub Action: action.yml's own steps, run by bash as a runner runs them, against a copy
//    of the checkout a `uses: OWNER/dus-sync@REF` gives (sources only, no dist/, no node_modules).
//
// npm runs with --offline (`npm ci` filled its cache), but for the one install of the packed
// package, which prefers the cache and may fetch from the npm registry what it lacks.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { REPO } from '../diff/built-cli.js';

const run = promisify(execFile);
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string; scripts: Record<string, string> };
const work = mkdtempSync(join(tmpdir(), 'dus-routes-'));
const npmEnv = {
  ...process.env,
  npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false',
  npm_config_update_notifier: 'false', npm_config_loglevel: 'error',
  npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? tmpdir(), '.npm'),
};
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The repository as git would hand it out: tracked and new (not ignored) files of the working tree. */
function sourceTree(to: string): void {
  const files = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO, encoding: 'utf8' });
  if (files.status !== 0) throw new Error(`this test needs the repository's git metadata: ${files.stderr}`);
  for (const f of files.stdout.split('\0').filter(Boolean)) {
    if (!existsSync(join(REPO, f))) continue; // deleted in the working tree
    mkdirSync(dirname(join(to, f)), { recursive: true });
    copyFileSync(join(REPO, f), join(to, f));
  }
}

function examples(to: string): string {
  cpSync(join(REPO, 'examples'), to, { recursive: true });
  return to;
}

/** Runs a command without blocking this process: the emulator answers from it. */
function exec(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}

let emulator: RunningEmulator;
beforeAll(async () => { emulator = await startEmulator({ seed: join(REPO, 'examples', 'emulator-seed.yaml') }); });
afterAll(async () => { await emulator?.close(); });
const keys = { DUS_API_KEY_ACME: 'dev-key-acme', DUS_API_KEY_GLOBEX: 'dev-key-globex' };

describe('install from a pinned git reference', () => {
  it('package.json builds on prepare, so a git install has dist/', () => {
    expect(pkg.scripts.prepare).toBe('node scripts/build.mjs');
  });

  it('npm pack git+URL#COMMIT, npm install --global: dus-sync on the PATH, and it works', async () => {
    const origin = join(work, 'origin');
    mkdirSync(origin);
    sourceTree(origin);
    const git = (...args: string[]) => run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd: origin });
    await git('init', '-q');
    await git('add', '-A');
    await git('commit', '-q', '-m', 'release');
    const sha = (await git('rev-parse', 'HEAD')).stdout.trim();

    const packs = join(work, 'packs');
    mkdirSync(packs);
    await run(NPM, ['pack', '--silent', '--pack-destination', packs, `git+file://${origin}#${sha}`], { cwd: work, env: npmEnv, timeout: 240_000 });
    const tarball = readdirSync(packs).find((f) => f.endsWith('.tgz'));
    expect(tarball).toBe(`dus-sync-${pkg.version}.tgz`);

    const prefix = join(work, 'global');
    // A package installs without its lockfile: npm may pick a newer patch of a dependency than
    // `npm ci` cached (another npm, as on Node 24, resolves anew), so this one step may fetch it.
    const installEnv = { ...npmEnv, npm_config_offline: 'false', npm_config_prefer_offline: 'true' };
    await run(NPM, ['install', '--global', '--prefix', prefix, join(packs, tarball!)], { cwd: work, env: installEnv, timeout: 240_000 });
    const bin = join(prefix, 'bin', 'dus-sync');
    const version = await run(bin, ['--version'], { env: npmEnv });
    expect(version.stdout.trim()).toBe(pkg.version);
    // Installed for use, not for development: no test runner, no bundler.
    expect(existsSync(join(prefix, 'lib', 'node_modules', 'dus-sync', 'node_modules', 'vitest'))).toBe(false);
    expect(existsSync(join(prefix, 'lib', 'node_modules', 'dus-sync', 'node_modules', 'esbuild'))).toBe(false);

    const repo = examples(join(work, 'config-git'));
    const env = { ...process.env, ...keys, DUS_BASE_URL: emulator.url, DUS_SYNC_STATE_DIR: join(work, 'state-git') };
    const validate = await exec(bin, ['validate'], { cwd: repo, env });
    expect(validate.stderr).toBe('');
    expect(validate.stdout).toMatch(/valid/);
    expect(validate.status).toBe(0);
    const plan = await exec(bin, ['plan', '--detailed-exitcode'], { cwd: repo, env });
    expect(plan.stdout).toMatch(/^Plan: /m);
    expect(plan.status).toBe(2);
  }, 300_000);
});

describe('the GitHub Action (action.yml), its steps run as a runner runs them', () => {
  const action = parse(readFileSync(join(REPO, 'action.yml'), 'utf8')) as {
    runs: { steps: Array<{ id?: string; run?: string; env?: Record<string, string> }> };
  };
  const step = (id: string) => action.runs.steps.find((s) => s.id === id)!;
  const actionPath = join(work, 'action');
  const temp = join(work, 'runner-temp');
  let cli = '';

  /** Runs one step's script with bash, its outputs read back from GITHUB_OUTPUT. */
  async function runStep(id: string, cwd: string, env: Record<string, string>) {
    const outputFile = join(temp, `${id}-${Math.random().toString(36).slice(2)}.out`);
    writeFileSync(outputFile, '');
    const r = await exec('bash', ['-e', '-c', step(id).run!], {
      cwd, env: { ...npmEnv, GITHUB_ACTION_PATH: actionPath, GITHUB_OUTPUT: outputFile, RUNNER_TEMP: temp, GITHUB_RUN_ID: '7', GITHUB_ACTION: id, ...env },
    });
    const outputs = Object.fromEntries(readFileSync(outputFile, 'utf8').split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, outputs };
  }

  beforeAll(() => {
    mkdirSync(actionPath);
    mkdirSync(temp);
    sourceTree(actionPath);
  });

  it('builds the checkout it was given (npm ci, build) and names the CLI it built', async () => {
    expect(existsSync(join(actionPath, 'dist'))).toBe(false);
    const built = await runStep('build', actionPath, {});
    expect(built.status, built.stderr).toBe(0);
    cli = built.outputs.cli!;
    expect(cli).toBe(join(actionPath, 'dist', 'cli.js'));
    expect(existsSync(cli)).toBe(true);
    // Nothing runs it from the registry by name.
    expect(JSON.stringify(action)).not.toMatch(/npx|dus-sync@\$/);
  }, 300_000);

  it('validate --format github: annotations on stdout, the output file, exit-code 0', async () => {
    const repo = examples(join(work, 'config-action'));
    writeFileSync(join(repo, 'tenants', 'acme', 'broken.yaml'), 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "9.9.9"\n  uncompressed_size: -1\n');
    const bad = await runStep('run', repo, { INPUT_COMMAND: 'validate', INPUT_ARGS: '--format github', DUS_SYNC_CLI: cli, INPUT_FAIL_ON_CHANGES: 'false' });
    expect(bad.status).toBe(1);
    expect(bad.outputs['exit-code']).toBe('1');
    expect(bad.stdout).toMatch(/^::error file=tenants\/acme\/broken\.yaml,line=6/m);
    expect(readFileSync(bad.outputs['output-file']!, 'utf8')).toBe(bad.stdout);
    rmSync(join(repo, 'tenants', 'acme', 'broken.yaml'));
    const good = await runStep('run', repo, { INPUT_COMMAND: 'validate', INPUT_ARGS: '--format github', DUS_SYNC_CLI: cli, INPUT_FAIL_ON_CHANGES: 'false' });
    expect(good.status, good.stderr).toBe(0);
    expect(good.outputs['exit-code']).toBe('0');
  });

  it('plan --detailed-exitcode: exit-code 2 passes the step, unless fail-on-changes', async () => {
    const repo = examples(join(work, 'config-action-plan'));
    const env = { ...keys, DUS_BASE_URL: emulator.url, DUS_SYNC_STATE_DIR: join(work, 'state-action'), DUS_SYNC_CLI: cli, INPUT_COMMAND: 'plan', INPUT_ARGS: '--format markdown --detailed-exitcode' };
    const passes = await runStep('run', repo, { ...env, INPUT_FAIL_ON_CHANGES: 'false' });
    expect(passes.status, passes.stderr).toBe(0);
    expect(passes.outputs['exit-code']).toBe('2');
    expect(readFileSync(passes.outputs['output-file']!, 'utf8')).toMatch(/phase/);
    const fails = await runStep('run', repo, { ...env, INPUT_FAIL_ON_CHANGES: 'true' });
    expect(fails.status).toBe(2);
    // args are words, never shell: a `$(...)` in them is passed as text, not run.
    const injected = await runStep('run', repo, { ...env, INPUT_ARGS: '--format $(touch${IFS}pwned)', INPUT_FAIL_ON_CHANGES: 'false' });
    expect(injected.outputs['exit-code']).toBe('1');
    expect(existsSync(join(repo, 'pwned'))).toBe(false);
  });
});
