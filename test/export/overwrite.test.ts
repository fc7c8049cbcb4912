// export never overwrites a file that differs from what it would write (a hand-written comment
// was lost that way): it names every such file and writes nothing, unless --force. A file that
// holds the same content is left alone. Without --action it says that actions must be named.
import { readFileSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { runCli, writeTree } from '../e2e/helpers.js';
import { config, env, KEY, seed } from '../e2e/habits-fixture.js';

let emulator: RunningEmulator | undefined;
afterEach(async () => { await emulator?.close(); emulator = undefined; });

const NOTE = 'note: actions are exported only when named: --action ID (repeatable)\n';

async function setup() {
  emulator = await startEmulator({ seed: seed() });
  const dir = writeTree({ 'dus-sync.yaml': config() });
  const out = join(dir, 'tenants', 'acme');
  const exportArgs = (...extra: string[]) => ['--config', `${dir}/dus-sync.yaml`, 'export', '--out', out, ...extra];
  return { dir, out, exportArgs, url: emulator.url };
}

describe('export over existing files', () => {
  it('refuses to overwrite a hand-edited file, naming it and writing nothing; --force overwrites it', async () => {
    const { out, exportArgs, url } = await setup();
    const first = await runCli(exportArgs(), { env: env(url) });
    expect(first.code, first.stderr).toBe(0);
    const modem = join(out, 'firmwares', 'modem.yaml');
    const edited = readFileSync(modem, 'utf8').replace('version_number: "2.4.1"', 'version_number: "2.4.1" # keep: the field fix of June');
    writeFileSync(modem, edited);

    // Also asks for an action whose file is not there yet: it must not be written either.
    const refused = await runCli(exportArgs('--action', '42'), { env: env(url) });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(`error: refusing to overwrite a file in ${out} that differs from the export, so hand edits would be lost: firmwares/modem.yaml; nothing was written. Commit or move it aside, or pass --force to overwrite\n`);
    expect(readFileSync(modem, 'utf8')).toBe(edited);
    expect(existsSync(join(out, 'actions', '42.yaml'))).toBe(false);

    const forced = await runCli(exportArgs('--action', '42', '--force'), { env: env(url) });
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).toContain('warning: overwrote firmwares/modem.yaml, which differed from the export (--force)');
    expect(forced.stderr).toContain('wrote actions/42.yaml');
    expect(readFileSync(modem, 'utf8')).not.toContain('the field fix of June');
    expect(forced.stdout + forced.stderr).not.toContain(KEY);
  });

  it('names every differing file', async () => {
    const { out, exportArgs, url } = await setup();
    expect((await runCli(exportArgs('--action', '42'), { env: env(url) })).code).toBe(0);
    writeFileSync(join(out, 'firmwares', 'modem.yaml'), '# mine\n');
    writeFileSync(join(out, 'actions', '42.yaml'), '# mine too\n');
    const refused = await runCli(exportArgs('--action', '42'), { env: env(url) });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/refusing to overwrite 2 files in .* that differ from the export, so hand edits would be lost: firmwares\/modem\.yaml, actions\/42\.yaml; nothing was written\. Commit or move them aside, or pass --force to overwrite/);
  });

  it('leaves a file that holds the same content alone, stamp and all', async () => {
    const { out, exportArgs, url } = await setup();
    expect((await runCli(exportArgs('--action', '42'), { env: env(url) })).code).toBe(0);
    const modem = join(out, 'firmwares', 'modem.yaml');
    const before = readFileSync(modem, 'utf8');
    const mtime = statSync(modem).mtimeMs;
    await new Promise((r) => setTimeout(r, 1100)); // the stamp has whole seconds
    const again = await runCli(exportArgs('--action', '42'), { env: env(url) });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('unchanged firmwares/modem.yaml\n');
    expect(again.stderr).toContain('unchanged actions/42.yaml\n');
    expect(again.stdout).toMatch(/\(2 files, 2 unchanged\)\.\n$/);
    expect(readFileSync(modem, 'utf8')).toBe(before);
    expect(statSync(modem).mtimeMs).toBe(mtime);
  });

  it('says that actions are exported only when named, and only when none is', async () => {
    const { exportArgs, url } = await setup();
    const without = await runCli(exportArgs(), { env: env(url) });
    expect(without.code, without.stderr).toBe(0);
    expect(without.stderr).toContain(NOTE);
    expect(without.stdout).toMatch(/and 0 actions of tenant acme/);
    const named = await runCli(exportArgs('--action', '42'), { env: env(url) });
    expect(named.code, named.stderr).toBe(0);
    expect(named.stderr).not.toContain('note: actions');
  });
});
