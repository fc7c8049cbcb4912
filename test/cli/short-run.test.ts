// The one-shot commands lower TurboFan's inlining budget (src/cli/short-run.ts); watch and the
// emulator, which run for days, keep V8's default; a budget on the command line is kept.
import type * as V8 from 'node:v8';
import { beforeEach, describe, expect, it, vi } from 'vitest';

const set = vi.fn();
vi.mock('node:v8', async (original) => ({ ...(await original<typeof V8>()), setFlagsFromString: (f: string) => set(f) }));

const { SHORT_RUN_INLINING_BUDGET, tuneForShortRun } = await import('../../src/cli/short-run.js');

describe('V8 tuning for a short run', () => {
  beforeEach(() => set.mockClear());

  it('sets the inlining budget', () => {
    tuneForShortRun([]);
    expect(set).toHaveBeenCalledWith(`--max-inlined-bytecode-size-cumulative=${SHORT_RUN_INLINING_BUDGET}`);
  });

  it('keeps a budget chosen on the command line', () => {
    tuneForShortRun(['--max-inlined-bytecode-size-cumulative=920']);
    expect(set).not.toHaveBeenCalled();
  });

  it('is asked for by every command but watch and the emulator', async () => {
    const { readFileSync } = await import('node:fs');
    const main = readFileSync('src/cli/main.ts', 'utf8');
    const actions = [...main.matchAll(/\.action\(lazy\(\(\) => import\('\.\/([\w-]+)\.js'\)(, true)?\)\)/g)].map((m) => [m[1], m[2] !== undefined]);
    expect(actions.length).toBeGreaterThan(8);
    for (const [command, long] of actions) expect([command, long]).toEqual([command, command === 'watch' || command === 'emulator']);
  });
});
