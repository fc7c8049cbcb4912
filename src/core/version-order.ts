// The ordering of firmware versions that dependency checks use (docs/rollout-control.md):
// a version that parses as a semantic version (semver.org 2.0.0) is ordered by semver rules; any
// other is ordered naturally (runs of digits as numbers, the rest by code unit). Both are one
// lexicographic comparison of a key, so the order is a total preorder even across the two kinds:
//   1. the core (MAJOR.MINOR.PATCH of a semver, the whole string otherwise), compared naturally;
//   2. a release after its pre-releases (a non-semver string counts as a release);
//   3. pre-release identifiers by semver rules.
// Build metadata (+…) is ignored, and numbers compare by value ("01" equals "1").

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/;

interface VersionKey {
  readonly core: string;
  /** The core in runs of digits and of other text (natural order compares these). */
  readonly chunks: readonly string[];
  /** Pre-release identifiers; undefined for a release (or a non-semver string). */
  readonly pre?: readonly string[];
}

/**
 * Keys of the versions seen lately: a dependency check compares each of a large tenant's
 * versions many times, and parsing them on every comparison was most of its time. Bounded
 * (cleared when full); a pure cache, so the order does not depend on it.
 */
const KEYS = new Map<string, VersionKey>();
const MAX_KEYS = 50_000;

function keyOf(version: string): VersionKey {
  const known = KEYS.get(version);
  if (known !== undefined) return known;
  const m = SEMVER.exec(version);
  const core = m ? `${m[1]}.${m[2]}.${m[3]}` : version;
  const key: VersionKey = { core, chunks: core.match(CHUNK) ?? [], ...(m && m[4] !== undefined ? { pre: m[4].split('.') } : {}) };
  if (KEYS.size >= MAX_KEYS) KEYS.clear();
  KEYS.set(version, key);
  return key;
}

/** Whether a version parses as a semantic version. */
export function isSemver(version: string): boolean {
  return SEMVER.test(version);
}

function sign(n: number): number {
  return n < 0 ? -1 : n > 0 ? 1 : 0;
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Digit strings by value, without a size limit. */
function compareDigits(a: string, b: string): number {
  const x = a.replace(/^0+(?=\d)/, '');
  const y = b.replace(/^0+(?=\d)/, '');
  return sign(x.length - y.length) || compareCodeUnits(x, y);
}

const CHUNK = /\d+|\D+/g;

/** Natural order: runs of digits by value and before text; text runs by code unit; a prefix first. */
export function compareNatural(a: string, b: string): number {
  return compareChunks(a.match(CHUNK) ?? [], b.match(CHUNK) ?? []);
}

function compareChunks(x: readonly string[], y: readonly string[]): number {
  for (let i = 0; i < x.length && i < y.length; i++) {
    const p = x[i]!;
    const q = y[i]!;
    const pd = p.charCodeAt(0) >= 48 && p.charCodeAt(0) <= 57;
    const qd = q.charCodeAt(0) >= 48 && q.charCodeAt(0) <= 57;
    const c = pd && qd ? compareDigits(p, q) : pd ? -1 : qd ? 1 : compareCodeUnits(p, q);
    if (c !== 0) return c;
  }
  return sign(x.length - y.length);
}

function comparePrerelease(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < a.length && i < b.length; i++) {
    const p = a[i]!;
    const q = b[i]!;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    const c = pn && qn ? compareDigits(p, q) : pn ? -1 : qn ? 1 : compareCodeUnits(p, q);
    if (c !== 0) return c;
  }
  return sign(a.length - b.length);
}

/**
 * The three numbers of a plain `MAJOR.MINOR.PATCH` (digits only, each at most 15 digits, so a
 * number holds them exactly), written into `out`; false for anything else. Most versions are
 * plain, and a dependency check at 200,000 records compared them through keyOf (a RegExp and
 * three arrays per version: the cache of keys cannot hold a tenant that large).
 */
function plainTriple(v: string, out: number[]): boolean {
  let part = 0;
  let n = 0;
  let digits = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (++digits > 15) return false;
      n = n * 10 + (c - 48);
    } else if (c === 46 && digits > 0 && part < 2) {
      out[part++] = n;
      n = 0;
      digits = 0;
    } else {
      return false;
    }
  }
  if (digits === 0 || part !== 2) return false;
  out[2] = n;
  return true;
}

const PA = [0, 0, 0];
const PB = [0, 0, 0];

/**
 * Negative, zero or positive as version a is lower than, equivalent to or higher than b. Two
 * plain `MAJOR.MINOR.PATCH` versions compare by their numbers (what the general order gives
 * them: leading zeros make a version non-semver, whose natural order compares the same numbers
 * by value; test/core/version-order.property.test.ts holds the two equal).
 */
export function compareVersions(a: string, b: string): number {
  if (a === b) return 0;
  if (plainTriple(a, PA) && plainTriple(b, PB)) return sign(PA[0]! - PB[0]!) || sign(PA[1]! - PB[1]!) || sign(PA[2]! - PB[2]!);
  return compareGeneral(a, b);
}

/** The order of the header, through the keys (no fast path). */
export function compareGeneral(a: string, b: string): number {
  if (a === b) return 0;
  const x = keyOf(a);
  const y = keyOf(b);
  const core = compareChunks(x.chunks, y.chunks);
  if (core !== 0) return core;
  if (x.pre === undefined || y.pre === undefined) return x.pre === y.pre ? 0 : x.pre === undefined ? 1 : -1;
  return comparePrerelease(x.pre, y.pre);
}

/** Whether `version` satisfies a dependency's min_version: it is that version or later. */
export function atLeast(version: string, min: string): boolean {
  return compareVersions(version, min) >= 0;
}
