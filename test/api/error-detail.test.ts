// Error details as the user sees them: redacted, then cut to MAX_DETAIL_CHARS whether the API
// answered JSON or text, so that a server's 20 MB detail never becomes a 20 MB log line.
import { afterEach, describe, expect, it } from 'vitest';
import { errorBody, httpError, MAX_DETAIL_CHARS } from '../../src/api/errors.js';
import { clearSecretsForTests, registerSecret } from '../../src/redact.js';

describe('error details are cut, after redaction', () => {
  afterEach(() => clearSecretsForTests());

  it('cuts a 20 MB JSON detail to a few hundred characters', () => {
    const body = JSON.stringify({ detail: 'x'.repeat(20_000_000) });
    const err = httpError({ tenant: 'acme', endpoint: 'GET /api/v1/actions/1', status: 400, bodyText: body, retryable: false, attempts: 1 });
    expect(err.message.length).toBeLessThan(MAX_DETAIL_CHARS + 100);
    expect(err.message).toMatch(/^the API rejected GET \/api\/v1\/actions\/1 for tenant acme \(400\): x+…$/);
    expect(JSON.stringify(err.details.detail).length).toBeLessThan(MAX_DETAIL_CHARS + 50);
  });

  it('cuts many fields, long keys and deep nesting alike', () => {
    const fields = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`field_${i}`, ['This field is required.']]));
    // JSON.parse takes 100,000 levels; JSON.stringify of them overflows the stack.
    const nested = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    for (const text of [JSON.stringify(fields), JSON.stringify({ ['k'.repeat(100_000)]: 1 }), nested, JSON.stringify(Array.from({ length: 100_000 }, () => 1))]) {
      const err = httpError({ tenant: 'acme', endpoint: 'PUT /api/v1/firmwares/1', status: 400, bodyText: text, retryable: false, attempts: 1 });
      expect(err.message.length).toBeLessThan(MAX_DETAIL_CHARS + 100);
      expect(JSON.stringify(err.details.detail).length).toBeLessThan(3 * MAX_DETAIL_CHARS);
    }
  });

  it('keeps a short field map whole', () => {
    const body = { uncompressed_size: ['A valid integer is required.'] };
    expect(errorBody(JSON.stringify(body))).toEqual(body);
  });

  it('never shows half a key that sat across the cut', () => {
    const key = 'sk-live-9f8e7d6c5b4a39281706';
    registerSecret(key);
    for (let at = MAX_DETAIL_CHARS - key.length; at <= MAX_DETAIL_CHARS; at++) {
      const detail = `${'.'.repeat(at)}${key} and more`;
      for (const text of [JSON.stringify({ detail }), detail]) {
        const err = httpError({ tenant: 'acme', endpoint: 'GET /x', status: 400, bodyText: text, retryable: false, attempts: 1 });
        const shown = `${err.message}${JSON.stringify(err.details.detail)}`;
        expect(shown).not.toContain(key.slice(0, 8));
      }
    }
  });

  it('keeps a "__proto__" key of the server as a plain key', () => {
    const value = errorBody('{"__proto__": {"polluted": true}, "detail": "no"}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(value)).toEqual(['__proto__', 'detail']);
  });
});
