// A file holding U+FFFD is text like any other; bytes that are not UTF-8 make a file refused.
// Both used to look alike after decoding (each invalid byte becomes U+FFFD), so a valid file
// that held the character, a config among them, was refused as "not UTF-8 (is it binary?)".
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { utf8Text } from '../../src/load/read-file.js';
import { runCli, treesRemovedAfterAll } from '../e2e/helpers.js';

const tree = treesRemovedAfterAll();
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', '-c', 'commit.gpgsign=false', ...args], { cwd, stdio: 'pipe' });
const firmware = (component: string) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec:\n  version_number: "1.0.0"\n  component_name: "${component}"\n  is_deactivated: false\n  uncompressed_size: 1\n  dependencies: []\n`;

describe('UTF-8 text', () => {
  it('utf8Text: a real U+FFFD is kept as written; bytes that are not UTF-8 are marked for the parser to refuse', () => {
    expect(utf8Text(Buffer.from('a\uFFFDb'))).toBe('a\uFFFDb');
    expect(utf8Text(Buffer.from([0x61, 0xff, 0x62]))).toBe('\u0000a\uFFFDb');
    expect(utf8Text(Buffer.from([0x61, 0xe2, 0x82]))).toBe('\u0000a\uFFFD');
  });

  it('validate and diff --base read a file and a config holding U+FFFD, and refuse a file holding a byte that is not UTF-8', async () => {
    const repo = tree({
      'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\nresources: ["t/*.yaml", "!t/\uFFFD.yaml"]\n',
      't/a.yaml': firmware('mo\uFFFDdem'),
    });
    let r = await runCli(['validate'], { cwd: repo });
    expect([r.code, r.stdout, r.stderr]).toEqual([0, '1 file, 1 document: valid\n', '']);
    git(repo, 'init', '-q');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'base');
    writeFileSync(join(repo, 't/b.yaml'), Buffer.concat([Buffer.from(firmware('wifi').replace('1.0.0', '2.0.0')), Buffer.from('# \xff\n', 'latin1')]));
    for (const args of [['validate'], ['diff', '--base', 'HEAD']]) {
      r = await runCli(args, { cwd: repo });
      expect([args, r.code]).toEqual([args, 1]);
      expect(r.stdout + r.stderr).toContain('t/b.yaml:1:1: the file is not UTF-8 text');
      expect(r.stdout + r.stderr).not.toContain('t/a.yaml:');
    }
    // At the base, a byte that is not UTF-8 is refused the same way (read from git's objects).
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'bad');
    writeFileSync(join(repo, 't/b.yaml'), firmware('wifi').replace('1.0.0', '2.0.0'));
    r = await runCli(['diff', '--base', 'HEAD'], { cwd: repo });
    expect(r.stdout + r.stderr).toContain('t/b.yaml');
    expect(r.stdout + r.stderr).toContain('not UTF-8 text');
  });
});
