// What every command shares: the global options, colours, the stderr logger.
import { styleText } from 'node:util';
import type { ApiLimits, Logger } from '../model/index.js';
import { safeText } from '../core/render/ansi.js';
import { UserError } from '../errors.js';

export interface GlobalOptions {
  config?: string;
  dir?: string;
  tenant?: string[];
  selector?: string[];
  insecureHttp?: boolean;
  caFile?: string;
  /** --max-response-size, in bytes (already bounded). */
  maxResponseSize?: number;
  /** --request-timeout, in milliseconds (already bounded). */
  requestTimeout?: number;
  /** --fetch-timeout, in milliseconds (already bounded). */
  fetchTimeout?: number;
  color?: boolean;
  debug?: boolean;
  /** Bytes, already checked against its range. */
  maxFileSize?: number;
  followExternalSymlinks?: boolean;
}

/**
 * The environment the config is resolved from: the process's, with the flags that change how
 * files are read laid over it (flags win). The flags travel as DUS_MAX_FILE_SIZE and
 * DUS_FOLLOW_EXTERNAL_SYMLINKS so that every command, and every pass of watch, reads files the
 * same way through resolveConfig.
 */
export function configEnv(globals: GlobalOptions, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    ...env,
    ...(globals.maxFileSize !== undefined ? { DUS_MAX_FILE_SIZE: String(globals.maxFileSize) } : {}),
    ...(globals.followExternalSymlinks === true ? { DUS_FOLLOW_EXTERNAL_SYMLINKS: '1' } : {}),
  };
}

/** The response bounds the flags set; the config's api.* fill in what they leave out. */
/** Requests in flight per tenant: where the adaptive limit starts, its floor and its ceiling. */
export interface ConcurrencyFlags {
  readonly start: number;
  readonly min: number;
  readonly max: number;
}

/** Without flags, the limit starts at 8 and adapts between 1 and 64. */
export const DEFAULT_CONCURRENCY: ConcurrencyFlags = { start: 8, min: 1, max: 64 };

/**
 * --concurrency, --min-concurrency and --max-concurrency (range-checked by their parsers). An
 * explicit --concurrency N is, as it always was, the most in flight (the limit starts there and
 * only adapts down) unless --max-concurrency raises the ceiling.
 */
export function concurrencyFlags(opts: Record<string, unknown>): ConcurrencyFlags {
  const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
  const given = num(opts.concurrency);
  const max = num(opts.maxConcurrency) ?? given ?? DEFAULT_CONCURRENCY.max;
  const min = num(opts.minConcurrency) ?? DEFAULT_CONCURRENCY.min;
  const start = given ?? Math.min(max, Math.max(min, DEFAULT_CONCURRENCY.start));
  if (min > max) throw new UserError(`--min-concurrency ${min} is above the ceiling of ${max} (--max-concurrency, or --concurrency when given alone)`);
  if (start < min || start > max) throw new UserError(`--concurrency ${start} is outside --min-concurrency ${min} to --max-concurrency ${max}`);
  return { start, min, max };
}

/** What connect() takes of them. */
export function connectConcurrency(c: ConcurrencyFlags): { concurrency: number; minConcurrency: number; maxConcurrency: number } {
  return { concurrency: c.start, minConcurrency: c.min, maxConcurrency: c.max };
}

export function apiLimitFlags(globals: GlobalOptions): ApiLimits {
  return {
    ...(globals.maxResponseSize !== undefined ? { maxResponseBytes: globals.maxResponseSize } : {}),
    ...(globals.requestTimeout !== undefined ? { requestTimeoutMs: globals.requestTimeout } : {}),
    ...(globals.fetchTimeout !== undefined ? { fetchTimeoutMs: globals.fetchTimeout } : {}),
  };
}

/** Colours only on a TTY, never with --no-color or NO_COLOR (https://no-color.org). */
export function useColor(globals: GlobalOptions, stream: NodeJS.WriteStream = process.stdout): boolean {
  if (globals.color === false) return false;
  if (process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '') return false;
  if (process.env.FORCE_COLOR !== undefined && process.env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true;
}

export type Style = Parameters<typeof styleText>[0];

export function paint(enabled: boolean): (style: Style, text: string) => string {
  return enabled ? (style, text) => styleText(style, text) : (_style, text) => text;
}

/**
 * Parses --selector k=v flags into a label map. A key given twice with two values is refused:
 * every selector must match, and a label has one value, so no document could match both.
 */
export function parseSelector(selector: readonly string[] | undefined): Record<string, string> | undefined {
  if (!selector || selector.length === 0) return undefined;
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const s of selector) {
    const eq = s.indexOf('=');
    if (eq <= 0) throw new UserError(`--selector takes key=value, not "${s}"`);
    const key = s.slice(0, eq);
    const value = s.slice(eq + 1);
    if (key in out && out[key] !== value) {
      throw new UserError(`--selector gives the label ${key} twice (${key}=${out[key]!} and ${key}=${value}); every selector must match and a label has one value, so no document could match both: give ${key} once`);
    }
    out[key] = value;
  }
  return out;
}

/**
 * Human-readable lines on standard error; debug lines only with --debug. Each message is one
 * line: what it quotes from a server or a file cannot start a line of its own or move the
 * cursor. Keys are redacted where stderr leaves the process (output.ts).
 */
export function stderrLogger(debug: boolean): Logger {
  const write = (level: string, msg: string, fields?: Record<string, unknown>) => {
    const extra = fields && Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
    process.stderr.write(`${level}${safeText(msg + extra)}\n`);
  };
  return {
    debug: (msg, fields) => { if (debug) write('debug: ', msg, fields); },
    info: (msg, fields) => write('', msg, fields),
    warn: (msg, fields) => write('warning: ', msg, fields),
    error: (msg, fields) => write('error: ', msg, fields),
  };
}
