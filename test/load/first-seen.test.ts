// The duplicate check's table (src/load/first-seen.ts) answers as a Map would, whatever the keys
// and however they collide: the usual seeded hash, a hash of a few bits (long runs of occupied
// slots), and one hash for every key (every key past MAX_PROBES goes to the overflow Map), across
// the table's growth.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FirstSeen, MAX_PROBES, seededHash, type KeyHash } from '../../src/load/first-seen.js';

const hashes: Record<string, KeyHash> = {
  seeded: seededHash,
  fewBits: (key, seed) => seededHash(key, seed) & 7,
  constant: () => 12345,
};

/** Runs `keys` through the table and a Map side by side: every find agrees, every miss is added. */
function agree(keys: readonly string[], hash: KeyHash): void {
  const table = new FirstSeen({ hash });
  const map = new Map<string, number>();
  keys.forEach((key, i) => {
    const want = map.get(key) ?? -1;
    expect(table.find(key)).toBe(want);
    if (want < 0) {
      table.add(key, i * 3);
      map.set(key, i * 3);
    }
  });
  expect(table.size).toBe(map.size);
  for (const [key, value] of map) expect(table.find(key)).toBe(value);
  expect(table.find('\u0000never added')).toBe(-1);
}

describe('FirstSeen', () => {
  for (const [name, hash] of Object.entries(hashes)) {
    it(`answers as a Map does (${name} hash)`, () => {
      fc.assert(fc.property(
        fc.array(fc.string({ unit: fc.constantFrom('1', '2', '.', 'a', 'é', '\u{1F600}'), maxLength: 6 }), { maxLength: 400, size: 'max' }),
        (keys) => agree(keys, hash),
      ), { numRuns: 60 });
    });
  }

  it('keeps thousands of keys that all collide, past MAX_PROBES and across growth', () => {
    const keys = Array.from({ length: 5000 }, (_, i) => `1.0.${i}`);
    agree([...keys, ...keys.slice(0, 100), ...keys.slice(-100)], hashes.constant!);
    expect(MAX_PROBES).toBeLessThan(5000);
  });

  it('keeps 200,000 distinct version numbers with the seeded hash', () => {
    const table = new FirstSeen();
    let found = 0;
    for (let i = 0; i < 200_000; i++) {
      const key = `${i % 9}.${i % 97}.${i}`;
      if (table.find(key) !== -1) found++;
      table.add(key, i);
    }
    expect(found).toBe(0);
    expect(table.size).toBe(200_000);
    for (let i = 0; i < 200_000; i += 997) expect(table.find(`${i % 9}.${i % 97}.${i}`)).toBe(i);
  });

  it('refuses to record a key twice, or a negative value', () => {
    const table = new FirstSeen();
    table.add('a', 1);
    expect(() => table.add('a', 2)).toThrow(/recorded already/);
    expect(() => table.add('b', -1)).toThrow(/>= 0/);
    expect(table.find('a')).toBe(1);
  });

  it('seeds each table apart, so a key set made to collide under one seed does not under the next', () => {
    expect(seededHash('1.0.0', 1)).not.toBe(seededHash('1.0.0', 2));
  });
});
