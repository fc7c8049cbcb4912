// Sharing what repeats across 200,000 records (issue 15's memory goals): one copy of each short
// dependency list, one bundle list per bundle, frozen so that no reader can change them for all.
import { describe, expect, it } from 'vitest';
import { internDependencies } from '../src/intern.js';
import { indexFirmwares } from '../src/api/fetch-live.js';
import { parseFile } from '../src/load/index.js';
import type { FirmwareBundle, ResolvedConfig } from '../src/model/index.js';

describe('internDependencies', () => {
  it('gives equal lists of {component_name, min_version} one frozen copy', () => {
    const a = internDependencies([{ component_name: 'boot', min_version: '1.0' }]);
    const b = internDependencies([{ component_name: 'boot', min_version: '1.0' }]);
    expect(b).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(a[0])).toBe(true);
    expect(() => { (a as unknown as object[]).push({}); }).toThrow(TypeError);
    expect(internDependencies([{ component_name: 'boot', min_version: '1.1' }])).not.toBe(a);
    // The order is part of the list: another order is another list (the comparison sorts, not this).
    const ab = internDependencies([{ component_name: 'a', min_version: '1' }, { component_name: 'b', min_version: '2' }]);
    expect(internDependencies([{ component_name: 'b', min_version: '2' }, { component_name: 'a', min_version: '1' }])).not.toBe(ab);
  });

  it('returns any other list as it is: an entry with more fields, a field that is not text, a long list', () => {
    for (const list of [
      [{ component_name: 'boot', min_version: '1.0', max_version: '2.0' }],
      [{ component_name: 'boot', min_version: 1 }],
      [{ component_name: 'boot' }],
      Array.from({ length: 5 }, (_, i) => ({ component_name: `c${i}`, min_version: '1' })),
    ]) {
      const got = internDependencies(list as object[]);
      expect(got).toBe(list);
      expect(Object.isFrozen(got)).toBe(false);
    }
  });
});

describe('what the live index and the desired state share', () => {
  it('records of one bundle share its frozen bundle list, and equal dependency lists are one', async () => {
    const deps = () => [{ component_name: 'boot', min_version: '1.0' }];
    async function* pages(): AsyncGenerator<FirmwareBundle[]> {
      yield [{ version: '2024.06', firmwares: [
        { version_number: '1.0', component_name: 'modem', uncompressed_size: 1, is_deactivated: false, dependencies: deps() },
        { version_number: '1.1', component_name: 'modem', uncompressed_size: 1, is_deactivated: false, dependencies: deps() },
      ] } as unknown as FirmwareBundle];
    }
    const index = await indexFirmwares(pages(), {});
    const [a, b] = [index.get('1.0')![0]!, index.get('1.1')![0]!];
    expect(a.bundles).toEqual(['2024.06']);
    expect(b.bundles).toBe(a.bundles);
    expect(Object.isFrozen(a.bundles)).toBe(true);
    expect(b.dependencies).toBe(a.dependencies);
  });

  it('desired firmware documents with equal dependencies share them, and their identities share strings', () => {
    const config = { dir: '/repo', tenants: {}, defaultTenant: 'acme' } as unknown as ResolvedConfig;
    const doc = (v: string) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "${v}"\n  component_name: modem\n  bundle_version: "2024.06"\n  is_deactivated: false\n  uncompressed_size: 1\n  dependencies: [{ component_name: boot, min_version: "1.0" }]\n`;
    const parsed = parseFile({ path: 'x.yaml', text: `${doc('1.0')}---\n${doc('1.1')}` }, config);
    const [a, b] = parsed.documents.map((d) => d.object as { spec: { dependencies: unknown } });
    expect(parsed.issues).toEqual([]);
    expect(b!.spec.dependencies).toBe(a!.spec.dependencies);
    expect(parsed.documents[1]!.identity!.pointer).toBe('/spec/version_number');
  });

  it('a spec with or without bundle_version keeps the order of its fields, and the identity its key position', () => {
    const config = { dir: '/repo', tenants: {}, defaultTenant: 'acme' } as unknown as ResolvedConfig;
    const doc = (bundle: string) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  dependencies: []\n  uncompressed_size: 1\n  is_deactivated: false\n${bundle}  component_name: modem\n  version_number: "1.0"\n`;
    for (const [bundle, keys, line] of [
      ['', ['version_number', 'component_name', 'is_deactivated', 'uncompressed_size', 'dependencies'], 9],
      ['  bundle_version: "2024.06"\n', ['version_number', 'component_name', 'bundle_version', 'is_deactivated', 'uncompressed_size', 'dependencies'], 10],
      ['  bundle_version: "2024.06"\n  bogus: 1\n', undefined, 11],
    ] as const) {
      const parsed = parseFile({ path: 'x.yaml', text: doc(bundle) }, config);
      const d = parsed.documents[0]!;
      if (keys === undefined) expect(d.object).toBeUndefined();
      else expect(Object.keys((d.object as { spec: object }).spec)).toEqual(keys);
      expect(d.identity).toEqual({ kind: 'firmware', tenant: 'acme', key: '1.0', location: { file: d.source.file, line, column: 19 }, pointer: '/spec/version_number' });
    }
  });
});
