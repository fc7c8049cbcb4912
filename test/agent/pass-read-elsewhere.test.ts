// The second tester round's B2: a read that went elsewhere (a folder on the file's path swapped
// for a link out of the repository between the stat and the read) was kept as that file's parse,
// and every later pass, interval passes included, reused it until the file itself changed. The
// parse is now kept only when the file read (its fstat) is the file the path led to; here the
// first read of one file is sent to another file, once, through a wrapped openSync.
import type * as Fs from 'node:fs';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

const redirect = vi.hoisted(() => ({ from: undefined as string | undefined, to: undefined as string | undefined }));
vi.mock('node:fs', async (original) => {
  const fs = await original<typeof Fs>();
  const openSync = ((path: string, ...rest: unknown[]) => {
    if (redirect.from !== undefined && String(path).endsWith(redirect.from)) {
      const to = redirect.to!;
      redirect.from = undefined;
      return (fs.openSync as (...a: unknown[]) => number)(to, ...rest);
    }
    return (fs.openSync as (...a: unknown[]) => number)(path, ...rest);
  }) as typeof fs.openSync;
  return { ...fs, default: { ...fs, openSync }, openSync };
});

const { createReconcilePass } = await import('../../src/agent/pass.js');
const { startEmulator } = await import('../../src/emulator/index.js');
const { memoryLogger } = await import('./helpers.js');

const KEY = 'pass-elsewhere-secret-key-0123456789';
let dir: string | undefined;
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined; close = undefined;
});

const fw = (size: number) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "2.4.1", uncompressed_size: ${size} }\n`;

describe('watch and a read that went elsewhere', () => {
  it('does not keep it: the next pass reads the file again and plans what the repository says', async () => {
    const emulator = await startEmulator({ seed: { tenants: { acme: { api_key: KEY, bundles: [{ version: '1', firmwares: [
      { version_number: '2.4.1', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
    ] }], actions: [] } } } as never });
    dir = mkdtempSync(join(tmpdir(), 'dus-elsewhere-'));
    const write = (path: string, text: string) => { mkdirSync(dirname(join(dir!, path)), { recursive: true }); writeFileSync(join(dir!, path), text); };
    write('dus-sync.yaml', 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\nresources: ["tenants/*.yaml"]\n');
    write('tenants/fw.yaml', fw(1000));
    const outside = join(dir, 'state-outside.yaml'); // not under tenants/: no glob lists it
    writeFileSync(outside, fw(666666));
    redirect.from = '/fw.yaml'; // by path, or inside its folder (/proc/self/fd/N/fw.yaml)
    redirect.to = outside;
    const clock = { now: () => 1_700_000_000_000, sleep: () => Promise.resolve() };
    const made = createReconcilePass({
      cwd: dir, env: { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY, GIT_CEILING_DIRECTORIES: dir }, filter: {}, dryRun: true,
      concurrency: 2, journal: join(dir, 'state', 'j.jsonl'), log: memoryLogger(), clock,
    });
    close = async () => { await made.close(); await emulator.close(); };
    const signal = new AbortController().signal;
    const first = await made.pass({ reason: 'start' }, signal);
    expect(redirect.from).toBeUndefined(); // the read was sent elsewhere
    expect(first.objects?.get('acme')).toMatchObject({ drift: 1 });
    const second = await made.pass({ reason: 'interval' }, signal);
    expect(second.objects?.get('acme')).toMatchObject({ in_sync: 1, drift: 0 });
  });
});
