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

describe('AimdLimiter between a floor and a ceiling, on latency', () => {
  it('starts at the start, grows while latency holds (one per answer until the first decrease, then one per round), up to the ceiling and not beyond', () => {
    const l = new AimdLimiter(8, { min: 2, max: 64 });
    expect(l.limit).toBe(8);
    // Slow start: one more per answer that held, so a round of 8 answers doubles it.
    for (let i = 0; i < 8; i++) l.onSuccess(20);
    expect(l.limit).toBe(16);
    // After a decrease, one more per `limit` answers that held.
    l.onServerError();
    expect(l.limit).toBe(8);
    for (let i = 0; i < 8; i++) l.onSuccess(20);
    expect(l.limit).toBe(9);
    for (let i = 0; i < 8; i++) l.onSuccess(20);
    expect(l.limit).toBe(9);
    for (let i = 0; i < 2000; i++) l.onSuccess(21);
    expect(l.limit).toBe(64);
    const capped = new AimdLimiter(8, { max: 12 });
    for (let i = 0; i < 200; i++) capped.onSuccess(21);
    expect(capped.limit).toBe(12);
  });

  it('an answer much slower than the best seen takes the limit to three quarters, once per epoch', () => {
    const l = new AimdLimiter(16, { max: 16 });
    l.onSuccess(20);
    const started = l.epoch;
    // 2 × 20 ms + 10 ms of slack still holds; 51 ms does not.
    l.onSuccess(50, started);
    expect(l.limit).toBe(16);
    for (let i = 0; i < 8; i++) l.onSuccess(200, started);
    expect(l.limit).toBe(12);
    l.onSuccess(200, l.epoch);
    expect(l.limit).toBe(9);
  });

  it('halves on a 5xx as on a 429, and never below the floor', () => {
    const l = new AimdLimiter(16, { min: 3, max: 32 });
    l.onServerError();
    expect(l.limit).toBe(8);
    l.onRateLimited();
    l.onServerError();
    l.onServerError();
    expect(l.limit).toBe(3);
  });

  it('the baseline follows a lasting change of latency slowly, and a faster answer at once', () => {
    const l = new AimdLimiter(4, { max: 4 });
    l.onSuccess(100);
    l.onSuccess(10);
    expect(l.baseline).toBe(10);
    l.onSuccess(26);
    expect(l.baseline).toBeCloseTo(10.25);
  });

  it('refuses a floor above the ceiling and a start outside them is clamped', () => {
    expect(() => new AimdLimiter(4, { min: 8, max: 6 })).toThrow(/floor \(8\) is above the ceiling \(6\)/);
    expect(new AimdLimiter(100, { max: 64 }).limit).toBe(64);
    expect(new AimdLimiter(1, { min: 2, max: 64 }).limit).toBe(2);
  });

  it('grows past a fixed 8 when answers keep their latency: 20 ms answers reach the ceiling of 64', async () => {
    const l = new AimdLimiter(8, { max: 64 });
    let most = 0;
    const one = async (): Promise<void> => {
      await l.run(async () => {
        most = Math.max(most, l.active);
        await new Promise((r) => setTimeout(r, 1));
      });
      l.onSuccess(20);
    };
    let left = 3000;
    await Promise.all(Array.from({ length: 64 }, async () => { while (left-- > 0) await one(); }));
    expect(l.limit).toBe(64);
    expect(most).toBeGreaterThan(8);
  });
});
