// `dus-sync review`: the whole pull-request review in one step, as Atlantis-like tools do it.
//
//   1. plan --format markdown when the API keys (and base_url) are there; else the keyless
//      `diff --base` (pull requests from forks get no secrets);
//   2. the markdown on stdout, and appended to the job summary (GITHUB_STEP_SUMMARY);
//   3. problems on their lines: invalid files, conflicts, objects that cannot be planned (and, in
//      the diff, risky edits as warnings), as GitHub annotations on stderr or a GitLab Code Quality
//      report (--code-quality FILE), with paths relative to the repository's root;
//   4. one sticky comment on the pull request (GitHub) or note on the merge request (GitLab),
//      found by its marker and its author, updated on every push.
// Commenting is best effort: a token that may not comment (a fork's) is a warning, not a failure.
// Exit status as plan --detailed-exitcode: 0 no changes, 2 changes, 1 an error.
import { appendFileSync, lstatSync, readlinkSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { ConfigError, UnsafePlanError, UserError, type ConfigIssue } from '../errors.js';
import { connect, enforceSafety, fetchAndPlan, loadOrThrow, rolloutControl, tenantsOf } from '../agent/reconcile.js';
import { hasDifferences, type DesiredDiff } from '../core/desired-diff.js';
import { renderDiffMarkdown } from '../core/render/desired-diff-markdown.js';
import { renderMarkdown } from '../core/render/markdown.js';
import { escapeMarkdown } from '../core/render/markdown-escape.js';
import { keyFilePath, readApiKeys } from '../load/keys.js';
import { climbsOut } from '../load/read-file.js';
import { filesChangedSince, linksChangedSince, nearerFilesAtRef, readDesiredAtRef, repoRoot, resolveCommit } from '../load/git.js';
import { DEFAULT_CONFIG_FILE } from '../load/config.js';
import { refusedConfigLink } from '../load/index.js';
import { desiredRevision } from '../load/revision.js';
import { VERSION } from '../version.js';
import { keysInLive, SHOWN_IN_PLAN, warnKeysInLive } from '../live-keys.js';
import type { Logger, Plan, ResolvedConfig } from '../model/index.js';
import { redact, redactDeep, registerSecret } from '../redact.js';
import { codeQualityReport, rebaseAll, repoRootOf, superprojectOf, workflowCommands, type Finding } from '../review/annotations.js';
import { HostError } from '../review/http.js';
import { githubTarget, gitlabTarget, markerFor, type StickyTarget } from '../review/sticky.js';
import { setup } from './common.js';
import { apiLimitFlags, stderrLogger, type GlobalOptions } from './context.js';
import { diffAgainst, rawConfigOf, registerBaseKeys } from './diff.js';
import { planExitCode } from './plan.js';
import { ghData } from './validate.js';
import { writeWorkflowCommands } from './output.js';

type Platform = 'github' | 'gitlab' | 'none';

interface ReviewFlags {
  mode?: 'auto' | 'plan' | 'diff';
  base?: string;
  platform?: 'auto' | Platform;
  comment?: boolean;
  marker?: string;
  tokenEnv?: string;
  commentAuthor?: string;
  codeQuality?: string;
}

/** GitHub's limit on a comment's body, in characters. */
export const COMMENT_LIMIT = 65_536;
/** Room kept for the marker and the redaction of a short key ([REDACTED] is longer than 4 characters). */
const RESERVE = 1_024;
const MAX_LISTED_ISSUES = 50;

interface Outcome {
  readonly markdown: string;
  readonly code: number;
  readonly findings: readonly Finding[];
  /** Thrown after the comment and the summary are written: the one handler says it. */
  readonly error?: unknown;
}

export function detectPlatform(flag: ReviewFlags['platform'], env: NodeJS.ProcessEnv): Platform {
  if (flag && flag !== 'auto') return flag;
  if (env.GITHUB_ACTIONS === 'true') return 'github';
  if (env.GITLAB_CI === 'true') return 'gitlab';
  return 'none';
}

/** The ref the change is compared with when there is no key: the pull request's base branch. */
export function defaultBase(env: NodeJS.ProcessEnv): string | undefined {
  if (env.GITHUB_BASE_REF) return `origin/${env.GITHUB_BASE_REF}`;
  // The merge base: what the merge request changes, even when the target branch moved on.
  if (env.CI_MERGE_REQUEST_DIFF_BASE_SHA) return env.CI_MERGE_REQUEST_DIFF_BASE_SHA;
  if (env.CI_MERGE_REQUEST_TARGET_BRANCH_NAME) return `origin/${env.CI_MERGE_REQUEST_TARGET_BRANCH_NAME}`;
  return undefined;
}

/** The target branch's head, when the base review compares with is another commit (GitLab's merge base). */
function targetBranchOf(env: NodeJS.ProcessEnv, baseRef: string): string | undefined {
  const name = env.CI_MERGE_REQUEST_TARGET_BRANCH_NAME;
  if (!name || env.GITHUB_BASE_REF) return undefined;
  const target = `origin/${name}`;
  return target === baseRef ? undefined : target;
}

/** Whether the ref names a commit in the repository of `dir` (a shallow clone may not have the target branch). */
/**
 * The folder whose git repository the change is compared in: the config's own folder when a git
 * repository holds it (not --dir, which may be another checkout); else (no config file, or the
 * runner's own outside any repository) --dir's, where the key files it names may be.
 */
async function configRepositoryDir(config: ResolvedConfig): Promise<string> {
  if (config.file === undefined) return config.dir;
  const folder = dirname(config.file);
  return (await repoRootOf(folder)) !== undefined ? folder : config.dir;
}

/** `path`, and each link it leads through to its end (at most 40, as the kernel): the names a change could retarget. */
function linkChain(path: string): string[] {
  const out = [path];
  let at = path;
  for (let i = 0; i < 40; i++) {
    let target: string;
    try {
      if (!lstatSync(at).isSymbolicLink()) break;
      target = readlinkSync(at);
      at = resolve(realpathSync(dirname(at)), target);
    } catch {
      break;
    }
    out.push(at);
  }
  return out;
}

async function refAtHand(dir: string, ref: string): Promise<boolean> {
  try {
    await resolveCommit(await repoRoot(dir), ref);
    return true;
  } catch {
    return false;
  }
}

function tokenEnvFor(platform: Platform, flag: string | undefined): string {
  if (flag) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(flag)) throw new UserError('--token-env takes the name of an environment variable, e.g. GITHUB_TOKEN');
    return flag;
  }
  return platform === 'gitlab' ? 'DUS_NOTE_TOKEN' : 'GITHUB_TOKEN';
}

export async function run(rawOpts: Record<string, unknown>, globals: GlobalOptions): Promise<number> {
  const opts = rawOpts as unknown as ReviewFlags;
  const log = stderrLogger(globals.debug === true);
  const env = process.env;
  const platform = detectPlatform(opts.platform, env);
  const tokenEnv = tokenEnvFor(platform, opts.tokenEnv);
  const token = env[tokenEnv]?.trim() ?? '';
  // A secret like the API keys: redacted in every output, whatever echoes it.
  if (token !== '') registerSecret(token);
  const marker = markerFor(opts.marker);
  const maxLength = COMMENT_LIMIT - RESERVE;

  const cwd = process.cwd();
  const where: { dir?: string } = {};
  const outcome = await review(opts, globals, log, env, maxLength, where);
  // The root of the repository the config is in (a checkout under path: src, run from the
  // workspace, is not the working folder's repository), else of the working folder.
  const root = (where.dir !== undefined ? await repoRootOf(where.dir) : undefined) ?? await repoRootOf(cwd);
  const findings = rebaseAll(outcome.findings, cwd, root);
  const markdown = bounded(redact(outcome.markdown || problemsMarkdown(findings)), maxLength);

  if (platform === 'github' && findings.length > 0) writeWorkflowCommands(workflowCommands(findings), process.stderr);
  if (opts.codeQuality) writeCodeQuality(opts.codeQuality, findings);
  process.stdout.write(markdown);
  writeSummary(env.GITHUB_STEP_SUMMARY, markdown, log);
  if (opts.comment !== false && platform !== 'none') await comment(platform, env, token, tokenEnv, `${marker}\n${markdown}`, marker, opts, log);

  if (outcome.error !== undefined) throw outcome.error;
  return outcome.code;
}

async function review(opts: ReviewFlags, globals: GlobalOptions, log: Logger, env: NodeJS.ProcessEnv, maxLength: number, where: { dir?: string }): Promise<Outcome> {
  try {
    const { config, filter } = await setup(globals);
    where.dir = config.dir;
    const baseForKeys = opts.base ?? defaultBase(env);
    if (baseForKeys) await registerBaseKeys(config, baseForKeys);
    const desired = await loadOrThrow(config, filter);
    const mode = opts.mode ?? 'auto';
    let keyless = mode === 'diff' ? 'diff was asked for' : mode === 'auto' ? await whyNoPlan(config, tenantsOf(desired), env) : undefined;
    // The keys go only where the base branch sends them: a pull request that changes base_url
    // (or where a tenant's key is read from) would otherwise receive them with its own plan.
    const baseRef = opts.base ?? defaultBase(env);
    if (keyless === undefined && !baseRef) log.warn('no base ref (--base, or the CI\'s GITHUB_BASE_REF or CI_MERGE_REQUEST_DIFF_BASE_SHA): whether this change moves where the API keys go is not checked');
    if (keyless === undefined && baseRef) {
      // A config found by the upward search (no --config, no DUS_CONFIG): from where it started.
      const searchedFrom = globals.config === undefined && (env.DUS_CONFIG ?? '').trim() === '' ? resolve(process.cwd(), globals.dir ?? '.') : undefined;
      let moved = await keysRedirected(config, tenantsOf(desired), baseRef, log, searchedFrom);
      // GitLab's base is the merge base: a branch forked long ago keeps that commit's base_url
      // and key sources, which the target branch may have left since (a host given up). The
      // keys go only where both send them, when the target branch is at hand.
      const target = opts.base === undefined ? targetBranchOf(env, baseRef) : undefined;
      if (moved === undefined && target !== undefined && await refAtHand(await configRepositoryDir(config), target)) {
        const since = await keysRedirected(config, tenantsOf(desired), target, log, searchedFrom);
        if (since !== undefined) moved = `${since} (against ${target}, where the target branch is now)`;
      }
      if (moved !== undefined) {
        log.warn(`${moved} in this change: the API keys are not sent where the change says; comparing with ${baseRef} in git instead`);
        keyless = `${moved} in this change`;
      }
    }
    if (keyless === undefined) return await planOutcome(config, desired, globals, log, maxLength);
    const base = opts.base ?? defaultBase(env);
    if (!base) throw new UserError(`review compares with git when it cannot plan (${keyless}), and needs --base GIT_REF for that, e.g. --base origin/main`);
    log.info(`${keyless}: comparing with ${base} in git (no API access)`);
    // Redacted before it is rendered (the markdown escapes respell characters of a key). The
    // working tree is the one loaded above, after the keys of this same base were registered.
    const diff = redactDeep((await diffAgainst(config, filter, log, base, base === baseForKeys ? { head: desired } : undefined)).diff);
    return { markdown: renderDiffMarkdown(diff, { base, maxLength }), code: hasDifferences(diff) ? 2 : 0, findings: diffFindings(diff) };
  } catch (err) {
    if (err instanceof ConfigError) return { markdown: '', code: 1, findings: err.issues.map(issueFinding), error: err };
    return { markdown: failureMarkdown(err), code: 1, findings: [], error: err };
  }
}

/**
 * What the change does to where the keys go, compared with the config at the base ref: a new
 * base URL, a tenant whose key is read from another variable or file, or a tenant the base config
 * sends no key for (one it does not list, a renamed one). Undefined when nothing moved, or when
 * the config is not the change's to write (no config file, or one outside the repository).
 */
async function keysRedirected(config: ResolvedConfig, tenants: readonly string[], baseRef: string, _log: Logger, searchedFrom?: string): Promise<string | undefined> {
  // The repository of the config, whatever --dir names (a second checkout, another repository):
  // where the keys go is the config's, and its history is what the change is compared with.
  const dir = await configRepositoryDir(config);
  // A config reached through a link inside the repository: the base ref's file at the link's
  // target may be another config (a staging one, with another base_url or key variable), and the
  // change need only add the link. Only a config at its own path is compared.
  // A config in a submodule: its base ref is the submodule's own, which the change can point
  // anywhere (the working-directory replaced by a submodule of another repository).
  const superproject = await superprojectOf(dir);
  if (superproject !== undefined) return `the config is in a git submodule of ${superproject}`;
  if (config.file !== undefined) {
    const link = await linkInRepository(logicalPath(config.file), dir);
    if (link !== undefined) return `${basename(config.file)} is reached through the symbolic link ${link} in the repository`;
  }
  // Where the search began, as the shell names it: a working folder replaced by a link (to the
  // top, to a folder without a config) makes the search climb to another config of the base branch.
  if (searchedFrom !== undefined) {
    const link = await linkInRepository(logicalPath(searchedFrom), dir);
    if (link !== undefined) return `the folder the config was searched from is reached through the symbolic link ${link} in the repository`;
  }
  let text: string | undefined;
  try {
    // A link to a folder, or a submodule, that the change adds or points elsewhere: the step may
    // have been started in a folder reached through it by a plain chdir (a CI runner's
    // working-directory), which leaves no PWD to see the link by, and a chain of links (one the
    // base already has among them) may end anywhere. A link to a file is the config's own check.
    const changedLinks = await linksChangedSince(dir, baseRef);
    // Only a link that leads to a file here is the config's own check: one that leads nowhere
    // from here may lead somewhere from the runner's folder (/proc/self/cwd/..., relative to it).
    const redirect = changedLinks.find((changed) => {
      if (changed.submodule) return true;
      try { return !statSync(changed.path).isFile(); } catch { return true; }
    });
    if (redirect !== undefined) {
      const root = await repoRootOf(dir);
      const shown = root === undefined ? redirect.path : relative(root, redirect.path);
      return redirect.submodule ? `the submodule ${shown} changed` : `the symbolic link ${shown}, to a folder or nowhere from here, changed`;
    }
    // A config the search found further up than the base ref's: the change removed (or renamed)
    // a nearer one, the one the base sends the keys with, and the search climbed to another
    // config of the base branch (a staging one at the top of the repository).
    if (searchedFrom !== undefined) {
      const nearer = await nearerFilesAtRef(searchedFrom, config.file === undefined ? undefined : dirname(config.file), baseRef, DEFAULT_CONFIG_FILE);
      if (nearer.length > 0) return `${nearer[0]} removed`;
    }
    await readDesiredAtRef({
      dir, repository: dir, ref: baseRef, ...(config.file ? { configFile: config.file } : {}),
      refuseConfig: (real) => refusedConfigLink(config, real),
      select: (_paths, configText) => {
        text = configText;
        return [];
      },
    });
  } catch (err) {
    return `the config at ${baseRef} could not be read (${err instanceof Error ? err.message : String(err)}), so where the keys go could not be checked`;
  }
  if (text === undefined) {
    // No config file (the environment says it all), or one outside the repository: not the
    // change's, but a key file it names may be in the repository.
    if (config.file === undefined || !(await insideRepository(config.file, dir))) return await keyFilesChanged(config, tenants, baseRef);
    // The change adds it: the base branch sends no key anywhere.
    return `${basename(config.file)} added`;
  }
  const raw = rawConfigOf(text);
  if (!isRecord(raw)) return `the config at ${baseRef} is not valid, so where the keys go could not be checked`;
  return keySourceChange(raw, config, tenants, process.env) ?? await keyFilesChanged(config, tenants, baseRef);
}

/**
 * A key file of the base config that lies in the repository and that the change writes (adds,
 * edits, or makes a link to another file on the runner): its bytes would go to the base's server
 * as the key. One a CI step wrote there (untracked, ignored) is not the change's.
 */
async function keyFilesChanged(config: ResolvedConfig, tenants: readonly string[], baseRef: string): Promise<string | undefined> {
  // Each key file, and every link on its way and the file it ends at: a change that retargets a
  // link further along the chain (acme.key -> hop -> ...) sends another file as well.
  const files = new Map<string, string>();
  for (const name of [...new Set([...Object.keys(config.tenants), ...tenants])].sort()) {
    const file = Object.hasOwn(config.tenants, name) ? config.tenants[name]!.apiKeyFile : undefined;
    if (file !== undefined) for (const step of linkChain(keyFilePath(config, file))) if (!files.has(step)) files.set(step, name);
  }
  if (files.size === 0) return undefined;
  let changed: string[];
  try {
    changed = await filesChangedSince(await configRepositoryDir(config), baseRef, [...files.keys()]);
  } catch (err) {
    return `whether the change writes the API key files could not be checked (${err instanceof Error ? err.message : String(err)})`;
  }
  return changed.length === 0 ? undefined : `the API key file of tenant ${files.get(changed[0]!)!} changed`;
}

/**
 * Where a tenant's key is read from in a config, as readKey does: its api_key_file, else its
 * api_key_env, else DUS_API_KEY; a tenant of a config that lists tenants but not this one gets no
 * key (its documents are refused), and a config that lists none sends DUS_API_KEY for any tenant.
 */
function keySource(tenants: Readonly<Record<string, { apiKeyEnv?: string | undefined; apiKeyFile?: string | undefined }>>, tenant: string): string | undefined {
  const entry = Object.hasOwn(tenants, tenant) ? tenants[tenant] : undefined;
  if (entry === undefined) return Object.keys(tenants).length === 0 ? 'env DUS_API_KEY' : undefined;
  if (entry.apiKeyFile !== undefined) return `file ${entry.apiKeyFile}`;
  return `env ${entry.apiKeyEnv ?? 'DUS_API_KEY'}`;
}

/**
 * Why the keys would go where the base config (raw, as parsed from the base ref) does not send
 * them, or undefined: base_url (DUS_BASE_URL, when set, wins on both sides, as in the loader),
 * then every tenant the change's config lists or its documents name (`tenants`). A tenant whose
 * key the base sends from another source, or not at all, counts: a new tenant reading
 * GITHUB_TOKEN, a renamed one keeping another's variable, one that falls back to DUS_API_KEY.
 * tenant_id is not compared: it only checks the answers, the key and its header stay the same.
 */
export function keySourceChange(raw: Record<string, unknown>, config: Pick<ResolvedConfig, 'baseUrl' | 'tenants'>, tenants: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  const envBase = env.DUS_BASE_URL?.trim();
  const baseUrl = envBase || (typeof raw.base_url === 'string' ? raw.base_url : undefined);
  if ((baseUrl ?? '') !== (config.baseUrl ?? '')) return 'base_url changed';
  const base: Record<string, { apiKeyEnv?: string; apiKeyFile?: string }> = {};
  if (isRecord(raw.tenants)) {
    for (const [name, t] of Object.entries(raw.tenants)) {
      // An entry that is not a mapping reads no key the change could rely on: a source of its own.
      base[name] = !isRecord(t) ? { apiKeyFile: '\u0000not a mapping' } : {
        ...(typeof t.api_key_env === 'string' ? { apiKeyEnv: t.api_key_env } : {}),
        ...(typeof t.api_key_file === 'string' ? { apiKeyFile: t.api_key_file } : {}),
      };
    }
  }
  for (const name of [...new Set([...Object.keys(config.tenants), ...tenants])].sort()) {
    const before = keySource(base, name);
    if (before === undefined) return `tenant ${name} added`;
    if (keySource(config.tenants, name) !== before) return `the key source of tenant ${name} changed`;
  }
  return undefined;
}

/** Whether the file, as named or as its link leads, lies in the git repository of `dir`. */
/**
 * The path as the shell that started review names it: the process's working folder is the
 * physical one, so a folder replaced by a link (`working-directory: config`, config now a link to
 * staging/) is seen only through PWD, when it leads to the same folder.
 */
function logicalPath(file: string): string {
  const pwd = process.env.PWD;
  if (pwd === undefined || !isAbsolute(pwd)) return file;
  try {
    if (realpathSync(pwd) !== realpathSync(process.cwd())) return file;
  } catch {
    return file;
  }
  return join(pwd, relative(process.cwd(), file));
}

/**
 * The topmost symbolic link on the path (itself included) below the repository's top, relative
 * to it, or undefined. The top is the highest folder on the path that is the repository (a
 * workspace reached through a link is its own top): a link below it that also leads to the top
 * (`config -> .`) counts, as does any other.
 */
async function linkInRepository(file: string, dir: string): Promise<string | undefined> {
  const root = await repoRootOf(dir);
  if (root === undefined) return undefined;
  let realRoot: string;
  try { realRoot = realpathSync(root); } catch { return undefined; }
  const steps: { path: string; link: boolean; isRoot: boolean }[] = [];
  for (let p = resolve(file); ; p = dirname(p)) {
    let real: string | undefined;
    try { real = realpathSync(p); } catch { real = undefined; }
    let link = false;
    try { link = lstatSync(p).isSymbolicLink(); } catch { /* gone: as named */ }
    steps.push({ path: p, link, isRoot: real === realRoot });
    if (dirname(p) === p) break;
  }
  let top = -1;
  steps.forEach((s, i) => { if (s.isRoot) top = i; });
  if (top < 0) return undefined;
  let found: string | undefined;
  for (let i = 0; i < top; i++) if (steps[i]!.link) found = steps[i]!.path;
  return found === undefined ? undefined : relative(steps[top]!.path, found) || basename(found);
}

async function insideRepository(file: string, dir: string): Promise<boolean> {
  const root = await repoRootOf(dir);
  if (root === undefined) return false;
  const within = (p: string, r: string): boolean => {
    const rel = relative(r, p);
    return rel !== '' && !climbsOut(rel);
  };
  let real = file;
  try {
    real = realpathSync(file);
  } catch {
    // As named, then.
  }
  let realRoot = root;
  try {
    realRoot = realpathSync(root);
  } catch {
    // As git says, then.
  }
  return within(file, root) || within(real, realRoot) || within(resolve(file), realRoot);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Why a live plan cannot be made here (no key, no base_url), or undefined when it can. */
async function whyNoPlan(config: ResolvedConfig, tenants: readonly string[], env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (!config.baseUrl) return 'no base_url';
  try {
    await readApiKeys(config, tenants, env);
    return undefined;
  } catch (err) {
    if (err instanceof UserError) return err.message.replace(/:.*$/, '');
    throw err;
  }
}

async function planOutcome(config: ResolvedConfig, desired: Awaited<ReturnType<typeof loadOrThrow>>, globals: GlobalOptions, log: Logger, maxLength: number): Promise<Outcome> {
  const client = await connect(config, tenantsOf(desired), {
    env: process.env, log, insecureHttp: globals.insecureHttp, caFile: globals.caFile, limits: apiLimitFlags(globals),
  });
  try {
    const { live, plan } = await fetchAndPlan(client, desired, 8, undefined, rolloutControl(config, log, {}));
    warnKeysInLive(log, keysInLive(live, desired), SHOWN_IN_PLAN);
    const revision = await desiredRevision(config, { onAbsent: (why) => log.debug(`no git revision for the desired state: ${why}`) });
    let markdown = renderMarkdown(redactDeep(plan), {
      live: redactDeep(live), suspended: config.suspend, maxLength: maxLength - 600,
      footer: { toolVersion: VERSION, generatedAt: new Date().toISOString(), ...(revision ? { revision } : {}) },
    });
    let code = planExitCode(plan, true);
    try {
      enforceSafety(plan, config, {});
    } catch (err) {
      if (!(err instanceof UnsafePlanError)) throw err;
      markdown += `\n> [!CAUTION]\n> **apply would refuse this plan**: ${escapeMarkdown(redact(err.message.replace(/ Nothing was written\.$/, '')))}\n`;
      code = 1;
    }
    return { markdown, code, findings: planFindings(plan) };
  } finally {
    await client.close();
  }
}

// ---------------------------------------------------------------- findings

function issueFinding(i: ConfigIssue): Finding {
  return { severity: 'error', file: i.file, line: i.line, column: i.column, title: 'invalid', message: i.message };
}

export function planFindings(plan: Plan): Finding[] {
  return [
    ...plan.conflicts.flatMap((c) => c.source ? [{ severity: 'error' as const, ...c.source, title: 'conflict', message: c.message }] : []),
    ...plan.errors.flatMap((e) => e.source ? [{ severity: 'error' as const, ...e.source, title: 'cannot plan', message: e.message }] : []),
  ];
}

/** Risky edits, at the object they are about when it is in the working tree. */
function diffFindings(diff: DesiredDiff): Finding[] {
  return diff.warnings.flatMap((w) => {
    const entry = diff.entries.find((e) => e.tenant === w.tenant && e.kind === w.kind && e.key === w.key && e.op !== 'remove');
    return entry ? [{ severity: 'warning' as const, ...entry.source, title: 'risky edit', message: w.message }] : [];
  });
}

// ---------------------------------------------------------------- markdown

function problemsMarkdown(findings: readonly Finding[]): string {
  const n = findings.length;
  // Redacted before it is escaped: the escapes respell a key's characters (`@` as &#64;&#8203;),
  // and the redaction of the finished text would no longer find it.
  const lines = findings.slice(0, MAX_LISTED_ISSUES).map((f) => `- <code>${escapeMarkdown(redact(`${f.file}:${f.line}:${f.column ?? 1}`))}</code>: ${escapeMarkdown(redact(f.message))}`);
  if (n > MAX_LISTED_ISSUES) lines.push(`- … and ${n - MAX_LISTED_ISSUES} more: run \`dus-sync validate\``);
  return ['## dus-sync plan', '', `**${n} problem${n === 1 ? '' : 's'} in the desired-state files: nothing can be planned until ${n === 1 ? 'it is' : 'they are'} fixed.**`, '', ...lines, ''].join('\n');
}

function failureMarkdown(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return ['## dus-sync plan', '', '> [!CAUTION]', `> **The review could not run**: ${escapeMarkdown(redact(message))}`, ''].join('\n');
}

/** A last bound, after redaction: cut at a line with a note (the renderers stay well under it). */
export function bounded(markdown: string, max: number): string {
  if (markdown.length <= max) return markdown;
  const note = '\n\n> [!NOTE]\n> … cut to stay under the comment size limit.\n';
  const cut = markdown.slice(0, max - note.length);
  return cut.slice(0, Math.max(0, cut.lastIndexOf('\n'))) + note;
}

// ---------------------------------------------------------------- outputs

function writeCodeQuality(path: string, findings: readonly Finding[]): void {
  try {
    writeFileSync(path, redact(codeQualityReport(findings)));
  } catch (err) {
    throw new UserError(`could not write the Code Quality report to ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
}

function writeSummary(path: string | undefined, markdown: string, log: Logger): void {
  if (!path) return;
  try {
    appendFileSync(path, `${markdown}\n`);
  } catch (err) {
    log.warn(`could not write the job summary (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
}

async function comment(platform: Exclude<Platform, 'none'>, env: NodeJS.ProcessEnv, token: string, tokenEnv: string, body: string, marker: string, opts: ReviewFlags, log: Logger): Promise<void> {
  const warn = (message: string) => {
    if (platform === 'github') writeWorkflowCommands(`::warning title=dus-sync review::${ghData(message)}\n`, process.stderr);
    else log.warn(message);
  };
  if (token === '') {
    warn(`no comment: ${tokenEnv} is not set (the result is in the job's log${platform === 'github' ? ' and summary' : ''})`);
    return;
  }
  let target: StickyTarget | string;
  try {
    target = platform === 'github' ? githubTarget(env, { token, ...(opts.commentAuthor ? { author: opts.commentAuthor } : {}) }) : gitlabTarget(env, token);
  } catch (err) {
    warn(`no comment: ${(err as Error).message}`);
    return;
  }
  if (typeof target === 'string') {
    warn(`no comment: ${target}`);
    return;
  }
  try {
    const result = await target.post(body, marker);
    if (result.truncated) warn(`no earlier comment found in the first pages of ${target.where}: a new one was made`);
    log.info(`${result.action === 'created' ? 'commented on' : result.action === 'updated' ? 'updated the comment on' : 'the comment is already up to date on'} ${target.where}`);
  } catch (err) {
    if (!(err instanceof HostError)) throw err;
    warn(`no comment on ${target.where}: ${err.message}`);
  }
}
