// A clean dus-sync.yaml is read by js-yaml (src/load/config-fast-path.ts): it must give exactly
// what the yaml path gives, resolved config and issues alike, or step aside.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { configText } from '../../src/cli/init.js';
import * as fastPath from '../../src/load/config-fast-path.js';
import { resolveConfig } from '../../src/load/config.js';
import { MAX_ALIAS_COUNT, MAX_FILE_BYTES, parseYamlSource } from '../../src/load/yaml-source.js';
import { hasOverlongLine } from '../../src/load/fast-path.js';

// The real function, switched off (undefined: take the yaml path) where a test compares.
vi.mock('../../src/load/config-fast-path.js', async (original) => {
  const real = await original<typeof fastPath>();
  return { ...real, cleanConfigValue: vi.fn(real.cleanConfigValue) };
});
const real = (await vi.importActual<typeof fastPath>('../../src/load/config-fast-path.js')).cleanConfigValue;
const spy = vi.mocked(fastPath.cleanConfigValue);
beforeEach(() => { spy.mockImplementation(real); });

const tmp = mkdtempSync(join(tmpdir(), 'dus-config-fast-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

function configFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? configFiles(p) : name === 'dus-sync.yaml' ? [p] : [];
  });
}

/** What the yaml path makes of the text: the value of its one document, or undefined. */
function yamlValue(text: string): unknown {
  const src = parseYamlSource('x.yaml', text);
  if (src.issues.length > 0 || src.documents.length !== 1) return undefined;
  return src.documents[0]!.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
}

function folderWith(text: string): string {
  const dir = join(tmp, String(n++));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'dus-sync.yaml'), text);
  return dir;
}

/** resolveConfig of the config in the folder: the config, or the issues it throws. */
async function resolved(dir: string, fast: boolean): Promise<{ fastTaken: boolean; outcome: unknown }> {
  spy.mockClear();
  if (!fast) spy.mockImplementation(() => undefined);
  const outcome = await resolveConfig({ cwd: dir, env: {} }).then(
    (c) => c,
    (e: unknown) => ({ error: String(e), issues: (e as { issues?: unknown }).issues }),
  );
  spy.mockImplementation(real);
  // Taken: js-yaml's value was used and no issue sent the read down the yaml path.
  return { fastTaken: spy.mock.results.some((r) => r.value !== undefined) && !('error' in outcome), outcome };
}

/** Both ways give the same; true when the fast path resolved it. */
async function agree(text: string, label: string): Promise<boolean> {
  const dir = folderWith(text);
  const fast = await resolved(dir, true);
  const slow = await resolved(dir, false);
  expect(fast.outcome, label).toEqual(slow.outcome);
  return fast.fastTaken;
}

const BASE = 'apiVersion: dus-sync/v1\nkind: Config\n';

describe('the fast path of dus-sync.yaml', () => {
  it('gives the yaml path\'s value for the example, every fixture and what init writes, and takes the example', () => {
    const texts = [...configFiles('examples'), ...configFiles('test/fixtures/load')].map((f) => [f, readFileSync(f, 'utf8')] as const);
    texts.push(['init', configText({ tenants: ['acme', 'globex'] })], ['init url', configText({ baseUrl: 'https://updates.example.com', tenants: ['acme'] })]);
    for (const [label, text] of texts) {
      const fast = real(text, MAX_FILE_BYTES);
      if (fast !== undefined) expect(fast, label).toEqual(yamlValue(text));
    }
    expect(real(readFileSync('examples/dus-sync.yaml', 'utf8'), MAX_FILE_BYTES)).toBeDefined();
  });

  it('resolves the example, the fixtures and what init writes as the yaml path does', async () => {
    let taken = 0;
    for (const f of [...configFiles('examples'), ...configFiles('test/fixtures/load')]) if (await agree(readFileSync(f, 'utf8'), f)) taken++;
    if (await agree(configText({ tenants: ['acme', 'globex'] }), 'init')) taken++;
    expect(taken).toBeGreaterThan(5);
  });

  it('steps aside for anchors, tags, merge keys, markers, several documents, prototype keys and big integers', () => {
    for (const text of [
      `${BASE}default_tenant: &t acme\ntenants: { acme: {} }\n`,
      `${BASE}default_tenant: !!str acme\n`,
      `${BASE}safety: { <<: { max_changes: 1 } }\n`,
      `---\n${BASE}`,
      `%YAML 1.2\n---\n${BASE}`,
      `${BASE}...\n`,
      `${BASE}---\n${BASE}`,
      `${BASE}tenants: { __proto__: {} }\n`,
      `${BASE}safety: { max_changes: 9007199254740993 }\n`,
      `${BASE}default_tenant: acme\ndefault_tenant: globex\n`,
      '- a\n- b\n',
      '',
      `${BASE}base_url: "http://x\u0000"\n`,
      // A line longer than yaml lets a key be written, in the middle or last without a line feed.
      `${BASE}tenants:\n  ${'k'.repeat(1025)}: {}\ndefault_tenant: acme\n`,
      `${BASE}default_tenant: ${'a'.repeat(1025)}`,
    ]) expect(real(text, MAX_FILE_BYTES), JSON.stringify(text)).toBeUndefined();
  });

  it('counts a line over 1,024 characters as yaml does, with or without a line feed after it', () => {
    for (const [text, over] of [
      ['x'.repeat(1024), false], ['x'.repeat(1025), true], [`${'x'.repeat(1024)}\n`, false], [`a\n${'x'.repeat(1025)}\nb`, true],
      [`a\n${'x'.repeat(1024)}\r\nb`, true], ['', false], ['\n\n', false],
    ] as const) expect(hasOverlongLine(text), JSON.stringify(text.slice(0, 10))).toBe(over);
  });

  it('gives way on any issue: the yaml path words it, at its line', async () => {
    for (const text of [
      `${BASE}default_tenant: nobody\ntenants:\n  acme: {}\n`,
      `${BASE}tenants:\n  acme: { api_key_env: "not a name" }\n`,
      `${BASE}watch:\n  interval: 0s\n`,
      `${BASE}safety:\n  settle_window: 48h\n`,
      `${BASE}api:\n  request_timeout: 0s\n`,
      `${BASE}windows:\n  - { name: w, kind: deny, duration: 1h, schedule: "not cron" }\n  - { name: w, kind: deny, duration: 0s, schedule: "0 0 * * *", timezone: Mars/Olympus }\n`,
      `${BASE}unknown: 1\n`,
      `${BASE}base_url: https://x/api/v1\n`,
    ]) {
      expect(await agree(text, text)).toBe(false);
      expect(JSON.stringify((await resolved(folderWith(text), true)).outcome)).toContain('"line":');
    }
  });

  it('keeps the positions of window tenants (parsed by yaml when asked for)', async () => {
    const text = `${BASE}default_tenant: acme\ntenants:\n  acme: {}\n  globex: {}\nwindows:\n  - name: night\n    kind: allow\n    schedule: "0 22 * * 1-5"\n    duration: 8h\n    tenants: [acme, globex]\n`;
    expect(await agree(text, 'windows')).toBe(true);
    const { outcome } = await resolved(folderWith(text), true);
    expect((outcome as { windows: Array<{ tenantsAt: Array<{ line: number; column: number }> }> }).windows[0]!.tenantsAt.map((p) => [p.line, p.column])).toEqual([[12, 15], [12, 21]]);
  });

  it('resolves generated configs as the yaml path does (property)', async () => {
    const str = (s: string) => fc.constantFrom(s, `"${s}"`, `'${s}'`);
    const section = fc.oneof(
      fc.constantFrom('', '# a comment\n', '\n'),
      str('https://updates.example.com').map((u) => `base_url: ${u}\n`),
      fc.constantFrom('http://127.0.0.1:8080', 'https://h/x/api/v1/', 'ftp://x').map((u) => `base_url: ${u}\n`),
      fc.constantFrom('acme', '"globex"', 'nobody', "''", '&t acme', '!!str acme').map((t) => `default_tenant: ${t}\n`),
      fc.constantFrom(
        'tenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n  globex: {}\n',
        'tenants: { acme: {}, globex: { tenant_id: "7" } }\n',
        'tenants:\n  acme:\n    api_key_file: /run/secrets/acme   # a file\n',
        'tenants:\n  acme: { api_key_env: lower-case }\n',
        'tenants:\n  acme: { tenant_id: 7 }\n',
      ),
      fc.constantFrom('resources: ["tenants/**/*.yaml"]\n', 'resources:\n  - a/*.yaml\n  - "!b/**"\n', 'resources: []\n'),
      fc.tuple(fc.constantFrom('50', '0', '-1', '5e1', '0x1F', '0o17', '1.5', '"3"', '~', '9007199254740991', '9007199254740993'), fc.constantFrom('max_changes', 'max_deactivations'))
        .map(([v, k]) => `safety:\n  ${k}: ${v}\n`),
      fc.constantFrom('30s', '5m', '0s', '"1h"', '1d', '25h').map((v) => `watch:\n  interval: ${v}\n  log_format: json\n`),
      fc.constantFrom('true', 'false', 'True', 'FALSE', 'yes', 'null').map((v) => `suspend: ${v}\n`),
      fc.constantFrom('"32MiB"', '32 MiB', '1b', '0', "'10m'").map((v) => `api:\n  max_response_size: ${v}\n  fetch_timeout: 10m\n`),
      fc.constantFrom(
        'windows:\n  - { name: a, kind: deny, schedule: "0 0 * * *", duration: 1h, timezone: Europe/Berlin }\n',
        'windows:\n  - name: b\n    kind: allow\n    schedule: 0 22 * * 1-5\n    duration: 8h\n    tenants: [acme]\n    kinds: [Firmware]\n',
        'windows:\n  - name: c\n    kind: allow\n    schedule: >-\n      0 22\n      * * *\n    duration: 2h\n',
        'windows:\n  - { name: d, kind: deny, schedule: "0 0 30 2 *", duration: 1h }\n',
      ),
    );
    let taken = 0;
    await fc.assert(fc.asyncProperty(fc.uniqueArray(section, { maxLength: 6, selector: (s) => s.split(':')[0] }), fc.boolean(), fc.boolean(), async (sections, crlf, bom) => {
      let text = `${BASE}${sections.join('')}`;
      if (crlf) text = text.replace(/\n/g, '\r\n');
      if (bom) text = `\uFEFF${text}`;
      const fast = real(text, MAX_FILE_BYTES);
      if (fast !== undefined) expect(fast).toEqual(yamlValue(text));
      if (await agree(text, JSON.stringify(text))) taken++;
    }), { numRuns: 150 });
    expect(taken).toBeGreaterThan(10);
  });
});
