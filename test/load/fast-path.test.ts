// The fast path (js-yaml + a line scan) must give exactly what the yaml path gives, or step aside.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fastParseFile, hasSpecial, SPECIAL } from '../../src/load/fast-path.js';
import { parseFileWithYaml } from '../../src/load/index.js';
import type { ResolvedConfig } from '../../src/model/index.js';

const config: ResolvedConfig = {
  dir: process.cwd(), defaultTenant: 'acme', tenants: { acme: {}, globex: {} }, safety: {}, watchIntervalMs: 300_000, suspend: false,
};

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? yamlFiles(p) : /\.ya?ml$/.test(name) ? [p] : [];
  });
}

function both(path: string, text: string) {
  return { fast: fastParseFile({ path, text }, path, config), slow: parseFileWithYaml({ path, text }, path, config) };
}

describe('fast path', () => {
  it('agrees with the yaml path on every fixture and example, and takes every example', () => {
    let fastExamples = 0;
    for (const file of [...yamlFiles('test/fixtures/load'), ...yamlFiles('examples/tenants')]) {
      const path = relative(process.cwd(), file);
      const { fast, slow } = both(path, readFileSync(file, 'utf8'));
      if (fast) expect(fast, path).toEqual(slow);
      if (fast && path.startsWith('examples')) fastExamples++;
      if (slow.issues.length > 0) expect(fast, path).toBeUndefined();
    }
    expect(fastExamples).toBe(yamlFiles('examples/tenants').length);
  });

  it('steps aside for anchors, flow specs, ambiguous identities and document markers', () => {
    const fw = 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\n';
    for (const text of [
      `${fw}spec:\n  version_number: &v "1.0"\n`,
      `${fw}spec: { version_number: "1.0" }\n`,
      `${fw}spec:\n  # version\n  version_number: "1.0"\n...\n`,
      `--- ${fw}spec:\n  version_number: "1.0"\n`,
      `%YAML 1.2\n---\n${fw}spec:\n  version_number: "1.0"\n`,
    ]) {
      const { fast, slow } = both('x.yaml', text);
      if (fast) expect(fast).toEqual(slow);
      else expect(fast).toBeUndefined();
    }
    expect(both('x.yaml', `${fw}spec: { version_number: "1.0" }\n`).fast).toBeUndefined();
  });

  it('agrees with the yaml path on generated documents (property)', () => {
    const scalar = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom('"1.0"', '"3.2.1"', '"2024.06"') },
      fc.constantFrom('"1.0"', '1.10', '"2.4.1"', 'true', 'false', '0', '-1', '12', '"big"', '~', "'x'", '9007199254740993', '1e3', '0x1F'),
      fc.stringMatching(/^[a-z][a-z0-9_.-]{0,6}$/),
    );
    const key = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('version_number', 'component_name', 'bundle_version') },
      fc.constantFrom('is_deactivated', 'uncompressed_size', 'id', 'is_deactivate', 'name'),
    );
    const doc = fc.record({
      kind: fc.constantFrom('Firmware', 'Action'),
      tenant: fc.constantFrom('', '  tenant: acme\n', '  tenant: globex\n', '  tenant: nobody\n'),
      fields: fc.array(fc.tuple(key, scalar), { maxLength: 4 }),
      phases: fc.array(fc.tuple(scalar, fc.nat(100)), { maxLength: 3 }),
      // Where each phase is written is found by a line scan on the fast path: every layout.
      layout: fc.constantFrom('block', 'flow-item', 'compact', 'gaps', 'dash-alone', 'flow-list'),
      comment: fc.constantFrom('', '# note\n', '\n'),
    }).map(({ kind, tenant, fields, phases, layout, comment }) => {
      const seen = new Set<string>();
      const identity = kind === 'Firmware' ? '  version_number: "9.9"\n' : '  id: 7\n';
      const spec = identity + fields.filter(([k]) => k !== 'version_number' && k !== 'id')
        .filter(([k]) => !seen.has(k) && seen.add(k)).map(([k, v]) => `  ${k}: ${v}\n`).join('');
      const item = ([n, m]: [string, number]): string => {
        switch (layout) {
          case 'flow-item': return `    - { name: ${n}, trigger_on: { after_minutes: ${m} } }\n`;
          case 'compact': return `  - name: ${n}\n    trigger_on: { after_minutes: ${m} }\n`;
          case 'gaps': return `\n    # phase\n    - name: ${n}\n\n      trigger_on:\n        after_minutes: ${m}\n`;
          case 'dash-alone': return `    -\n      name: ${n}\n`;
          default: return `    - name: ${n}\n      trigger_on: { after_minutes: ${m} }\n`;
        }
      };
      const list = layout === 'flow-list' ? `  phases: [${phases.map(([n]) => `{ name: ${n} }`).join(', ')}]\n` : `  phases:\n${phases.map(item).join('')}`;
      const ph = kind === 'Action' ? list : '';
      return `${comment}apiVersion: dus-sync/v1\nkind: ${kind}\nmetadata:\n${tenant || '  labels: { a: b }\n'}spec:\n${spec}${ph}`;
    });
    let taken = 0;
    // Separators as files write them, and lines that only look like one (the fast path reads a
    // file's lines where they start, without splitting it).
    const separator = fc.constantFrom('---\n', '---\n', '--- # next\n', '---\t\n', '\n---\n', '# x\n---\n', '...\n---\n', '---x\n', '- \n---\n', '.\n---\n');
    fc.assert(fc.property(fc.array(doc, { minLength: 1, maxLength: 3 }), fc.boolean(), separator, fc.constantFrom('', '\n', '---\n', '# end'), (docs, crlf, sep, tail) => {
      let text = docs.join(sep) + tail;
      if (crlf) text = text.replace(/\n/g, '\r\n');
      const { fast, slow } = both('gen.yaml', text);
      if (fast) {
        taken++;
        expect(fast).toEqual(slow);
      }
      if (slow.issues.length > 0) expect(fast).toBeUndefined();
    }), { numRuns: 300 });
    expect(taken).toBeGreaterThan(20);
  });

  it('finds anchors, aliases, tags, directives and merge keys exactly where the RegExp does (property)', () => {
    const text = fc.array(fc.constantFrom('&', '*', '!', '%', '<', '<<', ' ', '\t', '\n', '\r', '\u2028', '\u00a0', '\ufeff', '[', '{', ',', ':', '-', 'a', 'x: ', '\n- ', '\ud800'), { maxLength: 12 })
      .map((parts) => parts.join(''));
    fc.assert(fc.property(text, (t) => {
      expect(hasSpecial(t), JSON.stringify(t)).toBe(SPECIAL.test(t));
    }), { numRuns: 5000 });
    for (const t of ['&a', ' *a', 'x: !tag', '%YAML', 'a\n%b', 'a\r%b', '<<: *x', 'a&b', 'a & b', '& ', 'a\u2028!x', '{*a}', '-&a', 'a%', '*']) {
      expect(hasSpecial(t), JSON.stringify(t)).toBe(SPECIAL.test(t));
    }
  });
});
