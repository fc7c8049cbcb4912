// The fast path for clean files. `yaml` keeps every node's position but parses about 1 MB/s;
// js-yaml is some ten times faster and gives the same values under its core schema. Most files
// are valid, and a valid file needs only two positions per document (its start and its
// identity), which a line scan finds. So: parse with js-yaml, run the same checks on the values,
// and return a result only when the file is entirely clean and unambiguous; on anything else
// (an issue, an anchor, a tag, an unusual layout) return undefined and let the yaml path
// produce the exact issues. The result is then equal to the yaml path's (tested).
import * as jsYamlModule from 'js-yaml';
import type { ResolvedConfig, SourceLocation } from '../model/index.js';
import { buildObject, isPlainObject, mayHoldPlaceholder, semanticChecks, type Identity, type Position } from './documents.js';
import type { ParsedDocument, ParsedFile, SourceFile } from './index.js';
import { FORBIDDEN_KEYS, validator } from './schema-check.js';
import { MAX_FILE_BYTES } from './yaml-source.js';

interface JsYaml {
  loadAll(text: string, iterator: null, options: { schema: unknown; json?: boolean }): unknown[];
  CORE_SCHEMA: unknown;
}

let jsYaml: JsYaml | null | undefined;

/** js-yaml, a dependency imported statically so that the build bundles it (it was required at run time). */
function loadJsYaml(): JsYaml | null {
  if (jsYaml === undefined) {
    try {
      jsYaml = jsYamlModule as JsYaml;
    } catch {
      jsYaml = null;
    }
  }
  return jsYaml;
}

/** Anchors, aliases, tags, directives and merge keys: left to the yaml path and its guards. */
const SPECIAL = /(^|[\s[{,:-])[&*!][^\s]|^%|<</m;
const SEPARATOR = /^---[ \t]*(#.*)?$/;

/**
 * A document's lines: lines[start..end) of the file's lines, shared by all its documents (a
 * copy per document was most of the fast path's garbage).
 */
interface Region {
  /** 0-based line index of the first content line. */
  readonly first: number;
  /** The file's lines. */
  readonly lines: readonly string[];
  /** 0-based index of the region's first line in the file (a separator's next line). */
  readonly start: number;
  /** 0-based index past the region's last line. */
  readonly end: number;
}

const SPEC_LINE = /^spec:[ \t]*(#.*)?$/;
const PHASES_LINE = /^ *phases:[ \t]*(#.*)?$/;
/** One RegExp per identity field, made once (it was made for every document). */
const IDENTITY_LINE = new Map<string, RegExp>();

function identityLine(field: string): RegExp {
  let re = IDENTITY_LINE.get(field);
  if (re === undefined) {
    re = new RegExp(`^(\\s+)(${field}[ \\t]*:[ \\t]*)(?=[^\\s#])`);
    IDENTITY_LINE.set(field, re);
  }
  return re;
}

/** Spaces at the start of a line. */
function leadingSpaces(line: string): number {
  let i = 0;
  while (line.charCodeAt(i) === 32) i++;
  return i;
}

/** How many characters of whitespace start a line, as the RegExp ^\s* counts them (spaces and tabs without one). */
function leadingWhitespace(line: string): number {
  let i = 0;
  for (;;) {
    const c = line.charCodeAt(i);
    if (c === 32 || c === 9) i++;
    else if (i < line.length && /\s/.test(line[i]!)) i++;
    else return i;
  }
}

/** Whitespace (space, tab...) at the start of a line, as /^\s/ sees it. */
function startsWithSpace(line: string): boolean {
  return line.length > 0 && /\s/.test(line[0]!);
}

export function fastParseFile(file: SourceFile, shown: string, config: ResolvedConfig): ParsedFile | undefined {
  const yaml = loadJsYaml();
  if (!yaml) return undefined;
  const raw = file.text;
  if (raw.length > (config.reading?.maxFileBytes ?? MAX_FILE_BYTES) || raw.includes('\u0000') || raw.includes('\uFFFD')) return undefined;
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (SPECIAL.test(text)) return undefined;
  const regions = contentRegions(text);
  if (!regions) return undefined;
  let values: unknown[];
  try {
    values = yaml.loadAll(text, null, { schema: yaml.CORE_SCHEMA }).filter((v) => v !== null && v !== undefined);
  } catch {
    return undefined;
  }
  if (values.length !== regions.length) return undefined;

  const documents: ParsedDocument[] = [];
  const placeholderPossible = mayHoldPlaceholder(text);
  for (let index = 0; index < values.length; index++) {
    const d = fastDocument(values[index], regions[index]!, index, shown, config, placeholderPossible);
    if (!d) return undefined;
    documents.push(d);
  }
  return { path: file.path, file: shown, documents, issues: [] };
}

/** The documents' line ranges, or undefined when the layout is anything but plain `---` lines. */
function contentRegions(text: string): Region[] | undefined {
  const split = text.split('\n');
  const lines = text.includes('\r') ? split.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l)) : split;
  const regions: Region[] = [];
  let start = 0;
  const close = (end: number): boolean => {
    let first = start;
    while (first < end && isBlankOrComment(lines[first]!)) first++;
    if (first < end) {
      // Content must start at column 1, as yaml's documents do in every file we accept here.
      if (startsWithSpace(lines[first]!)) return false;
      regions.push({ first, lines, start, end });
    }
    return true;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.charCodeAt(0) === 45 /* - */ && SEPARATOR.test(line)) {
      if (!close(i)) return undefined;
      start = i + 1;
    } else if (line.startsWith('---') || line.startsWith('...')) {
      return undefined;
    }
  }
  return close(lines.length) ? regions : undefined;
}

function isBlankOrComment(line: string): boolean {
  const c = line.charCodeAt(0);
  // Most lines start with a letter: no trimming for them.
  if (c !== 32 && c !== 9 && c !== 35 && line.length > 0 && !/\s/.test(line[0]!)) return false;
  const t = line.trimStart();
  return t === '' || t.startsWith('#');
}

/** The line index of the document's block `spec:` line, or -1. */
function specLine(region: Region): number {
  for (let i = region.start; i < region.end; i++) {
    const line = region.lines[i]!;
    if (line.startsWith('spec:') && SPEC_LINE.test(line)) return i;
  }
  return -1;
}

function fastDocument(value: unknown, region: Region, index: number, file: string, config: ResolvedConfig, placeholderPossible: boolean): ParsedDocument | undefined {
  if (!isPlainObject(value) || !('apiVersion' in value) || !plainValues(value)) return undefined;
  const validate = validator('resource');
  if (!validate(value)) return undefined;
  const source: SourceLocation = { file, line: region.first + 1, column: 1 };
  let identityFound = true;
  const position: Position = (path) => {
    const found = path.length === 2 && path[0] === 'spec' ? identityLocation(region, path[1]!, file) : undefined;
    if (!found) identityFound = false;
    return found ?? source;
  };
  const sem = semanticChecks(value, config, position, placeholderPossible);
  if (sem.issues.length > 0 || !sem.identity || !identityFound) return undefined;
  const identity: Identity = sem.identity;
  const spec = value.spec as { phases?: unknown[] };
  const phases = value.kind === 'Action' && Array.isArray(spec.phases) ? phaseLocations(region, spec.phases.length, file) : [];
  if (!phases) return undefined;
  const phaseAt: Position = (path) => phases[Number(path[2])] ?? source;
  return { index, source, identity, object: buildObject(value, identity.tenant, source, phaseAt) };
}

/**
 * Where each item of a block `phases:` list directly under a block `spec:` starts (the column
 * after "- "), as the yaml path finds it; undefined for anything else (a flow list, an item
 * whose content starts on the next line, a count that does not match), which the yaml path takes.
 */
function phaseLocations(region: Region, count: number, file: string): SourceLocation[] | undefined {
  const lines = region.lines;
  const spec = specLine(region);
  if (spec < 0) return undefined;
  let keyIndent: number | undefined;
  let phasesLine = -1;
  for (let i = spec + 1; i < region.end; i++) {
    const line = lines[i]!;
    if (isBlankOrComment(line)) continue;
    const indent = leadingSpaces(line);
    if (indent === 0) break;
    keyIndent ??= indent;
    if (indent !== keyIndent) continue;
    if (PHASES_LINE.test(line)) { phasesLine = i; break; }
  }
  if (phasesLine < 0 || keyIndent === undefined) return count === 0 ? [] : undefined;
  const found: SourceLocation[] = [];
  let itemIndent: number | undefined;
  for (let i = phasesLine + 1; i < region.end; i++) {
    const line = lines[i]!;
    if (isBlankOrComment(line)) continue;
    const indent = leadingSpaces(line);
    if (indent < keyIndent || (indent === keyIndent && !line.startsWith('-', indent))) break;
    itemIndent ??= indent;
    if (indent < itemIndent) return undefined;
    if (indent > itemIndent) continue;
    const m = /^(-[ ]+)(?=[^\s#])/.exec(line.slice(indent));
    if (!m) return undefined;
    found.push({ file, line: i + 1, column: indent + m[1]!.length + 1 });
  }
  return found.length === count ? found : undefined;
}

/** No prototype keys and no integer beyond 2^53-1 anywhere (the yaml path words those issues). Loops: no array of keys per object. */
function plainValues(v: unknown): boolean {
  if (typeof v === 'number') return !Number.isInteger(v) || Number.isSafeInteger(v);
  if (typeof v !== 'object' || v === null) return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!plainValues(v[i])) return false;
    return true;
  }
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    if (FORBIDDEN_KEYS.has(k) || !plainValues((v as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/**
 * `  version_number: "2.4.1"` as a direct child of a block `spec:` → the value's line and
 * column. Anything else (a flow mapping, a comment in the way...) → undefined.
 */
function identityLocation(region: Region, field: string, file: string): SourceLocation | undefined {
  const lines = region.lines;
  const spec = specLine(region);
  if (spec < 0) return undefined;
  let indent: string | undefined;
  const re = identityLine(field);
  for (let i = spec + 1; i < region.end; i++) {
    const line = lines[i]!;
    if (isBlankOrComment(line)) continue;
    if (!startsWithSpace(line)) break;
    const lead = leadingWhitespace(line);
    indent ??= line.slice(0, lead);
    if (lead !== indent.length || !line.startsWith(indent)) continue;
    const m = re.exec(line);
    if (m) return { file, line: i + 1, column: m[1]!.length + m[2]!.length + 1 };
  }
  return undefined;
}
