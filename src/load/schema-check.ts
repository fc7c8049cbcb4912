// Ajv against schemas/, with errors turned into plain sentences at the user's line and column.
import type { ErrorObject } from 'ajv';
import { isMap, isScalar, isSeq, isPair, isAlias, type Document, type Node } from 'yaml';
import type { ConfigIssue } from '../errors.js';
import { readSchemaFile } from '../schemas.js';
import type { DocumentSchemaName, DocumentValidator } from './document-ajv.js';
import { didYouMean, hint } from './did-you-mean.js';
import { precompiledValidator } from './validators.js';
import { issueAt, locate, offsetOf, pointerSegments, toPointer, type YamlSource } from './yaml-source.js';

const validators = new Map<DocumentSchemaName, DocumentValidator>();

/**
 * The schema's validation function, once per process. In dist/ it is Ajv standalone code made at
 * build time (Ajv's compiler is neither loaded nor run); the tests compile the schema with Ajv on
 * first use (see validators.ts and document-ajv.ts for the options).
 */
export function validator(name: DocumentSchemaName): DocumentValidator {
  let v = validators.get(name);
  if (!v) {
    v = precompiledValidator(name);
    validators.set(name, v);
  }
  return v;
}

/** Keys that would reach Object.prototype in naive consumers: refused outright. */
export const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Problems the schema cannot see or would word badly: prototype keys and integers that a
 * JavaScript number cannot hold exactly. Walks the YAML nodes, so positions are exact.
 */
export function scanNodes(src: YamlSource, doc: Document.Parsed): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const walk = (node: unknown, path: string[]): void => {
    const notJson = notJsonKind(node);
    if (notJson !== undefined) {
      issues.push(issueAt(src.file, src.lineCounter, offsetOf(node as Node), toPointer(path), `${shortLabel(path)} is ${notJson}, which the API's JSON cannot carry: dus-sync would send something else than the plan shows; write it as a quoted string (or a plain mapping or list)`));
      return;
    }
    if (isMap(node)) {
      // The field names JSON will carry: two keys that become one (1 and "1", true and "true") would set it twice unseen.
      const names = new Map<string, string>();
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const keyNode = pair.key as Node | null;
        if (keyNode === null || (isScalar(keyNode) && keyNode.value === null)) {
          // A null field name (`~:`, `? ` alone, `!!null ""`) is sent as "" or "null" by what sits beside it.
          issues.push(issueAt(src.file, src.lineCounter, offsetOf((keyNode ?? pair.value ?? node) as Node), toPointer(path), 'a field name here is null (~, empty, or !!null), which JSON carries as "" or "null" depending on the names beside it: write it as a quoted string'));
          continue;
        }
        const keyKind = notJsonKind(keyNode);
        if (keyKind !== undefined) {
          // A date as a field name is sent as Date's text, which depends on the host's time zone.
          issues.push(issueAt(src.file, src.lineCounter, offsetOf(keyNode!), toPointer(path), `a field name here is ${keyKind}, which the API's JSON cannot carry as it is written: write it as a quoted string`));
          continue;
        }
        if (isScalar(keyNode) && keyNode.value !== null && typeof keyNode.value !== 'object') {
          const name = String(keyNode.value);
          const before = names.get(name);
          if (before !== undefined) {
            issues.push(issueAt(src.file, src.lineCounter, offsetOf(keyNode), toPointer([...path, name]), `the field "${name}" is set twice here (as ${before} and as ${sourceText(src, keyNode)}), which JSON carries as one field; keep one`));
            continue;
          }
          names.set(name, sourceText(src, keyNode));
        }
        if (isAlias(keyNode)) {
          // yaml's duplicate-key check does not see through an alias: `*k : x` beside the key &k
          // names would set that key twice, and a reviewer reads the first.
          issues.push(issueAt(src.file, src.lineCounter, offsetOf(keyNode), toPointer(path), `an alias (*${keyNode.source}) is used as a key, which hides which key is set; write the key out instead`));
          continue;
        }
        if (isMap(keyNode) || isSeq(keyNode)) {
          // `[a, b]: 1` or `{a: 1}: 2`: JSON names are text, and each parser spells such a key its own way.
          issues.push(issueAt(src.file, src.lineCounter, offsetOf(keyNode), toPointer(path), 'a field name here is a mapping or a list, which JSON cannot carry as a name: write it as a quoted string'));
          continue;
        }
        const key = isScalar(keyNode) ? String(keyNode.value) : '';
        const here = [...path, key];
        if (FORBIDDEN_KEYS.has(key) && keyNode) {
          issues.push(issueAt(src.file, src.lineCounter, offsetOf(keyNode), toPointer(here), `the key "${key}" is not allowed (it could alter object prototypes); rename or remove it`));
          continue;
        }
        walk(pair.value, here);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => walk(item, [...path, String(i)]));
    } else if (isScalar(node) && typeof node.value === 'number' && Number.isInteger(node.value) && !Number.isSafeInteger(node.value)) {
      const raw = sourceText(src, node);
      issues.push(issueAt(src.file, src.lineCounter, offsetOf(node), toPointer(path), `${shortLabel(path)} is ${raw}, larger than 2^53-1 (9007199254740991); it cannot be held exactly, use a smaller number`));
    } else if (isAlias(node)) {
      // Checked where the anchor is defined.
    }
  };
  walk(doc.contents, []);
  return issues;
}

const JSON_TAGS = new Set([undefined, 'tag:yaml.org,2002:map', 'tag:yaml.org,2002:seq', 'tag:yaml.org,2002:str', 'tag:yaml.org,2002:int', 'tag:yaml.org,2002:float', 'tag:yaml.org,2002:bool', 'tag:yaml.org,2002:null']);

/**
 * What a node is when its value is not one of JSON's (a YAML 1.1 or tagged timestamp, !!binary,
 * !!set, !!omap, !!pairs): sent, it would become an ISO string, a Buffer's fields or {} while
 * the plan shows another value, and a phase so appended could never match its YAML again.
 */
function notJsonKind(node: unknown): string | undefined {
  if (isScalar(node)) {
    const v = node.value;
    if (typeof v === 'number' && !Number.isFinite(v)) return 'not a finite number (.nan, .inf, or beyond ±1.8e308, sent as null)';
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return undefined;
    if (v instanceof Date) return 'a YAML timestamp (a date)';
    if (v instanceof Uint8Array) return 'YAML binary data (!!binary)';
    return `a YAML ${node.tag ?? typeof v} value`;
  }
  if ((isMap(node) || isSeq(node)) && !JSON_TAGS.has(node.tag)) return `a YAML ${node.tag!.replace(/^tag:yaml\.org,2002:/, '!!')} collection`;
  return undefined;
}

export function sourceText(src: YamlSource, node: Node): string {
  const [start, end] = node.range ?? [0, 0];
  return src.text.slice(start, end).trim();
}

/** "spec.dependencies[1].min_version" style name for messages. */
export function label(path: readonly string[]): string {
  let out = '';
  for (const seg of path) out += /^\d+$/.test(seg) ? `[${seg}]` : (out ? `.${seg}` : seg);
  return out || 'the document';
}

/** The field's own name: "uncompressed_size", or "phases[2]" for an array item. */
function shortLabel(path: readonly string[]): string {
  const last = path.length - 1;
  if (last < 0) return 'the document';
  if (/^\d+$/.test(path[last]!)) return label(path.slice(Math.max(0, last - 1)));
  return path[last]!;
}

const TYPE_WORDS: Record<string, string> = {
  string: 'a string', integer: 'an integer', number: 'a number', boolean: 'true or false',
  object: 'a mapping (key: value)', array: 'a list', null: 'empty',
};

/**
 * Ajv errors → issues, one per location. `if` errors only say that a `then` failed, which
 * its own errors already explain; the same location reported through two schema branches
 * (the top level and the kind's document) is reported once.
 */
export function schemaIssues(src: YamlSource, doc: Document.Parsed, errors: readonly ErrorObject[], skip: ReadonlySet<string>): ConfigIssue[] {
  const seen = new Set<string>(skip);
  const out: ConfigIssue[] = [];
  const slips = findSlips(doc, errors);
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    // A value of the wrong type passes a "not" of a string pattern: its type error says it better.
    if (e.keyword === 'not' && errors.some((o) => o.keyword === 'type' && o.instancePath === e.instancePath)) continue;
    if (e.keyword === 'required' && slips.explained.has(toPointer([...pointerSegments(e.instancePath), missingField(e)]))) continue;
    const segments = pointerSegments(e.instancePath);
    const extra = extraSegment(e);
    const pointer = toPointer(extra === undefined ? segments : [...segments, extra]);
    if (isCovered(pointer, seen)) continue;
    seen.add(pointer);
    out.push(toIssue(src, doc, e, segments, pointer, slips));
  }
  return out;
}

/** What the unknown fields of a document explain: one slip of the pen should be one error. */
export interface Slips {
  /** JSON pointers of required fields whose absence an unknown field explains: not reported. */
  readonly explained: ReadonlySet<string>;
  /** An unknown field's hint when it stands for a missing required field that is not close in spelling. */
  readonly renamed: ReadonlyMap<ErrorObject, string>;
}

const missingField = (e: ErrorObject) => String((e.params as { missingProperty: string }).missingProperty);
const unknownField = (e: ErrorObject) => String((e.params as { additionalProperty: string }).additionalProperty);
const generic = (path: readonly string[]) => path.map((s) => (/^\d+$/.test(s) ? '[]' : s)).join('/');

/**
 * A misspelt "nmae" (did you mean "name"?), "tenant" written at the top level (metadata then
 * seems missing), "id" written in metadata (spec then seems to lack it), or the one unknown field
 * of an object that lacks one required field ("version" where "version_number" is missing):
 * each is one mistake, so only the unknown field is reported, with what it stands for.
 */
export function findSlips(doc: Document.Parsed, errors: readonly ErrorObject[]): Slips {
  const explained = new Set<string>();
  const renamed = new Map<ErrorObject, string>();
  const missing = errors.filter((e) => e.keyword === 'required');
  if (missing.length === 0) return { explained, renamed };
  const unknown = errors.filter((e) => e.keyword === 'additionalProperties');
  for (const e of unknown) {
    const key = unknownField(e);
    const place = rightPlace(doc, key, pointerSegments(e.instancePath));
    for (const m of missing) {
      const path = [...pointerSegments(m.instancePath), missingField(m)];
      const misspelt = m.instancePath === e.instancePath && didYouMean(key, [missingField(m)]) !== undefined;
      const misplaced = place !== undefined && (generic(place) === generic(path) || (key === missingField(m) && generic(place) === generic(path.slice(0, -1))));
      if (misspelt || misplaced) explained.add(toPointer(path));
    }
  }
  // One unknown and one missing in the same object, unrelated in spelling: most likely a rename.
  for (const m of missing) {
    const path = toPointer([...pointerSegments(m.instancePath), missingField(m)]);
    if (explained.has(path)) continue;
    const here = unknown.filter((e) => e.instancePath === m.instancePath);
    const alsoMissing = missing.filter((x) => x.instancePath === m.instancePath && !explained.has(toPointer([...pointerSegments(x.instancePath), missingField(x)])));
    if (here.length !== 1 || alsoMissing.length !== 1) continue;
    const e = here[0]!;
    const known = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
    if (rightPlace(doc, unknownField(e), pointerSegments(e.instancePath)) || didYouMean(unknownField(e), known)) continue;
    renamed.set(e, `; did you mean the required field "${missingField(m)}"?`);
    explained.add(path);
  }
  return { explained, renamed };
}

function extraSegment(e: ErrorObject): string | undefined {
  if (e.keyword === 'additionalProperties') return String((e.params as { additionalProperty: string }).additionalProperty);
  if (e.keyword === 'required') return String((e.params as { missingProperty: string }).missingProperty);
  return undefined;
}

/** Already reported at this pointer or at one of its parents. */
function isCovered(pointer: string, seen: ReadonlySet<string>): boolean {
  for (const s of seen) if (pointer === s || pointer.startsWith(s + '/')) return true;
  return false;
}

function toIssue(src: YamlSource, doc: Document.Parsed, e: ErrorObject, segments: string[], pointer: string, slips: Slips): ConfigIssue {
  const at = locate(doc, segments);
  const where = (node: Node | undefined) => issueAt(src.file, src.lineCounter, offsetOf(node ?? at.nearest), pointer, '');
  const name = shortLabel(segments);
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String((e.params as { additionalProperty: string }).additionalProperty);
      const keyAt = locate(doc, [...segments, key]);
      const known = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      return { ...where(keyAt.key), message: `unknown field "${key}" in ${segments.length ? label(segments) : 'the document'}${slips.renamed.get(e) ?? placementHint(doc, key, segments) ?? hint(key, known)}` };
    }
    case 'required': {
      const missing = String((e.params as { missingProperty: string }).missingProperty);
      return { ...where(at.key ?? at.value), message: `${segments.length ? label(segments) : 'the document'} is missing the required field "${missing}"` };
    }
    case 'type': {
      const expected = String((e.params as { type: string }).type);
      return { ...where(at.value ?? at.key), message: typeMessage(src, at.value, name, expected, (e.parentSchema as { pattern?: string } | undefined)?.pattern) };
    }
    case 'const':
      return { ...where(at.value ?? at.key), message: `${name} must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}` };
    case 'enum': {
      const allowed = ((e.params as { allowedValues: unknown[] }).allowedValues).map(String);
      const got = isScalar(at.value) ? String(at.value.value) : '';
      return { ...where(at.value ?? at.key), message: `${name} must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}${got ? hint(got, allowed) : ''}` };
    }
    case 'minimum':
      return { ...where(at.value), message: `${name} must be ${String((e.params as { limit: number }).limit)} or more` };
    case 'maximum':
      return { ...where(at.value), message: `${name} must be at most ${String((e.params as { limit: number }).limit)}` };
    case 'minLength': {
      // `- !archive/**` unquoted: YAML reads "!archive/**" as a tag on an empty value.
      const tag = isScalar(at.value) ? at.value.tag : undefined;
      if (tag !== undefined && tag.startsWith('!') && !tag.startsWith('!!')) {
        return { ...where(at.value ?? at.key), message: `${name} is empty: YAML reads ${tag} as a tag, not as text; quote it, as in "${tag}"` };
      }
      return { ...where(at.value ?? at.key), message: `${name} must not be empty` };
    }
    case 'minItems':
      return { ...where(at.value ?? at.key), message: `${name} must not be an empty list; leave it out to mean all` };
    case 'pattern':
      return { ...where(at.value), message: patternMessage(name, String((e.params as { pattern: string }).pattern)) };
    case 'not':
      // (A value that is not a string passes the pattern it must not match: its type error says what is wrong.)
      if (String((e.schema as { pattern?: string } | undefined)?.pattern).includes('[vV]1') && isScalar(at.value) && typeof at.value.value === 'string') {
        return { ...where(at.value), message: `${name} should not include /api/v1; dus-sync adds it: write ${isScalar(at.value) ? withoutApiV1(String(at.value.value)) : 'the URL without it'}` };
      }
      return { ...where(at.value ?? at.key), message: `${name} is invalid` };
    default:
      return { ...where(at.value ?? at.key), message: `${name} ${e.message ?? 'is invalid'}` };
  }
}

/** A plain scalar where a string is expected is the classic YAML trap: say how to quote it. */
function typeMessage(src: YamlSource, node: Node | undefined, name: string, expected: string, pattern?: string): string {
  if (expected === 'string' && isScalar(node) && (typeof node.value === 'number' || typeof node.value === 'boolean')) {
    const raw = sourceText(src, node);
    // Quoted, it would still not match: say what the value must be, not how to quote it.
    if (pattern !== undefined && !new RegExp(pattern, 'u').test(raw)) {
      const must = patternMessage(name, pattern);
      return pattern.includes('ms|s|m|h') && typeof node.value === 'number' ? `${must}, not the number ${raw} (a number alone has no unit: ${raw}s is ${raw} seconds)` : must;
    }
    const what = typeof node.value === 'number' ? `the number ${String(node.value)}` : `the boolean ${String(node.value)}`;
    return `${name} is ${what} here; quote it: "${raw}"`;
  }
  return `${name} must be ${TYPE_WORDS[expected] ?? expected}`;
}

/** "https://h/x/api/v1/" → "https://h/x": the base URL dus-sync wants. */
export function withoutApiV1(url: string): string {
  return url.replace(/\/api\/v1\/*$/i, '');
}

function patternMessage(name: string, pattern: string): string {
  if (pattern.includes('[hH][tT]')) return `${name} must start with http:// or https://`;
  if (pattern.includes('ms|s|m|h')) return `${name} must be a duration such as 30s, 5m or 1h`;
  return `${name} must match the pattern ${pattern}`;
}

// ---------------------------------------------------------------- a field in the wrong place

type SchemaNode = { properties?: Record<string, SchemaNode>; items?: SchemaNode; additionalProperties?: SchemaNode | boolean; $ref?: string };

/** The schema a document is checked against, by its kind: a field's right place depends on it. */
function documentSchema(doc: Document.Parsed): { root: SchemaNode; definitions: Record<string, SchemaNode> } | undefined {
  const kind = isMap(doc.contents) ? doc.get('kind') : undefined;
  if (kind === 'Config') {
    const config = readSchemaFile('config') as SchemaNode & { definitions?: Record<string, SchemaNode> };
    return { root: config, definitions: config.definitions ?? {} };
  }
  if (kind !== 'Firmware' && kind !== 'Action') return undefined;
  const definitions = (readSchemaFile('resource') as { definitions: Record<string, SchemaNode> }).definitions;
  const root = definitions[`${kind}Document`];
  return root ? { root, definitions } : undefined;
}

const fieldPlaces = new Map<SchemaNode, Map<string, string[][]>>();

/**
 * Every place a field name is known in a schema: "is_deactivated" → [["spec"]]. Array items are
 * the segment "[]", the values of a free-form map "*". Built once per schema.
 */
function placesOf(schema: { root: SchemaNode; definitions: Record<string, SchemaNode> }): Map<string, string[][]> {
  let places = fieldPlaces.get(schema.root);
  if (places) return places;
  const found = new Map<string, string[][]>();
  const walk = (node: SchemaNode | boolean | undefined, path: string[]): void => {
    if (typeof node !== 'object' || path.length > 6) return;
    const resolved = node.$ref?.startsWith('#/definitions/') ? schema.definitions[node.$ref.slice('#/definitions/'.length)] : node;
    if (!resolved) return;
    for (const [name, child] of Object.entries(resolved.properties ?? {})) {
      found.set(name, [...(found.get(name) ?? []), path]);
      walk(child, [...path, name]);
    }
    walk(resolved.items, [...path, '[]']);
    walk(resolved.additionalProperties, [...path, '*']);
  };
  walk(schema.root, []);
  places = found;
  fieldPlaces.set(schema.root, places);
  return places;
}

/** "spec.phases[]" → "a phase of spec.phases" style words for a place. */
function placeWords(place: readonly string[]): string {
  if (place.length === 0) return 'the top level';
  const last = place[place.length - 1];
  if (last === '[]') return `an item of ${label(place.slice(0, -1))}`;
  if (last === '*') return `each entry of ${label(place.slice(0, -1))}`;
  return label(place);
}

/** The one other place where the schema of the document's kind knows this field, if there is exactly one. */
function rightPlace(doc: Document.Parsed, key: string, segments: readonly string[]): string[] | undefined {
  const schema = documentSchema(doc);
  if (!schema) return undefined;
  const here = segments.map((s) => (/^\d+$/.test(s) ? '[]' : s)).join('/');
  const elsewhere = (placesOf(schema).get(key) ?? []).filter((p) => p.join('/') !== here);
  return elsewhere.length === 1 ? elsewhere[0] : undefined;
}

/**
 * `; it belongs in spec: indent it under spec` for a field that the schema knows, but in another
 * place: mostly a line indented too little (is_deactivated at column 1 after spec:).
 */
function placementHint(doc: Document.Parsed, key: string, segments: readonly string[]): string | undefined {
  const place = rightPlace(doc, key, segments);
  if (!place) return undefined;
  const here = segments.map((s) => (/^\d+$/.test(s) ? '[]' : s));
  const deeper = place.length > here.length && here.every((s, i) => place[i] === s);
  if (!deeper) return `; it belongs in ${placeWords(place)}: move it there`;
  const inner = place.slice(here.length).find((s) => s === '[]' || s === '*');
  if (inner === '[]') return `; it belongs in ${placeWords(place)}: indent it to line up with the fields of that item`;
  if (inner === '*') return `; it belongs in ${placeWords(place)}: indent it under the name of that entry`;
  return `; it belongs in ${placeWords(place)}: indent it under ${place[here.length]!}`;
}
