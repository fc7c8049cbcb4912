// Files a pull request (or a neighbour on the machine) may plant, through the built CLI (issue 12):
// links to /dev/zero and /dev/urandom, FIFOs, oversize files, links out of the repository,
// dangling links, a file swapped for /dev/zero under a running watch; links planted at the temp
// and target names of plan --out, export and the emulator's --data; and the bounds on
// intervals, durations and counts.
//
// Every child runs under `ulimit -d` (2 GiB of data): without the fixes, reading /dev/zero would
// otherwise eat the machine before the test gave up. With them, nothing here uses 200 MB.
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { CLI, STACK } from './helpers.js';

// Shares no 8 characters with the temp folders' names (dus-hostile-…): redaction would hide them too.
const KEY = 'hf-k3y-0123456789abcdef-zz9';
const POSIX = process.platform !== 'win32';

interface Run { code: number | null; stdout: string; stderr: string }

interface RunOptions {
  cwd?: string;
  env?: Record<string, string>;
  /** Paths at which `<path>.tmp-<pid of the CLI>` is made a link to `plantTarget` just before the CLI starts. */
  plantAt?: string[];
  plantTarget?: string;
  timeoutMs?: number;
}

/**
 * The built CLI under a 2 GiB data limit. `exec` keeps the shell's pid, so the shell can plant
 * links at the names the old code derived from the CLI's pid (`<target>.tmp-<pid>`).
 */
function cli(args: string[], opts: RunOptions = {}): Promise<Run> {
  const script = 'ulimit -d 2097152 2>/dev/null; for p in $PLANT_AT; do ln -s "$PLANT_TARGET" "$p.tmp-$$"; done; exec "$@"';
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script, 'sh', process.execPath, CLI, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, NO_COLOR: '1', PLANT_AT: (opts.plantAt ?? []).join(' '), PLANT_TARGET: opts.plantTarget ?? '', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    // A guard against a hang, not a timing assertion: a healthy run takes about a second.
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`dus-sync ${args.join(' ')} did not finish\n${stderr.slice(-2000)}`)); }, opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

const temps: string[] = [];
const servers: RunningEmulator[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const t of temps.splice(0)) rmSync(t, { recursive: true, force: true });
});

function tempDir(prefix = 'dus-hostile-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

function write(root: string, path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

const CONFIG = (extra = '') => `apiVersion: dus-sync/v1
kind: Config
base_url: http://127.0.0.1:1
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
resources: ["tenants/**/*.yaml"]
${extra}`;

const FIRMWARE = (version = '1.0.0', size = 10) => `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec:
  version_number: "${version}"
  uncompressed_size: ${size}
`;

/** A repository with one valid firmware; returns its folder. */
function repo(extraConfig = ''): string {
  const dir = tempDir();
  write(dir, 'dus-sync.yaml', CONFIG(extraConfig));
  write(dir, 'tenants/acme/fw.yaml', FIRMWARE());
  return dir;
}

function link(dir: string, path: string, target: string): void {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  symlinkSync(target, join(dir, path));
}

/** The one issue line validate printed for `file`. */
function issueLine(out: string, file: string): string {
  const lines = out.split('\n').filter((l) => l.startsWith(`${file}:`));
  expect(lines, out).toHaveLength(1);
  return lines[0]!;
}

describe.skipIf(!POSIX)('special files in the desired-state repository', () => {
  it.each(['/dev/zero', '/dev/urandom'])('a link to %s: validate answers at once, exit 1, one sentence naming the link', async (device) => {
    const dir = repo();
    link(dir, 'tenants/acme/evil.yaml', device);
    const r = await cli(['validate'], { cwd: dir });
    expect(r.code, r.stderr).toBe(1);
    expect(issueLine(r.stdout, 'tenants/acme/evil.yaml')).toBe(`tenants/acme/evil.yaml:1:1: this symbolic link points to ${device}, outside the repository folder ${realRepo(dir)}; dus-sync reads only files inside it: copy the file into the repository, or pass --follow-external-symlinks to allow links that leave it`);
    expect(r.stdout).toMatch(/1 problem in 1 file/);

    // Even when links may leave the repository, a device is not a file.
    const followed = await cli(['--follow-external-symlinks', 'validate'], { cwd: dir });
    expect(followed.code).toBe(1);
    expect(issueLine(followed.stdout, 'tenants/acme/evil.yaml')).toBe(`tenants/acme/evil.yaml:1:1: this symbolic link points to ${device}, which is a character device, not a regular file; dus-sync reads only regular files: replace the link with the file itself, or remove it`);
  });

  it('a FIFO, and a link to a FIFO: refused without opening them for a blocking read', async () => {
    const dir = repo();
    execFileSync('mkfifo', [join(dir, 'tenants/acme/pipe.yaml')]);
    mkdirSync(join(dir, 'pipes'));
    execFileSync('mkfifo', [join(dir, 'pipes/p')]);
    link(dir, 'tenants/acme/via.yaml', '../../pipes/p');
    const r = await cli(['validate', '--format', 'json'], { cwd: dir });
    expect(r.code, r.stderr).toBe(1);
    const issues = JSON.parse(r.stdout) as { file: string; line: number; message: string }[];
    expect(issues.map((i) => [i.file, i.line, i.message])).toEqual([
      ['tenants/acme/pipe.yaml', 1, 'this is a named pipe (FIFO), not a regular file; dus-sync reads only regular files: remove it, or keep it out of the resources'],
      ['tenants/acme/via.yaml', 1, `this symbolic link points to ${realRepo(dir)}/pipes/p, which is a named pipe (FIFO), not a regular file; dus-sync reads only regular files: replace the link with the file itself, or remove it`],
    ]);
  });

  it('a file over the limit names the limit and the flag; --max-file-size and DUS_MAX_FILE_SIZE raise it', async () => {
    const dir = repo();
    // A valid document padded with a comment to exactly 6 MiB.
    const head = FIRMWARE('2.0.0');
    write(dir, 'tenants/acme/big.yaml', `${head}#${'x'.repeat(6 * 1024 * 1024 - head.length - 2)}\n`);
    const refused = await cli(['validate'], { cwd: dir });
    expect(refused.code).toBe(1);
    expect(issueLine(refused.stdout, 'tenants/acme/big.yaml')).toBe('tenants/acme/big.yaml:1:1: the file is 6 MiB, larger than the 5 MiB limit; desired-state files are small, so this is probably not one: split it, move it out of the resources, or raise the limit with --max-file-size (or DUS_MAX_FILE_SIZE), e.g. --max-file-size 16MiB');

    const raised = await cli(['--max-file-size', '8MiB', 'validate'], { cwd: dir });
    expect(raised.code, raised.stdout).toBe(0);
    expect(raised.stdout).toBe('2 files, 2 documents: valid\n');
    const viaEnv = await cli(['validate'], { cwd: dir, env: { DUS_MAX_FILE_SIZE: '7MiB' } });
    expect(viaEnv.code, viaEnv.stdout).toBe(0);

    // The limit is the operator's, not the repository's, and has a range of its own.
    for (const bad of ['0', '1GiB', 'lots']) {
      const r = await cli(['--max-file-size', bad, 'validate'], { cwd: dir });
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`error: --max-file-size takes a size from 1 KiB to 256 MiB (e.g. 16MiB), not "${bad}".\n`);
    }
  });

  it.skipIf(!existsSync('/proc/self/maps'))('the limit holds while reading: a file that says it is empty but is not (/proc/self/maps) is cut at the limit', async () => {
    const dir = repo();
    link(dir, 'tenants/acme/maps.yaml', '/proc/self/maps');
    const r = await cli(['--follow-external-symlinks', '--max-file-size', '1KiB', 'validate'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(issueLine(r.stdout, 'tenants/acme/maps.yaml')).toMatch(/^tenants\/acme\/maps\.yaml:1:1: the file is larger than the 1 KiB limit; .* --max-file-size/);
  });

  it('a link out of the repository is refused, and read with --follow-external-symlinks (or DUS_FOLLOW_EXTERNAL_SYMLINKS=1); a link inside it is read', async () => {
    const dir = repo();
    const outside = tempDir('dus-hostile-outside-');
    write(outside, 'shared/fw.yaml', FIRMWARE('3.0.0'));
    write(outside, 'folder/a.yaml', FIRMWARE('4.0.0'));
    link(dir, 'tenants/acme/shared.yaml', join(outside, 'shared/fw.yaml'));
    link(dir, 'tenants/acme/folder', join(outside, 'folder'));
    // Inside: a ConfigMap-style link into a folder that is not a resource itself.
    write(dir, 'library/fw5.yaml', FIRMWARE('5.0.0'));
    link(dir, 'tenants/acme/inside.yaml', '../../library/fw5.yaml');

    const r = await cli(['validate'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(issueLine(r.stdout, 'tenants/acme/shared.yaml')).toBe(`tenants/acme/shared.yaml:1:1: this symbolic link points to ${join(outside, 'shared/fw.yaml')}, outside the repository folder ${realRepo(dir)}; dus-sync reads only files inside it: copy the file into the repository, or pass --follow-external-symlinks to allow links that leave it`);
    expect(issueLine(r.stdout, 'tenants/acme/folder')).toBe(`tenants/acme/folder:1:1: this symbolic link points to the folder ${join(outside, 'folder')}, outside the repository folder ${realRepo(dir)}; dus-sync reads only files inside it: copy the files into the repository, or pass --follow-external-symlinks to allow links that leave it`);
    expect(r.stdout).toMatch(/2 problems in 2 files/);

    for (const followed of [
      await cli(['--follow-external-symlinks', 'validate'], { cwd: dir }),
      await cli(['validate'], { cwd: dir, env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: '1' } }),
    ]) {
      expect(followed.code, followed.stdout).toBe(0);
      expect(followed.stdout).toBe('4 files, 4 documents: valid\n');
    }
  });

  it('a dangling link is reported, naming it and where it points', async () => {
    const dir = repo();
    link(dir, 'tenants/acme/gone.yaml', '../../nowhere.yaml');
    const r = await cli(['validate', '--format', 'github'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('::error file=tenants/acme/gone.yaml,line=1,col=1::this symbolic link points to ../../nowhere.yaml, which does not exist; fix the link or remove it\n');
  });

  it('plan, apply, status and diff --base read through the same checks: refused before any request', async () => {
    const dir = repo();
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: dir });
    execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.invalid', '-c', 'commit.gpgsign=false', 'add', '.'], { cwd: dir });
    execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.invalid', '-c', 'commit.gpgsign=false', 'commit', '-q', '-m', 'base'], { cwd: dir });
    link(dir, 'tenants/acme/zero.yaml', '/dev/zero');
    execFileSync('mkfifo', [join(dir, 'tenants/acme/pipe.yaml')]);
    const env = { DUS_API_KEY_ACME: KEY };
    for (const args of [['plan'], ['apply', '--auto-approve'], ['status'], ['diff', '--base', 'HEAD']]) {
      const r = await cli(args, { cwd: dir, env });
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toContain('tenants/acme/zero.yaml:1:1: this symbolic link points to /dev/zero, outside the repository folder');
      expect(r.stderr, args.join(' ')).toContain('tenants/acme/pipe.yaml:1:1: this is a named pipe (FIFO), not a regular file');
      expect(r.stderr).not.toMatch(STACK);
      // base_url is a closed port: a request would have said so.
      expect(r.stderr).not.toMatch(/ECONNREFUSED|connect/i);
    }
  });

  it('a config file or an API key file that is a device is refused, not read', async () => {
    const dir = repo();
    unlinkSync(join(dir, 'dus-sync.yaml'));
    link(dir, 'dus-sync.yaml', '/dev/zero');
    const r = await cli(['validate'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('dus-sync.yaml:1:1: this symbolic link points to /dev/zero, which is a character device, not a regular file; dus-sync reads only regular files: replace the link with the file itself, or remove it\n\n1 problem in 1 file\n');

    const keyed = repo();
    write(keyed, 'dus-sync.yaml', CONFIG().replace('{ api_key_env: DUS_API_KEY_ACME }', '{ api_key_file: secret }'));
    link(keyed, 'secret', '/dev/zero');
    const k = await cli(['plan'], { cwd: keyed });
    expect(k.code).toBe(1);
    expect(k.stderr).toBe(`error: the API key file of tenant "acme" cannot be read: ${join(keyed, 'secret')}: this symbolic link points to /dev/zero, which is a character device, not a regular file; dus-sync reads only regular files: replace the link with the file itself, or remove it\n`);
  });
});

function realRepo(dir: string): string {
  return realpathSync(dir);
}

// ---------------------------------------------------------------- watch's cache

const SEED = {
  tenants: {
    acme: {
      api_key: KEY,
      bundles: [{ version: '2024.06', firmwares: [{ version_number: '1.0.0', component_name: 'modem', uncompressed_size: 10, is_deactivated: false, dependencies: [] }] }],
      actions: [{ id: 7, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] }],
    },
  },
} as unknown as Seed;

async function emulator(): Promise<RunningEmulator> {
  const em = await startEmulator({ seed: SEED });
  servers.push(em);
  return em;
}

async function waitFor(cond: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.skipIf(!POSIX)('watch: a file swapped for a link to /dev/zero while the agent runs', () => {
  it('the pass reports the link and ends; the agent keeps reconciling and recovers when the file is back', async () => {
    const em = await emulator();
    const dir = repo('watch: { interval: 1s }\n');
    write(dir, 'dus-sync.yaml', CONFIG('watch: { interval: 1s }\n').replace('base_url: http://127.0.0.1:1', `base_url: ${em.url}`));
    write(dir, 'tenants/acme/fw.yaml', FIRMWARE('1.0.0', 20));
    // --follow-external-symlinks: the link passes the repository rule, so only the bounded
    // reader (regular files only) stands between the cache and /dev/zero.
    const child = spawn('sh', ['-c', 'ulimit -d 2097152 2>/dev/null; exec "$@"', 'sh', process.execPath, CLI, '--follow-external-symlinks', 'watch', '--grace', '5s'], {
      cwd: dir, env: { ...process.env, NO_COLOR: '1', DUS_API_KEY_ACME: KEY }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    try {
      await waitFor(() => em.store.firmwaresByVersion('acme', '1.0.0')[0]!.uncompressed_size === 20, 'the first pass to apply');
      await waitFor(() => /"msg":"reconcile success/.test(stderr), 'a successful pass');

      unlinkSync(join(dir, 'tenants/acme/fw.yaml'));
      symlinkSync('/dev/zero', join(dir, 'tenants/acme/fw.yaml'));
      const refusal = 'tenants/acme/fw.yaml:1:1: this symbolic link points to /dev/zero, which is a character device, not a regular file';
      await waitFor(() => stderr.includes(refusal), 'the pass to refuse the link');
      // Passes go on (single flight: a pass stuck reading would block every later one).
      const invalid = () => stderr.split('\n').filter((l) => l.includes('"msg":"reconcile invalid-config')).length;
      const seen = invalid();
      await waitFor(() => invalid() > seen, 'another pass after the refusal');

      unlinkSync(join(dir, 'tenants/acme/fw.yaml'));
      writeFileSync(join(dir, 'tenants/acme/fw.yaml'), FIRMWARE('1.0.0', 30));
      await waitFor(() => em.store.firmwaresByVersion('acme', '1.0.0')[0]!.uncompressed_size === 30, 'the agent to recover and apply the restored file');
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 90_000);
});

describe.skipIf(!POSIX)('watch: a link to a folder out of the repository', () => {
  it('is reported by the first pass and never watched: a change behind it triggers nothing', async () => {
    const em = await emulator();
    const dir = repo();
    write(dir, 'dus-sync.yaml', CONFIG('watch: { interval: 1h }\n').replace('base_url: http://127.0.0.1:1', `base_url: ${em.url}`));
    const outside = tempDir('dus-hostile-outside-');
    write(outside, 'x.yaml', FIRMWARE('9.9.9'));
    link(dir, 'tenants/evil', outside);
    const child = spawn('sh', ['-c', 'ulimit -d 2097152 2>/dev/null; exec "$@"', 'sh', process.execPath, CLI, '--debug', 'watch', '--dry-run'], {
      cwd: dir, env: { ...process.env, NO_COLOR: '1', DUS_API_KEY_ACME: KEY }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    try {
      await waitFor(() => /"msg":"reconcile invalid-config/.test(stderr), 'the first pass');
      expect(stderr).toContain(`tenants/evil:1:1: this symbolic link points to the folder ${outside}, outside the repository folder`);
      // A change out there, then one in the repository as a marker: only the marker is seen.
      writeFileSync(join(outside, 'x.yaml'), FIRMWARE('9.9.8'));
      writeFileSync(join(dir, 'tenants/acme/fw.yaml'), FIRMWARE('1.0.0', 11));
      await waitFor(() => stderr.includes(`file change: ${join(dir, 'tenants/acme/fw.yaml')}`), 'the marker\'s change event');
      expect(stderr).not.toContain(join(dir, 'tenants/evil/x.yaml'));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

// ---------------------------------------------------------------- temp files and targets

describe.skipIf(!POSIX)('links planted where plan --out, export and the emulator write', () => {
  function victim(): { path: string; unchanged: () => void } {
    const path = join(tempDir('dus-hostile-victim-'), 'victim.txt');
    writeFileSync(path, 'precious\n');
    return { path, unchanged: () => expect(readFileSync(path, 'utf8')).toBe('precious\n') };
  }

  it('plan --out: a link at <out>.tmp-<pid> or at <out> itself is never written through', async () => {
    const em = await emulator();
    const dir = repo();
    write(dir, 'dus-sync.yaml', CONFIG().replace('base_url: http://127.0.0.1:1', `base_url: ${em.url}`));
    const v = victim();
    const out = join(dir, 'plan.json');
    const r = await cli(['plan', '--out', out], { cwd: dir, env: { DUS_API_KEY_ACME: KEY }, plantAt: [out], plantTarget: v.path });
    expect(r.code, r.stderr).toBe(0);
    v.unchanged();
    expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ format_version: 1 });
    expect(statSync(out).mode & 0o777).toBe(0o644 & ~process.umask());

    // A link at the target itself is refused: neither written through nor replaced.
    rmSync(out);
    symlinkSync(v.path, out);
    const again = await cli(['plan', '--out', out], { cwd: dir, env: { DUS_API_KEY_ACME: KEY } });
    expect(again.code, again.stderr).toBe(1);
    expect(again.stderr).toContain('it is a symbolic link');
    v.unchanged();
    expect(lstatSync(out).isSymbolicLink()).toBe(true);
    expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('export: a link at a file\'s temp name is never written through; a link at the file itself is refused in a sentence', async () => {
    const em = await emulator();
    const dir = repo();
    write(dir, 'dus-sync.yaml', CONFIG().replace('base_url: http://127.0.0.1:1', `base_url: ${em.url}`));
    const v = victim();
    const out = join(dir, 'exported');
    mkdirSync(join(out, 'firmwares'), { recursive: true });
    mkdirSync(join(out, 'actions'), { recursive: true });
    const targets = [join(out, 'firmwares/modem.yaml'), join(out, 'actions/7.yaml')];
    const r = await cli(['export', '--out', out, '--action', '7'], { cwd: dir, env: { DUS_API_KEY_ACME: KEY }, plantAt: targets, plantTarget: v.path });
    expect(r.code, r.stderr).toBe(0);
    v.unchanged();
    for (const t of targets) {
      expect(lstatSync(t).isFile()).toBe(true);
      expect(readFileSync(t, 'utf8')).toMatch(/^# yaml-language-server/);
    }

    rmSync(targets[0]!);
    symlinkSync(v.path, targets[0]!);
    const refused = await cli(['export', '--out', out, '--action', '7'], { cwd: dir, env: { DUS_API_KEY_ACME: KEY } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`error: refusing to write firmwares/modem.yaml in ${out}: it is a symbolic link (to ${JSON.stringify(v.path)}) and export never writes through one; remove the link and export again; nothing was written\n`);
    expect(refused.stderr).not.toMatch(STACK);
    v.unchanged();

    // A folder that is a dangling link: refused before any file is written, in one sentence.
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out);
    symlinkSync(join(dir, 'nowhere'), join(out, 'actions'));
    const dangling = await cli(['export', '--out', out, '--action', '7'], { cwd: dir, env: { DUS_API_KEY_ACME: KEY } });
    expect(dangling.code).toBe(1);
    expect(dangling.stderr).toMatch(/error: cannot make the folder of actions\/7\.yaml in .*\(ENOENT; a dangling symbolic link\?\); nothing was written\n$/);
    // (Folders may have been made; no file was written.)
    expect(readdirSync(out, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())).toEqual([]);
  });

  it('the emulator\'s --data: a link at the temp name is never written through; the state file is owner-only', async () => {
    const dir = tempDir();
    write(dir, 'seed.json', JSON.stringify(SEED));
    const v = victim();
    const data = join(dir, 'state.json');
    const script = 'ulimit -d 2097152 2>/dev/null; ln -s "$PLANT_TARGET" "$PLANT_AT.tmp-$$"; exec "$@"';
    const child = spawn('sh', ['-c', script, 'sh', process.execPath, CLI, 'emulator', '--port', '0', '--seed', join(dir, 'seed.json'), '--data', data], {
      env: { ...process.env, PLANT_AT: data, PLANT_TARGET: v.path }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    try {
      await waitFor(() => stdout.includes('listening on'), 'the emulator to start');
      // The state was written at start (the data file did not exist).
      expect(JSON.parse(readFileSync(data, 'utf8'))).toMatchObject({ tenants: { acme: { api_key: KEY } } });
      expect(statSync(data).mode & 0o777).toBe(0o600);
      v.unchanged();
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

// ---------------------------------------------------------------- bounds

describe.skipIf(!POSIX)('bounds on intervals, durations and counts', () => {
  const cases: [string, string[], string][] = [
    ['watch --interval 0', ['watch', '--interval', '0'], '--interval takes a duration from 1s to 24h (e.g. 30s, 5m), not "0".'],
    ['watch --interval 500ms', ['watch', '--interval', '500ms'], '--interval takes a duration from 1s to 24h (e.g. 30s, 5m), not "500ms".'],
    ['watch --interval 1000h (past the timer overflow)', ['watch', '--interval', '1000h'], '--interval takes a duration from 1s to 24h (e.g. 30s, 5m), not "1000h".'],
    ['watch --grace 2h', ['watch', '--grace', '2h'], '--grace takes a duration from 0s to 1h (e.g. 30s, 5m), not "2h".'],
    ['watch --concurrency 0', ['watch', '--concurrency', '0'], '--concurrency takes a whole number from 1 to 64, not "0".'],
    ['apply --concurrency 0', ['apply', '--concurrency', '0'], '--concurrency takes a whole number from 1 to 64, not "0".'],
    ['apply --concurrency 65', ['apply', '--concurrency', '65'], '--concurrency takes a whole number from 1 to 64, not "65".'],
    ['plan --max-changes 1e3', ['plan', '--max-changes', '1e3'], '--max-changes takes a whole number of 0 or more, not "1e3".'],
    ['emulator --port 70000', ['emulator', '--port', '70000'], '--port takes a whole number from 0 to 65535, not "70000".'],
    ['emulator --latency 3600000', ['emulator', '--latency', '3600000'], '--latency takes a whole number from 0 to 600000, not "3600000".'],
  ];

  it.each(cases)('%s: refused in one sentence naming the flag and the range, exit 1', async (_name, args, message) => {
    const dir = repo();
    const r = await cli(args, { cwd: dir, env: { DUS_API_KEY_ACME: KEY }, timeoutMs: 30_000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: ${message}\n`);
    expect(r.stdout).toBe('');
  });

  it('watch.interval out of range in dus-sync.yaml is an issue at its file:line:col', async () => {
    for (const interval of ['0s', '999ms', '25h']) {
      const dir = repo(`watch: { interval: ${interval} }\n`);
      const r = await cli(['validate'], { cwd: dir });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe(`dus-sync.yaml:8:20: watch.interval takes a duration from 1s to 24h (e.g. 30s, 5m), not "${interval}"\n\n1 problem in 1 file\n`);
      // Every command refuses such a config with the same sentence.
      const plan = await cli(['plan'], { cwd: dir, env: { DUS_API_KEY_ACME: KEY } });
      expect(plan.code).toBe(1);
      expect(plan.stderr).toContain(`dus-sync.yaml:8:20: watch.interval takes a duration from 1s to 24h`);
    }
  });

  it('api.* out of range in dus-sync.yaml is an issue at its file:line:col, in every validate format', async () => {
    const dir = repo('api: { request_timeout: 99h, fetch_timeout: 1s }\n');
    const text = await cli(['validate'], { cwd: dir });
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/dus-sync\.yaml:8:\d+: api\.request_timeout takes a duration from 1s to 10m \(e\.g\. 30s, 5m\), not "99h"/);
    expect(text.stdout).toMatch(/dus-sync\.yaml:8:\d+: api\.fetch_timeout takes a duration from 10s to 24h \(e\.g\. 30s, 5m\), not "1s"/);
    const json = await cli(['validate', '--format', 'json'], { cwd: dir });
    expect((JSON.parse(json.stdout) as { pointer: string }[]).map((i) => i.pointer)).toEqual(['/api/request_timeout', '/api/fetch_timeout']);
    const github = await cli(['validate', '--format', 'github'], { cwd: dir });
    expect(github.stdout).toMatch(/^::error file=dus-sync\.yaml,line=8,col=\d+::api\.request_timeout/m);
  });
});
