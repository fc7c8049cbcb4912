// The bounds on what a user may ask for (file sizes, intervals, durations, counts) and the
// parsers that check them, so that a flag, an environment variable and the config file refuse a
// value out of range with the same sentence. No imports: the CLI's option parsing loads this
// before any command module.

export interface Range {
  readonly min: number;
  readonly max: number;
}

const KIB = 1024;
const MIB = 1024 * KIB;
const GIB = 1024 * MIB;

/**
 * Desired-state files larger than this are refused (--max-file-size raises it). The ceiling keeps
 * a file well below what V8 can hold as one string (about 512 MiB) and what yaml parses in
 * reasonable time (about 1 MB/s on the slow path).
 */
export const MAX_FILE_SIZE: Range & { readonly default: number } = { default: 5 * MIB, min: KIB, max: 256 * MIB };

/**
 * watch's drift-healing interval. Below a second the loop would run passes back to back (with
 * `--interval 0`, about 1,000 requests a second against the emulator); above a day Node's timers
 * overflow (at 2^31 ms, some 24.8 days, setTimeout fires at once), and a day is already the
 * slowest drift check anyone asked for.
 */
export const WATCH_INTERVAL_MS: Range = { min: 1000, max: 24 * 3_600_000 };

/** How long a running pass may finish after SIGTERM. 0 aborts it at once; an hour is past any stop timeout. */
export const GRACE_MS: Range = { min: 0, max: 3_600_000 };

/**
 * watch --append-quiet: a phase is appended only from a file unchanged this long. A writer that
 * pauses mid-file (a stalled copy, lines added one at a time) leaves valid YAML that holds half a
 * phase, and an append cannot be taken back.
 */
export const APPEND_QUIET_MS: Range & { readonly default: number } = { default: 2_000, min: 0, max: 3_600_000 };

/**
 * How long reads must show an append whose outcome was unknown absent before it may be sent
 * again. Default 30 s: a gateway's timeout is usually shorter than the time a slow server still
 * needs. Under 30 s trades safety for speed (tests use 1 s); a day is past any server's backlog.
 */
export const SETTLE_WINDOW_MS: Range & { readonly default: number } = { default: 30_000, min: 0, max: 24 * 3_600_000 };

/**
 * Requests in flight at most. 1 is sequential; 64 is well past the point where the API, not the
 * client, is the bottleneck (the client also slows down on 429), and far below the sockets and
 * file descriptors a process has.
 */
export const CONCURRENCY: Range = { min: 1, max: 64 };

const SIZE_UNITS: Record<string, number> = {
  '': 1, b: 1, kb: 1000, mb: 1000 ** 2, gb: 1000 ** 3, kib: KIB, mib: MIB, gib: GIB,
};

/** "5MiB" → 5242880, "500kB" → 500000, "1.5 MiB"; a bare number is bytes. Undefined when it is not a size. */
export function parseSize(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!m) return undefined;
  const unit = SIZE_UNITS[m[2]!.toLowerCase()];
  if (unit === undefined) return undefined;
  const n = Math.round(Number(m[1]) * unit);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** 5242880 → "5 MiB", 1536 → "1.5 KiB". */
export function formatSize(bytes: number): string {
  const [unit, size] = bytes >= GIB ? ['GiB', GIB] : bytes >= MIB ? ['MiB', MIB] : bytes >= KIB ? ['KiB', KIB] : ['bytes', 1];
  const n = bytes / (size as number);
  return `${Number.isInteger(n) ? n : n.toFixed(1)} ${unit as string}`;
}

/** "20s", "500ms", "5m", "1h" → milliseconds; a bare number is seconds. Undefined when it is not a duration. */
export function parseDurationMs(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  switch (m[2] ?? 's') {
    case 'ms': return n;
    case 's': return n * 1000;
    case 'm': return n * 60_000;
    default: return n * 3_600_000;
  }
}

/** 90000 → "90s", 3600000 → "1h", 1500 → "1500ms": the shortest exact way to write it. */
export function formatDuration(ms: number): string {
  if (ms > 0 && ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms > 0 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

export function inRange(n: number, range: Range): boolean {
  return Number.isFinite(n) && n >= range.min && n <= range.max;
}

/** What a flag or setting accepts, for its error message: "a duration from 1s to 24h". */
export function describeRange(what: 'size' | 'duration' | 'count', range: Range): string {
  switch (what) {
    case 'size': return `a size from ${formatSize(range.min)} to ${formatSize(range.max)} (e.g. 16MiB)`;
    case 'duration': return `a duration from ${formatDuration(range.min)} to ${formatDuration(range.max)} (e.g. 30s, 5m)`;
    case 'count': return range.max === Number.MAX_SAFE_INTEGER ? `a whole number of ${range.min} or more` : `a whole number from ${range.min} to ${range.max}`;
  }
}

/**
 * The parsed size, or the sentence that refuses it ("--max-file-size takes a size from …, not "x".").
 * The sentences of these checks quote the value: for flags, which the user typed. An environment
 * variable may hold a key put there by mistake: its errors name it and do not quote it (load/config.ts).
 */
export function checkSize(name: string, text: string, range: Range): number | string {
  const n = parseSize(text);
  return n !== undefined && inRange(n, range) ? n : `${name} takes ${describeRange('size', range)}, not "${text}".`;
}

export function checkDuration(name: string, text: string, range: Range): number | string {
  const n = parseDurationMs(text);
  return n !== undefined && inRange(n, range) ? n : `${name} takes ${describeRange('duration', range)}, not "${text}".`;
}

export function checkCount(name: string, text: string, range: Range): number | string {
  const n = /^\s*\d+\s*$/.test(text) ? Number(text) : NaN;
  return Number.isSafeInteger(n) && inRange(n, range) ? n : `${name} takes ${describeRange('count', range)}, not "${text}".`;
}
