// The bounds and the parsers behind every size, duration and count flag (src/limits.ts).
import { describe, expect, it } from 'vitest';
import {
  checkCount, checkDuration, checkSize, CONCURRENCY, formatDuration, formatSize, GRACE_MS, MAX_FILE_SIZE, parseDurationMs, parseSize, WATCH_INTERVAL_MS,
} from '../src/limits.js';

describe('durations', () => {
  it.each([['20s', 20_000], ['500ms', 500], ['5m', 300_000], ['1h', 3_600_000], ['2', 2000], ['1.5s', 1500]] as const)('%s', (t, ms) => {
    expect(parseDurationMs(t)).toBe(ms);
  });
  it('refuses what is not a duration', () => {
    for (const t of ['soon', '', '-1s', '5 minutes', '1d']) expect(parseDurationMs(t)).toBeUndefined();
  });
  it('writes a duration the shortest exact way', () => {
    expect([1000, 60_000, 86_400_000, 1500, 0].map(formatDuration)).toEqual(['1s', '1m', '24h', '1500ms', '0s']);
  });
  it('checks the range and says it', () => {
    expect(checkDuration('--interval', '1s', WATCH_INTERVAL_MS)).toBe(1000);
    expect(checkDuration('--interval', '24h', WATCH_INTERVAL_MS)).toBe(86_400_000);
    expect(checkDuration('--interval', '999ms', WATCH_INTERVAL_MS)).toBe('--interval takes a duration from 1s to 24h (e.g. 30s, 5m), not "999ms".');
    expect(checkDuration('--grace', '0', GRACE_MS)).toBe(0);
    expect(checkDuration('--grace', 'soon', GRACE_MS)).toBe('--grace takes a duration from 0s to 1h (e.g. 30s, 5m), not "soon".');
  });
});

describe('sizes', () => {
  it.each([['5MiB', 5 * 1024 * 1024], ['512KiB', 512 * 1024], ['1GiB', 1024 ** 3], ['1024', 1024], ['1.5KiB', 1536], ['2048B', 2048]] as const)('%s', (t, n) => {
    expect(parseSize(t)).toBe(n);
  });
  it('refuses ambiguous or odd units', () => {
    for (const t of ['5 megabytes', '', '-1', 'lots', '5m', '5MiBs']) expect(parseSize(t)).toBeUndefined();
  });
  it('formats sizes', () => {
    expect([5 * 1024 * 1024, 1536, 1024, 100, 256 * 1024 * 1024, 6.25 * 1024 * 1024].map(formatSize)).toEqual(['5 MiB', '1.5 KiB', '1 KiB', '100 bytes', '256 MiB', '6.3 MiB']);
  });
  it('checks the range of --max-file-size', () => {
    expect(checkSize('--max-file-size', '256MiB', MAX_FILE_SIZE)).toBe(256 * 1024 * 1024);
    expect(checkSize('--max-file-size', '257MiB', MAX_FILE_SIZE)).toBe('--max-file-size takes a size from 1 KiB to 256 MiB (e.g. 16MiB), not "257MiB".');
  });
});

describe('counts', () => {
  it('takes only whole numbers in range, in one wording for every flag', () => {
    expect(checkCount('--concurrency', '64', CONCURRENCY)).toBe(64);
    for (const t of ['0', '65', '', ' ', '1e1', '8.0', '-1', '0x10']) {
      expect(checkCount('--concurrency', t, CONCURRENCY)).toBe(`--concurrency takes a whole number from 1 to 64, not "${t}".`);
    }
    expect(checkCount('--max-changes', '0', { min: 0, max: Number.MAX_SAFE_INTEGER })).toBe(0);
    expect(checkCount('--max-changes', '1e3', { min: 0, max: Number.MAX_SAFE_INTEGER })).toBe('--max-changes takes a whole number of 0 or more, not "1e3".');
  });
});
