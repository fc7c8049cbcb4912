// resolveConfig makes every key the config names known to redaction, and reads each key file
// once to do it (it used to read them three times: at its start, after the parse, at its end).
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type * as ReadFile from '../../src/load/read-file.js';

const reads: string[] = [];
vi.mock('../../src/load/read-file.js', async (original) => {
  const real = await original<typeof ReadFile>();
  return { ...real, readRegularFile: (path: string, opts: Parameters<typeof real.readRegularFile>[1]) => { reads.push(path); return real.readRegularFile(path, opts); } };
});

const { resolveConfig } = await import('../../src/load/config.js');
const { clearSecretsForTests, redact } = await import('../../src/redact.js');

const tmp = mkdtempSync(join(tmpdir(), 'dus-key-reads-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const KEY = 'k3y-file-0123456789abcdef';

function repo(name: string, config: string): string {
  const dir = join(tmp, name);
  mkdirSync(join(dir, 'secrets'), { recursive: true });
  writeFileSync(join(dir, 'secrets', 'globex'), `${KEY}\n`);
  writeFileSync(join(dir, 'dus-sync.yaml'), config);
  return dir;
}

const keyReads = () => reads.filter((p) => p.endsWith(join('secrets', 'globex'))).length;

describe('key files at start-up', () => {
  for (const [name, extra] of [['clean', ''], ['anchored (the yaml path)', 'x-anchor: &a 1\nx-alias: *a\n']] as const) {
    it(`a ${name} config: its key file is read once, and its key is redacted`, async () => {
      clearSecretsForTests();
      reads.length = 0;
      const dir = repo(name.replace(/\W/g, ''), `apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:1\ntenants:\n  globex: { api_key_file: secrets/globex }\n${extra}`);
      await resolveConfig({ cwd: dir, env: {} }).catch(() => undefined);
      expect(keyReads()).toBe(1);
      expect(redact(`key ${KEY}`)).not.toContain(KEY);
    });
  }
});
