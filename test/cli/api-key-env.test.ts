// api_key_env takes the NAME of an environment variable. A key pasted there instead used to pass
// validate and then be printed in "set the environment variable <the key>": now it is refused at
// its file:line, and never echoed, by every command. Through the built CLI.
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, writeTree } from '../e2e/helpers.js';

const config = (value: string) => `apiVersion: dus-sync/v1
kind: Config
base_url: http://127.0.0.1:1
default_tenant: acme
tenants:
  acme: { api_key_env: ${value} }
  globex:
    api_key_env: DUS_API_KEY_GLOBEX
`;
const FIRMWARE = 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec: { version_number: "1.0" }\n';
const ENV = { DUS_CONFIG: undefined, DUS_TENANT: undefined, DUS_BASE_URL: undefined, DUS_API_KEY: undefined };

const made: string[] = [];
afterAll(() => { for (const d of made) rmSync(d, { recursive: true, force: true }); });
function repo(value: string): string {
  const dir = writeTree({ '.git/HEAD': '', 'dus-sync.yaml': config(value), 'f.yaml': FIRMWARE });
  made.push(dir);
  return dir;
}

const MESSAGE = 'tenants.acme.api_key_env must be the NAME of an environment variable, such as DUS_API_KEY_ACME; '
  + 'the value given is not one (it is not shown, in case it is a key)';

// Keys as services hand them out: with dashes, base64, plain hex that starts with a letter, and
// letters only in both cases (no digit to tell them from a name), bare or after a prefix.
const KEYS = ['sk-live-4f9a8b7c6d5e4f3a2b1c', '"dGhpcyBpcyBhIGtleQ=="', 'a3f9c2e1b4d5a6f7e8d9c0b1a2f3e4d5', 'qWeRtYuIoPaSdFgHjKlZxCvB', 'sk_live_AbCdEfGhIjKlMnOpQr'];

describe('api_key_env holding a key', () => {
  it('validate refuses it at its file:line:col, without the value, in every format', async () => {
    for (const key of KEYS) {
      const dir = repo(key);
      const bare = key.replace(/"/g, '');
      const text = await runCli(['validate'], { cwd: dir, env: ENV });
      expect(text.code, key).toBe(1);
      expect(text.stdout, key).toBe(`dus-sync.yaml:6:24: ${MESSAGE}\n\n1 problem in 1 file\n`);
      const json = await runCli(['validate', '--format', 'json'], { cwd: dir, env: ENV });
      expect(JSON.parse(json.stdout)).toEqual([{ file: 'dus-sync.yaml', line: 6, column: 24, pointer: '/tenants/acme/api_key_env', message: MESSAGE }]);
      const github = await runCli(['validate', '--format', 'github'], { cwd: dir, env: ENV });
      for (const r of [text, json, github]) expect(r.stdout + r.stderr, key).not.toContain(bare);
    }
  });

  it('plan, status and export refuse it before reading any key, and never print it', async () => {
    const key = KEYS[0]!;
    const dir = repo(key);
    for (const command of [['plan'], ['status'], ['apply', '--auto-approve'], ['export', '--out', 'x']]) {
      const r = await runCli(command, { cwd: dir, env: ENV });
      expect(r.code, command[0]).toBe(1);
      expect(r.stderr, command[0]).toBe(`dus-sync.yaml:6:24: ${MESSAGE}\nerror: 1 problem in the configuration; nothing was written.\n`);
      expect(r.stdout + r.stderr).not.toContain(key);
    }
  });

  it('a name is accepted, lower case and underscores included', async () => {
    for (const name of ['DUS_API_KEY_ACME', 'acme_key', '_KEY1', 'MyServiceApiKey', 'DUS_API_KEY_GLOBEX_PRODUCTION_EU']) {
      const r = await runCli(['validate'], { cwd: repo(name), env: ENV });
      expect([r.code, r.stdout], name).toEqual([0, '1 file, 1 document: valid\n']);
    }
  });
});
