// dist/cli.js loads dist/main.cjs and dist/commands/*.cjs through V8's code cache made at build
// time (src/cli/code-cache.ts, scripts/code-cache.mjs): taken when this Node made it with these
// flags, and otherwise never run as the code of anything but the file's own bytes.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');
const REPORTER = join(ROOT, 'test', 'fixtures', 'code-cache-report.cjs');
const EXAMPLES = join(ROOT, 'examples', 'dus-sync.yaml');
const work = mkdtempSync(join(tmpdir(), 'dus-code-cache-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Run { status: number | null; stdout: string; stderr: string; report: { file: string; cache: string }[] | null }

function run(dist: string, args: string[], nodeFlags: string[] = [], timeout = 60_000): Run {
  const reportFile = join(work, `report-${Math.random().toString(36).slice(2)}.json`);
  const r = spawnSync(process.execPath, [...nodeFlags, '--require', REPORTER, join(dist, 'cli.js'), ...args], {
    encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', CODE_CACHE_REPORT: reportFile, NODE_OPTIONS: '' }, timeout,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, report: JSON.parse(readFileSync(reportFile, 'utf8')) as Run['report'] };
}

/** A copy of dist/ (and schemas/ beside it, as in the package) to change. */
function copyOfDist(): string {
  const top = mkdtempSync(join(work, 'pkg-'));
  cpSync(join(ROOT, 'dist'), join(top, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'schemas'), join(top, 'schemas'), { recursive: true });
  return join(top, 'dist');
}

/** The Node version a cache names in its header. */
const madeBy = (cache: string): string => readFileSync(cache).subarray(0, 128).toString('latin1').split('\n')[1]!;

describe('V8 code cache of dist/', () => {
  const dist = join(ROOT, 'dist');

  it('is made for main.cjs and the files of one-shot commands, not for watch and the emulator (which refuse it)', () => {
    const cjs = readdirSync(join(dist, 'commands')).filter((f) => f.endsWith('.cjs'));
    expect(cjs.sort()).toEqual(['agent.cjs', 'completion.cjs', 'diff.cjs', 'online.cjs', 'schema.cjs', 'validate.cjs']);
    for (const f of ['main.cjs', ...cjs.map((f) => `commands/${f}`)]) expect([f, existsSync(join(dist, `${f}.v8cache`))]).toEqual([f, f !== 'commands/agent.cjs']);
    expect(readdirSync(dist).sort()).toEqual(['THIRD-PARTY-LICENSES.txt', 'cli.js', 'commands', 'index.js', 'index.js.map', 'lazy', 'main.cjs', 'main.cjs.map', 'main.cjs.v8cache', 'package.json']);
  });

  it('is taken by validate when this Node made it, and the output is the same as without', () => {
    const expected = madeBy(join(dist, 'main.cjs.v8cache')) === process.version ? 'taken' : 'none';
    const r = run(dist, ['--config', EXAMPLES, 'validate']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^\d+ files, \d+ documents: valid\n$/);
    expect(r.report).toEqual([{ file: 'main.cjs', cache: expected }, { file: 'validate.cjs', cache: expected }]);
    const copy = copyOfDist();
    for (const f of readdirSync(copy, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.v8cache'))) rmSync(join(copy, f));
    const without = run(copy, ['--config', EXAMPLES, 'validate']);
    expect(without.report).toEqual([{ file: 'main.cjs', cache: 'none' }, { file: 'validate.cjs', cache: 'none' }]);
    expect([without.status, without.stdout, without.stderr]).toEqual([r.status, r.stdout, r.stderr]);
  });

  it('never runs as the code of a file changed since, even by an edit of the same length (V8 checks only the length)', () => {
    const copy = copyOfDist();
    const file = join(copy, 'commands', 'validate.cjs');
    const text = readFileSync(file, 'utf8');
    const edited = text.replace('c2("green", "valid")', 'c2("green", "VALID")');
    expect(edited).not.toBe(text);
    expect(edited.length).toBe(text.length);
    writeFileSync(file, edited);
    const r = run(copy, ['--config', EXAMPLES, 'validate']);
    expect(r.stdout).toMatch(/documents: VALID\n$/);
    expect(r.report![1]).toEqual({ file: 'validate.cjs', cache: 'none' });
  });

  it('is not taken from a cache of another Node, and one V8 refuses (garbage, other flags) costs only the compiling', () => {
    const madeHere = madeBy(join(dist, 'main.cjs.v8cache')) === process.version;
    const copy = copyOfDist();
    const cache = join(copy, 'commands', 'validate.cjs.v8cache');
    const bytes = readFileSync(cache);
    const head = bytes.subarray(0, 128).toString('latin1').split('\n');
    const headLength = head[0]!.length + head[1]!.length + head[2]!.length + 3;
    const source = readFileSync(join(copy, 'commands', 'validate.cjs'));
    // Another Node's version in the header: not offered to V8 at all.
    writeFileSync(cache, Buffer.concat([Buffer.from(`${head[0]}\nv0.0.1\n${head[2]}\n`), bytes.subarray(headLength)]));
    let r = run(copy, ['--config', EXAMPLES, 'validate']);
    expect([r.status, r.report![1]]).toEqual([0, { file: 'validate.cjs', cache: 'none' }]);
    // This Node's header and bytes, V8's data replaced by garbage: V8 refuses it.
    writeFileSync(cache, Buffer.concat([Buffer.from(`${head[0]}\n${process.version}\n${head[2]}\n`), source, Buffer.alloc(4096, 0x5a)]));
    r = run(copy, ['--config', EXAMPLES, 'validate']);
    expect([r.status, r.stdout, r.report![1]]).toEqual([0, expect.stringMatching(/documents: valid\n$/), { file: 'validate.cjs', cache: 'refused' }]);
    // A V8 flag on node's command line that the build did not have: every cache is refused.
    r = run(dist, ['--config', EXAMPLES, 'validate'], ['--no-opt']);
    expect([r.status, r.stdout]).toEqual([0, expect.stringMatching(/documents: valid\n$/)]);
    expect(r.report).toEqual([{ file: 'main.cjs', cache: madeHere ? 'refused' : 'none' }, { file: 'validate.cjs', cache: madeHere ? 'refused' : 'none' }]);
  });

  it('is refused when V8\'s part of it is damaged, where V8 crashed or ran other code (its checksum is on)', () => {
    const copy = copyOfDist();
    const clean = copyOfDist();
    for (const f of readdirSync(clean, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.v8cache'))) rmSync(join(clean, f));
    const cache = join(copy, 'main.cjs.v8cache');
    const bytes = readFileSync(cache);
    const head = bytes.subarray(0, 128).toString('latin1').split('\n');
    const dataStart = head[0]!.length + head[1]!.length + head[2]!.length + 3 + Number(head[2]);
    const expected = run(clean, ['--help']);
    // Bytes flipped across V8's data (a fatal error in its deserializer, exit 133, without the checksum),
    // and a single byte at a few places.
    const damages: ((b: Buffer) => void)[] = [
      (b) => { for (let o = dataStart + 300; o < dataStart + 2300; o += 97) b[o]! ^= 0xff; },
      ...[0.001, 0.3, 0.5, 0.99].map((at) => (b: Buffer) => { const o = dataStart + Math.floor((b.length - dataStart) * at); b[o]! ^= 0x01; }),
    ];
    for (const damage of damages) {
      const b = Buffer.from(bytes);
      damage(b);
      writeFileSync(cache, b);
      const r = run(copy, ['--help']);
      expect([r.status, r.stdout, r.stderr]).toEqual([expected.status, expected.stdout, expected.stderr]);
      if (madeBy(join(dist, 'main.cjs.v8cache')) === process.version) expect(r.report![0]).toEqual({ file: 'main.cjs', cache: 'refused' });
    }
  });

  it('is refused when damaged, made for watch and the emulator, whose V8 flags are otherwise its defaults (such a cache crashed them)', () => {
    const copy = copyOfDist();
    const clean = run(copy, ['watch', '--help']);
    expect(clean.status).toBe(0);
    // A cache of main.cjs made as dist/cli.js would load it, under V8's default flags (and under
    // those and the checksum), then damaged across V8's data.
    const craft = `
      const { readFileSync, writeFileSync } = require('node:fs');
      const { Script } = require('node:vm');
      const file = process.argv[1];
      const source = readFileSync(file);
      const script = new Script('(function (exports, require, module, __filename, __dirname) { ' + source.toString('utf8') + '\\n})', { filename: 'dist/main.cjs' });
      const data = Buffer.from(script.createCachedData());
      for (let o = 300; o < Math.min(data.length, 2300); o += 97) data[o] ^= 0xff;
      writeFileSync(file + '.v8cache', Buffer.concat([Buffer.from('dus-sync V8 code cache\\n' + process.version + '\\n' + source.length + '\\n'), source, data]));`;
    for (const flags of [[], ['--verify-snapshot-checksum']]) {
      const made = spawnSync(process.execPath, [...flags, '-e', craft, join(copy, 'main.cjs')], { encoding: 'utf8' });
      expect([made.status, made.stderr]).toEqual([0, '']);
      const r = run(copy, ['watch', '--help']);
      expect([flags, r.status, r.stdout, r.stderr]).toEqual([flags, 0, clean.stdout, clean.stderr]);
      expect(r.report).toEqual([{ file: 'main.cjs', cache: 'refused' }]);
    }
  });

  it('is not read when it is not a regular file of a plausible size: a FIFO, a device, a huge file', () => {
    const copy = copyOfDist();
    const cache = join(copy, 'main.cjs.v8cache');
    rmSync(cache);
    expect(spawnSync('mkfifo', [cache]).status).toBe(0);
    const started = Date.now();
    let r = run(copy, ['--version'], [], 20_000);
    expect([r.status, r.stdout, r.report]).toEqual([0, expect.stringMatching(/^\d+\.\d+\.\d+/), [{ file: 'main.cjs', cache: 'none' }]]);
    expect(Date.now() - started).toBeLessThan(10_000);
    rmSync(cache);
    symlinkSync('/dev/zero', cache);
    r = run(copy, ['--version'], [], 20_000);
    expect([r.status, r.report]).toEqual([0, [{ file: 'main.cjs', cache: 'none' }]]);
    rmSync(cache);
    writeFileSync(cache, '');
    truncateSync(cache, 1500 * 1024 * 1024);
    r = run(copy, ['--version'], [], 20_000);
    expect([r.status, r.report]).toEqual([0, [{ file: 'main.cjs', cache: 'none' }]]);
  });

  it('leaves stack traces to the files on disk: --debug names them, --enable-source-maps maps them to src/, and no cache holds the builder\'s folder', () => {
    const copy = copyOfDist();
    let r = run(copy, ['--config', join(work, 'nowhere.yaml'), 'validate', '--debug']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`(${join(copy, 'commands', 'validate.cjs')}:`);
    expect(r.stderr).not.toContain(ROOT);
    r = run(copy, ['--config', join(work, 'nowhere.yaml'), 'validate', '--debug'], ['--enable-source-maps']);
    expect(r.stderr).toMatch(/src[\\/]load[\\/]config\.ts:\d+:\d+\)/);
    for (const f of readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.v8cache'))) {
      expect(readFileSync(join(dist, f)).includes(ROOT), f).toBe(false);
    }
  });

  it('is read, never written, by the runs of users: dist/ is the same after them', () => {
    const copy = copyOfDist();
    const snapshot = () => readdirSync(copy, { recursive: true, encoding: 'utf8' }).sort()
      .map((f) => [f, statSync(join(copy, f)).isFile() ? readFileSync(join(copy, f)).toString('base64') : 'dir']);
    const before = snapshot();
    expect(run(copy, ['--config', EXAMPLES, 'validate']).status).toBe(0);
    expect(run(copy, ['schema', 'config']).status).toBe(0);
    expect(run(copy, ['--version']).status).toBe(0);
    expect(run(copy, ['emulator', '--help']).status).toBe(0);
    expect(snapshot()).toEqual(before);
  });

  it('is made under the flags of a one-shot command: watch and the emulator keep V8\'s defaults, and compile', () => {
    const madeHere = madeBy(join(dist, 'main.cjs.v8cache')) === process.version;
    const r = run(dist, ['emulator', '--help']);
    expect([r.status, r.stdout]).toEqual([0, expect.stringContaining('Usage: dus-sync emulator')]);
    expect(r.report).toEqual([{ file: 'main.cjs', cache: madeHere ? 'refused' : 'none' }]);
  });

  it('loads plan from online.cjs with its cache, against the emulator', async () => {
    const { startEmulator } = await import('../../src/emulator/index.js');
    const em = await startEmulator({ seed: join(ROOT, 'examples', 'emulator-seed.yaml') });
    try {
      const expected = madeBy(join(dist, 'commands', 'online.cjs.v8cache')) === process.version ? 'taken' : 'none';
      const reportFile = join(work, 'plan-report.json');
      const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((done) => {
        const p = spawn(process.execPath, ['--require', REPORTER, join(dist, 'cli.js'), '--config', EXAMPLES, '-t', 'acme', 'plan', '--format', 'json'], {
          env: { ...process.env, NO_COLOR: '1', CODE_CACHE_REPORT: reportFile, NODE_OPTIONS: '', DUS_BASE_URL: em.url, DUS_API_KEY_ACME: 'dev-key-acme' },
        });
        let stdout = '';
        let stderr = '';
        p.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
        p.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
        p.on('close', (status) => done({ status, stdout, stderr }));
      });
      expect(r.status, r.stderr).toBe(0);
      expect((JSON.parse(r.stdout) as { changes: unknown[] }).changes.length).toBeGreaterThan(0);
      expect(JSON.parse(readFileSync(reportFile, 'utf8'))).toEqual([{ file: 'main.cjs', cache: expected }, { file: 'online.cjs', cache: expected }]);
    } finally {
      await em.close();
    }
  });
});
