import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator } from '../../src/emulator/index.js';
import { call, emulator, tempDir } from './helpers.js';

describe('persistence with a data file', () => {
  it('writes the state on start and after every write, and a restart has the same state', async () => {
    const dir = tempDir();
    const data = join(dir, 'state.json');
    const e = await emulator({ dataFile: data });
    expect(existsSync(data)).toBe(true);
    expect((await call(e.url, '/api/v1/firmwares/2.4.1', { method: 'PUT', body: { is_deactivated: true } })).status).toBe(200);
    expect((await call(e.url, '/api/v1/actions/42/append_phase', { method: 'POST', body: { name: 'wide' } })).status).toBe(201);
    const before = e.store.snapshot();
    expect(JSON.parse(readFileSync(data, 'utf8'))).toEqual(before);
    await e.close();

    // The seed is not read when the data file exists: a seed that does not exist is fine.
    const again = await emulator({ seed: join(dir, 'no-seed.yaml'), dataFile: data });
    expect(again.store.snapshot()).toEqual(before);
    expect((await call(again.url, '/api/v1/actions/42')).body).toMatchObject({ phases: [{ name: 'canary' }, { name: 'wide' }], next_phase_index: 0 });
    expect(readdirSync(dir)).toEqual(['state.json']);
  });

  it('writes through a temp file and a rename', async () => {
    const dir = tempDir();
    const data = join(dir, 'state.json');
    const e = await emulator({ dataFile: data });
    const seen: string[] = [];
    const watcher = watch(dir, (event, name) => { if (name) seen.push(`${event} ${name}`); });
    try {
      await call(e.url, '/api/v1/firmwares/3.0.0', { method: 'PUT', body: { uncompressed_size: 5 } });
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      watcher.close();
    }
    // A fresh, hidden, random name in the same folder (never a guessable `state.json.tmp-PID`).
    const tmp = seen.map((e) => / (\.state\.json\.[0-9a-f]{16}\.tmp)$/.exec(e)?.[1]).find((n) => n !== undefined);
    expect(tmp, seen.join(', ')).toBeDefined();
    expect(seen).toContain('rename state.json');
    expect(existsSync(join(dir, tmp!))).toBe(false);
    expect(readdirSync(dir)).toEqual(['state.json']);
  });

  it('persists a dropped append before the connection closes', async () => {
    const data = join(tempDir(), 'state.json');
    const e = await emulator({ dataFile: data, faults: { dropEvery: 1 } });
    await expect(call(e.url, '/api/v1/actions/43/append_phase', { method: 'POST', body: { name: 'late' } })).rejects.toThrow();
    const saved = JSON.parse(readFileSync(data, 'utf8')) as { tenants: { acme: { actions: { id: number; phases: { name: string }[]; phases_triggered: boolean[] }[] } } };
    const action = saved.tenants.acme.actions.find((a) => a.id === 43)!;
    expect(action.phases.map((p) => p.name)).toEqual(['one', 'two', 'late']);
    expect(action.phases_triggered).toEqual([true, false, false]);
  });

  it('names a corrupt data file', async () => {
    const data = join(tempDir(), 'state.json');
    writeFileSync(data, '{"tenants": {"acme": {"api_key": 5}}}');
    await expect(startEmulator({ seed: { tenants: {} }, dataFile: data })).rejects.toThrow(`${data}:1: tenants.acme.api_key must be a non-empty string`);
  });
});
