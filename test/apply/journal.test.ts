import { mkdtemp, readFile, rm, stat, writeFile, appendFile, mkdir, symlink, chmod, chown } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Journal, monotonicMs, otherJournalsInDoubt, settleJournal } from '../../src/apply/journal.js';
import { phaseDigest } from '../../src/apply/digest.js';
import { FakeApi, memoryLog, phase } from './fakes.js';
import { clearSecretsForTests, registerSecret } from '../../src/redact.js';
import { HISTORY_FILE } from '../../src/apply/history.js';

let dir: string;
beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'dus-journal-')); });
afterEach(async () => { await rm(dir, { recursive: true, force: true }); });

const mode = async (p: string): Promise<number> => (await stat(p)).mode & 0o777;

function intentFor(actionId: number, index: number, name: string) {
  return { tenant: 'acme', action_id: actionId, index, name, digest: phaseDigest(phase(name)) };
}

describe('Journal', () => {
  it('never writes a key to the state folder: a phase name holding one is kept redacted (intents and history are matched by digest)', async () => {
    const key = 'Zq8vR2mK7pXw4Lb9Tn3Hc6Yd1Fs5Gj0A';
    registerSecret(key);
    try {
      const path = join(dir, 'journal.jsonl');
      const j = await Journal.open(path);
      const intent = await j.recordIntent(intentFor(42, 1, `wave-${key}`));
      await j.recordOutcome(intent.id, 'applied');
      // Still found by its digest, which is the phase's own, not its shown name's.
      expect(j.storedBefore('acme', 42, 1, intentFor(42, 1, `wave-${key}`).digest)).toBeDefined();
      await j.close();
      const written = (await readFile(path, 'utf8')) + (await readFile(join(dir, HISTORY_FILE), 'utf8'));
      expect(written).toContain('wave-[REDACTED]');
      expect(written).not.toContain(key.slice(0, 8));
    } finally {
      clearSecretsForTests();
    }
  });

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
    expect(j.open().map((i) => i.id)).toEqual([b.id]);
    expect(b).toMatchObject({ tenant: 'acme', action_id: 42, index: 2, name: 'wave-2' });
    expect(b.at).toMatch(/^\d{4}-\d\d-\d\dT/);
    await j.close();
  });

  it('survives a torn last line left by a crash in the middle of a write', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    const a = await j.recordIntent(intentFor(42, 1, 'wave-1'));
    await j.close();
    await appendFile(path, '{"type":"intent","id":"x","ten');
    const reopened = await Journal.open(path);
    expect(reopened.open().map((i) => i.id)).toEqual([a.id]);
    await reopened.close();
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
    expect(j.open().map((i) => i.id)).toEqual([b.id]);
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
    expect(j.open().map((i) => i.id)).toEqual([b.id]);
    expect((await readFile(path, 'utf8')).split('\n').filter(Boolean)).toHaveLength(1);
    await j.close();
    const reopened = await Journal.open(path);
    expect(reopened.open()).toEqual([{ ...b, state: 'pending' }]);
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
    expect(j.open()).toHaveLength(20);
    await j.close();
  });
});

describe('the journal file is never followed elsewhere', () => {
  it('a journal path that is a symbolic link is refused; its target is neither tightened nor emptied', async () => {
    const target = join(dir, 'precious.txt');
    await writeFile(target, 'keep me\n', { mode: 0o644 });
    await mkdir(join(dir, '.dus-sync'), { mode: 0o700 });
    await symlink(target, join(dir, '.dus-sync', 'journal.jsonl'));
    await expect(Journal.open(join(dir, '.dus-sync', 'journal.jsonl'))).rejects.toThrow(/is a symbolic link/);
    expect(await readFile(target, 'utf8')).toBe('keep me\n');
    expect(await mode(target)).toBe(0o644);
  });

  it('a journal folder that is a symbolic link (a pull request can add one) is refused', async () => {
    await mkdir(join(dir, 'elsewhere'));
    await symlink(join(dir, 'elsewhere'), join(dir, '.dus-sync'));
    await expect(Journal.open(join(dir, '.dus-sync', 'journal.jsonl'))).rejects.toThrow(/\.dus-sync is a symbolic link/);
  });

  it('the API\'s address is written redacted: a key in base_url\'s path never reaches the state folder', async () => {
    registerSecret('Sup3rSecretKeyValue99');
    try {
      const path = join(dir, 'journal.jsonl');
      const j = await Journal.open(path, 'http://127.0.0.1:9/Sup3rSecretKeyValue99');
      await j.recordIntent(intentFor(42, 1, 'wave-1'));
      await j.close();
      const text = await readFile(path, 'utf8');
      expect(text).toContain('"api":"http://127.0.0.1:9/[REDACTED]"');
      expect(text).not.toContain('Sup3rSecret');
      expect(await Journal.peekInDoubt(path, 'http://127.0.0.1:9/Sup3rSecretKeyValue99')).toBe(1);
    } finally {
      clearSecretsForTests();
    }
  });

  it('an existing 0777 folder is tightened to 0700', async () => {
    await mkdir(join(dir, '.dus-sync'));
    await chmod(join(dir, '.dus-sync'), 0o777);
    const j = await Journal.open(join(dir, '.dus-sync', 'journal.jsonl'));
    await j.close();
    expect(await mode(join(dir, '.dus-sync'))).toBe(0o700);
  });

  it('an existing loose folder holding only dus-sync\'s files (journals, lock, history, temp) is tightened', async () => {
    const own = join(dir, 'own');
    await mkdir(own);
    for (const name of ['old.jsonl', 'apply.lock.x.jsonl', 'triggered.json', '.journal.jsonl.1234.tmp', HISTORY_FILE]) await writeFile(join(own, name), '');
    await chmod(own, 0o755);
    const j = await Journal.open(join(own, 'journal.jsonl'));
    await j.close();
    expect(await mode(own)).toBe(0o700);
  });

  it('an existing folder holding anything else is never tightened (--journal /var/lib/x.jsonl as root): used as it is when only its owner can write, else refused', async () => {
    const system = join(dir, 'system');
    await mkdir(system);
    await writeFile(join(system, 'dpkg.status'), 'x');
    await chmod(system, 0o755);
    const j = await Journal.open(join(system, 'journal.jsonl'));
    await j.close();
    expect(await mode(system)).toBe(0o755);
    expect(await mode(join(system, 'journal.jsonl'))).toBe(0o600);
    await chmod(system, 0o775);
    await expect(Journal.open(join(system, 'journal.jsonl'))).rejects.toThrow(/system can be written by other users \(mode 775\) and holds "\S+", which is not dus-sync's, so dus-sync will neither keep its journal and lock there nor tighten it; pass --journal/);
    expect(await mode(system)).toBe(0o775);
  });

  it.runIf(process.platform === 'linux')('a folder where no file can be made (/proc/self/fd) gets one sentence, not errno text', async () => {
    const { acquireLock } = await import('../../src/apply/lock.js');
    await expect(acquireLock('/proc/self/fd')).rejects.toThrow(/^the lock \/proc\/self\/fd\/apply\.lock cannot be created \(ENOENT\); pass --journal with a path in a writable folder of your own$/);
  });

  it.runIf(process.getuid?.() === 0)('a folder owned by another user is refused (run as root, so the test can chown)', async () => {
    await mkdir(join(dir, '.dus-sync'), { mode: 0o700 });
    await chown(join(dir, '.dus-sync'), 4242, 4242);
    await expect(Journal.open(join(dir, '.dus-sync', 'journal.jsonl'))).rejects.toThrow(/belongs to user 4242/);
  });

  it('a shared sticky folder such as /tmp is refused rather than tightened', async () => {
    const shared = join(dir, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o1777);
    await expect(Journal.open(join(shared, 'journal.jsonl'))).rejects.toThrow(/shared folder/);
    expect((await stat(shared)).mode & 0o7777).toBe(0o1777);
  });

  it('compaction writes a new file and renames it over the journal, leaving no temporary file', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    const a = await j.recordIntent(intentFor(42, 1, 'wave-1'));
    await j.recordOutcome(a.id, 'acknowledged');
    await j.compact();
    await j.close();
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(dir)).sort()).toEqual(['appended.jsonl', 'journal.jsonl']);
    expect(await mode(path)).toBe(0o600);
  });
});

describe('acknowledged appends (2xx) are kept until a read shows them', () => {
  it('survive compaction and reopening, and confirm() settles them once a read shows the phase', async () => {
    const path = join(dir, 'journal.jsonl');
    const j = await Journal.open(path);
    const a = await j.recordIntent(intentFor(42, 1, 'wave-1'));
    await j.recordOutcome(a.id, 'acknowledged');
    await j.compact();
    await j.close();
    const again = await Journal.open(path);
    expect(again.open()).toEqual([expect.objectContaining({ id: a.id, state: 'acknowledged' })]);
    expect(await again.confirm('acme', { id: 42, phases: [phase('canary')] })).toBe(0);
    expect(await again.confirm('acme', { id: 42, phases: [phase('canary'), phase('wave-1')] })).toBe(1);
    expect(again.open()).toEqual([]);
    await again.compact();
    expect(await readFile(path, 'utf8')).toBe('');
    await again.close();
  });
});

describe('settleJournal', () => {
  async function crashedWith(...intents: ReturnType<typeof intentFor>[]): Promise<Journal> {
    const path = join(dir, 'journal.jsonl');
    const crashed = await Journal.open(path);
    for (const i of intents) await crashed.recordIntent(i);
    await crashed.close();
    return Journal.open(path);
  }

  function steppingClock(start = Date.now()) {
    let t = start;
    const slept: number[] = [];
    return { slept, now: () => t, sleep: (ms: number) => { slept.push(ms); t += ms; return Promise.resolve(); }, advance: (ms: number) => { t += ms; } };
  }

  it('a phase a read shows is applied; one absent is not, but only after reads showed it absent for the whole window', async () => {
    const j = await crashedWith(intentFor(42, 1, 'wave-1'), intentFor(43, 0, 'canary'));
    const api = new FakeApi();
    api.addAction('acme', 42, [phase('canary'), phase('wave-1')]);
    api.addAction('acme', 43, []);
    const log = memoryLog();
    const clock = steppingClock();
    const settled = await settleJournal(j, api, log, { settleMs: 30_000, clock });
    expect(settled).toMatchObject({ resolved: 2, applied: 1, notApplied: 1 });
    expect(settled.blocked.size).toBe(0);
    expect(clock.slept).toEqual([30_000]);
    expect(j.open()).toEqual([]);
    expect(log.lines.join('\n')).toMatch(/phase 1 "wave-1" of action 42 in acme, in doubt since .*, was applied/);
    expect(log.lines.join('\n')).toMatch(/phase 0 "canary" of action 43 in acme, in doubt since .*, was not applied \(reads showed it absent for 30 s\)/);
    await j.close();
  });

  it('a phase that lands during the window counts as applied', async () => {
    const j = await crashedWith(intentFor(42, 0, 'canary'));
    const api = new FakeApi();
    api.addAction('acme', 42, []);
    const clock = { now: () => Date.now(), sleep: (ms: number) => { expect(ms).toBeGreaterThan(4_000); api.addAction('acme', 42, [phase('canary')]); return Promise.resolve(); } };
    expect(await settleJournal(j, api, memoryLog(), { clock, settleMs: 5_000 })).toMatchObject({ resolved: 1, applied: 1, notApplied: 0 });
    await j.close();
  });

  it('the window counts from the first read that showed it absent, across runs', async () => {
    const j = await crashedWith(intentFor(42, 0, 'canary'));
    const [i] = j.open();
    const clock = steppingClock();
    await j.recordAbsent(i!.id, clock.now() - 25_000);
    const api = new FakeApi();
    api.addAction('acme', 42, []);
    expect(await settleJournal(j, api, memoryLog(), { clock, settleMs: 30_000 })).toMatchObject({ notApplied: 1 });
    expect(clock.slept).toEqual([5_000]);
    await j.close();
  });

  it('a wall clock stepped forward does not end the window early: the monotonic clock of this boot measures it', async () => {
    const j = await crashedWith(intentFor(42, 0, 'canary'));
    const [i] = j.open();
    await j.recordAbsent(i!.id, Date.now());
    let offset = 0;
    const slept: number[] = [];
    // Another run, a moment later, on a host whose clock jumped 40 s ahead.
    const clock = {
      now: () => Date.now() + 40_000 + offset,
      monotonic: () => monotonicMs() + offset,
      sleep: (ms: number) => { slept.push(ms); offset += ms; return Promise.resolve(); },
    };
    const api = new FakeApi();
    api.addAction('acme', 42, []);
    const reopened = await Journal.open(j.path);
    await j.close();
    const settled = await settleJournal(reopened, api, memoryLog(), { clock, settleMs: 30_000 });
    expect(slept).toHaveLength(1);
    expect(slept[0]!).toBeGreaterThan(28_000);
    expect(settled).toMatchObject({ notApplied: 1 });
    await reopened.close();
  });

  it('an append in doubt sent through another API blocks the same tenant\'s action until the settle window has passed', async () => {
    const path = join(dir, 'journal.jsonl');
    const other = await Journal.open(path, 'http://127.0.0.1:1');
    await other.recordIntent(intentFor(42, 1, 'wave-1'));
    await other.close();
    const j = await Journal.open(path, 'http://127.0.0.1:2');
    const api = new FakeApi();
    api.addAction('acme', 42, [phase('canary')]);
    const now = { now: () => Date.now(), monotonic: monotonicMs, sleep: () => Promise.resolve() };
    const early = await settleJournal(j, api, memoryLog(), { clock: now, settleMs: 30_000, tenants: new Set(['acme']) });
    expect([...early.blocked.values()].join()).toMatch(/sent through another API \(http:\/\/127\.0\.0\.1:1\).*waits until the settle window \(30 s\)/);
    const later = { now: () => Date.now() + 31_000, monotonic: () => monotonicMs() + 31_000, sleep: () => Promise.resolve() };
    const after = await settleJournal(j, api, memoryLog(), { clock: later, settleMs: 30_000, tenants: new Set(['acme']) });
    expect(after.blocked.size).toBe(0);
    // Still kept for a run against its own API.
    expect(j.foreign()).toHaveLength(1);
    await j.close();
  });

  it('another journal in the same folder with appends in doubt is found (one folder, one lock, one journal)', async () => {
    const a = await Journal.open(join(dir, 'journal.jsonl'));
    await a.recordIntent(intentFor(42, 1, 'wave-1'));
    await a.close();
    await writeFile(join(dir, 'notes.jsonl'), '{"type":"note"}\n');
    expect(await otherJournalsInDoubt(join(dir, 'ci.jsonl'))).toEqual([{ path: join(dir, 'journal.jsonl'), open: 1 }]);
    expect(await otherJournalsInDoubt(join(dir, 'journal.jsonl'))).toEqual([]);
  });

  it('an acknowledged append that reads do not show is kept and blocks its action; it is never counted as not applied', async () => {
    const j = await crashedWith(intentFor(42, 1, 'wave-1'));
    await j.recordOutcome(j.open()[0]!.id, 'acknowledged');
    const api = new FakeApi();
    api.addAction('acme', 42, [phase('canary')]);
    const clock = steppingClock();
    const settled = await settleJournal(j, api, memoryLog(), { clock, settleMs: 30_000 });
    expect(settled.resolved).toBe(0);
    expect(clock.slept).toEqual([]);
    expect([...settled.blocked.values()].join()).toMatch(/accepted by the API \(2xx\).*never sent again/);
    expect(j.open()).toHaveLength(1);
    await j.close();
  });

  it('an action that cannot be read blocks only that action, and the intent stays open', async () => {
    const j = await crashedWith(intentFor(42, 0, 'canary'));
    const api = new FakeApi({ readFault: () => 'error' });
    api.addAction('acme', 42, []);
    const settled = await settleJournal(j, api, memoryLog(), { settleMs: 0 });
    expect([...settled.blocked.keys()]).toEqual(['acme\u000042']);
    expect(j.open()).toHaveLength(1);
    await j.close();
  });

  it('a vanished action is not applied; a phase that landed behind someone else\'s is applied (it is there)', async () => {
    const j = await crashedWith(intentFor(44, 0, 'mine'), intentFor(42, 1, 'mine'));
    const api = new FakeApi();
    api.addAction('acme', 42, [phase('canary'), phase('theirs'), phase('mine')]);
    expect(await settleJournal(j, api, memoryLog(), { settleMs: 0 })).toMatchObject({ applied: 1, notApplied: 1 });
    await j.close();
  });

  it('settles an intent of the same tenant spelled otherwise (the config entry ACME renamed acme): a server may ignore case', async () => {
    // Run 1 spelled the tenant ACME and its append is in doubt; run 2 covers acme.
    const j = await crashedWith({ ...intentFor(42, 1, 'wave-1'), tenant: 'ACME' }, { ...intentFor(43, 0, 'canary'), tenant: ' Acme ' });
    const api = new FakeApi();
    // The append landed (late): acme's read shows it, so it is applied, not sent again.
    api.addAction('acme', 42, [phase('canary'), phase('wave-1')]);
    // Not there, and the settle window is over: not applied, decided by acme's read too.
    api.addAction('acme', 43, []);
    const log = memoryLog();
    const settled = await settleJournal(j, api, log, { settleMs: 0, tenants: new Set(['acme']) });
    expect(log.lines.join()).not.toMatch(/left for a run that covers/);
    expect(settled).toMatchObject({ applied: 1, notApplied: 1 });
    expect(j.open()).toEqual([]);
    // The history of appends finds it under either spelling (the executor asks with the run's).
    expect(j.storedBefore('acme', 42, 1, intentFor(42, 1, 'wave-1').digest)).toBeDefined();
    expect(j.storedBefore('ACME', 42, 1, intentFor(42, 1, 'wave-1').digest)).toBeDefined();
    await j.close();
  });

  it('leaves intents of tenants this run does not cover, with a warning naming the tenant', async () => {
    const j = await crashedWith({ ...intentFor(42, 0, 'canary'), tenant: 'globex' });
    const log = memoryLog();
    const settled = await settleJournal(j, new FakeApi(), log, { tenants: new Set(['acme']) });
    expect(settled.resolved).toBe(0);
    expect(log.lines.join()).toMatch(/left for a run that covers tenant globex/);
    expect(j.open()).toHaveLength(1);
    await j.close();
  });
});
