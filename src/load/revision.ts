// The git revision of the desired state, for provenance: which commit a plan, an apply, a
// journal intent or a watch pass was made from, and whether files below the config's folder
// differed from it. One `git status` process, run directly (execFile, never a shell), with a
// deadline: a missing git, a folder outside any repository, a repository git refuses to read
// (another owner) or a slow one all mean "no revision", never an error.
import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import type { DesiredRevision } from '../model/index.js';
import { GIT_ENV } from './git.js';

/** HEAD's full commit id; dirty when files below the folder asked about differ from it (changed, staged or untracked). */
export type Revision = DesiredRevision;

export interface RevisionOptions {
  /** Default 2 s: a pass must not wait on a huge repository. */
  readonly timeoutMs?: number;
  /** The git executable (tests point it at a missing one). */
  readonly git?: string;
  /** Why there is no revision (debug logs): git absent, not a repository, timed out. */
  readonly onAbsent?: (why: string) => void;
}

const DEFAULT_TIMEOUT_MS = 2000;
const MAX_OUTPUT = 4 * 1024 * 1024;
const COMMIT = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/**
 * HEAD of the repository holding `dir` (any subfolder works) and whether anything below `dir`
 * is uncommitted; undefined when there is no such revision to tell.
 */
export function readRevision(dir: string, opts: RevisionOptions = {}): Promise<Revision | undefined> {
  const absent = (why: string): undefined => { opts.onAbsent?.(why); return undefined; };
  return new Promise((resolve) => {
    // --porcelain=v2 --branch gives HEAD's id in a header line and the changed paths below `dir`
    // after it: one process for both. GIT_OPTIONAL_LOCKS=0 (GIT_ENV) keeps it from writing the index.
    execFile(opts.git ?? 'git', ['status', '--porcelain=v2', '--branch', '-z', '--untracked-files=normal', '--', '.'], {
      cwd: dir, env: GIT_ENV, timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: MAX_OUTPUT, encoding: 'utf8', windowsHide: true,
    }, (err, stdout) => {
      if (err) {
        const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null };
        if (e.code === 'ENOENT') { resolve(absent('git was not found on the PATH')); return; }
        if (e.killed || e.signal) { resolve(absent(`git status took longer than ${opts.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`)); return; }
        if (e.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') { resolve(absent('git status said too much')); return; }
        resolve(absent('not inside a git repository git can read'));
        return;
      }
      resolve(parseStatus(stdout) ?? absent('the repository has no commit yet'));
    });
  });
}

/** Exported for tests: the revision in `git status --porcelain=v2 --branch -z` output. */
export function parseStatus(out: string): Revision | undefined {
  const records = out.split('\0').filter((r) => r !== '');
  const oid = records.find((r) => r.startsWith('# branch.oid '))?.slice('# branch.oid '.length).trim();
  // "(initial)" before the first commit; anything else that is not an object id is not trusted.
  if (!oid || !COMMIT.test(oid)) return undefined;
  return { commit: oid, dirty: records.some((r) => !r.startsWith('# ')) };
}

/** "abc1234" or "abc1234 (dirty)": the short form for a log line, a footer or a message. */
export function shortRevision(r: Revision): string {
  return `${r.commit.slice(0, 12)}${r.dirty ? ' (dirty)' : ''}`;
}

/** The revision of a config's desired state: asked in the config file's folder (else the resources folder). */
export function desiredRevision(config: { readonly file?: string; readonly dir: string }, opts: RevisionOptions = {}): Promise<Revision | undefined> {
  return readRevision(config.file ? dirname(config.file) : config.dir, opts);
}
