// Journal intents name the desired state's revision (provenance), and the in-doubt count is read
// without the lock and without creating anything.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Journal } from '../../src/apply/journal.js';

const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }); });

describe('journal provenance', () => {
  it('stamps each intent with the revision, and counts pending intents of its API', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dus-journal-rev-'));
    dirs.push(dir);
    const path = join(dir, 'state', 'journal.jsonl');
    expect(await Journal.peekInDoubt(path, 'http://a')).toBe(0);
    expect(existsSync(join(dir, 'state'))).toBe(false);
    const j = await Journal.open(path, 'http://a');
    j.revision = { commit: 'c'.repeat(40), dirty: true };
    const i = await j.recordIntent({ tenant: 'acme', action_id: 42, index: 1, name: 'wave-1', digest: 'd' });
    const done = await j.recordIntent({ tenant: 'acme', action_id: 42, index: 2, name: 'wave-2', digest: 'e' });
    await j.recordOutcome(done.id, 'applied');
    await j.close();
    const first = JSON.parse(readFileSync(path, 'utf8').split('\n')[0]!) as Record<string, unknown>;
    expect(first).toMatchObject({ type: 'intent', id: i.id, revision: { commit: 'c'.repeat(40), dirty: true } });
    expect(await Journal.peekInDoubt(path, 'http://a')).toBe(1);
    expect(await Journal.peekInDoubt(path, 'http://b')).toBe(0);
  });
});
