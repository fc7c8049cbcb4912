// Pure: what makes a `resources` glob read other files than the ones it names. The walk lists
// folders down from a glob's fixed part (src/load/find.ts) and picomatch matches the paths it
// lists as they are written, so a glob must name its folders plainly: breakers found globs that
// read the repository's own x/ in place of ../x (`{../x}/*.yaml`), read nothing without a word
// (`tenants/../x/*.yaml`, `x//*.yaml`, `/x/*.yaml`, `x/*.yaml/`), or were taken for an exclusion
// (`!(tenants)/*.yaml`, picomatch's "anything but tenants").
import { posix } from 'node:path';
import picomatch from 'picomatch';
import { braceAt, classEnd, globRegExp, globTokens, isBounded } from './glob-match.js';

/** Longer globs are refused (picomatch's own limit is 65,536 characters, with a message naming no file). */
export const MAX_GLOB_LENGTH = 4096;

/** An exclusion (`!archive/**`), not a negated extglob (`!(archive)/*.yaml`, which is a positive glob). */
export function isExclusion(pattern: string): boolean {
  return pattern.startsWith('!') && !pattern.startsWith('!(');
}

/** The glob without its leading `!` when it is an exclusion. */
export function globOf(pattern: string): string {
  return isExclusion(pattern) ? pattern.slice(1) : pattern;
}

/** A glob whose part after its fixed folder holds a `..` segment, in a brace, an extglob or between slashes. */
export function climbsInGlob(pattern: string): boolean {
  const scan = picomatch.scan(globOf(pattern));
  if (!scan.isGlob) return false;
  return unescaped(scan.glob).split(/[/{},()|]/).some((segment) => segment === '..');
}

/** The text with picomatch's backslash escapes removed (`\.\.` is `..` to the walk). */
function unescaped(text: string): string {
  return text.replace(/\\(.)/g, '$1');
}

/**
 * Whether a positive glob's fixed folder climbs above the folder the globs are relative to
 * (`../x/*.yaml`, `a/../../x/*.yaml`), read from its text alone: the working tree's load and a
 * base commit's config (`diff --base`) decide it the same way.
 */
export function reachesOutside(pattern: string): boolean {
  if (isExclusion(pattern)) return false;
  const scan = picomatch.scan(pattern, { unescape: true });
  const folder = scan.isGlob ? scan.base : posix.dirname(scan.base);
  const normal = posix.normalize(folder === '' ? '.' : folder);
  return normal === '..' || normal.startsWith('../') || posix.isAbsolute(normal);
}

/**
 * Why a glob's matcher could take long, or undefined. Matchers V8 runs on its linear engine are
 * bounded (src/load/glob-match.ts); it cannot run a lookaround, which a negated extglob keeps
 * (`!(archive)`: with `**` and two `*` beside it, 11 s against a path of 4,000 characters), nor,
 * on Node 20, repetition nested too deeply (`+(a+(a+(a+(a+(a)))))`).
 */
function unbounded(glob: string): GlobProblem | undefined {
  let re: RegExp;
  try {
    re = globRegExp(glob);
  } catch (err) {
    return { reason: `is not a glob picomatch can read (${String((err as Error).message).slice(0, 120)})`, advice: 'correct it' };
  }
  if (isBounded(re)) return undefined;
  if (glob.includes('!(')) {
    return {
      reason: 'holds a negated extglob "!(…)", which only a backtracking matcher can match, and against a long path that can take minutes',
      advice: 'name what to leave out in a separate exclusion, as in "!archive/**", beside a glob of what to read',
    };
  }
  return { reason: 'holds a form V8 cannot match in linear time (repetition nested too deeply, or a lookaround written into it), so against a long file name matching it could take minutes', advice: 'write it with less nesting, or as several globs' };
}

/** The classes (`[…]`) of a glob, read as picomatch reads them: a `]` first is literal, escapes are skipped. */
function classes(glob: string): string[] {
  const out: string[] = [];
  for (const { kind, at, end } of globTokens(glob)) {
    if (kind !== 'class') continue;
    if (end === at) break;
    out.push(glob.slice(at, end + 1));
  }
  return out;
}

/** picomatch's expression for a class alone, or undefined when it reads none. */
function classRegExp(text: string): RegExp | undefined {
  try {
    return picomatch.makeRe(text, { dot: true });
  } catch {
    return undefined;
  }
}

/**
 * Whether a '|' stands outside every parenthesis and every brace picomatch reads as one (a brace
 * with a comma at its own level; `{prod|v2}` is the text itself, its '|' "or" of the whole glob).
 * Escapes and classes are skipped.
 */
function topLevelBar(glob: string): boolean {
  let parens = 0;
  const braces: boolean[] = [];
  for (const { kind, at: i } of globTokens(glob)) {
    if (kind !== 'char') continue;
    const c = glob[i]!;
    if (c === '(') parens++;
    else if (c === ')') parens = Math.max(0, parens - 1);
    else if (c === '{') braces.push(braceHasComma(glob, i));
    else if (c === '}') braces.pop();
    else if (c === '|' && parens === 0 && !braces.includes(true)) return true;
  }
  return false;
}

/**
 * The first plain group (a parenthesis not opening an extglob, as `(eu)` in `prod (eu)`) that
 * holds no "|" at its own level, or undefined: picomatch reads it as the text inside, without the
 * parentheses, so `envs/prod (eu)/*.yaml` selects envs/prod eu. A group with a "|" is
 * alternatives, as `@(…)` is, and is read as such. Escapes and classes are skipped.
 */
function plainGroup(glob: string): string | undefined {
  const groups: { at: number; plain: boolean; bar: boolean }[] = [];
  for (const { kind, at: i } of globTokens(glob)) {
    if (kind !== 'char') continue;
    const c = glob[i]!;
    if (c === '(') {
      const before = i > 0 && '@!?*+'.includes(glob[i - 1]!) && (i < 2 || glob[i - 2] !== '\\');
      groups.push({ at: i, plain: !before, bar: false });
    } else if (c === '|' && groups.length > 0) groups[groups.length - 1]!.bar = true;
    else if (c === ')') {
      const g = groups.pop();
      if (g !== undefined && g.plain && !g.bar) return glob.slice(g.at, i + 1);
    }
  }
  return undefined;
}

/** Whether a '"' stands unescaped outside every class: picomatch reads text between quotes as plain text, quotes removed. */
function bareQuote(glob: string): boolean {
  for (const { kind, at: i } of globTokens(glob)) {
    if (kind !== 'char') continue;
    const c = glob[i]!;
    if (c === '"') return true;
  }
  return false;
}

/**
 * What of a glob picomatch passes to its regular expression as regular-expression syntax,
 * outside classes and escapes of punctuation: a backslash before a letter or digit (`\\d` is any
 * digit there, `\\x41` is "A", `\\1` a back-reference) or a group's modifier after "(" (`(?:a|b)`).
 * The text found, or undefined.
 */
function regExpSyntax(glob: string): string | undefined {
  for (const { kind, at, end } of globTokens(glob)) {
    if (kind === 'escape' && /[A-Za-z0-9]/.test(glob[at + 1] ?? '')) return glob.slice(at, at + 2);
    if (kind === 'class' && end > at) {
      // Inside a class too: `[\\d]` is a class of digits.
      const m = /\\[A-Za-z0-9]/.exec(glob.slice(at + 1, end).replace(/\\\\/g, ''));
      if (m !== null) return m[0];
    }
    if (kind === 'char' && glob[at] === '(' && glob[at + 1] === '?') return '(?';
  }
  return undefined;
}

/** The first "[" that is no class, left open (picomatch reads it as the character), or one starting "[!" however it ends; undefined when none. */
function openOrBangBracket(glob: string): { readonly text: string; readonly open: boolean } | undefined {
  for (const { kind, at, end } of globTokens(glob)) {
    if (kind !== 'class') continue;
    if (glob[at + 1] === '!') return { text: end > at ? glob.slice(at, end + 1) : glob.slice(at, at + 3), open: false };
    if (end === at) return { text: '[', open: true };
  }
  return undefined;
}

/** The first ")" followed by "?" or "+", or class followed by "+" (escapes skipped): picomatch copies them into its expression, where they are "optional" or "once or more" of the group or class. */
function quantifiedGroup(glob: string): string | undefined {
  for (const { kind, at, end } of globTokens(glob)) {
    const next = glob[end + 1];
    // A class followed by "+" is repeated too (`[ab]+` is "a", "ab", "bba"…), as a group is.
    if (kind === 'class' && end > at && next === '+') return glob.slice(at, end + 2);
    if (kind !== 'char') continue;
    if (glob[at] === ')' && (next === '?' || next === '+')) return glob.slice(at, at + 2);
    if (glob[at] === '}' && next === '+') return glob.slice(at, at + 2); // `{a,b}+` is "(a|b)+" to picomatch
  }
  return undefined;
}

/**
 * Whether picomatch took an extglob of the glob as plain text (it does so for `+( |a)` and
 * `*(a| )`, a space beside the "|"): its expression then holds the opener escaped (`\\+\\(`),
 * which the glob itself does not.
 */
function extglobAsText(glob: string, source: string): string | undefined {
  for (const { kind, at } of globTokens(glob)) {
    const c = glob[at]!;
    if (kind !== 'char' || !'*+?@!'.includes(c) || glob[at + 1] !== '(') continue;
    const escaped = `${'*+?'.includes(c) ? '\\' : ''}${c}\\(`;
    if (source.includes(escaped) && !glob.includes(escaped)) return glob.slice(at, at + 2);
  }
  return undefined;
}

/**
 * A class or extglob that a shell's brace expansion would cut through, which it does before any
 * matching, ignoring classes and parentheses, and picomatch does not: a class holding both "{"
 * and "}" (`x/[{a,b}].yaml` is x/[a].yaml and x/[b].yaml to a shell), or, in a glob with braces,
 * a class holding "{", "}" or "," (`{[,a],b}`), or an extglob holding "," (`{@(a,b),c}`). The
 * text found, or undefined.
 */
function cutByBraces(glob: string): string | undefined {
  const tokens = [...globTokens(glob)];
  const braces = tokens.some((t) => t.kind === 'char' && glob[t.at] === '{');
  for (const c of classes(glob)) {
    const inner = c.slice(1, -1);
    if ((inner.includes('{') && inner.includes('}')) || (braces && /[{},]/.test(inner))) return c;
  }
  if (!braces) return undefined;
  for (const { kind, at: i } of tokens) {
    if (kind !== 'char' || !'@!?*+'.includes(glob[i]!) || glob[i + 1] !== '(') continue;
    let depth = 0;
    for (let j = i + 1; j < glob.length; j++) {
      const c = glob[j]!;
      if (c === '\\') j++;
      else if (c === '[') j = Math.max(j, classEnd(glob, j));
      else if (c === '(') depth++;
      else if (c === ')' && --depth === 0) break;
      else if (c === ',' && depth > 0) return glob.slice(i, j + 1);
    }
  }
  return undefined;
}

/**
 * A brace that makes "**" once a shell has expanded the braces (`x/{*,}*`, `x/{a,*}{b,*}`,
 * `x/{{*,},}*` are x/** among others to a shell; picomatch's braces are not), or undefined: an
 * expansion holding more "**" than the glob itself. Past 1,024 expansions, a brace with a "*"
 * (or nothing) at an edge of an alternative, beside a "*" or another brace, counts.
 */
function braceMakesGlobstar(glob: string): string | undefined {
  const braces = bracesOf(glob);
  if (braces.length === 0) return undefined;
  const text = glob.slice(braces[0]!.at, braces[0]!.close + 1);
  const stars = (g: string): number => g.match(/(?<!\\)\*\*/g)?.length ?? 0;
  const expanded = expandAll(glob, 1024);
  if (expanded === undefined) {
    // Too many to expand: a brace whose alternative has a "*" (or nothing) at an edge, beside a
    // "*" or another brace's edge across it.
    const edge = (c: string | undefined): boolean => c !== undefined && '*{},'.includes(c);
    const risky = braces.find(({ at, close, commas }) => {
      const cuts = [at, ...commas, close];
      return cuts.slice(0, -1).some((cut, k) => {
        const alt = glob.slice(cut + 1, cuts[k + 1]);
        return ((alt === '' || alt.startsWith('*')) && edge(glob[at - 1])) || ((alt === '' || (alt.endsWith('*') && !alt.endsWith('\\*'))) && edge(glob[close + 1]));
      });
    });
    return risky === undefined ? undefined : glob.slice(risky.at, risky.close + 1);
  }
  const own = stars(glob);
  return expanded.some((e) => stars(e) > own) ? text : undefined;
}

/** Every expansion of a glob's braces with commas, as a shell expands them (outer first, then inner); undefined past `limit`. */
function expandAll(glob: string, limit: number): string[] | undefined {
  const out: string[] = [];
  const queue = [glob];
  while (queue.length > 0) {
    const g = queue.pop()!;
    const brace = bracesOf(g).find((b) => b.commas.length > 0);
    if (brace === undefined) {
      out.push(g);
      continue;
    }
    const cuts = [brace.at, ...brace.commas, brace.close];
    for (let k = 0; k + 1 < cuts.length; k++) queue.push(g.slice(0, brace.at) + g.slice(cuts[k]! + 1, cuts[k + 1]) + g.slice(brace.close + 1));
    if (out.length + queue.length > limit) return undefined;
  }
  return out;
}

/** Each brace of a glob that closes (escapes and classes skipped), in the order they open: its "{", the commas at its own level, its "}". */
function bracesOf(glob: string): { readonly at: number; readonly close: number; readonly commas: readonly number[] }[] {
  const out: { at: number; close: number; commas: readonly number[] }[] = [];
  for (const { kind, at } of globTokens(glob)) {
    if (kind !== 'char' || glob[at] !== '{') continue;
    const brace = braceAt(glob, at);
    if (brace !== undefined) out.push({ at, ...brace });
  }
  return out;
}

/** The first brace that holds no comma at its own level and is no range of single characters (`{prod}`), or undefined. */
function loneBrace(glob: string): string | undefined {
  for (const { at, close, commas } of bracesOf(glob)) {
    if (commas.length > 0) continue;
    const text = glob.slice(at, close + 1);
    if (!/^\{[-+]?[A-Za-z0-9]\.\.[-+]?[A-Za-z0-9]\}$/.test(text)) return text;
  }
  return undefined;
}

/** Whether the brace opened at `at` holds a comma at its own level before it closes. */
function braceHasComma(glob: string, at: number): boolean {
  return (braceAt(glob, at)?.commas.length ?? 0) > 0;
}

/** The first brace range (`{a..b}`) whose ends are not single characters, or that has a step, or undefined. */
function wideRange(glob: string): string | undefined {
  // A range of other characters than letters and digits (`{+..-}`): picomatch's class of the
  // characters between, a shell's text itself.
  const other = /(?<!\\)\{([^A-Za-z0-9{},\\])\.\.([^{},\\])\}|(?<!\\)\{([^{},\\])\.\.([^A-Za-z0-9{},\\])\}/.exec(glob);
  if (other !== null) return other[0];
  for (const m of glob.matchAll(/(?<!\\)\{([-+]?[A-Za-z0-9]+)\.\.([-+]?[A-Za-z0-9]+)(\.\.[-+]?[0-9]+)?\}/g)) {
    const [, from, to, step] = m;
    if (from!.length !== 1 || to!.length !== 1 || step !== undefined) return m[0];
  }
  return undefined;
}

/**
 * The first brace or parenthesis of a glob left open, or the first closer without an opener
 * (escapes and classes skipped, classes as picomatch reads them), or undefined.
 */
function unbalanced(glob: string): { readonly char: string; readonly closer: boolean } | undefined {
  const open: string[] = [];
  for (const { kind, at: i } of globTokens(glob)) {
    if (kind !== 'char') continue;
    const c = glob[i]!;
    if (c === '(' || c === '{') open.push(c);
    else if (c === ')' || c === '}') {
      const opener = c === ')' ? '(' : '{';
      const last = open.pop();
      if (last === undefined) return { char: c, closer: true };
      if (last !== opener) return { char: last, closer: false };
    }
  }
  return open[0] === undefined ? undefined : { char: open[0], closer: false };
}

/** Most samples of a glob that hiddenName looks at (brace chains multiply them). */
const MAX_SAMPLES = 256;

/**
 * Paths a glob matches, some of each shape: every alternative of its braces and extglobs (nested
 * too; `?(…)` and `*(…)` also without), a class's first character and its '.', `x` for a wildcard
 * (never empty, so that `*.yaml` gives no dot-name). At most MAX_SAMPLES.
 */
function samples(glob: string): string[] {
  let i = 0;
  const cross = (acc: string[], parts: readonly string[]): string[] => {
    const out: string[] = [];
    for (const a of acc) for (const p of parts) if (out.length < MAX_SAMPLES) out.push(a + p);
    return out;
  };
  const alternatives = (close: string, sep: string): string[] => {
    const out: string[] = [];
    for (;;) {
      out.push(...seq(close + sep));
      if (glob[i] === sep) {
        i++;
        continue;
      }
      if (glob[i] === close) i++;
      return out.slice(0, MAX_SAMPLES);
    }
  };
  const seq = (stop: string): string[] => {
    let acc = [''];
    while (i < glob.length && !stop.includes(glob[i]!)) {
      const c = glob[i]!;
      let parts: string[];
      if (c === '\\') {
        parts = [glob[i + 1] ?? ''];
        i += 2;
      } else if ('@!+*?'.includes(c) && glob[i + 1] === '(') {
        i += 2;
        const alts = alternatives(')', '|');
        parts = c === '?' || c === '*' ? ['', ...alts] : alts;
      } else if (c === '{') {
        i++;
        parts = alternatives('}', ',');
      } else if (c === '[') {
        const end = glob.indexOf(']', i + 2);
        const body = end < 0 ? '' : glob.slice(i + 1, end);
        i = end < 0 ? i + 1 : end + 1;
        parts = body === '' ? ['['] : /^[!^]/.test(body) ? ['x'] : [...new Set([body[0]!, ...(body.includes('.') ? ['.'] : [])])];
      } else if (c === '*' || c === '?') {
        while (glob[i] === '*') i++;
        if (c === '?') i++;
        parts = ['x'];
      } else {
        parts = [c];
        i++;
      }
      acc = cross(acc, parts);
    }
    return acc;
  };
  const out: string[] = [];
  while (i < glob.length) {
    out.push(...seq(''));
    i++; // a stray closer
  }
  return out.slice(0, MAX_SAMPLES);
}

/**
 * A dot-name or node_modules that a glob names other than as a plain name (those are checked
 * before): through a brace or an extglob, nested or not (`{a,{.dus,b}}`, `node{_modules,x}`),
 * or a class (`[.]hidden`, `node_module[s]`); undefined when none of its samples holds one.
 */
function hiddenName(glob: string): string | undefined {
  for (const sample of samples(glob)) {
    const hidden = sample.split('/').find((n) => n === 'node_modules' || (n.startsWith('.') && n !== '.' && n !== '..'));
    if (hidden !== undefined) return hidden;
  }
  return undefined;
}

/** Most wildcards, classes, braces and extglobs in one glob, and in all of them together. */
export const MAX_GLOB_PARTS = 24;
export const MAX_GLOB_PARTS_IN_ALL = 64;

/**
 * How many wildcards (a run of `*`, a `?`), classes, braces and extglobs a glob holds. Matching
 * takes time in proportion to them once V8 runs the expression on its linear engine, about
 * 0.05 to 0.09 ms each against a name of 245 characters (`{a,*}` 800 times: 0.25 s), so at most
 * 64 in all is some 5 ms a file at worst; a path of 4,000 characters under `**`, 23 to 57 ms.
 */
export function globParts(glob: string): number {
  let n = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '\\') i++;
    else if ('@!+*?'.includes(c) && glob[i + 1] === '(') {
      n++;
      i++;
    } else if (c === '*') {
      n++;
      while (glob[i + 1] === '*') i++;
    } else if (c === '?' || c === '[' || c === '{') n++;
  }
  return n;
}

/** Why a list of globs is refused together (they are matched one after another against each path), or undefined. */
export function globsProblem(patterns: readonly string[]): GlobProblem | undefined {
  const parts = patterns.reduce((sum, p) => sum + globParts(p), 0);
  if (parts <= MAX_GLOB_PARTS_IN_ALL) return undefined;
  return {
    reason: `hold ${parts} wildcards, classes, braces and extglobs together; more than ${MAX_GLOB_PARTS_IN_ALL} could make matching a long file name take long, as each path is matched against each glob`,
    advice: 'name the files with fewer globs, or simpler ones ("tenants/**/*.yaml")',
  };
}

/** Why a glob is refused (the end of a sentence that starts with the glob), and what to write instead. */
export interface GlobProblem {
  readonly reason: string;
  readonly advice: string;
}

/**
 * Why `pattern` (a `resources` entry) would read other files than it names, or undefined when
 * it is plain. `..` may start a glob
 * (whether it may leave the repository is decided elsewhere, with the real paths).
 */
export function globProblem(pattern: string): GlobProblem | undefined {
  if (pattern.length > MAX_GLOB_LENGTH) {
    return { reason: `is ${pattern.length} characters long; a resources glob may be at most ${MAX_GLOB_LENGTH}`, advice: 'name fewer files in one glob' };
  }
  // First, before picomatch sees it: its makeRe never returns for four backslashes at the end
  // after a wildcard, a class or a parenthesis (`*` and `\\\\`), and a pull request chooses the globs.
  if (pattern.includes('\\\\\\')) {
    return { reason: 'holds three or more backslashes in a row, which picomatch reads as one escaped backslash, however many there are ("r\\\\\\\\x.yaml" is r\\x.yaml)', advice: 'write "[\\\\]" for each backslash of a name' };
  }
  // An escaped backslash outside a class: picomatch keeps it only before a few characters and
  // drops it before the rest (`x\\\\ y` is "x y", `x\\\\-y` is "x-y").
  for (const { kind, at } of globTokens(pattern)) {
    if (kind === 'escape' && pattern[at + 1] === '\\') return { reason: 'holds an escaped backslash ("\\\\"), which picomatch drops before most characters ("x\\\\ y" selects "x y", not "x\\ y")', advice: 'write "[\\\\]" for a backslash of a name' };
  }
  const glob = globOf(pattern);
  if (glob === '') return { reason: 'is an exclusion of nothing', advice: 'write the files to exclude after the "!", as in "!archive/**"' };
  if (pattern.trim() !== pattern) return { reason: 'starts or ends with a space, which names no file dus-sync lists', advice: 'remove the space' };
  const parts = globParts(glob);
  if (parts > MAX_GLOB_PARTS) {
    return { reason: `holds ${parts} wildcards, classes, braces and extglobs; more than ${MAX_GLOB_PARTS} in one glob could make matching a long file name take long`, advice: 'split it into simpler globs' };
  }
  if (isExclusion(pattern) && isExclusion(glob)) return { reason: 'starts with more than one "!", which picomatch and dus-sync read differently', advice: 'write one "!" to exclude, none to include' };
  if (climbsInGlob(glob)) {
    return { reason: 'holds ".." after its first wildcard or brace, where it matches no folder (dus-sync lists only folders below a glob\'s fixed part)', advice: 'write ".." only at its start, as in "../x/*.yaml", or name the folders without it' };
  }
  for (const name of glob.split('/')) {
    const plain = unescaped(name);
    if (plain === 'node_modules' || (plain.startsWith('.') && plain !== '.' && plain !== '..')) {
      return { reason: `names "${plain.slice(0, 60)}", ${plain === 'node_modules' ? 'a node_modules folder' : 'a dot-file or dot-folder'}, which dus-sync never reads (it skips them as git tools and linters do)`, advice: 'move the files out of it' };
    }
  }
  const bracket = openOrBangBracket(glob);
  if (bracket?.open === true) {
    return { reason: 'holds a "[" that is not closed, which picomatch then reads as the character itself, and the walk does not', advice: 'close it, or write \\[ for the character' };
  }
  if (/(?:^|[^\\])(?:\\\\)*\\\{/.test(glob.replace(/\[[^\]]*\]/g, ''))) {
    return { reason: 'holds "\\{", after which picomatch\'s reading of the glob\'s folders takes the rest as plain text, so the walk would not go below a "**" or a wildcard folder after it ("p\\{q/**" read p{q/ without its subfolders)', advice: 'write [{] for the character' };
  }
  const unclosed = unbalanced(glob);
  if (unclosed !== undefined) {
    const { char, closer } = unclosed;
    if (closer) return { reason: `holds a "${char}" that closes nothing opened before it, which picomatch then reads as the character itself`, advice: `write \\${char} for the character, or open it` };
    return { reason: `holds a "${char}" that is not closed (or a closer that was not opened), which picomatch then reads as the character itself`, advice: `close it, or write ${char === '{' ? '[{]' : `\\${char}`} for the character` };
  }
  if (topLevelBar(glob)) {
    return { reason: 'holds a "|" outside parentheses, which picomatch reads as "or" between everything before it and everything after it ("envs/prod|qa/*.yaml" is envs/prod, or qa/*.yaml), and the walk lists neither', advice: 'write two globs, or an extglob, as in "envs/@(prod|qa)/*.yaml"' };
  }
  if (bareQuote(glob)) {
    return { reason: 'holds a double quote ("), and picomatch reads text between double quotes as plain text without them: y/*"d".yaml selects y/cd.yaml, not y/c"d".yaml', advice: 'write ["] for the quote itself' };
  }
  const range = wideRange(glob);
  if (range !== undefined) {
    return { reason: `holds the range "${range.slice(0, 40)}", which picomatch reads as a class of single characters or as the text itself ("{1..10}" is "1" or "0"; "{2023..2025}" is "2023..2025"; "{+..-}" is "+", "," or "-"), not as a shell does`, advice: 'write the values out, as in "{2023,2024,2025}", or a range of single characters, as in "{1..9}"' };
  }
  const inName = /(?<=[^/])(?<!\\)\*\*|(?<!\\)\*\*(?=[^/])/.exec(glob);
  if (inName !== null && !/(?<!\\)\*{3,}/.test(glob)) {
    return { reason: 'holds "**" within a name, which picomatch reads as "*" there, or as any folders when a brace or an extglob follows ("**@(a|b)" selects x/a)', advice: 'write "*" for part of a name, or "**" alone between slashes for any folders' };
  }
  if (/(?<!\\)\*{3,}/.test(glob)) {
    return { reason: 'holds "***", which picomatch reads otherwise than "**" or "*": a "." after it then matches any character, "/" among them ("envs/***/fw.yaml" selects envs/y/fw/yaml)', advice: 'write "**" for any folders, or "*" for part of a name' };
  }
  const emptyExtglob = /(?<!\\)[@!+*?]\(\)/.exec(glob);
  if (emptyExtglob !== null) {
    return { reason: `holds the empty extglob "${emptyExtglob[0]}", which picomatch reads as nothing, so the glob can select paths its last part does not name`, advice: 'write something between the parentheses, or drop the extglob' };
  }
  const bang = bracket?.text;
  if (bang !== undefined) {
    return { reason: `holds the class "${bang.slice(0, 40)}", which picomatch reads as the characters themselves, "!" among them, not as "any character but" ("t/[!_]*.yaml" selects t/_partial.yaml, not t/prod.yaml)`, advice: bang.length <= 3 ? 'write "\\[!\\]" for the brackets themselves, or "!" for the character' : `write "[^${bang.slice(2, 40)}" for any character but those` };
  }
  const starred = braceMakesGlobstar(glob);
  if (starred !== undefined) {
    return { reason: `holds the brace "${starred.slice(0, 40)}", which makes "**" with the "*" beside it, once a shell has expanded the braces: any folders to a shell ("x/{*,}*" is x/** and x/*) and one name to picomatch`, advice: 'write the alternatives as separate globs ("x/**", "x/*")' };
  }
  const cut = cutByBraces(glob);
  if (cut !== undefined) {
    return { reason: `holds "${cut.slice(0, 40)}", a class or extglob with a brace or a comma that a shell's brace expansion cuts through before matching and picomatch does not ("x/[{a,b}].yaml" is x/[a].yaml and x/[b].yaml to a shell, any of "{", "a", ",", "b", "}" to picomatch)`, advice: 'write it without braces, as separate globs' };
  }
  const lone = loneBrace(glob);
  if (lone !== undefined) {
    return { reason: `holds the brace "${lone.slice(0, 40)}" with one alternative, which picomatch reads as the text itself, braces and all`, advice: `write the name without braces, or the alternatives with commas, as in "{prod,qa}"` };
  }
  if (glob.includes('[[:')) {
    return { reason: 'holds a POSIX class ("[[:…:]]"), after which picomatch copies the rest of the glob into its regular expression as written (a "." matches any character there)', advice: 'write the class out, as in "[a-zA-Z]" for "[[:alpha:]]"' };
  }
  if (/^(?:\.\/)+!/.test(glob)) {
    return { reason: 'starts with "./!", which picomatch reads as "every file but" what follows', advice: 'write "!" first to exclude ("!tenants/archive/**"), or drop the "!"' };
  }
  const named = hiddenName(glob);
  // `x/*(prod|qa).yaml`: the extglob may match nothing, and what is left names a dot-file.
  if (named !== undefined && hiddenName(glob.replace(/(?<!\\)([*?])\(/g, (_, c: string) => (c === '*' ? '+(' : '@('))) === undefined) {
    return { reason: `can name "${named.slice(0, 60)}", a dot-file or dot-folder, which dus-sync never reads: a "*(…)" or "?(…)" in it may match nothing`, advice: 'write "@(…)" for exactly one of the alternatives, or "+(…)" for one or more' };
  }
  if (named !== undefined) {
    return { reason: `names "${named.slice(0, 60)}" in a brace, an extglob or a class, ${named === 'node_modules' ? 'a node_modules folder' : 'a dot-file or dot-folder'}, which dus-sync never reads (it skips them as git tools and linters do)`, advice: 'move the files out of it' };
  }
  const slash = classes(glob).find((c) => classRegExp(c)?.test('/') === true);
  if (slash !== undefined) {
    return { reason: `holds the class "${slash.slice(0, 40)}", which can match "/", so the glob could name files deeper than its "/" say, which the walk does not list`, advice: 'leave "/" out of the class and name each folder level with "/"' };
  }
  // A class holding a character outside the basic plane (two code units), or ranging over the
  // code units that make such characters: picomatch's class reads the halves, src/load/glob-match.ts
  // (wholePairs) takes such a character as one only outside classes.
  const halves = classes(glob).find((c) => /[\uD800-\uDFFF]/.test(c) || (!c.startsWith('[^') && ['\uD800', '\uDBFF', '\uDC00', '\uDFFF'].some((x) => classRegExp(c)?.test(x) === true)));
  if (halves !== undefined) {
    return { reason: `holds the class "${halves.slice(0, 40)}", which holds or ranges over characters outside the basic plane (an emoji, say): picomatch's classes read each as two halves, so it matches other characters than it names`, advice: 'write such a character outside a class, or the alternatives as an extglob, as in "@(😀|🚀)"' };
  }
  const slow = unbounded(glob);
  if (slow !== undefined) return slow;
  const syntax = regExpSyntax(glob);
  if (syntax !== undefined) {
    return syntax === '(?'
      ? { reason: 'holds "(?", which picomatch does not read as a parenthesis and a wildcard: in its regular expression a group\'s modifier ("r(?:a|b).yaml" selects ra.yaml and rb.yaml), in an extglob the text itself ("@(?|ab).yaml" is @?.yaml or @ab.yaml)', advice: 'write "[?]" for the character; a "?" wildcard cannot come first inside parentheses' }
      : { reason: `holds "${syntax}", which picomatch passes to its regular expression, where a backslash before a letter or digit is a class or a code ("\\d" is any digit, "\\x41" is "A"), not the character`, advice: `write "${syntax.slice(1)}" itself, without the backslash` };
  }
  const quantified = quantifiedGroup(glob);
  if (quantified !== undefined) {
    const mark = quantified[quantified.length - 1]!;
    return { reason: `holds "${quantified.slice(0, 40)}", which picomatch passes to its regular expression, where the "${mark}" makes the ${quantified.startsWith('[') ? 'class' : quantified.startsWith('}') ? 'brace' : 'group'} before it ${mark === '?' ? 'optional' : 'repeat'} ("p/@(ab)?.yaml" selects p/ab.yaml, not p/abc.yaml; "[ab]+" selects a and abba, not a+)`, advice: `write "[${mark}]" for the character${mark === '?' ? '; for a wildcard, put it inside each alternative, as in "@(ab?)"' : '; for "one or more", "+(…)", as in "+([ab])"'}` };
  }
  const group = plainGroup(glob);
  if (group !== undefined) {
    const inside = group.slice(1, -1).slice(0, 40);
    return { reason: `holds the group "${group.slice(0, 40)}", which picomatch reads as the text inside it without the parentheses ("envs/prod (eu)/*.yaml" selects envs/prod eu, not envs/prod (eu))`, advice: `write "[(]${inside}[)]" for the parentheses themselves, or "@(${inside}|…)" for alternatives` };
  }
  try {
    const source = picomatch.makeRe(glob).source;
    const asText = extglobAsText(glob, source);
    if (asText !== undefined) return { reason: `holds the extglob "${asText}…", which picomatch reads here as plain text, parentheses and all (as it does for "+( |a)", a space beside its "|")`, advice: 'write the space as "[ ]", or the alternatives as separate globs' };
    if (source === '$^') return { reason: 'is a glob picomatch cannot read (an unclosed bracket, brace or parenthesis, or a reversed range as in "[z-a]"?), so it matches no file', advice: 'correct it' };
  } catch {
    // picomatch's own sentence follows, naming the glob.
  }
  if (glob.startsWith('/')) return { reason: 'is an absolute path; resources globs are relative to the folder of dus-sync.yaml', advice: 'write it from there' };
  if (glob.endsWith('/')) return { reason: 'ends with "/", so it would match folders, never a file', advice: 'drop the "/"' };
  // As the walk reads it: escapes removed (`y/\./*.yaml` is `y/./*.yaml`).
  const scan = picomatch.scan(glob, { unescape: true });
  const fixed = scan.isGlob ? scan.base : unescaped(glob.slice(scan.prefix.length));
  const segments = fixed === '' ? [] : fixed.split('/');
  let climbing = true;
  for (const s of segments) {
    if (s === '..' && climbing) continue;
    climbing = false;
    if (s === '' || s === '.' || s === '..') {
      return { reason: `names its folders in a form that no listed path has ("${s === '' ? '//' : s}"), so it would match no file`, advice: `write it as ${JSON.stringify(scan.isGlob ? [plainForm(fixed), scan.glob].filter((x) => x !== '').join('/') : plainForm(fixed))}` };
    }
  }
  // The same after the first wildcard or brace: a `.` segment (`sub/*/./*.yaml`, `{./a,b}/*.yaml`) or `//`.
  const rest = scan.isGlob ? unescaped(scan.glob) : '';
  const dot = /(?:^|[/{,(|])\.(?=$|[/},)|])/.exec(rest);
  // A brace can make one of its paths hold `//` (`envs/{/prod,z}`, `envs/{prod/,z}`), start or end with '/'.
  const emptyName = samples(glob).some((x) => x.includes('//') || x.startsWith('/') || x.endsWith('/'));
  const oneOrMore = glob.replace(/(?<!\\)([*?])\(/g, (_, c: string) => (c === '*' ? '+(' : '@('));
  if (dot === null && !rest.includes('//') && emptyName && !samples(oneOrMore).some((x) => x.includes('//') || x.startsWith('/') || x.endsWith('/'))) {
    return { reason: 'can name a path with an empty folder name ("//"): a "*(…)" or "?(…)" that is a whole folder name may match nothing', advice: 'write "@(…)" for exactly one of the alternatives, or "+(…)" for one or more' };
  }
  if (dot !== null || rest.includes('//') || emptyName) {
    return { reason: `names its folders in a form that no listed path has ("${dot !== null ? '.' : '//'}" after its first wildcard or brace), so that part would match no file`, advice: 'write each folder plainly' };
  }
  // A name without wildcards and without an extension is most likely a folder (the gitignore
  // habit, `!archive`), which matches no file here.
  if (!scan.isGlob) {
    const last = glob.slice(glob.lastIndexOf('/') + 1);
    // picomatch's scan says "no glob" for all of `p\\{q/**` after an escaped brace; its matcher
    // still reads the `**` (a wildcard not escaped is no folder's name).
    const wildcard = /(?:^|[^\\])(?:\\\\)*[*?]/.test(last);
    if (!last.includes('.') && !wildcard) {
      const folder = glob.replace(/^\.\//, '');
      return { reason: 'names no file (a folder, by its look: globs here match files, not folders)', advice: `write ${JSON.stringify(`${isExclusion(pattern) ? '!' : ''}${folder}/**`)} for everything below it` };
    }
  }
  return undefined;
}

/** `glob` with `.` and empty segments dropped and `x/..` pairs folded, leading `..` kept. */
function plainForm(glob: string): string {
  const out: string[] = [];
  for (const s of glob.split('/')) {
    if (s === '' || s === '.') continue;
    if (s === '..' && out.length > 0 && out[out.length - 1] !== '..') out.pop();
    else out.push(s);
  }
  return out.join('/');
}
