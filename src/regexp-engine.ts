// V8's linear-time regular expression engine, as the fallback of expressions that backtrack too
// much. The glob matchers (src/load/glob-match.ts) rely on it; one-shot commands turn it on before
// any of their code is compiled (src/cli/short-run.ts), so that V8's code cache of dist/, made
// with these flags at build time, is taken (V8 refuses a cache made under other flags).
import { setFlagsFromString } from 'node:v8';

/**
 * The backtracks V8 allows a regular expression before it runs it on its linear engine instead
 * (V8's default is 50,000: 0.33 ms a file against `+(*a)b.yaml` and a name of 250 characters; at
 * 1,000, 0.05 ms). Matching on the linear engine from the start, flag `l`, was 40 times slower on
 * plain globs (1.5 s against 38 ms for 200,000 paths), so it is the fallback, not the way.
 */
export const BACKTRACKS_BEFORE_LINEAR = 1000;

export const LINEAR_FALLBACK_FLAGS: readonly string[] = [
  '--enable-experimental-regexp-engine',
  '--enable-experimental-regexp-engine-on-excessive-backtracks',
  `--regexp-backtracks-before-fallback=${BACKTRACKS_BEFORE_LINEAR}`,
];

let ready: boolean | undefined;

/**
 * Turns on V8's linear engine as the fallback of expressions that backtrack too much, and its flag
 * `l`, which says whether an expression can run there. Once a process, so that every caller (the
 * CLI, watch, tests) gets it. False when V8 has no such engine.
 */
export function linearFallback(): boolean {
  ready ??= setUp();
  return ready;
}

function setUp(): boolean {
  try {
    for (const flag of LINEAR_FALLBACK_FLAGS) setFlagsFromString(flag);
    // eslint-disable-next-line no-invalid-regexp -- V8's flag for its linear engine, which the lines above turn on
    return new RegExp('a', 'l').flags.includes('l');
  } catch {
    return false;
  }
}
