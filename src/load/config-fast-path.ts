// The fast path for a clean dus-sync.yaml, like fast-path.ts for the desired-state files: yaml
// keeps every node's position, and loading and running its parser was a good part of a cold
// `validate`; js-yaml (loaded anyway for the desired-state files) gives the same values under the
// yaml path's core schema (fast-path.ts). A config is taken this way only when it is plainly one
// mapping: no anchor, alias, tag, directive or merge key, no document marker, no quoted scalar
// running past its line, and values as fast-path.ts's plainValues accepts them.
// config.ts then validates the value and runs its checks; positions (only wanted for an issue,
// or a window's tenants) come from the yaml path, parsed on first use. Anything else, and any
// issue at all, takes the yaml path from the start, so messages are the yaml path's own.
import { isPlainObject } from './documents.js';
import { fastPathDoubt, hasOverlongLine, loadJsYaml, plainValues } from './fast-path.js';

/** Anchors, aliases, tags, directives and merge keys (as fast-path.ts), and document markers. */
const SPECIAL = /(^|[\s[{,:-])([&*][^\s]|!)|^%|<<|^---|^\.\.\./m;

/** The config's value when the text is plainly one clean mapping; undefined to take the yaml path. */
export function cleanConfigValue(raw: string, maxBytes: number): object | undefined {
  if (raw.length > maxBytes || raw.includes('\u0000') || raw.includes('\uFFFD')) return undefined;
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (SPECIAL.test(text) || fastPathDoubt(text) || hasOverlongLine(text)) return undefined;
  const js = loadJsYaml();
  if (!js) return undefined;
  let values: unknown[];
  try {
    values = js.yaml.loadAll(text, null, { schema: js.schema });
  } catch {
    return undefined;
  }
  if (values.length !== 1) return undefined;
  const value = values[0];
  return isPlainObject(value) && plainValues(value) ? value : undefined;
}
