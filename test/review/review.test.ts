// `dus-sync review` through the built CLI, against a fake GitHub and a fake GitLab (node:http on
// 127.0.0.1 port 0) and the emulator: one sticky comment created then updated, someone else's
// comment with the marker left alone, a fork's 403 a warning, the token never in any output,
// annotations with paths from the repository's root when run from a subfolder; and the action's
// run step, by bash, as a runner runs it.
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { checkoutTop, withGitConfig } from '../../src/load/git.js';
import { REPO } from '../diff/built-cli.js';

const CLI = join(REPO, 'dist', 'cli.js');
const TOKEN = 'ghs_review_token_5ecret_9f8e7d6c5b4a';
const GL_TOKEN = 'glpat-review-token-5ecret-1a2b3c4d';
const MARKER = '<!-- dus-sync-plan -->';
const work = mkdtempSync(join(tmpdir(), 'dus-review-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const git = (cwd: string, ...args: string[]) => promisify(execFile)('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd });

interface Run { status: number | null; stdout: string; stderr: string }
function exec(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}

/** A clean environment: no CI variables of the machine running the tests leak in. */
function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, XDG_STATE_HOME: process.env.XDG_STATE_HOME, NO_COLOR: '1' };
  return { ...env, ...extra };
}

/** A repository whose config lives in config/ (the working-directory case), origin/main the base. */
async function makeRepo(name: string): Promise<{ root: string; dir: string }> {
  const root = join(work, name);
  const dir = join(root, 'config');
  mkdirSync(root);
  cpSync(join(REPO, 'examples'), dir, { recursive: true, filter: (src) => !src.includes(`${join('examples', 'ci')}`) && !src.includes(`${join('examples', 'deploy')}`) });
  await git(root, 'init', '-q', '-b', 'main');
  await git(root, 'add', '-A');
  await git(root, 'commit', '-q', '-m', 'base');
  await git(root, 'update-ref', 'refs/remotes/origin/main', 'HEAD');
  return { root, dir };
}

const rollout = (dir: string) => join(dir, 'tenants', 'acme', 'actions', 'modem-2.5-rollout.yaml');
function appendPhase(dir: string, name: string): void {
  writeFileSync(rollout(dir), `${readFileSync(rollout(dir), 'utf8')}    - name: ${name}\n      trigger_on: { after_minutes: 5000 }\n      info: { fleet_percent: 100 }\n`);
}

interface Served { url: string; requests: { method: string; url: string; auth: string }[]; close(): Promise<void> }
async function serve(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void): Promise<Served> {
  const requests: Served['requests'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => { body += d.toString(); });
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, auth: String(req.headers.authorization ?? req.headers['private-token'] ?? '') });
      handler(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(() => r())) };
}

function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(value));
}

// ---------------------------------------------------------------- a fake GitHub

interface Comment { id: number; user: { login: string; type: string }; body: string }
const github = {
  comments: [] as Comment[],
  /** 403 on writes, like the read-only token of a fork's pull request; the message echoes the token. */
  readOnly: false,
  nextId: 100,
};
let gh: Served;

function githubHandler(req: IncomingMessage, body: string, res: ServerResponse): void {
  const url = new URL(req.url!, 'http://x');
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return json(res, 401, { message: 'Bad credentials' });
  if (url.pathname === '/user') return json(res, 403, { message: 'Resource not accessible by integration' });
  if (url.pathname === '/repos/acme/config/issues/5/comments' && req.method === 'GET') {
    // Two a page, to prove the pages are followed.
    const page = Number(url.searchParams.get('page') ?? '1');
    const items = github.comments.slice((page - 1) * 2, page * 2);
    const more = page * 2 < github.comments.length;
    return json(res, 200, items, more ? { link: `<${gh.url}/repos/acme/config/issues/5/comments?per_page=100&page=${page + 1}>; rel="next"` } : {});
  }
  if (github.readOnly) return json(res, 403, { message: `Resource not accessible by integration (token ${TOKEN})` });
  if (url.pathname === '/repos/acme/config/issues/5/comments' && req.method === 'POST') {
    const c = { id: github.nextId++, user: { login: 'github-actions[bot]', type: 'Bot' }, body: (JSON.parse(body) as { body: string }).body };
    github.comments.push(c);
    return json(res, 201, c);
  }
  const m = /^\/repos\/acme\/config\/issues\/comments\/(\d+)$/.exec(url.pathname);
  if (m && req.method === 'PATCH') {
    const c = github.comments.find((x) => x.id === Number(m[1]));
    if (!c) return json(res, 404, { message: 'Not Found' });
    c.body = (JSON.parse(body) as { body: string }).body;
    return json(res, 200, c);
  }
  json(res, 404, { message: 'Not Found' });
}

// ---------------------------------------------------------------- a fake GitLab

interface Note { id: number; author: { id: number; username: string }; body: string; system: boolean }
const gitlab = { notes: [] as Note[], readOnly: false, nextId: 500 };
function gitlabHandler(req: IncomingMessage, body: string, res: ServerResponse): void {
  const url = new URL(req.url!, 'http://x');
  if (req.headers['private-token'] !== GL_TOKEN) return json(res, 401, { message: '401 Unauthorized' });
  if (url.pathname === '/api/v4/user') return json(res, 200, { id: 77, username: 'project_9_bot' });
  const base = '/api/v4/projects/9/merge_requests/3/notes';
  if (url.pathname === base && req.method === 'GET') {
    const page = Number(url.searchParams.get('page') ?? '1');
    const items = gitlab.notes.slice((page - 1) * 2, page * 2);
    return json(res, 200, items, { 'x-next-page': page * 2 < gitlab.notes.length ? String(page + 1) : '' });
  }
  if (gitlab.readOnly) return json(res, 403, { message: '403 Forbidden' });
  if (url.pathname === base && req.method === 'POST') {
    const n = { id: gitlab.nextId++, author: { id: 77, username: 'project_9_bot' }, body: (JSON.parse(body) as { body: string }).body, system: false };
    gitlab.notes.push(n);
    return json(res, 201, n);
  }
  const m = new RegExp(`^${base}/(\\d+)$`).exec(url.pathname);
  if (m && req.method === 'PUT') {
    const n = gitlab.notes.find((x) => x.id === Number(m[1]));
    if (!n) return json(res, 404, { message: '404 Not found' });
    n.body = (JSON.parse(body) as { body: string }).body;
    return json(res, 200, n);
  }
  json(res, 404, { message: '404 Not found' });
}

let gl: Served;
let emulator: RunningEmulator;
beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run npm run build (npm test does it first)');
  gh = await serve(githubHandler);
  gl = await serve(gitlabHandler);
  emulator = await startEmulator({ seed: join(REPO, 'examples', 'emulator-seed.yaml') });
});
afterAll(async () => { await gh?.close(); await gl?.close(); await emulator?.close(); });

function githubEnv(summary: string): Record<string, string> {
  const event = join(work, 'event.json');
  writeFileSync(event, JSON.stringify({ action: 'synchronize', number: 5, pull_request: { number: 5 } }));
  return {
    GITHUB_ACTIONS: 'true', GITHUB_TOKEN: TOKEN, GITHUB_API_URL: gh.url, GITHUB_REPOSITORY: 'acme/config',
    GITHUB_EVENT_PATH: event, GITHUB_STEP_SUMMARY: summary, GITHUB_BASE_REF: 'main',
  };
}

const noToken = (r: Run) => {
  for (const t of [TOKEN, GL_TOKEN, 'review_token_5ecret', 'review-token-5ecret']) {
    expect(r.stdout).not.toContain(t);
    expect(r.stderr).not.toContain(t);
  }
};

describe('review on GitHub (no API keys: the diff against the base branch)', () => {
  let repo: { root: string; dir: string };
  const summary = join(work, 'summary-gh.md');
  beforeAll(async () => { repo = await makeRepo('gh'); });
  beforeEach(() => { github.readOnly = false; });
  const review = () => exec(process.execPath, [CLI, 'review'], repo.dir, baseEnv(githubEnv(summary)));

  it('first run creates the comment, the summary and the output', async () => {
    // Someone else's comments, with and without the marker: page 1 and 2 of the list.
    github.comments.push(
      { id: 1, user: { login: 'octocat', type: 'User' }, body: 'looks good' },
      { id: 2, user: { login: 'mallory', type: 'User' }, body: `${MARKER}\nnothing to see` },
      { id: 3, user: { login: 'github-actions[bot]', type: 'Bot' }, body: 'another bot comment without the marker' },
    );
    appendPhase(repo.dir, 'wave-3');
    const r = await review();
    expect(r.status, r.stderr).toBe(2);
    noToken(r);
    expect(r.stdout).toMatch(/^## dus-sync diff: `origin\/main` → this change/);
    expect(r.stdout).toContain('phase 4 `wave-3`');
    const mine = github.comments.filter((c) => c.user.login === 'github-actions[bot]' && c.body.includes(MARKER));
    expect(mine).toHaveLength(1);
    expect(mine[0]!.body).toBe(`${MARKER}\n${r.stdout}`);
    expect(mine[0]!.body.length).toBeLessThan(65_536);
    expect(github.comments.find((c) => c.id === 2)!.body).toBe(`${MARKER}\nnothing to see`);
    expect(readFileSync(summary, 'utf8')).toContain(r.stdout);
    expect(r.stderr).toMatch(/commented on pull request #5 of acme\/config/);
    // Every request carried the token in its header, and went to the fake only.
    expect(gh.requests.every((q) => q.auth === `Bearer ${TOKEN}`)).toBe(true);
  });

  it('second run updates the same comment, never touching the other author\'s', async () => {
    const before = github.comments.map((c) => c.id);
    appendPhase(repo.dir, 'wave-4');
    const r = await review();
    expect(r.status, r.stderr).toBe(2);
    noToken(r);
    expect(github.comments.map((c) => c.id)).toEqual(before);
    const mine = github.comments.filter((c) => c.user.login === 'github-actions[bot]' && c.body.includes(MARKER));
    expect(mine).toHaveLength(1);
    expect(mine[0]!.body).toContain('wave-4');
    expect(gh.requests.filter((q) => q.method === 'PATCH').map((q) => q.url)).toEqual([`/repos/acme/config/issues/comments/${mine[0]!.id}`]);
    expect(github.comments.find((c) => c.id === 2)!.body).toBe(`${MARKER}\nnothing to see`);
    expect(r.stderr).toMatch(/updated the comment/);
  });

  it('a fork\'s read-only token: a warning, the summary still written, the exit code the diff\'s', async () => {
    github.readOnly = true;
    appendPhase(repo.dir, 'wave-5');
    rmSync(summary, { force: true });
    const r = await review();
    expect(r.status, r.stderr).toBe(2);
    noToken(r);
    expect(r.stderr).toMatch(/^::warning title=dus-sync review::no comment on pull request #5 of acme\/config: could not update the comment: HTTP 403 \(Resource not accessible by integration \(token \[REDACTED\]\)\) \(a pull request from a fork gets a read-only token/m);
    expect(readFileSync(summary, 'utf8')).toContain('wave-5');
  });

  it('annotates invalid files at their path from the repository root, and lists them in the comment', async () => {
    const broken = join(repo.dir, 'tenants', 'acme', 'broken.yaml');
    writeFileSync(broken, 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "9.9.9"\n  uncompressed_size: -1\n');
    const r = await review();
    rmSync(broken);
    expect(r.status).toBe(1);
    noToken(r);
    // Run from config/, the path is config/tenants/...: the file as the pull request's diff names it.
    expect(r.stderr).toMatch(/^::error file=config\/tenants\/acme\/broken\.yaml,line=6,col=\d+,title=dus-sync%3A invalid::/m);
    expect(r.stdout).toContain('<code>config/tenants/acme/broken.yaml:6:');
    expect(github.comments.find((c) => c.user.login === 'github-actions[bot]' && c.body.includes(MARKER))!.body).toContain('problem');
    // The one top-level handler still says it, as for every command.
    expect(r.stderr).toMatch(/^error: 1 problem in the configuration/m);
  });
});

describe('review with the API keys: the live plan', () => {
  it('plans, comments, and annotates a conflict at the phase\'s line from the repository root', async () => {
    const repo = await makeRepo('plan');
    // Edit a phase that is already live: a conflict.
    writeFileSync(rollout(repo.dir), readFileSync(rollout(repo.dir), 'utf8').replace('info: { fleet_percent: 10 }', 'info: { fleet_percent: 20 }'));
    github.comments.length = 0;
    const env = baseEnv({ ...githubEnv(join(work, 'summary-plan.md')), DUS_API_KEY_ACME: 'dev-key-acme', DUS_API_KEY_GLOBEX: 'dev-key-globex', DUS_BASE_URL: emulator.url, DUS_SYNC_STATE_DIR: join(work, 'state-plan') });
    const r = await exec(process.execPath, [CLI, 'review'], repo.dir, env);
    expect(r.status).toBe(1);
    noToken(r);
    expect(r.stdout).toMatch(/^## dus-sync plan\n/);
    expect(r.stdout).toContain('**conflict** on action <code>42</code>');
    expect(r.stderr).toMatch(/^::error file=config\/tenants\/acme\/actions\/modem-2\.5-rollout\.yaml,line=1[0-9],col=\d+,title=dus-sync%3A conflict::/m);
    expect(r.stderr).not.toContain('dev-key-acme');
    expect(github.comments).toHaveLength(1);
    expect(github.comments[0]!.body.startsWith(`${MARKER}\n## dus-sync plan`)).toBe(true);
  });
});

describe('review on GitLab: one note, a Code Quality report', () => {
  let repo: { root: string; dir: string };
  beforeAll(async () => { repo = await makeRepo('gl'); });
  const env = () => baseEnv({
    GITLAB_CI: 'true', CI_API_V4_URL: `${gl.url}/api/v4`, CI_PROJECT_ID: '9', CI_MERGE_REQUEST_IID: '3',
    CI_MERGE_REQUEST_TARGET_BRANCH_NAME: 'main', DUS_NOTE_TOKEN: GL_TOKEN,
  });
  const review = () => exec(process.execPath, [CLI, 'review', '--code-quality', join(repo.root, 'gl-code-quality-report.json')], repo.dir, env());

  it('creates the note, then updates it; another author\'s note with the marker is left alone', async () => {
    gitlab.notes.push(
      { id: 1, author: { id: 5, username: 'alice' }, body: `${MARKER}\nquoted`, system: false },
      { id: 2, author: { id: 77, username: 'project_9_bot' }, body: `${MARKER}\nchanged the description`, system: true },
      { id: 3, author: { id: 5, username: 'alice' }, body: 'lgtm', system: false },
    );
    appendPhase(repo.dir, 'wave-3');
    const first = await review();
    expect(first.status, first.stderr).toBe(2);
    noToken(first);
    const mine = () => gitlab.notes.filter((n) => n.author.id === 77 && !n.system);
    expect(mine()).toHaveLength(1);
    expect(mine()[0]!.body).toBe(`${MARKER}\n${first.stdout}`);
    appendPhase(repo.dir, 'wave-4');
    const second = await review();
    expect(second.status, second.stderr).toBe(2);
    expect(mine()).toHaveLength(1);
    expect(mine()[0]!.body).toContain('wave-4');
    expect(gitlab.notes.find((n) => n.id === 1)!.body).toBe(`${MARKER}\nquoted`);
    expect(gitlab.notes.find((n) => n.id === 2)!.body).toBe(`${MARKER}\nchanged the description`);
    expect(gl.requests.filter((q) => q.method === 'PUT')).toHaveLength(1);
    expect(gl.requests.every((q) => q.auth === GL_TOKEN)).toBe(true);
  });

  it('writes problems to the Code Quality report with paths from the repository root; a 403 is a warning', async () => {
    gitlab.readOnly = true;
    writeFileSync(rollout(repo.dir), readFileSync(rollout(repo.dir), 'utf8').replace('name: wave-1', 'name: wave-one'));
    const r = await review();
    expect(r.status, r.stderr).toBe(2);
    noToken(r);
    expect(r.stderr).toMatch(/^warning: no comment on merge request !3: could not update the note: HTTP 403/m);
    const report = JSON.parse(readFileSync(join(repo.root, 'gl-code-quality-report.json'), 'utf8')) as { location: { path: string; lines: { begin: number } }; severity: string; fingerprint: string }[];
    expect(report.length).toBeGreaterThan(0);
    expect(report[0]!.location.path).toBe('config/tenants/acme/actions/modem-2.5-rollout.yaml');
    expect(report[0]!.severity).toBe('minor');
    expect(report[0]!.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('the action\'s run step with command: review, by bash as a runner runs it', () => {
  const action = parse(readFileSync(join(REPO, 'action.yml'), 'utf8')) as { runs: { steps: Array<{ id?: string; run?: string; env?: Record<string, string> }> } };
  const step = action.runs.steps.find((s) => s.id === 'run')!;

  it('comments through GITHUB_TOKEN from the github-token input, exit-code 2 passes the step', async () => {
    const repo = await makeRepo('action');
    appendPhase(repo.dir, 'wave-3');
    github.comments.length = 0;
    github.readOnly = false;
    const outputs = join(work, 'action-outputs');
    writeFileSync(outputs, '');
    const env = baseEnv({
      ...githubEnv(join(work, 'summary-action.md')), GITHUB_TOKEN: '', INPUT_GITHUB_TOKEN: TOKEN,
      GITHUB_OUTPUT: outputs, RUNNER_TEMP: work, GITHUB_RUN_ID: '7', GITHUB_ACTION: 'review',
      INPUT_COMMAND: 'review', INPUT_ARGS: '', DUS_SYNC_CLI: CLI, INPUT_FAIL_ON_CHANGES: 'false',
    });
    expect(step.env?.INPUT_GITHUB_TOKEN).toBe('${{ inputs.github-token }}');
    const r = await exec('bash', ['-e', '-c', step.run!], repo.dir, env);
    expect(r.status, r.stderr).toBe(0);
    noToken(r);
    const out = Object.fromEntries(readFileSync(outputs, 'utf8').split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    expect(out['exit-code']).toBe('2');
    expect(github.comments).toHaveLength(1);
    expect(github.comments[0]!.body).toBe(`${MARKER}\n${readFileSync(out['output-file']!, 'utf8')}`);
  });

  it('does not hand the token to the other commands', () => {
    expect(step.run).toMatch(/if \[ "\$\{INPUT_COMMAND\}" = review \]/);
    expect(step.run).toContain('unset INPUT_GITHUB_TOKEN');
  });
});

describe('what a tester broke in review, each now a test', () => {
  it('a comment of the same bot user that only quotes the marker (another workflow\'s) is never edited', async () => {
    const repo = await makeRepo('quote');
    github.comments.length = 0;
    github.comments.push({ id: 40, user: { login: 'github-actions[bot]', type: 'Bot' }, body: `Welcome! Your description says:\n> ${MARKER} please review` });
    appendPhase(repo.dir, 'wave-q');
    const r = await exec(process.execPath, [CLI, 'review'], repo.dir, baseEnv(githubEnv(join(work, 'summary-quote.md'))));
    expect(r.status, r.stderr).toBe(2);
    expect(github.comments.find((c) => c.id === 40)!.body).toBe(`Welcome! Your description says:\n> ${MARKER} please review`);
    expect(github.comments.filter((c) => c.body.startsWith(MARKER))).toHaveLength(1);
    // Pages small enough that a full page of the longest comments GitHub allows fits the answer cap.
    expect(gh.requests.find((q) => q.method === 'GET' && q.url.includes('/comments'))!.url).toContain('per_page=20');
  });

  it('annotations are relative to the config\'s repository, also when run from a folder outside it', async () => {
    const repo = await makeRepo('outside');
    const broken = join(repo.dir, 'tenants', 'acme', 'broken.yaml');
    writeFileSync(broken, 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "9.9.9"\n  uncompressed_size: -1\n');
    // A checkout under path: outside/, dus-sync run from the workspace above it (not a repository).
    const r = await exec(process.execPath, [CLI, '-c', join(repo.dir, 'dus-sync.yaml'), 'review', '--no-comment'], work, baseEnv(githubEnv(join(work, 'summary-outside.md'))));
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^::error file=config\/tenants\/acme\/broken\.yaml,line=6,/m);
  });

  it('GITHUB_EVENT_PATH pointing at /dev/zero does not hang or fill memory: no pull request, a warning', async () => {
    const repo = await makeRepo('devzero');
    const env = { ...githubEnv(join(work, 'summary-zero.md')), GITHUB_EVENT_PATH: '/dev/zero' };
    const started = Date.now();
    const r = await exec(process.execPath, [CLI, 'review'], repo.dir, baseEnv(env));
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/not started by a pull request/);
  }, 30_000);

  /**
   * A base branch that sends the keys to `server` (its base_url), then the pull request's
   * change; review run with GITHUB_TOKEN (and DUS_API_KEY) in its environment, no DUS_BASE_URL.
   */
  async function reviewOfChange(name: string, server: Served, change: (dir: string, config: string) => Promise<void> | void, extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> {
    const repo = await makeRepo(name);
    const config = join(repo.dir, 'dus-sync.yaml');
    writeFileSync(config, readFileSync(config, 'utf8').replace(/^base_url: .*$/m, `base_url: ${server.url}`));
    await git(repo.root, 'commit', '-qam', 'point at the service');
    await git(repo.root, 'update-ref', 'refs/remotes/origin/main', 'HEAD');
    await change(repo.dir, config);
    const env = baseEnv({ ...githubEnv(join(work, `summary-${name}.md`)), DUS_API_KEY_ACME: 'dev-key-acme', DUS_API_KEY_GLOBEX: 'dev-key-globex', DUS_API_KEY: 'dev-key-fallback', DUS_SYNC_STATE_DIR: join(work, `state-${name}`), ...extraEnv });
    return exec(process.execPath, [CLI, 'review', '--no-comment'], repo.dir, env);
  }
  const evilAction = 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: evil }\nspec:\n  id: 7\n  phases: [ { name: x } ]\n';
  function addTenant(dir: string, config: string, entry: string): void {
    writeFileSync(config, readFileSync(config, 'utf8').replace(/^tenants:\n/m, `tenants:\n  evil: ${entry}\n`));
    mkdirSync(join(dir, 'tenants', 'evil'), { recursive: true });
    writeFileSync(join(dir, 'tenants', 'evil', 'a.yaml'), evilAction);
  }
  async function recorder(): Promise<Served & { keys: string[] }> {
    const keys: string[] = [];
    const s = await serve((req, _body, res) => {
      keys.push(String(req.headers['x-service-api-key'] ?? ''));
      if (req.url!.includes('/actions/')) return json(res, 404, { detail: 'not found' });
      json(res, 200, { count: 0, next: null, previous: null, results: [] });
    });
    return { ...s, keys };
  }
  /** A production recorder and a staging one, closed after the test. */
  async function withProdAndStaging(test: (server: Served & { keys: string[] }, staging: Served & { keys: string[] }) => Promise<void>): Promise<void> {
    const server = await recorder();
    const staging = await recorder();
    try {
      await test(server, staging);
    } finally {
      await server.close();
      await staging.close();
    }
  }
  /** `from`'s config written at `to`, sending the keys to `url`. */
  function configTo(from: string, to: string, url: string): void {
    writeFileSync(to, readFileSync(from, 'utf8').replace(/^base_url: .*$/m, `base_url: ${url}`));
  }
  /** Everything in the working tree, committed as the base the review compares with. */
  async function commitBase(root: string, message: string): Promise<void> {
    await git(root, 'add', '-A');
    await git(root, 'commit', '-qm', message);
    await git(root, 'update-ref', 'refs/remotes/origin/main', 'HEAD');
  }

  it('a pull request that adds a tenant reading GITHUB_TOKEN never sends it: the keyless diff, and why', async () => {
    const server = await recorder();
    try {
      const r = await reviewOfChange('newtenant', server, (dir, config) => addTenant(dir, config, '{ api_key_env: GITHUB_TOKEN }'));
      expect(server.keys).toEqual([]);
      expect(r.stderr).toMatch(/^warning: tenant evil added in this change: the API keys are not sent where the change says; comparing with origin\/main in git instead$/m);
      expect(r.stdout).toMatch(/^## dus-sync diff: `origin\/main` → this change/);
      expect(r.status).toBe(2);
      // The control: the base's own tenants, changed alike, are planned live with their keys.
      const planned = await reviewOfChange('newtenant-control', server, (dir) => appendPhase(dir, 'wave-n'));
      expect(planned.stdout, planned.stderr).not.toMatch(/^## dus-sync diff/);
      expect(server.keys).toContain('dev-key-acme');
      expect(server.keys).not.toContain(TOKEN);
    } finally {
      await server.close();
    }
  });

  it('a new tenant without a key source of its own (DUS_API_KEY) gets no key the base would not send it', async () => {
    const server = await recorder();
    try {
      const r = await reviewOfChange('fallback', server, (dir, config) => addTenant(dir, config, '{}'));
      expect(server.keys).toEqual([]);
      expect(r.stderr).toMatch(/tenant evil added in this change: the API keys are not sent where the change says/);
      expect(r.stdout).toMatch(/^## dus-sync diff: `origin\/main` → this change/);
    } finally {
      await server.close();
    }
  });

  it('a config file the base branch does not have sends no key: the keyless diff', async () => {
    const server = await recorder();
    try {
      const r = await reviewOfChange('newconfig', server, async (dir, config) => {
        const text = readFileSync(config, 'utf8');
        await git(dir, 'rm', '-q', 'dus-sync.yaml');
        await git(dir, 'commit', '-qm', 'no config yet');
        await git(dir, 'update-ref', 'refs/remotes/origin/main', 'HEAD');
        writeFileSync(config, text.replace(/^tenants:\n/m, 'tenants:\n  evil: { api_key_env: GITHUB_TOKEN }\n'));
      });
      expect(server.keys).toEqual([]);
      expect(r.stderr).toMatch(/dus-sync\.yaml added in this change: the API keys are not sent where the change says/);
    } finally {
      await server.close();
    }
  });

  it('a pull request that makes dus-sync.yaml a link to another config of the base branch (staging) sends no key: the keyless diff', async () => {
    const server = await recorder();
    const staging = await recorder();
    try {
      const r = await reviewOfChange('configlink', server, async (dir, config) => {
        mkdirSync(join(dir, 'staging'));
        writeFileSync(join(dir, 'staging', 'dus-sync.yaml'), readFileSync(config, 'utf8').replace(/^base_url: .*$/m, `base_url: ${staging.url}`).replace(/DUS_API_KEY_ACME/g, 'GITHUB_TOKEN'));
        await git(dir, 'add', '-A');
        await git(dir, 'commit', '-qm', 'a staging config');
        await git(dir, 'update-ref', 'refs/remotes/origin/main', 'HEAD');
        rmSync(config);
        symlinkSync(join('staging', 'dus-sync.yaml'), config);
        appendPhase(dir, 'wave-n');
      });
      expect(server.keys).toEqual([]);
      expect(staging.keys).toEqual([]);
      expect(r.stderr).toMatch(/^warning: dus-sync\.yaml is reached through the symbolic link (config\/)?dus-sync\.yaml in the repository in this change: the API keys are not sent where the change says/m);
    } finally {
      await server.close();
      await staging.close();
    }
  });

  /**
   * A made-up git directory as plain files in `dir` (git forbids only the name .git): HEAD,
   * objects/ and refs/ of a history whose origin/main is `dir` as it is now, and a config naming a
   * working tree (`worktree`, relative to `dir`).
   */
  async function plantGitDirectory(dir: string, worktree: string): Promise<void> {
    const fake = mkdtempSync(join(work, 'fake-'));
    cpSync(dir, fake, { recursive: true });
    await git(fake, 'init', '-q', '-b', 'main');
    await git(fake, 'add', '-A');
    await git(fake, 'commit', '-qm', 'made up');
    const commit = (await git(fake, 'rev-parse', 'HEAD')).stdout.trim();
    cpSync(join(fake, '.git', 'HEAD'), join(dir, 'HEAD'));
    cpSync(join(fake, '.git', 'objects'), join(dir, 'objects'), { recursive: true });
    mkdirSync(join(dir, 'refs', 'remotes', 'origin'), { recursive: true });
    mkdirSync(join(dir, 'refs', 'heads'), { recursive: true });
    writeFileSync(join(dir, 'refs', 'remotes', 'origin', 'main'), `${commit}\n`);
    writeFileSync(join(dir, 'refs', 'heads', 'main'), `${commit}\n`);
    writeFileSync(join(dir, 'config'), `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ${worktree}\n`);
    rmSync(fake, { recursive: true, force: true });
  }

  // A breaker's: git run in the config's folder took the planted files for the repository, read
  // the base branch from their history (the pull request's own config), and saw no change.
  for (const worktree of ['.', '..']) {
    it(`a pull request that commits a git directory's files in the config's folder (working tree ${worktree}) sends no key`, async () => {
      await withProdAndStaging(async (server, staging) => {
        const r = await reviewOfChange(`plantedgit${worktree.length}`, server, async (dir, config) => {
          configTo(config, config, staging.url);
          await plantGitDirectory(dir, worktree);
          await git(dirname(dir), 'add', '-A');
          await git(dirname(dir), 'commit', '-qm', 'the change');
        });
        expect(staging.keys).toEqual([]);
        expect(server.keys).toEqual([]);
        expect(r.stderr).toMatch(/bare repository|not a checkout's \.git/);
        expect(r.status).toBe(1);
      });
    });
  }

  it('the check of the git directory git found: a checkout\'s .git, not a folder of files that look like one (git before safe.bareRepository)', async () => {
    const { root, dir } = await makeRepo('gitdircheck');
    const revParse = async (cwd: string) => (await git(cwd, '-c', 'safe.bareRepository=all', 'rev-parse', '--show-toplevel', '--absolute-git-dir')).stdout;
    expect(checkoutTop(await revParse(dir))).toBe(realpathSync(root));
    await plantGitDirectory(dir, '..');
    // Old git takes the folder for the repository, with the checkout's top as its working tree.
    const planted = await revParse(dir);
    expect(planted.split('\n')[0]).toBe(realpathSync(root));
    expect(checkoutTop(planted)).toBeUndefined();
    // A worktree's .git is a file that names its git directory.
    await git(root, 'worktree', 'add', '-q', join(work, 'gitdircheck-wt'));
    expect(checkoutTop(await revParse(join(work, 'gitdircheck-wt')))).toBe(realpathSync(join(work, 'gitdircheck-wt')));
  });

  it('git is told safe.bareRepository=explicit after whatever configuration the environment passes', () => {
    expect(withGitConfig({ PATH: '/bin' }, 'safe.bareRepository', 'explicit')).toEqual({ PATH: '/bin', GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'safe.bareRepository', GIT_CONFIG_VALUE_0: 'explicit' });
    const env = withGitConfig({ GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'safe.bareRepository', GIT_CONFIG_VALUE_0: 'all' }, 'safe.bareRepository', 'explicit');
    expect(env).toMatchObject({ GIT_CONFIG_COUNT: '2', GIT_CONFIG_KEY_0: 'safe.bareRepository', GIT_CONFIG_VALUE_0: 'all', GIT_CONFIG_KEY_1: 'safe.bareRepository', GIT_CONFIG_VALUE_1: 'explicit' });
  });

  it('a pull request that removes the config, so that the search climbs to a staging config of the base branch, sends no key', async () => {
    await withProdAndStaging(async (server, staging) => {
      const r = await reviewOfChange('configremoved', server, async (dir, config) => {
        const root = dirname(dir);
        configTo(config, join(root, 'dus-sync.yaml'), staging.url);
        writeFileSync(join(root, 'dus-sync.yaml'), readFileSync(join(root, 'dus-sync.yaml'), 'utf8').replace(/^resources: .*$/m, 'resources: ["config/tenants/**/*.yaml"]'));
        await commitBase(root, 'a staging config at the top');
        await git(root, 'rm', '-q', join('config', 'dus-sync.yaml'));
        appendPhase(dir, 'wave-n');
      });
      expect(server.keys).toEqual([]);
      expect(staging.keys).toEqual([]);
      expect(r.stderr).toMatch(/^warning: config\/dus-sync\.yaml removed in this change: the API keys are not sent where the change says/m);
      // The control: with the config in place, the same change is planned live, with its key.
      const planned = await reviewOfChange('configkept', server, (dir) => appendPhase(dir, 'wave-n'));
      expect(planned.stdout, planned.stderr).not.toMatch(/^## dus-sync diff/);
      expect(server.keys).toContain('dev-key-acme');
      expect(staging.keys).toEqual([]);
    });
  });

  // A breaker's next step: the working folder itself made a link (to the top, or to a folder
  // without a config), so that the search, from the physical folder, climbs to staging's config.
  // And a CI runner starts a step in its working-directory by a plain chdir: no PWD names the link.
  for (const [target, pwd] of [['.', 'logical'], ['sub', 'logical'], ['.', 'physical'], ['sub', 'physical']] as const) {
    it(`a pull request that makes the working folder a link to ${target === '.' ? 'the top of the repository' : 'a folder without a config'} sends no key (${pwd} PWD)`, async () => {
      await withProdAndStaging(async (server, staging) => {
        const name = `worklink-${target === '.' ? 'top' : 'sub'}-${pwd}`;
        const r = await reviewOfChange(name, server, async (dir, config) => {
          const root = dirname(dir);
          configTo(config, join(root, 'dus-sync.yaml'), staging.url);
          cpSync(join(dir, 'tenants'), join(root, 'tenants'), { recursive: true });
          await commitBase(root, 'a staging config at the top');
          if (target === 'sub') {
            await git(root, 'mv', 'config', 'sub');
            await git(root, 'rm', '-qf', join('sub', 'dus-sync.yaml'));
          } else {
            await git(root, 'rm', '-rq', 'config');
          }
          symlinkSync(target, dir);
          await git(root, 'add', 'config');
          await git(root, 'commit', '-qm', 'the working folder is a link now');
        }, { PWD: pwd === 'logical' ? join(work, name, 'config') : '/' });
        expect(server.keys).toEqual([]);
        expect(staging.keys).toEqual([]);
        expect(r.stderr).toMatch(/^warning: .*symbolic link config[, ].* in this change: the API keys are not sent where the change says/m);
      });
    });
  }

  // The next breaker: a chain whose last hop is a link the base already has (envs -> aliases,
  // aliases/prod -> ../other/prod), and a folder made a submodule: any link to a folder, or
  // submodule, that the change adds or points elsewhere now means the keyless diff.
  // And round 18: a link that leads nowhere from review's folder, but somewhere from the runner's
  // (/proc/self/cwd resolved against the spawner's folder), was taken for a dangling one.
  for (const how of ['chain', 'submodule', 'proc'] as const) {
    it(`a pull request that reaches another config through ${how === 'chain' ? 'a chain of links' : how === 'submodule' ? 'a submodule' : 'a link through /proc/self/cwd'} (physical PWD) sends no key`, async () => {
      await withProdAndStaging(async (server, staging) => {
        const repo = await makeRepo(`via-${how}`);
        const root = repo.root;
        mkdirSync(join(root, 'envs'));
        await git(root, 'mv', 'config', join('envs', 'prod'));
        const prod = join(root, 'envs', 'prod', 'dus-sync.yaml');
        configTo(prod, prod, server.url);
        cpSync(join(root, 'envs', 'prod'), join(root, 'other', 'prod'), { recursive: true });
        configTo(prod, join(root, 'other', 'prod', 'dus-sync.yaml'), staging.url);
        mkdirSync(join(root, 'aliases'));
        symlinkSync(join('..', 'other', 'prod'), join(root, 'aliases', 'prod'));
        await commitBase(root, 'prod, staging and an alias');
        await git(root, 'rm', '-rq', 'envs');
        if (how === 'chain') {
          symlinkSync('aliases', join(root, 'envs'));
          await git(root, 'add', 'envs');
        } else if (how === 'proc') {
          // The step is spawned from this process's folder, review runs in other/prod.
          symlinkSync(`/proc/self/cwd/${relative(process.cwd(), join(root, 'other'))}`, join(root, 'envs'));
          await git(root, 'add', 'envs');
        } else {
          const inner = join(work, 'via-submodule-inner');
          mkdirSync(inner);
          await git(inner, 'init', '-q', '-b', 'main');
          symlinkSync(join('..', 'other', 'prod'), join(inner, 'prod'));
          await git(inner, 'add', '-A');
          await git(inner, 'commit', '-qm', 'a link');
          await git(root, '-c', 'protocol.file.allow=always', 'submodule', '-q', 'add', inner, 'envs');
        }
        await git(root, 'commit', '-qm', 'envs elsewhere');
        expect(existsSync(join(root, 'envs', 'prod', 'dus-sync.yaml'))).toBe(true);
        const env = baseEnv({ ...githubEnv(join(work, `summary-via-${how}.md`)), DUS_API_KEY_ACME: 'dev-key-acme', DUS_API_KEY_GLOBEX: 'dev-key-globex', DUS_SYNC_STATE_DIR: join(work, `state-via-${how}`), PWD: '/' });
        const r = await exec(process.execPath, [CLI, 'review', '--no-comment'], join(root, 'envs', 'prod'), env);
        expect(server.keys).toEqual([]);
        expect(staging.keys).toEqual([]);
        expect(r.stderr).toMatch(how === 'submodule' ? /the submodule envs changed in this change/ : /the symbolic link envs, to a folder or nowhere from here, changed in this change/);
      });
    });
  }

  it('a workspace reached through a link (the link above the repository, not in it) still plans live, with its key', async () => {
    const server = await recorder();
    try {
      symlinkSync(join(work, 'wsreal'), join(work, 'wslink'));
      const r = await reviewOfChange('wsreal', server, (dir) => appendPhase(dir, 'wave-n'), { PWD: join(work, 'wslink', 'config') });
      expect(r.stdout, r.stderr).not.toMatch(/^## dus-sync diff/);
      expect(r.stderr).not.toMatch(/symbolic link/);
      expect(server.keys).toContain('dev-key-acme');
    } finally {
      await server.close();
    }
  });

  it('the same with the config\'s folder made a link (the working-directory of the workflow): seen through PWD, no key sent', async () => {
    const server = await recorder();
    const staging = await recorder();
    try {
      let logical = '';
      const r = await reviewOfChange('configdirlink', server, async (dir, config) => {
        const root = dirname(dir);
        cpSync(dir, join(root, 'staging'), { recursive: true });
        writeFileSync(join(root, 'staging', 'dus-sync.yaml'), readFileSync(config, 'utf8').replace(/^base_url: .*$/m, `base_url: ${staging.url}`));
        await git(root, 'add', '-A');
        await git(root, 'commit', '-qm', 'a staging config');
        await git(root, 'update-ref', 'refs/remotes/origin/main', 'HEAD');
        rmSync(dir, { recursive: true });
        symlinkSync('staging', dir);
        appendPhase(join(root, 'staging'), 'wave-n');
        logical = dir;
      }, { PWD: join(work, 'configdirlink', 'config') });
      expect(logical).not.toBe('');
      expect(server.keys).toEqual([]);
      expect(staging.keys).toEqual([]);
      expect(r.stderr).toMatch(/^warning: dus-sync\.yaml is reached through the symbolic link config in the repository in this change/m);
    } finally {
      await server.close();
      await staging.close();
    }
  });

  // A key file in the repository (a CI step writes it there, ignored by git) is the change's to
  // write when the repository tracks it: edited, or made a link to another file on the runner.
  it('a pull request that writes a key file of the base config never gets it sent: the keyless diff', async () => {
    const server = await recorder();
    const outside = join(work, 'runner-secret');
    writeFileSync(outside, 'runner-secret-value\n');
    const withKeyFile = async (name: string, change: (dir: string) => Promise<void>, folder = 'keys', outsideConfig = false) => {
      const repo = await makeRepo(name);
      const config = join(repo.dir, 'dus-sync.yaml');
      writeFileSync(config, readFileSync(config, 'utf8').replace(/^base_url: .*$/m, `base_url: ${server.url}`).replace(/^ {2}acme: .*$/m, `  acme: { api_key_file: ${folder}/acme.key }`));
      writeFileSync(join(repo.dir, '.gitignore'), `${folder}/\n`);
      await git(repo.root, 'add', '-A');
      await git(repo.root, 'commit', '-qm', 'the key from a file the CI writes');
      await git(repo.root, 'update-ref', 'refs/remotes/origin/main', 'HEAD');
      mkdirSync(join(repo.dir, folder));
      writeFileSync(join(repo.dir, folder, 'acme.key'), 'file-key-acme\n');
      appendPhase(repo.dir, 'wave-k');
      await change(repo.dir);
      const env = baseEnv({ ...githubEnv(join(work, `summary-${name}.md`)), DUS_API_KEY_GLOBEX: 'dev-key-globex', DUS_SYNC_STATE_DIR: join(work, `state-${name}`) });
      if (!outsideConfig) return exec(process.execPath, [CLI, 'review', '--no-comment'], repo.dir, env);
      // The runner's own config, outside the checkout, naming the key file in it.
      const runner = join(work, `runner-${name}`);
      mkdirSync(runner);
      writeFileSync(join(runner, 'dus-sync.yaml'), readFileSync(config, 'utf8').replace(`api_key_file: ${folder}/acme.key`, `api_key_file: ${JSON.stringify(join(repo.dir, folder, 'acme.key'))}`).replace(/^resources: .*$/m, 'resources: ["**/*.yaml"]'));
      return exec(process.execPath, [CLI, '-c', join(runner, 'dus-sync.yaml'), '--dir', join(repo.dir, 'tenants'), 'review', '--no-comment'], repo.dir, env);
    };
    try {
      // The control: the file the CI wrote, untracked, is sent.
      const planned = await withKeyFile('keyfile-control', async () => undefined);
      expect(planned.stdout, planned.stderr).toMatch(/^## dus-sync plan\n/);
      expect(server.keys).toContain('file-key-acme');
      server.keys.length = 0;
      // Committed by the change with bytes of its choosing.
      const edited = await withKeyFile('keyfile-edited', async (dir) => {
        writeFileSync(join(dir, 'keys', 'acme.key'), 'pr-chosen-key\n');
        await git(dir, 'add', '-f', 'keys/acme.key');
        await git(dir, 'commit', '-qm', 'my key');
      });
      expect(edited.stderr).toMatch(/^warning: the API key file of tenant acme changed in this change: the API keys are not sent where the change says; comparing with origin\/main in git instead$/m);
      expect(edited.stdout).toMatch(/^## dus-sync diff: `origin\/main` → this change/);
      // Committed as a link to another file of the runner's.
      const linked = await withKeyFile('keyfile-linked', async (dir) => {
        rmSync(join(dir, 'keys', 'acme.key'));
        symlinkSync(outside, join(dir, 'keys', 'acme.key'));
        await git(dir, 'add', '-f', 'keys/acme.key');
        await git(dir, 'commit', '-qm', 'a link');
      });
      expect(linked.stderr).toMatch(/the API key file of tenant acme changed in this change: the API keys are not sent/);
      // A folder whose name begins with two dots is inside the repository (`..keys`, not `../keys`).
      const dotted = await withKeyFile('keyfile-dotted', async (dir) => {
        writeFileSync(join(dir, '..keys', 'acme.key'), 'pr-chosen-key\n');
        await git(dir, 'add', '-f', '..keys/acme.key');
        await git(dir, 'commit', '-qm', 'my key');
      }, '..keys');
      expect(dotted.stderr).toMatch(/the API key file of tenant acme changed in this change: the API keys are not sent/);
      // The runner's config outside the checkout, its key file in it, committed by the change.
      const outsideConfig = await withKeyFile('keyfile-outside-config', async (dir) => {
        writeFileSync(join(dir, 'keys', 'acme.key'), 'pr-chosen-key\n');
        await git(dir, 'add', '-f', 'keys/acme.key');
        await git(dir, 'commit', '-qm', 'my key');
      }, 'keys', true);
      expect(outsideConfig.stderr).toMatch(/the API key file of tenant acme changed in this change: the API keys are not sent/);
      expect(server.keys).toEqual([]);
    } finally {
      await server.close();
    }
  });

  // A breaker's round: a link further along the key file's chain, retargeted by the change
  // (acme.key -> hop -> a file of the runner's), sent another file of the runner's as the key.
  it('a pull request that retargets a link on the way to a key file never gets it sent', async () => {
    const server = await recorder();
    const mine = join(work, 'runner-acme-key');
    const other = join(work, 'runner-other-secret');
    writeFileSync(mine, 'file-key-acme\n');
    writeFileSync(other, 'other-runner-secret\n');
    try {
      const repo = await makeRepo('keyfile-chain');
      const config = join(repo.dir, 'dus-sync.yaml');
      writeFileSync(config, readFileSync(config, 'utf8').replace(/^base_url: .*$/m, `base_url: ${server.url}`).replace(/^ {2}acme: .*$/m, '  acme: { api_key_file: acme.key }'));
      symlinkSync('hop', join(repo.dir, 'acme.key'));
      symlinkSync(mine, join(repo.dir, 'hop'));
      await commitBase(repo.root, 'the key through a chain of links');
      rmSync(join(repo.dir, 'hop'));
      symlinkSync(other, join(repo.dir, 'hop'));
      await git(repo.root, 'commit', '-qam', 'only hop moves');
      appendPhase(repo.dir, 'wave-h');
      const env = baseEnv({ ...githubEnv(join(work, 'summary-keyfile-chain.md')), DUS_API_KEY_GLOBEX: 'dev-key-globex', DUS_SYNC_STATE_DIR: join(work, 'state-keyfile-chain') });
      const r = await exec(process.execPath, [CLI, 'review', '--no-comment'], repo.dir, env);
      expect(r.stderr).toMatch(/the API key file of tenant acme changed in this change: the API keys are not sent/);
      expect(server.keys).toEqual([]);
    } finally {
      await server.close();
    }
  });

  // A breaker's round: --config in the checkout and --dir in another repository (a second
  // checkout): base_url moved by the change was compared in --dir's history, not the config's.
  it('a pull request that moves base_url is caught whatever --dir names', async () => {
    const server = await recorder();
    try {
      const repo = await makeRepo('keys-other-dir');
      const config = join(repo.dir, 'dus-sync.yaml');
      configTo(config, config, server.url);
      await commitBase(repo.root, 'the host');
      const data = join(work, 'keys-other-dir-data');
      mkdirSync(join(data, 'tenants', 'acme'), { recursive: true });
      cpSync(join(repo.dir, 'tenants'), join(data, 'tenants'), { recursive: true });
      await git(data, 'init', '-q', '-b', 'main');
      await git(data, 'add', '-A');
      await git(data, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'data');
      await git(data, 'update-ref', 'refs/remotes/origin/main', 'HEAD');
      const moved = await recorder();
      try {
        configTo(config, config, moved.url);
        await git(repo.root, 'commit', '-qam', 'another host');
        const env = baseEnv({ ...githubEnv(join(work, 'summary-keys-other-dir.md')), DUS_API_KEY_ACME: 'dev-key-acme', DUS_API_KEY_GLOBEX: 'dev-key-globex', DUS_SYNC_STATE_DIR: join(work, 'state-keys-other-dir') });
        const r = await exec(process.execPath, [CLI, '--config', config, '--dir', join(data, 'tenants'), 'review', '--no-comment'], repo.dir, env);
        expect(r.stderr).toMatch(/base_url changed in this change: the API keys are not sent where the change says/);
        expect(moved.keys).toEqual([]);
        expect(server.keys).toEqual([]);
      } finally {
        await moved.close();
      }
    } finally {
      await server.close();
    }
  });

  // GitLab's base is the merge base: a branch forked before the target moved to another host
  // keeps the old base_url, which the target branch no longer sends the keys to.
  it('a GitLab merge request forked before base_url moved sends no key to the old host', async () => {
    const old = await recorder();
    const now = await recorder();
    try {
      const repo = await makeRepo('gl-old-base');
      const config = join(repo.dir, 'dus-sync.yaml');
      configTo(config, config, old.url);
      await git(repo.root, 'commit', '-qam', 'the old host');
      const forkedFrom = (await git(repo.root, 'rev-parse', 'HEAD')).stdout.trim();
      // The target branch moves on to the new host; the merge request branch started before.
      await git(repo.root, 'checkout', '-qb', 'target');
      configTo(config, config, now.url);
      await commitBase(repo.root, 'the new host');
      await git(repo.root, 'checkout', '-q', forkedFrom);
      appendPhase(repo.dir, 'wave-g');
      const env = baseEnv({
        GITLAB_CI: 'true', CI_MERGE_REQUEST_IID: '3', CI_MERGE_REQUEST_TARGET_BRANCH_NAME: 'main', CI_MERGE_REQUEST_DIFF_BASE_SHA: forkedFrom,
        DUS_API_KEY_ACME: 'dev-key-acme', DUS_API_KEY_GLOBEX: 'dev-key-globex', DUS_SYNC_STATE_DIR: join(work, 'state-gl-old-base'),
      });
      const r = await exec(process.execPath, [CLI, 'review', '--no-comment'], repo.dir, env);
      expect(old.keys).toEqual([]);
      expect(now.keys).toEqual([]);
      expect(r.stderr).toMatch(/base_url changed \(against origin\/main, where the target branch is now\) in this change: the API keys are not sent where the change says/);
      expect(r.stdout).toMatch(/^## dus-sync diff/);
      // Without the target branch at hand (a shallow clone), the merge base alone decides, as documented.
      await git(repo.root, 'update-ref', '-d', 'refs/remotes/origin/main');
      const alone = await exec(process.execPath, [CLI, 'review', '--no-comment'], repo.dir, env);
      expect(alone.stdout, alone.stderr).toMatch(/^## dus-sync plan\n/);
      expect(old.keys).toContain('dev-key-acme');
    } finally {
      await old.close();
      await now.close();
    }
  });

  it('a pull request that changes base_url never gets the keys: the review falls back to the keyless diff', async () => {
    const repo = await makeRepo('redirect');
    const config = join(repo.dir, 'dus-sync.yaml');
    // The base branch sends the keys to the (emulated) service.
    configTo(config, config, emulator.url);
    await commitBase(repo.root, 'point at the service');
    const seen: string[] = [];
    const evil = await serve((req, _body, res) => { seen.push(String(req.headers['x-service-api-key'] ?? '')); json(res, 200, { count: 0, next: null, previous: null, results: [] }); });
    try {
      configTo(config, config, evil.url);
      appendPhase(repo.dir, 'wave-r');
      const env = baseEnv({ ...githubEnv(join(work, 'summary-redirect.md')), DUS_API_KEY_ACME: 'dev-key-acme', DUS_API_KEY_GLOBEX: 'dev-key-globex', DUS_SYNC_STATE_DIR: join(work, 'state-redirect') });
      const r = await exec(process.execPath, [CLI, 'review', '--no-comment'], repo.dir, env);
      expect(seen).toEqual([]);
      expect(r.stderr).toMatch(/base_url changed in this change: the API keys are not sent where the change says; comparing with origin\/main in git instead/);
      expect(r.stdout).toMatch(/^## dus-sync diff: `origin\/main` → this change/);
      expect(r.status).toBe(2);
      // The same change without a new base_url plans live, with the provenance footer.
      configTo(config, config, emulator.url);
      const planned = await exec(process.execPath, [CLI, 'review', '--no-comment'], repo.dir, env);
      expect(planned.stdout, planned.stderr).toMatch(/^## dus-sync plan\n/);
      expect(planned.stdout).toMatch(/dus-sync \d+\.\d+\.\d+/);
    } finally {
      await evil.close();
    }
  });
});
