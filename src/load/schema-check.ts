// Ajv against schemas/, with errors turned into plain sentences at the user's line and column.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { isMap, isScalar, isSeq, isPair, isAlias, type Document, type Node } from 'yaml';
import type { ConfigIssue } from '../errors.js';
import { readSchemaFile } from '../schemas.js';
import { hint } from './did-you-mean.js';
import { issueAt, locate, offsetOf, pointerSegments, toPointer, type YamlSource } from './yaml-source.js';

// ajv-formats is CommonJS: under Node's ESM loader its default export is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

const validators = new Map<'resource' | 'config', ValidateFunction>();

/** Compiled once per process, on first use (compiling costs tens of milliseconds). */
export function validator(name: 'resource' | 'config'): ValidateFunction {
  let v = validators.get(name);
  if (!v) {
    // verbose: the did-you-mean hints need each error's parentSchema. validateSchema: false
    // because checking our own schema against the draft-07 meta-schema compiled that too, on
    // every start; test/load/schemas-valid.test.ts checks the shipped schemas once instead.
    const ajv = new Ajv({ allErrors: true, strict: true, verbose: true, validateSchema: false });
    addFormats(ajv);
    v = ajv.compile(readSchemaFile(name));
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
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const keyNode = pair.key as Node | null;
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
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    const segments = pointerSegments(e.instancePath);
    const extra = extraSegment(e);
    const pointer = toPointer(extra === undefined ? segments : [...segments, extra]);
    if (isCovered(pointer, seen)) continue;
    seen.add(pointer);
    out.push(toIssue(src, doc, e, segments, pointer));
  }
  return out;
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

function toIssue(src: YamlSource, doc: Document.Parsed, e: ErrorObject, segments: string[], pointer: string): ConfigIssue {
  const at = locate(doc, segments);
  const where = (node: Node | undefined) => issueAt(src.file, src.lineCounter, offsetOf(node ?? at.nearest), pointer, '');
  const name = shortLabel(segments);
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String((e.params as { additionalProperty: string }).additionalProperty);
      const keyAt = locate(doc, [...segments, key]);
      const known = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      return { ...where(keyAt.key), message: `unknown field "${key}" in ${segments.length ? label(segments) : 'the document'}${hint(key, known)}` };
    }
    case 'required': {
      const missing = String((e.params as { missingProperty: string }).missingProperty);
      return { ...where(at.key ?? at.value), message: `${segments.length ? label(segments) : 'the document'} is missing the required field "${missing}"` };
    }
    case 'type': {
      const expected = String((e.params as { type: string }).type);
      return { ...where(at.value ?? at.key), message: typeMessage(src, at.value, name, expected) };
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
    case 'minLength':
      return { ...where(at.value ?? at.key), message: `${name} must not be empty` };
    case 'pattern':
      return { ...where(at.value), message: patternMessage(name, String((e.params as { pattern: string }).pattern)) };
    default:
      return { ...where(at.value ?? at.key), message: `${name} ${e.message ?? 'is invalid'}` };
  }
}

/** A plain scalar where a string is expected is the classic YAML trap: say how to quote it. */
function typeMessage(src: YamlSource, node: Node | undefined, name: string, expected: string): string {
  if (expected === 'string' && isScalar(node) && (typeof node.value === 'number' || typeof node.value === 'boolean')) {
    const raw = sourceText(src, node);
    const what = typeof node.value === 'number' ? `the number ${String(node.value)}` : `the boolean ${String(node.value)}`;
    return `${name} is ${what} here; quote it: "${raw}"`;
  }
  return `${name} must be ${TYPE_WORDS[expected] ?? expected}`;
}

function patternMessage(name: string, pattern: string): string {
  if (pattern.includes('[hH][tT]')) return `${name} must start with http:// or https://`;
  if (pattern.includes('ms|s|m|h')) return `${name} must be a duration such as 30s, 5m or 1h`;
  return `${name} must match the pattern ${pattern}`;
}
