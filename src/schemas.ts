// Access to the JSON Schemas in schemas/ (shipped in the package beside dist/).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export const SCHEMA_KINDS = ['config', 'firmware', 'action', 'resource', 'api'] as const;
export type SchemaKind = (typeof SCHEMA_KINDS)[number];

const FILES = { config: 'config', resource: 'resource', api: 'api' } as const;

/** The schemas folder: ../schemas from src/ (tests) and from dist/ (built) alike. */
export function schemasDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  // dist/chunks/x.js and src/x.ts both live one or two levels below the package root.
  for (const up of ['..', '../..']) {
    const dir = join(here, up, 'schemas');
    try {
      readFileSync(join(dir, 'resource.schema.json'));
      return dir;
    } catch {
      // try the next level up
    }
  }
  throw new Error(`the schemas folder was not found near ${here}`);
}

const cache = new Map<string, Record<string, unknown>>();

export function readSchemaFile(name: 'config' | 'resource' | 'api'): Record<string, unknown> {
  let s = cache.get(name);
  if (!s) {
    s = JSON.parse(readFileSync(join(schemasDir(), `${name}.schema.json`), 'utf8')) as Record<string, unknown>;
    cache.set(name, s);
  }
  return s;
}

/** A schema by kind; firmware and action are self-contained extracts of resource.schema.json. */
export function readSchema(kind: SchemaKind): Record<string, unknown> {
  if (kind === 'firmware' || kind === 'action') {
    const resource = readSchemaFile('resource');
    const defs = resource.definitions as Record<string, unknown>;
    const doc = kind === 'firmware' ? 'FirmwareDocument' : 'ActionDocument';
    return {
      $schema: resource.$schema,
      $id: `https://dus-sync.dev/schemas/v1/${kind}.schema.json`,
      ...(defs[doc] as Record<string, unknown>),
      definitions: defs,
    };
  }
  return readSchemaFile(FILES[kind]);
}
