// The base URL, the paths under it, and the rules that keep a key on the host it belongs to.
import { isIP } from 'node:net';
import { UserError } from '../errors.js';

export interface BaseUrl {
  readonly origin: string;
  /** Path prefix without a trailing slash ('' for none), e.g. '/dus' for https://h/dus/. */
  readonly prefix: string;
  readonly host: string;
}

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  // Only the name itself: a resolver need not map other *.localhost names to this machine, and
  // http:// to them would carry a key or token in clear text to whatever it returns.
  if (h === 'localhost') return true;
  if (h === '::1') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (h.startsWith('::ffff:')) return isLoopbackHost(h.slice(7));
  return false;
}

export function parseBaseUrl(raw: string, insecureHttp: boolean): BaseUrl {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UserError(`the API base URL "${raw}" is not a URL: write it as https://host[/prefix]`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UserError(`the API base URL must start with https:// (got ${url.protocol}//${url.host})`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new UserError('the API base URL must not hold a user name or password: keys go in the config');
  }
  if (url.protocol === 'http:' && !insecureHttp && !isLoopbackHost(url.hostname)) {
    throw new UserError(`refusing to send API keys over plain http to ${url.host}: use https:// or pass --insecure-http`);
  }
  const prefix = url.pathname.replace(/\/+$/, '');
  // Every path dus-sync sends starts with /api/v1: a base URL ending in it would ask for /api/v1/api/v1/...
  if (/\/api\/v1$/i.test(prefix)) {
    throw new UserError(`the API base URL ${url.origin}${prefix} should not include /api/v1; dus-sync adds it: set base_url (or DUS_BASE_URL) to ${url.origin}${prefix.slice(0, -'/api/v1'.length)}`);
  }
  return { origin: url.origin, prefix, host: url.host };
}

/** `/api/v1/...` under the base URL's prefix. Path segments must already be encoded. */
export function apiPath(base: BaseUrl, path: string): string {
  return `${base.prefix}${path}`;
}

/** A path parameter as one segment: '1.0/../x', 'a b', 'ü', '#1' all stay inside it. */
export function segment(value: string | number): string {
  const s = encodeURIComponent(String(value));
  // '.' and '..' are the only segments encodeURIComponent leaves that a URL parser collapses.
  return s === '.' ? '%2E' : s === '..' ? '%2E%2E' : s;
}
