// Words about the config file that are not about its content: --config naming a folder, and
// where in dus-sync.yaml a setting was written (for messages that must say where a limit came
// from). Kept apart from config.ts, which resolves the config.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../errors.js';
import type { SourceLocation } from '../model/index.js';
import { readRegularFile } from './read-file.js';
import { issueAt, locate, offsetOf, parseYamlSource } from './yaml-source.js';

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

/**
 * Where a setting (a path such as ["safety", "max_changes"]) is written in the config file, as
 * file:line; undefined when it cannot be read or is not there. Read again on purpose: it is
 * called only to word a refusal, so the config's hot path does not carry positions around.
 */
export function settingLocation(file: string, shown: string, path: readonly string[], maxBytes: number): SourceLocation | undefined {
  const read = readRegularFile(file, { maxBytes });
  if (!read.ok) return undefined;
  const src = parseYamlSource(shown, read.text, maxBytes);
  const doc = src.documents[0];
  if (!doc || src.issues.length > 0) return undefined;
  const at = locate(doc, path);
  if (!at.key) return undefined;
  const { line, column } = issueAt(shown, src.lineCounter, offsetOf(at.key), '', '');
  return { file: shown, line, column };
}
