// Every API key the process reads is registered here, and every output channel passes its text
// through redact() on the way out (src/cli/output.ts wraps standard output and error; the agent's
// logger, its HTTP server and the files dus-sync writes call it themselves).
//
// What counts as a key, for a key of 8 characters or more:
// - any 8 or more consecutive characters of it: a server or a proxy that cuts a message short
//   (or a message cut at our own limits) leaves a prefix, a suffix or a middle part;
// - the same in the standard encodings, once or twice over (JSON string escapes, percent-encoding
//   as encodeURIComponent and as forms do), matched exactly; and in any other spelling of JSON,
//   JavaScript and percent escapes or HTML character references (`\u0041`, `\u{41}`, `\101`,
//   `\/`, `%2b`, `&#95;`, `&#x00005f`, `&lowbar;`, fewer characters encoded): the text is also
//   searched as decoded, up to three times over, and a match is cut out of the text as written,
//   around whole escapes;
// - a space and `+` are one character to the search (so are the look-alikes FOLD lists), so a
//   key form-encoded in part, `+` for one space and %20 for the next, is the key;
// - base64, standard and URL-safe, with or without padding, of the key and of its JSON-escaped
//   and percent-encoded forms, in each of the three alignments (base64 of "x" + key encodes the
//   key differently from base64 of key alone). A fragment of base64 counts from 8 characters
//   (6 bytes of the key); the last 2-3 characters of a base64 run cut mid-key may remain.
// Keys of 4 to 7 characters (test keys; real ones are long) are matched whole only: as decoded,
// with the look-alikes folded, and in base64 in each alignment.
//
// The search is one pass over the text per decoding level: the hash of a 4-character gram every
// 5 characters (every 8-character run holds one) is looked up in a bitmap of the forms' grams;
// only a hit has the windows around it hashed, looked up among the forms' windows, checked and
// extended. Text without `%`, `\` or `&` has a single level. See bench/redact.mjs.

import { decodeHTML } from 'entities';

export const REDACTED = '[REDACTED]';

/** Characters of a key (or of one of its encodings) that, together, are treated as the key. */
export const MIN_FRAGMENT = 8;
/** Very short values would redact ordinary words; keys are long. */
const MIN_SECRET = 4;
const MAX_DECODE_LEVELS = 4;

const secrets = new Set<string>();
let compiled: Matcher | undefined;
let generation = 0;

export function registerSecret(value: string): void {
  if (value.length < MIN_SECRET || secrets.has(value)) return;
  secrets.add(value);
  compiled = undefined;
  generation += 1;
}

export function clearSecretsForTests(): void {
  secrets.clear();
  compiled = undefined;
  generation += 1;
}

/**
 * Whether the text holds a whole registered key as written: for refusing a value that would send
 * one (a phase name, a tenant name, base_url). Redaction also hides any 8 characters of a key,
 * which suits output; refusing on that would refuse a tenant "fallback" beside a key
 * "dus-api-key-fallback-…". A key holds no line break, so strings joined by one are searched at once.
 */
export function holdsWholeKey(text: string): boolean {
  for (const s of secrets) if (text.includes(s)) return true;
  return false;
}

/** Whether any key is registered (nothing to redact, nothing to look for, when none is). */
export function anySecrets(): boolean {
  return secrets.size > 0;
}

/** Changes whenever the set of keys does: a text redacted under an older generation must be redacted again. */
export function secretsGeneration(): number {
  return generation;
}

/** The text with every form of every registered key replaced by [REDACTED]. */
export function redact(text: string): string {
  if (secrets.size === 0 || text.length < MIN_SECRET) return text;
  const m = matcher();
  // Decoding only shortens text: a string shorter than every form cannot hold one.
  if (text.length < m.shortest) return text;
  const regions = findRegions(text, m);
  return regions.length === 0 ? text : cut(text, regions);
}

/** Whether the text holds any form of a registered key. */
export function containsSecret(text: string): boolean {
  if (secrets.size === 0 || text.length < MIN_SECRET) return false;
  const m = matcher();
  return text.length >= m.shortest && findRegions(text, m).length > 0;
}

/**
 * A deep copy with every string (and object key, and Map key) redacted, or the value itself
 * when nothing in it holds a key. `onFound` is told the path of each value that held one, e.g.
 * `phases[1].info.token` (a key that was an object key shows as [REDACTED] in the path too).
 */
export function redactDeep<T>(value: T, onFound?: (path: string) => void): T {
  if (secrets.size === 0) return value;
  if (typeof value === 'object' && value !== null && holdsNoKey(value)) return value;
  return walk(value, [], onFound ?? (() => undefined), 0) as T;
}

/**
 * Whether the text holds a character with which redact starts decoding (percent, backslash and
 * HTML escapes): /[%\\&]/.test(text), by three native searches, ten times faster on the
 * megabytes of values and answers a plan searches.
 */
function hasEscapeStart(text: string): boolean {
  return text.includes('%') || text.includes('\\') || text.includes('&');
}

/**
 * Whether a text of strings joined one per line may hold a key as redact would find it in one of
 * them: without a character that starts an escape, redact searches a string as it is written, so
 * a key it would find stands in the text as written (a hit across two lines is a false alarm).
 */
export function textMayHoldKey(text: string): boolean {
  return hasEscapeStart(text) || containsSecret(text);
}

/** Whether redaction would change the text: it holds a key, 8 or more characters of one, or an encoding of either. */
export function showsKey(text: string): boolean {
  return textMayHoldKey(text) && redact(text) !== text;
}

/**
 * Whether no string of the value (nor any object or Map key) holds a key, decided by one search
 * over all of them as one text, one per line, as walk would read them: without a character
 * that starts an escape, redact searches a string as it is written, so a key walk would find
 * stands in that text too (a hit across two lines, an escape character, a value deeper than walk
 * goes: false, and walk decides). A plan of 10,000 changes was 13,000 searches and an object
 * per property; now one search of the text.
 */
function holdsNoKey(value: object): boolean {
  const strings: string[] = [];
  const gather = (v: unknown, depth: number): boolean => {
    if (typeof v === 'string') { strings.push(v); return true; }
    if (v === null || typeof v !== 'object' || v instanceof Error) return true;
    if (depth > MAX_DEPTH) return false;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) if (!gather(v[i], depth + 1)) return false;
      return true;
    }
    if (v instanceof Map) {
      for (const [k, x] of v) {
        if (typeof k === 'string') strings.push(k);
        if (!gather(x, depth + 1)) return false;
      }
      return true;
    }
    if (v instanceof Set) {
      for (const x of v) if (!gather(x, depth + 1)) return false;
      return true;
    }
    for (const k of Object.keys(v)) {
      strings.push(k);
      if (!gather((v as Record<string, unknown>)[k], depth + 1)) return false;
    }
    return true;
  };
  if (!gather(value, 0)) return false;
  const text = strings.join('\n');
  return !textMayHoldKey(text);
}

/** Deep copy with every registered secret replaced, for objects that get logged or thrown. */
export function redactValue<T>(value: T): T {
  return redactDeep(value);
}

// ---------------------------------------------------------------- deep values

const MAX_DEPTH = 200;

/** A step of a path: an object key (shown `.name` or `["odd key"]`) or an index or Map key (`[…]`). */
type Step = { readonly key: string } | { readonly index: string };

function pathText(steps: readonly Step[]): string {
  let out = '';
  for (const s of steps) {
    if ('index' in s) out += `[${s.index}]`;
    else out += /^[A-Za-z_$][\w$-]*$/.test(s.key) ? (out === '' ? s.key : `.${s.key}`) : `[${JSON.stringify(s.key)}]`;
  }
  return out;
}

/**
 * The value with its strings redacted; parts without a key are shared, not copied (the walk
 * runs over whole live states, 20,000 firmwares, so it allocates only where it changes something).
 */
function walk(value: unknown, path: Step[], found: (path: string) => void, depth: number): unknown {
  if (typeof value === 'string') {
    const out = redact(value);
    if (out !== value) found(pathText(path));
    return out;
  }
  if (value === null || typeof value !== 'object' || value instanceof Error) return value;
  // Deeper than any document or response dus-sync reads: shown as text, still redacted.
  if (depth > MAX_DEPTH) return redact(safeJson(value));
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      path.push({ index: String(i) });
      const v = walk(value[i], path, found, depth + 1);
      path.pop();
      if (v !== value[i]) (copy ??= value.slice())[i] = v;
    }
    return copy ?? value;
  }
  if (value instanceof Map) {
    const entries: [unknown, unknown][] = [];
    let changed = false;
    for (const [k, v] of value) {
      let key: unknown = k;
      if (typeof k === 'string') {
        key = redact(k);
        if (key !== k) { changed = true; found(pathText([...path, { index: JSON.stringify(key) }])); }
      }
      path.push({ index: typeof key === 'string' ? JSON.stringify(key) : String(key) });
      const out = walk(v, path, found, depth + 1);
      path.pop();
      if (out !== v) changed = true;
      entries.push([key, out]);
    }
    return changed ? new Map(entries) : value;
  }
  if (value instanceof Set) {
    const items = [...value];
    const out = walk(items, path, found, depth);
    return out === items ? value : new Set(out as unknown[]);
  }
  const entries: [string, unknown][] = [];
  let changed = false;
  const seen = new Set<string>();
  for (const [k, v] of Object.entries(value)) {
    let key = redact(k);
    if (key !== k) {
      changed = true;
      // Two keys that differ only in their secret part would collide once redacted.
      for (let n = 2; seen.has(key); n++) key = `${REDACTED}#${n}`;
      found(pathText([...path, { key }]));
    }
    seen.add(key);
    path.push({ key });
    const out = walk(v, path, found, depth + 1);
    path.pop();
    if (out !== v) changed = true;
    entries.push([key, out]);
  }
  return changed ? Object.fromEntries(entries) : value;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '(unprintable)';
  }
}

// ---------------------------------------------------------------- the matcher

const W = MIN_FRAGMENT;
const B = 0x01000193;
/** The sampled grams: Q characters every STEP, so that every run of W characters holds one. */
const Q = 4; // scan writes the hash of a gram out for 4 characters
const STEP = W - Q + 1;
const BITS = 20;
/**
 * Characters a reader takes for one another are compared as one: a space and `+` (forms write a
 * space as `+`, and a server may mix that with `%20` and with characters left as they are), a
 * no-break space (`&nbsp;`), and the hyphens that HTML names for `-` (`&hyphen;`, `&dash;`,
 * `&minus;`). The forms are folded once; the text is folded as it is read, by this table.
 */
const FOLD = (() => {
  const table = new Uint16Array(0x10000);
  for (let c = 0; c < table.length; c++) table[c] = c;
  for (const c of [0x20, 0xa0]) table[c] = 0x2b;
  for (const c of [0x2010, 0x2011, 0x2012, 0x2212]) table[c] = 0x2d;
  return table;
})();
const FOLDABLE = /[ \u00a0\u2010-\u2012\u2212]/g;

function fold(text: string): string {
  return text.replace(FOLDABLE, (c) => String.fromCharCode(FOLD[c.charCodeAt(0)]!));
}

const MASK = (1 << BITS) - 1;

interface Matcher {
  /** The forms searched by fragment: each key, encoded each way. */
  readonly forms: readonly string[];
  /**
   * Every W-character window of every form, grouped by its hash's bucket (the top `bucketBits`
   * of mix): bucket b holds entries starts[b] to starts[b + 1] - 1, each a form (formOf) and the
   * window's offset in it (offsetOf). Typed arrays, 8 bytes a window: a Map of window strings was
   * some 100 bytes a window, 1.6 GB for 200 keys of 4,096 characters.
   */
  readonly starts: Uint32Array;
  readonly formOf: Uint32Array;
  readonly offsetOf: Uint32Array;
  readonly bucketShift: number;
  /** A bitmap of the windows' hashes: a candidate window is rejected by one lookup. */
  readonly bits: Uint32Array;
  /** A bitmap of the hashes of every Q-character gram of the forms: the sampled grams are looked up here first. */
  readonly grams: Uint32Array;
  /** Keys too short for the fragment rule (and their base64), matched whole. */
  readonly whole: readonly string[];
  /** The length of the shortest text that can hold a match. */
  readonly shortest: number;
}

function matcher(): Matcher {
  compiled ??= compile([...secrets]);
  return compiled;
}

function jsonEscape(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** application/x-www-form-urlencoded: a space is `+`, and `*` is left as it is. */
function formEncode(text: string): string {
  return new URLSearchParams({ k: text }).toString().slice(2);
}

function base64Forms(text: string): string[] {
  const out: string[] = [];
  for (let r = 0; r < 3 && r < text.length; r++) {
    const std = Buffer.from(text.slice(r), 'utf8').toString('base64');
    out.push(std, std.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

/**
 * The base64 characters that a short key alone decides, in each of the three alignments (after 0,
 * 1 or 2 other bytes), standard and URL-safe: those whose 6 bits are all the key's (the first
 * after a byte before it, the last before what follows it, are mixed).
 */
function shortBase64(key: string): string[] {
  const bytes = Buffer.from(key, 'utf8');
  const out: string[] = [];
  for (let r = 0; r < 3; r++) {
    const std = Buffer.concat([Buffer.alloc(r), bytes]).toString('base64');
    const from = Math.ceil((8 * r) / 6);
    const to = Math.floor((8 * (r + bytes.length)) / 6);
    if (to - from < MIN_SECRET) continue;
    const part = std.slice(from, to);
    out.push(part, part.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

function compile(keys: readonly string[]): Matcher {
  const forms = new Set<string>();
  const whole = new Set<string>();
  for (const key of keys) {
    if (key.length < W) {
      whole.add(fold(key));
      for (const b of base64Forms(key).slice(0, 2)) whole.add(b.replace(/=+$/, ''));
      for (const b of shortBase64(key)) whole.add(b);
      continue;
    }
    // The standard encodings, once and twice, exactly: the decoded views below also find other
    // spellings of them (lower-case hex, fewer characters encoded), but not for a key that itself
    // holds something that decodes (`%0A`, `\\n`, `&amp;`).
    const once = [key, jsonEscape(key), encodeURIComponent(key), formEncode(key)];
    for (const f of once) forms.add(f);
    for (const f of once.slice(1)) for (const g of [jsonEscape(f), encodeURIComponent(f)]) forms.add(g);
    for (const source of new Set(once.slice(0, 3))) {
      for (const b of base64Forms(source)) forms.add(b);
    }
  }
  const list = [...new Set([...forms].map(fold))];
  const bits = new Uint32Array((MASK + 1) >>> 5);
  const grams = new Uint32Array((MASK + 1) >>> 5);
  let windows = 0;
  for (const form of list) windows += Math.max(0, form.length - W + 1);
  // About one window a bucket, from 2^8 to 2^BITS buckets.
  const bucketBits = Math.min(BITS, Math.max(8, Math.ceil(Math.log2(windows + 1))));
  const bucketShift = BITS - bucketBits;
  const starts = new Uint32Array((1 << bucketBits) + 1);
  const hashes = new Uint32Array(windows);
  let n = 0;
  list.forEach((form) => {
    for (let off = 0; off + W <= form.length; off++) {
      const idx = mix(hashOf(form, off, W));
      bits[idx >>> 5]! |= 1 << (idx & 31);
      hashes[n++] = idx;
      starts[(idx >>> bucketShift) + 1]! += 1;
    }
    for (let off = 0; off + Q <= form.length; off++) {
      const idx = mix(hashOf(form, off, Q));
      grams[idx >>> 5]! |= 1 << (idx & 31);
    }
  });
  for (let b = 1; b < starts.length; b++) starts[b]! += starts[b - 1]!;
  const formOf = new Uint32Array(windows);
  const offsetOf = new Uint32Array(windows);
  const fill = starts.slice(0, -1);
  n = 0;
  list.forEach((form, f) => {
    for (let off = 0; off + W <= form.length; off++) {
      const at = fill[hashes[n++]! >>> bucketShift]!++;
      formOf[at] = f;
      offsetOf[at] = off;
    }
  });
  const wholeList = [...whole].filter((w) => w.length >= MIN_SECRET);
  return { forms: list, starts, formOf, offsetOf, bucketShift, bits, grams, whole: wholeList, shortest: Math.min(W, ...wholeList.map((w) => w.length)) };
}

/** The hash of the `length` characters at `from`, folded. */
function hashOf(s: string, from: number, length: number): number {
  let h = 0;
  for (let i = from; i < from + length; i++) h = (Math.imul(h, B) + FOLD[s.charCodeAt(i)]!) | 0;
  return h;
}

function mix(h: number): number {
  return (h ^ (h >>> 13) ^ (h >>> 23)) & MASK;
}

// ---------------------------------------------------------------- searching

/** A view of the text: as written, or decoded with a map from its characters back to spans of the text. */
interface Level {
  readonly view: string;
  readonly map?: (i: number) => Region;
}

type Region = [start: number, end: number];

/**
 * Views are split by escape family on every level that is decoded: a stray escape start (a
 * path's `\` before a key's digits, read as octal) can eat a key's first characters in the view
 * that decodes every family, while another family spells the rest (`\3770ab&#99;d`), so no view
 * held 8 of them in a row.
 * Where an escape that ate a letter or a digit (`%3a`, `\101`, `\u0041`, `\n`, `&#99`) is
 * followed within 8 characters by another family's (a spot), the text is also decoded with the
 * first family left as written, on this level and every level below.
 */
const SPLIT_DEPTHS = MAX_DECODE_LEVELS - 1;
/**
 * How much text those chains may decode (spots far apart are decoded in windows, at little
 * cost): twice the text, and at least 2 Mi characters; a chain begun is finished. A text of
 * every family at every level (hostile; a decode of 1 MB of escapes takes some 150-350 ms) would
 * make a dozen chains. Past the budget, a spot's place and the 16 characters after it are
 * redacted without a look: the fail-closed way.
 */
const SPLIT_BUDGET = 2;
const SPLIT_BUDGET_FLOOR = 2 * 1024 * 1024;
const FAIL_SPAN = 2 * W;
/**
 * How far past a spot its window reaches, in characters of the level decoded: 8 of a key's
 * characters, escaped again on each level below (`\\\\u0041` is 8 characters for one two levels
 * down), fit many times over.
 */
const WINDOW = 256;
/** The characters a window must still hold on the last level it decodes to: a spot's eaten ones and 8 of a key, twice over. */
const WINDOW_DEEP = 3 * W;

interface Search {
  readonly m: Matcher;
  readonly regions: Region[];
  /** Text the chains that leave a family as written may still decode. */
  budget: number;
  /** The views of those chains, by the families they leave and the depth: one reached twice is searched once. */
  readonly made: Map<number, Set<string>>;
}

function findRegions(text: string, m: Matcher): Region[] {
  const search: Search = { m, regions: [], budget: Math.max(SPLIT_BUDGET * text.length, SPLIT_BUDGET_FLOOR), made: new Map() };
  searchLevels({ view: text }, 0, 0, true, search);
  return search.regions;
}

/**
 * Searches the view and the views decoding it level by level, the families of `skip` left as
 * written (`first`: those left on the first level decoded, where it differs). The chains that
 * decode every family split on their levels where spots and junctions are. `whole`: the view is
 * a level's whole text (not a window), so a view met again is not searched again. `extra`: a
 * chain besides the one that decodes every family on every level, paid from the budget.
 * Returns the length of the last view searched.
 */
function searchLevels(start: Level, firstDepth: number, skip: number, whole: boolean, search: Search, first = skip, extra = skip !== 0): number {
  const { m, regions } = search;
  let level: Level | undefined = start;
  let searched = start.view.length;
  for (let depth = firstDepth; level !== undefined; depth++) {
    const lv: Level = level;
    searched = lv.view.length;
    const add = (s: number, e: number) => {
      regions.push(regionOf(lv, s, e));
    };
    if (m.forms.length > 0) scan(lv.view, m, add);
    if (m.whole.length > 0) {
      // Folded as the forms are (a space and `+` are one, so are the hyphens): one character for one.
      const view = fold(lv.view);
      for (const w of m.whole) {
        for (let i = view.indexOf(w); i >= 0; i = view.indexOf(w, i + 1)) add(i, i + w.length);
      }
    }
    if (depth + 1 >= MAX_DECODE_LEVELS || !hasEscapeStart(lv.view)) break;
    const left = depth === firstDepth ? first : skip;
    const next = decode(lv, left);
    if (extra) search.budget -= lv.view.length;
    if (next === undefined) break;
    if (extra && whole && !firstTime(search, left, depth, next.view)) break;
    if (left === 0 && depth < SPLIT_DEPTHS) {
      if (next.spots !== undefined) splitSpots(lv, next, depth, search);
      if (next.junctions !== undefined) splitJunctions(lv, next, depth, search);
    }
    level = next;
  }
  return searched;
}

/** The spots of a level decoded with every family: the text decoded again with the family that ate left as written, on this level and every level below. */
function splitSpots(lv: Level, next: Decoded, depth: number, search: Search): void {
  for (let f = 1; f < FAMILIES; f <<= 1) {
    if ((next.eating & f) === 0) continue;
    // Few spots: only the text around each is decoded again (most texts, a few escapes).
    splitOnce(lv, spotWindows(next, f), search,
      (start, end) => searchWindow(lv, start, end, depth, f, search),
      () => failClosed(next, next.spots!, 2, f, search.regions),
      () => {
        const apart = decode(lv, f);
        if (apart !== undefined && firstTime(search, f, depth, apart.view)) searchLevels(apart, depth + 1, f, true, search);
      });
  }
}

/**
 * The junctions of a level decoded with every family: the text decoded again as a reader that
 * decodes some formats (HTML, percent, JavaScript) a round before the others does, a junction's
 * format among the first: those decoded on this level, the others as written (for the next),
 * then every family on the levels below (`&#92;\12\063…` is `\12345678` to a reader of HTML,
 * then JavaScript).
 */
function splitJunctions(lv: Level, next: Decoded, depth: number, search: Search): void {
  const present = FORMATS.filter((f) => (next.present & f) !== 0);
  // Every proper subset of the formats present that holds a junction's format.
  for (let pick = 1; pick < (1 << present.length) - 1; pick++) {
    let first = 0;
    for (let i = 0; i < present.length; i++) if ((pick & (1 << i)) !== 0) first |= present[i]!;
    if ((next.joining & first) === 0) continue;
    const left = (FAMILIES - 1) & ~first;
    splitOnce(lv, junctionWindows(lv, next, first), search,
      (start, end) => searchLevels(slice(lv, start, end), depth, 0, false, search, left, true),
      () => failClosed(next, next.junctions!, 3, first, search.regions),
      () => {
        const only = decode(lv, left);
        // (Its own key: a spot's chain may leave the same families on this level, and all below.)
        if (only !== undefined && firstTime(search, FAMILIES | left, depth, only.view)) searchLevels(only, depth + 1, 0, true, search, 0, true);
      });
  }
}

/**
 * One split of a level: its windows searched again when they are few; else the whole level
 * decoded again, within the budget; past the budget, each place redacted unread (fail-closed).
 */
function splitOnce(lv: Level, windows: readonly number[], search: Search, inWindow: (start: number, end: number) => void, unread: () => void, whole: () => void): void {
  if (fewWindows(windows, lv)) {
    for (let i = 0; i < windows.length; i += 2) inWindow(windows[i]!, windows[i + 1]!);
  } else if (search.budget <= 0) {
    unread();
  } else {
    search.budget -= lv.view.length;
    whole();
  }
}

/** Whether the windows cover little enough of the level that decoding them again costs less than decoding it whole. */
function fewWindows(windows: readonly number[], lv: Level): boolean {
  let around = 0;
  for (let i = 0; i < windows.length; i += 2) around += windows[i + 1]! - windows[i]!;
  return around * 4 <= lv.view.length;
}

/**
 * A spot's window, searched with the family left as written; made twice as long, up to the
 * level's whole view, while the last level it decodes to holds fewer than WINDOW_DEEP characters:
 * escapes padded or quoted again on the levels below (`&amp;#0000…0122;`) can push a key's
 * characters past any fixed length.
 */
function searchWindow(lv: Level, start: number, end: number, depth: number, family: number, search: Search): void {
  for (let to = end; ; to = Math.min(lv.view.length, start + 2 * (to - start))) {
    const deepest = searchLevels(slice(lv, start, to), depth, family, false, search, family, true);
    if (deepest >= WINDOW_DEEP || to >= lv.view.length) return;
    if (search.budget <= 0) {
      // Past the budget: the window is redacted unread, as far as it would have grown.
      const grown = Math.min(lv.view.length, start + 2 * (to - start));
      search.regions.push(regionOf(lv, start, grown));
      return;
    }
  }
}

/**
 * Around each spot of the family: from the escape that ate to WINDOW characters of the decoded
 * view past it, as offsets [start, end) pairs into the level's view; one a spot, overlapping or
 * not (each must hold its own spot's characters after it).
 */
function spotWindows(next: Decoded, family: number): number[] {
  const out: number[] = [];
  const spots = next.spots!;
  const last = next.view.length - 1;
  for (let i = 0; i < spots.length; i += 2) {
    if (spots[i] !== family) continue;
    const at = spots[i + 1]!;
    out.push(next.local(at)[0], next.local(Math.min(at + WINDOW, last))[1]);
  }
  return out;
}

/**
 * Around each junction of the families: the lines of the level that hold it and the escape it
 * joins, as offsets [start, end) pairs into the level's view, those that meet merged. A key is
 * one line of printable characters, so its spelling is in one line of every level, but for
 * JavaScript's line continuations (a backslash before the line break, perhaps still spelled as
 * an escape on this level), which join lines; any
 * fixed number of characters around the junction was too few for references padded with zeros.
 */
function junctionWindows(lv: Level, next: Decoded, families: number): number[] {
  const out: number[] = [];
  const junctions = next.junctions!;
  const view = lv.view;
  // The line breaks that end a line, found once (a search from each junction was quadratic in a
  // long line of many).
  const breaks: number[] = [];
  for (let br = view.indexOf('\n'); br >= 0; br = view.indexOf('\n', br + 1)) if (!continued(view, br)) breaks.push(br);
  for (let i = 0; i < junctions.length; i += 3) {
    if ((junctions[i]! & families) === 0) continue;
    const [at, after] = next.local(junctions[i + 1]!);
    const last = Math.max(after, junctions[i + 2]!);
    // The last break before `at` (the line starts after it), the first at or after `last`.
    const k = firstAtOrAfter(breaks, at) - 1;
    const start = k < 0 ? 0 : breaks[k]! + 1;
    const m = firstAtOrAfter(breaks, last);
    const end = m < breaks.length ? breaks[m]! + 1 : view.length;
    if (out.length > 0 && start <= out[out.length - 1]!) out[out.length - 1] = Math.max(out[out.length - 1]!, end);
    else out.push(start, end);
  }
  return out;
}

/** The index of the first of the sorted numbers that is at least `x` (their count when none is). */
function firstAtOrAfter(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < x) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/**
 * Whether the line break at `br` may be a JavaScript line continuation on this level or one
 * below: a backslash before it (and its CR), or an escape that may spell one (`&#92;`, `%5C`,
 * `\\x5c`, padded or quoted again): what an escape may hold, back to where it begins.
 */
function continued(view: string, br: number): boolean {
  let j = br > 0 && view.charCodeAt(br - 1) === 13 ? br - 2 : br - 1;
  if (j >= 0 && view.charCodeAt(j) === 92) return true;
  const stop = Math.max(0, br - MAX_CONTINUATION);
  for (; j >= stop; j--) {
    const c = view.charCodeAt(j);
    if (!isAlphanumeric(c) && c !== 59 && c !== 35 && c !== 123 && c !== 125) break;
  }
  if (j < 0) return false;
  const c = view.charCodeAt(j);
  return c === 92 || c === 37 || c === 38;
}

/** How far back from a line break an escape that may spell a backslash is looked for (zero-padding included). */
const MAX_CONTINUATION = 4096;

/** The level's view from `start` to `end`, mapped to the text as the level is. */
function slice(lv: Level, start: number, end: number): Level {
  const outer = lv.map;
  return { view: lv.view.slice(start, end), map: outer ? (j) => outer(start + j) : (j) => [start + j, start + j + 1] };
}

/** The characters [start, end) of a level's view, as a region of the text. */
function regionOf(lv: Level, start: number, end: number): Region {
  return lv.map ? [lv.map(start)[0], lv.map(end - 1)[1]] : [start, end];
}

function firstTime(search: Search, left: number, depth: number, view: string): boolean {
  const key = left * MAX_DECODE_LEVELS + depth; // left < 2 * FAMILIES
  let views = search.made.get(key);
  if (views === undefined) search.made.set(key, views = new Set());
  if (views.has(view)) return false;
  views.add(view);
  return true;
}

/** Every spot (or junction) of the families in this decoded view, and the 16 characters after it, as regions of the text. */
function failClosed(lv: Decoded, spots: readonly number[], stride: number, families: number, regions: Region[]): void {
  // Spots come in the view's order: runs that meet are one region, mapped once.
  let start = -1;
  let end = -1;
  const flush = () => { if (start >= 0) regions.push(regionOf(lv, start, end)); };
  for (let i = 0; i < spots.length; i += stride) {
    if ((spots[i]! & families) === 0) continue;
    const at = spots[i + 1]!;
    if (at > end) {
      flush();
      start = at;
    }
    end = Math.max(end, Math.min(at + FAIL_SPAN, lv.view.length));
  }
  flush();
}

/**
 * Every window of W characters that starts a fragment of a form, each extended to the whole run
 * it shares with the form. Only every STEP-th gram of Q characters is looked at: a run of W or
 * more characters holds one of them whole (its first STEP positions hold a sampled start, and
 * that gram ends inside the run, as Q + STEP - 1 = W). Only when the sampled gram is a gram of a
 * form are the STEP windows that hold it hashed and looked up. Text is mostly rejected at a
 * fraction of the work of a rolling hash per character.
 */
function scan(view: string, m: Matcher, add: (start: number, end: number) => void): void {
  const n = view.length;
  if (n < W) return;
  const { bits, grams, starts, formOf, offsetOf, bucketShift, forms } = m;
  for (let j = 0; j + Q <= n; j += STEP) {
    // hashOf(view, j, Q), written out: this line is most of the time redaction takes.
    const g = mix((Math.imul((Math.imul((Math.imul(FOLD[view.charCodeAt(j)]!, B) + FOLD[view.charCodeAt(j + 1)]!) | 0, B)
      + FOLD[view.charCodeAt(j + 2)]!) | 0, B) + FOLD[view.charCodeAt(j + 3)]!) | 0);
    if ((grams[g >>> 5]! & (1 << (g & 31))) === 0) continue;
    // The windows holding the gram at j: they start at j - STEP + 1 to j, and end in the text.
    for (let i = Math.max(0, j - STEP + 1); i <= j && i + W <= n; i++) {
      const idx = mix(hashOf(view, i, W));
      if ((bits[idx >>> 5]! & (1 << (idx & 31))) === 0) continue;
      let start = i;
      let end = i + W;
      let found = false;
      const bucket = idx >>> bucketShift;
      for (let e = starts[bucket]!; e < starts[bucket + 1]!; e++) {
        const form = forms[formOf[e]!]!;
        const off = offsetOf[e]!;
        // The window, folded, must be the form's at that offset (the forms are folded).
        let k = 0;
        while (k < W && FOLD[view.charCodeAt(i + k)] === form.charCodeAt(off + k)) k++;
        if (k < W) continue;
        found = true;
        let left = 0;
        while (left < i && left < off && FOLD[view.charCodeAt(i - left - 1)] === form.charCodeAt(off - left - 1)) left++;
        let right = 0;
        while (i + W + right < n && off + W + right < form.length && FOLD[view.charCodeAt(i + W + right)] === form.charCodeAt(off + W + right)) right++;
        start = Math.min(start, i - left);
        end = Math.max(end, i + W + right);
      }
      if (found) add(start, end);
    }
  }
}

// Percent-encoding (ASCII only: keys travel in an HTTP header, so they are ASCII), JSON and
// JavaScript backslash escapes (`\u0041`, `\u{41}`, `\x41`, octal `\101`, `\g` for "g", a backslash
// before a line break for nothing), and HTML character
// references as a browser reads them: every HTML5 name (`&lowbar;`, `&sol;`), decimal and hex of
// any length (`&#0000090;`, `&#x00005a;`), with or without the `;`. The references are decoded
// by the `entities` package (fb55's, the decoder of htmlparser2 and cheerio), which carries the
// whole table of 2,231 names and the HTML spec's rules for numbers and missing semicolons: a
// table written here would be a partial copy of it.
const ESCAPE = /%([0-7][0-9a-fA-F])|\\(\r\n|[^0-7xu%&])|\\u([0-9a-fA-F]{4})|\\u\{0*([0-9a-fA-F]{1,6})\}|\\x([0-9a-fA-F]{2})|\\([0-3][0-7]{2}|[0-7]{1,2})|(&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{0,31});?)/g;
/** A capture group of ESCAPE: undefined when that alternative did not match. */
type Group = string | undefined;
// JavaScript reads a backslash before any other character as that character (`\g` is "g"), and
// before a line break as nothing (a string continued on the next line). Not before `%` or `&`:
// a key may hold a backslash, and the next character spelled `%6C` or `&#108;` must be decoded
// beside it (`\%6C` is `\l` on the next level, where JavaScript's reading of `\l` follows).
const SIMPLE: Readonly<Record<string, string>> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\n': '', '\r': '', '\r\n': '', '\u2028': '', '\u2029': '' };

// The families of escapes, by which views are split (findRegions): one bit each.
const PCT = 1;
const SIMPLE_ESC = 2;
const UNICODE = 4;
const HEX = 8;
const OCTAL = 16;
const HTML = 32;
const FAMILIES = 64;
/** The formats, as a reader knows them: percent-encoding, JavaScript's escapes, HTML references. */
const JS_FAMILIES = SIMPLE_ESC | UNICODE | HEX | OCTAL;
const FORMATS: readonly number[] = [PCT, JS_FAMILIES, HTML];

function formatOf(family: number): number {
  return (family & JS_FAMILIES) !== 0 ? JS_FAMILIES : family;
}

function familyOf(pct: Group, simple: Group, u: Group, es6: Group, x: Group, octal: Group): number {
  if (pct !== undefined) return PCT;
  if (simple !== undefined) return SIMPLE_ESC;
  if (u !== undefined || es6 !== undefined) return UNICODE;
  if (x !== undefined) return HEX;
  return octal !== undefined ? OCTAL : HTML;
}

/** The escape `m` of that family, its captured group `g`, decoded (`m` itself when it stands for nothing). */
function unescapeOne(m: string, family: number, g: string): string {
  switch (family) {
    case PCT:
    case HEX:
      return String.fromCharCode(parseInt(g, 16));
    case SIMPLE_ESC:
      return SIMPLE[g] ?? g;
    case UNICODE: {
      const code = parseInt(g, 16);
      // \u{…} names a code point (one beyond U+10FFFF is none); \uXXXX a code unit.
      return m.charCodeAt(2) !== 123 /* { */ ? String.fromCharCode(code) : code <= 0x10ffff ? String.fromCodePoint(code) : m;
    }
    case OCTAL:
      return String.fromCharCode(parseInt(g, 8));
    default:
      return decodeReference(g);
  }
}

/** Text uses few distinct references (`&amp;`, `&quot;`, `&nbsp;`): each is decoded once. */
const references = new Map<string, string>();

function decodeReference(ref: string): string {
  let out = references.get(ref);
  if (out === undefined) {
    // Legacy mode, as in a text node: the most a reader's browser would decode.
    out = decodeHTML(ref);
    if (references.size >= 4096) references.clear();
    references.set(ref, out);
  }
  return out;
}

/** A decoded level: which families ate a character at a spot, and the spots; which made a junction, and the junctions. */
interface Decoded extends Level {
  readonly map: (i: number) => Region;
  /** Where a character of the view was in the level decoded (map is where it was in the text). */
  readonly local: (i: number) => Region;
  readonly eating: number;
  /** Per spot: its family, its index in the view; undefined when there is none. */
  readonly spots: number[] | undefined;
  /** The families decoded. */
  readonly present: number;
  readonly joining: number;
  /** Per junction: its family, its index in the view, where what it joins ends in the level decoded; undefined when there is none. */
  readonly junctions: number[] | undefined;
}

const ESCAPE_HERE = new RegExp(ESCAPE.source, 'y');

/**
 * The last offset in `text` at which another escape joins the escape that an escape's output
 * starts with the characters written after it (`end`): inside it, or right after it when more
 * characters would make it longer; -1 when the output starts none: a backslash, a percent sign
 * or an ampersand that, with them, spells an escape that stands for something (`&` before
 * `page=` does not: no reference is named so).
 */
function formedEnd(out: string, text: string, end: number): number {
  const c = out.charCodeAt(out.length - 1);
  if (c !== 92 && c !== 37 && c !== 38) return out.length > 1 && hasEscapeStart(out) ? end : -1;
  if (end >= text.length) return -1;
  const next = text.charCodeAt(end);
  // The common cases without a probe (a backslash before a letter; a percent sign before hex).
  if (c === 92 && !(next >= 48 && next <= 55) && next !== 120 && next !== 117 && next !== 37 && next !== 38) {
    // `\` and the character: two characters, never longer; joined right after only if it spells `\`.
    return next === 92 ? end + 1 : end;
  }
  if (c === 37) {
    if (!(next >= 48 && next <= 55) || end + 1 >= text.length || !isHexDigit(text.charCodeAt(end + 1))) return -1;
    const spelled = String.fromCharCode(parseInt(text.slice(end, end + 2), 16));
    return hasEscapeStart(spelled) ? end + 2 : end + 1;
  }
  // 40 characters hold any escape but a padded number, which is one already at that length.
  const probe = out[out.length - 1]! + text.slice(end, end + 40);
  const e = escapeAt(probe);
  if (e === undefined || e.spelled === e.m) return -1;
  const { m, family, spelled } = e;
  let formed = end + m.length - 1;
  if (m.length === probe.length) {
    // A number padded past the probe: to its last digit, and its `;`.
    while (formed < text.length && isHexDigit(text.charCodeAt(formed))) formed++;
    if (text.charCodeAt(formed) === 59) formed++;
    return formed;
  }
  // Another escape right after it joins it only if it would make it longer (`&#119` then
  // `\x32`), or if what it spells starts another in turn (`%26#92;` then `\12`).
  return isOpen(m, family) || hasEscapeStart(spelled) ? formed : formed - 1;
}

/** The escape that starts `probe`, its family and what it spells (itself when it stands for nothing); undefined when none does. */
function escapeAt(probe: string): { m: string; family: number; spelled: string } | undefined {
  ESCAPE_HERE.lastIndex = 0;
  const g = ESCAPE_HERE.exec(probe);
  if (g === null) return undefined;
  const family = familyOf(g[1], g[2], g[3], g[4], g[5], g[6]);
  return { m: g[0], family, spelled: unescapeOne(g[0], family, (g[1] ?? g[2] ?? g[3] ?? g[4] ?? g[5] ?? g[6] ?? g[7])!) };
}

function isHexDigit(c: number): boolean {
  return (c >= 48 && c <= 57) || ((c | 32) >= 97 && (c | 32) <= 102);
}

/**
 * Whether an escape's output (at `offset` in `text`, `length` long as written) is the rest of an
 * escape begun as written right before it (after `after`, where the last escape decoded ended,
 * or by what that one spelled, `before`): a backslash, a percent sign or an ampersand there that, with the output and
 * what follows, spells an escape longer than what was written before it, that stands for something.
 */
function completes(text: string, offset: number, after: number, before: string, out: string, length: number): boolean {
  const c = out.charCodeAt(0);
  if (!isAlphanumeric(c) && c !== 123 && c !== 125 && c !== 35 && c !== 59) return false;
  // Back over what an escape begun there may hold (digits, letters, `{`, `#`; zeros padding it)
  // to its start.
  const from = Math.max(0, after, offset - 64);
  let p = offset - 1;
  for (; p >= from; p--) {
    const d = text.charCodeAt(p);
    if (!isAlphanumeric(d) && d !== 123 && d !== 35) break;
  }
  let begun: string;
  if (p >= from) {
    const d = text.charCodeAt(p);
    if (d !== 92 && d !== 37 && d !== 38) return false;
    begun = text.slice(p, offset);
  } else {
    // Back to the escape decoded before: begun by what it spelled (`\u005c` then `u&#X7B;`).
    if (from !== after || !endsInEscapeStart(before)) return false;
    begun = before[before.length - 1]! + text.slice(from, offset);
  }
  const probe = begun + out + text.slice(offset + length, offset + length + 40);
  const e = escapeAt(probe);
  return e !== undefined && e.m.length > begun.length && e.spelled !== e.m;
}

/** Whether the text ends in a backslash, a percent sign or an ampersand. */
function endsInEscapeStart(t: string): boolean {
  const c = t.charCodeAt(t.length - 1);
  return c === 92 || c === 37 || c === 38;
}

/**
 * Whether characters written right after the escape `m` (of that family) would make it longer:
 * a reference without its `;` (more digits or letters, the `;`), an octal escape of one or two
 * digits (another digit). The others have a fixed length, or end in `;` or `}`.
 */
function isOpen(m: string, family: number): boolean {
  return family === OCTAL ? m.length < 4 : family === HTML && m.charCodeAt(m.length - 1) !== 59;
}

/**
 * Escapes of one family whose output starts another escape, not yet met by another format's:
 * view index, and where the escape it starts ends in the level, pairs.
 */
class Pending {
  readonly list: number[] = [];
  head = 0;
  /** Drops those that an escape at `offset` no longer joins; whether any is left. */
  prune(offset: number): boolean {
    const l = this.list;
    while (this.head < l.length && offset > l[this.head + 1]!) this.head += 2;
    if (this.head === l.length) { l.length = 0; this.head = 0; }
    return this.head < l.length;
  }
}

/**
 * One level of unescaping, or undefined when there was nothing to decode. The view is built by
 * a native replace; only the escapes are recorded, and a character is mapped back (rarely: only
 * for a match) by a binary search over them. An escape usually becomes one character, but an
 * HTML reference may become two (`&#128512;`, `&NotEqualTilde;`) or keep a tail (`&ampxyz`).
 * Escapes of the families in `skip` are left as written; `eating` says which families had an
 * escape that ended in a letter or a digit (one a key may have begun with) with another
 * family's escape fewer than 8 characters on: a spot; `joining`, which had an escape whose output
 * starts another escape with the characters written after it, with another format's escape
 * inside that one or right after it, or that made another format's escape before it longer: a
 * junction.
 */
function decode(level: Level, skip: number): Decoded | undefined {
  const at: number[] = []; // per escape: view index, length in the view, text index, length in the text
  let shift = 0;
  let eating = 0;
  let lastEating = 0;
  let lastEatingEnd = 0;
  let lastEatingAt = 0;
  let spotted = false;
  let since = 0;
  let spots: number[] | undefined;
  let present = 0;
  let joining = 0;
  let junctions: number[] | undefined;
  // Per family (by bit index) with any: junctions not yet met by another family's escape.
  let pendingMask = 0;
  const pending: Pending[] = [];
  // The last escape decoded: whether more characters would make it longer, where it ended, its format.
  let open = false;
  let openEnd = -1;
  let openFormat = 0;
  let openOut = '';
  // The groups of ESCAPE, one parameter each: no array per match (text may hold 100,000 of them).
  const view = level.view.replace(ESCAPE, (m: string, pct: Group, simple: Group, u: Group, es6: Group, x: Group, octal: Group, html: Group, offset: number) => {
    const family = familyOf(pct, simple, u, es6, x, octal);
    if ((family & skip) !== 0) return m;
    const out = unescapeOne(m, family, (pct ?? simple ?? u ?? es6 ?? x ?? octal ?? html)!);
    if (out === m) return m;
    present |= family;
    // Inside (or right after) the escape another format's output started: the order in which a
    // reader decodes the two formats decides what it reads (`&#92;` before `\12`, `%26` before
    // `#119\x32`): a junction.
    const format = formatOf(family);
    if ((pendingMask & ~format) !== 0) {
      for (let f = 1, k = 0; f < FAMILIES; f <<= 1, k++) {
        if ((f & format) !== 0 || (pendingMask & f) === 0) continue;
        const p = pending[k]!;
        if (p.prune(offset)) {
          junctions ??= [];
          for (let i = p.head; i < p.list.length; i += 2) junctions.push(f, p.list[i]!, p.list[i + 1]!);
          joining |= f;
          p.list.length = 0;
          p.head = 0;
        }
        pendingMask &= ~f;
      }
    }
    const formed = formedEnd(out, level.view, offset + m.length);
    if (formed >= 0) {
      const k = 31 - Math.clz32(family);
      const p = (pending[k] ??= new Pending());
      p.prune(offset);
      p.list.push(offset + shift, formed);
      pendingMask |= family;
    }
    // Right after another format's escape that more characters would make longer: to a reader
    // of this format first, its output (`&#10` then `\u0035`, `\15` then `%31`), or what that
    // spells a round later (`\5` then `&#38;#x&#48;030;`), may be the rest of it (`&#105;`).
    if (offset === openEnd && format !== openFormat && open) {
      (junctions ??= []).push(family, offset + shift, offset + m.length);
      joining |= family;
    }
    // The rest of an escape started just before, as written (`\u` then `%30` for "0" spells
    // `\u0…`, `%3` then `&#55` spells `%37`): to a reader of this format first, it is one.
    if (completes(level.view, offset, openEnd, openOut, out, m.length)) {
      (junctions ??= []).push(family, offset + shift, offset + m.length);
      joining |= family;
    }
    open = isOpen(m, family);
    openEnd = offset + m.length;
    openFormat = format;
    openOut = out;
    // Another family's escape within 8 characters of one that ate a letter or a digit: a key's
    // run may have begun in what the first ate and go on in what the second spells.
    if (lastEating !== 0 && !spotted && family !== lastEating && offset - lastEatingEnd + since < W) {
      eating |= lastEating;
      (spots ??= []).push(lastEating, lastEatingAt);
      spotted = true;
    }
    // An escape ate a character when it ends in a letter or a digit, but for `\g`, which gives "g" back.
    if (isAlphanumeric(m.charCodeAt(m.length - 1)) && !(family === SIMPLE_ESC && out === m.slice(1))) {
      lastEating = family;
      lastEatingEnd = offset + m.length;
      lastEatingAt = offset + shift;
      spotted = false;
      since = 0;
    } else {
      since++;
    }
    at.push(offset + shift, out.length, offset, m.length);
    shift += out.length - m.length;
    return out;
  });
  if (at.length === 0) return undefined;
  const local = (j: number): Region => {
    let lo = 0;
    let hi = at.length / 4 - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (at[mid * 4]! <= j) { found = mid; lo = mid + 1; } else hi = mid - 1;
    }
    if (found < 0) return [j, j + 1];
    const v = at[found * 4]!;
    const vlen = at[found * 4 + 1]!;
    const o = at[found * 4 + 2]!;
    const len = at[found * 4 + 3]!;
    if (j < v + vlen) return [o, o + len];
    const t = o + len + (j - v - vlen);
    return [t, t + 1];
  };
  const outer = level.map;
  const map = outer ? (j: number): Region => { const [a, b] = local(j); return [outer(a)[0], outer(b - 1)[1]]; } : local;
  return { view, map, local, eating, spots, present, joining, junctions: junctions && inViewOrder(junctions) };
}

/** Junctions (triples) by their index in the view: one confirmed late may come after a later one. */
function inViewOrder(junctions: number[]): number[] {
  let sorted = true;
  for (let i = 4; i < junctions.length && sorted; i += 3) sorted = junctions[i - 3]! <= junctions[i]!;
  if (sorted) return junctions;
  const order = [...Array(junctions.length / 3).keys()].sort((a, b) => junctions[a * 3 + 1]! - junctions[b * 3 + 1]!);
  return order.flatMap((k) => [junctions[k * 3]!, junctions[k * 3 + 1]!, junctions[k * 3 + 2]!]);
}

function isAlphanumeric(c: number): boolean {
  return (c >= 48 && c <= 57) || ((c | 32) >= 97 && (c | 32) <= 122);
}

/** The text with the regions (overlapping or not, in any order) replaced by one [REDACTED] each run. */
function cut(text: string, regions: Region[]): string {
  regions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let out = '';
  let pos = 0;
  let i = 0;
  while (i < regions.length) {
    let [start, end] = regions[i]!;
    for (i++; i < regions.length && regions[i]![0] <= end; i++) end = Math.max(end, regions[i]![1]);
    if (start < pos) start = pos;
    out += text.slice(pos, start) + REDACTED;
    pos = end;
  }
  return out + text.slice(pos);
}
