// Shared by the end-to-end tests: run the built CLI as a user would, against the emulator.
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll } from 'vitest';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');

export interface RunResult { code: number | null; stdout: string; stderr: string }

export function runCli(args: string[], opts: { cwd?: string; env?: Record<string, string | undefined>; input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...process.env, NO_COLOR: '1', ...opts.env })) if (v !== undefined) env[k] = v;
    const child = spawn(process.execPath, [CLI, ...args], { cwd: opts.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`dus-sync ${args.join(' ')} timed out\n${stderr}`)); }, opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
    child.stdin.end(opts.input ?? '');
  });
}

/** Writes a folder of files (path → text) into a new temp dir and returns it. */
export function writeTree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'dus-sync-e2e-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

/**
 * writeTree for a test file that removes its folders when it ends: `const tree = treesRemovedAfterAll();`
 * at the top of the file (it registers the afterAll hook there).
 */
export function treesRemovedAfterAll(): (files: Record<string, string>) => string {
  const made: string[] = [];
  afterAll(() => { for (const d of made) rmSync(d, { recursive: true, force: true }); });
  return (files) => {
    const dir = writeTree(files);
    made.push(dir);
    return dir;
  };
}
