// The one Ajv setup of the API's answers (schemas/api.schema.json), in two forms with the same
// options, as src/load/document-ajv.ts does for the documents:
// - compileResponseValidator: Ajv compiles the definition in this process (the tests, which run src/);
// - precompiledResponseValidatorsModule: Ajv standalone code, the source of a module that
//   scripts/build.mjs bundles into dist/ in place of ./response-validators.ts, so plan and apply
//   neither load Ajv's compiler nor compile the schema when they read their first answer.
// test/api/precompiled-response-validators.test.ts checks that both give the same verdicts and errors.
import { Ajv, type ErrorObject, type Options } from 'ajv';
import standaloneModule from 'ajv/dist/standalone/index.js';

export type ResponseShape = 'FirmwareBundleList' | 'FirmwareBundle' | 'Action';
export const RESPONSE_SHAPES: readonly ResponseShape[] = ['FirmwareBundleList', 'FirmwareBundle', 'Action'];

export interface ResponseValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

const cjsDefault = <T>(m: unknown): T => ((m as { default?: unknown }).default ?? m) as T;
const standaloneCode = cjsDefault<(ajv: Ajv, refs: Record<string, string>) => string>(standaloneModule);

/**
 * The API schema is draft-07 and uses no formats: a server's odd uuid must not fail a read. The
 * first error only (the message names one field). validateSchema: false: a test checks the schema.
 */
export const RESPONSE_AJV_OPTIONS: Readonly<Options> = { allErrors: false, strict: false, validateSchema: false };

function responseAjv(schema: Record<string, unknown>, extra: Options = {}): { ajv: Ajv; ref: (shape: ResponseShape) => string } {
  const ajv = new Ajv({ ...RESPONSE_AJV_OPTIONS, ...extra });
  ajv.addSchema(schema);
  const id = schema.$id;
  if (typeof id !== 'string') throw new Error('the api schema has no $id');
  return { ajv, ref: (shape) => `${id}#/definitions/${shape}` };
}

/** One definition compiled by Ajv here and now. */
export function compileResponseValidators(schema: Record<string, unknown>): (shape: ResponseShape) => ResponseValidator {
  const { ajv, ref } = responseAjv(schema);
  return (shape) => {
    const fn = ajv.getSchema(ref(shape));
    if (!fn) throw new Error(`schemas/api.schema.json has no definition ${shape}`);
    return fn;
  };
}

/** ESM source that exports `responseValidator(shape)` over Ajv standalone code of each definition. */
export function precompiledResponseValidatorsModule(schema: Record<string, unknown>): string {
  const { ajv, ref } = responseAjv(schema, { code: { source: true, esm: true } });
  const refs = Object.fromEntries(RESPONSE_SHAPES.map((shape) => [shape, ref(shape)]));
  return `// Generated at build time by src/api/response-ajv.ts from schemas/api.schema.json: do not edit.
${standaloneCode(ajv, refs)}
export function responseValidator(shape) {
  switch (shape) {
${RESPONSE_SHAPES.map((shape) => `    case ${JSON.stringify(shape)}: return ${shape};`).join('\n')}
    default: throw new Error('no precompiled validator ' + shape);
  }
}
`;
}
