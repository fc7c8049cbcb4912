// Hostile and random input through the loader: whatever the bytes, parseFile and loadDocuments
// return issues (file, line, column, one sentence) within a time bound, never throw, never hang,
// never fall into the "could not be checked" safety net, and never touch Object.prototype.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadDocuments, parseFile, parseFileWithYaml, type ParsedFile } from '../../src/load/index.js';
import { fastParseFile } from '../../src/load/fast-path.js';
import { mulberry32 } from '../../src/emulator/index.js';
import type { ResolvedConfig } from '../../src/model/index.js';
import { runCli, STACK, writeTree } from './helpers.js';

const config: ResolvedConfig = {
  dir: process.cwd(), defaultTenant: 'acme', tenants: { acme: {}, globex: {} }, safety: {}, watchIntervalMs: 300_000, suspend: false,
};

/** Per input, generous for a loaded 2-core CI machine: a parse that takes longer is a hang in the making. */
const BOUND_MS = 2_000;
const PROTO_KEYS = Object.getOwnPropertyNames(Object.prototype).sort();

function check(text: string, path = 'input.yaml'): ParsedFile {
  const started = performance.now();
  const parsed = parseFile({ path, text }, config);
  const result = loadDocuments([{ path, text }], config);
  const elapsed = performance.now() - started;
  expect(elapsed, `took ${Math.round(elapsed)} ms`).toBeLessThan(BOUND_MS);
  for (const issue of [...parsed.issues, ...result.issues]) {
    expect(issue.file).toBe(path);
    expect(Number.isInteger(issue.line) && issue.line >= 1, `line of ${issue.message}`).toBe(true);
    expect(Number.isInteger(issue.column) && issue.column >= 1, `column of ${issue.message}`).toBe(true);
    expect(typeof issue.pointer).toBe('string');
    expect(issue.message.trim().length).toBeGreaterThan(0);
    expect(issue.message).not.toMatch(/could not be checked|please report it/);
    expect(issue.message).not.toMatch(STACK);
  }
  // An object is only built from a document without issues.
  const built = result.desired.firmwares.length + result.desired.actions.length;
  if (result.issues.length > 0) expect(parsed.documents.filter((d) => d.object).length).toBeLessThanOrEqual(parsed.documents.length);
  expect(built).toBeLessThanOrEqual(parsed.documents.length);
  return parsed;
}

/** The fast path may step aside, but when it answers it must say exactly what the yaml path says. */
function expectPathsAgree(text: string): boolean {
  const fast = fastParseFile({ path: 'input.yaml', text }, 'input.yaml', config);
  if (fast === undefined) return false;
  expect(fast).toEqual(parseFileWithYaml({ path: 'input.yaml', text }, 'input.yaml', config));
  return true;
}

function messages(p: ParsedFile): string {
  return p.issues.map((i) => `${i.line}:${i.column} ${i.message}`).join('\n');
}

function expectUnpolluted(): void {
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTO_KEYS);
  const probe = {} as Record<string, unknown>;
  for (const k of ['polluted', 'isAdmin', 'x']) expect(probe[k]).toBeUndefined();
  expect(Object.prototype.toString.call([])).toBe('[object Array]');
}

afterAll(expectUnpolluted);

const ACTION_HEAD = 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 3\n  phases:\n';
const FW_HEAD = 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "1.0.0"\n';
const VALID_FW = `${FW_HEAD}  is_deactivated: true\n  uncompressed_size: 10\n  dependencies:\n    - { component_name: boot, min_version: "1.0" }\n`;
const VALID_ACTION = `${ACTION_HEAD}    - name: canary\n      trigger_on: { after_minutes: 60 }\n      info: { percent: 1 }\n    - name: wave-1\n`;

function billionLaughs(): string {
  const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  const names = 'abcdefghi';
  for (let i = 1; i < names.length; i++) lines.push(`${names[i]}: &${names[i]} [${Array(9).fill(`*${names[i - 1]}`).join(',')}]`);
  return lines.join('\n') + '\n';
}

function aliasBombInSpec(): string {
  const lines = ['    - name: boom', '      info:', '        l0: &l0 [x, x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 8; i++) lines.push(`        l${i}: &l${i} [${Array(10).fill(`*l${i - 1}`).join(', ')}]`);
  return ACTION_HEAD + lines.join('\n') + '\n';
}

function garbage(seed: number, bytes: number): string {
  const rng = mulberry32(seed);
  const buf = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) buf[i] = Math.floor(rng() * 256);
  return buf.toString('utf8');
}

interface Hostile { name: string; text: string; expect: RegExp; line?: number }

const HOSTILE: Hostile[] = [
  { name: 'billion laughs', text: billionLaughs(), expect: /too many YAML aliases/ },
  { name: 'an alias bomb inside phase info', text: aliasBombInSpec(), expect: /too many YAML aliases/ },
  { name: 'a self-referencing alias', text: 'a: &a [*a]\n', expect: /.+/ },
  { name: '10,000 nested flow sequences', text: '['.repeat(10_000) + ']'.repeat(10_000), expect: /nested too deeply/, line: 1 },
  { name: '10,000 nested flow mappings in phase info', text: `${ACTION_HEAD}    - name: x\n      info: ${'{a: '.repeat(10_000)}1${'}'.repeat(10_000)}\n`, expect: /nested too deeply/, line: 8 },
  { name: '10,000 nested JSON objects', text: '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000), expect: /nested too deeply/, line: 1 },
  { name: 'a 10 MB file', text: `${FW_HEAD}  description: "${'x'.repeat(10 * 1024 * 1024)}"\n`, expect: /larger than 5 MiB/, line: 1 },
  { name: 'binary garbage', text: garbage(1, 4096), expect: /not UTF-8|binary/, line: 1 },
  { name: 'NUL bytes in otherwise valid YAML', text: VALID_FW.replace('boot', 'bo\u0000ot'), expect: /not UTF-8|binary/ },
  { name: 'tabs as indentation', text: `${FW_HEAD}\tis_deactivated: true\n`, expect: /tab/i, line: 6 },
  { name: 'a BOM, then an error on line 6', text: `\uFEFF${FW_HEAD}  uncompressed_size: -1\n`, expect: /0 or more/, line: 6 },
  { name: 'CRLF, then an error on line 6', text: `${FW_HEAD}  uncompressed_size: -1\n`.replace(/\n/g, '\r\n'), expect: /0 or more/, line: 6 },
  { name: '__proto__ in phase info', text: `${ACTION_HEAD}    - name: x\n      info: { __proto__: { polluted: true } }\n`, expect: /"__proto__" is not allowed/, line: 8 },
  { name: 'a quoted "__proto__" in block style', text: `${ACTION_HEAD}    - name: x\n      trigger_on:\n        "__proto__":\n          polluted: true\n`, expect: /"__proto__" is not allowed/, line: 9 },
  { name: '__proto__ at the top of a document', text: `__proto__: { polluted: true }\n${VALID_FW}`, expect: /"__proto__" is not allowed/, line: 1 },
  { name: '__proto__ in metadata.labels', text: VALID_FW.replace('metadata: { tenant: acme }', 'metadata: { tenant: acme, labels: { __proto__: { isAdmin: "yes" } } }'), expect: /"__proto__" is not allowed/, line: 3 },
  { name: 'constructor.prototype in phase info', text: `${ACTION_HEAD}    - name: x\n      info: { constructor: { prototype: { polluted: true } } }\n`, expect: /"constructor" is not allowed/, line: 8 },
  { name: '__proto__ in a dependency', text: `${FW_HEAD}  dependencies:\n    - { component_name: a, min_version: "1", __proto__: { x: 1 } }\n`, expect: /"__proto__" is not allowed/, line: 7 },
  { name: 'an action id above 2^53', text: 'apiVersion: dus-sync/v1\nkind: Action\nmetadata: {}\nspec:\n  id: 9007199254740993\n  phases: []\n', expect: /2\^53/, line: 5 },
  { name: 'a size above 2^53', text: `${FW_HEAD}  uncompressed_size: 9007199254740993\n`, expect: /uncompressed_size/, line: 6 },
  { name: 'a size with 400 digits', text: `${FW_HEAD}  uncompressed_size: 1${'0'.repeat(400)}\n`, expect: /uncompressed_size/, line: 6 },
  { name: 'a negative size', text: `${FW_HEAD}  uncompressed_size: -5\n`, expect: /0 or more/, line: 6 },
  { name: 'a size of .nan', text: `${FW_HEAD}  uncompressed_size: .nan\n`, expect: /integer|not a finite number/, line: 6 },
  { name: 'a size of -.inf', text: `${FW_HEAD}  uncompressed_size: -.inf\n`, expect: /integer|0 or more|not a finite number/, line: 6 },
  { name: 'a phase name that is a number', text: `${ACTION_HEAD}    - name: 1\n`, expect: /name/, line: 7 },
  { name: 'a phase name that is null', text: `${ACTION_HEAD}    - name: null\n`, expect: /name/, line: 7 },
  { name: 'a phase name that is a list', text: `${ACTION_HEAD}    - name: [a, b]\n`, expect: /name/, line: 7 },
  { name: 'a phase name that is a mapping', text: `${ACTION_HEAD}    - name: { a: 1 }\n`, expect: /name/, line: 7 },
  { name: 'a phase name that is a boolean', text: `${ACTION_HEAD}    - name: yes\n      info: {}\n    - name: true\n`, expect: /name/, line: 9 },
  { name: 'a binary tag where a string belongs', text: 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec:\n  version_number: !!binary aGVsbG8=\n', expect: /version_number/, line: 5 },
  { name: 'a merge key', text: `${ACTION_HEAD}    - <<: { name: x }\n      name: y\n`, expect: /.+/, line: 7 },
  { name: 'an unquoted float version number', text: 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec:\n  version_number: 1.10\n', expect: /quote/, line: 5 },
  { name: 'an unterminated flow mapping', text: `${FW_HEAD}  dependencies: [ { component_name: a\n`, expect: /syntax/ },
  { name: 'a document that is a bare string', text: 'just words\n', expect: /mapping/, line: 1 },
  { name: 'a document that is a list', text: '- apiVersion: dus-sync/v1\n', expect: /mapping/, line: 1 },
];

describe('hand-made hostile inputs', () => {
  it.each(HOSTILE.map((h) => [h.name, h] as const))('%s: a clean issue, in time', (_name, h) => {
    const parsed = check(h.text);
    expect(parsed.issues.length, 'at least one issue').toBeGreaterThan(0);
    expect(messages(parsed)).toMatch(h.expect);
    if (h.line !== undefined) expect(parsed.issues.map((i) => i.line)).toContain(h.line);
    expect(parsed.documents.every((d) => d.object === undefined)).toBe(true);
    expectUnpolluted();
  });

  it('a BOM and CRLF line ends on a valid file are harmless: the objects load, positions count from line 1', () => {
    for (const text of [`\uFEFF${VALID_FW}`, VALID_FW.replace(/\n/g, '\r\n'), `\uFEFF${VALID_ACTION.replace(/\n/g, '\r\n')}`]) {
      const result = loadDocuments([{ path: 'ok.yaml', text }], config);
      expect(result.issues).toEqual([]);
      const objects = [...result.desired.firmwares, ...result.desired.actions];
      expect(objects).toHaveLength(1);
      expect(objects[0]!.source.line).toBe(1);
    }
    const fw = loadDocuments([{ path: 'ok.yaml', text: `\uFEFF${VALID_FW.replace(/\n/g, '\r\n')}` }], config).desired.firmwares[0]!;
    expect(fw.spec.version_number).toBe('1.0.0');
    expect(fw.spec.dependencies).toEqual([{ component_name: 'boot', min_version: '1.0' }]);
  });

  it('an unknown tag is read as the plain value it tags (as YAML says), with no crash', () => {
    const result = loadDocuments([{ path: 't.yaml', text: `apiVersion: !evil dus-sync/v1\nkind: !!str Firmware\nmetadata: {}\nspec: { version_number: !x "1" }\n` }], config);
    check(`apiVersion: !evil dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec: { version_number: !x "1" }\n`);
    expect(result.issues).toEqual([]);
    expect(result.desired.firmwares.map((f) => f.spec.version_number)).toEqual(['1']);
  });

  it('empty, comment-only and marker-only files are clean (no objects, no crash)', () => {
    for (const text of ['', '\n', '# nothing\n', '---\n', '---\n---\n...\n', '\uFEFF', '\r\n\r\n']) {
      const parsed = check(text);
      expect(parsed.documents.filter((d) => d.object)).toEqual([]);
    }
  });
});

// ---------------------------------------------------------------- random input

const YAML_CHARS = [...'abcz019 -:_.,#&*!|>\'"%@`{}[]?\n\n\n\t\r\\/~=<+$', '__proto__', 'constructor', 'apiVersion', 'dus-sync/v1',
  'kind', 'Firmware', 'Action', 'spec', 'metadata', 'phases', 'name', 'version_number', '---', '  ', '    ', '<<', '!!binary', '\uFEFF', 'ü', '\u2028'];

/** Edits that keep most of a valid document and break a little of it. */
const mutation = fc.oneof(
  fc.record({ op: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 20 }) }),
  fc.record({ op: fc.constant('insert' as const), at: fc.nat(), text: fc.string({ unit: fc.constantFrom(...YAML_CHARS), maxLength: 6 }) }),
  fc.record({ op: fc.constant('duplicate-line' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('swap-lines' as const), at: fc.nat(), with: fc.nat() }),
  fc.record({ op: fc.constant('indent' as const), at: fc.nat(), by: fc.integer({ min: -4, max: 4 }) }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function mutate(text: string, m: Mutation): string {
  const lines = text.split('\n');
  const li = (n: number) => n % Math.max(lines.length, 1);
  switch (m.op) {
    case 'delete': { const at = m.at % (text.length + 1); return text.slice(0, at) + text.slice(at + m.len); }
    case 'insert': { const at = m.at % (text.length + 1); return text.slice(0, at) + m.text + text.slice(at); }
    case 'duplicate-line': { const i = li(m.at); lines.splice(i, 0, lines[i] ?? ''); return lines.join('\n'); }
    case 'swap-lines': { const a = li(m.at); const b = li(m.with); [lines[a], lines[b]] = [lines[b]!, lines[a]!]; return lines.join('\n'); }
    case 'indent': { const i = li(m.at); const l = lines[i] ?? ''; lines[i] = m.by >= 0 ? ' '.repeat(m.by) + l : l.replace(new RegExp(`^ {0,${-m.by}}`), ''); return lines.join('\n'); }
  }
}

const RUNS = 250;

describe('random and mutated input (fast-check)', () => {
  it('arbitrary text: clean issues, in time', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => { check(text); }), { numRuns: RUNS, seed: 7 });
  });

  it('text from YAML\'s own alphabet and the loader\'s keywords: clean issues, in time', () => {
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom(...YAML_CHARS), maxLength: 200 }), (text) => { check(text); }), { numRuns: RUNS, seed: 8 });
  });

  it('random bytes read as UTF-8 or Latin-1: clean issues, in time', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), fc.boolean(), (bytes, utf8) => {
      check(Buffer.from(bytes).toString(utf8 ? 'utf8' : 'latin1'));
    }), { numRuns: RUNS, seed: 9 });
  });

  it('arbitrary JSON values, as JSON and as YAML, in place of a whole document or of its spec: clean issues, in time', () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 6 }), fc.constantFrom('json', 'yaml', 'spec', 'info'), (value, how) => {
      const text = how === 'json' ? JSON.stringify(value)
        : how === 'yaml' ? stringify(value)
        : how === 'spec' ? `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: {}\nspec: ${JSON.stringify(value)}\n`
        : `${ACTION_HEAD}    - name: x\n      info: ${JSON.stringify(value)}\n`;
      check(text);
    }), { numRuns: RUNS, seed: 10 });
    expectUnpolluted();
  });

  it('valid documents with up to five random edits: clean issues, in time, and an unedited file still loads', () => {
    const base = `${VALID_FW}---\n${VALID_ACTION}`;
    expect(loadDocuments([{ path: 'b.yaml', text: base }], config).issues).toEqual([]);
    let fast = 0;
    fc.assert(fc.property(fc.array(mutation, { minLength: 1, maxLength: 5 }), fc.boolean(), (edits, crlf) => {
      let text = edits.reduce(mutate, base);
      if (crlf) text = text.replace(/\n/g, '\r\n');
      check(text);
      if (expectPathsAgree(text)) fast++;
    }), { numRuns: RUNS * 2, seed: 11 });
    if (process.env.DUS_SYNC_TEST_DEBUG) process.stderr.write(`fast path answered ${fast} of ${RUNS * 2}\n`);
    expectUnpolluted();
  });

  it('layout-only edits of a valid file (comments, blank lines, spaces, markers): the fast path, when it answers, agrees with the yaml path', () => {
    const base = `${VALID_FW}---\n${VALID_ACTION}`;
    const benign = fc.record({
      line: fc.nat(),
      text: fc.constantFrom('# c', '#', '   # spaced', '\t# tab comment', '', '   ', '---', '...', '# __proto__: x', "# '\"&*!|>"),
      where: fc.constantFrom('before' as const, 'after' as const, 'end' as const),
    });
    let fast = 0;
    fc.assert(fc.property(fc.array(benign, { minLength: 1, maxLength: 6 }), fc.boolean(), fc.boolean(), (edits, crlf, bom) => {
      const lines = base.split('\n');
      for (const e of edits) {
        const i = e.line % lines.length;
        if (e.where === 'end') lines[i] = `${lines[i]!}${e.text.startsWith('#') ? ` ${e.text}` : e.text.trim() === '' ? e.text : ''}`;
        else lines.splice(e.where === 'before' ? i : i + 1, 0, e.text);
      }
      let text = lines.join('\n');
      if (crlf) text = text.replace(/\n/g, '\r\n');
      if (bom) text = `\uFEFF${text}`;
      check(text);
      if (expectPathsAgree(text)) fast++;
    }), { numRuns: RUNS, seed: 13 });
    expect(fast, 'the fast path answered some of them').toBeGreaterThan(0);
  });

  it('objects with hostile keys anywhere, as JSON: refused, and Object.prototype untouched', () => {
    const hostileKey = fc.constantFrom('__proto__', 'constructor', 'prototype');
    fc.assert(fc.property(hostileKey, fc.constantFrom('top', 'metadata', 'labels', 'spec', 'info', 'trigger_on'), (key, where) => {
      const evil = `{ "${key}": { "polluted": true, "isAdmin": true } }`;
      const text = where === 'top' ? `${key}: { polluted: true }\n${VALID_FW}`
        : where === 'metadata' ? VALID_FW.replace('metadata: { tenant: acme }', `metadata: { tenant: acme, "${key}": ${evil} }`)
        : where === 'labels' ? VALID_FW.replace('metadata: { tenant: acme }', `metadata: { tenant: acme, labels: ${evil} }`)
        : where === 'spec' ? `${FW_HEAD}  "${key}": ${evil}\n`
        : `${ACTION_HEAD}    - name: x\n      ${where}: ${evil}\n`;
      const parsed = check(text);
      expect(fastParseFile({ path: 'input.yaml', text }, 'input.yaml', config), 'the fast path steps aside').toBeUndefined();
      expect(messages(parsed)).toMatch(new RegExp(`"${key}" is not allowed`));
      expect(parsed.documents.every((d) => d.object === undefined)).toBe(true);
      expectUnpolluted();
    }), { numRuns: 60, seed: 12 });
  });
});

// ---------------------------------------------------------------- through the CLI

const CONFIG = 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n';

describe('validate, as a user runs it', () => {
  it('names both an alias-bomb file and a __proto__ file in a clean error within seconds, exit 1, no stack trace', async () => {
    const dir = writeTree({
      'dus-sync.yaml': CONFIG,
      'tenants/bomb.yaml': aliasBombInSpec(),
      'tenants/laughs.yaml': billionLaughs(),
      'tenants/proto.yaml': `${ACTION_HEAD}    - name: x\n      info:\n        __proto__: { polluted: true }\n`,
      'tenants/ok.yaml': VALID_FW,
    });
    for (const format of ['text', 'json', 'github']) {
      const started = Date.now();
      const r = await runCli(['validate', '--format', format], { cwd: dir, timeoutMs: 15_000 });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      const out = r.stdout + r.stderr;
      expect(out).toMatch(/tenants\/bomb\.yaml.*(\n|.)*too many YAML aliases|too many YAML aliases(\n|.)*tenants\/bomb\.yaml/);
      expect(out).toContain('tenants/laughs.yaml');
      const protoAt = { text: /tenants\/proto\.yaml:9:9: /, github: /file=tenants\/proto\.yaml,line=9,col=9::/ }[format];
      if (protoAt) expect(out).toMatch(protoAt);
      else expect(JSON.parse(r.stdout)).toContainEqual(expect.objectContaining({ file: 'tenants/proto.yaml', line: 9 }));
      expect(out).toMatch(/\\?"__proto__\\?" is not allowed/);
      expect(out).not.toContain('tenants/ok.yaml');
      expect(out).not.toMatch(STACK);
      expect(r.stderr).not.toMatch(/\(node:\d+\)|Warning:/);
      if (format === 'json') expect(() => JSON.parse(r.stdout) as unknown).not.toThrow();
    }
  });

  it('refuses a 10 MB file and a binary file by name without reading them as YAML, exit 1', async () => {
    const dir = writeTree({ 'dus-sync.yaml': CONFIG, 'tenants/ok.yaml': VALID_FW });
    mkdirSync(join(dir, 'tenants'), { recursive: true });
    writeFileSync(join(dir, 'tenants/huge.yaml'), `${FW_HEAD}  x: "${'x'.repeat(10 * 1024 * 1024)}"\n`);
    writeFileSync(join(dir, 'tenants/firmware.bin.yaml'), Buffer.from(garbage(3, 2048), 'latin1'));
    const started = Date.now();
    const r = await runCli(['validate'], { cwd: dir, timeoutMs: 15_000 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/tenants\/huge\.yaml:1:1: the file is .*larger than the 5 MiB limit/);
    expect(r.stdout + r.stderr).toMatch(/tenants\/firmware\.bin\.yaml:1:1: .*(not UTF-8|binary)/);
    expect(r.stdout + r.stderr).not.toMatch(STACK);
  });

  it('a mapping used as a key is an issue on the list, with no Node warning on standard error', async () => {
    const dir = writeTree({ 'dus-sync.yaml': CONFIG, 'tenants/key.yaml': `${FW_HEAD}  ? [a, b]\n  : x\n  ? { c: d }\n  : y\n` });
    const r = await runCli(['validate'], { cwd: dir, timeoutMs: 15_000 });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/tenants\/key\.yaml:\d+:\d+: /);
    expect(r.stderr).not.toMatch(/\(node:\d+\)|Warning:|trace-warnings/);
  });

  it('a hostile dus-sync.yaml (alias bomb, __proto__, 10,000 levels) is one clean error naming it, exit 1', async () => {
    const cases: [string, RegExp][] = [
      [`${CONFIG}${billionLaughs()}`, /aliases/],
      [`${CONFIG}__proto__: { polluted: true }\n`, /"__proto__" is not allowed/],
      [`${CONFIG}x: ${'['.repeat(10_000)}${']'.repeat(10_000)}\n`, /nested too deeply/],
    ];
    for (const [text, message] of cases) {
      const dir = writeTree({ 'dus-sync.yaml': text, 'tenants/ok.yaml': VALID_FW });
      const r = await runCli(['validate'], { cwd: dir, timeoutMs: 15_000 });
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout + r.stderr).toMatch(/dus-sync\.yaml/);
      expect(r.stdout + r.stderr).toMatch(message);
      expect(r.stdout + r.stderr).not.toMatch(STACK);
    }
  });
});
