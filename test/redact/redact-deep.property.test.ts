// redactDeep decides "nothing here holds a key" by one search over all of a value's strings
// (src/redact.ts holdsNoKey); it must give exactly what walking every string gives, whatever the
// strings hold: keys whole or in part, escapes, encodings, keys as object and Map keys.
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { clearSecretsForTests, redact, redactDeep, registerSecret } from '../../src/redact.js';

afterEach(() => clearSecretsForTests());

const KEY = 'k3y-Secret_value-0042';

/** The reference: every string, object key and Map key through redact, one by one. */
function reference(v: unknown, found: string[], path = ''): unknown {
  if (typeof v === 'string') {
    const out = redact(v);
    if (out !== v) found.push(path);
    return out;
  }
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x, i) => reference(x, found, `${path}[${i}]`));
  const key = (k: string): string => {
    const out = redact(k);
    if (out !== k) found.push(`${path} key`);
    return out;
  };
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [typeof k === 'string' ? key(k) : k, reference(x, found, `${path}[${String(k)}]`)]));
  // Two keys that differ only in their secret part: redactDeep numbers the second.
  const seen = new Set<string>();
  const entries = Object.entries(v).map(([k, x]) => {
    let out = key(k);
    if (out !== k) for (let n = 2; seen.has(out); n++) out = `[REDACTED]#${n}`;
    seen.add(out);
    return [out, reference(x, found, `${path}.${k}`)] as const;
  });
  return Object.fromEntries(entries);
}

describe('redactDeep', () => {
  const piece = fc.oneof(
    { weight: 6, arbitrary: fc.stringMatching(/^[a-z0-9 ._-]{0,12}$/) },
    fc.constantFrom(KEY, KEY.slice(3, 14), encodeURIComponent(KEY), Buffer.from(KEY).toString('base64'), KEY.replace(/S/, '%53'), KEY.replace(/S/, '\\u0053'), KEY.replace(/S/, '&#83;'), KEY.replace(/-/g, ' '), '%', '&amp;', '\\n'),
  );
  const text = fc.array(piece, { maxLength: 3 }).map((p) => p.join(''));
  const value = fc.letrec((tie) => ({
    node: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('node'), { maxLength: 4 }), fc.dictionary(text, tie('node'), { maxKeys: 4 }),
      fc.array(fc.tuple(text, tie('node')), { maxLength: 3 }).map((e) => new Map(e))),
  })).node;

  it('gives what redacting every string one by one gives, and shares the value when nothing changed (property)', () => {
    registerSecret(KEY);
    fc.assert(fc.property(value, (v) => {
      const found: string[] = [];
      const want = reference(v, found);
      const seen: string[] = [];
      const got = redactDeep(v, (p) => seen.push(p));
      expect(got).toEqual(want);
      expect(seen.length).toBe(found.length);
      if (found.length === 0) expect(got).toBe(v);
      else expect(got).not.toBe(v);
    }), { numRuns: 1500 });
  });

  it('finds a key in a large plan-like value, and returns a value without one as it is', () => {
    registerSecret(KEY);
    const changes = Array.from({ length: 5000 }, (_, i) => ({ key: `1.0.${i}`, before: { size: i, deps: [] }, after: { size: i + 1, note: 'n' } }));
    const plan = { changes };
    expect(redactDeep(plan)).toBe(plan);
    changes[4321]!.after.note = `token ${KEY}`;
    const out = redactDeep(plan) as typeof plan;
    expect(out).not.toBe(plan);
    expect(out.changes[4321]!.after.note).toBe('token [REDACTED]');
    expect(out.changes[0]).toBe(changes[0]);
  });
});
