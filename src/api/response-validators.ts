// The validation functions of the API's answers. This is the version the tests run (src/): Ajv
// compiles schemas/api.schema.json on first use. dist/ never contains this file:
// scripts/build.mjs puts in its place the module precompiledResponseValidatorsModule() generates
// at build time (Ajv standalone code: no compile when plan or apply reads its first answer).
import { readSchemaFile } from '../schemas.js';
import { compileResponseValidators, type ResponseShape, type ResponseValidator } from './response-ajv.js';

let compiled: ((shape: ResponseShape) => ResponseValidator) | undefined;

export function responseValidator(shape: ResponseShape): ResponseValidator {
  compiled ??= compileResponseValidators(readSchemaFile('api'));
  return compiled(shape);
}
