// `dus-sync --help | head`: the reader goes away before the writer is done. The command stops
// quietly, as one that SIGPIPE ends would, instead of printing "error: write EPIPE".
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI, treesRemovedAfterAll } from '../e2e/helpers.js';

const tree = treesRemovedAfterAll();

function closedEarly(args: string[], cwd?: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    // Like head: read the first chunk, then close the pipe.
    child.stdout.once('data', () => child.stdout.destroy());
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('a closed standard output', () => {
  it('a long output piped into a reader that stops after the first chunk ends quietly', async () => {
    // Far more than a pipe holds (64 KiB): the writer meets the closed pipe.
    const docs = Array.from({ length: 3000 }, (_, i) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "${i}.0.0"\n  uncompressed_size: many\n`).join('---\n');
    const dir = tree({ 'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\n', 'fw.yaml': docs });
    for (let i = 0; i < 3; i++) {
      const r = await closedEarly(['validate', '--format', 'json'], dir);
      expect(r.stderr).not.toMatch(/EPIPE|error/);
      // validate's own status (1: the files are invalid), not a crash's.
      expect(r.code).toBe(1);
    }
  });
});
