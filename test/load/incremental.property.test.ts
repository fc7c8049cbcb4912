// watch's incremental assemble (src/load/incremental.ts) against assemble(): after every step of
// a random sequence of file edits (documents added, removed, moved between files, declared
// twice, invalid; files appearing, disappearing, renamed, saved unchanged), assembleFrom must
// give exactly what assemble gives for the same files: the same desired state in the same order
// (the same objects), the same issues in the same order, the same tenants.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { assemble, parseFile, type LoadFilter, type ParsedFile } from '../../src/load/index.js';
import { assembleFrom, type Assembly } from '../../src/load/incremental.js';
import type { ResolvedConfig, SyncWindow } from '../../src/model/index.js';
import { tenantsOf } from '../../src/agent/reconcile.js';

const PATHS = ['a.yaml', 'b.yaml', 'c/d.yaml', 'c/e.yml', 'f.yaml', 'z.yaml'];
const TENANTS = ['acme', 'beta', 'gamma'];
// Enough versions that a repository is often valid, few enough that duplicates come up.
const VERSIONS = Array.from({ length: 30 }, (_, i) => `${i % 11}.${i % 3}.0`).filter((v, i, all) => all.indexOf(v) === i);

type Doc =
  | { t: 'fw'; tenant: string | undefined; version: string; size: number; team?: string }
  | { t: 'act'; tenant: string | undefined; id: number; phases: number; team?: string }
  | { t: 'bad'; which: number };

const team = fc.option(fc.constantFrom('a', 'b'), { nil: undefined });
// Mostly a tenant the config lists; now and then one it does not, or none (the default tenant's, if any).
const tenant = fc.oneof(
  { weight: 30, arbitrary: fc.constantFrom<string | undefined>(...TENANTS) },
  { weight: 1, arbitrary: fc.constant<string | undefined>('zeta') },
  { weight: 1, arbitrary: fc.constant<string | undefined>(undefined) },
);
const doc: fc.Arbitrary<Doc> = fc.oneof(
  { weight: 40, arbitrary: fc.record({ t: fc.constant('fw' as const), tenant, version: fc.constantFrom(...VERSIONS), size: fc.constantFrom(1, 2), team }) },
  { weight: 20, arbitrary: fc.record({ t: fc.constant('act' as const), tenant, id: fc.integer({ min: 1, max: 12 }), phases: fc.integer({ min: 0, max: 2 }), team }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('bad' as const), which: fc.integer({ min: 0, max: 3 }) }) },
);

function text(d: Doc): string {
  const meta = (tenantName: string | undefined, t: string | undefined) => {
    const parts = [...(tenantName !== undefined ? [`tenant: ${tenantName}`] : []), ...(t !== undefined ? [`labels: { team: ${t} }`] : [])];
    return `metadata: { ${parts.join(', ')} }\n`;
  };
  switch (d.t) {
    case 'fw':
      return `apiVersion: dus-sync/v1\nkind: Firmware\n${meta(d.tenant, d.team)}spec: { version_number: "${d.version}", uncompressed_size: ${d.size} }\n`;
    case 'act':
      return `apiVersion: dus-sync/v1\nkind: Action\n${meta(d.tenant, d.team)}spec:\n  id: ${d.id}\n  phases:\n${Array.from({ length: d.phases }, (_, i) => `    - { name: p${i} }\n`).join('')}${d.phases === 0 ? '    []\n' : ''}`;
    case 'bad':
      return [
        'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec: { version_number: "1.0.0", uncompressed_size: "big" }\n', // identity, no object
        'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\n', // no spec
        'just: a mapping\n', // not a dus-sync document
        'apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: beta }\nspec: { id: 2, phases: [{ name: x }], surprise: 1 }\n', // unknown field
      ][d.which]!;
  }
}

const fileText = (docs: readonly Doc[]): string => docs.map(text).join('---\n');

type Step =
  | { s: 'write'; path: string; docs: Doc[] }
  | { s: 'remove'; path: string }
  | { s: 'rename'; from: string; to: string }
  | { s: 'touch'; path: string }
  | { s: 'filter'; filter: number };

const path = fc.constantFrom(...PATHS);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ s: fc.constant('write' as const), path, docs: fc.array(doc, { maxLength: 4 }) }) },
  { weight: 2, arbitrary: fc.record({ s: fc.constant('remove' as const), path }) },
  { weight: 2, arbitrary: fc.record({ s: fc.constant('rename' as const), from: path, to: path }) },
  { weight: 2, arbitrary: fc.record({ s: fc.constant('touch' as const), path }) },
  { weight: 1, arbitrary: fc.record({ s: fc.constant('filter' as const), filter: fc.integer({ min: 0, max: 3 }) }) },
);

const FILTERS: readonly LoadFilter[] = [{}, { tenants: ['acme'] }, { selector: { team: 'a' } }, { tenants: ['beta', 'gamma'], selector: { team: 'b' } }];

function configOf(listTenants: boolean, defaultTenant: string | undefined, windowTenants: readonly string[] | undefined): ResolvedConfig {
  const at = { file: 'dus-sync.yaml', line: 9, column: 5 };
  const windows: SyncWindow[] | undefined = windowTenants === undefined ? undefined
    : [{ name: 'freeze', kind: 'deny', schedule: '0 0 * * *', durationMs: 3_600_000, tenants: windowTenants, tenantsAt: windowTenants.map(() => at) }];
  return {
    dir: '/repo', file: '/repo/dus-sync.yaml',
    tenants: listTenants ? { acme: {}, beta: {}, gamma: {} } : {},
    ...(defaultTenant !== undefined ? { defaultTenant } : {}),
    ...(windows ? { windows } : {}),
    safety: {}, watchIntervalMs: 1000, suspend: false,
  } as unknown as ResolvedConfig;
}

const sorted = (files: Map<string, ParsedFile>): ParsedFile[] => [...files.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

let incremental = 0;
let fallbacks = 0;

function check(files: readonly ParsedFile[], config: ResolvedConfig, filter: LoadFilter, last: Assembly | undefined): Assembly | undefined {
  const got = assembleFrom(files, config, filter, last);
  const want = assemble(files, config, filter);
  if (got.how === 'incremental') incremental++;
  else fallbacks++;
  expect(got.issues).toEqual(want.issues);
  expect(got.desired.files).toEqual(want.desired.files);
  // The same objects, in the same order.
  expect(got.desired.firmwares.length).toBe(want.desired.firmwares.length);
  got.desired.firmwares.forEach((f, i) => expect(f).toBe(want.desired.firmwares[i]));
  expect(got.desired.actions.length).toBe(want.desired.actions.length);
  got.desired.actions.forEach((a, i) => expect(a).toBe(want.desired.actions[i]));
  expect(got.tenants).toEqual(tenantsOf(want.desired));
  expect(got.files.map((f) => f.path)).toEqual(want.desired.files);
  return got.assembly;
}

describe('assembleFrom', () => {
  it('equals assemble after every step of random file edits', () => {
    fc.assert(fc.property(
      fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      fc.option(fc.constantFrom(...TENANTS), { nil: undefined }),
      fc.option(fc.array(fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...TENANTS) }, { weight: 1, arbitrary: fc.constant('zeta') }), { minLength: 1, maxLength: 2 }), { nil: undefined }),
      fc.integer({ min: 0, max: 3 }),
      fc.array(fc.record({ path, docs: fc.array(doc, { maxLength: 4 }) }), { maxLength: 5 }),
      fc.array(step, { minLength: 1, maxLength: 25 }),
      (listTenants, defaultTenant, windowTenants, filterAt, initial, steps) => {
        const config = configOf(listTenants, defaultTenant, windowTenants);
        let filter = FILTERS[filterAt]!;
        const texts = new Map<string, string>();
        const parses = new Map<string, ParsedFile>();
        const put = (p: string, t: string) => { texts.set(p, t); parses.set(p, parseFile({ path: p, text: t }, config)); };
        for (const f of initial) put(f.path, fileText(f.docs));
        let last = check(sorted(parses), config, filter, undefined);
        for (const s of steps) {
          switch (s.s) {
            case 'write': put(s.path, fileText(s.docs)); break;
            case 'remove': texts.delete(s.path); parses.delete(s.path); break;
            case 'rename': {
              const t = texts.get(s.from);
              if (t === undefined || s.from === s.to) break;
              texts.delete(s.from); parses.delete(s.from);
              put(s.to, t);
              break;
            }
            // Saved unchanged: parsed again, a new object with the same content.
            case 'touch': { const t = texts.get(s.path); if (t !== undefined) put(s.path, t); break; }
            case 'filter': filter = FILTERS[s.filter]!; break;
          }
          last = check(sorted(parses), config, filter, last);
        }
      },
    ), { numRuns: 300 });
    // The property is about the incremental path: it must have been taken, and not only fallen back.
    expect(incremental).toBeGreaterThan(500);
    expect(fallbacks).toBeGreaterThan(50);
  });

  it('an edit of one file among many looks at that file only, and a duplicate falls back to assemble', () => {
    const config = configOf(true, 'acme', undefined);
    const parses = new Map<string, ParsedFile>();
    for (let i = 0; i < 50; i++) {
      const p = `f${String(i).padStart(3, '0')}.yaml`;
      parses.set(p, parseFile({ path: p, text: fileText([{ t: 'fw', tenant: 'acme', version: `1.${i}.0`, size: 1 }]) }, config));
    }
    const first = assembleFrom(sorted(parses), config, {}, undefined);
    expect(first.how).toBe('nothing kept');
    parses.set('f007.yaml', parseFile({ path: 'f007.yaml', text: fileText([{ t: 'fw', tenant: 'acme', version: '1.7.0', size: 2 }]) }, config));
    const second = assembleFrom(sorted(parses), config, {}, first.assembly);
    expect(second.how).toBe('incremental');
    expect(second.desired.firmwares.find((f) => f.spec.version_number === '1.7.0')?.spec.uncompressed_size).toBe(2);
    parses.set('f008.yaml', parseFile({ path: 'f008.yaml', text: fileText([{ t: 'fw', tenant: 'acme', version: '1.7.0', size: 2 }]) }, config));
    const third = assembleFrom(sorted(parses), config, {}, second.assembly);
    expect(third.how).toBe('an identity is declared twice');
    expect(third.issues.map((i) => i.message)).toEqual([expect.stringMatching(/firmware "1\.7\.0" of tenant "acme" is defined twice; the first definition is at \S*f007\.yaml:4; keep one$/) as string]);
    expect(third.assembly).toBeUndefined();
  });
});
