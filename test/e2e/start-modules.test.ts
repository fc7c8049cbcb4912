// What a plan loads of Node's own modules: over http, neither node:http2 nor node:tls (undici's
// HTTP/2 client, which dus-sync never uses, required http2 when it loaded, and with it tls and
// crypto: some 10 ms of every start of plan and apply; scripts/build.mjs lazyHttp2). The https
// path loads them when it connects (test/api).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { runCli, writeTree } from './helpers.js';

const KEY = 'k-3f9a1c7e5b2d-w4x';
let em: RunningEmulator | undefined;
afterEach(async () => { await em?.close(); em = undefined; });

describe("Node's modules a plan loads", () => {
  it('plan over http loads no http2 and no tls, and still plans', async () => {
    em = await startEmulator({ seed: { tenants: { acme: { api_key: KEY, actions: [{ id: 7, status: 'pending', phases: [{ name: 'p0', trigger_on: {}, info: {} }] }] } } } as unknown as Seed });
    const dir = writeTree({
      'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n',
      'action.yaml': 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 7\n  phases:\n    - { name: p0 }\n    - { name: p1 }\n',
    });
    const report = join(dir, 'modules.cjs');
    writeFileSync(report, "process.on('exit', () => { require('node:fs').writeFileSync(process.env.MODULES_OUT, process.moduleLoadList.join('\\n')); });\n");
    const out = join(dir, 'modules.txt');
    const r = await runCli(['--config', join(dir, 'dus-sync.yaml'), 'plan'], {
      env: { DUS_BASE_URL: em.url, DUS_API_KEY_ACME: KEY, NODE_OPTIONS: `--require ${report}`, MODULES_OUT: out, NO_COLOR: '1' },
    });
    expect(r.stdout, r.stderr).toContain('p1');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const loaded = (await import('node:fs')).readFileSync(out, 'utf8').split('\n');
    expect(loaded).toContain('NativeModule http');
    expect(loaded).not.toContain('NativeModule http2');
    expect(loaded).not.toContain('NativeModule tls');
  });
});
