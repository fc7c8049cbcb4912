// The small set of typed errors. Each carries a `code`; the one top-level handler in
// src/cli/main.ts maps them to exit codes and prints one sentence (a stack only with --debug).
import type { SourceLocation } from './model/index.js';

export interface ConfigIssue extends SourceLocation {
  /** JSON pointer of the value inside its document ('' for the document itself). */
  readonly pointer: string;
  readonly message: string;
}

/** Invalid config or desired state: every issue, each at file:line:col. Exit 1, nothing written. */
export class ConfigError extends Error {
  readonly code = 'CONFIG';
  constructor(readonly issues: readonly ConfigIssue[], message?: string) {
    super(message ?? summarizeIssues(issues));
    this.name = 'ConfigError';
  }
}

function summarizeIssues(issues: readonly ConfigIssue[]): string {
  if (issues.length === 0) return 'the configuration is invalid';
  const first = issues[0]!;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more; run dus-sync validate)` : '';
  return `${first.file}:${first.line}:${first.column}: ${first.message}${more}`;
}

/** A request to the API failed or its answer was malformed. */
export class ApiError extends Error {
  readonly code = 'API';
  constructor(
    message: string,
    readonly details: {
      readonly status?: number;
      readonly retryable?: boolean;
      /** The body as the API gave it ({detail} or field → messages), already redacted. */
      readonly detail?: unknown;
      readonly endpoint?: string;
      /** For non-idempotent writes: 'not-sent' when the write certainly did not happen, 'refused' for a 4xx answer (the server says it did not), 'unknown' otherwise. */
      readonly outcome?: 'not-sent' | 'refused' | 'unknown';
      /** The answer was another object than the one asked for (id or tenant): not trusted. */
      readonly wrongObject?: boolean;
      /** The server's Retry-After in milliseconds, when it sent one. */
      readonly retryAfterMs?: number;
    } = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
  get status(): number | undefined { return this.details.status; }
  get retryable(): boolean { return this.details.retryable ?? false; }
}

/** A plan over a safety limit, refused before any write. */
export class UnsafePlanError extends Error {
  readonly code = 'UNSAFE';
  constructor(message: string) {
    super(message);
    this.name = 'UnsafePlanError';
  }
}

/** The plan holds conflicts (a live phase differs from the desired one): reported, never fixed. */
export class ConflictError extends Error {
  readonly code = 'CONFLICT';
  constructor(message: string) {
    super(message);
    this.name = 'ConflictError';
  }
}

/** A usage or environment problem the user must fix (missing key, no TTY, stale plan...). */
export class UserError extends Error {
  readonly code = 'USER';
  constructor(message: string) {
    super(message);
    this.name = 'UserError';
  }
}

/** The state folder (journal, lock, history) cannot be used: a path, permission or disk problem. */
export class StateError extends UserError {
  constructor(message: string) {
    super(message);
    this.name = 'StateError';
  }
}

/** Another run holds the apply lock: nothing is wrong, the write waits for it. */
export class LockHeldError extends UserError {
  constructor(message: string) {
    super(message);
    this.name = 'LockHeldError';
  }
}

export type DusError = ConfigError | ApiError | UnsafePlanError | ConflictError | UserError;

export function isDusError(err: unknown): err is DusError {
  return err instanceof ConfigError || err instanceof ApiError || err instanceof UnsafePlanError
    || err instanceof ConflictError || err instanceof UserError;
}
