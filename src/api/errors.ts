// HTTP failures in words: one sentence per status class, the body as the API gave it.
import { ApiError } from '../errors.js';
import { redact } from '../redact.js';

/** What an error shows of a server's words; the rest is cut (a 20 MB detail is not a log line). */
export const MAX_DETAIL_CHARS = 500;

/** The first `max` characters, with "…" when something was cut. */
export function cutText(text: string, max = MAX_DETAIL_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

export interface HttpFailure {
  readonly tenant: string;
  readonly endpoint: string;
  readonly status: number;
  readonly bodyText: string;
  readonly retryable: boolean;
  readonly outcome?: 'not-sent' | 'refused' | 'unknown';
  readonly attempts: number;
  /** The server's Retry-After, in milliseconds, for a caller that retries by itself. */
  readonly retryAfterMs?: number;
}

/**
 * The body as the API gave it, redacted and cut: a parsed JSON value when it is JSON (its
 * strings, keys and entries cut to MAX_DETAIL_CHARS in all), the text otherwise. Every string
 * is redacted before it is cut: a key cut in two at the limit would no longer match, and its
 * first half would be shown.
 */
export function errorBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    return cutText(redact(text));
  }
  return cutValue(value, { left: MAX_DETAIL_CHARS });
}

/**
 * A redacted copy of a JSON value that spends at most `budget.left` characters on strings and
 * keys, and one per entry, so that neither a long string nor thousands of entries nor deep
 * nesting gets through whole (JSON.parse takes 100,000 levels; a recursive walk of them would
 * overflow the stack, this one stops within the budget). What is left out is marked "…".
 */
function cutValue(value: unknown, budget: { left: number }): unknown {
  if (typeof value === 'string') {
    const clean = redact(value);
    const out = cutText(clean, Math.max(0, budget.left));
    budget.left -= Math.min(clean.length, budget.left);
    return out;
  }
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) {
      if (budget.left <= 0) { out.push('…'); break; }
      budget.left -= 1;
      out.push(cutValue(item, budget));
    }
    return out;
  }
  if (typeof value === 'object' && value !== null) {
    const out: Array<[string, unknown]> = [];
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (budget.left <= 0) { out.push(['…', '…']); break; }
      budget.left -= 1;
      const key = cutValue(k, budget) as string;
      out.push([key, cutValue(v, budget)]);
    }
    // fromEntries defines own properties: a "__proto__" key from the server stays a key.
    return Object.fromEntries(out);
  }
  budget.left -= 1;
  return value;
}

/** {"detail": "x"} → "x"; {"field": ["a", "b"]} → "field: a b"; anything else compactly. */
export function describeBody(body: unknown): string {
  if (body === undefined || body === null) return '';
  // A proxy or a wrong base URL answers with a web page: a line of HTML helps nobody.
  if (typeof body === 'string') return /^\s*</.test(body) ? 'the answer is an HTML page, not the API (is the base URL right?)' : body.trim();
  if (typeof body === 'object' && !Array.isArray(body)) {
    const entries = Object.entries(body as Record<string, unknown>);
    const detail = (body as Record<string, unknown>).detail;
    if (entries.length === 1 && typeof detail === 'string') return detail;
    return entries.map(([k, v]) => `${k}: ${messagesOf(v)}`).join('; ');
  }
  if (Array.isArray(body)) return body.map(messagesOf).join(' ');
  return JSON.stringify(body);
}

function messagesOf(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.join(' ');
  return JSON.stringify(v);
}

function headline(f: HttpFailure): string {
  const s = f.status;
  if (s === 401) return `the API key for tenant ${f.tenant} was refused (401)`;
  if (s === 403) return `the API key is not valid for tenant ${f.tenant} (403)`;
  if (s === 404) return `${f.endpoint} was not found for tenant ${f.tenant} (404)`;
  if (s === 400 || s === 422) return `the API rejected ${f.endpoint} for tenant ${f.tenant} (${s})`;
  if (s === 429) return `the API kept rate limiting tenant ${f.tenant} on ${f.endpoint} (429${tries(f)})`;
  if (s >= 500) return `the API failed on ${f.endpoint} for tenant ${f.tenant} (${s}${tries(f)})`;
  return `the API answered ${s} to ${f.endpoint} for tenant ${f.tenant}`;
}

function tries(f: HttpFailure): string {
  return f.attempts > 1 ? `, ${f.attempts} tries` : '';
}

export function httpError(f: HttpFailure): ApiError {
  const detail = errorBody(f.bodyText);
  const text = cutText(describeBody(detail));
  const message = redact(text === '' ? `${headline(f)}.` : `${headline(f)}: ${text}`);
  return new ApiError(message, {
    status: f.status,
    retryable: f.retryable,
    detail,
    endpoint: f.endpoint,
    ...(f.outcome ? { outcome: f.outcome } : {}),
    ...(f.retryAfterMs !== undefined ? { retryAfterMs: f.retryAfterMs } : {}),
  });
}

export function malformedError(endpoint: string, problem: string, status: number): ApiError {
  return new ApiError(`malformed response from ${endpoint}: ${cutText(redact(problem))}`, { status, retryable: false, endpoint });
}
