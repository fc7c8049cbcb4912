// The version ordering of dependency checks (docs/rollout-control.md): semver where both parse,
// natural otherwise, and a total preorder across the two.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { atLeast, compareGeneral, compareNatural, compareVersions, isSemver } from '../../src/core/version-order.js';

const semver = fc.tuple(fc.nat(30), fc.nat(30), fc.nat(30), fc.option(fc.array(fc.oneof(fc.nat(5).map(String), fc.constantFrom('alpha', 'beta', 'rc')), { minLength: 1, maxLength: 3 }), { nil: undefined }))
  .map(([a, b, c, pre]) => `${a}.${b}.${c}${pre ? `-${pre.join('.')}` : ''}`);
const loose = fc.stringMatching(/^[0-9a-z.\-_]{0,10}$/);
const version = fc.oneof(semver, loose, fc.constantFrom('1.0', '1.0.0', 'v2', '2024.06', '1.0.0-rc.1', '01.2'));
const sign = (n: number) => Math.sign(n);

describe('compareVersions', () => {
  it('is reflexive, antisymmetric and transitive (a total preorder), across semver and other strings', () => {
    fc.assert(fc.property(version, version, version, (a, b, c) => {
      expect(compareVersions(a, a)).toBe(0);
      expect(sign(compareVersions(a, b)) + sign(compareVersions(b, a))).toBe(0);
      if (compareVersions(a, b) <= 0 && compareVersions(b, c) <= 0) expect(compareVersions(a, c)).toBeLessThanOrEqual(0);
    }), { numRuns: 2000 });
  });

  it('orders semantic versions as semver.org says', () => {
    const ordered = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '1.2.0', '1.10.0', '2.0.0'];
    for (let i = 1; i < ordered.length; i++) expect(compareVersions(ordered[i - 1]!, ordered[i]!), `${ordered[i - 1]} < ${ordered[i]}`).toBeLessThan(0);
    expect(compareVersions('1.0.0+build.1', '1.0.0+build.2')).toBe(0);
  });

  it('agrees with the numbers of MAJOR.MINOR.PATCH', () => {
    fc.assert(fc.property(fc.nat(1000), fc.nat(1000), fc.nat(1000), fc.nat(1000), fc.nat(1000), fc.nat(1000), (a, b, c, x, y, z) => {
      const expected = sign(a - x) || sign(b - y) || sign(c - z);
      expect(sign(compareVersions(`${a}.${b}.${c}`, `${x}.${y}.${z}`))).toBe(expected);
    }));
  });

  it('orders other strings naturally: numbers by value, a prefix first', () => {
    expect(compareNatural('v2', 'v10')).toBeLessThan(0);
    expect(compareNatural('2024.06', '2024.10')).toBeLessThan(0);
    expect(compareVersions('1.0', '1.0.1')).toBeLessThan(0);
    expect(compareVersions('01.2', '1.2')).toBe(0);
    expect(isSemver('01.2.3')).toBe(false);
    expect(atLeast('1.10', '1.9')).toBe(true);
    expect(atLeast('1.2.0-rc.1', '1.2.0')).toBe(false);
  });

  it('the fast path for plain MAJOR.MINOR.PATCH gives exactly the general order', () => {
    // Leading zeros, long numbers (past what a number holds), and near-plain strings that must
    // take the general path.
    const digits = fc.oneof(fc.nat(40).map(String), fc.stringMatching(/^0[0-9]{0,3}$/), fc.stringMatching(/^[0-9]{14,22}$/));
    const plain = fc.tuple(digits, digits, digits).map(([a, b, c]) => `${a}.${b}.${c}`);
    const near = fc.oneof(plain.map((v) => `${v}.1`), plain.map((v) => `${v}-rc.1`), plain.map((v) => `${v}+b`), plain.map((v) => `v${v}`), fc.constantFrom('1..2', '.1.2', '1.2.', '1.2', ''));
    const any = fc.oneof(plain, plain, near, version);
    fc.assert(fc.property(any, any, (a, b) => {
      expect(sign(compareVersions(a, b))).toBe(sign(compareGeneral(a, b)));
    }), { numRuns: 5000 });
  });
});
