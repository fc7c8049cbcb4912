// Provenance: plan JSON, saved plans and the markdown footer name the git commit the desired
// state was read at (and whether it was dirty), from a subfolder of the repository too; outside
// git they simply leave it out.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { runCli } from './helpers.js';
import { env, repo, seed } from './habits-fixture.js';

let emulator: RunningEmulator | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd, encoding: 'utf8' }).trim();

/** A git repository with the desired state in deploy/ (a subfolder), committed. */
function gitRepo(): { root: string; deploy: string; head: string } {
  const src = repo();
  dirs.push(src);
  const root = join(src, 'root');
  const deploy = join(root, 'deploy');
  mkdirSync(deploy, { recursive: true });
  renameSync(join(src, 'dus-sync.yaml'), join(deploy, 'dus-sync.yaml'));
  renameSync(join(src, 'tenants'), join(deploy, 'tenants'));
  git(root, 'init', '-q');
  git(root, 'add', '.');
  git(root, 'commit', '-q', '-m', 'desired state');
  return { root, deploy, head: git(root, 'rev-parse', 'HEAD') };
}

describe('provenance of a plan', () => {
  it('plan --format json, plan --out and the markdown footer carry the commit, run from a subfolder', async () => {
    emulator = await startEmulator({ seed: seed() });
    const { deploy, head } = gitRepo();
    const json = await runCli(['plan', '--format', 'json'], { cwd: join(deploy, 'tenants'), env: env(emulator.url) });
    expect(json.code, json.stderr).toBe(0);
    const doc = JSON.parse(json.stdout) as { format_version: number; desired_revision?: unknown };
    expect(doc.format_version).toBe(1);
    expect(doc.desired_revision).toEqual({ commit: head, dirty: false });

    const out = join(deploy, '..', 'plan.json');
    const saved = await runCli(['plan', '--out', out], { cwd: deploy, env: env(emulator.url) });
    expect(saved.code, saved.stderr).toBe(0);
    expect(saved.stderr).toContain(`(desired state at ${head.slice(0, 12)})`);
    expect((JSON.parse(readFileSync(out, 'utf8')) as { desired_revision?: unknown }).desired_revision).toEqual({ commit: head, dirty: false });
    // A saved plan with its revision is still a plan apply reads (and it tells which commit it applies).
    const applied = await runCli(['apply', out, '--journal', join(deploy, '..', 'j.jsonl')], { cwd: deploy, env: env(emulator.url) });
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).toContain(`as approved when it was made (desired state at ${head.slice(0, 12)})`);

    writeFileSync(join(deploy, 'tenants', 'extra.yaml'), '# not committed\n');
    const md = await runCli(['plan', '--format', 'markdown'], { cwd: deploy, env: env(emulator.url) });
    expect(md.code, md.stderr).toBe(0);
    expect(md.stdout).toMatch(new RegExp(`\\n\\n<sub>dus-sync \\S+ · from commit <code>${head.slice(0, 12)}</code> with uncommitted changes · \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z</sub>\\n$`));
  });

  it('outside git: no desired_revision, a footer that says so, and no error', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    dirs.push(dir);
    const json = await runCli(['plan', '--format', 'json'], { cwd: dir, env: { ...env(emulator.url), GIT_CEILING_DIRECTORIES: dir } });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).not.toHaveProperty('desired_revision');
    expect(json.stderr).not.toMatch(/git|error|warning/i);
    const md = await runCli(['plan', '--format', 'markdown'], { cwd: dir, env: { ...env(emulator.url), PATH: '/nonexistent' } });
    expect(md.code, md.stderr).toBe(0);
    expect(md.stdout).toMatch(/<sub>dus-sync \S+ · outside git \(no commit\) · \S+<\/sub>\n$/);
  });

  it('refuses a saved plan whose desired_revision is not a commit, in one sentence', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    dirs.push(dir);
    const out = join(dir, 'plan.json');
    expect((await runCli(['plan', '--out', out], { cwd: dir, env: env(emulator.url) })).code).toBe(0);
    const plan = JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>;
    writeFileSync(out, JSON.stringify({ ...plan, desired_revision: { commit: '\u001b[31mevil', dirty: false } }));
    const r = await runCli(['apply', out], { cwd: dir, env: env(emulator.url) });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(`error: ${out} is not a dus-sync saved plan: its desired_revision is not a commit id and a dirty flag; make one with dus-sync plan --out FILE`);
  });
});
