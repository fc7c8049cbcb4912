// Words about the config file that are not about its content: --config naming a folder. Kept
// apart from config.ts, which resolves the config.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../errors.js';

const CONFIG_NAME = 'dus-sync.yaml';

/**
 * `-c FOLDER`: one sentence that says what --config takes, and the file in that folder when
 * there is one, instead of what reading a folder as a file gives (EISDIR, or a word about links).
 */
export function folderAsConfig(file: string, shown: string): UserError | undefined {
  let folder = false;
  try {
    folder = statSync(file).isDirectory();
  } catch {
    return undefined;
  }
  if (!folder) return undefined;
  const inside = `${shown.replace(/\/+$/, '')}/${CONFIG_NAME}`;
  const guess = existsSync(join(file, CONFIG_NAME)) ? ` (did you mean ${inside}?)` : ` (there is no ${CONFIG_NAME} in it)`;
  return new UserError(`${shown} is a folder; --config takes the ${CONFIG_NAME} file${guess}`);
}
