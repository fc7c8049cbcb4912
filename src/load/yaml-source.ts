// YAML text → documents that keep their source positions, and the way back from a JSON
// pointer to the line and column where the user wrote the value.
import { LineCounter, parseAllDocuments, isAlias, isMap, isPair, isScalar, isSeq, type Document, type Node } from 'yaml';
import type { ConfigIssue } from '../errors.js';
import { formatSize, MAX_FILE_SIZE } from '../limits.js';
import { RAISE_LIMIT } from './read-file.js';

/** Files above this size are refused before parsing (the default of --max-file-size): desired state is small, a huge file is a mistake. */
export const MAX_FILE_BYTES = MAX_FILE_SIZE.default;
/** Alias expansions allowed per document (the "billion laughs" guard). */
export const MAX_ALIAS_COUNT = 100;

export interface YamlSource {
  readonly file: string;
  readonly text: string;
  readonly lineCounter: LineCounter;
  /** The non-empty, error-free documents. */
  readonly documents: readonly Document.Parsed[];
  /** Syntax problems; when present, `documents` is empty. */
  readonly issues: readonly ConfigIssue[];
}

export function issueAt(file: string, lc: LineCounter, offset: number, pointer: string, message: string): ConfigIssue {
  const { line, col } = lc.linePos(offset);
  return { file, line, column: col, pointer, message };
}

/**
 * Parses every document of a file. A file with a syntax error yields that one error and no
 * documents: later errors are usually echoes of the first, and half a file would produce
 * misleading "missing field" reports. Duplicate keys are independent, so each is reported.
 */
export function parseYamlSource(file: string, rawText: string, maxBytes = MAX_FILE_BYTES): YamlSource {
  const lineCounter = new LineCounter();
  const fail = (message: string): YamlSource => ({
    file, text: rawText, lineCounter, documents: [],
    issues: [{ file, line: 1, column: 1, pointer: '', message }],
  });
  if (rawText.length > maxBytes) {
    return fail(`the file is larger than ${formatSize(maxBytes)}; desired-state files are small, so this is probably not one: split it, move it out of the resources, or ${RAISE_LIMIT}`);
  }
  if (rawText.includes('\u0000')) {
    return fail('the file is not UTF-8 text (is it binary?); remove it from the resources folder');
  }
  // Editors show line 1 without the BOM, so positions are counted without it.
  const text = rawText.charCodeAt(0) === 0xfeff ? rawText.slice(1) : rawText;
  // logLevel 'error': yaml would otherwise print its warnings (a mapping used as a key) on
  // standard error as Node process warnings, outside the clean issue list.
  const docs = parseAllDocuments(text, { lineCounter, uniqueKeys: true, prettyErrors: false, logLevel: 'error' });
  const all = Array.isArray(docs) ? docs : [];
  const errors = all.flatMap((d) => d.errors);
  if (errors.length > 0) {
    const dupes = errors.filter((e) => e.code === 'DUPLICATE_KEY');
    const shown = dupes.length === errors.length ? dupes : [errors[0]!];
    return {
      file, text, lineCounter, documents: [],
      issues: shown.map((e) => {
        const over = INDENT_CODES.has(e.code) ? overIndented(text, e.pos[0]) : undefined;
        if (over) return issueAt(file, lineCounter, over.offset, '', over.message);
        // yaml puts a badly indented line's error at its column 1: point at where its text starts.
        const offset = e.code === 'BAD_INDENT' ? e.pos[0] + (/^[ \t]*/.exec(text.slice(e.pos[0]))?.[0].length ?? 0) : e.pos[0];
        return issueAt(file, lineCounter, clampToContent(text, offset), '', syntaxMessage(e.code, e.message, text, e.pos[0]));
      }),
    };
  }
  const documents = all.filter((d) => d.contents !== null && !(isScalar(d.contents) && d.contents.value === null && d.contents.range[0] === d.contents.range[1]));
  return { file, text, lineCounter, documents, issues: [] };
}

/**
 * An unterminated bracket or quote is reported at the end of the file, past the last line
 * the user sees; point at the last line with content instead.
 */
function clampToContent(text: string, offset: number): number {
  const end = text.trimEnd().length;
  if (offset < end) return offset;
  const lineStart = text.lastIndexOf('\n', end - 1) + 1;
  return lineStart + (/^\s*/.exec(text.slice(lineStart))?.[0].length ?? 0);
}

/** The errors yaml gives for a line indented too far: it reports them at the line above (or at column 1). */
const INDENT_CODES = new Set(['BLOCK_AS_IMPLICIT_KEY', 'MULTILINE_IMPLICIT_KEY', 'BAD_INDENT']);

interface TextLine {
  readonly start: number;
  readonly text: string;
}

function lineAt(text: string, offset: number): TextLine {
  const start = text.lastIndexOf('\n', offset - 1) + 1;
  const end = text.indexOf('\n', start);
  return { start, text: text.slice(start, end < 0 ? text.length : end).replace(/\r$/, '') };
}

function isContent(line: TextLine): boolean {
  return !/^\s*(#.*)?$/.test(line.text);
}

/** The next (or previous) line with content, skipping blank lines and comments. */
function neighbour(text: string, line: TextLine, step: 1 | -1): TextLine | undefined {
  let at = line;
  for (;;) {
    const offset = step === 1 ? text.indexOf('\n', at.start) + 1 : at.start - 1;
    if ((step === 1 && offset <= 0) || (step === -1 && offset < 0) || offset >= text.length) return undefined;
    at = lineAt(text, offset);
    if (isContent(at)) return at;
  }
}

/** `    - name: x` → the key "name" and its column (0-based), when the line is `key: value`. */
function keyWithValue(line: TextLine): { key: string; column: number } | undefined {
  const m = /^(\s*(?:-\s+)*)([^\s#'"{[-][^:#]*?|"[^"]*"|'[^']*'):[ \t]+[^\s#]/.exec(line.text);
  return m ? { key: m[2]!, column: m[1]!.length } : undefined;
}

/**
 * A line indented further than the key-with-a-value above it. yaml reports that at the line
 * above (the value it would extend) or at column 1; the user needs the line that moved.
 */
function overIndented(text: string, offset: number): { offset: number; message: string } | undefined {
  const at = lineAt(text, offset);
  // The error is on the key above (its value), on the over-indented line itself, or on a blank
  // line between them.
  const pairs = isContent(at)
    ? [[at, neighbour(text, at, 1)], [neighbour(text, at, -1), at]] as const
    : [[neighbour(text, at, -1), neighbour(text, at, 1)]] as const;
  for (const [above, below] of pairs) {
    if (!above || !below) continue;
    const key = keyWithValue(above);
    const indent = /^[ \t]*/.exec(below.text)![0].length;
    if (!key || indent <= key.column) continue;
    const line = text.slice(0, above.start).split('\n').length;
    return {
      offset: below.start + indent,
      message: `YAML syntax error: this line is indented more than "${key.key}" on line ${line}, whose value is already given; line it up with "${key.key}" (or fix line ${line})`,
    };
  }
  return undefined;
}

function syntaxMessage(code: string, message: string, text: string, offset: number): string {
  if (code === 'DUPLICATE_KEY') {
    const key = /^[^\s:]+/.exec(text.slice(offset))?.[0] ?? '';
    return `duplicate key${key ? ` "${key}"` : ''}: each key may appear once in a mapping; remove or merge the second one`;
  }
  // The parser ran out of stack: the document nests too deeply, it is not a syntax mistake.
  if (code === 'RESOURCE_EXHAUSTION') return 'the YAML is nested too deeply to be read; flatten it (desired-state files are a few levels deep)';
  // yaml's own message minus the "at line X, column Y:" suffix and the code excerpt.
  const first = message.split(/ at line \d+, column \d+/)[0]!.trim().replace(/\.$/, '');
  return `YAML syntax error: ${first.charAt(0).toLowerCase()}${first.slice(1)}; fix the YAML syntax`;
}

/** "/spec/dependencies/0" → ["spec", "dependencies", "0"] */
export function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

export function toPointer(segments: readonly (string | number)[]): string {
  return segments.map((s) => '/' + String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

export interface Located {
  /** The value node (undefined for `key:` with no value, or a missing path). */
  readonly value?: Node;
  /** The key node, when the last step was a mapping key. */
  readonly key?: Node;
  /** The deepest node reached: where to point when the path does not exist. */
  readonly nearest: Node;
}

/** Follows a JSON pointer through the YAML nodes (through aliases too). */
export function locate(doc: Document.Parsed, segments: readonly string[]): Located {
  let node = doc.contents as Node;
  let key: Node | undefined;
  for (const seg of segments) {
    const target = isAlias(node) ? (node.resolve(doc) as Node | undefined) : node;
    if (isMap(target)) {
      const pair = target.items.find((p) => isPair(p) && scalarKey(p.key) === seg);
      if (!pair) return { nearest: node };
      key = pair.key as Node;
      const value = pair.value as Node | null;
      if (!value) return { key, nearest: key };
      node = value;
    } else if (isSeq(target)) {
      const item = target.items[Number(seg)] as Node | undefined;
      if (!item) return { nearest: node };
      key = undefined;
      node = item;
    } else {
      return { nearest: node };
    }
  }
  return { value: node, key, nearest: node };
}

function scalarKey(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  return undefined;
}

export function offsetOf(node: Node): number {
  return node.range?.[0] ?? 0;
}
