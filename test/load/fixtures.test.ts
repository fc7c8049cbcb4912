// One fixture folder per failure mode: each yields exactly the planted issue(s), at the exact place.
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/load/config.js';
import { loadDesiredState } from '../../src/load/index.js';

const ROOT = 'test/fixtures/load';

type Expected = [file: string, line: number, column: number, message: RegExp];

const CASES: Record<string, Expected[]> = {
  'syntax-error': [['bad.yaml', 6, 1, /^YAML syntax error: tabs are not allowed as indentation; fix the YAML syntax$/]],
  'duplicate-key': [['dup.yaml', 7, 3, /^duplicate key "is_deactivated"/]],
  'alias-bomb': [['bomb.yaml', 1, 1, /too many YAML aliases/]],
  'proto-key': [['proto.yaml', 9, 9, /the key "__proto__" is not allowed/]],
  'unquoted-version': [['v.yaml', 5, 19, /^version_number is the number 2\.1 here; quote it: "2\.10"$/]],
  'unquoted-min-version': [['v.yaml', 7, 50, /^min_version is the number 1\.2 here; quote it: "1\.20"$/]],
  'unknown-field': [['u.yaml', 6, 3, /^unknown field "uncompresed_size" in spec; did you mean "uncompressed_size"\?$/]],
  'unknown-field-metadata': [['u.yaml', 4, 3, /^unknown field "tenat" in metadata; did you mean "tenant"\?$/]],
  'unknown-kind': [['k.yaml', 2, 7, /^kind must be one of "Firmware", "Action"; did you mean "Firmware"\?$/]],
  'duplicate-identity-same-file': [['a.yaml', 11, 19, /^firmware "1\.0" of tenant "acme" is defined twice; the first definition is at test\/fixtures\/load\/duplicate-identity-same-file\/a\.yaml:5/]],
  'duplicate-action': [['b.yaml', 5, 7, /^action 5 of tenant "acme" is defined twice; the first definition is at .*\/duplicate-action\/a\.yaml:5/]],
  'same-version-other-tenant': [],
  'duplicate-dependency': [['d.yaml', 8, 25, /^the dependency on "radio" is listed twice \(first at line 7\)/]],
  'wrong-type': [['w.yaml', 6, 22, /^uncompressed_size must be an integer$/], ['w.yaml', 7, 19, /^is_deactivated must be true or false$/]],
  'negative-size': [['n.yaml', 6, 22, /^uncompressed_size must be 0 or more$/]],
  'big-integer': [['b.yaml', 6, 22, /^uncompressed_size is 9007199254740993, larger than 2\^53-1/]],
  'unknown-tenant': [['t.yaml', 4, 11, /^unknown tenant "globx": dus-sync\.yaml lists "acme", "globex"; did you mean "globex"\?$/]],
  'phase-name-number': [['p.yaml', 7, 13, /^name is the number 1 here; quote it: "1"$/]],
  'missing-required': [['m.yaml', 4, 1, /^spec is missing the required field "id"$/]],
  'not-dus-sync': [['compose.yaml', 1, 1, /has no "apiVersion: dus-sync\/v1"/]],
  'not-a-mapping': [['list.yaml', 1, 1, /must be a mapping/]],
  'no-tenant': [['f.yaml', 3, 1, /^no tenant: set metadata\.tenant, or default_tenant/]],
  'binary': [['firmware.yaml', 1, 1, /not UTF-8 text/]],
  'bom-crlf': [['f.yaml', 13, 3, /^unknown field "is_deactivate" in spec; did you mean "is_deactivated"\?$/]],
  'empty-documents': [],
  // Reached through two schema branches (the top level and the kind's document): reported once.
  'wrong-api-version': [['f.yaml', 1, 13, /^apiVersion must be "dus-sync\/v1"$/]],
  'spec-not-mapping': [['f.yaml', 4, 7, /^spec must be a mapping \(key: value\)$/]],
};

describe('one fixture per failure mode', () => {
  for (const [name, expected] of Object.entries(CASES)) {
    it(name, async () => {
      // dir: no-tenant has no config, and without one a folder must be named.
      const config = await resolveConfig({ cwd: `${ROOT}/${name}`, dir: '.', env: {} });
      const { issues } = await loadDesiredState(config);
      const got = issues.map((i) => [i.file, i.line, i.column, i.message] as const);
      expect(got.length, JSON.stringify(got)).toBe(expected.length);
      expected.forEach(([file, line, column, message], k) => {
        const [gf, gl, gc, gm] = got[k]!;
        expect([gf, gl, gc]).toEqual([`${ROOT}/${name}/${file}`, line, column]);
        expect(gm).toMatch(message);
      });
    });
  }
});

describe('valid fixtures build the desired state', () => {
  it('skips empty documents (a trailing ---)', async () => {
    const config = await resolveConfig({ cwd: `${ROOT}/empty-documents`, env: {} });
    const { desired } = await loadDesiredState(config);
    expect(desired.firmwares.map((f) => f.spec.version_number)).toEqual(['1.0']);
  });

  it('reads a file with a BOM and CRLF line ends, positions as an editor shows them', async () => {
    const config = await resolveConfig({ cwd: `${ROOT}/bom-crlf`, env: {} });
    const { desired } = await loadDesiredState(config);
    expect(desired.firmwares).toHaveLength(1);
    expect(desired.firmwares[0]!.spec).toEqual({ version_number: '1.0', uncompressed_size: 12 });
    expect(desired.firmwares[0]!.source).toEqual({ file: `${ROOT}/bom-crlf/f.yaml`, line: 1, column: 1 });
  });

  it('the same version number in two tenants is two objects', async () => {
    const config = await resolveConfig({ cwd: `${ROOT}/same-version-other-tenant`, env: {} });
    const { desired } = await loadDesiredState(config);
    expect(desired.firmwares.map((f) => `${f.tenant}/${f.spec.version_number}`)).toEqual(['acme/1.0', 'globex/1.0']);
  });
});

describe('the planted errors', () => {
  it('names each planted problem once, and nothing else', async () => {
    const config = await resolveConfig({ cwd: `${ROOT}/planted`, env: {} });
    const { issues } = await loadDesiredState(config);
    expect(issues.map((i) => `${i.file.replace(`${ROOT}/planted/`, '')}:${i.line}`)).toEqual([
      'firmwares/broken.yaml:6',
      'firmwares/modem.yaml:5',
      'firmwares/modem.yaml:13',
      'firmwares/modem.yaml:23',
      'firmwares/sizes.yaml:6',
      'firmwares/sizes.yaml:12',
    ]);
  });
});
