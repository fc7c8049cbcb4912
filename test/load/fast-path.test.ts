// The fast path (js-yaml + a line scan) must give exactly what the yaml path gives, or step aside.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fastParseFile, hasSpecial, openAtLineEnd, refusedKey, REFUSED_KEYS, SPECIAL } from '../../src/load/fast-path.js';
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

  // A breaker found js-yaml's core schema reading 0b101 and -0x1F as numbers and -.5 and 1e400
  // as text where the yaml path reads the opposite, null keys as "null", and quoted scalars
  // running on under-indented lines: adding an anchor anywhere in a file changed its values.
  const SPELLINGS = ['0b101', '0B101', '-0b1', '0o17', '0O17', '-0o17', '+0o17', '017', '08', '0x1F', '0X1f', '-0x1F', '+0x1F', '1_000',
    '.5', '-.5', '+.5', '5.', '-5.', '1e3', '1E3', '1e+3', '1.5e-3', '+1', '+1.5', '-0', '-0.0', '0.', '00', '1e400', '-1e400', '4.9e-325',
    '.inf', '-.inf', '+.inf', '.Inf', '.INF', '.nan', '.NaN', '.NAN', '1:20', '1,000', '0.0.1', 'true', 'True', 'TRUE', 'yes', 'on', 'no',
    'null', 'Null', 'NULL', '~', '2024-01-01', '1.2.3', '0e0', '1e', 'e1', '0x', '0o', '0b', '123456789012345678901234567890', '"-.5"', "'0b1'"];
  const action = (info: string) => `apiVersion: dus-sync/v1\nkind: Action\nmetadata:\n  tenant: acme\nspec:\n  id: 7\n  phases:\n    - name: a\n      info: ${info}\n`;

  it('reads every plain scalar as the yaml path does, as a value and as a field name, or steps aside', () => {
    let taken = 0;
    for (const v of SPELLINGS) {
      for (const info of [`{ x: ${v} }`, `{ ${v}: 1 }`, `\n        x: ${v}\n`, `\n        ${v}: 1\n`]) {
        const { fast, slow } = both('s.yaml', action(info));
        if (fast) { taken++; expect(fast, `${v} in ${info}`).toEqual(slow); }
        if (slow.issues.length > 0) expect(fast, `${v} in ${info}`).toBeUndefined();
      }
    }
    expect(taken).toBeGreaterThan(150);
    // What JSON cannot carry is refused on both paths: a value it cannot spell, a null or collection field name.
    for (const info of ['{ x: .nan }', '{ x: -.inf }', '{ x: 1e400 }', '{ ~: 1 }', '{ null: 1 }', '{ : 1 }', '\n        ? \n        : 1\n', '{ [a, b]: 1 }', '\n        ? { a: 1 }\n        : 2\n']) {
      const { fast, slow } = both('s.yaml', action(info));
      expect(fast, info).toBeUndefined();
      expect(slow.issues.map((i) => i.message).join('\n'), info).toMatch(/not a finite number|field name here is (null|a mapping or a list)/);
    }
    // A quoted "null" or "a,b" field name is text: the yaml path takes it as written.
    for (const info of ['{ "null": 1 }', '{ "a,b": 1 }']) expect(both('s.yaml', action(info)).slow.issues, info).toEqual([]);
  });

  it('steps aside for a quoted scalar that runs past its line (js-yaml takes continuations the yaml path refuses)', () => {
    for (const info of ['{ x: "abc\n def" }', "{ x: 'abc\n def' }", '{ x: "abc\n          def" }', '\n        x: "a \\" b\n        c"\n', "\n        x: 'it''s\n        c'\n"]) {
      const { fast, slow } = both('q.yaml', action(info));
      expect(fast, info).toBeUndefined();
      expect(slow.documents.length + slow.issues.length).toBeGreaterThan(0);
    }
    // Quotes that close on their line, in a plain scalar, or in a comment leave the file to the fast path.
    for (const info of ['{ x: "a \\" b", y: \'it\'\'s\' }', '{ x: 5" screen }', '{ x: don\'t }', '{ x: a } # "quoted', '\n        x: "a"   # it\'s\n']) {
      const { fast, slow } = both('q.yaml', action(info));
      expect(fast, info).toBeDefined();
      expect(fast).toEqual(slow);
    }
  });

  // The next breaker: a carriage return alone (a line break to js-yaml only), an explicit or a
  // one-item list key, an empty tag, a flow collection continued at its key's indent, \U escapes.
  it('steps aside for what js-yaml reads otherwise than the yaml path and the values cannot show', () => {
    const cases = [
      '\n        note: hello # c\r        fleet_percent: 100\n', '{ x: "a\rb" }', "{ x: 'a\rb' }",
      '\n        ? [x]\n        : 1\n', '{ ? [x] : 1 }', '\n        ? []\n        : 1\n', '\n        [x]: 1\n', '{ [x]: 1 }',
      '{ x: ! }', '[ ! ]', '{ y: { a: 25,\n        b: x } }', '\n        y: [1,\n        2]\n', '{ x: "\\U00110000" }',
      // Round 16: block scalars (an explicit indent and a blank line, a tab-only line), a comment against a quote, a long key.
      '\n        note: |2\n            indented two more\n           \n', '\n        note: >\n          a\n\t\n', '\n        note: "internal"#c\n',
      '{ x: [a, b]#c\n        }', `\n        ${'k'.repeat(1025)}: 1\n`,
      // Round 17: a key written over 1,024 characters but shorter as a value; a tab among a line's leading blanks.
      `\n        "${'a'.repeat(1023)}": 1\n`, `\n        ${'b'.repeat(1020)}     : 1\n`, '\n        note: first line\n\t\n          second line\n',
    ];
    for (const info of cases) {
      const { fast, slow } = both('d.yaml', action(info));
      expect(fast, JSON.stringify(info)).toBeUndefined();
      expect(slow.documents.length + slow.issues.length, JSON.stringify(info)).toBeGreaterThan(0);
    }
    // What these checks look for, where it means nothing else, leaves the file to the fast path.
    for (const info of ['{ x: "what? yes" }', '\n        x: a[1]\n', '{ x: [1, 2], y: { z: 3 } }', '{ x: "a: b]" , y: 1 }', '{ x: "\\u00e9" }', '{ x: hi! }']) {
      const { fast, slow } = both('d.yaml', action(info));
      expect(fast, info).toBeDefined();
      expect(fast).toEqual(slow);
    }
    // A CRLF file is no doubt.
    const crlf = action('{ x: 1 }').replace(/\n/g, '\r\n');
    expect(both('c.yaml', crlf).fast).toEqual(both('c.yaml', crlf).slow);
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
      // How the identity's line is spaced (its column is read in place when the line is usual).
      // (Mostly the usual one, so that the fast path still takes enough files to compare.)
      gap: fc.oneof(
        { weight: 15, arbitrary: fc.constant<[string, string]>([' ', '']) },
        fc.constantFrom<[string, string]>(['', ' '], ['\t', ''], ['  ', ' '], [' ', ' # c'], ['', '']),
      ),
    }).map(({ kind, tenant, fields, phases, layout, comment, gap }) => {
      const seen = new Set<string>();
      const [after, tail] = gap;
      const identity = kind === 'Firmware' ? `  version_number${tail === '' && after === '' ? ' ' : ''}:${after}"9.9"${tail}\n` : `  id:${after || ' '}7${tail}\n`;
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
      // Without objects (validate's load): the same identities and no issue, or the yaml path's.
      const bare = fastParseFile({ path: 'gen.yaml', text }, 'gen.yaml', config, false);
      if (fast) expect(bare).toBeDefined();
      if (bare) {
        expect(bare.issues).toEqual(slow.issues);
        expect(bare.documents.map((d) => [d.index, d.source, d.identity])).toEqual(slow.documents.map((d) => [d.index, d.source, d.identity]));
        expect(bare.documents.every((d) => d.object === undefined)).toBe(true);
        expect(slow.documents.every((d) => d.object !== undefined)).toBe(true);
      }
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

  // The scan for a quote or bracket left open at a line's end reads each line from its first
  // quote, bracket or `#`: the same answer as reading every line whole, as it did.
  it('finds a line left open exactly where reading every line whole does (property)', () => {
    const isBoundary = (p: number): boolean => [32, 9, 10, 13, 91, 123, 44, 58, 45, 63].includes(p);
    const leavesOpen = (line: string): boolean => {
      let quote = 0;
      let depth = 0;
      for (let i = 0; i < line.length; i++) {
        const c = line.charCodeAt(i);
        if (quote === 34) {
          if (c === 92) i++;
          else if (c === 34) quote = 0;
        } else if (quote === 39) {
          if (c === 39) {
            if (line.charCodeAt(i + 1) === 39) i++;
            else quote = 0;
          }
        } else if (depth > 0 && (c === 93 || c === 125)) {
          depth--;
        } else if (c === 34 || c === 39 || c === 35 || c === 91 || c === 123) {
          if (!isBoundary(i === 0 ? 10 : line.charCodeAt(i - 1))) continue;
          if (c === 35) return quote !== 0 || depth > 0;
          if (c === 91 || c === 123) depth++;
          else quote = c;
        }
      }
      return quote !== 0 || depth > 0;
    };
    const char = fc.constantFrom('"', "'", '[', ']', '{', '}', '#', '\\', ' ', ' ', '\n', '\n', 'a', 'b', ':', ',', '-', '\t', '\r', '?');
    let open = 0;
    fc.assert(fc.property(fc.array(char, { maxLength: 60 }), (chars) => {
      const text = chars.join('');
      const whole = text.split('\n').some(leavesOpen);
      if (whole) open++;
      expect(openAtLineEnd(text)).toBe(whole);
    }), { numRuns: 3000 });
    expect(open).toBeGreaterThan(300);
  });
});

describe('refusedKey', () => {
  it('is REFUSED_KEYS.has: every refused key, each with a character changed, added or taken away, and any string', () => {
    expect(REFUSED_KEYS.size).toBeGreaterThanOrEqual(8);
    for (const k of REFUSED_KEYS) {
      expect(refusedKey(k)).toBe(true);
      // The same key, a string made anew (not the literal): compared by content.
      expect(refusedKey([...k].join(''))).toBe(true);
      for (let i = 0; i < k.length; i++) {
        const changed = `${k.slice(0, i)}${k[i] === 'x' ? 'y' : 'x'}${k.slice(i + 1)}`;
        for (const other of [changed, k.slice(0, i) + k.slice(i + 1), `${k.slice(0, i)}x${k.slice(i)}`]) {
          expect(refusedKey(other)).toBe(REFUSED_KEYS.has(other));
        }
      }
    }
    fc.assert(fc.property(fc.oneof(fc.string({ maxLength: 16 }), fc.constantFrom(...REFUSED_KEYS, 'kind', 'spec', 'Null', 'nan', 'component_name')), (k) => {
      expect(refusedKey(k)).toBe(REFUSED_KEYS.has(k));
    }), { numRuns: 2000 });
  });
});
