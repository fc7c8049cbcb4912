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
});
