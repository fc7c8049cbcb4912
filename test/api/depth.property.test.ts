// The client refuses answers nested deeper than MAX_JSON_DEPTH. It counts the brackets of the
// text outside strings (depthOfText) instead of walking the parsed value: the two must agree on
// every JSON text, strings full of brackets, quotes and backslashes included.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { depthOfText, MAX_JSON_DEPTH } from '../../src/api/client.js';

/** The walk of the parsed value that the client did before: the reference. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value as Record<string, unknown>);
  return 1 + children.reduce((m: number, c) => Math.max(m, depthOf(c)), 0);
}

const tricky = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', ' ', ':', ',', '\u00e9', '\n') });

describe('depthOfText', () => {
  it('is the depth of the parsed value, for any JSON text', () => {
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, tricky, fc.integer(), fc.constant(null), fc.boolean(),
        fc.array(tie('node'), { maxLength: 4 }), fc.dictionary(tricky, tie('node'), { maxKeys: 4 })),
    })).node;
    fc.assert(fc.property(value, fc.boolean(), (v, spaced) => {
      const text = JSON.stringify(v, null, spaced ? 2 : undefined);
      expect(depthOfText(text, 1000)).toBe(depthOf(JSON.parse(text)));
    }), { numRuns: 3000 });
  });

  it('stops past the limit, and counts only what is outside strings', () => {
    const deep = '['.repeat(100) + ']'.repeat(100);
    expect(depthOfText(deep, MAX_JSON_DEPTH)).toBe(MAX_JSON_DEPTH + 1);
    expect(depthOfText(JSON.stringify({ a: '[[[[{{{{"\\\\' }), 10)).toBe(1);
    expect(depthOfText('"[[["', 10)).toBe(0);
  });
});
