// HTTP failures in words: one sentence per status class, the body as the API gave it.
import { ApiError } from '../errors.js';
import { redact, redactValue } from '../redact.js';

const MAX_DETAIL_CHARS = 500;

export interface HttpFailure {
  readonly tenant: string;
  readonly endpoint: string;
  readonly status: number;
  readonly bodyText: string;
  readonly retryable: boolean;
  readonly outcome?: 'not-sent' | 'unknown';
  readonly attempts: number;
}

/** The body as the API gave it: a parsed JSON value when it is JSON, the text otherwise. */
export function errorBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Redact before cutting: a key cut in two at the limit would no longer match, and its
    // first half would be shown.
    const clean = redact(text);
    return clean.length > MAX_DETAIL_CHARS ? `${clean.slice(0, MAX_DETAIL_CHARS)}…` : clean;
  }
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
  const detail = redactValue(errorBody(f.bodyText));
  const text = describeBody(detail);
  const message = redact(text === '' ? `${headline(f)}.` : `${headline(f)}: ${text}`);
  return new ApiError(message, {
    status: f.status,
    retryable: f.retryable,
    detail,
    endpoint: f.endpoint,
    ...(f.outcome ? { outcome: f.outcome } : {}),
  });
}

export function malformedError(endpoint: string, problem: string, status: number): ApiError {
  return new ApiError(redact(`malformed response from ${endpoint}: ${problem}`), { status, retryable: false, endpoint });
}
