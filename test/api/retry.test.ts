import { describe, expect, it } from 'vitest';
import { backoffDelay, classifyNetworkError, parseRetryAfter } from '../../src/api/retry.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');

describe('parseRetryAfter', () => {
  it.each([
    ['3', 3000],
    ['0', 0],
    ['1.5', 1500],
    ['Thu, 01 Jan 2026 00:00:07 GMT', 7000],
    ['Wed, 31 Dec 2025 23:59:00 GMT', 0],
    ['3600', 60_000],
  ])('%s → %d ms', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  it.each([undefined, '', 'soon', '-1'])('ignores %s', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });
});

describe('backoffDelay', () => {
  it('is full jitter under an exponential ceiling capped at 10 s', () => {
    expect(backoffDelay(0, () => 0.999)).toBe(199);
    expect(backoffDelay(3, () => 0.5)).toBe(800);
    expect(backoffDelay(20, () => 0.5)).toBe(5000);
    expect(backoffDelay(5, () => 0)).toBe(0);
  });
});

describe('classifyNetworkError', () => {
  const err = (code: string): Error => Object.assign(new Error(code), { code });
  it('connection refused and connect timeouts were not sent and are retryable', () => {
    expect(classifyNetworkError(err('ECONNREFUSED'))).toMatchObject({ sent: false, retryable: true });
    expect(classifyNetworkError(err('UND_ERR_CONNECT_TIMEOUT'))).toMatchObject({ sent: false, retryable: true });
  });
  it('resets and response timeouts may have been sent', () => {
    for (const code of ['ECONNRESET', 'UND_ERR_SOCKET', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']) {
      expect(classifyNetworkError(err(code))).toMatchObject({ sent: true, retryable: true });
    }
  });
  it('looks into the cause', () => {
    expect(classifyNetworkError(new Error('fetch failed', { cause: err('ECONNREFUSED') }))).toMatchObject({ code: 'ECONNREFUSED', sent: false });
  });
  it('TLS failures are neither sent nor retried', () => {
    expect(classifyNetworkError(err('UNABLE_TO_VERIFY_LEAF_SIGNATURE'))).toMatchObject({ sent: false, retryable: false });
  });
  it('a plain-http answer to the TLS hello is told apart from a certificate problem, by code or by message (EPROTO)', () => {
    expect(classifyNetworkError(err('ERR_SSL_WRONG_VERSION_NUMBER'))).toMatchObject({ sent: false, retryable: false, plainHttp: true });
    expect(classifyNetworkError(err('ERR_SSL_PACKET_LENGTH_TOO_LONG'))).toMatchObject({ plainHttp: true });
    const eproto = Object.assign(new Error('write EPROTO 40E8:error:0A0000C6:SSL routines:tls_get_more_records:packet length too long'), { code: 'EPROTO' });
    expect(classifyNetworkError(new Error('fetch failed', { cause: eproto }))).toMatchObject({ code: 'EPROTO', sent: false, plainHttp: true });
    expect(classifyNetworkError(err('CERT_HAS_EXPIRED')).plainHttp).toBeUndefined();
  });
});
