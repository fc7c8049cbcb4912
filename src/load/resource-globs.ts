// Pure: what makes a `resources` glob read other files than the ones it names. The walk lists
// folders down from a glob's fixed part (src/load/find.ts) and picomatch matches the paths it
// lists as they are written, so a glob must name its folders plainly: breakers found globs that
// read the repository's own x/ in place of ../x (`{../x}/*.yaml`), read nothing without a word
// (`tenants/../x/*.yaml`, `x//*.yaml`, `/x/*.yaml`, `x/*.yaml/`), or were taken for an exclusion
// (`!(tenants)/*.yaml`, picomatch's "anything but tenants").
import { posix } from 'node:path';
import picomatch from 'picomatch';
import { globRegExp, hasLookaround } from './glob-match.js';

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
 * Why a glob's matcher could still backtrack for long, or undefined. Matchers without lookarounds
 * are bounded (src/load/glob-match.ts: V8 falls back to its linear engine); what keeps one is a
 * negated extglob (`!(archive)`). Such a glob is bounded when its negations are of plain names and
 * the rest holds no braces, no other extglob, at most two `*` in a name and one `**`: then
 * picomatch's backtracking is polynomial in a name's length, and names are short.
 */
function unbounded(glob: string): string | undefined {
  let re: RegExp;
  try {
    re = globRegExp(glob);
  } catch {
    return undefined; // picomatch's own refusal comes with the match; nothing is slow about it.
  }
  if (!hasLookaround(re)) return undefined;
  const bodies = [...glob.matchAll(/!\(([^()]*)\)/g)].map((m) => m[1]!);
  const plain = bodies.length === glob.split('!(').length - 1 && bodies.every((b) => /^[\w.-]+(?:\|[\w.-]+)*$/.test(b));
  const rest = glob.replace(/!\([^()]*\)/g, 'x');
  const stars = Math.max(...rest.split('/').map((n) => (n === '**' ? 0 : n.split('*').length - 1)));
  if (plain && !/[{}()]/.test(rest) && stars <= MAX_STARS_IN_A_NAME && rest.split('**').length <= 2) return undefined;
  return 'holds a negated extglob "!(…)" of wildcards, or one beside braces, other extglobs, more than two "*" in a name or more than one "**"; only a backtracking matcher can match that, and against a long file name it can take minutes';
}

/** Most `*` in one name beside a negated extglob (see unbounded). */
const MAX_STARS_IN_A_NAME = 2;

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
  const glob = globOf(pattern);
  if (glob === '') return { reason: 'is an exclusion of nothing', advice: 'write the files to exclude after the "!", as in "!archive/**"' };
  if (isExclusion(pattern) && isExclusion(glob)) return { reason: 'starts with more than one "!", which picomatch and dus-sync read differently', advice: 'write one "!" to exclude, none to include' };
  for (const name of glob.split('/')) {
    const plain = unescaped(name);
    if (plain === 'node_modules' || (plain.startsWith('.') && plain !== '.' && plain !== '..')) {
      return { reason: `names "${plain.slice(0, 60)}", ${plain === 'node_modules' ? 'a node_modules folder' : 'a dot-file or dot-folder'}, which dus-sync never reads (it skips them as git tools and linters do)`, advice: 'move the files out of it' };
    }
  }
  // The same named inside a brace or an extglob at the start of a name (`{.dus,tenants}/*.yaml`).
  for (const group of unescaped(glob).matchAll(/(?:^|\/)[@!+*?]?[({]([^(){}]*)[)}]/g)) {
    const dotted = group[1]!.split(/[,|]/).find((alt) => alt.startsWith('.') && alt !== '.' && alt !== '..' && !alt.startsWith('./') && !alt.startsWith('../'));
    if (dotted !== undefined) {
      return { reason: `names "${dotted.slice(0, 60)}" in a brace or extglob, a dot-file or dot-folder, which dus-sync never reads (it skips them as git tools and linters do)`, advice: 'move the files out of it' };
    }
  }
  const slow = unbounded(glob);
  if (slow !== undefined) return { reason: slow, advice: 'name what to leave out in a separate exclusion, as in "!archive/**", or write the negation of plain names ("!(archive|old)/*.yaml")' };
  if (climbsInGlob(glob)) {
    return { reason: 'holds ".." after its first wildcard or brace, where it matches no folder (dus-sync lists only folders below a glob\'s fixed part)', advice: 'write ".." only at its start, as in "../x/*.yaml", or name the folders without it' };
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
  if (dot !== null || rest.includes('//')) {
    return { reason: `names its folders in a form that no listed path has ("${dot !== null ? '.' : '//'}" after its first wildcard or brace), so that part would match no file`, advice: 'write each folder plainly' };
  }
  // A name without wildcards and without an extension is most likely a folder (the gitignore
  // habit, `!archive`), which matches no file here.
  if (!scan.isGlob) {
    const last = glob.slice(glob.lastIndexOf('/') + 1);
    if (!last.includes('.')) {
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
