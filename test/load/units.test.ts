// The building blocks: position mapping, did-you-mean, the YAML guards, parseFile purity.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { didYouMean, editDistance } from '../../src/load/did-you-mean.js';
import { assemble, loadDocuments, parseFile } from '../../src/load/index.js';
import { locate, parseYamlSource, pointerSegments, toPointer, MAX_FILE_BYTES } from '../../src/load/yaml-source.js';
import type { ResolvedConfig } from '../../src/model/index.js';

const config: ResolvedConfig = {
  dir: process.cwd(), defaultTenant: 'acme', tenants: {}, safety: {}, watchIntervalMs: 300_000, suspend: false,
};

const fw = (spec: string, meta = '{}') => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: ${meta}\nspec:\n${spec}`;

describe('did you mean', () => {
  it('measures edit distance', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(0 + 3);
    expect(editDistance('same', 'same')).toBe(0);
    // Two neighbours swapped is one slip, not two edits.
    expect(editDistance('nmae', 'name')).toBe(1);
    expect(editDistance('ca', 'abc')).toBe(3);
  });
  it('suggests the close name and nothing for a far one', () => {
    expect(didYouMean('is_deactivate', ['is_deactivated', 'uncompressed_size'])).toBe('is_deactivated');
    expect(didYouMean('Firmwar', ['Firmware', 'Action'])).toBe('Firmware');
    expect(didYouMean('colour', ['version_number', 'dependencies'])).toBeUndefined();
    expect(didYouMean('ab', ['xy'])).toBeUndefined();
  });
});

describe('position mapping', () => {
  const text = 'a: 1\nspec:\n  deps:\n    - { name: x, v: "1" }\n    - name: y\n      v: 2\n';
  const src = parseYamlSource('f.yaml', text);
  const doc = src.documents[0]!;
  const pos = (ptr: string) => {
    const l = locate(doc, pointerSegments(ptr));
    return src.lineCounter.linePos((l.value ?? l.nearest).range![0]);
  };
  it('follows a JSON pointer to the line and column of the value', () => {
    expect(pos('/a')).toEqual({ line: 1, col: 4 });
    expect(pos('/spec/deps/0/v')).toEqual({ line: 4, col: 21 });
    expect(pos('/spec/deps/1/v')).toEqual({ line: 6, col: 10 });
  });
  it('points at the key of a mapping entry', () => {
    const l = locate(doc, ['spec', 'deps', '1', 'name']);
    expect(src.lineCounter.linePos(l.key!.range![0])).toEqual({ line: 5, col: 7 });
  });
  it('stops at the deepest existing node for a missing path', () => {
    const l = locate(doc, ['spec', 'nope', 'x']);
    expect(l.value).toBeUndefined();
    expect(src.lineCounter.linePos(l.nearest.range![0])).toEqual({ line: 3, col: 3 });
  });
  it('round-trips pointer escapes', () => {
    expect(pointerSegments(toPointer(['a/b', 'c~d', '0']))).toEqual(['a/b', 'c~d', '0']);
    expect(toPointer([])).toBe('');
  });
});

describe('YAML guards', () => {
  it('reports a duplicate key at the second one', () => {
    const p = parseFile({ path: 'x.yaml', text: fw('  version_number: "1"\n  version_number: "2"\n') }, config);
    expect(p.issues.map((i) => [i.line, i.column])).toEqual([[6, 3]]);
    expect(p.issues[0]!.message).toMatch(/^duplicate key "version_number"/);
  });
  it('stops an alias bomb with a clean issue', () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 6; i++) levels.push(`${'abcdef'[i]}: &${'abcdef'[i]} [${Array(9).fill(`*${'abcdef'[i - 1]}`).join(', ')}]`);
    const text = `apiVersion: dus-sync/v1\nkind: Action\nmetadata: {}\nspec:\n  id: 1\n  phases: []\n  x:\n${levels.map((l) => `    ${l}`).join('\n')}\n`;
    const p = parseFile({ path: 'bomb.yaml', text }, config);
    expect(p.issues).toHaveLength(1);
    expect(p.issues[0]!.message).toMatch(/too many YAML aliases/);
  });
  it('refuses __proto__ and constructor keys anywhere, once each, without polluting', () => {
    const text = `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { labels: { constructor: x } }\nspec:\n  id: 1\n  phases:\n    - name: a\n      info: { __proto__: { polluted: true } }\n`;
    const p = parseFile({ path: 'p.yaml', text }, config);
    expect(p.issues.map((i) => [i.line, i.message.slice(0, 24)])).toEqual([
      [3, 'the key "constructor" is'],
      [8, 'the key "__proto__" is n'],
    ]);
    expect(p.documents[0]!.object).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
  it('refuses a huge file by size, naming it', () => {
    const p = parseFile({ path: 'huge.yaml', text: 'a: 1\n'.repeat(MAX_FILE_BYTES / 5 + 1) }, config);
    expect(p.issues).toHaveLength(1);
    expect(p.issues[0]!.file).toBe('huge.yaml');
    expect(p.issues[0]!.message).toMatch(/larger than 5 MiB/);
  });
  it('turns binary garbage into one issue', () => {
    const p = parseFile({ path: 'b.yaml', text: '\u007fELF\u0000\u0001garbage' }, config);
    expect(p.issues.map((i) => i.message)).toEqual([expect.stringMatching(/not UTF-8 text/)]);
  });
  it('reports an unterminated bracket on the last line with content, not past the end', () => {
    const p = parseFile({ path: 'u.yaml', text: fw('  version_number: "1"\n  dependencies: [ { component_name: x, min_version: "1" }\n\n') }, config);
    expect(p.issues).toHaveLength(1);
    expect(p.issues[0]!.line).toBe(6);
  });
  it('never throws, whatever the input', () => {
    for (const text of ['', '---', ':::', '[', '{a: [}', '\uFEFF', '- - - -', '"', '&a *a', '!!binary x', 'a: !!int x']) {
      expect(() => parseFile({ path: 'z.yaml', text }, config)).not.toThrow();
    }
  });
});

describe('parseFile and assemble', () => {
  it('is pure: the same input gives an equal result', () => {
    const f = { path: 'a.yaml', text: fw('  version_number: "1.0"\n  is_deactivated: true\n') };
    expect(parseFile(f, config)).toEqual(parseFile(f, config));
  });

  it('builds typed objects, defaulting phases trigger_on and info to {}', () => {
    const text = `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme, labels: { team: radio } }\nspec:\n  id: 9\n  phases:\n    - name: canary\n    - { name: wave, trigger_on: { after_minutes: 5 } }\n`;
    const { desired, issues } = loadDocuments([{ path: 'a.yaml', text }], config);
    expect(issues).toEqual([]);
    expect(desired.actions).toEqual([{
      kind: 'action', tenant: 'acme', labels: { team: 'radio' }, source: { file: 'a.yaml', line: 1, column: 1 }, id: 9,
      phases: [{ name: 'canary', trigger_on: {}, info: {} }, { name: 'wave', trigger_on: { after_minutes: 5 }, info: {} }],
      phaseSources: [{ file: 'a.yaml', line: 7, column: 7 }, { file: 'a.yaml', line: 8, column: 7 }],
    }]);
  });

  it('validates filtered-out documents but leaves them out of desired', () => {
    const files = [
      { path: 'a.yaml', text: fw('  version_number: "1.0"\n', '{ tenant: acme, labels: { team: radio } }') },
      { path: 'b.yaml', text: fw('  version_number: "2.0"\n', '{ tenant: globex }') },
      { path: 'c.yaml', text: fw('  version_number: 3.0\n', '{ tenant: globex }') },
    ];
    const parsed = files.map((f) => parseFile(f, config));
    const byTenant = assemble(parsed, config, { tenants: ['acme'] });
    expect(byTenant.desired.firmwares.map((f) => f.spec.version_number)).toEqual(['1.0']);
    expect(byTenant.issues.map((i) => i.file)).toEqual(['c.yaml']);
    expect(byTenant.desired.files).toEqual(['a.yaml', 'b.yaml', 'c.yaml']);
    const bySelector = assemble(parsed, config, { selector: { team: 'radio' } });
    expect(bySelector.desired.firmwares.map((f) => f.spec.version_number)).toEqual(['1.0']);
    expect(assemble(parsed, config, { selector: { team: 'other' } }).desired.firmwares).toEqual([]);
  });

  it('sorts desired objects and files whatever the input order', () => {
    const files = [
      { path: 'z.yaml', text: fw('  version_number: "9.0"\n') },
      { path: 'a.yaml', text: fw('  version_number: "1.0"\n') },
    ];
    const { desired } = loadDocuments(files, config);
    expect(desired.files).toEqual(['a.yaml', 'z.yaml']);
    expect(desired.firmwares.map((f) => f.spec.version_number)).toEqual(['1.0', '9.0']);
  });

  it('keeps the first of a duplicated identity and reports the second', () => {
    const files = [
      { path: 'a.yaml', text: fw('  version_number: "1.0"\n  is_deactivated: false\n') },
      { path: 'b.yaml', text: fw('  version_number: "1.0"\n  is_deactivated: true\n') },
    ];
    const { desired, issues } = loadDocuments(files, config);
    expect(desired.firmwares.map((f) => f.spec.is_deactivated)).toEqual([false]);
    expect(issues.map((i) => `${i.file}:${i.line}:${i.column}`)).toEqual(['b.yaml:5:19']);
    expect(issues[0]!.message).toContain('the first definition is at a.yaml:5');
  });

  it('copies only schema fields into the spec', () => {
    const { desired } = loadDocuments([{ path: 'a.yaml', text: fw('  version_number: "1.0"\n  dependencies:\n    - { component_name: b, min_version: "1" }\n') }], config);
    expect(desired.firmwares[0]!.spec).toEqual({ version_number: '1.0', dependencies: [{ component_name: 'b', min_version: '1' }] });
  });
});

describe('an alias that names no anchor', () => {
  it('is named at its line, not taken for an alias bomb: a typo, and an anchor of another document', () => {
    const typo = parseFile({ path: 'a.yaml', text: 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec:\n  version_number: "2.4.1"\n  component_name: *modme\n' }, config);
    expect(typo.issues.map((i) => [i.line, i.column])).toEqual([[6, 19]]);
    expect(typo.issues[0]!.message).toBe('the alias *modme names no anchor &modme set before it in this document (an anchor does not reach into another document); set the anchor first, or write the value out');
    const across = parseFile({ path: 'a.yaml', text: 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec: &s\n  version_number: "2.4.1"\n---\napiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec: *s\n' }, config);
    expect(across.issues.map((i) => [i.line, i.message.slice(0, 30)])).toEqual([[10, 'the alias *s names no anchor &']]);
    // A real bomb keeps its own sentence.
    const bomb = parseFile({ path: 'a.yaml', text: `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b [${Array(10).fill('*a').join(', ')}]\n  c: &c [${Array(10).fill('*b').join(', ')}]\n  d: [${Array(10).fill('*c').join(', ')}]\n` }, config);
    expect(bomb.issues[0]!.message).toMatch(/expands too many YAML aliases/);
  });
});

describe('an alias used as a key', () => {
  it('is an issue at its line: yaml does not see a key set twice through one', () => {
    const parsed = parseFile({ path: 'a.yaml', text: 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec: { &k version_number: "2.4.0", component_name: modem, is_deactivated: true, *k : "2.3.9" }\n' }, config);
    expect(parsed.documents.filter((d) => d.object)).toEqual([]);
    expect(parsed.issues.map((i) => [i.line, i.message])).toEqual([[4, 'an alias (*k) is used as a key, which hides which key is set; write the key out instead']]);
  });
});

describe('a value JSON cannot carry (a YAML 1.1 or tagged timestamp, !!binary, !!set, !!omap)', () => {
  // Sent, each became something else than the plan showed (an ISO string, a Buffer's fields, {}),
  // and a phase so appended could never match its YAML again; !!binary also hid a key's base64.
  const action = (value: string, head = '') => `${head}apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 7\n  phases:\n    - name: wave\n      trigger_on: { not_before: ${value} }\n`;
  it.each([
    ['a plain date under %YAML 1.1', action('2024-06-01', '%YAML 1.1\n---\n'), 'not_before is a YAML timestamp (a date)', 10],
    ['an explicit !!timestamp', action('!!timestamp 2024-06-01'), 'not_before is a YAML timestamp (a date)', 8],
    ['!!binary', action('!!binary aGVsbG8='), 'not_before is YAML binary data (!!binary)', 8],
    ['!!set', action('!!set { a, b }'), 'not_before is a YAML !!set collection', 8],
    ['!!omap', action('!!omap [ { a: 1 } ]'), 'not_before is a YAML !!omap collection', 8],
  ])('%s: an issue at its line, and no object', (_what, text, message, line) => {
    const parsed = parseFile({ path: 'a.yaml', text }, config);
    expect(parsed.documents.filter((d) => d.object)).toEqual([]);
    expect(parsed.issues.map((i) => [i.line, i.message.slice(0, message.length)])).toEqual([[line, message]]);
    expect(parsed.issues[0]!.message).toContain('write it as a quoted string');
  });
  it('a date as a field name (sent as text that depends on the time zone), and two names JSON carries as one, are issues at their line', () => {
    const key = (text: string) => parseFile({ path: 'a.yaml', text: `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 7\n  phases:\n    - name: wave\n      info: ${text}\n` }, config).issues.map((i) => [i.line, i.message.slice(0, 60)]);
    expect(key('{ ? !!timestamp 2024-01-01 : x }')).toEqual([[8, 'a field name here is a YAML timestamp (a date), which the AP']]);
    expect(key('{ ? !!binary aGVsbG8= : x }')).toEqual([[8, 'a field name here is YAML binary data (!!binary), which the ']]);
    expect(key('{ 1: 10, "1": 20 }')).toEqual([[8, 'the field "1" is set twice here (as 1 and as "1"), which JSO']]);
    expect(key('{ true: a, "true": b }')).toEqual([[8, 'the field "true" is set twice here (as true and as "true"), ']]);
    expect(key('{ a: 1, b: 2, "2": 3 }')).toEqual([]);
    // A null name is sent as "" or "null" by what sits beside it: refused, whichever way it is written.
    for (const text of ['{ !!null "": a, "": b }', '{ !!null "": a }']) {
      expect(key(text).map(([line, m]) => [line, String(m).slice(0, 30)])).toEqual([[8, 'a field name here is null (~, ']]);
    }
    expect(key('{ "": a }')).toEqual([]);
    // An empty key beside "": js-yaml would read "null" and "" apart; the fast path steps aside, and it is refused too.
    expect(key('{ ? , "": b }').map(([line, m]) => [line, String(m).slice(0, 30)])).toEqual([[8, 'a field name here is null (~, ']]);
  });

  it('a quoted date, and a plain one under YAML 1.2, are strings and no issue', () => {
    for (const text of [action('"2024-06-01"'), action('2024-06-01')]) expect(parseFile({ path: 'a.yaml', text }, config).issues).toEqual([]);
  });
});

describe('the config in use met through a link among the resources', () => {
  it('is not a document (a link to the repository root), while another config is still an error', () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dus-cfg-link-')));
    try {
      const text = 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\n';
      writeFileSync(join(dir, 'dus-sync.yaml'), text);
      mkdirSync(join(dir, 'tenants', 'acme'), { recursive: true });
      symlinkSync('../..', join(dir, 'tenants', 'acme', 'root'));
      writeFileSync(join(dir, 'tenants', 'other.yaml'), text);
      const inUse = { ...config, dir, file: join(dir, 'dus-sync.yaml') };
      const viaLink = parseFile({ path: 'tenants/acme/root/dus-sync.yaml', text }, inUse);
      expect([viaLink.issues, viaLink.documents.filter((d) => d.object)]).toEqual([[], []]);
      const other = parseFile({ path: 'tenants/other.yaml', text }, inUse);
      expect(other.issues.map((i) => i.message.slice(0, 60))).toEqual(['this is a dus-sync config (kind: Config), not a desired-stat']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
