import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { EmulatorStore, loadSeedFile, startEmulator } from '../../src/emulator/index.js';
import { UserError } from '../../src/errors.js';
import { FIXTURES, SEED, tempDir } from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('seed fill-ins', () => {
  it('are plausible and the same on every load', () => {
    const a = new EmulatorStore(loadSeedFile(SEED)).snapshot();
    const b = new EmulatorStore(loadSeedFile(SEED)).snapshot();
    expect(a).toEqual(b);
    const bundle = a.tenants.acme!.bundles![0]!;
    expect(bundle.id).toMatch(UUID);
    expect(bundle.checksum).toMatch(/^[0-9a-f]{64}$/);
    expect(bundle.created_at).toMatch(/^2024-\d\d-\d\dT00:00:00Z$/);
    expect(bundle).toMatchObject({ file_name: 'bundle-2024.06.tar.gz', created_by: 'release-bot@example.com' });
    expect(bundle.uncompressed_size).toBeGreaterThan(0);
    const gps = bundle.firmwares![1]!;
    expect(gps.firmware_id).toMatch(UUID);
    expect(gps).toMatchObject({ file_name: 'gps-9.9.bin', is_deactivated: false, dependencies: [] });
    expect(gps.content_length).toBeLessThanOrEqual(gps.uncompressed_size!);
    const action = a.tenants.acme!.actions![0]!;
    expect(action).toMatchObject({ id: 42, tenant_id: 'acme', status: 'pending', release_notes: '', phases_triggered: [false], next_phase_index: 0 });
    expect(Number.isInteger(action.end_timestamp)).toBe(true);
    expect(action.retry_on_failure_until).toBeGreaterThan(action.end_timestamp!);
  });

  it('derive different ids for different tenants and versions', () => {
    const s = new EmulatorStore(loadSeedFile(SEED)).snapshot();
    const ids = s.tenants.acme!.bundles!.map((b) => b.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('reads a JSON seed', () => {
    const s = new EmulatorStore(loadSeedFile(join(FIXTURES, 'seed.json')));
    expect(s.firmwaresByVersion('acme', '1')).toHaveLength(1);
    expect(s.getAction('acme', 1)).toMatchObject({ phases: [], phases_triggered: [], next_phase_index: 0 });
  });

  it('is reproduced exactly from a snapshot', () => {
    const s = new EmulatorStore(loadSeedFile(SEED));
    expect(new EmulatorStore(s.snapshot()).snapshot()).toEqual(s.snapshot());
  });
});

describe('a malformed seed', () => {
  function message(fn: () => unknown): string {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(UserError);
      return (err as Error).message;
    }
    throw new Error('expected a failure');
  }

  it('names the file, the line and the field of a wrong type', () => {
    const file = join(FIXTURES, 'bad-type.yaml');
    expect(message(() => loadSeedFile(file))).toBe(`${file}:7: tenants.acme.bundles[0].firmwares[0].uncompressed_size must be a whole number of 0 or more; fix the seed and start again.`);
  });

  it('names the file and line of a YAML syntax error, in one line', () => {
    const file = join(FIXTURES, 'bad-yaml.yaml');
    const text = message(() => loadSeedFile(file));
    expect(text.startsWith(`${file}:`)).toBe(true);
    expect(text).toContain('not valid YAML or JSON');
    expect(text).not.toContain('\n');
  });

  it('names a missing file', () => {
    expect(message(() => loadSeedFile('/nonexistent/seed.yaml'))).toContain('/nonexistent/seed.yaml: cannot read the seed: the file does not exist');
    // A device or a pipe is refused at once, not read for ever.
    expect(message(() => loadSeedFile('/dev/zero'))).toContain('/dev/zero: cannot read the seed: this is a character device, not a regular file');
  });

  it('refuses contradicting listings of one firmware, repeated ids and shared keys', async () => {
    const dir = tempDir();
    const cases: [string, RegExp][] = [
      ['tenants: { a: { api_key: k-1234, bundles: [ { version: "1", firmwares: [ { version_number: "1", component_name: m, uncompressed_size: 1 } ] }, { version: "2", firmwares: [ { version_number: "1", component_name: m, uncompressed_size: 2 } ] } ] } }',
        /bundles\[1\]\.firmwares\[0\]\.uncompressed_size differs from the same firmware/],
      ['tenants: { a: { api_key: k-1234, actions: [ { id: 1 }, { id: 1 } ] } }', /actions\[1\]\.id repeats the action id 1/],
      ['tenants: { a: { api_key: k-1234 }, b: { api_key: k-1234 } }', /tenants\.b\.api_key is the same as the key of tenant "a"/],
      ['tenants: { a: { api_key: k-1234, actions: [ { id: 1, phases: [ { name: x } ], phases_triggered: [] } ] } }', /phases_triggered has 0 entries but the action has 1 phases/],
      ['tenants: { a: { api_key: k-1234, bundle: [] } }', /tenants\.a\.bundle is not a known field/],
      ['tenants: { a: { bundles: [] } }', /tenants\.a\.api_key must be a non-empty string/],
    ];
    for (const [i, [yaml, expected]] of cases.entries()) {
      const file = join(dir, `case-${i}.yaml`);
      writeFileSync(file, `${yaml}\n`);
      await expect(startEmulator({ seed: file })).rejects.toThrow(expected);
      await expect(startEmulator({ seed: file })).rejects.toThrow(new RegExp(`^${file.replace(/[.]/g, '\\.')}:1: `));
    }
  });

  it('as an object names "the seed"', async () => {
    await expect(startEmulator({ seed: { tenants: { a: { api_key: '' } } } })).rejects.toThrow('the seed: tenants.a.api_key must be a non-empty string');
  });
});
