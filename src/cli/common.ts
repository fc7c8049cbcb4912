// Steps the API commands share: config → desired → client.
import type { Logger, ResolvedConfig } from '../model/index.js';
import { resolveConfig } from '../load/config.js';
import type { LoadFilter } from '../load/index.js';
import { configEnv, parseSelector, stderrLogger, type GlobalOptions } from './context.js';

export interface CommandSetup {
  readonly config: ResolvedConfig;
  readonly filter: LoadFilter;
  readonly log: Logger;
}

export async function setup(globals: GlobalOptions): Promise<CommandSetup> {
  const log = stderrLogger(globals.debug === true);
  const config = await resolveConfig({ config: globals.config, dir: globals.dir, cwd: process.cwd(), env: configEnv(globals) });
  const filter: LoadFilter = { tenants: globals.tenant, selector: parseSelector(globals.selector) };
  return { config, filter, log };
}
