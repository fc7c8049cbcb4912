// Every write checks the lock just before it is sent; writes that ask while a check runs share
// the next check, which starts when it ends. What must hold: each caller gets the answer of a
// check that began after it asked. lstat is held here at a gate, so the test decides what a
// running check sees.
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type * as FsPromises from 'node:fs/promises';

const gate = vi.hoisted(() => ({ hold: false, waiting: [] as Array<() => void>, calls: 0 }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof FsPromises>();
  return {
    ...real,
    lstat: async (...args: Parameters<typeof real.lstat>) => {
      gate.calls += 1;
      // The file is read when the check is let go, not when it started.
      if (gate.hold) await new Promise<void>((r) => gate.waiting.push(r));
      return real.lstat(...args);
    },
  };
});

const { acquireLock, LockLostError } = await import('../../src/apply/lock.js');

let dir: string | undefined;
afterEach(async () => { if (dir) await rm(dir, { recursive: true, force: true }); dir = undefined; gate.hold = false; });

const release = () => { for (const r of gate.waiting.splice(0)) r(); };

describe('the lock check shared by writes at once', () => {
  it('a caller that asks after the lock was taken over learns it, though a check that began before is still running', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dus-lock-shared-'));
    const lock = await acquireLock(join(dir, 'state'));
    const path = join(dir, 'state', 'apply.lock');
    gate.hold = true;
    // A check begins; it will read the file as it is when let go: ours, then.
    const early = lock.assertHeld();
    await vi.waitFor(() => expect(gate.waiting).toHaveLength(1));
    // Fifty writes ask while it runs: they share one check after it.
    const late = Array.from({ length: 50 }, () => lock.assertHeld());
    gate.calls = 0;
    release();
    await early;
    // Now another holder takes the lock over, before the shared check reads the file.
    await vi.waitFor(() => expect(gate.waiting).toHaveLength(1));
    gate.hold = false;
    await rename(path, `${path}.old`);
    await writeFile(path, '{"token":"someone else"}\n');
    release();
    for (const p of late) await expect(p).rejects.toBeInstanceOf(LockLostError);
    // One check for the fifty.
    expect(gate.calls).toBe(1);
    await lock.release();
  });

  it('alone, a check reads the file each time', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dus-lock-shared-'));
    const lock = await acquireLock(join(dir, 'state'));
    gate.calls = 0;
    for (let i = 0; i < 5; i++) await lock.assertHeld();
    expect(gate.calls).toBe(5);
    await lock.release();
  });
});
