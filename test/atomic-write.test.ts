// The one atomic write (src/atomic-write.ts): a fresh, exclusive, random temp file in the
// target's folder, never through a link, renamed over the target, removed on failure.
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../src/atomic-write.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(process.platform === 'win32')('writeFileAtomic', () => {
  it('writes the file owner-only by default, or with the mode asked for, and leaves no temp file', () => {
    dir = mkdtempSync(join(tmpdir(), 'dus-atomic-'));
    writeFileAtomic(join(dir, 'a.json'), '{"a":1}\n');
    writeFileAtomic(join(dir, 'b.yaml'), 'b: 1\n', { mode: 0o644 });
    expect(readFileSync(join(dir, 'a.json'), 'utf8')).toBe('{"a":1}\n');
    expect(statSync(join(dir, 'a.json')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'b.yaml')).mode & 0o777).toBe(0o644 & ~process.umask());
    expect(readdirSync(dir).sort()).toEqual(['a.json', 'b.yaml']);
  });

  it('refuses a link at the target: neither written through nor replaced (--out /dev/stdout as root)', () => {
    dir = mkdtempSync(join(tmpdir(), 'dus-atomic-'));
    writeFileSync(join(dir, 'victim'), 'precious');
    symlinkSync(join(dir, 'victim'), join(dir, 'out.json'));
    expect(() => writeFileAtomic(join(dir, 'out.json'), 'new')).toThrow(/refusing to write .*out\.json: it is a symbolic link \(to ".*victim"\).*nothing was written$/);
    expect(readFileSync(join(dir, 'victim'), 'utf8')).toBe('precious');
    expect(lstatSync(join(dir, 'out.json')).isSymbolicLink()).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['out.json', 'victim']);
  });

  it('removes its temp file when the rename fails, and throws', () => {
    dir = mkdtempSync(join(tmpdir(), 'dus-atomic-'));
    // A trailing slash: the temp file is made in dir, and renaming it to "x.json/" fails.
    expect(() => writeFileAtomic(`${join(dir, 'x.json')}/`, 'data')).toThrow(/ENOTDIR|ENOENT|EISDIR/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('never replaces a folder, a FIFO or a device, nor one behind a link (plan --out /dev/null as root)', () => {
    dir = mkdtempSync(join(tmpdir(), 'dus-atomic-'));
    mkdirSync(join(dir, 'taken'));
    writeFileSync(join(dir, 'taken', 'x'), '');
    expect(execFileSync('mkfifo', [join(dir, 'fifo')]).length).toBe(0);
    symlinkSync(join(dir, 'fifo'), join(dir, 'to-fifo'));
    symlinkSync('/dev/null', join(dir, 'to-null'));
    expect(() => writeFileAtomic(join(dir, 'taken'), 'data')).toThrow(/refusing to write .*taken: it is a folder, not a regular file/);
    expect(() => writeFileAtomic(join(dir, 'fifo'), 'data')).toThrow(/it is a named pipe \(FIFO\), not a regular file/);
    expect(() => writeFileAtomic(join(dir, 'to-fifo'), 'data')).toThrow(/it is a symbolic link/);
    expect(() => writeFileAtomic(join(dir, 'to-null'), 'data')).toThrow(/it is a symbolic link \(to "\/dev\/null"\)/);
    expect(lstatSync(join(dir, 'fifo')).isFIFO()).toBe(true);
    expect(lstatSync(join(dir, 'to-null')).isSymbolicLink()).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['fifo', 'taken', 'to-fifo', 'to-null']);
  });

  it('fails cleanly when the folder does not exist', () => {
    dir = mkdtempSync(join(tmpdir(), 'dus-atomic-'));
    expect(() => writeFileAtomic(join(dir, 'missing', 'x.json'), 'data')).toThrow(/ENOENT/);
    expect(readdirSync(dir)).toEqual([]);
  });
});
