// Pure: matchers for `resources` globs whose work is bounded. picomatch's regular expressions
// backtrack: a glob with nested repetition (`+(*a)b.yaml`, `{a,aa}` thirty times, many `*`)
// against a long file name ran for minutes, and the repository chooses both. V8 has a matcher
// that does not backtrack, which it falls back to when a regular expression backtracks too much
// (--enable-experimental-regexp-engine-on-excessive-backtracks, set at start by the CLI,
// src/cli/short-run.ts), but not for expressions with lookarounds. picomatch adds two kinds of
// those: guards that keep `.` and `..` names from matching, and `(?=.)`, "a character follows".
// Listed paths hold no `.`, `..` or dot-names (the walk drops them), no empty names and no
// trailing '/', so the guards go, and `(?=.)` goes or becomes a `+` where that is the same on such
// paths (the property test in test/load/glob-match.test.ts holds this against picomatch). What
// keeps a lookaround is a negated extglob (`!(archive)`): src/load/resource-globs.ts bounds those.
import { setFlagsFromString } from 'node:v8';
import picomatch from 'picomatch';

const DOT_GUARDS = ['(?!\\.{1,2}(?:\\/|$))', '(?!(?:^|\\/)\\.{1,2}(?:\\/|$))'];
const FOLLOWS = '(?=.)';
const LAZY_NAME = '[^/]*?';
/** How picomatch (guards removed) writes a leading `**\/`: the start, a '/', or any folders and a '/'. */
const GLOBSTAR_START = '(?:^|\\/|(?:(?:.)*?)\\/)';
/** How it writes an inner `/**\/`: folders between two '/', one '/', or the end. */
const GLOBSTAR_OR_END = '(?:\\/(?:(?:.)*?)\\/|\\/|$)';

/** The length of the atom at `at` in a regular expression's source that matches exactly one character, or 0 when there is none there. */
function oneCharAtom(source: string, at: number): number {
  const c = source[at];
  if (c === undefined) return 0;
  let end: number;
  if (c === '\\') end = at + 2;
  else if (c === '[') {
    end = at + 1;
    if (source[end] === '^') end++;
    if (source[end] === ']') end++;
    while (end < source.length && source[end] !== ']') end += source[end] === '\\' ? 2 : 1;
    end++;
  } else if (source.startsWith('(?:\\[', at)) {
    // picomatch's bracket, as itself or as a class: `(?:\[ab\]|[ab])`.
    const close = source.indexOf('])', at);
    if (close < 0) return 0;
    end = close + 2;
    if (!/^\(\?:\\\[[^()]*\\\]\|\[[^()]*\]\)$/.test(source.slice(at, end))) return 0;
  } else if (/[A-Za-z0-9_\-~%@#&=,;:'"<>]/.test(c)) end = at + 1;
  else return 0;
  // A quantifier that lets it match nothing makes it no proof that a character follows.
  const q = source[end];
  return q === '*' || q === '?' || q === '{' ? 0 : end - at;
}

/**
 * The regular expression of `glob` for listed paths. `(?=.)` is dropped at the start (a listed
 * path is never empty) and where the next atom, past an optional `*`, takes a character anyway;
 * `(?=.)[^/]*?` becomes `[^/]+?` before a '/' or the end (a name is never empty there); anywhere
 * else it stays.
 */
export function globRegExp(glob: string): RegExp {
  const re = picomatch.makeRe(glob, { dot: true });
  let source = re.source;
  for (const g of DOT_GUARDS) source = source.split(g).join('');
  let out = '';
  let at = 0;
  for (let i = source.indexOf(FOLLOWS); i >= 0; i = source.indexOf(FOLLOWS, at)) {
    out += source.slice(at, i);
    // `\(?=.)` is an escaped '(' made optional (picomatch writes that for `*(**`), not a lookahead.
    if (/(?:^|[^\\])(?:\\\\)*\\$/.test(out)) {
      out += '(';
      at = i + 1;
      continue;
    }
    at = i + FOLLOWS.length;
    // After a '/', or at the start: a character follows on every listed path.
    if (out.endsWith('\\/') || out === '^(?:' || out.endsWith(GLOBSTAR_START)) continue;
    // After `**`'s "a folder, or nothing, or the end": the end cannot be followed by a character.
    if (out.endsWith(GLOBSTAR_OR_END)) {
      out = out.slice(0, -GLOBSTAR_OR_END.length) + GLOBSTAR_OR_END.replace('|$)', ')');
      continue;
    }
    const star = source.startsWith(LAZY_NAME, at) ? LAZY_NAME.length : 0;
    const next = at + star;
    if (oneCharAtom(source, next) > 0) continue;
    if (star > 0 && /^(?:\\\/|\$|\)\$)/.test(source.slice(next))) {
      out += '[^/]+?';
      at = next;
      continue;
    }
    out += FOLLOWS;
  }
  out += source.slice(at);
  return linear(out, re.flags) ?? new RegExp(out, re.flags);
}

let linearFlag: boolean | undefined;

/**
 * The expression compiled for V8's linear engine (flag `l`), or undefined when V8 cannot run it in
 * linear time (a lookaround, a backreference, repetition nested too deeply) or has no such engine.
 * The engine's flag is turned on here, once, so that every caller (the CLI, watch, tests) gets it.
 */
function linear(source: string, flags: string): RegExp | undefined {
  if (linearFlag === undefined) {
    try {
      setFlagsFromString('--enable-experimental-regexp-engine');
      // eslint-disable-next-line no-invalid-regexp -- V8's flag for its linear engine, which the line above turns on
      linearFlag = new RegExp('a', 'l').flags.includes('l');
    } catch {
      linearFlag = false;
    }
  }
  if (!linearFlag) return undefined;
  try {
    return new RegExp(source, `${flags}l`);
  } catch {
    return undefined;
  }
}

/**
 * Whether matching with `re` (a globRegExp) takes time linear in the path's length: compiled for
 * the linear engine, or, on a V8 without it, free of lookarounds (then V8 falls back to a linear
 * engine when it backtracks too much, src/cli/short-run.ts).
 */
export function isBounded(re: RegExp): boolean {
  return re.flags.includes('l') || (linearFlag === false && !hasLookaround(re));
}

/** Whether a regular expression still holds a lookaround (then V8 cannot match it without backtracking). */
export function hasLookaround(re: RegExp): boolean {
  return /\(\?<?[=!]/.test(re.source);
}

/** How many `..` folders a glob starts with (its fixed part, escapes removed). */
function leadingClimbs(glob: string): number {
  const scan = picomatch.scan(glob, { unescape: true });
  let n = 0;
  for (const s of scan.base.split('/')) {
    if (s !== '..') break;
    n++;
  }
  return n;
}

/**
 * A matcher for any of `globs` (an empty list matches nothing) that matches as picomatch does
 * (`dot: false`) on any path: the rewritten expressions hold only on listed paths, so a path that
 * no listing gives (an empty, `.` or dot name after its leading `..` folders, a trailing '/') is
 * matched by none, and a glob's wildcards never take a leading `..`: its own leading `..` folders
 * must be the path's.
 */
export function globMatcher(globs: readonly string[]): (path: string) => boolean {
  const compiled = globs.map((g) => ({ re: globRegExp(g), climbs: leadingClimbs(g) }));
  return (path) => {
    const names = path.split('/');
    let climbs = 0;
    while (names[climbs] === '..') climbs++;
    for (let i = climbs; i < names.length; i++) if (names[i] === '' || names[i]!.startsWith('.')) return false;
    if (climbs === names.length) return false;
    return compiled.some((c) => c.climbs === climbs && c.re.test(path));
  };
}
