// The loader reads a folder's files a few at a time and checks where the folder is once for them
// (src/load/index.ts, eachParsedFile; read-file.ts, deferFolderCheck and confirmFolder). A
// breaker's race, replayed inside a batch: the folder is renamed out of the repository right
// after one of its files is read, a folder of the same name put back; the files opened through
// the folder since the last check are refused, and nothing read from outside is ever parsed.
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { ResolvedConfig } from '../../src/model/index.js';
import type * as ReadFile from '../../src/load/read-file.js';

const hooks = vi.hoisted(() => ({ afterRead: undefined as ((path: string) => void) | undefined }));

vi.mock('../../src/load/read-file.js', async (importOriginal) => {
  const real = await importOriginal<typeof ReadFile>();
  return {
    ...real,
    readRegularFile: (path: string, opts: Parameters<typeof real.readRegularFile>[1]) => {
      const r = real.readRegularFile(path, opts);
      hooks.afterRead?.(path);
      return r;
    },
  };
});

const { loadAssembled } = await import('../../src/load/index.js');
const { closeFolderCache, confirmFolder, isInside, readRegularFile } = await import('../../src/load/read-file.js');

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dus-batch-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const firmware = (v: string) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "${v}"\n  component_name: modem\n  is_deactivated: false\n  uncompressed_size: 1\n  dependencies: []\n`;

function repo(name: string, files: number): { root: string; config: ResolvedConfig; folder: string } {
  const root = join(dir, name);
  const folder = join(root, 'fw');
  mkdirSync(folder, { recursive: true });
  for (let i = 0; i < files; i++) writeFileSync(join(folder, `f${String(i).padStart(2, '0')}.yaml`), firmware(`1.0.${i}`));
  writeFileSync(join(root, 'dus-sync.yaml'), 'tenants:\n  acme: {}\n');
  const config: ResolvedConfig = { dir: root, file: join(root, 'dus-sync.yaml'), defaultTenant: 'acme', tenants: { acme: {} }, safety: {}, watchIntervalMs: 300_000, suspend: false };
  return { root, config, folder };
}

describe('a folder moved out of the repository between two files of one batch', () => {
  it('refuses every file opened through it since the last check, and parses nothing from outside', async () => {
    const { config, folder } = repo('moved', 6);
    const away = join(dir, 'away');
    hooks.afterRead = (path) => {
      if (!path.endsWith('f02.yaml')) return;
      hooks.afterRead = undefined;
      renameSync(folder, away);
      for (const n of ['f03', 'f04', 'f05']) writeFileSync(join(away, `${n}.yaml`), firmware('6.6.6').replace('modem', 'outside_marker'));
      mkdirSync(folder);
      for (const n of ['f03', 'f04', 'f05']) writeFileSync(join(folder, `${n}.yaml`), firmware('7.7.7'));
    };
    try {
      const { result } = await loadAssembled(config);
      expect(JSON.stringify(result)).not.toContain('outside_marker');
      expect(JSON.stringify(result)).not.toContain('6.6.6');
      const refused = result.issues.filter((i) => /outside the repository folder/.test(i.message)).map((i) => i.file.replace(/^.*\/moved\//, ''));
      // f03..f05 were read through the folder, outside by then; f00..f02 shared their batch (one check for all).
      expect(refused.sort()).toEqual(['fw/f00.yaml', 'fw/f01.yaml', 'fw/f02.yaml', 'fw/f03.yaml', 'fw/f04.yaml', 'fw/f05.yaml']);
      expect(result.desired.firmwares).toHaveLength(0);
    } finally {
      hooks.afterRead = undefined;
    }
  });

  it('loads every file when nothing moves, batches of 32 past the first', async () => {
    const { config } = repo('still', 70);
    const { result } = await loadAssembled(config);
    expect(result.issues).toEqual([]);
    expect(new Set(result.desired.firmwares.map((f) => f.spec.version_number)).size).toBe(70);
  });
});

describe('deferFolderCheck (read-file.ts)', () => {
  it('leaves the check to confirmFolder, which finds the folder outside; a switch to another folder checks the first', () => {
    const { root, folder } = repo('deferred', 3);
    const other = join(root, 'other');
    mkdirSync(other);
    writeFileSync(join(other, 'o.yaml'), 'kind: O\n');
    const away = join(dir, 'away-deferred');
    const folders = {};
    try {
      const opts = { maxBytes: 4096, root, listedRegular: true, folders, deferFolderCheck: true };
      expect(readRegularFile(join(folder, 'f00.yaml'), opts)).toMatchObject({ ok: true, unconfirmed: true });
      expect(confirmFolder(folders)).toBeUndefined();
      expect(readRegularFile(join(folder, 'f01.yaml'), opts)).toMatchObject({ ok: true, unconfirmed: true });
      renameSync(folder, away);
      mkdirSync(folder);
      // The next file is in another folder: the cache switches, and checks the folder it leaves.
      expect(readRegularFile(join(other, 'o.yaml'), opts)).toMatchObject({ ok: true, unconfirmed: true });
      expect(confirmFolder(folders)).toMatch(/outside the repository folder/);
      expect(confirmFolder(folders)).toBeUndefined();
      // Without deferFolderCheck the read checks itself, as before.
      expect(readRegularFile(join(other, 'o.yaml'), { maxBytes: 4096, root, listedRegular: true, folders })).toEqual(expect.not.objectContaining({ unconfirmed: true }));
    } finally {
      closeFolderCache(folders);
    }
  });
});

// A breaker's find: Node shows a byte that is not UTF-8 in a path as U+FFFD, so a repository at
// `…/ci\ufffd/repo` and a folder at `…/ci\xff/repo/secret` (outside it) looked inside it.
describe('paths the kernel holds as bytes that are not UTF-8', () => {
  const fw = (v: string, extra = '') => `${firmware(v)}${extra}`;
  it('a repository whose real path shows U+FFFD is refused at once, and nothing outside is read', async () => {
    const base = join(dir, 'u8');
    const root = join(base, 'ci\ufffd', 'repo');
    mkdirSync(join(root, 'tenants'), { recursive: true });
    writeFileSync(join(root, 'tenants', 'a.yaml'), fw('1.0.0'));
    writeFileSync(join(root, 'dus-sync.yaml'), 'tenants:\n  acme: {}\n');
    const outside = Buffer.concat([Buffer.from(`${base}/ci`), Buffer.from([0xff]), Buffer.from('/repo/secret')]);
    mkdirSync(outside, { recursive: true });
    writeFileSync(Buffer.concat([outside, Buffer.from('/x.yaml')]), fw('6.6.6', '  outside_marker: 1\n'));
    symlinkSync(Buffer.concat([Buffer.from('../../../ci'), Buffer.from([0xff]), Buffer.from('/repo/secret')]), join(root, 'tenants', 'evil'));
    const config: ResolvedConfig = { dir: root, file: join(root, 'dus-sync.yaml'), defaultTenant: 'acme', tenants: { acme: {} }, safety: {}, watchIntervalMs: 300_000, suspend: false };
    await expect(loadAssembled(config)).rejects.toThrow(/holding U\+FFFD.*move or rename it/);
    // Every other check (watch's reads, links) finds nothing inside such a root either.
    expect(isInside(root, join(root, 'tenants', 'a.yaml'))).toBe(false);
    expect(isInside(join(base, 'plain'), join(base, 'plain', 'x\ufffd'))).toBe(true);
  });

  it('below a root without U+FFFD: a link to a folder outside whose name is not UTF-8 (shown as the root\'s name and U+FFFD) is refused', async () => {
    const base = join(dir, 'u8-plain');
    const root = join(base, 'repo');
    mkdirSync(join(root, 'tenants'), { recursive: true });
    writeFileSync(join(root, 'dus-sync.yaml'), 'tenants:\n  acme: {}\n');
    // Outside: `repo\xff/secret`, which shows as `repo\ufffd/secret`.
    const outside = Buffer.concat([Buffer.from(`${base}/repo`), Buffer.from([0xff]), Buffer.from('/secret')]);
    mkdirSync(outside, { recursive: true });
    writeFileSync(Buffer.concat([outside, Buffer.from('/x.yaml')]), fw('6.6.6', '  outside_marker: 1\n'));
    symlinkSync(Buffer.concat([Buffer.from('../../repo'), Buffer.from([0xff]), Buffer.from('/secret')]), join(root, 'tenants', 'evil'));
    writeFileSync(join(root, 'tenants', 'in.yaml'), fw('2.0.0'));
    const config: ResolvedConfig = { dir: root, file: join(root, 'dus-sync.yaml'), defaultTenant: 'acme', tenants: { acme: {} }, safety: {}, watchIntervalMs: 300_000, suspend: false };
    const { result } = await loadAssembled(config);
    expect(JSON.stringify(result)).not.toContain('outside_marker');
    expect(JSON.stringify(result)).not.toContain('6.6.6');
    expect(result.desired.firmwares.map((f) => f.spec.version_number)).toEqual(['2.0.0']);
    expect(result.issues.map((i) => i.message).join('\n')).toMatch(/outside the repository folder/);
  });

  it('a folder holding a name that is not UTF-8 is refused naming it, never skipped without a word; a real U+FFFD name is read', async () => {
    const make = (name: string, entries: (Buffer | string)[]): ResolvedConfig => {
      const root = join(dir, name, 'repo');
      mkdirSync(join(root, 'tenants'), { recursive: true });
      writeFileSync(join(root, 'dus-sync.yaml'), 'tenants:\n  acme: {}\n');
      writeFileSync(join(root, 'tenants', 'ok.yaml'), fw('1.0.0'));
      entries.forEach((e, i) => writeFileSync(Buffer.concat([Buffer.from(`${root}/tenants/`), Buffer.from(e)]), fw(`2.0.${i}`)));
      return { dir: root, file: join(root, 'dus-sync.yaml'), defaultTenant: 'acme', tenants: { acme: {} }, safety: {}, watchIntervalMs: 300_000, suspend: false };
    };
    // <FF>.yaml beside a real U+FFFD.yaml: both show as "\ufffd.yaml", and one was silently dropped.
    const collide = make('u8-collide', [Buffer.from([0xff, 0x2e, 0x79, 0x61, 0x6d, 0x6c]), '\ufffd.yaml']);
    await expect(loadAssembled(collide)).rejects.toThrow(/tenants: this folder holds a name that is not valid UTF-8.*rename it/);
    // A folder so named, deeper: the folder that holds it is named.
    const deep = make('u8-deep', []);
    const sub = Buffer.concat([Buffer.from(`${deep.dir}/tenants/d`), Buffer.from([0xfe])]);
    mkdirSync(sub);
    writeFileSync(Buffer.concat([sub, Buffer.from('/in.yaml')]), fw('3.0.0'));
    await expect(loadAssembled(deep)).rejects.toThrow(/tenants: this folder holds a name that is not valid UTF-8/);
    // A name holding U+FFFD as valid UTF-8 is only a name.
    const real = make('u8-real', ['\ufffd.yaml']);
    const { result } = await loadAssembled(real);
    expect(result.issues).toEqual([]);
    expect(result.desired.firmwares.map((f) => f.spec.version_number).sort()).toEqual(['1.0.0', '2.0.0']);
  });
});
