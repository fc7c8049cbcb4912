// A --format json run that fails still leaves one JSON document on stdout, an error object
// ({"format_version":1,"error":{"code","message",…}}), for the program reading it; the human
// sentence stays on stderr, the exit code is unchanged, and no form of a key is in either.
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { CLI, runCli } from './helpers.js';
import { env, KEY, repo, seed } from './habits-fixture.js';

let emulator: RunningEmulator | undefined;
afterEach(async () => { await emulator?.close(); emulator = undefined; });

interface ErrorDoc { format_version: number; error: { code: string; message: string; status?: number; endpoint?: string; issues?: unknown[] } }

const parse = <T>(text: string): T => JSON.parse(text) as T;

describe('a failed --format json run prints one error object on stdout', () => {
  it('a refused apply leaves an error object, and nothing is written', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--format', 'json', '--max-changes', '1', '--journal', `${dir}/j.jsonl`], { env: env(emulator.url) });
    expect(r.code).toBe(1);
    const doc = parse<ErrorDoc>(r.stdout);
    expect(doc.format_version).toBe(1);
    expect(doc.error.code).toBe('UNSAFE');
    expect(r.stderr).toContain(`error: ${doc.error.message}\n`);
    expect(emulator.stats.writes).toBe(0);
  });

  it('interrupted before the first write: an error object, exit 130', async () => {
    emulator = await startEmulator({ seed: seed(), faults: { latencyMs: 2000 } });
    const dir = repo();
    const child = spawn(process.execPath, [CLI, '--config', `${dir}/dus-sync.yaml`, 'apply', '--auto-approve', '--format', 'json', '--journal', `${dir}/j.jsonl`], {
      env: { ...process.env, NO_COLOR: '1', ...env(emulator.url) }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const code = await new Promise<number | null>((resolve) => {
      child.on('close', resolve);
      const poll = setInterval(() => { if (emulator!.stats.requests > 0) { clearInterval(poll); child.kill('SIGINT'); } }, 10);
    });
    expect(code, stderr).toBe(130);
    expect(parse<ErrorDoc>(stdout).error).toEqual({ code: 'INTERRUPTED', message: 'interrupted by SIGINT; nothing was written' });
    expect(emulator.stats.writes).toBe(0);
  });
  it.each([
    ['plan', ['plan', '--format', 'json']],
    ['apply', ['apply', '--auto-approve', '--format', 'json']],
    ['status', ['status', '--format', 'json']],
  ])('%s with a refused key: the API error as JSON, the sentence on stderr, exit 1, no key', async (_name, args) => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const wrong = 'wrong-key-that-must-not-show-4711';
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, ...args, ...(args[0] === 'apply' ? ['--journal', `${dir}/j.jsonl`] : [])], { env: env(emulator.url, wrong) });
    expect(r.code).toBe(1);
    const doc = parse<ErrorDoc>(r.stdout);
    expect(doc).toEqual({ format_version: 1, error: { code: 'API', message: expect.stringMatching(/refused \(401\)/) as unknown, status: 401, endpoint: expect.stringMatching(/^GET \/api\/v1\//) as unknown } });
    // The progress line of the read, then the sentence.
    expect(r.stderr.replace(/^(still )?reading the live state of .*\n/gm, '')).toBe(`error: ${doc.error.message}\n`);
    expect(r.stdout + r.stderr).not.toContain(wrong);
  });

  it.each([['plan'], ['status'], ['apply']])('%s against a server that echoes the key: the error object holds no form of it', async (cmd) => {
    emulator = await startEmulator({ seed: seed(), faults: { hostile: { mode: 'echo' } } });
    const dir = repo();
    const args = cmd === 'apply' ? ['apply', '--auto-approve', '--journal', `${dir}/j.jsonl`] : [cmd];
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, ...args, '--format', 'json'], { env: env(emulator.url) });
    expect(r.code).toBe(1);
    const doc = parse<ErrorDoc>(r.stdout);
    expect(doc.error.code).toBe('API');
    expect(doc.error.message).toContain('[REDACTED]');
    for (const form of [KEY, KEY.slice(0, 12), Buffer.from(KEY).toString('base64')]) expect(r.stdout + r.stderr).not.toContain(form);
  });

  it('validate --format json with a config file that is not there: an error object', async () => {
    const dir = repo();
    const r = await runCli(['--config', `${dir}/nope.yaml`, 'validate', '--format', 'json'], { cwd: dir });
    expect(r.code).toBe(1);
    const doc = parse<ErrorDoc>(r.stdout);
    expect(doc.error.code).toBe('USER');
    expect(r.stderr).toBe(`error: ${doc.error.message}\n`);
  });

  it('a plan already printed is not followed by an error object (the save failed after it)', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = repo();
    const r = await runCli(['--config', `${dir}/dus-sync.yaml`, 'plan', '--format', 'json', '--out', `${dir}/no/such/folder/p.json`], { env: env(emulator.url) });
    expect(r.code).toBe(1);
    expect(parse<{ summary: { changes: number } }>(r.stdout).summary.changes).toBe(4);
    expect(r.stderr).toMatch(/could not save the plan/);
  });
});
