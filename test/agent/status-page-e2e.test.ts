// The status page as a user meets it: the built CLI runs `watch --listen` against the emulator,
// and GET / is read over HTTP and in a real browser (Debian's chromium, headless). The emulator
// is seeded with hostile phase names and statuses, a phase named after the key, and a firmware
// route that echoes the key in its error; the page must show all of it as text, with no key.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { waitFor } from './helpers.js';

const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');
const KEY_ACME = 'status-page-e2e-key-acme-0123456789abcdef';
const KEY_BETA = 'status-page-e2e-key-beta-fedcba9876543210';
const IMG = '"><img src=x onerror=alert(1)>';
const SCRIPT = '<script>alert(2)</script>';

const seed = {
  tenants: {
    acme: {
      api_key: KEY_ACME,
      actions: [
        // canary triggered, the hostile one next; the YAML declares two more.
        { id: 42, status: SCRIPT, phases: [{ name: 'canary' }, { name: IMG }], phases_triggered: [true, false], next_phase_index: 1 },
        // A foreign phase named after the key: a conflict, and wave-2 stays declared, not appended.
        { id: 7, status: 'active', phases: [{ name: 'canary' }, { name: `echo ${KEY_ACME}` }], phases_triggered: [true, false], next_phase_index: 1 },
      ],
    },
    beta: {
      api_key: KEY_BETA,
      bundles: [{ version: '2024.06', firmwares: [
        { version_number: '3.0.0', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
      ] }],
    },
  },
} as unknown as Seed;

const CONFIG = `apiVersion: dus-sync/v1
kind: Config
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
  beta: { api_key_env: DUS_API_KEY_BETA }
resources: ["tenants/**/*.yaml"]
watch:
  interval: 1h
`;

const ACTIONS = `apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 42
  phases:
    - { name: canary }
    - { name: ${JSON.stringify(IMG)} }
    - { name: wave-2 }
    - { name: everyone }
---
apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 7
  phases:
    - { name: canary }
    - { name: wave-1 }
    - { name: wave-2 }
`;

const FIRMWARE = `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: beta }
spec:
  version_number: "3.0.0"
  uncompressed_size: 2048
`;

let emulator: RunningEmulator | undefined;
let child: ChildProcess | undefined;
let dir: string | undefined;
let base = '';
let stderr = '';

beforeAll(async () => {
  // The firmware PUT answers 400 with the key in its detail, in several encodings.
  emulator = await startEmulator({ seed, faults: { hostile: { mode: 'echo', routes: ['firmware'] } } });
  dir = mkdtempSync(join(tmpdir(), 'dus-status-page-'));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir!, path)), { recursive: true });
    writeFileSync(join(dir!, path), text);
  };
  write('dus-sync.yaml', CONFIG);
  write('tenants/acme/actions.yaml', ACTIONS);
  write('tenants/beta/firmware.yaml', FIRMWARE);
  child = spawn(process.execPath, [CLI, 'watch', '--listen', '127.0.0.1:0', '--grace', '2s', '--settle-window', '1s'], {
    cwd: dir,
    env: { ...process.env, DUS_BASE_URL: emulator.url, DUS_API_KEY_ACME: KEY_ACME, DUS_API_KEY_BETA: KEY_BETA, NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  await waitFor(() => /on (http:\/\/127\.0\.0\.1:\d+)/.test(stderr), 15_000, 'the agent to listen');
  base = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)![1]!;
  // The first pass appends wave-2 and everyone to action 42; the one after shows them live.
  let text = '';
  for (let i = 0; i < 200 && !(text.includes('<h2>Tenants</h2>') && text.includes('#3 waiting')); i++) {
    await new Promise((r) => setTimeout(r, 100));
    text = await (await fetch(`${base}/`)).text();
  }
}, 60_000);

afterAll(async () => {
  child?.kill('SIGKILL');
  await emulator?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('GET / from the built CLI', () => {
  it('shows each tenant with its state, problems at file:line, and each action\'s rollout timeline, without the keys', async () => {
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'none'");
    const html = await res.text();
    expect(html, stderr).toContain('<h2>Tenants</h2>');
    // Tenants and their states.
    expect(html).toMatch(/<h2>acme <span class="badge warn">conflict<\/span><\/h2>/);
    expect(html).toMatch(/<h2>beta <span class="badge bad">error<\/span><\/h2>/);
    // The failed firmware write, where it is declared, with the server's words minus the key.
    expect(html).toMatch(/failed<\/span> firmware 3\.0\.0 <code class="muted">tenants\/beta\/firmware\.yaml:\d+(:\d+)?<\/code>: [^<]*\[REDACTED\]/);
    // The conflict on action 7, at its phase in the YAML.
    expect(html).toMatch(/conflict<\/span> action 7 <code class="muted">tenants\/acme\/actions\.yaml:\d+(:\d+)?<\/code>/);
    // Timelines: 42 had canary triggered, the hostile phase next, and gained two phases.
    expect(html).toContain('<h3>action 42 <span class="muted">status &lt;script&gt;alert(2)&lt;/script&gt;</span>');
    expect(html).toContain('<li class="triggered"><span class="state">✓ #0 triggered</span>canary</li>');
    expect(html).toContain('<li class="next"><span class="state">→ #1 next</span>&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</li>');
    expect(html).toMatch(/<li class="waiting"><span class="state">· #3 waiting[^<]*<\/span>everyone<\/li>/);
    // 7: the foreign phase (named after the key) and wave-2 declared but not yet appended.
    expect(html).toContain('2 phase(s) live of 3 declared; next: echo [REDACTED] (#1); 1 declared but not yet appended');
    expect(html).toMatch(/<li class="declared"><span class="state">\+ #2 not yet appended<\/span>wave-2 <code class="muted">tenants\/acme\/actions\.yaml:\d+:\d+<\/code><\/li>/);
    for (const key of [KEY_ACME, KEY_BETA]) {
      expect(html).not.toContain(key.slice(0, 16));
      expect(html).not.toContain(encodeURIComponent(key).slice(0, 16));
      expect(html).not.toContain(Buffer.from(key).toString('base64').slice(0, 16));
    }
    expect(html.toLowerCase()).not.toMatch(/<script|<img/);
  });

  it('answers HEAD with the headers only, and refuses POST', async () => {
    const head = await fetch(`${base}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('x-content-type-options')).toBe('nosniff');
    expect(head.headers.get('cache-control')).toBe('no-store');
    expect(await head.text()).toBe('');
    expect((await fetch(`${base}/`, { method: 'POST', body: 'x' })).status).toBe(405);
  });
});

// ------------------------------------------------------------------ headless Chromium

const CHROMIUM = ['chromium', 'chromium-browser'].find((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status === 0);
if (!CHROMIUM) {
  console.warn('status page browser tests SKIPPED: no chromium on PATH (Debian: apt-get install -y chromium; .ci/run installs it as root)');
}

/** Runs headless Chromium once with a fresh profile; only 127.0.0.1 is asked for anything. */
function chromium(args: readonly string[]): { stdout: string; stderr: string; status: number | null } {
  const profile = mkdtempSync(join(tmpdir(), 'dus-chromium-'));
  try {
    const r = spawnSync(CHROMIUM!, [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage', `--user-data-dir=${profile}`,
      '--enable-logging=stderr', '--v=0', ...args,
    ], { encoding: 'utf8', timeout: 90_000, maxBuffer: 64 * 1024 * 1024 });
    return { stdout: r.stdout, stderr: r.stderr, status: r.status };
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

interface Png { width: number; height: number; pixels: Buffer; channels: number }

/** Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes): header, IDAT, filters. */
function decodePng(file: Buffer): Png {
  expect(file.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  let pos = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (pos < file.length) {
    const len = file.readUInt32BE(pos);
    const type = file.toString('latin1', pos + 4, pos + 8);
    const data = file.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      expect(data[8], 'bit depth').toBe(8);
      expect([2, 6], 'colour type').toContain(data[9]);
      expect(data[12], 'interlace').toBe(0);
      channels = data[9] === 6 ? 4 : 3;
    } else if (type === 'IDAT') {
      idat.push(data);
    } else if (type === 'IEND') {
      break;
    }
    pos += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  expect(raw.length).toBe(height * (stride + 1));
  const pixels = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels]! : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x]! : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels]! : 0;
      let v = line[x]!;
      switch (filter) {
        case 0: break;
        case 1: v += a; break;
        case 2: v += b; break;
        case 3: v += (a + b) >> 1; break;
        case 4: {
          const p = a + b - c;
          const pa = Math.abs(p - a); const pb = Math.abs(p - b); const pc = Math.abs(p - c);
          v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: throw new Error(`PNG filter ${filter}`);
      }
      pixels[y * stride + x] = v & 0xff;
    }
  }
  return { width, height, pixels, channels };
}

function colours(png: Png): Map<string, number> {
  const out = new Map<string, number>();
  for (let i = 0; i < png.pixels.length; i += png.channels) {
    const key = png.pixels.subarray(i, i + 3).toString('hex');
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

describe('the status page in headless Chromium', () => {
  it.skipIf(!CHROMIUM)('parses into the page\'s own elements only: the timeline is there, no injected element, no CSP violation (skipped: chromium is not installed)', () => {
    const r = chromium(['--dump-dom', `${base}/`]);
    expect(r.status, r.stderr).toBe(0);
    const dom = r.stdout;
    expect(dom).toContain('<ol class="timeline">');
    expect(dom).toContain('<li class="next"><span class="state">→ #1 next</span>"&gt;&lt;img src=x onerror=alert(1)&gt;</li>');
    expect(dom).toContain('<h2>beta <span class="badge bad">error</span></h2>');
    // Elements only the page's markup could create (the DOM is serialized from the parsed tree).
    expect(dom.toLowerCase()).not.toMatch(/<script|<img|<svg|<iframe|<object|<embed/);
    expect(dom).not.toContain(KEY_ACME.slice(0, 16));
    expect(r.stderr).not.toMatch(/Content Security Policy|Refused to/);
  }, 120_000);

  it.skipIf(!CHROMIUM)('renders a 1200x900 screenshot in colour: the styled timeline (its inline style allowed by the CSP hash) is painted (skipped: chromium is not installed)', () => {
    const shot = join(mkdtempSync(join(tmpdir(), 'dus-shot-')), 'status.png');
    try {
      const r = chromium([`--screenshot=${shot}`, '--window-size=1200,900', '--hide-scrollbars', `${base}/`]);
      expect(r.status, r.stderr).toBe(0);
      const png = decodePng(readFileSync(shot));
      expect([png.width, png.height]).toEqual([1200, 900]);
      const seen = colours(png);
      // Not blank: text, borders and backgrounds.
      expect(seen.size).toBeGreaterThan(20);
      const top = [...seen.values()].sort((a, b) => b - a)[0]!;
      expect(top / (png.width * png.height)).toBeLessThan(0.95);
      // The style's fills: the triggered phase's green, the next phase's amber. Without the style
      // (a CSP that refused it) there would be neither.
      const near = (hex: string) => [...seen.keys()].some((k) => {
        const want = Buffer.from(hex, 'hex');
        const got = Buffer.from(k, 'hex');
        return [0, 1, 2].every((i) => Math.abs(want[i]! - got[i]!) <= 3);
      });
      expect(near('dafbe1'), 'triggered green').toBe(true);
      expect(near('fff8c5'), 'next amber').toBe(true);
      if (process.env.DUS_KEEP_SCREENSHOT) writeFileSync(process.env.DUS_KEEP_SCREENSHOT, readFileSync(shot));
    } finally {
      rmSync(dirname(shot), { recursive: true, force: true });
    }
  }, 120_000);
});
