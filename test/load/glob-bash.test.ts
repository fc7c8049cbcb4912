// The files a resources glob selects are those bash selects with the same glob (extglob and
// globstar on): random trees whose names hold punctuation, spaces, emoji and accents, and random
// globs of literals (escaped or not), wildcards, classes, braces and extglobs. What dus-sync
// refuses (globs picomatch reads otherwise than they look, src/load/resource-globs.ts) is left
// out; everything else must select exactly what bash does. Breakers found each kind of
// difference this holds against: regular-expression syntax passed through (`\d`, `(?:`, `)?`,
// `[ab]+`), quoting, emoji taken as two characters, `x/**` selecting a file x, the walk's
// reading of `\{`, an escaped backslash dropped, an extglob read as text. (Not generated: an
// extglob that may match nothing inside another, `@(*(a)|b)`, which bash's expansion, unlike its
// own `[[ x == … ]]`, matches only when something is matched.)
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/load/config.js';
import { listResourceFiles } from '../../src/load/index.js';

/** A small deterministic generator: the same trees and globs on every run. */
function generator(seed: number) {
  let s = (Math.imul(seed, 2654435761) >>> 1) || 1;
  const rnd = () => {
    s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff;
    return s / 0x7fffffff;
  };
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const CH = ['a', 'b', 'a', 'b', 'c', '(', ')', '[', ']', '{', '}', '!', '@', '+', ',', '-', ' ', '😀', 'é', '=', '#', '%', '~', '^', '$', "'", '*', '?', '\\', '|', '&', ';'];
  const SPECIAL = new Set(['(', ')', '[', ']', '{', '}', '!', '@', '+', '*', '?', '\\', '|', ',', '"']);
  const lit = (c: string) => (SPECIAL.has(c) ? `\\${c}` : c);
  const name = () => Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(CH)).join('');
  const token = (): string => pick([
    () => lit(pick(CH)), () => lit(pick(CH)), () => lit(pick(CH)), () => '*', () => '?',
    () => `[${pick(['ab', 'a-c', '^a', '(', '!-~', ']a', '^)', '😀', 'é-ü', '^😀', '\\]', '[', '-a', 'a-'])}]`,
    () => `{${lit(pick(CH))},${lit(pick(CH))}}`, () => `{${pick(['a..c', 'a,b', '(,)', 'a,{b,c}', '😀,a'])}}`,
    () => `${pick(['@', '*', '+', '?'])}(${lit(pick(CH))}|${lit(pick(CH))}${pick(['', '*'])})`,
    () => `@(${pick(['a|@(b|c)', '+(a)|b', '😀|?', '[ab]|c', 'a/b|c'])})`, () => '\\\\',
    () => pick(CH), // unescaped, as a user might type it
  ])();
  const part = () => (rnd() < 0.1 ? '**' : Array.from({ length: 1 + Math.floor(rnd() * 3) }, token).join(''));
  return {
    paths: () => Array.from({ length: 40 }, () => Array.from({ length: 1 + Math.floor(rnd() * 3) }, name).join('/')),
    glob: () => Array.from({ length: 1 + Math.floor(rnd() * 3) }, part).join('/'),
  };
}

/** The glob as one bash word: its escapes kept, the shell's own characters escaped. */
function bashWord(g: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < g.length; i++) {
    const c = g[i]!;
    if (c === '\\') {
      out += c + (g[i + 1] ?? '');
      i++;
      continue;
    }
    if (!inClass && c === '[' && g.indexOf(']', i + 2) > 0) inClass = true;
    else if (inClass && c === ']' && g[i - 1] !== '[' && !(g[i - 1] === '^' && g[i - 2] === '[')) inClass = false;
    // The shell's own characters, and parentheses within a class (bash's parser takes them for its own).
    out += /[ ;&<>'"$`=#%~|]/.test(c) && (inClass || c !== '|') || (inClass && /[()]/.test(c)) ? `\\${c}` : c;
  }
  return out;
}

describe.skipIf(process.platform === 'win32')('resources globs select what bash selects', () => {
  it('on random trees and globs (extglob, globstar)', async () => {
    let compared = 0;
    let selecting = 0;
    let unreadable = 0;
    const differ: string[] = [];
    for (const seed of process.env.GLOB_BASH_SEEDS?.split(",").map(Number) ?? [1, 2, 3, 4, 5, 6]) {
      const g = generator(seed);
      const dir = mkdtempSync(join(tmpdir(), 'dus-glob-bash-'));
      try {
        for (const p of g.paths()) {
          if (p.split('/').some((n) => n.startsWith('.'))) continue;
          try {
            mkdirSync(dirname(join(dir, p)), { recursive: true });
            writeFileSync(join(dir, p), '');
          } catch {
            // a name that is a file and a folder at once: one of them is left out
          }
        }
        for (let k = 0; k < 40; k++) {
          const glob = g.glob();
          if (glob.startsWith('!')) continue;
          writeFileSync(join(dir, 'dus-sync.yaml'), `apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\nresources: ${JSON.stringify([glob])}\n`);
          let ours: string[];
          try {
            ours = (await listResourceFiles(await resolveConfig({ cwd: dir, env: {} }))).filter((p) => p !== 'dus-sync.yaml');
          } catch (err) {
            if ((err as Error).name === 'UserError' || /resources glob/.test((err as Error).message)) continue;
            throw err;
          }
          const script = `for f in ${bashWord(glob)}; do [ -f "$f" ] && [ "$f" != dus-sync.yaml ] && printf '%s\\0' "$f"; done; true`;
          let said: string;
          try {
            said = execFileSync('bash', ['-O', 'extglob', '-O', 'globstar', '-O', 'nullglob', '-c', script], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
          } catch {
            unreadable++; // a glob bash's parser cannot take as one word
            continue;
          }
          const bash = [...new Set(said.split('\0').filter(Boolean))].sort();
          compared++;
          if (bash.length > 0) selecting++;
          if (JSON.stringify([...ours].sort()) !== JSON.stringify(bash)) differ.push(`${glob}: dus-sync ${JSON.stringify(ours)}, bash ${JSON.stringify(bash)}`);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    if (process.env.GLOB_BASH_LOG) console.log({ compared, selecting, unreadable, differ: differ.slice(0, 20) });
    expect(differ).toEqual([]);
    // Not a test of globs that select nothing.
    expect(compared).toBeGreaterThan(60);
    expect(unreadable).toBeLessThan(compared / 10);
    expect(selecting).toBeGreaterThan(15);
  }, Number(process.env.GLOB_BASH_TIMEOUT ?? 60_000));
});
