// The validation functions of the document schemas. This is the version the tests run (src/):
// Ajv compiles the schema on first use. dist/ never contains this file: scripts/build.mjs puts
// in its place the module precompiledValidatorsModule() generates from schemas/ at build time,
// which exports the same function over Ajv standalone code (no compile, no schema read at start).
import { readSchemaFile } from '../schemas.js';
import { compileDocumentValidator, type DocumentSchemaName, type DocumentValidator } from './document-ajv.js';

export function precompiledValidator(name: DocumentSchemaName): DocumentValidator {
  return compileDocumentValidator(readSchemaFile(name));
}
