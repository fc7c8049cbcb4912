// Problems on the lines they come from: GitHub workflow commands (annotations on the pull
// request's changed lines) and a GitLab Code Quality report (the merge request's widget and diff).
// Both want paths relative to the repository's root, while dus-sync shows them relative to the
// folder it runs in (the action's working-directory, a job's cd): they are re-based here.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { climbsOut } from '../load/read-file.js';
import { ghData, ghProperty } from '../cli/validate.js';
import { checkoutTop, GIT_ENV } from '../load/git.js';

export interface Finding {
  readonly severity: 'error' | 'warning';
  /** As dus-sync shows it: relative to the working folder (or absolute). */
  readonly file: string;
  readonly line: number;
  readonly column?: number;
  /** A short name: "invalid", "conflict", "cannot plan", "risky edit". */
  readonly title: string;
  readonly message: string;
}

/** GitHub shows 10 of each kind per step, 50 per job; more would only be noise in the log. */
export const MAX_ANNOTATIONS = 50;

/** The repository's top folder, or undefined outside git (paths then stay as they are). */
export function repoRootOf(cwd: string): Promise<string | undefined> {
  return new Promise((done) => {
    execFile('git', ['rev-parse', '--show-toplevel', '--absolute-git-dir'], { cwd, timeout: 10_000, encoding: 'utf8', env: GIT_ENV },
      (err, stdout) => done(err ? undefined : checkoutTop(stdout)));
  });
}

/** The working tree of the repository whose submodule holds `cwd`, or undefined (not a submodule, or no git). */
export function superprojectOf(cwd: string): Promise<string | undefined> {
  return new Promise((done) => {
    execFile('git', ['rev-parse', '--show-superproject-working-tree'], { cwd, timeout: 10_000, encoding: 'utf8', env: GIT_ENV },
      (err, stdout) => done(err ? undefined : stdout.trim() || undefined));
  });
}

function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** The file relative to the repository's root, with forward slashes; unchanged when it is outside. */
export function fromRoot(file: string, cwd: string, root: string | undefined): string {
  if (root === undefined) return file;
  // git prints the root resolved (/private/tmp on macOS), so the working folder is resolved too;
  // the file itself may not exist any more (removed in the change), so it is joined, not resolved.
  const abs = isAbsolute(file) ? file : join(real(cwd), file);
  const rel = relative(real(root), abs);
  if (rel === '' || climbsOut(rel)) return file;
  return rel.split(sep).join('/');
}

export function rebaseAll(findings: readonly Finding[], cwd: string, root: string | undefined): Finding[] {
  return findings.map((f) => ({ ...f, file: fromRoot(f.file, cwd, root) }));
}

/** `::error file=…,line=…,col=…,title=…::message`, escaped as GitHub documents; at most MAX_ANNOTATIONS. */
export function workflowCommands(findings: readonly Finding[]): string {
  return findings.slice(0, MAX_ANNOTATIONS).map((f) => {
    const props = [`file=${ghProperty(f.file)}`, `line=${f.line}`, ...(f.column ? [`col=${f.column}`] : []), `title=${ghProperty(`dus-sync: ${f.title}`)}`];
    return `::${f.severity} ${props.join(',')}::${ghData(f.message)}\n`;
  }).join('');
}

/**
 * GitLab's Code Quality report (a subset of Code Climate's format): GitLab compares the reports
 * of the base and the head by fingerprint, so it is the same for the same problem in the same
 * file, wherever its line moves.
 */
export function codeQualityReport(findings: readonly Finding[]): string {
  const issues = findings.map((f) => ({
    description: f.message,
    check_name: `dus-sync/${f.title.replace(/\s+/g, '-')}`,
    fingerprint: createHash('sha256').update(`${f.title}\0${f.file}\0${f.message}`).digest('hex'),
    severity: f.severity === 'error' ? 'major' : 'minor',
    location: { path: f.file, lines: { begin: f.line } },
  }));
  return JSON.stringify(issues, null, 2) + '\n';
}
