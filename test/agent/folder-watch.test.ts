// The agent's file watch (src/agent/folder-watch.ts) on real folders: one watch per folder
// whatever the number of files, and every kind of change the pass must hear about.
import { mkdir, mkdtemp, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FolderWatcher, type FolderEvent } from '../../src/agent/folder-watch.js';
import { waitFor } from './helpers.js';

let dir: string;
let fw: FolderWatcher | undefined;
afterEach(async () => {
  fw?.close();
  fw = undefined;
  await rm(dir, { recursive: true, force: true });
});

function start(roots: string[], folder?: (p: string) => boolean): { events: { kind: FolderEvent; path: string }[]; errors: unknown[]; seen: (kind: FolderEvent, path: string) => boolean } {
  const events: { kind: FolderEvent; path: string }[] = [];
  const errors: unknown[] = [];
  fw = new FolderWatcher({ onEvent: (kind, path) => events.push({ kind, path }), onError: (e) => errors.push(e), ...(folder ? { folder } : {}) });
  fw.add(roots);
  return { events, errors, seen: (kind, path) => events.some((e) => e.kind === kind && e.path === path) };
}

const settle = (ms = 150) => new Promise((r) => setTimeout(r, ms));

describe('FolderWatcher', () => {
  it('watches folders, not files: 600 files take no more watches than one', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dus-fw-'));
    await mkdir(join(dir, 'tenants', 'acme'), { recursive: true });
    for (let i = 0; i < 600; i++) await writeFile(join(dir, 'tenants', 'acme', `f${i}.yaml`), `a: ${i}\n`);
    const { seen } = start([join(dir, 'tenants')]);
    // tenants, tenants/acme, and the root's parent (for the root's own name).
    expect(fw!.handles).toBe(3);
    await writeFile(join(dir, 'tenants', 'acme', 'f7.yaml'), 'a: changed\n');
    await waitFor(() => seen('file', join(dir, 'tenants', 'acme', 'f7.yaml')), 3000, 'the edit');
  });

  it('sees files created, removed and saved by rename, and skips dot entries', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dus-fw-'));
    const acme = join(dir, 'tenants', 'acme');
    await mkdir(acme, { recursive: true });
    await writeFile(join(acme, 'a.yaml'), 'a: 1\n');
    const { events, seen } = start([join(dir, 'tenants')]);
    await writeFile(join(acme, 'b.yaml'), 'b: 1\n');
    await unlink(join(acme, 'a.yaml'));
    await writeFile(join(acme, '.c.yaml.swp'), 'x');
    await writeFile(join(acme, 'c.yaml.tmp'), 'c: 1\n');
    await rename(join(acme, 'c.yaml.tmp'), join(acme, 'c.yaml'));
    await waitFor(() => seen('file', join(acme, 'b.yaml')) && seen('file', join(acme, 'a.yaml')) && seen('file', join(acme, 'c.yaml')), 3000, 'the changes');
    await settle();
    expect(events.some((e) => e.path.includes('.swp'))).toBe(false);
  });

  it('watches a folder that appears and reports its files; a folder that goes away is reported and dropped', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dus-fw-'));
    await mkdir(join(dir, 'tenants'), { recursive: true });
    const { seen } = start([join(dir, 'tenants')]);
    const before = fw!.handles;
    await mkdir(join(dir, 'tenants', 'beta', 'deep'), { recursive: true });
    await writeFile(join(dir, 'tenants', 'beta', 'deep', 'x.yaml'), 'x: 1\n');
    await waitFor(() => seen('file', join(dir, 'tenants', 'beta', 'deep', 'x.yaml')), 3000, 'the file in the new folder');
    await waitFor(() => fw!.handles === before + 2, 3000, 'the new folders watched');
    // A later edit in the new folder is seen by its own watch.
    await writeFile(join(dir, 'tenants', 'beta', 'deep', 'y.yaml'), 'y: 1\n');
    await waitFor(() => seen('file', join(dir, 'tenants', 'beta', 'deep', 'y.yaml')), 3000, 'a file added later');
    await rm(join(dir, 'tenants', 'beta'), { recursive: true });
    await waitFor(() => seen('folder', join(dir, 'tenants', 'beta')), 3000, 'the folder removed');
    await waitFor(() => fw!.handles === before, 3000, 'its watches closed');
  });

  it('a new folder with many files is reported as the folder', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dus-fw-'));
    await mkdir(join(dir, 'tenants'), { recursive: true });
    await mkdir(join(dir, 'staging'));
    for (let i = 0; i < 300; i++) await writeFile(join(dir, 'staging', `f${i}.yaml`), 'a: 1\n');
    const { events, seen } = start([join(dir, 'tenants')]);
    await rename(join(dir, 'staging'), join(dir, 'tenants', 'many'));
    await waitFor(() => seen('folder', join(dir, 'tenants', 'many')), 3000, 'the folder');
    expect(events.filter((e) => e.kind === 'file')).toHaveLength(0);
  });

  it('a root removed and created again is watched again', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dus-fw-'));
    await mkdir(join(dir, 'tenants'), { recursive: true });
    const { seen } = start([join(dir, 'tenants')]);
    await rm(join(dir, 'tenants'), { recursive: true });
    await waitFor(() => seen('folder', join(dir, 'tenants')), 3000, 'the root removed');
    await mkdir(join(dir, 'tenants'));
    await settle();
    await writeFile(join(dir, 'tenants', 'z.yaml'), 'z: 1\n');
    await waitFor(() => seen('file', join(dir, 'tenants', 'z.yaml')), 3000, 'a file in the root created again');
  });

  it('a root file (the config) replaced by rename, or through a swapped link (a ConfigMap), is seen each time', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dus-fw-'));
    await writeFile(join(dir, 'dus-sync.yaml'), 'v: 1\n');
    await mkdir(join(dir, 'mount', 'v1'), { recursive: true });
    await writeFile(join(dir, 'mount', 'v1', 'cfg.yaml'), 'v: 1\n');
    await symlink('v1', join(dir, 'mount', '..data'));
    await symlink('..data/cfg.yaml', join(dir, 'mount', 'cfg.yaml'));
    const config = join(dir, 'dus-sync.yaml');
    const mounted = join(dir, 'mount', 'cfg.yaml');
    const { events } = start([config, mounted]);
    const count = (p: string) => events.filter((e) => e.path === p).length;
    for (let i = 2; i <= 3; i++) {
      const n = count(config);
      await writeFile(join(dir, 'dus-sync.yaml.new'), `v: ${i}\n`);
      await rename(join(dir, 'dus-sync.yaml.new'), config);
      await waitFor(() => count(config) > n, 3000, `save ${i} of the config`);
    }
    for (let i = 2; i <= 3; i++) {
      const n = count(mounted);
      await mkdir(join(dir, 'mount', `v${i}`));
      await writeFile(join(dir, 'mount', `v${i}`, 'cfg.yaml'), `v: ${i}\n`);
      await symlink(`v${i}`, join(dir, 'mount', '..data_tmp'));
      await rename(join(dir, 'mount', '..data_tmp'), join(dir, 'mount', '..data'));
      await rm(join(dir, 'mount', `v${i - 1}`), { recursive: true });
      await waitFor(() => count(mounted) > n, 3000, `swap ${i} of the mounted config`);
      await settle(100);
    }
  });

  it('a linked folder inside the repository is watched once, a link to a file is watched through it, a refused folder not at all', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dus-fw-'));
    await mkdir(join(dir, 'tenants', 'real'), { recursive: true });
    await mkdir(join(dir, 'shared'));
    await mkdir(join(dir, 'tenants', 'secret'));
    await writeFile(join(dir, 'shared', 's.yaml'), 's: 1\n');
    await writeFile(join(dir, 'tenants', 'real', 'r.yaml'), 'r: 1\n');
    await symlink(join(dir, 'shared'), join(dir, 'tenants', 'linked'));
    await symlink(join(dir, 'tenants', 'real'), join(dir, 'tenants', 'alias'));
    await symlink(join(dir, 'shared', 's.yaml'), join(dir, 'tenants', 'file-link.yaml'));
    const { events, seen } = start([join(dir, 'tenants')], (p) => !p.endsWith('secret'));
    // tenants, tenants/real, tenants/linked (shared), the link to a file, the parent; not alias (real is watched), not secret.
    expect(fw!.handles).toBe(5);
    await writeFile(join(dir, 'shared', 's.yaml'), 's: 2\n');
    await waitFor(() => seen('file', join(dir, 'tenants', 'linked', 's.yaml')) && seen('file', join(dir, 'tenants', 'file-link.yaml')), 3000, 'the edit through both links');
    await writeFile(join(dir, 'tenants', 'real', 'r.yaml'), 'r: 2\n');
    await waitFor(() => seen('file', join(dir, 'tenants', 'real', 'r.yaml')), 3000, 'the edit of the real folder');
    await writeFile(join(dir, 'tenants', 'secret', 'x.yaml'), 'x: 1\n');
    await settle(300);
    expect(events.some((e) => e.path.includes('alias') || e.path.includes('secret'))).toBe(false);
  });

  it('unwatch and close let every watch go', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dus-fw-'));
    await mkdir(join(dir, 'a', 'b'), { recursive: true });
    await mkdir(join(dir, 'c'), { recursive: true });
    start([join(dir, 'a'), join(dir, 'c')]);
    expect(fw!.handles).toBe(4);
    fw!.unwatch([join(dir, 'a')]);
    expect(fw!.handles).toBe(2);
    fw!.close();
    expect(fw!.handles).toBe(0);
  });
});
