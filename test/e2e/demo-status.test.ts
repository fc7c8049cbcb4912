// The README's first command must work on a fresh machine: `npm run demo` (here: the demo
// script on the built CLI) runs validate, plan, apply, plan again and status, and exits 0.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import { runCli } from './helpers.js';

const root = join(import.meta.dirname, '..', '..');

describe('the demo', () => {
  it('plans, applies and converges examples/ against the embedded emulator', async () => {
    const out = await new Promise<{ code: number | null; text: string }>((resolve) => {
      const child = spawn(process.execPath, [join(root, 'scripts', 'demo.mjs')], { env: { ...process.env, NO_COLOR: '1' } });
      let text = '';
      child.stdout.on('data', (d: Buffer) => { text += d.toString(); });
      child.stderr.on('data', (d: Buffer) => { text += d.toString(); });
      child.on('close', (code) => resolve({ code, text }));
    });
    expect(out.code, out.text).toBe(0);
    expect(out.text).toMatch(/listening|Started the emulator/);
    expect(out.text).toMatch(/Plan: .*firmware update/);
    expect(out.text).toMatch(/No changes/);
    expect(out.text).toMatch(/✓|triggered/);
    expect(out.text).not.toContain('dev-key-acme');
  }, 90_000);
});

describe('status', () => {
  it('shows each declared action as a timeline with dates', async () => {
    const emulator = await startEmulator({ seed: join(root, 'examples', 'emulator-seed.yaml') });
    try {
      const r = await runCli(['--config', join(root, 'examples', 'dus-sync.yaml'), 'status'], {
        env: { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: 'dev-key-acme', DUS_API_KEY_GLOBEX: 'dev-key-globex' },
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/action \d+/);
      expect(r.stdout).toMatch(/→|next/);
      expect(r.stdout).toMatch(/\d{4}-\d\d-\d\d/);
      const json = await runCli(['--config', join(root, 'examples', 'dus-sync.yaml'), 'status', '--format', 'json'], {
        env: { DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: 'dev-key-acme', DUS_API_KEY_GLOBEX: 'dev-key-globex' },
      });
      const parsed = JSON.parse(json.stdout) as { id: number; found: boolean; phases: unknown[] }[];
      expect(parsed.length).toBeGreaterThanOrEqual(2);
      expect(parsed.every((a) => a.found && a.phases.length > 0)).toBe(true);
    } finally {
      await emulator.close();
    }
  });
});
