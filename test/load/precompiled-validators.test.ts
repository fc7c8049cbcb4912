// dist/ checks documents with Ajv standalone code generated at build time (scripts/build.mjs,
// src/load/document-ajv.ts); the tests and the old CLI compile the schemas with Ajv at run time.
// Both must give the same answer and the same error objects, parentSchema and schema (verbose)
// included, since the did-you-mean and placement hints read them. The module is generated and
// bundled here the way the build does it, from the schemas of this checkout.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileDocumentValidator, DOCUMENT_SCHEMAS, precompiledValidatorsModule, type DocumentSchemaName, type DocumentValidator } from '../../src/load/document-ajv.js';
import { readSchemaFile } from '../../src/schemas.js';

const REPO = join(import.meta.dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'dus-precompiled-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

type Schemas = Record<DocumentSchemaName, Record<string, unknown>>;
type Module = { precompiledValidator(name: DocumentSchemaName): DocumentValidator };

/** The generated module, bundled as the build bundles it (its require() calls resolved from node_modules). */
async function precompiled(schemas: Schemas): Promise<Module> {
  const out = await build({
    stdin: { contents: precompiledValidatorsModule(schemas), resolveDir: join(REPO, 'src', 'load'), sourcefile: 'validators.js', loader: 'js' },
    bundle: true, write: false, format: 'esm', platform: 'node', target: 'node20.19', logLevel: 'silent',
  });
  const file = join(work, `validators-${readdirSync(work).length}.mjs`);
  writeFileSync(file, out.outputFiles[0]!.text);
  return (await import(/* @vite-ignore */ pathToFileURL(file).href)) as Module;
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}

/** Every document of the examples and the loader's fixtures that parses, by the schema it is checked against. */
function documents(): Array<{ source: string; schema: DocumentSchemaName; value: unknown }> {
  const out: Array<{ source: string; schema: DocumentSchemaName; value: unknown }> = [];
  for (const file of [...yamlFiles(join(REPO, 'examples', 'tenants')), join(REPO, 'examples', 'dus-sync.yaml'), ...yamlFiles(join(REPO, 'test', 'fixtures', 'load'))]) {
    let docs;
    try {
      docs = parseAllDocuments(readFileSync(file, 'utf8'));
    } catch {
      continue;
    }
    if (!Array.isArray(docs)) continue;
    docs.forEach((doc, i) => {
      if (doc.errors.length > 0) return;
      let value: unknown;
      try {
        value = doc.toJS({ maxAliasCount: 10 });
      } catch {
        return;
      }
      const schema = /(^|\/)dus-sync\.yaml$/.test(file) ? 'config' : 'resource';
      out.push({ source: `${file.slice(REPO.length + 1)}#${i}`, schema, value });
    });
  }
  return out;
}

/** Each document changed in one place at a time: a field removed, of another type, empty, misspelt, beside an unknown one. */
function mutations(value: unknown): Array<{ what: string; value: unknown }> {
  const out: Array<{ what: string; value: unknown }> = [];
  const walk = (node: unknown, path: string[], replace: (v: unknown) => unknown): void => {
    const at = path.join('.') || '(root)';
    for (const [what, v] of [['null', null], ['number', 7.5], ['negative', -1], ['string', 'x'], ['empty string', ''], ['list', []], ['mapping', {}], ['boolean', true]] as const) {
      out.push({ what: `${at} := ${what}`, value: replace(v) });
    }
    if (Array.isArray(node)) {
      node.forEach((item, i) => walk(item, [...path, String(i)], (v) => replace(node.map((x, j) => (j === i ? v : x)))));
      out.push({ what: `${at} += duplicate`, value: replace([...node, ...node]) });
    } else if (node !== null && typeof node === 'object') {
      const obj = node as Record<string, unknown>;
      for (const key of Object.keys(obj)) {
        const { [key]: removed, ...rest } = obj;
        out.push({ what: `${at} -= ${key}`, value: replace(rest) });
        out.push({ what: `${at}: ${key} misspelt`, value: replace({ ...rest, [`${key.slice(0, -1)}`]: removed }) });
        walk(removed, [...path, key], (v) => replace({ ...obj, [key]: v }));
      }
      out.push({ what: `${at} += unknown`, value: replace({ ...obj, nmae: 'x' }) });
    }
  };
  walk(value, [], (v) => v);
  return out;
}

/** What a validation says: the verdict and the errors, as plain data (schema objects compared by value). */
function outcome(validate: DocumentValidator, value: unknown): unknown {
  const valid = validate(value);
  return { valid, errors: structuredClone(validate.errors ?? null) };
}

const schemas: Schemas = { resource: readSchemaFile('resource'), config: readSchemaFile('config') };
let generated: Module;
beforeAll(async () => { generated = await precompiled(schemas); }, 60_000);

describe('the precompiled validators of dist/ and a runtime-compiled Ajv', () => {
  const docs = documents();

  it('see the examples and the fixtures (both schemas, valid and invalid documents)', () => {
    expect(docs.filter((d) => d.schema === 'config').length).toBeGreaterThan(10);
    expect(docs.filter((d) => d.schema === 'resource').length).toBeGreaterThan(20);
  });

  for (const name of DOCUMENT_SCHEMAS) {
    it(`give the same verdict and errors for every ${name} document and thousands of changed ones`, () => {
      const runtime = compileDocumentValidator(schemas[name]);
      const standalone = generated.precompiledValidator(name);
      let checked = 0;
      let invalid = 0;
      for (const doc of docs.filter((d) => d.schema === name)) {
        for (const m of [{ what: 'as written', value: doc.value }, ...mutations(doc.value)]) {
          const expected = outcome(runtime, m.value);
          expect(outcome(standalone, m.value), `${doc.source}: ${m.what}`).toEqual(expected);
          checked++;
          if (!(expected as { valid: boolean }).valid) invalid++;
        }
      }
      expect(checked).toBeGreaterThan(1000);
      expect(invalid).toBeGreaterThan(checked / 2);
    });
  }

  it('keep the verbose fields the hints read: parentSchema and schema of an unknown field', () => {
    const validate = generated.precompiledValidator('resource');
    expect(validate({ apiVersion: 'dus-sync/v1', kind: 'Firmware', metadata: { tenant: 'acme', tenat: 'x' }, spec: {} })).toBe(false);
    const unknown = validate.errors!.find((e) => e.keyword === 'additionalProperties');
    expect(Object.keys((unknown!.parentSchema as { properties: object }).properties)).toEqual(['tenant', 'labels']);
    expect(unknown!.schema).toBe(false);
  });

  it('check the formats of ajv-formats, should a schema use one', async () => {
    const config = structuredClone(schemas.config) as { properties: Record<string, Record<string, unknown>> };
    config.properties.base_url!.format = 'uri';
    config.properties.default_tenant!.format = 'hostname';
    const withFormats: Schemas = { resource: schemas.resource, config };
    const { precompiledValidator } = await precompiled(withFormats);
    const runtime = compileDocumentValidator(config);
    const standalone = precompiledValidator('config');
    const base = { apiVersion: 'dus-sync/v1', kind: 'Config' };
    for (const extra of [{ base_url: 'https://updates.example.com' }, { base_url: 'https://exa mple.com/%zz' }, { default_tenant: 'acme' }, { default_tenant: '-not a host-' }]) {
      expect(outcome(standalone, { ...base, ...extra })).toEqual(outcome(runtime, { ...base, ...extra }));
    }
    expect(standalone({ ...base, base_url: 'https://exa mple.com/%zz' })).toBe(false);
    expect(standalone.errors![0]!.keyword).toBe('format');
  });
});
