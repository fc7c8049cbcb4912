import { describe, expect, it } from 'vitest';
import { apiPath, baseUrlFault, isLoopbackHost, parseBaseUrl, segment } from '../../src/api/url.js';
import { UserError } from '../../src/errors.js';

describe('parseBaseUrl', () => {
  it('refuses plain http to a non-loopback host', () => {
    expect(() => parseBaseUrl('http://dus.example.com', false)).toThrow(UserError);
    expect(() => parseBaseUrl('http://dus.example.com:8080/x', false)).toThrow(
      'refusing to send API keys over plain http to dus.example.com:8080: use https:// or pass --insecure-http',
    );
  });
  it('allows plain http to loopback, or anywhere with insecureHttp', () => {
    for (const url of ['http://127.0.0.1:9', 'http://127.8.9.10', 'http://localhost:1', 'http://[::1]:80']) {
      expect(parseBaseUrl(url, false).origin).toBe(new URL(url).origin);
    }
    expect(parseBaseUrl('http://dus.example.com', true).host).toBe('dus.example.com');
  });
  it('keeps a path prefix without its trailing slash', () => {
    const base = parseBaseUrl('https://h.example/dus/', false);
    expect(base.prefix).toBe('/dus');
    expect(apiPath(base, '/api/v1/firmware-bundles')).toBe('/dus/api/v1/firmware-bundles');
    expect(apiPath(parseBaseUrl('https://h.example', false), '/api/v1/x')).toBe('/api/v1/x');
  });
  it('refuses other schemes, non-URLs and credentials in the URL', () => {
    expect(() => parseBaseUrl('ftp://h', false)).toThrow(UserError);
    expect(() => parseBaseUrl('not a url', false)).toThrow(UserError);
    expect(() => parseBaseUrl('https://u:p@h', false)).toThrow(UserError);
  });
});

describe('baseUrlFault', () => {
  it('names what parseBaseUrl refuses whatever the flags, and nothing it takes with --insecure-http', () => {
    for (const url of ['http://127.0.0.1:99999', 'http://[::1', 'http://a b']) {
      expect(baseUrlFault(url)).toEqual({ kind: 'not-a-url' });
      expect(() => parseBaseUrl(url, true)).toThrow(UserError);
    }
    expect(baseUrlFault('https://u:p@h')).toEqual({ kind: 'credentials' });
    expect(baseUrlFault('https://h/x/API/v1/')).toEqual({ kind: 'api-v1', url: 'https://h/x/API/v1', base: 'https://h/x' });
    // Plain http to another host is for --insecure-http to allow, not a fault of the URL.
    for (const url of ['http://127.0.0.1:65535', 'http://[::1]:8080', 'https://updates.example.com/dus/', 'http://dus.example.com']) {
      expect(baseUrlFault(url)).toBeUndefined();
      expect(parseBaseUrl(url, true).origin).toBe(new URL(url).origin);
    }
  });
});

describe('isLoopbackHost', () => {
  it.each([['127.0.0.1', true], ['[::1]', true], ['localhost', true], ['128.0.0.1', false], ['localhost.example.com', false], ['10.0.0.1', false],
    // Only the name itself: a resolver need not map x.localhost here (http:// would carry the key in clear).
    ['x.localhost', false], ['api.localhost', false]])(
    '%s → %s',
    (h, want) => expect(isLoopbackHost(h)).toBe(want),
  );
});

describe('segment', () => {
  it.each([
    ['1.0/../x', '1.0%2F..%2Fx'],
    ['a b', 'a%20b'],
    ['ü', '%C3%BC'],
    ['#1', '%231'],
    ['?q=1', '%3Fq%3D1'],
    ['..', '%2E%2E'],
    ['.', '%2E'],
  ])('%s → %s', (value, encoded) => {
    expect(segment(value)).toBe(encoded);
    expect(decodeURIComponent(segment(value))).toBe(value);
  });
});
