// V8's tuning for a command that runs for seconds, not days.
import { setFlagsFromString } from 'node:v8';

/**
 * TurboFan's budget for inlining into one optimized function, in bytecode bytes (V8's default
 * 920). A run of a few seconds spends more compiling deep inlines than it gains from them: at
 * 20,000 documents the optimizing compiler took a quarter of validate's instructions (it runs on
 * another thread, which on a machine of 2 cores takes time from the run). With 200: validate
 * 4.76 -> 4.53 billion instructions, plan 8.87 -> 8.52; the same wall time at 200,000 documents
 * (docs/performance.md). watch and the emulator, which run for days, keep V8's default.
 */
export const SHORT_RUN_INLINING_BUDGET = 200;

const FLAG = '--max-inlined-bytecode-size-cumulative';

/** Sets the budget unless the command line chose one (`node --max-inlined-bytecode-size-cumulative=N dist/cli.js ...`). */
export function tuneForShortRun(execArgv: readonly string[] = process.execArgv): void {
  if (execArgv.some((a) => a.startsWith(FLAG))) return;
  setFlagsFromString(`${FLAG}=${SHORT_RUN_INLINING_BUDGET}`);
}
