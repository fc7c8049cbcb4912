// `dus-sync schema [KIND]`: prints the JSON Schemas shipped in schemas/.
import { readSchema, SCHEMA_KINDS, type SchemaKind } from '../schemas.js';
import { UserError } from '../errors.js';

export async function run(_opts: Record<string, unknown>, _globals: unknown, args: string[]): Promise<number> {
  const kind = args[0]?.toLowerCase();
  if (kind === undefined) {
    const all: Record<string, unknown> = {};
    for (const k of SCHEMA_KINDS) all[k] = readSchema(k);
    process.stdout.write(JSON.stringify(all, null, 2) + '\n');
    return 0;
  }
  if (!(SCHEMA_KINDS as readonly string[]).includes(kind)) {
    throw new UserError(`there is no schema "${args[0]}"; choose one of ${SCHEMA_KINDS.join(', ')}`);
  }
  process.stdout.write(JSON.stringify(readSchema(kind as SchemaKind), null, 2) + '\n');
  return 0;
}
