// Properties of redact(), over random keys (8 to 64 characters of the alphabets real keys use)
// and random surrounding text: no 8-character run of the key, in any encoding, survives; and
// text that holds no such run comes back unchanged.
import { decodeHTML } from 'entities';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { clearSecretsForTests, redact, registerSecret } from '../../src/redact.js';

afterEach(() => clearSecretsForTests());

const KEY_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+/=~:"\\% ';
const key = fc.string({ unit: fc.constantFrom(...KEY_CHARS), minLength: 8, maxLength: 64 });
const around = fc.string({ maxLength: 80 });
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const b64url = (s: string) => b64(s).replace(/\+/g, '-').replace(/\//g, '_');

type Encoding = (k: string) => string;
const ENCODINGS: Record<string, Encoding> = {
  raw: (k) => k,
  json: (k) => JSON.stringify(k).slice(1, -1),
  jsonTwice: (k) => JSON.stringify(JSON.stringify(k)).slice(1, -1),
  percent: (k) => encodeURIComponent(k),
  form: (k) => new URLSearchParams({ k }).toString().slice(2),
  base64: (k) => b64(k),
  base64NoPad: (k) => b64(k).replace(/=+$/, ''),
  base64url: (k) => b64url(k),
  base64Shift1: (k) => b64(`~${k}`),
  base64Shift2: (k) => b64url(`~~${k}`),
};

/** The 8-character runs a reader could take the key back from, for the given encoding. */
function runs(k: string, name: string): string[] {
  const encoded = ENCODINGS[name]!(k);
  // base64 mixes the key with what surrounds it in its first and last groups.
  const body = name.startsWith('base64') ? encoded.slice(4, -4) : encoded;
  const out: string[] = [];
  for (let i = 0; i + 8 <= body.length; i++) out.push(body.slice(i, i + 8));
  return out;
}

describe('redact, for any key and any text around it', () => {
  it('leaves no 8-character run of the key, in any encoding, whole or cut short', () => {
    fc.assert(fc.property(key, around, around, fc.constantFrom(...Object.keys(ENCODINGS)), fc.nat(64), (k, before, after, name, cutAt) => {
      clearSecretsForTests();
      registerSecret(k);
      // A server that cuts its message short: the key is cut too, but 8+ characters remain.
      const shown = cutAt >= 8 && cutAt < k.length ? k.slice(0, cutAt) : k;
      const text = `${before} ${ENCODINGS[name]!(shown)} ${after}`;
      const out = redact(text);
      for (const r of runs(shown, name)) {
        if (before.includes(r) || after.includes(r)) continue;
        expect(out, `${name} of ${JSON.stringify(shown)}`).not.toContain(r);
      }
    }), { numRuns: Number(process.env.ROUNDS_RUNS ?? 400) });
  });

  // Servers escape some characters and not others, in either case, with or without padding or the
  // `;`, and write a space as `+` or %20 in one string: one choice per character.
  it('leaves no 8-character run of the key when each character is spelled its own way (percent, HTML, JavaScript)', () => {
    fc.assert(fc.property(key, fc.array(fc.nat(7), { minLength: 64, maxLength: 64 }), fc.constantFrom(...Object.keys(MIXED)), around, around,
      (k, choices, name, before, after) => {
        clearSecretsForTests();
        registerSecret(k);
        const encoded = MIXED[name]!(k, choices);
        const out = redact(`${before} ${encoded} ${after}`);
        const seen = folded(readerDecode(out));
        const context = folded(`${readerDecode(before)} ${readerDecode(after)}`);
        for (let i = 0; i + 8 <= k.length; i++) {
          const r = folded(k.slice(i, i + 8));
          if (context.includes(r)) continue;
          expect(seen, `${name}: ${encoded} -> ${out}`).not.toContain(r);
        }
      }), {
      numRuns: 3000,
      // What the fuzzer of the issue found: a fragment form-encoded in part, lower-case, `+` for the space.
      examples: [
        ["'/626l Mx", [1, 2, 1, 0, 1, 2, 0, 0, 1, ...Array<number>(55).fill(0)], 'percent', 'before', 'after'],
        ["'73_ EFp", [1, 1, 1, 1, 0, 1, 0, 1, ...Array<number>(56).fill(0)], 'percent', 'before', 'after'],
      ],
    });
  });

  it('changes nothing in text that holds no 8-character run of the key in any encoding', () => {
    fc.assert(fc.property(key, fc.string({ maxLength: 300 }), (k, text) => {
      const forms = Object.values(ENCODINGS).map((e) => e(k));
      const risky = (t: string) => {
        const candidates = [t, decodeLoosely(t), readerDecode(t)].map(folded);
        return forms.some((f) => {
          for (let i = 0; i + 8 <= f.length; i++) if (candidates.some((c) => c.includes(folded(f.slice(i, i + 8))))) return true;
          return false;
        });
      };
      fc.pre(!risky(text));
      clearSecretsForTests();
      registerSecret(k);
      expect(redact(text)).toBe(text);
    }), { numRuns: Number(process.env.ROUNDS_RUNS ?? 400) });
  });

  it('changes nothing in ordinary output text (plans, logs, JSON) for any key', () => {
    const sample = [
      '{"level":"info","msg":"reconcile success: in sync (12 unchanged)","trigger":"interval"}',
      '  ~ firmware 2.4.1 (modem)\n      is_deactivated: false → true',
      '::error file=tenants/a.yaml,line=3,col=5::unknown field %22x%22',
      '| acme | 3 | 4 | 0 | 0 | 5 |  &lt;code&gt; \\u001b[2J',
    ].join('\n');
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 16, maxLength: 64 }), (k) => {
      clearSecretsForTests();
      registerSecret(k);
      expect(redact(sample)).toBe(sample);
    }), { numRuns: 500 });
  });
});

const hex = (c: string) => c.charCodeAt(0).toString(16);
const NAMES: Readonly<Record<string, string>> = {
  '-': '&hyphen;', _: '&lowbar;', '.': '&period;', '+': '&plus;', '/': '&sol;', '=': '&equals;',
  ':': '&colon;', '"': '&quot;', '\\': '&bsol;', '%': '&percnt;', ' ': '&nbsp;',
};

/** Spellings of a key in which each character is written one of several ways (by `choices[i]`). */
const MIXED: Record<string, (k: string, choices: readonly number[]) => string> = {
  // encodeURIComponent's safe characters may stay; a space is `+` or %20; hex in either case.
  percent: (k, choices) => [...k].map((c, i) => {
    const n = choices[i]!;
    if (c === ' ') return n % 2 === 0 ? '+' : '%20';
    if (n % 3 === 0 && /[\w.!~*'()-]/.test(c)) return c;
    const h = hex(c).padStart(2, '0');
    return `%${n % 3 === 2 ? h : h.toUpperCase()}`;
  }).join(''),
  // Decimal or hex, zero-padded or not, `;` left out where the next character cannot extend the number; HTML5 names.
  html: (k, choices) => [...k].map((c, i) => {
    const n = choices[i]!;
    const next = k[i + 1] ?? '';
    const pad = '0'.repeat(n % 4);
    switch (n) {
      case 0: case 1: return NAMES[c] ?? c;
      case 2: case 3: return `&#${pad}${c.charCodeAt(0)}${/[0-9]/.test(next) ? ';' : ''}`;
      case 4: case 5: return `&#x${pad}${hex(c)};`;
      case 6: return `&#X${hex(c).toUpperCase()}${/[0-9a-fA-F]/.test(next) ? ';' : ''}`;
      // A `\` or `%` left as it is would start an escape of the other kinds, which the decoder reads
      // in the same pass (the README's "key that itself holds an escape-like sequence").
      default: return c === '"' ? '&quot;' : c === '\\' || c === '%' ? `&#${c.charCodeAt(0)};` : c;
    }
  }).join(''),
  // \u0041, \u{41}, \x41, octal, or the character (a backslash and a quote always escaped).
  javascript: (k, choices) => [...k].map((c, i) => {
    const n = choices[i]!;
    switch (n % 5) {
      case 0: return `\\u${hex(c).padStart(4, '0')}`;
      case 1: return `\\u{${hex(c)}}`;
      case 2: return `\\x${hex(c).padStart(2, '0')}`;
      case 3: return `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`;
      default: return c === '\\' || c === '"' ? `\\${c}` : c;
    }
  }).join(''),
};

/** A space, `+`, a no-break space and the HTML hyphen read alike. */
const folded = (t: string) => t.replace(/[+\u00a0]/g, ' ').replace(/\u2010/g, '-');

/** What a reader makes of the text: HTML references, percent and backslash escapes, three times over. */
function readerDecode(text: string): string {
  let out = text;
  for (let i = 0; i < 3; i++) {
    out = decodeHTML(out
      .replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\u\{([0-9a-fA-F]{1,6})\}|\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|\\([0-3][0-7]{2}|[0-7]{1,2})|\\(["\\/])/g,
        (_m, cp?: string, u?: string, x?: string, o?: string, c?: string) =>
          cp ? String.fromCodePoint(Math.min(parseInt(cp, 16), 0x10ffff)) : u ?? x ? String.fromCharCode(parseInt((u ?? x)!, 16)) : o ? String.fromCharCode(parseInt(o, 8)) : c!));
  }
  return out;
}

/** What a reader's decoder might make of the text (for the precondition only). */
function decodeLoosely(t: string): string {
  let out = t;
  for (let i = 0; i < 3; i++) {
    out = out.replace(/%([0-7][0-9a-fA-F])/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\u([0-9a-fA-F]{4})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\x([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\(["\\/'bfnrt])/g, (_m, c: string) => ({ b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' } as Record<string, string>)[c] ?? c)
      .replace(/&#(\d{1,5});|&#[xX]([0-9a-fA-F]{1,4});|&(amp|lt|gt|quot|apos);/g, (_m, d?: string, x?: string, n?: string) =>
        d ? String.fromCharCode(Number(d)) : x ? String.fromCharCode(parseInt(x, 16)) : ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" } as Record<string, string>)[n!]!);
  }
  return out;
}

// One reader decodes HTML only, another JSON, another all of them: an escape start left in the
// text by accident (a Windows path's `\` before a key's digits, a `%` or `&#` before its hex)
// eats the key's first characters for a reader of that family, while another family spells the
// rest. The regex is redact's own (src/redact.ts), one pass per round, a family left as written
// when the reader does not know it.
const FAMILY_RE = /%([0-7][0-9a-fA-F])|\\(["\\/'bfnrt])|\\u([0-9a-fA-F]{4})|\\u\{0*([0-9a-fA-F]{1,6})\}|\\x([0-9a-fA-F]{2})|\\([0-3][0-7]{2}|[0-7]{1,2})|(&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{0,31});?)/g;
const FAMILY_NAMES = ['percent', 'simple', 'unicode', 'es6', 'hex', 'octal', 'html'] as const;
type Family = (typeof FAMILY_NAMES)[number];

function readAs(text: string, knows: ReadonlySet<Family>): string {
  let out = text;
  for (let round = 0; round < 3; round++) {
    out = out.replace(FAMILY_RE, (m: string, ...groups: (string | undefined)[]) => {
      const i = groups.findIndex((g, j) => j < 7 && g !== undefined);
      const family = FAMILY_NAMES[i]!;
      if (!knows.has(family)) return m;
      const g = groups[i]!;
      switch (family) {
        case 'percent': case 'unicode': case 'hex': return String.fromCharCode(parseInt(g, 16));
        case 'es6': return parseInt(g, 16) <= 0x10ffff ? String.fromCodePoint(parseInt(g, 16)) : m;
        case 'octal': return String.fromCharCode(parseInt(g, 8));
        case 'simple': return ({ b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' } as Record<string, string>)[g] ?? g;
        default: return decodeHTML(g);
      }
    });
  }
  return out;
}

const READERS: ReadonlySet<Family>[] = [
  new Set(FAMILY_NAMES),
  ...FAMILY_NAMES.map((f) => new Set(FAMILY_NAMES.filter((g) => g !== f))),
  new Set<Family>(['html']),
  new Set<Family>(['simple', 'unicode', 'es6', 'hex', 'octal']),
];

describe('redact, with an escape started by accident right before the key', () => {
  const STRAY = ['\\', 'C:\\keys\\', '%', '100%', '&#', '&#x', '\\x', '\\u', '\\u{'];
  // Keys whose first characters an escape start can take: octal and hex digits.
  const leading = fc.string({ unit: fc.constantFrom(...'01234567abcdef'), minLength: 1, maxLength: 3 });
  const rest = fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'), minLength: 7, maxLength: 24 });
  it('leaves no 8-character run of the key for a reader of any family, the key spelled in another', () => {
    fc.assert(fc.property(leading, rest, fc.constantFrom(...STRAY), fc.array(fc.nat(7), { minLength: 32, maxLength: 32 }), fc.constantFrom(...Object.keys(MIXED)), fc.nat(20),
      fc.nat(2), fc.constantFrom('', 'q: a%41\\n, ', 'x&#65\\u0041 '),
      (lead, tail, stray, choices, name, extra, nest, noise) => {
        const k = lead + tail;
        clearSecretsForTests();
        registerSecret(k);
        // Quoted in JSON once or twice (a log line of an answer), after unrelated escapes.
        const quote = (t: string) => { let q = t; for (let i = 0; i < nest; i++) q = JSON.stringify(q).slice(1, -1); return q; };
        const before = `${noise}log: ${stray}`;
        // The message cut short after 8 or more characters of the key.
        const shown = k.slice(0, 8 + extra);
        const out = redact(quote(`${before}${MIXED[name]!(shown, choices)} (cut)`));
        for (const reader of READERS) {
          const seen = folded(readAs(out, reader));
          const context = folded(readAs(quote(`${before} (cut)`), reader));
          for (let i = 0; i + 8 <= shown.length; i++) {
            const r = shown.slice(i, i + 8);
            if (context.includes(r)) continue;
            expect(seen, `${[...reader].join('+')}: ${out}`).not.toContain(r);
          }
        }
      }), {
      numRuns: 1500,
      // What a breaker found: "\3770ab&#99;d", a path's backslash before the key, a character of it as an HTML reference.
      examples: [
        ['377', '0abcdQwErTy12345678', 'C:\\keys\\', [7, 7, 7, 7, 7, 7, 2, ...Array<number>(25).fill(7)], 'html', 0, 0, ''],
        // The next breaker's: a stray % in JSON quoted in JSON, a character as \u; and the first
        // case after an unrelated "%41\n" elsewhere in the text.
        ['41b', 'cdefghXYZ1234', '100%', [4, 4, 4, 4, 0, ...Array<number>(27).fill(4)], 'javascript', 1, 2, ''],
        ['123', '4abcdEFGH', 'C:\\keys\\', [4, 4, 4, 4, 4, 4, 0, ...Array<number>(25).fill(4)], 'javascript', 0, 1, 'q: a%41\\n, '],
      ],
    });
  });
});

// A reader that decodes one encoding a round before another (HTML, then JavaScript: a JS string
// in an HTML page) reads what an escape's output starts together with what is written after it:
// `&#92;\12\063…` is `\12345678` to it, where decoding every family at once reads `\12` as octal.
// Each round knows some of HTML, percent and JavaScript's escapes (JavaScript's as the language
// reads them; redact leaves `\%` and `\&` as written, for keys holding a backslash).
const JS_ROUND = /\\(u\{([0-9a-fA-F]+)\}|u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|([0-3][0-7]{2}|[0-7]{1,2})|\r\n|[^xu%&])/;
const PCT_ROUND = /%([0-9a-fA-F]{2})/;
const HTML_ROUND = /&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{0,31});?/;

const ROUND_RE = Array.from({ length: 8 }, (_, formats) => new RegExp([HTML_ROUND, PCT_ROUND, JS_ROUND].filter((_r, i) => (formats & (1 << i)) !== 0).map((r) => r.source).join('|') || '$^', 'g'));

function readRound(text: string, formats: number): string {
  return text.replace(ROUND_RE[formats]!, (m) => {
    if (m[0] === '&') return decodeHTML(m);
    if (m[0] === '%') return String.fromCharCode(parseInt(m.slice(1), 16));
    const c = m.slice(1);
    const es6 = /^u\{([0-9a-fA-F]+)\}$/.exec(c);
    if (es6) return parseInt(es6[1]!, 16) <= 0x10ffff ? String.fromCodePoint(parseInt(es6[1]!, 16)) : m;
    if (/^(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2})$/.test(c)) return String.fromCharCode(parseInt(c.slice(1), 16));
    if (/^[0-7]+$/.test(c)) return String.fromCharCode(parseInt(c, 8));
    if (c === '\n' || c === '\r\n' || c === '\r' || c === '\u2028' || c === '\u2029') return '';
    return ({ b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' } as Record<string, string>)[c] ?? c;
  });
}

/** Every reader of one to three rounds, each round a non-empty set of the three formats. */
const ROUND_READERS: number[][] = [];
for (let a = 1; a < 8; a++) {
  ROUND_READERS.push([a]);
  for (let b = 1; b < 8; b++) {
    ROUND_READERS.push([a, b]);
    for (let c = 1; c < 8; c++) ROUND_READERS.push([a, b, c]);
  }
}

describe('redact, for readers that decode one encoding a round before another', () => {
  const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(2, '0');
  const ENCODE: ((c: string) => string)[] = [
    (c) => `%${hex(c)}`, (c) => `%${hex(c).toUpperCase()}`, (c) => `\\u00${hex(c)}`, (c) => `\\u{${hex(c)}}`, (c) => `\\x${hex(c)}`,
    (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`, (c) => `&#${c.charCodeAt(0)};`, (c) => `&#x${hex(c)};`,
    (c) => `&#${c.charCodeAt(0)}`, (c) => `&#000${c.charCodeAt(0)};`,
  ];
  // An escape character written as another escape (one level deeper), or as it is.
  const WRAP: ((c: string) => string)[] = [(c) => `%${hex(c)}`, (c) => `&#${c.charCodeAt(0)};`, (c) => (c === '\\' ? '\\\\' : c === '&' ? '&amp;' : '%25'), (c) => c];
  // Escape starts left in the text, most of them escaped themselves: junctions.
  const STRAY = ['\\', '%', '&', '&#', '&#92;', '%5C', '%5c', '\\\\', '&amp;', '%25', '&#37;', '&bsol;', '%26', '&#38;', '\\x', '\\u'];
  // Each character raw or escaped, the escape's own escape characters escaped again (each its own way) up to twice.
  const piece = fc.record({ raw: fc.boolean(), encode: fc.nat(ENCODE.length - 1), wraps: fc.array(fc.array(fc.nat(WRAP.length - 1), { minLength: 4, maxLength: 4 }), { maxLength: 2 }), stray: fc.option(fc.constantFrom(...STRAY), { freq: 5 }) });
  const alnum = fc.string({ unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789'), minLength: 8, maxLength: 17 });

  it('leaves no 8-character run of the key for a reader of one to three rounds, each of some of the formats', () => {
    fc.assert(fc.property(alnum, fc.array(piece, { minLength: 17, maxLength: 17 }), fc.boolean(), (k, pieces, framed) => {
      clearSecretsForTests();
      registerSecret(k);
      let body = '';
      for (let i = 0; i < k.length; i++) {
        const p = pieces[i]!;
        if (p.stray !== null) body += p.stray;
        let written = p.raw ? k[i]! : ENCODE[p.encode]!(k[i]!);
        for (const w of p.wraps) {
          let n = 0;
          written = written.replace(/[%\\&]/g, (c) => WRAP[w[n++ % w.length]!]!(c));
        }
        body += written;
      }
      const text = framed ? `x=${body} end` : body;
      const out = redact(text);
      for (const reader of ROUND_READERS) {
        let seen = out;
        for (const formats of reader) seen = readRound(seen, formats);
        for (let i = 0; i + 8 <= k.length; i++) if (seen.includes(k.slice(i, i + 8))) expect(seen, `${reader.join(',')}: ${text} -> ${out}`).not.toContain(k.slice(i, i + 8));
      }
    }), { numRuns: Number(process.env.ROUNDS_RUNS ?? 400) });
  });
});
