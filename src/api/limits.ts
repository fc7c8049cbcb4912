// How much of an answer the client reads, and for how long: the two bounds that keep a hostile
// or broken server from holding the process (and the apply lock) with an enormous, endless or
// dripping body. Flags and dus-sync.yaml are checked by the same functions (src/limits.ts).
import { UserError } from '../errors.js';
import type { ApiLimits, ResolvedConfig } from '../model/index.js';
import { checkDuration, checkSize, type Range } from '../limits.js';

export { formatDuration, formatSize, parseSize } from '../limits.js';

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
export const MAX_RESPONSE_BYTES: Range & { readonly default: number } = { default: 32 * MIB, min: KIB, max: 256 * MIB };

/**
 * 60 s for the headers and the whole body of one try: a full 32 MiB answer needs only about
 * 5 Mbit/s to arrive in time, and a server slower than that on one read is broken, not busy.
 * Bounds: 1 s (less is shorter than an ordinary TLS handshake on a bad day) to 10 minutes
 * (longer is a hang that holds the apply lock, not a slow server).
 */
export const REQUEST_TIMEOUT_MS: Range & { readonly default: number } = { default: 60_000, min: 1_000, max: 600_000 };

/**
 * 10 minutes for reading the whole live state of one run (every page of the bundle list, every
 * declared action): each answer has its own deadline, but a server can send pages each just in
 * time, for days, while the apply lock is held. The benchmark's 20,000-record tenant reads in
 * about a second; 10 minutes is hundreds of times that. Bounds: 10 s to 24 h.
 */
export const FETCH_TIMEOUT_MS: Range & { readonly default: number } = { default: 600_000, min: 10_000, max: 86_400_000 };

/** The actions of one tenant may total this many times --max-response-size: they are kept whole in memory. */
export const ACTIONS_BUDGET_FACTOR = 8;

/**
 * The bundle list of one tenant may total this many times --max-response-size over all its
 * pages: 2 GiB at the default, some six million firmware records, hundreds of times the
 * benchmark's tenant. Pages are read one at a time, so this bounds time and traffic, not
 * memory: a list whose next links never end (each page just under the cap) stops here, in a
 * sentence, long before the fetch deadline.
 */
export const LIST_BUDGET_FACTOR = 64;

/**
 * The firmware records kept from the bundle lists of one fetch (plan, apply, a pass of watch:
 * the declared ones; export: all of one tenant) may total this many times --max-response-size,
 * each counted as RECORD_OVERHEAD plus its kept strings: 64 MiB at the default, about 120,000
 * records, more than the largest list that fits in one answer (some 90,000) and six times the
 * benchmark's tenant. Export holds each record again as YAML, about 10 KB apiece at its peak
 * (80,000 records: 780 MB), so this keeps its peak near a gigabyte instead of V8's out-of-memory
 * crash; plan keeps only the declared records and never comes near it.
 */
export const RECORDS_BUDGET_FACTOR = 2;

/** What a kept firmware record costs in memory beyond its strings: measured at about 650 bytes in the index. */
export const RECORD_OVERHEAD = 512;

/**
 * Bundle versions kept per firmware record (besides the declared bundle_version, always kept):
 * the first in sorted order, as plan, apply and export only ever use the first one (apply
 * re-reads the record through it, export writes it as bundle_version). A firmware in ever-new
 * bundles page after page must not make one record grow without end.
 */
export const BUNDLES_KEPT_PER_RECORD = 16;

/**
 * Characters in a bundle version at most. A version goes into the path of GET
 * /api/v1/firmware-bundles/version/{version}; real ones are a few dozen characters
 * ("2024.06.1-rc3"), and common servers refuse a request line over 8 KiB: 512 characters stay
 * under it even percent-encoded (up to 9 bytes a character). A longer one is not a version, and
 * kept on a record (a 1 MiB one in every bundle of an endless list) it is what ran plan out of memory.
 */
export const MAX_BUNDLE_VERSION_LENGTH = 512;

/** Only as much of an error answer is read as its message could ever show. */
export const ERROR_BODY_BYTES = 64 * KIB;

/** The value, or a UserError with the sentence of src/limits.ts (the same for a flag and a config key). */
function checked(result: number | string): number {
  if (typeof result === 'string') throw new UserError(result.replace(/\.$/, ''));
  return result;
}

/** Reads and bounds a response size; `where` names the flag or config key in the message. */
export function checkedMaxResponseSize(text: string, where: string): number {
  return checked(checkSize(where, text, MAX_RESPONSE_BYTES));
}

/** Reads and bounds a request deadline; `where` names the flag or config key in the message. */
export function checkedRequestTimeout(text: string, where: string): number {
  return checked(checkDuration(where, text, REQUEST_TIMEOUT_MS));
}

/** Reads and bounds the deadline of reading the whole live state. */
export function checkedFetchTimeout(text: string, where: string): number {
  return checked(checkDuration(where, text, FETCH_TIMEOUT_MS));
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
