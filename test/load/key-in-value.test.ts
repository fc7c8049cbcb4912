// A desired-state value that holds an API key known to redaction is an issue at its place:
// apply would otherwise send the key to the API, while every output shows it [REDACTED].
import { afterEach, describe, expect, it } from 'vitest';
import { parseFile } from '../../src/load/index.js';
import type { ResolvedConfig } from '../../src/model/index.js';
import { clearSecretsForTests, registerSecret } from '../../src/redact.js';

const config: ResolvedConfig = {
  dir: process.cwd(), defaultTenant: 'acme', tenants: { acme: {} }, safety: {}, watchIntervalMs: 300_000, suspend: false,
};
const KEY = "k3y-0123456789abcdef";
afterEach(() => clearSecretsForTests());

const action = (phase: string, extra = '') => `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme${extra} }\nspec:\n  id: 7\n  phases:\n    - name: wave-1\n    - ${phase}\n`;
const firmware = (field: string) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "1.0.0"\n  component_name: modem\n  ${field}\n`;

function issues(text: string) {
  const parsed = parseFile({ path: 'a.yaml', text }, config);
  return { issues: parsed.issues.map((i) => `${i.line}:${i.column} ${i.pointer} ${i.message.slice(0, 90)}`), objects: parsed.documents.filter((d) => d.object).length };
}

describe('a key in a value apply would send', () => {
  const cases: [string, string, string][] = [
    ['in a phase name, as written', action(`name: wave-${KEY}`), '8:13 /spec/phases/1/name'],
    ['spelt with a double-quoted escape', action(`name: "wave-k3y\\x2D0123456789abcdef"`), '8:13 /spec/phases/1/name'],
    ['in a note of info', action(`name: w2\n      info: { note: "see ${KEY}" }`), '9:21 /spec/phases/1/info/note'],
    ['as a key of info (the pointer redacted)', action(`name: w2\n      info: { ${KEY}: 1 }`), '9:15 /spec/phases/1/info/[REDACTED]'],
    ['in a firmware field', firmware(`dependencies: [{ component_name: ${KEY}, min_version: "1.0" }]`), '7:36 /spec/dependencies/0/component_name'],
  ];
  for (const [what, text, at] of cases) {
    it(`${what}: an issue there, and no object`, () => {
      registerSecret(KEY);
      const r = issues(text);
      expect(r.issues).toHaveLength(1);
      expect(r.issues[0]).toContain(at);
      expect(r.issues[0]).toContain('holds an API key');
      expect(r.issues[0]).not.toContain(KEY);
      expect(r.objects).toBe(0);
    });
  }

  // validate keeps no object and asks for none (ParseOptions.objects false): a known key still needs them.
  it('a load that keeps no object still finds a key in a value', () => {
    registerSecret(KEY);
    for (const [, text, at] of cases) {
      const parsed = parseFile({ path: 'a.yaml', text }, config, { objects: false });
      expect(parsed.issues.map((i) => `${i.line}:${i.column} ${i.pointer}`)).toEqual([at]);
    }
  });

  it('a key as the document\'s tenant (sent in every request\'s header): an issue at metadata.tenant', () => {
    registerSecret(KEY);
    const parsed = parseFile({ path: 'a.yaml', text: `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: "${KEY}" }\nspec:\n  id: 7\n  phases:\n    - name: w\n` }, { ...config, tenants: {} });
    expect(parsed.issues.map((i) => `${i.line}:${i.column} ${i.pointer}`)).toEqual(['3:21 /metadata/tenant']);
    expect(parsed.issues[0]!.message).toContain('metadata.tenant holds an API key');
  });

  it('a key of digits, or 8 digits of one, written as a YAML number (sent as those digits): an issue there', () => {
    registerSecret('8675309123');
    registerSecret('globex-20240611-prod');
    expect(issues(firmware('uncompressed_size: 8675309123'))).toEqual({ issues: [expect.stringContaining('7:22 /spec/uncompressed_size spec.uncompressed_size holds an API key')], objects: 0 });
    expect(issues(action('name: w2\n      trigger_on: { after_minutes: 8675309123 }')).issues).toEqual([expect.stringContaining('9:36 /spec/phases/1/trigger_on/after_minutes')]);
    expect(issues(action('name: w2\n      info: { build: 20240611 }')).issues).toEqual([expect.stringContaining('9:22 /spec/phases/1/info/build')]);
    // An action's id is sent in the path of every request about it.
    const idKey = parseFile({ path: 'a.yaml', text: 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 8675309123\n  phases:\n    - name: w\n' }, config);
    expect(idKey.issues.map((i) => `${i.line}:${i.column} ${i.pointer}`)).toEqual(['5:7 /spec/id']);
    // Other numbers are no issue.
    expect(issues(firmware('uncompressed_size: 8675309'))).toEqual({ issues: [], objects: 1 });
  });

  it('a key spelt with a single-quoted quote', () => {
    const odd = "k3y'0123456789abcdef";
    registerSecret(odd);
    const r = issues(action(`name: 'k3y''0123456789abcdef'`));
    expect(r.issues).toEqual([expect.stringContaining('8:13 /spec/phases/1/name')]);
  });

  it('a key cut short, or percent-encoded, in a sent value: an issue (every output shows it [REDACTED], so it is never sent)', () => {
    registerSecret(KEY);
    for (const name of [KEY.slice(1), `w-${KEY.slice(0, 12)}`, 'k3y-0123%34%35%36789abcdef']) {
      const r = issues(action(`name: "${name}"`));
      expect(r.issues).toEqual([expect.stringContaining('8:13 /spec/phases/1/name spec.phases.1.name holds an API key or part of one')]);
      expect(r.objects).toBe(0);
    }
  });

  it('a tenant that shares 8 characters with a key, but is not the key, is no issue (a tenant "fallback", a key "…-fallback-…"); a sent value that does is', () => {
    registerSecret('dus-api-key-fallback-777888999');
    // Shown as "[REDACTED]-wave" in every output: refused, as a reviewer could not see what is sent.
    expect(issues(action('name: fallback-wave')).issues).toEqual([expect.stringContaining('8:13 /spec/phases/1/name spec.phases.1.name holds an API key or part of one')]);
    const parsed = parseFile({ path: 'a.yaml', text: 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: fallback }\nspec:\n  id: 7\n  phases:\n    - name: w\n' }, { ...config, tenants: { fallback: {} } });
    expect(parsed.issues).toEqual([]);
  });

  it('no issue where nothing is sent (a label), where no key is registered, or for another text', () => {
    const labelled = action('name: w2', `, labels: { note: "x${KEY}" }`);
    registerSecret(KEY);
    expect(issues(labelled)).toEqual({ issues: [], objects: 1 });
    expect(issues(action('name: w2'))).toEqual({ issues: [], objects: 1 });
    clearSecretsForTests();
    expect(issues(action(`name: wave-${KEY}`))).toEqual({ issues: [], objects: 1 });
  });
});
