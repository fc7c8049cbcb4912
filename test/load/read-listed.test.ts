// The loader reads the files its listing saw as regular without an lstat each (3% of a validate
// at 20,000 files): counted here. Links and other entries still get the lstat-first path.
import type * as Fs from 'node:fs';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

const calls = vi.hoisted(() => ({ lstat: [] as string[] }));
vi.mock('node:fs', async (original) => {
  const fs = await original<typeof Fs>();
  const lstatSync = ((path: string, ...rest: unknown[]) => {
    calls.lstat.push(String(path));
    return (fs.lstatSync as (...a: unknown[]) => unknown)(path, ...rest);
  }) as typeof fs.lstatSync;
  return { ...fs, default: { ...fs, lstatSync }, lstatSync };
});

const { readParsedFiles } = await import('../../src/load/index.js');

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dus-listed-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('reading what the listing found', () => {
  it('opens listed regular files without an lstat, and a link the long way', async () => {
    mkdirSync(join(dir, 'tenants/acme'), { recursive: true });
    writeFileSync(join(dir, 'dus-sync.yaml'), 'default_tenant: acme\ntenants:\n  acme: {}\n');
    for (let i = 0; i < 5; i++) {
      writeFileSync(join(dir, `tenants/acme/fw-${i}.yaml`), `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec:\n  version_number: "1.0.${i}"\n  component_name: modem\n`);
    }
    // To a file no glob selects by its own path (one selected by both is read once, by its own).
    mkdirSync(join(dir, 'data'));
    writeFileSync(join(dir, 'data/fw.txt'), 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec:\n  version_number: "1.0.9"\n  component_name: modem\n');
    symlinkSync(join(dir, 'data/fw.txt'), join(dir, 'tenants/acme/link.yaml'));
    const config = { dir, file: join(dir, 'dus-sync.yaml'), defaultTenant: 'acme', tenants: { acme: {} }, safety: {}, watchIntervalMs: 300_000, suspend: false };
    calls.lstat.length = 0;
    const files = await readParsedFiles(config);
    expect(files.map((f) => f.path)).toEqual([...Array.from({ length: 5 }, (_, i) => `tenants/acme/fw-${i}.yaml`), 'tenants/acme/link.yaml'].sort());
    expect(files.flatMap((f) => f.issues.map((i) => i.message))).toEqual([]);
    expect(calls.lstat.filter((p) => p.includes('fw-'))).toEqual([]);
    expect(calls.lstat.filter((p) => p.endsWith('link.yaml'))).toHaveLength(1);
  });
});
