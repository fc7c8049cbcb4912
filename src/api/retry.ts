// What is worth retrying, and how long to wait. Pure functions: the clock and randomness
// are passed in so that tests run without sleeping.

export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

export interface BackoffPolicy {
  readonly baseMs: number;
  readonly capMs: number;
  /** The longest Retry-After we honour; a server asking for an hour gets this instead. */
  readonly retryAfterCapMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 200, capMs: 10_000, retryAfterCapMs: 60_000 };

/** Full jitter (AWS architecture blog): uniform in [0, min(cap, base * 2^attempt)). */
export function backoffDelay(attempt: number, random: () => number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** attempt);
  return Math.floor(random() * ceiling);
}

/** Retry-After as delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number, capMs = DEFAULT_BACKOFF.retryAfterCapMs): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(text)) {
    ms = Number(text) * 1000;
  } else {
    // An HTTP date starts with the day name; Date.parse would also read '-1' as a year.
    if (!/^[A-Za-z]{3},? /.test(text)) return undefined;
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - nowMs;
  }
  return Math.min(capMs, Math.max(0, Math.ceil(ms)));
}

export type NetworkFailure = {
  readonly code: string;
  /** For the client's own bounds (size, deadline): the flag that sets it, shown instead of the code. */
  readonly flag?: string;
  /** Certainly not sent: nothing reached the server (refused, DNS, connect timeout, TLS). */
  readonly sent: boolean;
  readonly retryable: boolean;
  readonly description: string;
  /** The https handshake got a plain-http answer: the base URL's scheme (or port) is wrong. */
  readonly plainHttp?: boolean;
};

const NOT_SENT: Record<string, string> = {
  ECONNREFUSED: 'the connection was refused',
  ENOTFOUND: 'the host name was not found',
  EAI_AGAIN: 'the host name could not be resolved',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
};

const MAYBE_SENT: Record<string, string> = {
  ECONNRESET: 'the connection was reset',
  EPIPE: 'the connection was closed while sending',
  ETIMEDOUT: 'the connection timed out',
  UND_ERR_SOCKET: 'the connection was closed without a complete response',
  UND_ERR_CLOSED: 'the connection was closed',
  UND_ERR_HEADERS_TIMEOUT: 'the server did not answer in time',
  UND_ERR_BODY_TIMEOUT: 'the server stopped sending its answer',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'the answer was cut short',
};

const NOT_RETRYABLE_NOT_SENT = new Set(['ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * What OpenSSL says when the answer to a TLS hello is not TLS, which is what a plain-http server
 * sends back ("HTTP/1.1 400"): Node 20 has a code for it, later versions may give only EPROTO.
 */
const NOT_TLS = /WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|wrong version number|packet length too long/i;

function isPlainHttpAnswer(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if ((typeof code === 'string' && NOT_TLS.test(code)) || (typeof message === 'string' && NOT_TLS.test(message))) return true;
  }
  return false;
}

function errorCode(err: unknown): string | undefined {
  // undici wraps some causes; look one level down too.
  for (let e: unknown = err, depth = 0; e && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
  }
  return undefined;
}

/**
 * The client stopped reading an answer at one of its bounds: too large (the same answer would
 * come again, so not worth another try) or past the request's deadline (a slow server or
 * network may be faster next time, so worth one for idempotent requests).
 */
export class ResponseLimitError extends Error {
  constructor(readonly code: 'DUS_RESPONSE_TOO_LARGE' | 'DUS_REQUEST_DEADLINE', description: string, readonly flag: string) {
    super(description);
    this.name = 'ResponseLimitError';
  }
}

/** Classify a thrown transport error. TLS failures are never retried and never sent. */
export function classifyNetworkError(err: unknown): NetworkFailure {
  if (err instanceof ResponseLimitError) {
    return { code: err.code, flag: err.flag, sent: true, retryable: err.code === 'DUS_REQUEST_DEADLINE', description: err.message };
  }
  const code = errorCode(err) ?? 'UNKNOWN';
  if (code in NOT_SENT) {
    return { code, sent: false, retryable: !NOT_RETRYABLE_NOT_SENT.has(code), description: NOT_SENT[code]! };
  }
  if (code in MAYBE_SENT) return { code, sent: true, retryable: true, description: MAYBE_SENT[code]! };
  if (isPlainHttpAnswer(err)) {
    return { code, sent: false, retryable: false, plainHttp: true, description: 'the server speaks plain http, not https' };
  }
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET/.test(code)) {
    return { code, sent: false, retryable: false, description: 'the TLS certificate could not be verified (use --ca-file or NODE_EXTRA_CA_CERTS for a private CA)' };
  }
  return { code, sent: true, retryable: false, description: 'the request failed' };
}
