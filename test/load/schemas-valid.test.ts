// The shipped schemas are valid draft-07 schemas. At run time Ajv compiles them without
// checking them against the meta-schema (that check cost a meta-schema compile on every start),
// so the check lives here.
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { readSchemaFile } from '../../src/schemas.js';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

describe('schemas/*.schema.json', () => {
  for (const name of ['resource', 'config', 'api'] as const) {
    it(`${name}.schema.json is a valid draft-07 schema that compiles in strict mode`, () => {
      const ajv = new Ajv({ allErrors: true, strict: name !== 'api' });
      addFormats(ajv);
      const schema = readSchemaFile(name);
      expect(ajv.validateSchema(schema), JSON.stringify(ajv.errors)).toBe(true);
      expect(() => ajv.compile(schema)).not.toThrow();
    });
  }
});
