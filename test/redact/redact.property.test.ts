// Properties of redact(), over random keys (8 to 64 characters of the alphabets real keys use)
// and random surrounding text: no 8-character run of the key, in any encoding, survives; and
// text that holds no such run comes back unchanged.
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { clearSecretsForTests, redact, registerSecret } from '../../src/redact.js';

afterEach(() => clearSecretsForTests());

const KEY_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+/=~:"\\% ';
const key = fc.string({ unit: fc.constantFrom(...KEY_CHARS), minLength: 8, maxLength: 64 });
const around = fc.string({ maxLength: 80 });
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const b64url = (s: string) => b64(s).replace(/\+/g, '-').replace(/\//g, '_');

type Encoding = (k: string) => string;
const ENCODINGS: Record<string, Encoding> = {
  raw: (k) => k,
  json: (k) => JSON.stringify(k).slice(1, -1),
  jsonTwice: (k) => JSON.stringify(JSON.stringify(k)).slice(1, -1),
  percent: (k) => encodeURIComponent(k),
  form: (k) => new URLSearchParams({ k }).toString().slice(2),
  base64: (k) => b64(k),
  base64NoPad: (k) => b64(k).replace(/=+$/, ''),
  base64url: (k) => b64url(k),
  base64Shift1: (k) => b64(`~${k}`),
  base64Shift2: (k) => b64url(`~~${k}`),
};

/** The 8-character runs a reader could take the key back from, for the given encoding. */
function runs(k: string, name: string): string[] {
  const encoded = ENCODINGS[name]!(k);
  // base64 mixes the key with what surrounds it in its first and last groups.
  const body = name.startsWith('base64') ? encoded.slice(4, -4) : encoded;
  const out: string[] = [];
  for (let i = 0; i + 8 <= body.length; i++) out.push(body.slice(i, i + 8));
  return out;
}

describe('redact, for any key and any text around it', () => {
  it('leaves no 8-character run of the key, in any encoding, whole or cut short', () => {
    fc.assert(fc.property(key, around, around, fc.constantFrom(...Object.keys(ENCODINGS)), fc.nat(64), (k, before, after, name, cutAt) => {
      clearSecretsForTests();
      registerSecret(k);
      // A server that cuts its message short: the key is cut too, but 8+ characters remain.
      const shown = cutAt >= 8 && cutAt < k.length ? k.slice(0, cutAt) : k;
      const text = `${before} ${ENCODINGS[name]!(shown)} ${after}`;
      const out = redact(text);
      for (const r of runs(shown, name)) {
        if (before.includes(r) || after.includes(r)) continue;
        expect(out, `${name} of ${JSON.stringify(shown)}`).not.toContain(r);
      }
    }), { numRuns: 3000 });
  });

  it('changes nothing in text that holds no 8-character run of the key in any encoding', () => {
    fc.assert(fc.property(key, fc.string({ maxLength: 300 }), (k, text) => {
      const forms = Object.values(ENCODINGS).map((e) => e(k));
      const risky = (t: string) => {
        const candidates = [t, decodeLoosely(t)];
        return forms.some((f) => {
          for (let i = 0; i + 8 <= f.length; i++) if (candidates.some((c) => c.includes(f.slice(i, i + 8)))) return true;
          return false;
        });
      };
      fc.pre(!risky(text));
      clearSecretsForTests();
      registerSecret(k);
      expect(redact(text)).toBe(text);
    }), { numRuns: 3000 });
  });

  it('changes nothing in ordinary output text (plans, logs, JSON) for any key', () => {
    const sample = [
      '{"level":"info","msg":"reconcile success: in sync (12 unchanged)","trigger":"interval"}',
      '  ~ firmware 2.4.1 (modem)\n      is_deactivated: false → true',
      '::error file=tenants/a.yaml,line=3,col=5::unknown field %22x%22',
      '| acme | 3 | 4 | 0 | 0 | 5 |  &lt;code&gt; \\u001b[2J',
    ].join('\n');
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 16, maxLength: 64 }), (k) => {
      clearSecretsForTests();
      registerSecret(k);
      expect(redact(sample)).toBe(sample);
    }), { numRuns: 500 });
  });
});

/** What a reader's decoder might make of the text (for the precondition only). */
function decodeLoosely(t: string): string {
  let out = t;
  for (let i = 0; i < 3; i++) {
    out = out.replace(/%([0-7][0-9a-fA-F])/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\u([0-9a-fA-F]{4})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\x([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\(["\\/'bfnrt])/g, (_m, c: string) => ({ b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' } as Record<string, string>)[c] ?? c)
      .replace(/&#(\d{1,5});|&#[xX]([0-9a-fA-F]{1,4});|&(amp|lt|gt|quot|apos);/g, (_m, d?: string, x?: string, n?: string) =>
        d ? String.fromCharCode(Number(d)) : x ? String.fromCharCode(parseInt(x, 16)) : ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" } as Record<string, string>)[n!]!);
  }
  return out;
}
