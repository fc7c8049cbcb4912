// The fast path for clean files. `yaml` keeps every node's position but parses about 1 MB/s;
// js-yaml is some ten times faster and gives the same values under its core schema. Most files
// are valid, and a valid file needs only two positions per document (its start and its
// identity), which a line scan finds. So: parse with js-yaml, run the same checks on the values,
// and return a result only when the file is entirely clean and unambiguous; on anything else
// (an issue, an anchor, a tag, an unusual layout) return undefined and let the yaml path
// produce the exact issues. The result is then equal to the yaml path's (tested).
import * as jsYamlModule from 'js-yaml';
import type { ResolvedConfig, SourceLocation } from '../model/index.js';
import { buildObject, IdentifiedDocument, isPlainObject, mayHoldPlaceholder, semanticChecks, type Identity, type Position } from './documents.js';
import type { ParsedDocument, ParsedFile, SourceFile } from './index.js';
import { FORBIDDEN_KEYS, validator } from './schema-check.js';
import { MAX_FILE_BYTES } from './yaml-source.js';

interface JsYaml {
  loadAll(text: string, iterator: null, options: { schema: unknown; json?: boolean }): unknown[];
}

let jsYaml: { readonly yaml: JsYaml; readonly schema: unknown } | null | undefined;

/** js-yaml, a dependency imported statically so that the build bundles it (it was required at run time), with the yaml path's core schema. */
export function loadJsYaml(): { readonly yaml: JsYaml; readonly schema: unknown } | null {
  if (jsYaml === undefined) {
    try {
      jsYaml = { yaml: jsYamlModule as JsYaml, schema: yamlCoreSchema() };
    } catch {
      jsYaml = null;
    }
  }
  return jsYaml;
}

// The YAML 1.2 core schema as the yaml path (the `yaml` package) reads plain scalars, so that a
// file means the same on both paths. js-yaml's own core schema differs: it reads 0b101, -0x1F
// and +0o17 as numbers (yaml: strings), and -.5, +.5 and 1e400 as strings (yaml: -0.5, 0.5 and
// Infinity, which validate then refuses). Its null and boolean spellings are the same.
// Tested against the yaml path over a list of spellings (test/load/fast-path.test.ts).
const CORE_INT = /^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+|0o[0-7]+)$/;
const CORE_FLOAT = /^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/;

/** Whether a plain scalar starting with this character may be a number (a digit, a sign or a dot): most are names. */
function mayBeNumber(c: number): boolean {
  return (c >= 48 && c <= 57) || c === 45 || c === 43 || c === 46;
}

function yamlCoreSchema(): unknown {
  const int = new jsYamlModule.Type('tag:yaml.org,2002:int', {
    kind: 'scalar',
    resolve: (data) => data !== null && mayBeNumber(data.charCodeAt(0)) && CORE_INT.test(data),
    construct: (data) => (data.startsWith('0x') ? parseInt(data.slice(2), 16) : data.startsWith('0o') ? parseInt(data.slice(2), 8) : parseInt(data, 10)),
  });
  const float = new jsYamlModule.Type('tag:yaml.org,2002:float', {
    kind: 'scalar',
    resolve: (data) => data !== null && mayBeNumber(data.charCodeAt(0)) && CORE_FLOAT.test(data),
    construct: (data) => {
      const tail = data.slice(-3).toLowerCase();
      if (tail === 'nan') return NaN;
      if (tail === 'inf') return data.startsWith('-') ? -Infinity : Infinity;
      return parseFloat(data);
    },
  });
  return jsYamlModule.FAILSAFE_SCHEMA.extend({ implicit: [jsYamlModule.types.null, jsYamlModule.types.bool, int, float] });
}

/**
 * Anchors, aliases, tags, directives and merge keys: left to the yaml path and its guards.
 * hasSpecial(text) is SPECIAL.test(text) (property-tested equal): the RegExp, whose alternatives
 * start with a class, tried a match at every character (4% of validate's time at 200,000
 * documents); indexOf finds the few candidate characters, which clean files mostly lack.
 */
export const SPECIAL = /(^|[\s[{,:-])([&*][^\s]|!)|^%|<</m;
const WS = /\s/;

/** Whether a UTF-16 code unit is one /\s/ matches (every such unit beyond ASCII is U+00A0 or above). */
function isWs(code: number): boolean {
  return code <= 32 ? code === 32 || (code >= 9 && code <= 13) : code >= 0xa0 && WS.test(String.fromCharCode(code));
}

export function hasSpecial(text: string): boolean {
  if (text.includes('<<')) return true;
  for (const ch of ['&', '*', '!']) {
    for (let i = text.indexOf(ch); i >= 0; i = text.indexOf(ch, i + 1)) {
      // `!` alone is a tag too (non-specific: yaml reads `x: !` as "", js-yaml as null).
      if (ch !== '!' && (i + 1 >= text.length || isWs(text.charCodeAt(i + 1)))) continue;
      if (i === 0) return true;
      const p = text.charCodeAt(i - 1);
      // [\s[{,:-] before it (a line start is after \n or \r, both \s)
      if (p === 91 || p === 123 || p === 44 || p === 58 || p === 45 || isWs(p)) return true;
    }
  }
  // ^% with the m flag: at the start or after a line terminator (\n, \r, U+2028, U+2029).
  for (let i = text.indexOf('%'); i >= 0; i = text.indexOf('%', i + 1)) {
    if (i === 0) return true;
    const p = text.charCodeAt(i - 1);
    if (p === 10 || p === 13 || p === 0x2028 || p === 0x2029) return true;
  }
  return false;
}

/**
 * Whether the text holds something js-yaml reads otherwise than the yaml path, which the
 * values alone cannot show; such a file is the yaml path's. A breaker found each of these:
 * - a quoted scalar or a flow collection left open at a line's end: js-yaml takes continuation
 *   lines that yaml refuses (one indented no deeper than its key);
 * - a carriage return not followed by a line feed: a line break to js-yaml, not to yaml (a
 *   comment would end there for one and go on for the other);
 * - an explicit key (`? `) or a flow collection as a key (`[x]: 1`): js-yaml makes text of a list
 *   key ("x", "a,b"), which yaml refuses;
 * - a `\U` escape: js-yaml makes lone surrogates of one beyond U+10FFFF, which yaml refuses;
 * - a block scalar (trailing lines of blanks or a tab, explicit indents), a comment against a
 *   closing quote or bracket, a tab among a line's leading blanks;
 * - a line over 1,024 characters (yaml refuses a key written longer; fastParseFile, with the lines).
 * Doubt only costs time: the yaml path decides.
 */
export function fastPathDoubt(text: string): boolean {
  if (text.includes('\\U')) return true;
  // A tab among a line's leading blanks (a tab-only line in a plain scalar, a last line of a tab).
  for (let i = text.indexOf('\t'); i >= 0; i = text.indexOf('\t', i + 1)) {
    let k = i - 1;
    while (k >= 0 && (text.charCodeAt(k) === 32 || text.charCodeAt(k) === 9)) k--;
    if (k < 0 || text.charCodeAt(k) === 10 || text.charCodeAt(k) === 13) return true;
  }
  for (let i = text.indexOf('\r'); i >= 0; i = text.indexOf('\r', i + 1)) if (text.charCodeAt(i + 1) !== 10) return true;
  for (let i = text.indexOf('?'); i >= 0; i = text.indexOf('?', i + 1)) {
    if (isBoundary(i === 0 ? 10 : text.charCodeAt(i - 1)) && (i + 1 >= text.length || isBreakOrBlank(text.charCodeAt(i + 1)))) return true;
  }
  // A block scalar (`|`, `>`, with or without indicators): js-yaml keeps or drops trailing blank
  // and tab-only lines and explicit indents otherwise than yaml.
  for (const ind of ['|', '>']) {
    for (let i = text.indexOf(ind); i >= 0; i = text.indexOf(ind, i + 1)) {
      const n = text.charCodeAt(i + 1);
      if (isBoundary(i === 0 ? 10 : text.charCodeAt(i - 1)) && (isBreakOrBlank(n) || n === 43 || n === 45 || (n >= 49 && n <= 57))) return true;
    }
  }
  // A comment against a closing quote or bracket (`"x"#c`): yaml refuses it, js-yaml does not.
  for (let i = text.indexOf('#'); i >= 0; i = text.indexOf('#', i + 1)) {
    const p = text.charCodeAt(i - 1);
    if (p === 34 || p === 39 || p === 93 || p === 125) return true;
  }
  for (const close of [']', '}']) {
    for (let i = text.indexOf(close); i >= 0; i = text.indexOf(close, i + 1)) {
      let k = i + 1;
      while (text.charCodeAt(k) === 32 || text.charCodeAt(k) === 9) k++;
      if (text.charCodeAt(k) === 58 /* : */) return true;
    }
  }
  return openAtLineEnd(text);
}

/** A space, a tab or a line break (or the end of the text, NaN). */
function isBreakOrBlank(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13 || Number.isNaN(c);
}

/** A character after which a quote, a bracket, a comment or `?` starts a token. */
function isBoundary(p: number): boolean {
  return p === 32 || p === 9 || p === 10 || p === 13 || p === 91 || p === 123 || p === 44 || p === 58 || p === 45 || p === 63;
}

/** A quote, a bracket or a comment: the first in a line is where lineLeavesOpen starts to read it (`g`: test() moves lastIndex). */
const LINE_OPENERS = /["'[{#]/g;

/**
 * Whether a line leaves a quoted scalar or a flow collection open. Only lines holding a quote or
 * a bracket are looked at, each from the first quote, bracket or `#` in it (what comes before
 * those changes nothing); one native search finds them (four indexOf kept apart were slower).
 */
export function openAtLineEnd(text: string): boolean {
  const re = LINE_OPENERS;
  re.lastIndex = 0;
  while (re.test(text)) {
    const q = re.lastIndex - 1;
    const start = text.lastIndexOf('\n', q) + 1;
    let end = text.indexOf('\n', q);
    if (end < 0) end = text.length;
    if (lineLeavesOpen(text, start, q, end)) return true;
    if (end >= text.length) return false;
    re.lastIndex = end;
  }
  return false;
}

/** The line [start, end) read from `from` (no quote, bracket or `#` before it). */
function lineLeavesOpen(text: string, start: number, from: number, end: number): boolean {
  let quote = 0; // 0: none, 34: in "...", 39: in '...'
  let depth = 0;
  for (let i = from; i < end; i++) {
    const c = text.charCodeAt(i);
    if (quote === 34) {
      if (c === 92 /* \ */) i++;
      else if (c === 34) quote = 0;
    } else if (quote === 39) {
      if (c === 39) {
        if (text.charCodeAt(i + 1) === 39) i++;
        else quote = 0;
      }
    } else if (depth > 0 && (c === 93 || c === 125)) {
      depth--;
    } else if (c === 34 || c === 39 || c === 35 /* # */ || c === 91 || c === 123) {
      if (!isBoundary(i === start ? 10 : text.charCodeAt(i - 1))) continue;
      if (c === 35) return quote !== 0 || depth > 0;
      if (c === 91 || c === 123) depth++;
      else quote = c;
    }
  }
  return quote !== 0 || depth > 0;
}
const SEPARATOR = /^---[ \t]*(#.*)?$/;

/**
 * A file's lines, sliced from its text when asked for: a split of every file into lines was a
 * third of the fast path's own time and most of its garbage, and only a few lines of a document
 * are ever read (its first, its separator, the lines down to its identity).
 */
class Lines {
  /** starts[i]: the offset of line i; one more entry, text.length + 1, ends the last. */
  readonly starts: number[];
  readonly length: number;
  /** The length of the longest line. */
  readonly longest: number;
  constructor(readonly text: string, private readonly crlf: boolean) {
    const starts: number[] = [];
    let pos = 0;
    let longest = 0;
    for (;;) {
      starts.push(pos);
      const nl = text.indexOf('\n', pos);
      if (nl < 0) { longest = Math.max(longest, text.length - pos); break; }
      longest = Math.max(longest, nl - pos);
      pos = nl + 1;
    }
    this.longest = longest;
    this.length = starts.length;
    starts.push(text.length + 1);
    this.starts = starts;
  }

  /** Line i as text.split('\n')[i] gives it, without a trailing \r when the file has any \r. */
  at(i: number): string {
    const from = this.starts[i]!;
    let to = this.starts[i + 1]! - 1;
    if (this.crlf && to > from && this.text.charCodeAt(to - 1) === 13) to--;
    return this.text.slice(from, to);
  }

  /** The first code unit of line i (NaN for an empty last line). */
  firstCode(i: number): number {
    const from = this.starts[i]!;
    return from < this.text.length ? this.text.charCodeAt(from) : NaN;
  }
}

/** A document's lines: lines [start..end) of its file, whose lines all its documents share. */
interface Region {
  /** 0-based line index of the first content line. */
  readonly first: number;
  /** The file's lines. */
  readonly lines: Lines;
  /** 0-based index of the region's first line in the file (a separator's next line). */
  readonly start: number;
  /** 0-based index past the region's last line. */
  readonly end: number;
  /** specLine's answer, once asked. */
  spec?: number;
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

/** `objects` false: valid documents get no object (the caller keeps none: ParseOptions.objects). */
export function fastParseFile(file: SourceFile, shown: string, config: ResolvedConfig, objects = true): ParsedFile | undefined {
  const js = loadJsYaml();
  if (!js) return undefined;
  const raw = file.text;
  if (raw.length > (config.reading?.maxFileBytes ?? MAX_FILE_BYTES) || raw.includes('\u0000') || raw.includes('\uFFFD')) return undefined;
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (hasSpecial(text) || fastPathDoubt(text)) return undefined;
  const regions = contentRegions(text);
  // yaml refuses a key written over 1,024 characters (quotes, escapes and blanks counted), js-yaml does not.
  if (!regions || (regions.length > 0 && regions[0]!.lines.longest > MAX_KEY_CHARS)) return undefined;
  let values: unknown[];
  try {
    values = js.yaml.loadAll(text, null, { schema: js.schema }).filter((v) => v !== null && v !== undefined);
  } catch {
    return undefined;
  }
  if (values.length !== regions.length) return undefined;

  const documents: ParsedDocument[] = [];
  const placeholderPossible = mayHoldPlaceholder(text);
  for (let index = 0; index < values.length; index++) {
    const d = fastDocument(values[index], regions[index]!, index, shown, config, placeholderPossible, objects);
    if (!d) return undefined;
    documents.push(d);
  }
  return { path: file.path, file: shown, documents, issues: [] };
}

/** The documents' line ranges, or undefined when the layout is anything but plain `---` lines. */
function contentRegions(text: string): Region[] | undefined {
  const lines = new Lines(text, text.includes('\r'));
  const regions: Region[] = [];
  let start = 0;
  const close = (end: number): boolean => {
    let first = start;
    while (first < end && isBlankOrComment(lines.at(first))) first++;
    if (first < end) {
      // Content must start at column 1, as yaml's documents do in every file we accept here.
      if (startsWithSpace(lines.at(first))) return false;
      regions.push({ first, lines, start, end, spec: undefined });
    }
    return true;
  };
  const n = lines.length;
  for (let i = 0; i < n; i++) {
    // Only a line that starts with - or . can be a separator or a document marker.
    const c = lines.firstCode(i);
    if (c === 45 /* - */) {
      const line = lines.at(i);
      if (SEPARATOR.test(line)) {
        if (!close(i)) return undefined;
        start = i + 1;
      } else if (line.startsWith('---')) {
        return undefined;
      }
    } else if (c === 46 /* . */ && text.startsWith('...', lines.starts[i])) {
      return undefined;
    }
  }
  return close(n) ? regions : undefined;
}

function isBlankOrComment(line: string): boolean {
  const c = line.charCodeAt(0);
  // Most lines start with a letter: no trimming for them.
  if (c !== 32 && c !== 9 && c !== 35 && line.length > 0 && !/\s/.test(line[0]!)) return false;
  const t = line.trimStart();
  return t === '' || t.startsWith('#');
}

/** The line index of the document's block `spec:` line, or -1; found once (identities and phases ask for it). */
function specLine(region: Region): number {
  if (region.spec !== undefined) return region.spec;
  const { text, starts } = region.lines;
  region.spec = -1;
  for (let i = region.start; i < region.end; i++) {
    // Lines are sliced only when they start so.
    if (text.startsWith('spec:', starts[i]) && SPEC_LINE.test(region.lines.at(i))) {
      region.spec = i;
      break;
    }
  }
  return region.spec;
}

function fastDocument(value: unknown, region: Region, index: number, file: string, config: ResolvedConfig, placeholderPossible: boolean, objects: boolean): ParsedDocument | undefined {
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
  if (!objects) return new IdentifiedDocument(index, source, identity, undefined);
  const spec = value.spec as { phases?: unknown[] };
  const phases = value.kind === 'Action' && Array.isArray(spec.phases) ? phaseLocations(region, spec.phases.length, file) : [];
  if (!phases) return undefined;
  const phaseAt: Position = (path) => phases[Number(path[2])] ?? source;
  return new IdentifiedDocument(index, source, identity, buildObject(value, identity.tenant, source, phaseAt));
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
    const line = lines.at(i);
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
    const line = lines.at(i);
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

/**
 * No prototype keys, no integer beyond 2^53-1 and no number JSON cannot spell (.nan, .inf)
 * anywhere, and no key that js-yaml may have made of something else than text: a null key
 * becomes "null" (the yaml path: ""), a list or mapping key "a,b" or "[object Object]" (the yaml
 * path: "[ a, b ]"), .inf "Infinity". The yaml path words those issues, or reads a quoted "null"
 * or "a,b" as it is. Loops: no array of keys per object.
 */
/** yaml refuses an implicit key longer than this (KEY_OVER_1024_CHARS); js-yaml takes it. */
const MAX_KEY_CHARS = 1024;

/** Whether a line of the text is longer than yaml lets a key be written: such a file is the yaml path's. */
export function hasOverlongLine(text: string): boolean {
  let pos = 0;
  for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', pos)) {
    if (nl - pos > MAX_KEY_CHARS) return true;
    pos = nl + 1;
  }
  return text.length - pos > MAX_KEY_CHARS;
}

/** Field names js-yaml makes of a null, a mapping or a number JSON cannot spell (a list: "a,b"), and the prototype keys. */
export const REFUSED_KEYS: ReadonlySet<string> = new Set([...FORBIDDEN_KEYS, 'null', '[object Object]', 'NaN', 'Infinity', '-Infinity']);

/**
 * Whether `k` is one of REFUSED_KEYS, by its length first: most keys' lengths are none of theirs,
 * and the rest are compared as strings (a Set lookup a key was 1% of a validate at 200,000
 * documents). Tested equal to REFUSED_KEYS.has.
 */
export function refusedKey(k: string): boolean {
  switch (k.length) {
    case 3: return k === 'NaN';
    case 4: return k === 'null';
    case 8: return k === 'Infinity';
    case 9: return k === '__proto__' || k === 'prototype' || k === '-Infinity';
    case 11: return k === 'constructor';
    case 15: return k === '[object Object]';
    default: return false;
  }
}

export function plainValues(v: unknown): boolean {
  if (typeof v === 'number') return Number.isInteger(v) ? Number.isSafeInteger(v) : Number.isFinite(v);
  if (typeof v !== 'object' || v === null) return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!plainValues(v[i])) return false;
    return true;
  }
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    if (refusedKey(k) || k.includes(',') || k.length > MAX_KEY_CHARS || !plainValues((v as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/**
 * The usual layout, read in place: line i is spaces, `field`, blanks, `:`, blanks and a value
 * that starts with a printable ASCII character other than `#`; the value's column, else -1
 * (identityLocation then reads the lines as it always did, which gives the same answer here).
 */
function firstFieldColumn(lines: Lines, i: number, field: string): number {
  const text = lines.text;
  const from = lines.starts[i]!;
  let p = from;
  while (text.charCodeAt(p) === 32) p++;
  if (p === from || !text.startsWith(field, p)) return -1;
  p += field.length;
  while (text.charCodeAt(p) === 32 || text.charCodeAt(p) === 9) p++;
  if (text.charCodeAt(p) !== 58 /* : */) return -1;
  p++;
  while (text.charCodeAt(p) === 32 || text.charCodeAt(p) === 9) p++;
  const c = text.charCodeAt(p);
  return c > 32 && c < 127 && c !== 35 ? p - from + 1 : -1;
}

/**
 * `  version_number: "2.4.1"` as a direct child of a block `spec:` → the value's line and
 * column. Anything else (a flow mapping, a comment in the way...) → undefined.
 */
function identityLocation(region: Region, field: string, file: string): SourceLocation | undefined {
  const lines = region.lines;
  const spec = specLine(region);
  if (spec < 0) return undefined;
  const first = spec + 1 < region.end ? firstFieldColumn(lines, spec + 1, field) : -1;
  if (first > 0) return { file, line: spec + 2, column: first };
  let indent: string | undefined;
  const re = identityLine(field);
  for (let i = spec + 1; i < region.end; i++) {
    const line = lines.at(i);
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
