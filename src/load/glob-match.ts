// Matchers for `resources` globs whose work is bounded. picomatch's regular expressions
// backtrack: a glob with nested repetition (`+(*a)b.yaml`, `{a,aa}` thirty times, many `*`)
// against a long file name ran for minutes, and the repository chooses both. V8 has a matcher
// that does not backtrack, which it falls back to when a regular expression backtracks too much
// (src/regexp-engine.ts), but not for expressions with lookarounds, nor for repetition
// nested too deeply (src/load/resource-globs.ts refuses what it cannot run). picomatch adds two kinds of
// those: guards that keep `.` and `..` names from matching, and `(?=.)`, "a character follows".
// Listed paths hold no `.`, `..` or dot-names (the walk drops them), no empty names and no
// trailing '/', so the guards go, and `(?=.)` goes or becomes a `+` where that is the same on such
// paths (the property test in test/load/glob-match.test.ts holds this against picomatch). What
// keeps a lookaround is a negated extglob (`!(archive)`): src/load/resource-globs.ts bounds those.
import picomatch from 'picomatch';
import { linearFallback } from '../regexp-engine.js';

export { BACKTRACKS_BEFORE_LINEAR } from '../regexp-engine.js';

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
 * picomatch's expression with each class as the class alone: it writes `[ab]` as
 * `(?:\\[ab\\]|[ab])`, the class or its own text, brackets and all, so `t/[ab].yaml` also
 * selected a file named `t/[ab].yaml` (a shell selects `t/a.yaml` and `t/b.yaml` only).
 */
function classOnly(source: string): string {
  let out = '';
  let at = 0;
  for (let i = source.indexOf('(?:\\['); i >= 0; i = source.indexOf('(?:\\[', at)) {
    // A backslash before the "(" escapes it: text, not a group.
    if (/(?:^|[^\\])(?:\\\\)*\\$/.test(source.slice(0, i))) {
      out += source.slice(at, i + 1);
      at = i + 1;
      continue;
    }
    const bar = source.indexOf('\\]|[', i);
    let end = bar < 0 ? -1 : bar + 3;
    if (end >= 0) {
      let k = end + 1;
      if (source[k] === '^') k++;
      while (k < source.length && source[k] !== ']') k += source[k] === '\\' ? 2 : 1;
      end = source[k + 1] === ')' ? k : -1;
    }
    if (end < 0) {
      out += source.slice(at, i + 1);
      at = i + 1;
      continue;
    }
    out += source.slice(at, i) + source.slice(bar + 3, end + 1);
    at = end + 2;
  }
  return out + source.slice(at);
}

/**
 * The regular expression of `glob` for listed paths. `(?=.)` is dropped at the start (a listed
 * path is never empty) and where the next atom, past an optional `*`, takes a character anyway;
 * `(?=.)[^/]*?` becomes `[^/]+?` before a '/' or the end (a name is never empty there); anywhere
 * else it stays.
 */
export function globRegExp(glob: string): RegExp {
  const re = picomatch.makeRe(glob, { dot: true });
  let source = classOnly(re.source);
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
  linearFallback();
  return new RegExp(nonCapturing(out), re.flags);
}

/**
 * The expression with its groups made non-capturing (`(a|b)` as `(?:a|b)`): nothing reads them,
 * and V8's linear engine carries every capture along each path it tries, so that `{a,*}` 800
 * times took 8.9 s against a name of 245 characters, and 0.25 s without captures. Unchanged when
 * it holds a backreference (none of picomatch's do; its POSIX classes, which can, are refused).
 */
function nonCapturing(source: string): string {
  if (/(?:^|[^\\])(?:\\\\)*\\[1-9]/.test(source)) return source;
  return rewriteSource(source, (cls) => cls, (c, at) => (c === '(' && source[at + 1] !== '?' ? '(?:' : c));
}

/**
 * A regular expression's source rewritten token by token: `cls` maps each class (as JavaScript
 * reads it: a ']' ends it wherever it stands, unless escaped), `chr` each other character that
 * is not escaped (its index given); escapes are kept as they are.
 */
function rewriteSource(source: string, cls: (text: string) => string, chr: (c: string, at: number) => string = (c) => c): string {
  let out = '';
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') {
      out += source.slice(i, i + 2);
      i++;
    } else if (c === '[') {
      let j = i + 1;
      while (j < source.length && source[j] !== ']') j += source[j] === '\\' ? 2 : 1;
      out += cls(source.slice(i, j + 1));
      i = j;
    } else out += chr(c, i);
  }
  return out;
}

/**
 * Whether matching with `re` (a globRegExp) is bounded: V8 can run it on its linear engine, so
 * it does when it backtracks too much. On a V8 without the flag `l` to ask, whether it is free of
 * lookarounds (which that engine cannot run).
 */
export function isBounded(re: RegExp): boolean {
  if (!linearFallback()) return !hasLookaround(re);
  try {
    return new RegExp(re.source, `${re.flags}l`).flags.includes('l');
  } catch {
    return false;
  }
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
  const compiled = globs.map((g) => ({ re: globRegExp(belowOnly(g)), climbs: leadingClimbs(g), pairs: undefined as RegExp | undefined }));
  return (path) => {
    // Leading `..` folders, then names that are neither empty nor start with '.'; without
    // splitting the path, as this runs for every file listed.
    let at = 0;
    let climbs = 0;
    while (path.startsWith('../', at)) {
      at += 3;
      climbs++;
    }
    for (;;) {
      const c = path.charCodeAt(at);
      if (Number.isNaN(c) || c === 0x2f || c === 0x2e) return false; // '' / '/' / '.'
      const slash = path.indexOf('/', at);
      if (slash < 0) break;
      at = slash + 1;
    }
    // A character outside the basic plane (an emoji) is two code units to the expression: on
    // such a path, the expression that takes them as one character (made on first need).
    if (SURROGATE.test(path)) {
      for (const c of compiled) if (c.climbs === climbs && (c.pairs ??= wholePairs(c.re)).test(path)) return true;
      return false;
    }
    for (const c of compiled) if (c.climbs === climbs && c.re.test(path)) return true;
    return false;
  };
}

/**
 * A glob ending in "/**" as one ending in "/**\/*": everything below the folder, as gitignore and
 * a shell read it, and not the folder's own path too, which picomatch also matches (`archive/**`
 * selected a file named `archive`).
 */
export function belowOnly(glob: string): string {
  return glob.endsWith('/**') ? `${glob}/*` : glob;
}

const SURROGATE = /[\uD800-\uDFFF]/;

/**
 * `re` with every negated class (picomatch's `[^/]` of `?` and `*`, a glob's `[^x]`) taking a
 * character outside the basic plane whole, as its two code units, and never one of them alone:
 * `??` no longer matches one emoji, `?` matches one, and `*` cannot stop between the two halves
 * (no other atom matches a half alone: literals are whole pairs, and src/load/resource-globs.ts
 * refuses classes holding such characters or ranges across the surrogates). Paths without them
 * are matched the same by either expression.
 */
export function wholePairs(re: RegExp): RegExp {
  const out = rewriteSource(re.source, (cls) => (cls.startsWith('[^') ? `(?:[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]|${cls.slice(0, -1)}\\uD800-\\uDFFF])` : cls));
  linearFallback();
  return new RegExp(out, re.flags);
}

/** Most alternatives a glob's braces are expanded into by folderMayHold; past it, any folder may hold a match. */
const MAX_ALTERNATIVES = 256;

/**
 * The glob's alternatives with its braces that hold a '/' expanded (`envs/{prod/x,qa}/*.yaml` is
 * `envs/prod/x/*.yaml` and `envs/qa/*.yaml`), as picomatch reads them: escapes and classes are
 * skipped, and a brace stays as it is (read within its part by picomatch, or taken to reach
 * anywhere from there when it holds a '/') when it holds no comma (`{a}`, a range), no '/', or
 * what picomatch reads differently alone than beside the brace: a parenthesis or `|` inside it,
 * an extglob's character next to it (`{prod,+(qa)}?` is "prod or qa…, then one character", and
 * `+(qa)?` alone is not), or when it lies inside an extglob (`+(a|{b,c})` repeats `b` and `c`
 * together). undefined past `limit` alternatives.
 */
export function expandBraces(glob: string, limit = MAX_ALTERNATIVES): string[] | undefined {
  const out: string[] = [];
  const queue = [glob];
  while (queue.length > 0) {
    const g = queue.pop()!;
    const brace = firstBrace(g);
    if (brace === undefined) {
      out.push(g);
      if (out.length > limit) return undefined;
      continue;
    }
    const [open, commas, close] = brace;
    const before = g.slice(0, open);
    const after = g.slice(close + 1);
    const cuts = [open, ...commas, close];
    for (let i = cuts.length - 2; i >= 0; i--) queue.push(before + g.slice(cuts[i]! + 1, cuts[i + 1]) + after);
    if (out.length + queue.length > limit) return undefined;
  }
  return out;
}

/** Characters that make picomatch read what is next to them as an extglob, or a group. */
const EXTGLOB_NEIGHBOURS = new Set(['?', '*', '+', '@', '!', '(', ')', '|']);

/** The first brace to expand (expandBraces): [its '{', the commas at its own level, its '}']. */
function firstBrace(g: string): [number, number[], number] | undefined {
  let parens = 0;
  for (let i = 0; i < g.length; i++) {
    const c = g[i]!;
    if (c === '\\') i++;
    else if (c === '[') i = classEnd(g, i);
    else if (c === '(') parens++;
    else if (c === ')') parens = Math.max(0, parens - 1);
    else if (c === '{' && parens === 0) {
      const brace = braceAt(g, i);
      if (brace === undefined) return undefined; // not closed: picomatch reads it as a character
      const j = brace.close;
      const inside = g.slice(i + 1, j);
      const safe = !/[()|]/.test(inside) && !EXTGLOB_NEIGHBOURS.has(g[i - 1] ?? '') && !EXTGLOB_NEIGHBOURS.has(g[j + 1] ?? '');
      if (brace.commas.length > 0 && inside.includes('/') && safe) return [i, [...brace.commas], j];
      i = j; // nothing inside it is expanded either
    }
  }
  return undefined;
}

/** The brace opened at `at`: its '}' and the commas at its own level (escapes and classes skipped); undefined when it is not closed. */
export function braceAt(g: string, at: number): { readonly close: number; readonly commas: readonly number[] } | undefined {
  const commas: number[] = [];
  let depth = 0;
  for (let j = at + 1; j < g.length; j++) {
    const d = g[j]!;
    if (d === '\\') j++;
    else if (d === '[') j = classEnd(g, j);
    else if (d === '{') depth++;
    else if (d === '}') {
      if (depth === 0) return { close: j, commas };
      depth--;
    } else if (d === ',' && depth === 0) commas.push(j);
  }
  return undefined;
}

/**
 * Each token of a glob as the scanners here read it (picomatch's reading): an escape (a backslash
 * and the character after it), a class (from its "[" to its "]" as classEnd finds it; `end` is
 * the "[" itself when it is not closed, and the scan goes on after it), or another character.
 */
export function* globTokens(glob: string): Generator<{ readonly kind: 'escape' | 'class' | 'char'; readonly at: number; readonly end: number }> {
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '\\') {
      yield { kind: 'escape', at: i, end: i + 1 };
      i++;
    } else if (c === '[') {
      const end = classEnd(glob, i);
      yield { kind: 'class', at: i, end };
      i = end;
    } else yield { kind: 'char', at: i, end: i };
  }
}

/** Where the class opened at `at` ends (its ']'), as picomatch reads it; `at` itself when it is not closed. */
export function classEnd(g: string, at: number): number {
  let j = at + 1;
  if (g[j] === '!' || g[j] === '^') j++;
  if (g[j] === ']') j++;
  while (j < g.length && g[j] !== ']') j += g[j] === '\\' ? 2 : 1;
  return j < g.length ? j : at;
}

/** The glob with a leading '!' escaped, unless it opens an extglob (`!(a)`). */
function literalBang(glob: string): string {
  return glob.startsWith('!') && !glob.startsWith('!(') ? `\\${glob}` : glob;
}

/**
 * A predicate on folders (relative paths, posix, as listed): false when no path below the folder
 * can match any of the positive `globs`, true when one may. Used to decide whether a link the
 * walk does not follow (dangling, or out of the repository) could have been meant as a folder of
 * resources: `envs/dev` cannot be for `envs/+(prod|qa)/*.yaml`. Exact for globs whose parts
 * between slashes hold none (once braces are expanded); from a part holding a '/' (an extglob
 * with one, an escaped one) or a `**` on, any folder may.
 */
export function folderMayHold(globs: readonly string[]): (folder: string) => boolean {
  const alternatives: (readonly string[])[] = [];
  let any = false;
  for (const g of globs) {
    const expanded = expandBraces(g);
    if (expanded === undefined) any = true;
    // A '!' that starts an alternative (`{!legacy,prod}/*.yaml`) or a part (`envs/*/!x/*.yaml`) is
    // the character to picomatch there, not the "every file but" it is alone: escaped for it.
    else for (const a of expanded) alternatives.push((picomatch.scan(literalBang(a), { parts: true }).parts ?? [a]).map(literalBang));
  }
  const segment = new Map<string, (name: string) => boolean>();
  const matches = (part: string, name: string): boolean => {
    let m = segment.get(part);
    if (m === undefined) {
      const scan = picomatch.scan(part, { unescape: true });
      const literal = scan.base;
      m = scan.isGlob ? globMatcher([part]) : (n) => n === literal;
      segment.set(part, m);
    }
    return m(name);
  };
  return (folder) => {
    if (any) return true;
    const names = folder === '' ? [] : folder.split('/');
    return alternatives.some((parts) => {
      for (let i = 0; i < names.length; i++) {
        const part = parts[i];
        if (part === undefined) return false;
        if (part.includes('/') || part.includes('**') || part.includes('!(')) return true;
        if (i === parts.length - 1) return false; // the part of the file's own name
        if (!matches(part, names[i]!)) return false;
      }
      return parts.length > names.length;
    });
  };
}

/**
 * A predicate on file names (the last name of a path): false when no path ending in that name can
 * match any of the positive `globs`, true when one may (the last part of each alternative, read
 * by picomatch; one holding a '/' or `**` may match any name). Paths through links are tried
 * only for names that may be selected: a folder's binaries beside its YAML never are.
 */
export function fileNameMayMatch(globs: readonly string[]): (name: string) => boolean {
  const lasts: string[] = [];
  for (const g of globs) {
    const expanded = expandBraces(g);
    if (expanded === undefined) return () => true;
    for (const a of expanded) {
      const parts = picomatch.scan(literalBang(a), { parts: true }).parts ?? [a];
      const last = literalBang(parts[parts.length - 1] ?? a);
      // A negated extglob (refused by the load, but not here) reads otherwise alone: any name may.
      if (last.includes('/') || last.includes('**') || last.includes('!(')) return () => true;
      // One that can match nothing (`@(a|b)?`) leaves the name to a part before it (`*/**/@(a|b)?` selects `x`).
      if (matchesNothingToo(last)) return () => true;
      lasts.push(last);
    }
  }
  const matchers = lasts.map((l) => {
    const scan = picomatch.scan(l, { unescape: true });
    return scan.isGlob ? globMatcher([l]) : (n: string) => n === scan.base;
  });
  return (name) => matchers.some((m) => m(name));
}

/** Whether picomatch's expression of a glob part matches the empty text (or cannot be made: then taken to). */
function matchesNothingToo(part: string): boolean {
  try {
    return picomatch.makeRe(part, { dot: true }).test('');
  } catch {
    return true;
  }
}
