// How much of an answer the client reads, and for how long: the two bounds that keep a hostile
// or broken server from holding the process (and the apply lock) with an enormous, endless or
// dripping body. Parsing and bounds live here so that flags and dus-sync.yaml agree.
import { UserError } from '../errors.js';
import type { ApiLimits, ResolvedConfig } from '../model/index.js';

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * 32 MiB: an unpaginated bundle list of about 90,000 firmware records (the emulator's records
 * are about 360 bytes each: 20,000 of them are 7.2 MB), four times the benchmark's tenant; a
 * paginated list page or an action is a few kilobytes. The worst case, all requests in flight
 * of a tenant (8 by default) answered at the cap, holds 256 MiB of buffers, not the gigabytes
 * of an unbounded read. Bounds: below 1 KiB even an action does not fit; above 256 MiB the text
 * would come close to V8's largest string (about 512 MiB) and JSON.parse would need gigabytes.
 */
export const MAX_RESPONSE_BYTES = { default: 32 * MIB, min: KIB, max: 256 * MIB } as const;

/**
 * 60 s for the headers and the whole body of one try: a full 32 MiB answer needs only about
 * 5 Mbit/s to arrive in time, and a server slower than that on one read is broken, not busy.
 * Bounds: 1 s (less is shorter than an ordinary TLS handshake on a bad day) to 10 minutes
 * (longer is a hang that holds the apply lock, not a slow server).
 */
export const REQUEST_TIMEOUT_MS = { default: 60_000, min: 1_000, max: 600_000 } as const;

/**
 * 10 minutes for reading the whole live state of one run (every page of the bundle list, every
 * declared action): each answer has its own deadline, but a server can send pages each just in
 * time, for days, while the apply lock is held. The benchmark's 20,000-record tenant reads in
 * about a second; 10 minutes is hundreds of times that. Bounds: 10 s to 24 h.
 */
export const FETCH_TIMEOUT_MS = { default: 600_000, min: 10_000, max: 86_400_000 } as const;

/** The actions of one tenant may total this many times --max-response-size: they are kept whole in memory. */
export const ACTIONS_BUDGET_FACTOR = 8;

/** Only as much of an error answer is read as its message could ever show. */
export const ERROR_BODY_BYTES = 64 * KIB;

const SIZE_UNITS: Record<string, number> = {
  '': 1, b: 1, kb: 1000, mb: 1000 ** 2, gb: 1000 ** 3, kib: KIB, mib: MIB, gib: 1024 * MIB,
};

/** "32MiB" → 33554432, "500kB" → 500000, "1024" → 1024 bytes; undefined when unreadable. */
export function parseSize(text: string): number | undefined {
  const m = /^(\d+)\s*([a-z]*)$/i.exec(text.trim());
  if (!m) return undefined;
  const unit = SIZE_UNITS[m[2]!.toLowerCase()];
  return unit === undefined ? undefined : Number(m[1]) * unit;
}

/** 33554432 → "32 MiB"; exact when it can be, else one decimal. */
export function formatSize(bytes: number): string {
  for (const [unit, size] of [['GiB', 1024 * MIB], ['MiB', MIB], ['KiB', KIB]] as const) {
    if (bytes >= size) {
      const n = bytes / size;
      return `${Number.isInteger(n) ? n : n.toFixed(1)} ${unit}`;
    }
  }
  return `${bytes} bytes`;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "60s" → 60000, "1m" → 60000, "1500ms"; a bare number is seconds. undefined when unreadable. */
export function parseTimeout(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/.exec(text.trim());
  if (!m) return undefined;
  return Math.round(Number(m[1]) * DURATION_UNITS[m[2] ?? 's']!);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

/** Reads and bounds a response size; `where` names the flag or config key in the message. */
export function checkedMaxResponseSize(text: string, where: string): number {
  const bytes = parseSize(text);
  const { min, max } = MAX_RESPONSE_BYTES;
  if (bytes === undefined) throw new UserError(`${where} takes a size such as 32MiB, 512KiB or 1048576 (bytes), not "${text}"`);
  if (bytes < min || bytes > max) throw new UserError(`${where} is ${formatSize(bytes)}; it must be between ${formatSize(min)} and ${formatSize(max)}`);
  return bytes;
}

/** Reads and bounds a request deadline; `where` names the flag or config key in the message. */
export function checkedRequestTimeout(text: string, where: string): number {
  const ms = parseTimeout(text);
  const { min, max } = REQUEST_TIMEOUT_MS;
  if (ms === undefined) throw new UserError(`${where} takes a duration such as 60s, 90s or 5m, not "${text}"`);
  if (ms < min || ms > max) throw new UserError(`${where} is ${formatDuration(ms)}; it must be between ${formatDuration(min)} and ${formatDuration(max)}`);
  return ms;
}

/** Reads and bounds the deadline of reading the whole live state. */
export function checkedFetchTimeout(text: string, where: string): number {
  const ms = parseTimeout(text);
  const { min, max } = FETCH_TIMEOUT_MS;
  if (ms === undefined) throw new UserError(`${where} takes a duration such as 10m, 90s or 1h, not "${text}"`);
  if (ms < min || ms > max) throw new UserError(`${where} is ${formatDuration(ms)}; it must be between ${formatDuration(min)} and ${formatDuration(max)}`);
  return ms;
}

/** Flags over dus-sync.yaml's api.*; what neither sets is left to the client's defaults. */
export function effectiveLimits(config: ResolvedConfig, flags: ApiLimits | undefined): ApiLimits {
  const maxResponseBytes = flags?.maxResponseBytes ?? config.api?.maxResponseBytes;
  const requestTimeoutMs = flags?.requestTimeoutMs ?? config.api?.requestTimeoutMs;
  const fetchTimeoutMs = flags?.fetchTimeoutMs ?? config.api?.fetchTimeoutMs;
  return {
    ...(maxResponseBytes !== undefined ? { maxResponseBytes } : {}),
    ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
    ...(fetchTimeoutMs !== undefined ? { fetchTimeoutMs } : {}),
  };
}
