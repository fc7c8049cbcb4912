// The pure writer: layout, key order, quoting, ambiguity, names; and the file writer's fence.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { compareVersions, componentFileNames, exportFiles, publicUrl, slugComponent } from '../../src/core/export.js';
import { writeExport } from '../../src/cli/export.js';
import type { LiveFirmware } from '../../src/model/index.js';

const rec = (v: string, c: string, extra: Partial<LiveFirmware> = {}): LiveFirmware => ({
  version_number: v, component_name: c, firmware_id: null, is_deactivated: false, uncompressed_size: 100,
  dependencies: [], bundles: ['2024.02', '2024.01'], ...extra,
});

const OPTS = { tenant: 'acme', sourceUrl: 'https://bob:s3cret@updates.example.com/?token=abc', generatedAt: '2026-01-02T03:04:05Z', schemaPath: 'https://dus-sync.dev/schemas/v1/resource.schema.json', toolVersion: '0.1.0' };

function index(...records: LiveFirmware[]): Map<string, LiveFirmware[]> {
  const m = new Map<string, LiveFirmware[]>();
  for (const r of records) m.set(r.version_number, [...(m.get(r.version_number) ?? []), r]);
  return m;
}

describe('exportFiles', () => {
  const result = exportFiles({
    firmwares: index(
      rec('2.10', 'modem', { dependencies: [{ component_name: 'radio', min_version: '1.10' }, { component_name: 'boot', min_version: '1.0' }] }),
      rec('2.9', 'modem', { is_deactivated: null, uncompressed_size: null }),
      rec('1.0', 'Radio Main'),
      rec('0.1', 'a'), rec('0.1', 'b'),
    ),
    actions: [{ id: 42, phases: [{ name: 'canary', trigger_on: { b: 1, a: 2 }, info: null }] }, { id: 7, phases: [] }],
  }, OPTS);

  it('writes one file per component and one per action, sorted', () => {
    expect(result.files.map((f) => f.path)).toEqual(['firmwares/modem.yaml', 'firmwares/radio-main.yaml', 'actions/7.yaml', 'actions/42.yaml']);
    expect(result).toMatchObject({ firmwares: 3, components: 2, actions: 2 });
  });

  it('puts one document per firmware in version order, keys in a fixed order, versions quoted', () => {
    const modem = result.files[0]!.text;
    const docs = parseAllDocuments(modem).map((d) => d.toJS() as { spec: Record<string, unknown> });
    expect(docs.map((d) => d.spec.version_number)).toEqual(['2.9', '2.10']);
    expect(Object.keys(docs[1]!.spec)).toEqual(['version_number', 'component_name', 'bundle_version', 'is_deactivated', 'uncompressed_size', 'dependencies']);
    expect(modem).toContain('version_number: "2.10"');
    expect(modem).toContain('bundle_version: "2024.01"');
    expect(modem).toContain('- { component_name: boot, min_version: "1.0" }\n    - { component_name: radio, min_version: "1.10" }');
    // Unknown live values stay unmanaged rather than becoming a guess.
    expect(Object.keys(docs[0]!.spec)).toEqual(['version_number', 'component_name', 'bundle_version', 'dependencies']);
  });

  it('starts every file with the modeline and the source, without credentials', () => {
    for (const f of result.files) {
      const [modeline, source] = f.text.split('\n');
      expect(modeline).toBe('# yaml-language-server: $schema=https://dus-sync.dev/schemas/v1/resource.schema.json');
      expect(source).toBe('# Exported by dus-sync 0.1.0 from https://updates.example.com tenant acme at 2026-01-02T03:04:05Z');
      expect(f.text).not.toMatch(/s3cret|bob|token/);
    }
  });

  it('skips a version number shared by several components, with the reason', () => {
    expect(result.skipped).toEqual([expect.objectContaining({ version_number: '0.1', components: ['a', 'b'] })]);
    expect(result.skipped[0]!.reason).toMatch(/cannot address/);
    expect(result.files.some((f) => f.text.includes('"0.1"'))).toBe(false);
  });

  it('writes all live phases with trigger_on and info ({} for null), keys sorted', () => {
    const doc = parseAllDocuments(result.files[3]!.text)[0]!.toJS() as { spec: { id: number; phases: unknown[] } };
    expect(doc.spec).toEqual({ id: 42, phases: [{ name: 'canary', trigger_on: { a: 2, b: 1 }, info: {} }] });
  });

  it('is deterministic', () => {
    const again = exportFiles({ firmwares: index(rec('1.0', 'Radio Main'), rec('2.9', 'modem', { is_deactivated: null, uncompressed_size: null }), rec('2.10', 'modem', { dependencies: [{ component_name: 'boot', min_version: '1.0' }, { component_name: 'radio', min_version: '1.10' }] }), rec('0.1', 'b'), rec('0.1', 'a')), actions: [{ id: 7, phases: [] }, { id: 42, phases: [{ name: 'canary', trigger_on: { a: 2, b: 1 }, info: {} }] }] }, OPTS);
    expect(again.files).toEqual(result.files);
  });

  it('skips a record whose live dependencies name a component twice', () => {
    const r = exportFiles({ firmwares: index(rec('1', 'x', { dependencies: [{ component_name: 'b', min_version: '1' }, { component_name: 'b', min_version: '2' }] })), actions: [] }, OPTS);
    expect(r.files).toEqual([]);
    expect(r.skipped[0]!.reason).toMatch(/twice/);
  });
});

describe('file names', () => {
  it('slugs component names into safe, unique file names', () => {
    expect(slugComponent('../../evil')).toBe('evil');
    expect(slugComponent('a/b\\c')).toBe('a-b-c');
    expect(slugComponent('..')).toBe('component');
    expect(slugComponent('CON')).toBe('con-component');
    expect([...componentFileNames(['Modem', 'modem', 'mo dem', 'mo/dem']).entries()]).toEqual([
      ['Modem', 'modem'], ['mo dem', 'mo-dem'], ['mo/dem', 'mo-dem-2'], ['modem', 'modem-2'],
    ]);
  });
  it('orders versions as people read them', () => {
    expect(['1.10', '1.9', '1.9.1', '10.0', '2.0-rc1', '2.0'].sort(compareVersions)).toEqual(['1.9', '1.9.1', '1.10', '2.0', '2.0-rc1', '10.0']);
  });
  it('keeps only scheme, host and path of the source URL', () => {
    expect(publicUrl('http://k:v@127.0.0.1:8080/base/?a=1#x')).toBe('http://127.0.0.1:8080/base');
  });
});

describe('writeExport', () => {
  let dir: string | undefined;
  afterEach(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

  it('refuses paths that leave the folder', async () => {
    dir = mkdtempSync(join(tmpdir(), 'dus-sync-export-'));
    const out = join(dir, 'out');
    await expect(writeExport(out, [{ path: '../escape.yaml', text: 'x' }])).rejects.toThrow(/outside/);
    await expect(writeExport(out, [{ path: '/etc/escape.yaml', text: 'x' }])).rejects.toThrow(/outside/);
    expect(readdirSync(dir)).toEqual(['out']);
  });

  it('says in a sentence when --out is a file, is below a file, or cannot be made (and does not hang on /proc)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'dus-sync-export-'));
    writeFileSync(join(dir, 'plain.yaml'), 'x: 1\n');
    const files = [{ path: 'firmwares/x.yaml', text: 'x' }];
    await expect(writeExport(join(dir, 'plain.yaml'), files)).rejects.toThrow(/^cannot export to .*plain\.yaml: it is a file, not a folder; give a folder for --out; nothing was written$/);
    await expect(writeExport(join(dir, 'plain.yaml', 'deeper', 'out'), files)).rejects.toThrow(/plain\.yaml is a file, not a folder/);
    // Node's recursive mkdir loops forever on this path; each folder is made one at a time here.
    if (process.platform === 'linux') await expect(writeExport('/proc/1/dus-sync-export', files)).rejects.toThrow(/^cannot export to \/proc\/1\/dus-sync-export: the folder \/proc\/1\/dus-sync-export cannot be made \(E[A-Z]+\)/);
    // A link that leads nowhere, and a FIFO: said as what they are.
    symlinkSync('../nowhere/sub', join(dir, 'dangling'));
    await expect(writeExport(join(dir, 'dangling'), files)).rejects.toThrow(/dangling is a symbolic link to "\.\.\/nowhere\/sub", which does not exist; give a folder for --out; nothing was written$/);
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    await expect(writeExport(join(dir, 'fifo'), files)).rejects.toThrow(/fifo: it is a named pipe \(FIFO\), not a folder/);
    expect(readdirSync(dir).sort()).toEqual(['dangling', 'fifo', 'plain.yaml']);
  });

  it('refuses to follow a symbolic link out of the folder', async () => {
    dir = mkdtempSync(join(tmpdir(), 'dus-sync-export-'));
    const out = join(dir, 'out');
    mkdirSync(join(dir, 'elsewhere'));
    mkdirSync(out);
    symlinkSync(join(dir, 'elsewhere'), join(out, 'firmwares'));
    await expect(writeExport(out, [{ path: 'firmwares/x.yaml', text: 'x' }])).rejects.toThrow(/outside/);
    expect(readdirSync(join(dir, 'elsewhere'))).toEqual([]);
  });
});
