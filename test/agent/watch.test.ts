import { cp, mkdtemp, mkdir, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Watcher, jittered, startWatch, type WatcherOptions } from '../../src/agent/watch.js';
import { FakePass, FakeTimers, deferred, flush, memoryLogger, result, waitFor } from './helpers.js';

const watchers: Watcher[] = [];
afterEach(async () => {
  await Promise.all(watchers.splice(0).map((w) => w.stop(0)));
});

async function loop(pass: FakePass, extra: Partial<WatcherOptions> = {}) {
  const timers = new FakeTimers();
  const log = memoryLogger();
  const w = new Watcher({ paths: [], pass: pass.run, intervalMs: 60_000, jitter: 0, watchFiles: false, timers, log, ...extra });
  watchers.push(w);
  await w.start();
  await flush();
  return { w, timers, log };
}

describe('the watch loop', () => {
  it('runs one pass at start and logs one summary line for it', async () => {
    const pass = new FakePass();
    const { w, log } = await loop(pass);
    expect(pass.triggers).toEqual([{ reason: 'start' }]);
    expect(w.status()).toMatchObject({ passes: 1, running: false, consecutiveFailures: 0 });
    const summaries = log.lines.filter((l) => l.msg.startsWith('reconcile '));
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({ level: 'info', msg: 'reconcile success: pass success', fields: { trigger: 'start', result: 'success', nextInMs: 60_000 } });
  });

  it('never runs two passes at once: triggers during a pass coalesce into exactly one more', async () => {
    const pass = new FakePass();
    const gate = deferred<void>();
    pass.next = async () => { await gate.promise; return result('success'); };
    const { w } = await loop(pass);
    expect(pass.inFlight).toBe(1);
    w.trigger('file-change', ['/c/b.yaml']);
    w.trigger('interval');
    w.trigger('file-change', ['/c/a.yaml', '/c/b.yaml']);
    await flush();
    expect(pass.triggers).toHaveLength(1);
    pass.next = undefined;
    gate.resolve();
    await w.idle();
    // The interval that came with the file changes makes it a full pass (it reads everything).
    expect(pass.triggers).toEqual([{ reason: 'start' }, { reason: 'file-change', files: ['/c/a.yaml', '/c/b.yaml'], full: true }]);
    expect(pass.maxInFlight).toBe(1);
  });

  it('runs a drift pass every interval, with the jitter inside ±10%', async () => {
    const pass = new FakePass();
    const { timers } = await loop(pass, { intervalMs: 1000 });
    await timers.advance(999);
    expect(pass.triggers).toHaveLength(1);
    await timers.advance(1);
    expect(pass.triggers.map((t) => t.reason)).toEqual(['start', 'interval']);
    await timers.advance(3000);
    expect(pass.triggers.map((t) => t.reason)).toEqual(['start', 'interval', 'interval', 'interval', 'interval']);
    expect(jittered(1000, 0.1, () => 0)).toBe(900);
    expect(jittered(1000, 0.1, () => 1)).toBe(1100);
    expect(jittered(1000, 0.1, () => 0.5)).toBe(1000);
  });

  it('measures the interval from the last pass, whatever triggered it', async () => {
    const pass = new FakePass();
    const { w, timers } = await loop(pass, { intervalMs: 1000 });
    await timers.advance(600);
    w.trigger('file-change', ['/c/a.yaml']);
    await timers.advance(600);
    expect(pass.triggers.map((t) => t.reason)).toEqual(['start', 'file-change']);
    await timers.advance(400);
    expect(pass.triggers.map((t) => t.reason)).toEqual(['start', 'file-change', 'interval']);
  });

  it('backs off exponentially (capped) after API errors, then returns to the interval', async () => {
    const pass = new FakePass();
    pass.outcomes = ['api-error', 'api-error', 'api-error', 'api-error', 'api-error'];
    const { w, timers, log } = await loop(pass, { intervalMs: 10_000, backoff: { baseMs: 1000, maxMs: 5000 } });
    const at: number[] = [];
    const t0 = timers.now();
    const record = () => at.push(timers.now() - t0);
    for (let i = 0; i < 6; i++) {
      const before = pass.triggers.length;
      while (pass.triggers.length === before) await timers.advance(100);
      record();
    }
    // start failed at 0 → retry at 1 s, 3 s (+2), 7 s (+4), 12 s (+5 capped), 17 s (+5) succeeds.
    expect(at).toEqual([1000, 3000, 7000, 12000, 17000, 27000]);
    expect(pass.triggers.slice(1, 6).every((t) => t.reason === 'retry')).toBe(true);
    expect(pass.triggers[6]?.reason).toBe('interval');
    expect(w.status().consecutiveFailures).toBe(0);
    expect(log.lines.find((l) => l.fields?.result === 'api-error')).toMatchObject({ level: 'error', fields: { retryInMs: 1000 } });
  });

  it('keeps running after invalid config and after a pass that throws', async () => {
    const pass = new FakePass();
    pass.outcomes = ['invalid-config'];
    const { w, log } = await loop(pass);
    expect(log.lines.find((l) => l.fields?.result === 'invalid-config')?.level).toBe('warn');
    pass.next = () => Promise.reject(new Error('boom'));
    w.trigger('file-change', ['/c/a.yaml']);
    await w.idle();
    expect(w.status().lastResult).toMatchObject({ result: 'api-error', message: 'the pass failed unexpectedly: boom' });
    pass.next = undefined;
    w.trigger('retry');
    await w.idle();
    expect(w.status()).toMatchObject({ passes: 3, lastResult: { result: 'success' } });
    expect(w.status().lastSuccessAt).toBeDefined();
  });

  it('stop() lets the running pass finish within the grace period', async () => {
    const pass = new FakePass();
    const gate = deferred<void>();
    pass.next = async () => { await gate.promise; return result('success'); };
    const { w, timers } = await loop(pass);
    const stopped = w.stop(20_000);
    await timers.advance(5000);
    gate.resolve();
    await expect(stopped).resolves.toBe('finished');
    expect(pass.signals[0]?.aborted).toBe(false);
    w.trigger('interval');
    await flush();
    expect(pass.triggers).toHaveLength(1);
  });

  it('stop() aborts the running pass once the grace period is over', async () => {
    const pass = new FakePass();
    pass.next = () => new Promise((resolve) => {
      pass.signals.at(-1)!.addEventListener('abort', () => resolve(result('partial-failure')));
    });
    const { w, timers } = await loop(pass);
    const stopped = w.stop(1000);
    await timers.advance(999);
    expect(pass.signals[0]?.aborted).toBe(false);
    await timers.advance(1);
    await expect(stopped).resolves.toBe('aborted');
    expect(pass.signals[0]?.aborted).toBe(true);
  });

  it('a pass cut short by the stop is said as stopped, not counted as a failure (an api-error in the metrics)', async () => {
    const pass = new FakePass();
    pass.next = () => new Promise((resolve) => {
      pass.signals.at(-1)!.addEventListener('abort', () => resolve(result('api-error', { message: 'dus-sync is stopping' })));
    });
    const recorded: string[] = [];
    const { w, timers, log } = await loop(pass, { metrics: { recordPass: (r) => { recorded.push(r.result); } } });
    const stopped = w.stop(10);
    await timers.advance(10);
    await expect(stopped).resolves.toBe('aborted');
    expect(recorded).toEqual([]);
    expect(w.status().consecutiveFailures).toBe(0);
    expect(log.lines.map((l) => l.msg)).toContain('the start pass was stopped before it finished (dus-sync is stopping)');
  });

  it('stops at once when its signal is aborted', async () => {
    const pass = new FakePass();
    const ac = new AbortController();
    const { w, timers } = await loop(pass, { signal: ac.signal, intervalMs: 1000 });
    ac.abort();
    await timers.advance(5000);
    expect(pass.triggers).toHaveLength(1);
    expect(w.status().running).toBe(false);
  });
});

describe('file changes (real chokidar on a temp folder)', () => {
  let dir: string;
  afterEach(async () => { await rm(dir, { recursive: true, force: true }); });

  async function fixture() {
    dir = await mkdtemp(join(tmpdir(), 'dus-watch-'));
    await mkdir(join(dir, 'tenants', 'acme'), { recursive: true });
    await mkdir(join(dir, '.dus-sync'));
    await writeFile(join(dir, 'dus-sync.yaml'), 'kind: Config\n');
    await writeFile(join(dir, 'tenants', 'acme', 'a.yaml'), 'a: 1\n');
    await writeFile(join(dir, 'tenants', 'acme', 'c.yaml'), 'c: 1\n');
    const pass = new FakePass();
    const w = await startWatch({
      paths: [join(dir, 'dus-sync.yaml'), join(dir, 'tenants')],
      pass: pass.run, intervalMs: 60_000, debounceMs: 250, log: memoryLogger(),
    });
    watchers.push(w);
    await waitFor(() => pass.triggers.length === 1, 5000, 'the start pass');
    return { w, pass };
  }

  it('folds a burst of writes, an atomic save and an unlink+add into one pass', async () => {
    const { w, pass } = await fixture();
    const acme = join(dir, 'tenants', 'acme');
    await writeFile(join(acme, 'a.yaml'), 'a: 2\n');
    await writeFile(join(acme, 'b.yaml'), 'b: 1\n');
    await writeFile(join(acme, 'a.yaml.tmp-1'), 'a: 3\n');
    await rename(join(acme, 'a.yaml.tmp-1'), join(acme, 'a.yaml'));
    await unlink(join(acme, 'c.yaml'));
    await writeFile(join(acme, 'c.yaml'), 'c: 2\n');
    await waitFor(() => pass.triggers.length >= 2, 5000, 'the file-change pass');
    await new Promise((r) => setTimeout(r, 600));
    await w.idle();
    expect(pass.triggers).toHaveLength(2);
    const second = pass.triggers[1]!;
    expect(second.reason).toBe('file-change');
    expect(second.files).toEqual(expect.arrayContaining([join(acme, 'a.yaml'), join(acme, 'b.yaml'), join(acme, 'c.yaml')]));
    expect(second.files!.some((f) => f.includes('.tmp-'))).toBe(false);
  });

  it('sees an atomic save of the config file itself', async () => {
    const { pass } = await fixture();
    await writeFile(join(dir, 'dus-sync.yaml.new'), 'kind: Config\n# edited\n');
    await rename(join(dir, 'dus-sync.yaml.new'), join(dir, 'dus-sync.yaml'));
    await waitFor(() => pass.triggers.length >= 2, 5000, 'the file-change pass');
    expect(pass.triggers[1]).toEqual({ reason: 'file-change', files: [join(dir, 'dus-sync.yaml')] });
  });

  it('puts one fs.watch on each folder, not on each file, and still sees each file change by name', async () => {
    const { pass } = await fixture();
    const acme = join(dir, 'tenants', 'acme');
    const watches = () => process.getActiveResourcesInfo().filter((r) => r === 'FSEventWrap').length;
    const before = watches();
    // 200 more files: chokidar 4 alone would put a watcher on each one (some 4 KB each).
    for (let i = 0; i < 200; i++) await writeFile(join(acme, `f${i}.yaml`), `f: ${i}\n`);
    await waitFor(() => pass.triggers.length >= 2, 5000, 'the pass for the new files');
    await new Promise((r) => setTimeout(r, 400));
    expect(watches()).toBeLessThanOrEqual(before);
    expect(watches()).toBeLessThan(10);
    const n = pass.triggers.length;
    await writeFile(join(acme, 'f150.yaml'), 'f: changed\n');
    await waitFor(() => pass.triggers.length > n, 5000, 'the pass for the edit');
    expect(pass.triggers.at(-1)).toEqual({ reason: 'file-change', files: [join(acme, 'f150.yaml')] });
  });

  it('sees the files of a folder moved in whole (no file event of their own): the pass lists again', async () => {
    const { pass } = await fixture();
    const outside = await mkdtemp(join(tmpdir(), 'dus-watch-moved-'));
    try {
      await mkdir(join(outside, 'globex', 'deep'), { recursive: true });
      await writeFile(join(outside, 'globex', 'deep', 'g.yaml'), 'g: 1\n');
      await rename(join(outside, 'globex'), join(dir, 'tenants', 'globex'));
      await waitFor(() => pass.triggers.length >= 2, 5000, 'the pass for the new folder');
      expect(pass.triggers[1]!.reason).toBe('file-change');
      // The folder itself is named: the pass (src/agent/pass.ts) then lists every file again.
      expect(pass.triggers[1]!.files).toContain(join(dir, 'tenants', 'globex'));
      // And its files are watched from then on.
      await new Promise((r) => setTimeout(r, 300));
      const n = pass.triggers.length;
      await writeFile(join(dir, 'tenants', 'globex', 'deep', 'g.yaml'), 'g: 2\n');
      await waitFor(() => pass.triggers.length > n, 5000, 'the edit in the moved folder');
      expect(pass.triggers.at(-1)!.files).toEqual([join(dir, 'tenants', 'globex', 'deep', 'g.yaml')]);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('keeps a watcher on a linked resource: an edit of its target outside the watched folders is seen', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'dus-watch-target-'));
    try {
      await writeFile(join(outside, 'shared.yaml'), 's: 1\n');
      dir = await mkdtemp(join(tmpdir(), 'dus-watch-'));
      await mkdir(join(dir, 'tenants', 'acme'), { recursive: true });
      await symlink(join(outside, 'shared.yaml'), join(dir, 'tenants', 'acme', 'shared.yaml'));
      const pass = new FakePass();
      const w = await startWatch({ paths: [join(dir, 'tenants')], pass: pass.run, intervalMs: 60_000, debounceMs: 100, log: memoryLogger() });
      watchers.push(w);
      await waitFor(() => pass.triggers.length === 1, 5000, 'the start pass');
      await writeFile(join(outside, 'shared.yaml'), 's: 2\n');
      await waitFor(() => pass.triggers.length >= 2, 5000, 'the pass for the edited target');
      expect(pass.triggers[1]).toEqual({ reason: 'file-change', files: [join(dir, 'tenants', 'acme', 'shared.yaml')] });
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('ignores dot folders (the journal) and files the filter rejects', async () => {
    const { pass } = await fixture();
    await mkdir(join(dir, 'tenants', '.git'));
    await writeFile(join(dir, 'tenants', '.git', 'x.yaml'), 'x\n');
    await writeFile(join(dir, 'tenants', 'acme', 'notes.txt'), 'hello\n');
    await writeFile(join(dir, '.dus-sync', 'journal.jsonl'), '{}\n');
    await new Promise((r) => setTimeout(r, 700));
    expect(pass.triggers).toHaveLength(1);
  });
});

describe('reconfigure', () => {
  it('takes a new interval from the next scheduling on', async () => {
    const pass = new FakePass();
    const { w, timers } = await loop(pass, { intervalMs: 1000 });
    w.reconfigure({ intervalMs: 5000 });
    expect(w.intervalMs).toBe(5000);
    await timers.advance(1000);
    expect(pass.triggers.map((t) => t.reason)).toEqual(['start', 'interval']);
    await timers.advance(4999);
    expect(pass.triggers).toHaveLength(2);
    await timers.advance(1);
    expect(pass.triggers).toHaveLength(3);
  });

  it('starts watching a new root', async () => {
    const root = await mkdtemp(join(tmpdir(), 'dus-reconf-'));
    try {
      await mkdir(join(root, 'a'));
      await mkdir(join(root, 'b'));
      const pass = new FakePass();
      const w = await startWatch({ paths: [join(root, 'a')], pass: pass.run, intervalMs: 60_000, debounceMs: 50, log: memoryLogger() });
      watchers.push(w);
      await waitFor(() => pass.triggers.length === 1);
      w.reconfigure({ paths: [join(root, 'b')] });
      await new Promise((r) => setTimeout(r, 200));
      await writeFile(join(root, 'b', 'x.yaml'), 'x: 1\n');
      await waitFor(() => pass.triggers.length === 2, 5000, 'the change in the new root');
      expect(pass.triggers[1]).toEqual({ reason: 'file-change', files: [join(root, 'b', 'x.yaml')] });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('a config repo behind a symlink (git-sync)', () => {
  it('follows the atomic swap of the symlink to a new worktree and sees files added there afterwards', async () => {
    const root = await mkdtemp(join(tmpdir(), 'dus-gitsync-'));
    const worktree = async (name: string, v: string) => {
      await mkdir(join(root, name, 'tenants'), { recursive: true });
      await writeFile(join(root, name, 'dus-sync.yaml'), `v: ${v}\n`);
      await writeFile(join(root, name, 'tenants', 'a.yaml'), `a: ${v}\n`);
    };
    try {
      await worktree('wt1', '1');
      await symlink('wt1', join(root, 'repo'));
      const pass = new FakePass();
      const w = await startWatch({
        paths: [join(root, 'repo', 'dus-sync.yaml'), join(root, 'repo', 'tenants')],
        pass: pass.run, intervalMs: 60_000, debounceMs: 100, log: memoryLogger(),
      });
      watchers.push(w);
      await waitFor(() => pass.triggers.length === 1);
      await worktree('wt2', '2');
      await symlink('wt2', join(root, 'repo.tmp'));
      await rename(join(root, 'repo.tmp'), join(root, 'repo'));
      // git-sync removes the old worktree right after the swap; that is what chokidar sees.
      await rm(join(root, 'wt1'), { recursive: true });
      await waitFor(() => pass.triggers.length === 2, 5000, 'the pass after the swap');
      await new Promise((r) => setTimeout(r, 400));
      const before = pass.triggers.length;
      // A new file: only a watch on the new worktree's folder can see it.
      await writeFile(join(root, 'wt2', 'tenants', 'b.yaml'), 'b: 1\n');
      await waitFor(() => pass.triggers.length > before, 3000, 'the new file in the new worktree');
      expect(pass.triggers.at(-1)).toEqual({ reason: 'file-change', files: [join(root, 'repo', 'tenants', 'b.yaml')] });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('a root folder replaced', () => {
  for (const how of ['moved over', 'removed and made again'] as const) {
    it(`${how}, three times: each new folder is watched, and an edit in it after is seen`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'dus-root-swap-'));
      try {
        await mkdir(join(dir, 'tenants', 'acme'), { recursive: true });
        await writeFile(join(dir, 'tenants', 'acme', 'a.yaml'), 'a: 0\n');
        const pass = new FakePass();
        const log = memoryLogger();
        const w = await startWatch({ paths: [join(dir, 'tenants')], pass: pass.run, intervalMs: 3_600_000, debounceMs: 100, log });
        watchers.push(w);
        await waitFor(() => pass.triggers.length === 1, 5000, 'the start pass');
        for (let i = 1; i <= 3; i++) {
          const n = pass.triggers.length;
          const next = join(dir, `next-${i}`);
          await mkdir(join(next, 'acme'), { recursive: true });
          await writeFile(join(next, 'acme', 'a.yaml'), `a: ${i}\n`);
          if (how === 'moved over') {
            await rename(join(dir, 'tenants'), join(dir, `old-${i}`));
            await rename(next, join(dir, 'tenants'));
          } else {
            // As `rm -rf tenants; mkdir tenants; cp -r saved/* tenants/` does it.
            await rm(join(dir, 'tenants'), { recursive: true });
            await mkdir(join(dir, 'tenants'));
            await cp(join(next, 'acme'), join(dir, 'tenants', 'acme'), { recursive: true });
          }
          await waitFor(() => pass.triggers.length > n, 5000, `the pass after replacement ${i}`);
          // (the folder is listed again a second later: chokidar arms the new one after reading it)
          await new Promise((r) => setTimeout(r, 1300));
        }
        const n = pass.triggers.length;
        await writeFile(join(dir, 'tenants', 'acme', 'a.yaml'), 'a: edited in place\n');
        await waitFor(() => pass.triggers.length > n, 5000, 'the pass for an edit in the last folder');
        expect(pass.triggers.at(-1)!.files).toEqual([join(dir, 'tenants', 'acme', 'a.yaml')]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});

/**
 * A temp folder laid out by `build` (which returns the root to watch), watched with an hour's
 * interval once its start pass has run; removed after `body`.
 */
async function withWatchedTemp(prefix: string, debounceMs: number, build: (dir: string) => Promise<string>, body: (dir: string, pass: FakePass) => Promise<void>, filter?: (path: string) => boolean): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  try {
    const root = await build(dir);
    const pass = new FakePass();
    const w = await startWatch({ paths: [root], pass: pass.run, intervalMs: 3_600_000, debounceMs, log: memoryLogger(), ...(filter ? { filter } : {}) });
    watchers.push(w);
    await waitFor(() => pass.triggers.length === 1, 5000, 'the start pass');
    await body(dir, pass);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('a swap no watcher sees, and a root renamed away and back', () => {
  it('follows a root link swapped while its old target is kept (checked every 2 s), and a root renamed away and back', async () => {
    const build = async (dir: string) => {
      for (const rev of ['0', '1']) {
        await mkdir(join(dir, 'revs', rev, 'acme'), { recursive: true });
        await writeFile(join(dir, 'revs', rev, 'acme', 'a.yaml'), `a: ${rev}\n`);
      }
      await mkdir(join(dir, 'repo'));
      await symlink(join(dir, 'revs', '0'), join(dir, 'repo', 'tenants'));
      return join(dir, 'repo', 'tenants');
    };
    await withWatchedTemp('dus-root-poll-', 50, build, async (dir, pass) => {
      // Capistrano's way: a new link moved over the old one; revs/0 stays, so nothing it watches moves.
      await symlink(join(dir, 'revs', '1'), join(dir, 'repo', 'next'));
      await rename(join(dir, 'repo', 'next'), join(dir, 'repo', 'tenants'));
      await waitFor(() => pass.triggers.length >= 2, 6000, 'the pass after the swap');
      await new Promise((r) => setTimeout(r, 1300));
      let n = pass.triggers.length;
      await writeFile(join(dir, 'revs', '1', 'acme', 'a.yaml'), 'a: edited\n');
      await waitFor(() => pass.triggers.length > n, 5000, 'the edit in the new target');
      expect(pass.triggers.at(-1)!.files).toEqual([join(dir, 'repo', 'tenants', 'acme', 'a.yaml')]);
      // The target folder renamed away and straight back: the same folder, which chokidar loses.
      await rename(join(dir, 'revs', '1'), join(dir, 'revs', 'away'));
      await rename(join(dir, 'revs', 'away'), join(dir, 'revs', '1'));
      await new Promise((r) => setTimeout(r, 2500));
      n = pass.triggers.length;
      await writeFile(join(dir, 'revs', '1', 'acme', 'a.yaml'), 'a: edited again\n');
      await waitFor(() => pass.triggers.length > n, 5000, 'the edit after the rename back');
    });
  });
});

describe('an edit made while a replaced root is watched afresh', () => {
  it('is seen: the new folder is listed again a second after it is watched', async () => {
    const build = async (dir: string) => {
      await mkdir(join(dir, 'tenants', 'acme'), { recursive: true });
      await writeFile(join(dir, 'tenants', 'acme', 'a.yaml'), 'a: 0\n');
      return join(dir, 'tenants');
    };
    await withWatchedTemp('dus-root-race-', 50, build, async (dir, pass) => {
      await mkdir(join(dir, 'next', 'acme'), { recursive: true });
      await writeFile(join(dir, 'next', 'acme', 'a.yaml'), 'a: 1\n');
      await rename(join(dir, 'tenants'), join(dir, 'old'));
      await rename(join(dir, 'next'), join(dir, 'tenants'));
      await waitFor(() => pass.triggers.length === 2, 5000, 'the pass after the replacement');
      // Right after it, before the new folder may be armed: the second listing covers it.
      await writeFile(join(dir, 'tenants', 'acme', 'a.yaml'), 'a: 2\n');
      // The file itself (its new folder already watched), or the folder listed again.
      const after = () => pass.triggers.slice(2).flatMap((t) => t.files ?? []);
      await waitFor(() => after().includes(join(dir, 'tenants', 'acme', 'a.yaml')) || after().includes(join(dir, 'tenants')), 5000, 'a pass that reads the edit');
    });
  });
});

describe('a folder inside a root replaced, or a link to one swapped', () => {
  it('sees edits after a sub-folder is removed and made again under its name, and after a folder link is swapped (ln -s + mv -T)', async () => {
    const build = async (dir: string) => {
      await mkdir(join(dir, 'tenants', 'acme'), { recursive: true });
      await writeFile(join(dir, 'tenants', 'acme', 'a.yaml'), 'a: 0\n');
      await mkdir(join(dir, 'revs', '0'), { recursive: true });
      await writeFile(join(dir, 'revs', '0', 'f.yaml'), 'f: 0\n');
      await symlink(join(dir, 'revs', '0'), join(dir, 'tenants', 'linked'));
      return join(dir, 'tenants');
    };
    await withWatchedTemp('dus-sub-swap-', 100, build, async (dir, pass) => {
      const seen = async (what: string, act: () => Promise<void>) => {
        const n = pass.triggers.length;
        await act();
        await waitFor(() => pass.triggers.length > n, 5000, what);
        await new Promise((r) => setTimeout(r, 1300));
      };
      for (let i = 1; i <= 3; i++) {
        await seen(`sub-folder replacement ${i}`, async () => {
          await rm(join(dir, 'tenants', 'acme'), { recursive: true });
          await mkdir(join(dir, 'tenants', 'acme'));
          await writeFile(join(dir, 'tenants', 'acme', 'a.yaml'), `a: ${i}\n`);
        });
      }
      await seen('an edit in the re-made sub-folder', () => writeFile(join(dir, 'tenants', 'acme', 'a.yaml'), 'a: in place\n'));
      expect(pass.triggers.at(-1)!.files).toEqual([join(dir, 'tenants', 'acme', 'a.yaml')]);
      for (let i = 1; i <= 2; i++) {
        await seen(`folder link swap ${i}`, async () => {
          await mkdir(join(dir, 'revs', String(i)));
          await writeFile(join(dir, 'revs', String(i), 'f.yaml'), `f: ${i}\n`);
          await symlink(join(dir, 'revs', String(i)), join(dir, 'next-link'));
          await rename(join(dir, 'next-link'), join(dir, 'tenants', 'linked'));
        });
      }
      await seen('an edit behind the swapped link', () => writeFile(join(dir, 'revs', '2', 'f.yaml'), 'f: in place\n'));
    });
  });
});

describe('stop during start-up', () => {
  it('resolves start() and runs no pass when stopped before the watch is armed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dus-early-'));
    try {
      const pass = new FakePass();
      const w = new Watcher({ paths: [dir], pass: pass.run, intervalMs: 60_000, log: memoryLogger() });
      const started = w.start();
      await expect(w.stop(0)).resolves.toBe('idle');
      await started;
      await new Promise((r) => setTimeout(r, 50));
      expect(pass.triggers).toHaveLength(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('links that loop, or lead to a folder watched already', () => {
  it('watches each real folder once: the start pass comes, and an edit is reported under one path', async () => {
    const build = async (dir: string) => {
      await mkdir(join(dir, 'tenants', 'acme', 'firmwares'), { recursive: true });
      await mkdir(join(dir, 'tenants', 'globex'), { recursive: true });
      await writeFile(join(dir, 'tenants', 'acme', 'firmwares', 'a.yaml'), 'a: 0\n');
      await symlink('..', join(dir, 'tenants', 'acme', 'up'));
      await symlink('../..', join(dir, 'tenants', 'acme', 'firmwares', 'up2'));
      await symlink('../acme', join(dir, 'tenants', 'globex', 'acme-again'));
      return join(dir, 'tenants');
    };
    await withWatchedTemp('dus-loop-', 50, build, async (dir, pass) => {
      await new Promise((r) => setTimeout(r, 300));
      const n = pass.triggers.length;
      await writeFile(join(dir, 'tenants', 'acme', 'firmwares', 'a.yaml'), 'a: 1\n');
      await waitFor(() => pass.triggers.length > n, 5000, 'the pass for the edit');
      await new Promise((r) => setTimeout(r, 300));
      const files = pass.triggers.slice(n).flatMap((t) => t.files ?? []);
      expect(files).toHaveLength(1);
      expect(files[0]!.endsWith('a.yaml')).toBe(true);
    });
  });
});

describe('a file the filter selects only through a link to a folder watched by its own path', () => {
  // ["**/*.yaml", "!shared/**"] with envs/prod -> ../shared/prod: the loader reads the file as
  // envs/prod/x.yaml; the folder is watched once, as shared/prod, and an edit there is that file's.
  it('an edit of shared/prod/x.yaml is reported as envs/prod/x.yaml (it was dropped as a file the filter rejects)', async () => {
    const build = async (dir: string) => {
      await mkdir(join(dir, 'repo', 'shared', 'prod'), { recursive: true });
      await mkdir(join(dir, 'repo', 'envs'), { recursive: true });
      await writeFile(join(dir, 'repo', 'shared', 'prod', 'x.yaml'), 'a: 0\n');
      await symlink('../shared/prod', join(dir, 'repo', 'envs', 'prod'));
      await symlink('../shared/prod', join(dir, 'repo', 'envs', 'prod-again'));
      // And a path through two such links: envs/prod/common/c.yaml.
      await mkdir(join(dir, 'repo', 'shared', 'common'), { recursive: true });
      await writeFile(join(dir, 'repo', 'shared', 'common', 'c.yaml'), 'c: 0\n');
      await symlink('../common', join(dir, 'repo', 'shared', 'prod', 'common'));
      return join(dir, 'repo');
    };
    const filter = (p: string) => /\.ya?ml$/.test(p) && !p.includes('/repo/shared/') && !p.includes('/prod-again/');
    await withWatchedTemp('dus-alias-', 50, build, async (dir, pass) => {
      await new Promise((r) => setTimeout(r, 300));
      for (const [i, via] of [['1', 'shared/prod'], ['2', 'envs/prod'], ['3', 'envs/prod-again']] as const) {
        const n = pass.triggers.length;
        await writeFile(join(dir, 'repo', via, 'x.yaml'), `a: ${i}\n`);
        await waitFor(() => pass.triggers.length > n, 5000, `the pass for the edit through ${via}`);
        await new Promise((r) => setTimeout(r, 200));
        const files = pass.triggers.slice(n).flatMap((t) => t.files ?? []);
        expect(files).toEqual([join(dir, 'repo', 'envs', 'prod', 'x.yaml')]);
      }
      const n = pass.triggers.length;
      await writeFile(join(dir, 'repo', 'shared', 'common', 'c.yaml'), 'c: 1\n');
      await waitFor(() => pass.triggers.length > n, 5000, 'the pass for the edit of shared/common/c.yaml');
      await new Promise((r) => setTimeout(r, 200));
      expect(pass.triggers.slice(n).flatMap((t) => t.files ?? [])).toEqual([join(dir, 'repo', 'envs', 'prod', 'common', 'c.yaml')]);
    }, filter);
  });

  it('a new link to a folder watched already (envs/qa -> old/qa, envs/old/ left out) starts a pass that lists everything again', async () => {
    const build = async (dir: string) => {
      await mkdir(join(dir, 'repo', 'envs', 'dev'), { recursive: true });
      await mkdir(join(dir, 'repo', 'envs', 'old', 'qa'), { recursive: true });
      await writeFile(join(dir, 'repo', 'envs', 'dev', 'd.yaml'), 'd: 0\n');
      await writeFile(join(dir, 'repo', 'envs', 'old', 'qa', 'q.yaml'), 'q: 0\n');
      return join(dir, 'repo');
    };
    const filter = (p: string) => /\.ya?ml$/.test(p) && !p.includes('/repo/envs/old/');
    await withWatchedTemp('dus-new-link-', 50, build, async (dir, pass) => {
      await new Promise((r) => setTimeout(r, 300));
      const n = pass.triggers.length;
      await symlink('old/qa', join(dir, 'repo', 'envs', 'qa'));
      await waitFor(() => pass.triggers.length > n, 5000, 'the pass for the new link');
      expect(pass.triggers.slice(n).flatMap((t) => t.files ?? [])).toContain(join(dir, 'repo', 'envs', 'qa'));
    }, filter);
  });

  /**
   * envs/prod/a.yaml and envs/staging/s.yaml, with `links` ([target, path] from repo/) making a
   * loop; watching envs/prod for its YAML files, an edit of staging must be no resource's.
   */
  const loopWatched = (prefix: string, realProd: string, links: [string, string][]) => withWatchedTemp(prefix, 50, async (dir) => {
    await mkdir(join(dir, 'repo', realProd), { recursive: true });
    await mkdir(join(dir, 'repo', 'envs', 'staging'), { recursive: true });
    await writeFile(join(dir, 'repo', realProd, 'a.yaml'), 'a: 0\n');
    await writeFile(join(dir, 'repo', 'envs', 'staging', 's.yaml'), 's: 0\n');
    for (const [target, at] of links) await symlink(target, join(dir, 'repo', at));
    return join(dir, 'repo', 'envs', 'prod');
  }, async (dir, pass) => {
    await new Promise((r) => setTimeout(r, 300));
    const n = pass.triggers.length;
    await writeFile(join(dir, 'repo', 'envs', 'staging', 's.yaml'), 's: 1\n');
    await new Promise((r) => setTimeout(r, 800));
    await writeFile(join(dir, 'repo', 'envs', 'prod', 'a.yaml'), 'a: 1\n');
    await waitFor(() => pass.triggers.length > n, 5000, 'the pass for the edit of envs/prod/a.yaml');
    await new Promise((r) => setTimeout(r, 200));
    expect(pass.triggers.slice(n).flatMap((t) => t.files ?? [])).toEqual([join(dir, 'repo', 'envs', 'prod', 'a.yaml')]);
  }, (p: string) => /\.ya?ml$/.test(p) && p.includes('/repo/envs/prod/'));

  it('a loop by the path as watched (envs/prod -> ../shared/prod, shared/prod/up -> ../../envs) is not watched either', async () => {
    await loopWatched('dus-loop-walked-', 'shared/prod', [['../shared/prod', 'envs/prod'], ['../../envs', 'shared/prod/up']]);
  });

  it('a link to a folder above it (envs/prod/up -> ..) is a loop and not watched: an edit of envs/staging is no resource\'s', async () => {
    await loopWatched('dus-loop-up-', 'envs/prod', [['..', 'envs/prod/up']]);
  });
});
