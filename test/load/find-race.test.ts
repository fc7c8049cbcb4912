// The walk lists only folders inside the repository, even when a folder it saw in a listing is
// swapped for a link to another folder before it is listed itself (the swap is made here at the
// exact moment between the two, through a wrapped readdirSync).
import type * as Fs from 'node:fs';
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

const hook = vi.hoisted(() => ({ after: undefined as undefined | ((names: string[]) => void) }));
vi.mock('node:fs', async (original) => {
  const fs = await original<typeof Fs>();
  const readdirSync = ((path: string, ...rest: unknown[]) => {
    const out = (fs.readdirSync as (...a: unknown[]) => unknown)(path, ...rest);
    hook.after?.((out as Array<string | { name: string }>).map((d) => (typeof d === 'string' ? d : d.name)));
    return out;
  }) as typeof fs.readdirSync;
  return { ...fs, default: { ...fs, readdirSync }, readdirSync };
});

const { findCandidates } = await import('../../src/load/find.js');
const { readParsedFiles } = await import('../../src/load/index.js');

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dus-walk-race-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the walk and a folder swapped for a link', () => {
  it('does not list the folder the link leads to, and names the path instead', () => {
    const root = join(dir, 'repo');
    mkdirSync(join(root, 'tenants/sub'), { recursive: true });
    writeFileSync(join(root, 'tenants/a.yaml'), 'x: 1\n');
    writeFileSync(join(root, 'tenants/sub/inside.yaml'), 'x: 1\n');
    mkdirSync(join(dir, 'outside'));
    writeFileSync(join(dir, 'outside/SECRET-OUTSIDE.yaml'), 'secret: 1\n');
    let swapped = false;
    hook.after = (names) => {
      // Right after tenants/ was listed (sub seen as a folder): sub becomes a link out.
      if (!swapped && names.includes('sub') && names.includes('a.yaml')) {
        swapped = true;
        renameSync(join(root, 'tenants/sub'), join(dir, 'sub-moved'));
        symlinkSync(join(dir, 'outside'), join(root, 'tenants/sub'));
      }
    };
    try {
      const found = findCandidates({ base: root, realRoot: root, patterns: ['tenants/**/*.yaml'], followExternalSymlinks: false });
      expect(swapped).toBe(true);
      expect(found.entries.join(' ')).not.toContain('SECRET-OUTSIDE');
      expect(found.entries).toContain('tenants/a.yaml');
      expect(found.unwalked).toContain('tenants/sub');
    } finally {
      hook.after = undefined;
    }
  });

  it('does not read a file through a folder swapped for a link out of the repository after the walk', async () => {
    const root = join(dir, 'repo2');
    mkdirSync(join(root, 'tenants/sub'), { recursive: true });
    writeFileSync(join(root, 'dus-sync.yaml'), 'default_tenant: acme\ntenants:\n  acme: {}\n');
    const doc = (size: number) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec: { version_number: "1.0", uncompressed_size: ${size} }\n`;
    writeFileSync(join(root, 'tenants/sub/fw.yaml'), doc(1000));
    mkdirSync(join(dir, 'outside2'));
    writeFileSync(join(dir, 'outside2/fw.yaml'), doc(666666));
    let swapped = false;
    hook.after = (names) => {
      // Right after sub/ was listed (fw.yaml in it): sub becomes a link out, before the read.
      if (!swapped && names.length === 1 && names[0] === 'fw.yaml') {
        swapped = true;
        renameSync(join(root, 'tenants/sub'), join(dir, 'sub2-moved'));
        symlinkSync(join(dir, 'outside2'), join(root, 'tenants/sub'));
      }
    };
    try {
      const config = { dir: root, file: join(root, 'dus-sync.yaml'), defaultTenant: 'acme', tenants: { acme: {} }, safety: {}, watchIntervalMs: 300_000, suspend: false };
      const files = await readParsedFiles(config);
      expect(swapped).toBe(true);
      const f = files.find((x) => x.path === 'tenants/sub/fw.yaml')!;
      expect(JSON.stringify(f)).not.toContain('666666');
      expect(f.documents).toEqual([]);
      expect(f.issues[0]!.message).toMatch(/outside the repository folder/);
    } finally {
      hook.after = undefined;
    }
  });
});
