// dist/ checks the API's answers with Ajv standalone code generated at build time
// (scripts/build.mjs, src/api/response-ajv.ts); the tests compile schemas/api.schema.json with
// Ajv at run time. Both must give the same verdict and the same first error, on answers that fit
// and on every way fast-check finds to break one. The module is generated and bundled here the
// way the build does it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileResponseValidators, precompiledResponseValidatorsModule, RESPONSE_SHAPES, type ResponseShape, type ResponseValidator } from '../../src/api/response-ajv.js';
import { readSchemaFile } from '../../src/schemas.js';

const REPO = join(import.meta.dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'dus-precompiled-api-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let precompiled: (shape: ResponseShape) => ResponseValidator;
const compiled = compileResponseValidators(readSchemaFile('api'));

beforeAll(async () => {
  const out = await build({
    stdin: { contents: precompiledResponseValidatorsModule(readSchemaFile('api')), resolveDir: join(REPO, 'src', 'api'), sourcefile: 'response-validators.js', loader: 'js' },
    bundle: true, write: false, format: 'esm', platform: 'node', target: 'node20.19', logLevel: 'silent',
  });
  const file = join(work, 'response-validators.mjs');
  writeFileSync(file, out.outputFiles[0]!.text);
  precompiled = ((await import(/* @vite-ignore */ pathToFileURL(file).href)) as { responseValidator: typeof precompiled }).responseValidator;
});

function same(shape: ResponseShape, value: unknown): void {
  const a = precompiled(shape);
  const b = compiled(shape);
  const va = a(value);
  const vb = b(value);
  expect(va).toBe(vb);
  expect(JSON.parse(JSON.stringify(a.errors ?? null))).toEqual(JSON.parse(JSON.stringify(b.errors ?? null)));
}

const firmware = { version_number: '1.0.0', component_name: 'modem', firmware_id: '11111111-1111-1111-1111-111111111111', is_deactivated: false, uncompressed_size: 10, dependencies: [{ component_name: 'boot', min_version: '1.0' }] };
const bundle = { version: '2024.01', firmwares: [firmware] };
const GOOD: Record<ResponseShape, unknown> = {
  FirmwareBundleList: { count: 1, next: null, previous: null, results: [bundle] },
  FirmwareBundle: bundle,
  Action: { id: 7, tenant_id: 'acme', status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }], phases_triggered: [false] },
};

/** Answers that fit, with one part replaced by something else. */
function mutated(value: unknown): fc.Arbitrary<unknown> {
  const odd = fc.oneof(fc.constant(null), fc.constant(undefined), fc.integer(), fc.string(), fc.boolean(), fc.constant([]), fc.constant({}), fc.double());
  const paths: string[][] = [];
  const walk = (v: unknown, path: string[]) => {
    paths.push(path);
    if (v !== null && typeof v === 'object') for (const [k, c] of Object.entries(v)) walk(c, [...path, k]);
  };
  walk(value, []);
  return fc.tuple(fc.constantFrom(...paths), odd, fc.boolean()).map(([path, replacement, drop]) => {
    const copy = structuredClone(value) as Record<string, unknown>;
    if (path.length === 0) return replacement;
    let at: Record<string, unknown> = copy;
    for (const k of path.slice(0, -1)) at = at[k] as Record<string, unknown>;
    if (drop) delete at[path[path.length - 1]!];
    else at[path[path.length - 1]!] = replacement;
    return copy;
  });
}

describe('precompiled response validators', () => {
  it('accept the answers that fit, as Ajv at run time does', () => {
    for (const shape of RESPONSE_SHAPES) {
      same(shape, GOOD[shape]);
      expect(precompiled(shape)(GOOD[shape])).toBe(true);
    }
  });

  it('give the verdict and the first error Ajv at run time gives, for any one part of an answer changed', () => {
    for (const shape of RESPONSE_SHAPES) {
      fc.assert(fc.property(mutated(GOOD[shape]), (value) => { same(shape, value); }), { numRuns: 400 });
    }
  });
});
