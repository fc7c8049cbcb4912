import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installSignalHandlers } from '../../src/agent/signals.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dus-signals-'));
  // The child runs the real module, bundled once (Node 20 cannot run TypeScript by itself).
  await build({
    entryPoints: [resolve('src/agent/signals.ts')], bundle: true, platform: 'node', format: 'esm',
    outfile: join(dir, 'signals.mjs'), logLevel: 'silent',
  });
  await writeFile(join(dir, 'child.mjs'), `
import { installSignalHandlers } from './signals.mjs';
const hang = process.argv[2] === 'hang';
installSignalHandlers(async (signal) => {
  process.stdout.write('stopping on ' + signal + '\\n');
  await new Promise((r) => setTimeout(r, hang ? 60_000 : 100));
  process.stdout.write('stopped\\n');
});
setInterval(() => {}, 1000);
process.stdout.write('ready\\n');
`);
});
afterAll(async () => { await rm(dir, { recursive: true, force: true }); });

function run(mode: string, signals: NodeJS.Signals[]): Promise<{ code: number | null; out: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [join(dir, 'child.mjs'), mode], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); fail(new Error(`child did not exit: ${out}`)); }, 10_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out === 'ready\n') {
        child.kill(signals[0]);
        if (signals[1]) setTimeout(() => child.kill(signals[1]), 150);
      }
    });
    child.on('exit', (code) => { clearTimeout(timer); done({ code, out }); });
  });
}

describe('signal handling', () => {
  it('SIGTERM stops gracefully and exits 0', async () => {
    const r = await run('ok', ['SIGTERM']);
    expect(r).toEqual({ code: 0, out: 'ready\nstopping on SIGTERM\nstopped\n' });
  });

  it('SIGINT does the same', async () => {
    expect((await run('ok', ['SIGINT'])).code).toBe(0);
  });

  it('a second signal exits at once (128 + the signal number)', async () => {
    const r = await run('hang', ['SIGTERM', 'SIGINT']);
    expect(r.code).toBe(130);
    expect(r.out).not.toContain('stopped');
  });

  it('runs onStop once and exits 1 when it fails', async () => {
    const handlers = new Map<string, () => void>();
    const proc = { on: (s: string, h: () => void) => { handlers.set(s, h); return proc; }, off: (s: string) => { handlers.delete(s); return proc; } };
    const codes: number[] = [];
    let calls = 0;
    const remove = installSignalHandlers(() => { calls++; return Promise.reject(new Error('x')); }, { exit: (c) => codes.push(c), proc: proc as never });
    handlers.get('SIGTERM')!();
    await new Promise((r) => setImmediate(r));
    expect({ calls, codes }).toEqual({ calls: 1, codes: [1] });
    handlers.get('SIGTERM')!();
    expect(codes).toEqual([1, 143]);
    remove();
    expect(handlers.size).toBe(0);
  });
});
