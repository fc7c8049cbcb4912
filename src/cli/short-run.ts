// V8's tuning for a command that runs for seconds, not days.
import { setFlagsFromString } from 'node:v8';
import { linearFallback } from '../regexp-engine.js';

/**
 * TurboFan's budget for inlining into one optimized function, in bytecode bytes (V8's default
 * 920). A run of a few seconds spends more compiling deep inlines than it gains from them: at
 * 20,000 documents the optimizing compiler took a quarter of validate's instructions (it runs on
 * another thread, which on a machine of 2 cores takes time from the run). With 200: validate
 * 4.76 -> 4.53 billion instructions, plan 8.87 -> 8.52; the same wall time at 200,000 documents
 * (docs/performance.md). watch and the emulator, which run for days, keep V8's default.
 */
export const SHORT_RUN_INLINING_BUDGET = 200;

/**
 * How far the heap may grow past what the last full collection found live, in percent: V8 lets
 * it grow up to 4× on a machine with memory to spare, and plan at 200,000 records (some 60 MB
 * live at its last full collection, three seconds before the end) ended with 240 MB of heap, most
 * of it the garbage of the pages and documents read since, never collected. At 2× (100): peak
 * RSS 335 -> 295 MB at 200,000 records, 133 -> 123 MB at 20,000, the same CPU time within this
 * machine's noise (paired runs, docs/performance.md). watch sets its own (25, src/cli/watch.ts).
 */
export const SHORT_RUN_HEAP_GROWING_PERCENT = 100;

const FLAGS: readonly (readonly [string, number])[] = [
  ['--max-inlined-bytecode-size-cumulative', SHORT_RUN_INLINING_BUDGET],
  ['--heap-growing-percent', SHORT_RUN_HEAP_GROWING_PERCENT],
];

/**
 * Sets each flag unless the command line chose it (`node --heap-growing-percent=N dist/cli.js ...`),
 * and turns on the regular expressions' linear fallback the glob matchers would turn on later:
 * every flag a one-shot command sets is set before its code is compiled (dist/cli.js calls this
 * first), as when V8's code cache of dist/ was made (scripts/code-cache.mjs). Setting a flag to
 * the value it has changes nothing, so the command's own call later is harmless.
 */
export function tuneForShortRun(execArgv: readonly string[] = process.execArgv): void {
  for (const [flag, value] of FLAGS) {
    if (execArgv.some((a) => a === flag || a.startsWith(`${flag}=`))) continue;
    setFlagsFromString(`${flag}=${value}`);
  }
  verifyCodeCaches(execArgv);
  linearFallback();
}

/**
 * Turns on V8's checksum of code caches (below) unless the command line chose: dist/cli.js does
 * it first in every run, watch and the emulator too, whose V8 flags are otherwise its defaults (a
 * damaged cache made under those flags crashed them).
 */
export function verifyCodeCaches(execArgv: readonly string[] = process.execArgv): void {
  if (!execArgv.some((a) => a === CODE_CACHE_CHECKSUM || a === `--no-${CODE_CACHE_CHECKSUM.slice(2)}`)) setFlagsFromString(CODE_CACHE_CHECKSUM);
}

/**
 * V8's checksum of a code cache, made with it and checked before it is used: off in release
 * builds, where a damaged cache of dist/ crashed the process in V8's deserializer or ran other
 * code (src/cli/code-cache.ts). Some 0.3 ms for the 1.2 MB a cold validate reads.
 */
export const CODE_CACHE_CHECKSUM = '--verify-snapshot-checksum';

/**
 * Whether the command line runs watch or the emulator, which run for days and keep V8's defaults.
 * Read before commander parses it (dist/cli.js tunes V8 before it loads anything else): a word
 * `watch` or `emulator` anywhere counts, so an option's value spelled so (`--tenant watch`) makes
 * a one-shot command start with V8's defaults and tune when it runs, as it did before; only its
 * start is slower (the code cache, made under the tuned flags, is not taken).
 */
export function runsForDays(args: readonly string[]): boolean {
  return args.includes('watch') || args.includes('emulator');
}

