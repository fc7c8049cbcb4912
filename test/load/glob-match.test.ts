// The bounded matchers agree with picomatch on every listed path, and end on the globs that made
// picomatch's backtrack for minutes (src/load/glob-match.ts).
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import { BACKTRACKS_BEFORE_LINEAR, belowOnly, expandBraces, fileNameMayMatch, folderMayHold, globMatcher, globRegExp, hasLookaround, isBounded } from '../../src/load/glob-match.js';
import { globProblem } from '../../src/load/resource-globs.js';

// A small alphabet, so that the globs' letters (a, b, x) match often.
const name = fc.oneof({ arbitrary: fc.stringMatching(/^[abx]{1,3}(\.(yaml|yml))?$/), weight: 4 }, fc.stringMatching(/^[a-z0-9_-]{1,6}(\.(yaml|yml))?$/));
const wild = ['*', '**', '*.yaml', '*.{yaml,yml}', '?', '[a-m]*', '@(a|b)', '+(a|b)*', '*(x)*.yml', '!(a)', '!(a|b)*', '{a,b}', 'a*b*', '+(*/)', '*[a-c]', '*?', '?*', '*[!a]*', '{a,*}', '@(a|*)', '*+(a)', '{*.yaml,b}', 'a?(b)*', '{a/*,b}', '{a,{b,*}}', 'a**', '**a', '@(a/*|b)', '*(a/)', '[[:alpha:]]*', '\\*a', 'a\\?', '*/**', '**/*', '{**/a,b}', '*(*)', '?(*/)*'];
const part = fc.oneof(name, fc.constantFrom(...wild));
// Paths near a glob: each of its parts as a name it may match (a wildcard's letters, its
// alternatives, none or several names for '**'), or any name.
const near = (part: string): fc.Arbitrary<string> => {
  if (!wild.includes(part)) return fc.oneof(fc.constant(part), name);
  const letters = part.replace(/[^abx.ymlm/]/g, '');
  return fc.oneof(name, fc.constant(letters === '' || letters === '.' ? 'a' : letters.replace(/\/+$/, '')), fc.array(name, { minLength: 0, maxLength: 2 }).map((ns) => ns.join('/')));
};
const climbs = fc.constantFrom('', '', '', '../', '../../');
const globAndPaths = fc.tuple(climbs, fc.array(part, { minLength: 1, maxLength: 4 })).chain(([up, parts]) => fc.tuple(
  fc.constant(up + parts.join('/')),
  fc.array(fc.tuple(fc.oneof(fc.constant(up), climbs), fc.oneof(
    fc.tuple(...parts.map(near)).map((ns) => ns.filter((n) => n !== '').join('/')),
    fc.array(name, { minLength: 1, maxLength: 5 }).map((ns) => ns.join('/')),
    // Paths no listing gives: hostile names from a watch event, say.
    fc.constantFrom('a/../b.yaml', 'a/./b.yaml', '.a/b.yaml', 'a//b.yaml', 'a/', '..', '.', '', 'a/.b.yaml'),
  )).map(([u, p]) => u + p), { minLength: 1, maxLength: 20 }),
));

describe('glob matchers without picomatch\'s guards', () => {
  it('match what picomatch (dot: false) matches, on listed paths and others', () => {
    let checked = 0;
    let matched = 0;
    fc.assert(fc.property(globAndPaths, ([g, paths]) => {
      // "x/**" is everything below x, not x itself too (belowOnly), as gitignore and a shell read it.
      const theirs = picomatch(belowOnly(g), { dot: false });
      const ours = globMatcher([g]);
      for (const p of paths) {
        // A path no listing gives is matched by none; any other as picomatch matches it, but
        const names = p.split('/');
        const listed = names.some((n) => n !== '..') && names.slice(names.findIndex((n) => n !== '..')).every((n) => n !== '' && !n.startsWith('.'));
        // And a wildcard never takes a leading `..` (picomatch's `{a,*}` does).
        const up = (x: string) => x.split('/').findIndex((n) => n !== '..');
        expect([g, p, ours(p)]).toEqual([g, p, listed && up(g) === up(p) && theirs(p)]);
        checked++;
        if (ours(p)) matched++;
      }
    }), { numRuns: Number(process.env.GLOB_RUNS ?? 3000) });
    // Not a test of non-matches only.
    expect(matched / checked).toBeGreaterThan(0.04);
  });

  it('take a character outside the basic plane (an emoji: two UTF-16 code units) as one character, as they take any other', () => {
    // The oracle: the same glob and path with each such character swapped for one of the basic
    // plane, which every matcher takes as one character.
    const swap = (x: string) => x.replaceAll('😀', 'Ω').replaceAll('🚀', 'Ж');
    const char = fc.constantFrom('a', 'b', '😀', '🚀');
    const nm = fc.array(char, { minLength: 1, maxLength: 4 }).map((cs) => cs.join(''));
    const wildPart = fc.constantFrom('?', '??', '*', '[^a]', '[^a]?', '*😀*', '@(😀|a)', '+(🚀)', '?(😀)b', 'a*', '*?', '{😀,b}?', '[ab]?', '**');
    const gp = fc.array(fc.oneof(nm, wildPart), { minLength: 1, maxLength: 3 }).chain((parts) => fc.tuple(fc.constant(parts.join('/')),
      fc.array(fc.array(nm, { minLength: 1, maxLength: 3 }).map((ns) => ns.join('/')), { minLength: 1, maxLength: 10 })));
    let matched = 0;
    fc.assert(fc.property(gp, ([g, paths]) => {
      if (globProblem(g) !== undefined) return;
      const ours = globMatcher([g]);
      const oracle = globMatcher([swap(g)]);
      for (const p of paths) {
        expect([g, p, ours(p)]).toEqual([g, p, oracle(swap(p))]);
        if (ours(p)) matched++;
      }
    }), { numRuns: Number(process.env.GLOB_RUNS ?? 3000) });
    expect(matched).toBeGreaterThan(100);
    // And classes that would read the halves are refused.
    for (const g of ['r[😀]*.yaml', 'r[^😀]*.yaml', 'r[a-\uFFFF].yaml']) expect([g, globProblem(g)?.reason]).toEqual([g, expect.stringContaining('outside the basic plane')]);
  });

  it('keep no lookaround but for negated extglobs', () => {
    for (const g of ['tenants/**/*.yaml', '**/*.{yaml,yml}', 'tenants/*-prod*.yaml', '+(*/)*.yaml', '*.y?(a)ml', '**']) expect([g, hasLookaround(globRegExp(g))]).toEqual([g, false]);
    expect(hasLookaround(globRegExp('!(archive)/*.yaml'))).toBe(true);
    expect(hasLookaround(globRegExp('tenants/*a*a*a*a*a*a*b.yaml'))).toBe(false);
  });

  it('end on the globs that backtracked for minutes, with V8\'s fallback on (as the matchers set it)', () => {
    const slow = ['tenants/+(*a)b.yaml', `tenants/${'{a,aa}'.repeat(30)}b.yaml`, `tenants/*${'{a,aa}'.repeat(20)}b.yaml`, 'tenants/+([a-z]|[a-z][a-z])b.yaml', 'tenants/*a*a*a*a*a*a*b.yaml'];
    const code = `
      require('node:v8').setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
      require('node:v8').setFlagsFromString('--regexp-backtracks-before-fallback=${BACKTRACKS_BEFORE_LINEAR}');
      const pm = require('picomatch');
      const sources = ${JSON.stringify(slow.filter((g) => !hasLookaround(globRegExp(g))).map((g) => globRegExp(g).source))};
      for (const s of sources) new RegExp(s).test('tenants/' + 'a'.repeat(200) + '.yaml');
      process.stdout.write('done');`;
    const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8', timeout: 20_000, cwd: process.cwd() });
    expect(r.stdout).toBe('done');
  });

  it('every glob the load accepts can run on the linear engine', () => {
    const nest = (n: number): string => (n === 0 ? 'a' : `+(a${nest(n - 1)})`);
    const adversarial = ['tenants/+(*a)b.yaml', `tenants/${'{a,aa}'.repeat(30)}b.yaml`, 'tenants/+([a-z]|[a-z][a-z])b.yaml', 'tenants/*a*a*a*a*a*a*b.yaml',
      ...[1, 2, 3, 4, 5, 6, 8].map((n) => `tenants/${nest(n)}b.yaml`), 'tenants/[[:alpha:]](a+)+\\1b.yaml', '!(*a*a)/*.yaml', '!(a)/{a,b}*.yaml', 'x/!(a)*/*a*a*.yaml', '!(archive|old)/*.yaml'];
    const accepted = (g: string) => globProblem(g) === undefined;
    for (const g of adversarial) {
      if (!accepted(g)) continue;
      expect([g, isBounded(globRegExp(g))]).toEqual([g, true]);
    }
    fc.assert(fc.property(fc.array(fc.constantFrom(...wild, '+(', '*(', '@(', ')', '|', '{', '}', ','), { minLength: 1, maxLength: 8 }), (ps) => {
      const g = ps.join('');
      if (!accepted(g)) return;
      expect([g, isBounded(globRegExp(g))]).toEqual([g, true]);
    }), { numRuns: 3000 });
  });

  it('globs users write are not refused', () => {
    const ok = ['tenants/**/*.yaml', '**/*.{yaml,yml}', 'envs/*/firmware-*.yaml', '!archive/**', 'tenants/[a-m]*/*.yaml', 'tenants/acme-?.yaml', '@(prod|stage)/*.yaml', '**/*.y?(a)ml',
      '**/*.+(yaml|yml)', 'releases/{2023,2024,2025}/*.yaml', 'v{1..3}/*.yaml', 'tenants/**/*.[yY][aA][mM][lL]', '*.yaml', 'x/{a,b}.yaml', 'tenants/*.{yaml,yml}', '{a,b}/{c,d}/{e,f}/*.yaml', 'a/*-prod*.yaml',
      'envs/**/firmware.yaml', '../shared/*.yaml', 'tenants/**/!README.yaml', 'tenants/x[0-9][0-9].yaml', 'tenants/report \\(1\\).yaml', 'tenants/report [(]1[)].yaml', 'envs/(prod|qa)/*.yaml', 'y/*["]d["].yaml', 'y/*\\"d.yaml', 'r[\\\\d].yaml', 'r\\[*.yaml', 'r\\(?.yaml', 'p[{]q/**', 'p\\(q/**', 'p/@(ab?).yaml', 'p/@(a)[+].yaml', 'r[\\\\][\\\\]x.yaml', 'p/@(a)*.yaml', 'tenants/v\\(2.yaml', `{${Array.from({ length: 300 }, (_, i) => `t${i}`).join(',')}}/*.yaml`];
    for (const g of ok) expect([g, globProblem(g)]).toEqual([g, undefined]);
    // What picomatch reads as other than it looks (the text itself, a class of single characters, "or" of the whole glob) is refused.
    for (const g of ['releases/{2023..2025}/*.yaml', 'v{1..10}/*.yaml', 'v{1..9..2}/*.yaml', 'envs/prod|qa/*.yaml', 'tenants/report (1).yaml', 'y/*"d".yaml', '!envs/\\dev/**', 'r[\\d].yaml', 'r(?:a|b).yaml', 'p[!]q/*.yaml', 'p[*/*.yaml', 'r[*.yaml', 'r{+..-}.yaml', 'r\\\\d.yaml', 'x\\\\ y/*.yaml', 'p/@(ab)?.yaml', '!envs/@(prod)+/**', 'r\\\\\\\\x.yaml']) expect([g, globProblem(g)?.reason.slice(0, 6)]).toEqual([g, 'holds ']);
  });
});

// A breaker's find: a dangling link in envs/dev refused a run of `envs/+(prod|qa)/*.yaml`, which
// can match nothing below envs/dev: the walk took any extglob before a '/' to reach every depth,
// and reported every link it did not follow. Links not followed are reported only below a folder
// some glob may still match in (src/load/find.ts).
describe('whether a folder may hold a path a glob matches', () => {
  // Beside the matchers' parts: a '!' starting a part or an alternative, braces holding a '/'
  // beside extglobs, which picomatch reads otherwise once expanded (a breaker's finds).
  const tricky = ['!a', '!b/a', '{a/b,+(a)}?', '{x/,}+(a|b)', '{a,b/a}', '@(a|b)?', '{!a,b/x}', '{a/,b/}*', 'a{,/b}', '{a,b}/{x,a/b}'];
  const trickyPart = fc.oneof(part, fc.constantFrom(...tricky));
  const trickyNear = (p: string): fc.Arbitrary<string> => (tricky.includes(p) ? fc.oneof(name, fc.constantFrom('a', 'b', 'x', '!a', '!b', 'a/b', 'b/a', 'ax', 'a1', 'b/x', 'x/a')) : near(p));
  const trickyGlobAndPaths = fc.array(trickyPart, { minLength: 1, maxLength: 4 }).filter((ps) => !ps[0]!.startsWith('!')).chain((ps) => fc.tuple(
    fc.constant(ps.join('/')),
    fc.array(fc.tuple(...ps.map(trickyNear)).map((ns) => ns.filter((n) => n !== '').join('/')), { minLength: 1, maxLength: 20 }),
  ));

  it('never says no where the load\'s matcher (picomatch\'s, above) selects a path below the folder', () => {
    let yes = 0;
    fc.assert(fc.property(fc.oneof(globAndPaths, trickyGlobAndPaths), ([g, paths]) => {
      const selects = globMatcher([g]);
      const mayHold = folderMayHold([g]);
      const nameMay = fileNameMayMatch([g]);
      for (const p of paths) {
        const names = p.split('/');
        if (!selects(p)) continue;
        expect([g, p, 'name', nameMay(names.at(-1)!)]).toEqual([g, p, 'name', true]);
        for (let k = 1; k < names.length; k++) {
          const folder = names.slice(0, k).join('/');
          expect([g, p, folder, mayHold(folder)]).toEqual([g, p, folder, true]);
          yes++;
        }
      }
    }), { numRuns: Number(process.env.GLOB_RUNS ?? 3000) });
    expect(yes).toBeGreaterThan(100);
  });

  it('says no for folders no path below can match, through braces and extglobs without a "/"', () => {
    const cases: [string, string, boolean][] = [
      ['envs/+(prod|qa)/*.yaml', 'envs', true], ['envs/+(prod|qa)/*.yaml', 'envs/prod', true], ['envs/+(prod|qa)/*.yaml', 'envs/qaprod', true],
      ['envs/+(prod|qa)/*.yaml', 'envs/dev', false], ['envs/+(prod|qa)/*.yaml', 'envs/prod/x', false], ['envs/+(prod|qa)/*.yaml', 'other', false],
      ['envs/{prod/x,qa}/*.yaml', 'envs/prod', true], ['envs/{prod/x,qa}/*.yaml', 'envs/prod/x', true], ['envs/{prod/x,qa}/*.yaml', 'envs/qa', true],
      ['envs/{prod/x,qa}/*.yaml', 'envs/dev', false], ['envs/{prod/x,qa}/*.yaml', 'envs/prod/y', false], ['envs/{prod/x,qa}/*.yaml', 'envs/qa/x', false],
      ['envs/@(prod)/*.yaml', 'envs/dev', false], ['envs/*/*.yaml', 'envs/dev', true], ['envs/*/*.yaml', 'envs/dev/x', false],
      ['tenants/**/*.yaml', 'tenants/a/b/c', true], ['tenants/**/*.yaml', 'shared', false], ['*.yaml', 'a', false],
      ['*/+(*/)f.yaml', 'a/b/c', true], ['envs/+(a|{b/c,d})/*.yaml', 'envs/x', true], ['v\\[1\\]/*.yaml', 'v[1]', true], ['v\\[1\\]/*.yaml', 'v1', false],
    ];
    for (const [g, folder, may] of cases) expect([g, folder, folderMayHold([g])(folder)]).toEqual([g, folder, may]);
    expect(folderMayHold(['envs/+(prod|qa)/*.yaml', 'envs/dev/*.yaml'])('envs/dev')).toBe(true);
  });

  it('expands the braces that hold a "/" as picomatch reads them, and gives up past 256 alternatives', () => {
    expect(expandBraces('envs/{prod/x,qa}/*.yaml')).toEqual(['envs/prod/x/*.yaml', 'envs/qa/*.yaml']);
    expect(expandBraces('{a,{b,c}/d}/x')).toEqual(['a/x', '{b,c}/d/x']);
    expect(expandBraces('a{,b/c}/x')).toEqual(['a/x', 'ab/c/x']);
    // Left to picomatch within their part: no "/" in them, or read otherwise alone than beside the brace.
    for (const g of ['{a,b}/x', '\\{a/,b}/x', '[{]a/,b}/x', '+(a|{b/,c})/x', '{1..3}/x', '{a/}/x', 'envs/{prod/x,+(qa)}?/*.yaml', '{x2/,}+(?|ab)', '{a/|b,c}/x']) expect(expandBraces(g)).toEqual([g]);
    expect(expandBraces('{a/,b/}'.repeat(8) + 'x')).toHaveLength(256);
    expect(expandBraces('{a/,b/}'.repeat(9) + 'x')).toBeUndefined();
    expect(folderMayHold(['{a/,b/}'.repeat(9) + 'x.yaml'])('zzz')).toBe(true);
  });

  it('says no for file names no path ending in them can match', () => {
    expect(fileNameMayMatch(['**/*.yaml'])('f.bin')).toBe(false);
    expect(fileNameMayMatch(['**/*.yaml'])('f.yaml')).toBe(true);
    expect(fileNameMayMatch(['envs/{a/x.yaml,b/*.yml}'])('x.yaml')).toBe(true);
    expect(fileNameMayMatch(['envs/{a/x.yaml,b/*.yml}'])('y.yaml')).toBe(false);
    expect(fileNameMayMatch(['*/+(*/)f.yaml'])('f.yaml')).toBe(true);
    expect(fileNameMayMatch(['envs/**'])('anything.bin')).toBe(true);
  });

  it('reads a "!" at the start of a part or an alternative as the character, as picomatch does inside a glob', () => {
    expect(folderMayHold(['envs/*/!x/*.yaml'])('envs/p/!x')).toBe(true);
    expect(folderMayHold(['envs/*/!x/*.yaml'])('envs/p/x')).toBe(false);
    expect(folderMayHold(['envs/{!legacy/a,prod}/*.yaml'])('envs/!legacy')).toBe(true);
    expect(folderMayHold(['{!legacy/a,envs}/*.yaml'])('!legacy')).toBe(true);
    expect(folderMayHold(['envs/{prod,+(qa)}?/*.yaml'])('envs/qa1')).toBe(true);
  });
});
