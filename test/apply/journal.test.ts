import { mkdtemp, readFile, rm, stat, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Journal, recoverJournal } from '../../src/apply/journal.js';
import { phaseDigest } from '../../src/apply/digest.js';
import { FakeApi, memoryLog, phase } from './fakes.js';

let dir: string;
beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'dus-journal-')); });
afterEach(async () => { await rm(dir, { recursive: true, force: true }); });

const mode = async (p: string): Promise<number> => (await stat(p)).mode & 0o777;

function intentFor(actionId: number, index: number, name: string) {
  return { tenant: 'acme', action_id: actionId, index, name, digest: phaseDigest(phase(name)) };
}

describe('Journal', () => {
  it('creates its folder 0700 and its file 0600', async () => {
    const path = join(dir, '.dus-sync', 'journal.jsonl');
    const j = await Journal.open(path);
    await j.close();
    expect(await mode(join(dir, '.dus-sync'))).toBe(0o700);
    expect(await mode(path)).toBe(0o600);
  });

  it('tightens an existing file to 0600', async () => {
    const path = join(dir, 'journal.jsonl');
    await writeFile(path, '', { mode: 0o644 });
    const j = await Journal.open(path);
    await j.close();
    expect(await mode(path)).toBe(0o600);
  });

  it('has the intent on disk as soon as recordIntent resolves, and lists it as pending until its outcome', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    const a = await j.recordIntent(intentFor(42, 1, 'wave-1'));
    const b = await j.recordIntent(intentFor(42, 2, 'wave-2'));
    expect(await readFile(path, 'utf8')).toContain(a.id);
    await j.recordOutcome(a.id, 'applied');
    expect((await j.pending()).map((i) => i.id)).toEqual([b.id]);
    expect(b).toMatchObject({ tenant: 'acme', action_id: 42, index: 2, name: 'wave-2' });
    expect(b.at).toMatch(/^\d{4}-\d\d-\d\dT/);
    await j.close();
  });

  it('survives a torn last line left by a crash in the middle of a write', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    const a = await j.recordIntent(intentFor(42, 1, 'wave-1'));
    await appendFile(path, '{"type":"intent","id":"x","ten');
    expect((await j.pending()).map((i) => i.id)).toEqual([a.id]);
    await j.close();
  });

  it('compacts to an empty file that keeps mode 0600 and goes on recording', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    const a = await j.recordIntent(intentFor(42, 1, 'wave-1'));
    await j.recordOutcome(a.id, 'applied');
    await j.compact();
    expect(await readFile(path, 'utf8')).toBe('');
    expect(await mode(path)).toBe(0o600);
    const b = await j.recordIntent(intentFor(42, 2, 'wave-2'));
    expect((await j.pending()).map((i) => i.id)).toEqual([b.id]);
    expect((await readFile(path, 'utf8')).split('\n').filter(Boolean)).toHaveLength(1);
    await j.close();
  });

  it('keeps an intent still in doubt when compacting', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    const a = await j.recordIntent(intentFor(42, 1, 'wave-1'));
    const b = await j.recordIntent(intentFor(42, 2, 'wave-2'));
    await j.recordOutcome(a.id, 'applied');
    await j.compact();
    expect((await j.pending()).map((i) => i.id)).toEqual([b.id]);
    expect((await readFile(path, 'utf8')).split('\n').filter(Boolean)).toHaveLength(1);
    await j.close();
    const reopened = await Journal.open(path);
    expect(await reopened.pending()).toEqual([b]);
    await reopened.close();
  });

  it('keeps lines whole when many records are written at once', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    const intents = await Promise.all(Array.from({ length: 30 }, (_, i) => j.recordIntent(intentFor(i, 0, `p${i}`))));
    await Promise.all(intents.slice(0, 10).map((i) => j.recordOutcome(i.id, 'not-applied')));
    const lines = (await readFile(path, 'utf8')).split('\n').filter(Boolean);
    expect(lines).toHaveLength(40);
    for (const l of lines) expect(() => JSON.parse(l) as unknown).not.toThrow();
    expect(await j.pending()).toHaveLength(20);
    await j.close();
  });
});

describe('recoverJournal', () => {
  it('settles the intents a crashed run left: present phase applied, absent phase not applied', async () => {
    const path = join(dir, 'journal.jsonl');
    // The crashed run: two intents written, no outcome, then the process died.
    const crashed = await Journal.open(path);
    await crashed.recordIntent(intentFor(42, 1, 'wave-1'));
    await crashed.recordIntent(intentFor(43, 0, 'canary'));
    await crashed.close();

    const api = new FakeApi();
    api.addAction('acme', 42, [phase('canary'), phase('wave-1')]);
    api.addAction('acme', 43, []);
    const log = memoryLog();
    const j = await Journal.open(path);
    expect(await recoverJournal(j, api, log, { settleMs: 0 })).toEqual({ resolved: 2, applied: 1, notApplied: 1 });
    expect(await j.pending()).toEqual([]);
    expect(log.lines.join('\n')).toContain('phase 1 "wave-1" of action 42 in acme from an interrupted run was applied');
    expect(log.lines.join('\n')).toContain('phase 0 "canary" of action 43 in acme from an interrupted run was not applied');
    await j.close();
  });

  it('counts a different phase at that index, or a vanished action, as not applied', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    await j.recordIntent(intentFor(42, 0, 'mine'));
    await j.recordIntent(intentFor(44, 0, 'mine'));
    const api = new FakeApi();
    api.addAction('acme', 42, [phase('theirs')]);
    expect(await recoverJournal(j, api, memoryLog(), { settleMs: 0 })).toEqual({ resolved: 2, applied: 0, notApplied: 2 });
    await j.close();
  });

  it('leaves the intent pending when the action cannot be read', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    await j.recordIntent(intentFor(42, 0, 'canary'));
    const api = new FakeApi({ readFault: () => 'error' });
    await expect(recoverJournal(j, api, memoryLog())).rejects.toThrow(/connection reset/);
    expect(await j.pending()).toHaveLength(1);
    await j.close();
  });

  it('waits for a young intent to settle before believing the phase is absent', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    await j.recordIntent(intentFor(42, 0, 'canary'));
    const api = new FakeApi();
    api.addAction('acme', 42, []);
    // The request sent just before the crash lands while we wait.
    const slept: number[] = [];
    const clock = { now: () => Date.now(), sleep: (ms: number) => { slept.push(ms); api.addAction('acme', 42, [phase('canary')]); return Promise.resolve(); } };
    expect(await recoverJournal(j, api, memoryLog(), { clock, settleMs: 5_000 })).toEqual({ resolved: 1, applied: 1, notApplied: 0 });
    expect(slept).toHaveLength(1);
    expect(slept[0]).toBeGreaterThan(4_000);
    await j.close();
  });

  it('does not wait for an intent older than the settle time', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    await j.recordIntent(intentFor(42, 0, 'canary'));
    const api = new FakeApi();
    api.addAction('acme', 42, []);
    const slept: number[] = [];
    const clock = { now: () => Date.now() + 60_000, sleep: (ms: number) => { slept.push(ms); return Promise.resolve(); } };
    expect(await recoverJournal(j, api, memoryLog(), { clock, settleMs: 5_000 })).toEqual({ resolved: 1, applied: 0, notApplied: 1 });
    expect(slept).toEqual([]);
    await j.close();
  });
});
