// The few JSON requests `review` makes to a code host (GitHub, GitLab): each one bounded in time
// and in size, never redirected (a redirect could carry the token's header to another host), and
// described in errors by method, path and status only, never by header or URL query.
import { isLoopbackHost } from '../api/url.js';
import { UserError } from '../errors.js';

export const REQUEST_TIMEOUT_MS = 30_000;
/**
 * A page of comments: GitHub's are at most 65,536 characters (up to 3 bytes each in UTF-8),
 * GitLab's notes up to 1,000,000; pages are asked small enough (20 and 10 per page) that a full
 * page of the longest comments fits, so nobody can stop the bot by posting long comments.
 */
export const MAX_RESPONSE_BYTES = 48 * 1024 * 1024;

export interface HostResponse {
  readonly status: number;
  readonly headers: Headers;
  /** The parsed JSON body, or undefined for an empty or non-JSON one. */
  readonly json: unknown;
}

/** Why a request to the code host did not succeed; `status` 0 when there was no answer. */
export class HostError extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
    this.name = 'HostError';
  }
}

/**
 * The API root as a URL, refusing what would send the token in clear text to another machine
 * (http:// is for a server on this machine, as in tests) or to a URL with credentials in it.
 */
export function apiRoot(raw: string, name: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UserError(`${name} is not a URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw new UserError(`${name} must be an https:// URL (http:// only to this machine): the token would travel in clear text`);
  }
  if (url.username !== '' || url.password !== '') throw new UserError(`${name} must not hold a user name or password`);
  url.search = '';
  url.hash = '';
  return url;
}

/** The root's path without a trailing slash ('' for https://api.github.com). */
export function rootPath(root: URL): string {
  return root.pathname.replace(/\/+$/, '');
}

/** `path` (with its query) under the root; only this origin is ever asked. */
export function under(root: URL, path: string): URL {
  return new URL(`${root.origin}${rootPath(root)}${path}`);
}

async function readBounded(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new HostError(`the answer is larger than ${limit} bytes`, res.status);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export interface RequestOptions {
  readonly method?: 'GET' | 'POST' | 'PATCH' | 'PUT';
  readonly headers: Record<string, string>;
  readonly body?: unknown;
  readonly timeoutMs?: number;
}

/** One request; any status is returned (the caller decides), a network failure or timeout is a HostError. */
export async function request(url: URL, opts: RequestOptions): Promise<HostResponse> {
  const method = opts.method ?? 'GET';
  const what = `${method} ${url.pathname}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: { accept: 'application/json', ...opts.headers, ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
      redirect: 'error',
      signal: AbortSignal.timeout(opts.timeoutMs ?? REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const why = e.name === 'TimeoutError' ? `no answer within ${(opts.timeoutMs ?? REQUEST_TIMEOUT_MS) / 1000}s` : (e.cause?.code ?? e.message);
    throw new HostError(`${what}: ${why}`, 0);
  }
  let text: string;
  try {
    text = await readBounded(res, MAX_RESPONSE_BYTES);
  } catch (err) {
    throw new HostError(`${what}: ${(err as Error).name === 'TimeoutError' ? 'the answer did not arrive in time' : (err as Error).message}`, res.status);
  }
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json };
}

/** The server's own words for a failed request, short: GitHub and GitLab both say `message`. */
export function serverMessage(json: unknown): string {
  if (json && typeof json === 'object' && !Array.isArray(json)) {
    const m = (json as Record<string, unknown>).message ?? (json as Record<string, unknown>).error;
    if (typeof m === 'string') return m.slice(0, 200);
  }
  return '';
}
