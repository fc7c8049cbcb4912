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

/**
 * What is wrong with a base URL whatever the flags say (plain http to a host that is not
 * loopback is not one: --insecure-http allows it). A fault holds only what parseBaseUrl's own
 * sentences show, never the raw value, so the config loader can word it for where it was written.
 */
export type BaseUrlFault =
  | { readonly kind: 'not-a-url' }
  | { readonly kind: 'scheme'; readonly protocol: string; readonly host: string }
  | { readonly kind: 'credentials' }
  /** `url` is the normalized URL, `base` the same without the /api/v1 it ends in. */
  | { readonly kind: 'api-v1'; readonly url: string; readonly base: string };

type Checked = { readonly url: URL; readonly prefix: string; readonly fault?: undefined } | { readonly fault: BaseUrlFault };

/** The checks of parseBaseUrl that no flag changes, in its order. */
function checkBaseUrl(raw: string): Checked {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { fault: { kind: 'not-a-url' } };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { fault: { kind: 'scheme', protocol: url.protocol, host: url.host } };
  if (url.username !== '' || url.password !== '') return { fault: { kind: 'credentials' } };
  const prefix = url.pathname.replace(/\/+$/, '');
  // Every path dus-sync sends starts with /api/v1: a base URL ending in it would ask for /api/v1/api/v1/...
  if (/\/api\/v1$/i.test(prefix)) return { fault: { kind: 'api-v1', url: `${url.origin}${prefix}`, base: `${url.origin}${prefix.slice(0, -'/api/v1'.length)}` } };
  return { url, prefix };
}

/**
 * Why parseBaseUrl would refuse this base URL under any flags, or undefined when it would take
 * it (with --insecure-http, if it is plain http to a host that is not loopback). The config
 * loader asks this when it reads base_url and DUS_BASE_URL, so validate refuses what plan would.
 */
export function baseUrlFault(raw: string): BaseUrlFault | undefined {
  return checkBaseUrl(raw).fault;
}

/** parseBaseUrl's sentence for a fault (it quotes the value: the loader words its own for DUS_BASE_URL). */
export function baseUrlFaultMessage(raw: string, fault: BaseUrlFault): string {
  switch (fault.kind) {
    case 'not-a-url':
      return `the API base URL "${raw}" is not a URL: write it as https://host[/prefix]`;
    case 'scheme':
      return `the API base URL must start with https:// (got ${fault.protocol}//${fault.host})`;
    case 'credentials':
      return 'the API base URL must not hold a user name or password: keys go in the config';
    case 'api-v1':
      return `the API base URL ${fault.url} should not include /api/v1; dus-sync adds it: set base_url (or DUS_BASE_URL) to ${fault.base}`;
  }
}

export function parseBaseUrl(raw: string, insecureHttp: boolean): BaseUrl {
  const checked = checkBaseUrl(raw);
  if (checked.fault !== undefined) throw new UserError(baseUrlFaultMessage(raw, checked.fault));
  const { url, prefix } = checked;
  if (url.protocol === 'http:' && !insecureHttp && !isLoopbackHost(url.hostname)) {
    throw new UserError(`refusing to send API keys over plain http to ${url.host}: use https:// or pass --insecure-http`);
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
