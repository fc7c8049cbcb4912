import { describe, expect, it } from 'vitest';
import { AimdLimiter } from '../../src/api/limiter.js';

describe('AimdLimiter', () => {
  it('starts at the given concurrency and queues beyond it', async () => {
    const l = new AimdLimiter(2);
    await l.acquire();
    await l.acquire();
    let third = false;
    const pending = l.acquire().then(() => { third = true; });
    await Promise.resolve();
    expect(third).toBe(false);
    l.release();
    await pending;
    expect(third).toBe(true);
    expect(l.active).toBe(2);
  });

  it('halves on 429 down to 1 and never below', () => {
    const l = new AimdLimiter(8);
    l.onRateLimited();
    expect(l.limit).toBe(4);
    l.onRateLimited();
    l.onRateLimited();
    expect(l.limit).toBe(1);
    l.onRateLimited();
    expect(l.limit).toBe(1);
  });

  it('a burst of 429s from requests started under the same limit halves it once', () => {
    const l = new AimdLimiter(8);
    const started = l.epoch;
    for (let i = 0; i < 8; i++) l.onRateLimited(started);
    expect(l.limit).toBe(4);
    l.onRateLimited(l.epoch);
    expect(l.limit).toBe(2);
  });

  it('grows by one after `limit` consecutive successes and never above the start', () => {
    const l = new AimdLimiter(4);
    l.onRateLimited(); // 2
    l.onSuccess();
    expect(l.limit).toBe(2);
    l.onSuccess();
    expect(l.limit).toBe(3);
    for (let i = 0; i < 3; i++) l.onSuccess();
    expect(l.limit).toBe(4);
    for (let i = 0; i < 20; i++) l.onSuccess();
    expect(l.limit).toBe(4);
  });

  it('a 429 resets the run of successes', () => {
    const l = new AimdLimiter(8);
    l.onRateLimited(); // 4
    l.onSuccess();
    l.onSuccess();
    l.onSuccess();
    l.onRateLimited(); // 2
    l.onSuccess();
    expect(l.limit).toBe(2);
  });

  it('lets fewer requests run at once after a 429', async () => {
    const l = new AimdLimiter(4);
    l.onRateLimited();
    let peak = 0;
    let running = 0;
    const task = async (): Promise<void> => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setImmediate(r));
      running--;
    };
    await Promise.all(Array.from({ length: 10 }, () => l.run(task)));
    expect(peak).toBeLessThanOrEqual(3);
    expect(l.active).toBe(0);
  });

  it('a waiter leaves the queue when its signal aborts', async () => {
    const l = new AimdLimiter(1);
    await l.acquire();
    const ac = new AbortController();
    const waiting = l.acquire(ac.signal);
    ac.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    l.release();
    expect(l.active).toBe(0);
  });

  it('refuses a concurrency below 1', () => {
    expect(() => new AimdLimiter(0)).toThrow(RangeError);
  });
});
