// CI keeps the benchmarks working: `node bench/run.mjs --smoke` runs every benchmark at tiny
// sizes against its own emulator on 127.0.0.1 and prints the table. Not timed: the figures of
// a smoke run mean nothing, only that each benchmark still runs to the end and checks its work.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

function runSmoke(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'bench', 'run.mjs'), '--smoke'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('bench/run.mjs --smoke', () => {
  it('runs every benchmark to the end and prints the table', async () => {
    const { code, stdout, stderr } = await runSmoke();
    expect(code, stderr.slice(-3000)).toBe(0);
    expect(stdout).toContain('| work | dus-sync | floor | ratio | goal | met |');
    for (const name of [
      'cold start: --version', 'cold start: --help', 'cold start: validate examples/', 'validate 205 documents',
      'plan, 200 records', 'plan, 400 records', 'plan peak RSS at 400 records', 'apply 30 changes, no latency',
      'apply 30 changes, 20 ms latency', 'watch: save to applied, 400 records', 'watch peak RSS at 400 records',
    ]) {
      expect(stdout).toMatch(new RegExp(`^\\| ${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`, 'm'));
    }
  }, 120_000);
});
