// The one-shot commands lower TurboFan's inlining budget and how far the heap grows between full
// collections (src/cli/short-run.ts); watch and the emulator, which run for days, keep V8's
// defaults; a value chosen on the command line is kept.
import type * as V8 from 'node:v8';
import { beforeEach, describe, expect, it, vi } from 'vitest';

const set = vi.fn();
vi.mock('node:v8', async (original) => ({ ...(await original<typeof V8>()), setFlagsFromString: (f: string) => set(f) }));

const { CODE_CACHE_CHECKSUM, SHORT_RUN_HEAP_GROWING_PERCENT, SHORT_RUN_INLINING_BUDGET, runsForDays, tuneForShortRun } = await import('../../src/cli/short-run.js');
const { LINEAR_FALLBACK_FLAGS } = await import('../../src/regexp-engine.js');

describe('V8 tuning for a short run', () => {
  beforeEach(() => set.mockClear());

  it('sets the inlining budget and the heap growing factor, and the linear fallback of regular expressions once', () => {
    tuneForShortRun([]);
    expect(set.mock.calls).toEqual([
      [`--max-inlined-bytecode-size-cumulative=${SHORT_RUN_INLINING_BUDGET}`],
      [`--heap-growing-percent=${SHORT_RUN_HEAP_GROWING_PERCENT}`],
      [CODE_CACHE_CHECKSUM],
      ...LINEAR_FALLBACK_FLAGS.map((f) => [f]),
    ]);
    set.mockClear();
    tuneForShortRun([]);
    expect(set.mock.calls).toEqual([
      [`--max-inlined-bytecode-size-cumulative=${SHORT_RUN_INLINING_BUDGET}`],
      [`--heap-growing-percent=${SHORT_RUN_HEAP_GROWING_PERCENT}`],
      [CODE_CACHE_CHECKSUM],
    ]);
  });

  it('tells watch and the emulator, which run for days, from the rest before commander reads the line', () => {
    for (const args of [['watch'], ['--config', 'x.yaml', 'watch', '--listen', ':9090'], ['emulator', '--port', '0']]) expect([args, runsForDays(args)]).toEqual([args, true]);
    for (const args of [[], ['validate'], ['plan', '--format', 'json'], ['--config', 'watchtower.yaml', 'apply'], ['--help']]) expect([args, runsForDays(args)]).toEqual([args, false]);
  });

  it('keeps a value chosen on the command line, flag by flag', () => {
    tuneForShortRun(['--max-inlined-bytecode-size-cumulative=920']);
    expect(set.mock.calls).toEqual([[`--heap-growing-percent=${SHORT_RUN_HEAP_GROWING_PERCENT}`], [CODE_CACHE_CHECKSUM]]);
    set.mockClear();
    tuneForShortRun(['--heap-growing-percent=400']);
    expect(set.mock.calls).toEqual([[`--max-inlined-bytecode-size-cumulative=${SHORT_RUN_INLINING_BUDGET}`], [CODE_CACHE_CHECKSUM]]);
    set.mockClear();
    tuneForShortRun(['--heap-growing-percent=400', '--max-inlined-bytecode-size-cumulative=920', '--no-verify-snapshot-checksum']);
    expect(set).not.toHaveBeenCalled();
  });

  it('does not take a flag that only begins the same for the one chosen', () => {
    tuneForShortRun(['--heap-growing-percentage-x=1']);
    expect(set).toHaveBeenCalledWith(`--heap-growing-percent=${SHORT_RUN_HEAP_GROWING_PERCENT}`);
  });

  it('is asked for by every command but watch and the emulator', async () => {
    const { readFileSync } = await import('node:fs');
    const main = readFileSync('src/cli/main.ts', 'utf8');
    const actions = [...main.matchAll(/\.action\(lazy\(\(\) => import\('\.\/([\w-]+)\.js'\)(, true)?\)\)/g)].map((m) => [m[1], m[2] !== undefined]);
    expect(actions.length).toBeGreaterThan(8);
    for (const [command, long] of actions) expect([command, long]).toEqual([command, command === 'watch' || command === 'emulator']);
  });
});
