// readRegularFile with `listedRegular` (the folder's listing said "regular file", so no lstat
// comes first): whatever is found there by the time it is read (something swapped in since the
// listing), the answer is exactly the one the lstat-first path gives.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closeFolderCache, readRegularFile, type FolderCache } from '../../src/load/read-file.js';

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dus-read-')));
const root = join(dir, 'repo');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The answer without the fstat of the file read (its access time moves with every read). */
function answer(r: ReturnType<typeof readRegularFile>): unknown {
  if (!r.ok) return r;
  expect(r.stat?.size).toBe(Buffer.byteLength(r.text));
  return { ok: r.ok, text: r.text };
}

describe('readRegularFile after a listing', () => {
  mkdirSync(join(root, 'sub'), { recursive: true });
  writeFileSync(join(root, 'plain.yaml'), 'kind: Firmware\n');
  writeFileSync(join(root, 'big.yaml'), 'x'.repeat(2048));
  writeFileSync(join(dir, 'outside.yaml'), 'secret: outside\n');
  symlinkSync(join(dir, 'outside.yaml'), join(root, 'out-link.yaml'));
  symlinkSync(join(root, 'plain.yaml'), join(root, 'in-link.yaml'));
  symlinkSync(join(root, 'nowhere.yaml'), join(root, 'dangling.yaml'));
  execFileSync('mkfifo', [join(root, 'pipe.yaml')]);

  const cases = ['plain.yaml', 'big.yaml', 'out-link.yaml', 'in-link.yaml', 'dangling.yaml', 'pipe.yaml', 'sub', 'gone.yaml'];
  it.each(cases)('%s: the same answer with and without the listing', (name) => {
    const opts = { maxBytes: 1024, root };
    const long = readRegularFile(join(root, name), opts);
    const listed = readRegularFile(join(root, name), { ...opts, listedRegular: true });
    expect(answer(listed)).toEqual(answer(long));
  });

  it('reads a regular file, refuses one over the limit, and never follows a link out of the repository', () => {
    expect(answer(readRegularFile(join(root, 'plain.yaml'), { maxBytes: 1024, root, listedRegular: true }))).toEqual({ ok: true, text: 'kind: Firmware\n' });
    expect(readRegularFile(join(root, 'big.yaml'), { maxBytes: 1024, root, listedRegular: true })).toMatchObject({ ok: false, tooLarge: true });
    const out = readRegularFile(join(root, 'out-link.yaml'), { maxBytes: 1024, root, listedRegular: true });
    expect(out.ok).toBe(false);
    expect(JSON.stringify(out)).not.toContain('secret');
    expect(readRegularFile(join(root, 'pipe.yaml'), { maxBytes: 1024, root, listedRegular: true })).toMatchObject({ ok: false, message: expect.stringContaining('named pipe') });
  });
});

describe('a file outside the repository, named with .. (a glob that climbs out: refused before the listing)', () => {
  it('is not read where it is named either, and is with --follow-external-symlinks', () => {
    mkdirSync(join(dir, 'shared'), { recursive: true });
    writeFileSync(join(dir, 'shared', 'modem.yaml'), 'kind: Firmware\n');
    for (const listedRegular of [false, true]) {
      const named = readRegularFile(join(root, '..', 'shared', 'modem.yaml'), { maxBytes: 1024, root, listedRegular });
      expect(named.ok).toBe(false);
      expect(!named.ok && named.message).toMatch(/outside the repository folder/);
      expect(answer(readRegularFile(join(root, '..', 'shared', 'modem.yaml'), { maxBytes: 1024, root, listedRegular, followExternalSymlinks: true }))).toEqual({ ok: true, text: 'kind: Firmware\n' });
    }
  });
});

// A breaker's race: the folder of the files being read renamed out of the repository between two
// of its files. The folder stays open for its files (one load's cache), and its descriptor
// follows it: the second file must not be read from where the folder is now.
describe('a folder moved out of the repository while its files are read', () => {
  it('is not read from once it is outside, the first file read while it was inside', () => {
    const moved = join(root, 'moving');
    const away = join(dir, 'away');
    mkdirSync(moved, { recursive: true });
    writeFileSync(join(moved, 'a.yaml'), 'kind: A\n');
    writeFileSync(join(moved, 'b.yaml'), 'kind: B\n');
    const folders: FolderCache = {};
    try {
      for (const listedRegular of [false, true]) {
        expect(answer(readRegularFile(join(moved, 'a.yaml'), { maxBytes: 1024, root, listedRegular, folders }))).toEqual({ ok: true, text: 'kind: A\n' });
        renameSync(moved, away);
        writeFileSync(join(away, 'b.yaml'), 'outside_marker: 1\n');
        // A folder of the same name, inside again, changes nothing: the open folder is the one outside.
        mkdirSync(moved);
        writeFileSync(join(moved, 'b.yaml'), 'kind: B\n');
        const b = readRegularFile(join(moved, 'b.yaml'), { maxBytes: 1024, root, listedRegular, folders });
        expect(b.ok).toBe(false);
        expect(JSON.stringify(b)).not.toContain('outside_marker');
        expect(b).toMatchObject({ message: expect.stringContaining('outside the repository folder') });
        rmSync(moved, { recursive: true });
        renameSync(away, moved);
        writeFileSync(join(moved, 'b.yaml'), 'kind: B\n');
        closeFolderCache(folders);
      }
    } finally {
      closeFolderCache(folders);
    }
  });
});
