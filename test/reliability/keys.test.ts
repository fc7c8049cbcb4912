// Keys in the wrong place, through the built CLI: a key put in another variable by mistake
// (DUS_BASE_URL, DUS_TENANT, DUS_MAX_FILE_SIZE, DUS_FOLLOW_EXTERNAL_SYMLINKS) is not quoted by
// the error about that variable.
import { describe, expect, it } from 'vitest';
import { runCli, writeTree } from './helpers.js';

/** Every 8-character run of the key: any of them in the output is a leak. */
function runsOf(key: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 8 <= key.length; i++) out.push(key.slice(i, i + 8));
  return out;
}

function expectNoKey(text: string, keys: readonly string[]): void {
  for (const key of keys) expect(runsOf(key).filter((r) => text.includes(r)), `${key} in:\n${text}`).toEqual([]);
}

const FIRMWARE = `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec: { version_number: "1.0.0", is_deactivated: false }
`;

describe('a key put in the wrong variable', () => {
  const KEY = 'Zq8xK3mP9wR2tY7aB4cD6eF1';
  const cases: [string, Record<string, string>, RegExp][] = [
    ['DUS_BASE_URL', { DUS_BASE_URL: KEY }, /^error: the environment variable DUS_BASE_URL must be the API's address, starting with http:\/\/ or https:\/\/; its value is not shown/],
    ['DUS_TENANT', { DUS_TENANT: KEY }, /^error: the environment variable DUS_TENANT must name one of the tenants in dus-sync\.yaml \(acme\); its value is not shown/],
    ['DUS_MAX_FILE_SIZE', { DUS_MAX_FILE_SIZE: KEY }, /^error: the environment variable DUS_MAX_FILE_SIZE must be a size from 1 KiB to 256 MiB \(e\.g\. 16MiB\); its value is not shown/],
    ['DUS_FOLLOW_EXTERNAL_SYMLINKS', { DUS_FOLLOW_EXTERNAL_SYMLINKS: KEY }, /^error: the environment variable DUS_FOLLOW_EXTERNAL_SYMLINKS must be 1 or 0 \(true or false\); its value is not shown/],
  ];
  it.each(cases)('%s: the error names the variable and the shape it needs, and does not quote it', async (_name, env, message) => {
    const dir = writeTree({
      'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:9\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n',
      'fw.yaml': FIRMWARE,
    });
    // With the key also where it belongs, and without: either way the error is about the other variable alone.
    const runs = await Promise.all([['plan'], ['validate'], ['status']].flatMap((command) =>
      [{ DUS_API_KEY_ACME: KEY }, {}].map((own) => runCli(command, { cwd: dir, env: { ...own, ...env } }))));
    for (const r of runs) {
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expectNoKey(r.stdout + r.stderr, [KEY]);
    }
  });
});
