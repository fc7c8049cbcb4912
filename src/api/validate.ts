// Response validation against schemas/api.schema.json: the functions come from
// ./response-validators.ts (precompiled in dist/, compiled on first use in the tests).
import { responseValidator } from './response-validators.js';
import type { ResponseShape } from './response-ajv.js';

export type { ResponseShape } from './response-ajv.js';

const compiled = new Map<ResponseShape, ReturnType<typeof responseValidator>>();

function validator(shape: ResponseShape): ReturnType<typeof responseValidator> {
  let fn = compiled.get(shape);
  if (!fn) compiled.set(shape, fn = responseValidator(shape));
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
