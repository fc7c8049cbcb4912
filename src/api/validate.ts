// Response validation against schemas/api.schema.json, compiled once on first use.
import { Ajv, type ValidateFunction } from 'ajv';
import { readSchemaFile } from '../schemas.js';

export type ResponseShape = 'FirmwareBundleList' | 'FirmwareBundle' | 'Action';

let ajv: Ajv | undefined;
const compiled = new Map<ResponseShape, ValidateFunction>();

function validator(shape: ResponseShape): ValidateFunction {
  let fn = compiled.get(shape);
  if (!fn) {
    if (!ajv) {
      // The API schema is draft-07 and uses no formats: a server's odd uuid must not fail a read.
      // validateSchema: false: see src/load/schema-check.ts (the schema is checked by a test).
      ajv = new Ajv({ allErrors: false, strict: false, validateSchema: false });
      ajv.addSchema(readSchemaFile('api'));
    }
    const schema = readSchemaFile('api');
    fn = ajv.getSchema(`${String(schema.$id)}#/definitions/${shape}`);
    if (!fn) throw new Error(`schemas/api.schema.json has no definition ${shape}`);
    compiled.set(shape, fn);
  }
  return fn;
}

/** undefined when the value fits; otherwise the first bad field in words. */
export function firstProblem(shape: ResponseShape, value: unknown): string | undefined {
  const fn = validator(shape);
  if (fn(value)) return undefined;
  const err = fn.errors?.[0];
  if (!err) return 'does not match the schema';
  const where = err.instancePath === '' ? 'the body' : err.instancePath.slice(1);
  let what = err.message ?? 'is invalid';
  if (err.keyword === 'required') {
    const missing = (err.params as { missingProperty?: string }).missingProperty;
    return `${where === 'the body' ? '' : `${where}/`}${missing ?? '?'} is missing`;
  }
  if (err.keyword === 'type' && Array.isArray((err.params as { type?: unknown }).type)) {
    what = `must be ${((err.params as { type: string[] }).type).join(' or ')}`;
  }
  return `${where} ${what}`;
}
