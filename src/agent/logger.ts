// The agent's logger: pino JSON lines for machines (a container's log collector), readable lines
// on a terminal. Logs go to standard error: standard output carries only a command's result.
// Every line passes through redact() as the last step before it is written, so a key can
// reach no log, whatever logged it (our adapter, a child logger, a library). Messages and field
// values quote servers and file names: their control characters are escaped visibly before
// they are formatted (a readable line on a terminal would otherwise carry them raw), and the
// ones JSON leaves raw (DEL, C1, bidi controls) are escaped in the finished line too.
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import pretty from 'pino-pretty';
import type { Logger, LogLevel } from '../model/index.js';
import { safeLines, safeText } from '../core/render/ansi.js';
import { redact } from '../redact.js';

export interface LoggerOptions {
  /** Stack traces in error fields (and the debug level, unless `level` says otherwise). */
  readonly debug?: boolean;
  /** The least severe level written (default: debug with `debug`, else info). */
  readonly level?: LogLevel;
  /** Default: process.stderr. */
  readonly stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** 'auto' (default): readable on a TTY, JSON lines otherwise. */
  readonly format?: 'auto' | 'json' | 'pretty';
  /** Colours in readable mode (default: when the stream is a TTY and NO_COLOR is unset). */
  readonly color?: boolean;
  /** Fields on every line (e.g. { agent: 'dus-sync' }). */
  readonly base?: Record<string, unknown>;
}

export interface AgentLogger extends Logger {
  readonly pino: PinoLogger;
}

// Header fields are censored by name too, in case a request object is ever logged whole.
const REDACT_PATHS = [
  'headers["x-service-api-key"]',
  '*.headers["x-service-api-key"]',
  '*.*.headers["x-service-api-key"]',
  'apiKey', '*.apiKey', 'api_key', '*.api_key',
];

export function createLogger(opts: LoggerOptions = {}): AgentLogger {
  const stream = opts.stream ?? process.stderr;
  const readable = opts.format === 'pretty' || (opts.format !== 'json' && stream.isTTY === true);
  const debug = opts.debug === true;
  const destination: DestinationStream = readable
    // A stream in this thread, not a worker transport: it keeps working inside the esbuild bundle
    // and writes synchronously, so nothing is lost when the process exits.
    ? pretty({ destination: stream, sync: true, colorize: opts.color ?? (stream.isTTY === true && !process.env.NO_COLOR), translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
    : (stream as DestinationStream);
  const log = pino({
    level: opts.level ?? (debug ? 'debug' : 'info'),
    base: opts.base ?? null,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    // Errors are already plain fields (cleanArg); pino's own err serializer would relabel them.
    serializers: { err: (e: unknown) => e },
    hooks: {
      logMethod(args, method) {
        method.apply(this, args.map((a) => cleanArg(a, debug)) as Parameters<typeof method>);
      },
      streamWrite: (line) => redact(line).replace(RAW_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    },
  }, destination);
  return adapt(log);
}

/** The model's Logger over a pino logger. */
export function adapt(log: PinoLogger): AgentLogger {
  const at = (level: 'debug' | 'info' | 'warn' | 'error') => (msg: string, fields?: Record<string, unknown>) => {
    if (fields && Object.keys(fields).length > 0) log[level](fields, msg);
    else log[level](msg);
  };
  return { pino: log, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

// Characters that JSON.stringify leaves raw inside strings; in a JSON line they can only be there.
const RAW_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const MAX_FIELD_DEPTH = 8;

// Errors do not survive JSON.stringify (their fields are not enumerable): turn them into plain
// fields, with the stack only when debugging. Strings are redacted and made one line each.
function cleanArg(arg: unknown, debug: boolean, depth = 0): unknown {
  if (typeof arg === 'string') return safeText(redact(arg));
  if (arg instanceof Error) return errorFields(arg, debug);
  if (depth >= MAX_FIELD_DEPTH || !arg || typeof arg !== 'object') return arg;
  if (Array.isArray(arg)) return arg.map((v) => cleanArg(v, debug, depth + 1));
  const proto = Object.getPrototypeOf(arg) as unknown;
  if (proto !== Object.prototype && proto !== null) return arg;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(arg)) out[safeText(redact(k))] = cleanArg(v, debug, depth + 1);
  return out;
}

function errorFields(err: Error, debug: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { type: err.name, message: safeText(redact(err.message)) };
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out.code = code;
  if (debug && err.stack) out.stack = safeLines(redact(err.stack));
  return out;
}
