// redact(): a registered key must not survive in any form a server, a proxy or our own
// formatting may give it: cut short, JSON-escaped (once or twice), percent-encoded, as HTML
// entities, base64 (standard or URL-safe, padded or not, in any alignment). Ordinary text,
// and text with fewer than 8 characters of a key, is left alone.
import { decodeHTML } from 'entities';
import { afterEach, describe, expect, it } from 'vitest';
import { clearSecretsForTests, containsSecret, redact, redactDeep, registerSecret } from '../../src/redact.js';

const KEY = 'sec-KEY-3f9a1c7e5b2d4f6a8c0e';
const ODD = 'sec"ODD\\key with/+=%and-more-0123';

afterEach(() => clearSecretsForTests());

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const b64url = (s: string) => b64(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** How an HTML5 encoder names the characters of the keys below. */
const NAMED_ENTITY: Readonly<Record<string, string>> = {
  '-': '&hyphen;', '_': '&lowbar;', '/': '&sol;', '+': '&plus;', '=': '&equals;', '.': '&period;',
  ':': '&colon;', ' ': '&nbsp;', '"': '&quot;', '\\': '&bsol;', '%': '&percnt;',
};

/** A server that form-encodes some characters, in lower case, and writes spaces as `+` or %20 in turn. */
function mixedForm(key: string): string {
  let spaces = 0;
  return [...key].map((c, i) => {
    if (c === ' ') return spaces++ % 2 === 0 ? '+' : '%20';
    return i % 3 === 0 || !/[\w.~-]/.test(c) ? `%${c.charCodeAt(0).toString(16).padStart(2, '0')}` : c;
  }).join('');
}

/** Every way the tests below let a server echo `key`, each inside some text. */
function echoes(key: string): [string, string][] {
  const json = JSON.stringify(key).slice(1, -1);
  return [
    ['raw', key],
    ['cut short (15 of the characters)', key.slice(0, 15)],
    ['cut short (8 characters)', key.slice(0, 8)],
    ['its tail', key.slice(-9)],
    ['a middle part', key.slice(5, 17)],
    ['JSON-escaped', json],
    ['JSON-escaped twice', JSON.stringify(json).slice(1, -1)],
    ['JSON with every character as \\u', [...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')],
    ['JSON-escaped slashes', json.replace(/\//g, '\\/')],
    ['percent-encoded', encodeURIComponent(key)],
    ['percent-encoded, lower-case hex', encodeURIComponent(key).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())],
    ['percent-encoded, every character', [...key].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('')],
    ['form-encoded', new URLSearchParams({ k: key }).toString().slice(2)],
    ['percent-encoded twice', encodeURIComponent(encodeURIComponent(key))],
    ['HTML entities', [...key].map((c) => `&#${c.charCodeAt(0)};`).join('')],
    ['HTML5 named entities', key.replace(/[-_/+=.: "\\%]/g, (c) => NAMED_ENTITY[c]!)],
    ['zero-padded decimal entities', [...key].map((c) => `&#${String(c.charCodeAt(0)).padStart(7, '0')};`).join('')],
    ['hex entities of more than 4 digits', [...key].map((c) => `&#x${c.charCodeAt(0).toString(16).padStart(6, '0')};`).join('')],
    ['entities without the semicolon', [...key].map((c) => `&#${c.charCodeAt(0)}`).join('')],
    ['hex entities without the semicolon', [...key].map((c) => `&#X${c.charCodeAt(0).toString(16)}`).join('')],
    ['JavaScript \\u{…} escapes', [...key].map((c) => `\\u{${c.charCodeAt(0).toString(16)}}`).join('')],
    ['octal escapes', [...key].map((c) => `\\${c.charCodeAt(0).toString(8)}`).join('')],
    ['form-encoded, partly, lower-case, `+` and %20 for spaces', mixedForm(key)],
    ['base64', b64(key)],
    ['base64 without padding', b64(key).replace(/=+$/, '')],
    ['base64url', b64url(key)],
    ['base64 after 1 character', b64(`x${key}`)],
    ['base64 after 2 characters', b64(`xy${key}`)],
    ['base64url after 2 characters', b64url(`xy${key}`)],
    ['base64 of its first 15 characters', b64(key.slice(0, 15))],
    ['base64 of JSON that holds it', b64(JSON.stringify({ detail: `bad key ${key}` }))],
    ['base64 inside a URL, percent-encoded', encodeURIComponent(b64(`Key ${key}`))],
  ];
}

/** No 8-character run of `key`, of any encoding of it, is left in `text`, nor in the text as a reader decodes it. */
function leaks(text: string, key: string): string[] {
  const forms = [key, JSON.stringify(key).slice(1, -1), encodeURIComponent(key), b64(key), b64url(key), b64(`x${key}`), b64(`xy${key}`)];
  const out: string[] = [];
  for (const f of forms) for (let i = 0; i + 8 <= f.length; i++) if (text.includes(f.slice(i, i + 8))) out.push(f.slice(i, i + 8));
  const spaced = (t: string) => t.replace(/[+\u00a0]/g, ' ').replace(/\u2010/g, '-');
  const decoded = spaced(readerDecode(text));
  for (let i = 0; i + 8 <= key.length; i++) if (decoded.includes(spaced(key.slice(i, i + 8)))) out.push(key.slice(i, i + 8));
  return out;
}

/** What a reader makes of the text: percent, JSON and JavaScript escapes and HTML references, decoded three times over. */
function readerDecode(text: string): string {
  let out = text;
  for (let i = 0; i < 3; i++) {
    out = decodeHTML(out
      .replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\u\{([0-9a-fA-F]{1,6})\}|\\u([0-9a-fA-F]{4})|\\([0-3][0-7]{2}|[0-7]{1,2})|\\(["\\/])/g, (_m, cp?: string, u?: string, o?: string, c?: string) =>
        cp ? String.fromCodePoint(parseInt(cp, 16)) : u ? String.fromCharCode(parseInt(u, 16)) : o ? String.fromCharCode(parseInt(o, 8)) : c!));
  }
  return out;
}

describe('redact', () => {
  for (const key of [KEY, ODD]) {
    for (const [name, echoed] of echoes(key)) {
      it(`hides ${name} (${key === KEY ? 'plain key' : 'key with " \\ / + = % and a space'})`, () => {
        registerSecret(key);
        const text = `error: the server said "${echoed}" at 12:00`;
        const out = redact(text);
        expect(out).toContain('[REDACTED]');
        expect(out.startsWith('error: the server said "')).toBe(true);
        expect(out.endsWith(' at 12:00')).toBe(true);
        if (!name.startsWith('base64')) expect(leaks(out, key)).toEqual([]);
        expect(containsSecret(text)).toBe(true);
      });
    }
  }

  it('hides the spellings a fuzzer found: a form-encoded fragment with `+` for a space, among lower-case escapes', () => {
    registerSecret("t'/626l MxZn4sQ");
    registerSecret("Qrbb L~)cU67XWK*F>XL3&xC0'73_ EFp-M");
    expect(redact('before %27%2f%362%36%6c+M%78 after')).toBe('before [REDACTED] after');
    expect(redact('before %27%37%33%5F+%45F%70 after')).toBe('before [REDACTED] after');
  });

  it('reads HTML references as a browser does: a tail after a legacy name, two characters for one reference', () => {
    registerSecret(KEY);
    expect(redact(`x &ampxyz ${[...KEY].map((c) => `&#x${c.charCodeAt(0).toString(16)}`).join('')}&#128512; y`)).toBe('x &ampxyz [REDACTED]&#128512; y');
    expect(redact(`x &NotEqualTilde;${KEY.slice(0, 12)} y`)).toBe('x &NotEqualTilde;[REDACTED] y');
    expect(redact('a=1&page=3&para=2 &lowbar; &hyphen;')).toBe('a=1&page=3&para=2 &lowbar; &hyphen;');
  });

  it('hides a key after a stray escape start in a long text, where only the text around the stray start is decoded again', () => {
    registerSecret('3770abcdQwErTy12345678');
    const filler = 'plain log text, nothing escaped here; '.repeat(1500);
    for (const tail of ['C:\\keys\\3770ab&#99;d', 'C:\\keys\\3770ab\\u0063d', '100%3770ab&#99;d', 'x\\x3770ab%63d']) {
      for (const text of [`${filler}${tail}${filler}`, JSON.stringify(JSON.stringify(`${filler}${tail}${filler}`))]) {
        const out = redact(text);
        expect(out, tail).toContain('[REDACTED]');
        expect(out.replace(/\[REDACTED\]/g, ''), tail).not.toMatch(/0ab/);
        // The text away from it is left as it is.
        expect(out.startsWith(text.slice(0, 50_000)), tail).toBe(true);
      }
    }
  });

  // Breaker round 20: a line repeated (a server or a log saying it twice) had its second copy's
  // window taken for the first's; and references padded and quoted again pushed the key's
  // characters past a window of fixed length.
  it('hides every copy of a key after a stray escape start, and one pushed far by padded references', () => {
    const key = 'sk_live_Qx7r123zYwVu9TsPq';
    registerSecret(key);
    const reader = (t: string) => decodeHTML(decodeHTML(t));
    const shown = (t: string) => [...Array(key.length - 7).keys()].map((i) => key.slice(i, i + 8)).filter((f) => reader(t).includes(f));
    const line = `error at C:\\123zYw&#86;u retry later. ${'x'.repeat(300)}\n`;
    const twice = redact(`${line}${line}${'lorem ipsum '.repeat(400)}`);
    expect(twice.match(/\[REDACTED\]/g)).toHaveLength(2);
    expect(shown(twice)).toEqual([]);
    const padded = `path C:\\123${[...'zYwVu'].map((c) => `&amp;#${'0'.repeat(60)}${c.charCodeAt(0)};`).join('')} end. ${'lorem ipsum '.repeat(400)}`;
    expect(shown(redact(padded))).toEqual([]);
  });

  // Breaker round 21: JavaScript reads `\g` as "g" and a backslash before a line break as nothing.
  it('hides a key broken by identity escapes or by a string continued on the next line', () => {
    const key = 'sk-live-ghijklmopqwz';
    registerSecret(key);
    for (const text of ['k="sk-live-\\g\\h\\i\\j\\k\\l\\m\\o\\p\\q\\w\\z"', 'k="sk-l\\\nive-g\\\nhijk\\\nlmop\\\nqwz"', 'k="sk-l\\\r\nive-g\\\r\nhijk\\\r\nlmopqwz"']) {
      const out = redact(text);
      const read = new Function(`return ${out.slice(2)};`)() as string;
      expect(read, JSON.stringify(text)).toContain('[REDACTED]');
      for (let i = 0; i + 8 <= key.length; i++) expect(read, JSON.stringify(text)).not.toContain(key.slice(i, i + 8));
    }
  });

  // Breaker round 22: read as an identity escape, `\%` and `\&` lost a key's own backslash
  // before a character spelled in percent or HTML.
  it('hides a key holding backslashes whose next characters are percent-encoded or HTML references', () => {
    const key = 'sk\\live\\Ab3dEf\\9hQrX\\yz7';
    registerSecret(key);
    for (const text of ['sk\\%6Cive\\%41b3dEf\\%39hQrX\\%79z7', 'sk\\%6cive\\%41b3dEf\\%39hQrX\\%79z7', '<p>sk\\&#108;ive\\&#65;b3dEf\\&#57;hQrX\\&#121;z7</p>']) {
      const out = redact(text);
      expect(out, text).toContain('[REDACTED]');
      expect(leaks(out, key), text).toEqual([]);
    }
  });

  // Breaker round 21: a reader that decodes one encoding a round before another (HTML, then
  // JavaScript: a JS string in an HTML page) reads an escape's output together with what is
  // written after it, where decoding every family at once reads that text otherwise.
  describe('for readers that decode one encoding a round before another', () => {
    const pct = (t: string) => t.replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    // A JavaScript string literal as V8 reads it (a backslash before a line break is nothing).
    const js = (t: string) => t.replace(/\\(u\{([0-9a-fA-F]+)\}|u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|([0-3][0-7]{2}|[0-7]{1,2})|\r\n|[^xu%&])/g,
      (m, _all: string, es6?: string, u?: string, x?: string, octal?: string) =>
        es6 ? String.fromCodePoint(parseInt(es6, 16)) : u ?? x ? String.fromCharCode(parseInt((u ?? x)!, 16)) : octal ? String.fromCharCode(parseInt(octal, 8)) : /^\\(\r\n|[\r\n\u2028\u2029])$/.test(m) ? '' : m.slice(1));
    const html = (t: string) => decodeHTML(t);
    /** Each character as a decimal reference padded with zeros, its `&` written as `amp`. */
    const padded = (t: string, amp: string, zeros: number) => [...t].map((c) => `${amp}${'0'.repeat(zeros)}${c.charCodeAt(0)};`).join('');
    const CASES: [key: string, text: string, reader: (t: string) => string][] = [
      // `&#92;` is a backslash that, read first, takes the next one with it: `\\12` is `\12`, not octal.
      ['12345678', 'path=&#92;\\12\\063\\064\\065\\066\\067\\070 end', (t) => js(html(t))],
      ['12345678', 'path=%5C\\12\\063\\064\\065\\066\\067\\070 end', (t) => js(pct(t))],
      ['12345678', 'p=&bsol;\\12\\x33\\x34\\x35\\x36\\x37\\x38', (t) => js(html(t))],
      // `%26` opens `&#119`, which a reader of HTML closes before JavaScript's `\x32` is a 2.
      ['w2TH1axQ', '%26#119\\x32TH1axQ', (t) => js(html(pct(t)))],
      ['w2TH1axQ', 'x=&amp;#119\\x32TH1axQ end', (t) => js(html(html(t)))],
      // Rounds of two formats: HTML and percent, then percent and JavaScript, then JavaScript.
      ['AAAAAA1A', '%41%41%41%41%41\\&#37;41%5c\\u0031%41', (t) => js(js(pct(html(pct(html(t))))))],
      // Breaker round 23. An escape's output that makes another format's escape before it longer
      // (`&#10` then `\u0035` is `&#105;` to JSON.parse, then a browser), or its `;`.
      ['sk_live_4Fq9', '{"detail":"token sk_l&#10\\u0035;ve_4Fq9 rejected"}', (t) => html(js(t))],
      ['sk_live_4Fq9', 'GET /docs/sk_l&#10%35;ve_4Fq9 -> 404', (t) => html(pct(t))],
      ['sk_live_4Fq9', 'msg=sk_l\\15%31ve_4Fq9', (t) => js(pct(t))],
      ['sk_live_4Fq9', '{"detail":"token sk_l&#105\\u003bve_4Fq9 rejected"}', (t) => html(js(t))],
      // A reference padded past any fixed reach, and a key spelled wide before the junction.
      ['w2TH1axQ', `%26#${'0'.repeat(260)}119\\x32TH1axQ`, (t) => js(html(pct(t)))],
      ['sk_live_9w2TH1axQzP', 'token: %5C&#120;6c%5C&#120;69%5C&#120;76%5C&#120;65%5C&#120;5f%5C&#120;39%26#119\\x32TH rejected', (t) => js(html(pct(t)))],
      // The rest of an escape begun as written (`\u` then `%30`), and an octal escape that a
      // reference two rounds later makes longer (`\5` then `&#38;#x&#48;030;`).
      ['sk_5dKes', 's\\x5c\\u%30075006b_%35d\\113es', (t) => js(js(pct(t)))],
      ['H4SfCp(M5', 'q&#3H\\x34\\x53\\x6&#x36;C\\p\\5&#38;#x&#48;030;\\x4d\\x35', (t) => js(html(html(t)))],
      // Breaker round 24: references padded with zeros, before and after the junction, wider
      // than any fixed window (the windows are the lines that hold the junction).
      ['sk_live_4F', `{"detail":"token ${padded('sk_l', '\\u0026#', 130)}&#10\\u0035;ve_4F rejected"}`, (t) => html(js(t))],
      ['sk_live_4Fq9', `{"detail":"token sk_l&#10\\u0035;${padded('ve_4Fq9', '\\u0026#', 130)} rejected"}`, (t) => html(js(t))],
      ['live_9w2T', `${padded('live_9', '%26#', 200)}%26#119\\x32T!`, (t) => js(html(pct(t)))],
      // Breaker round 25: a key across a line continuation whose backslash is still a reference
      // on that level (the window was the junction's line only).
      ['DUSKEY7SQ3xR9pLm2WcZ', 'DUSKEY7&#92;\n\\12&#51;Q3xR9p and more', (t) => js(html(t))],
      ['DUSKEY7SQ3xR9pLm2WcZ', 'DUSKEY7%5C\r\n\\12&#51;Q3xR9p and more', (t) => js(html(pct(t)))],
      // An escape begun by what the escape before spelled (`\x5c` then `x7&#X38;`), padded.
      ['dus-rRnK1LQHSuFMWSk', `a=\\x5c\\x75007\\u{&#X30;3&#X${'0'.repeat(288)}33}-\\u0072\\x52&#X${'0'.repeat(119)}5Cu{05c}&bsol;06156\\113\\134&#X${'0'.repeat(160)}5c;x7&#X38;31&#x5C;&#X0078;5c1&#X31;4"`, (t) => js(js(html(t)))],
    ];
    it.each(CASES)('%s in %s', (key, text, reader) => {
      registerSecret(key);
      const filler = 'plain log text, nothing escaped here; '.repeat(1500);
      const log = '{"level":"info","msg":"request served","path":"/api/v1/tenants/acme/firmwares","ms":12}\n'.repeat(600);
      // Alone, in a long text, on a line of a long log (only the lines around the junction are
      // decoded again), and where every line has one (the whole text is).
      for (const t of [text, `${filler}${text}${filler}`, `${log}${text}\n${log}`, `${text}\n`.repeat(3000)]) {
        const seen = reader(redact(t));
        for (let i = 0; i + 8 <= key.length; i++) expect(seen, text).not.toContain(key.slice(i, i + 8));
      }
    });
  });

  it('hides a key after a stray escape start in a megabyte of hostile escapes, past the budget of views (fail-closed)', () => {
    registerSecret('3770abcdQwErTy12345678');
    // Every family of escapes, each eating a character next to another's: more chains than the budget.
    const unit = '\\1%41\\u{41}&#65\\x41\\b' + JSON.stringify('%41\\u0041&#65\\101\\x41\\n').slice(1, -1) + encodeURIComponent('\\2%42\\u0042&#66\\x42\\f');
    const hostile = unit.repeat(Math.ceil(1_200_000 / unit.length));
    for (const tail of ['C:\\keys\\3770ab&#99;d (cut)', 'C:\\keys\\3770ab\\u0063d (cut)', '100%3770ab&#99;d (cut)']) {
      const out = redact(`${hostile} ${tail}`);
      const end = out.slice(out.lastIndexOf('REDACTED') - 1);
      expect(end, tail).toMatch(/^\[REDACTED\]/);
      expect(out.slice(-60), tail).not.toMatch(/0ab/);
    }
  });

  it('leaves at most the last 3 characters of a base64 run that a cut left mid-key', () => {
    registerSecret(KEY);
    const encoded = b64(KEY.slice(0, 20));
    const out = redact(`x ${encoded} y`);
    expect(out).toMatch(/^x \[REDACTED\]\S{0,3} y$/);
  });

  it('keeps ordinary text, and fewer than 8 characters of a key, as they are', () => {
    registerSecret(KEY);
    for (const text of ['', 'plan: 3 changes', 'sec-KEY', `${KEY.slice(0, 7)}!`, `…${KEY.slice(-7)}`, '%%%\\\\&&&amp;%41\\u0041', 'a'.repeat(10_000), b64(KEY.slice(0, 5))]) {
      expect(redact(text)).toBe(text);
      expect(containsSecret(text)).toBe(false);
    }
  });

  // The search looks at a sampled gram of 4 characters every 5: every run of 8 holds one whole,
  // whatever its alignment, at the start, in the middle or at the very end of the text.
  it('finds 8 characters of a key at every alignment and every place, each run replaced whole', () => {
    registerSecret(KEY);
    for (const form of [KEY, b64(KEY), encodeURIComponent(ODD)]) {
      if (form !== KEY) registerSecret(form === b64(KEY) ? KEY : ODD);
      for (let len = 8; len <= 13; len++) {
        for (let from = 0; from + len <= Math.min(form.length, 24); from++) {
          const piece = form.slice(from, from + len);
          for (let pad = 0; pad < 12; pad++) {
            const before = '.'.repeat(pad);
            for (const text of [`${before}${piece}`, `${before}${piece}!`, `${before}${piece}${'.'.repeat(pad)}`]) {
              const out = redact(text);
              expect(out, JSON.stringify(text)).not.toContain(piece.slice(0, 8));
              expect(out.replace(/^\.*/, '').replace(/[.!]*$/, ''), JSON.stringify(text)).toMatch(/^\[REDACTED\]\S{0,3}$/);
              expect(containsSecret(text)).toBe(true);
            }
          }
        }
      }
    }
  });

  // A breaker registered 200 keys of 4,096 characters: the matcher held 1.6 GB (a Map entry per
  // window). Its windows are now typed arrays by hash bucket (bench/redact.mjs: ~120 MB then).
  it('finds a fragment of any of many long keys, in any encoding, and nothing in text without one', () => {
    const keys = Array.from({ length: 40 }, (_, i) => Buffer.from(Array.from({ length: 3072 }, (_, j) => (i * 7919 + j * 104729) % 256)).toString('base64'));
    for (const k of keys) registerSecret(k);
    for (const [i, k] of keys.entries()) {
      const piece = k.slice(i * 37, i * 37 + 9);
      expect(redact(`a ${piece} b`)).toBe('a [REDACTED] b');
      expect(containsSecret(`x ${encodeURIComponent(k.slice(100 + i, 130 + i))} y`)).toBe(true);
      expect(containsSecret(`x ${b64(k.slice(2000, 2030))} y`)).toBe(true);
    }
    expect(containsSecret('plan: 3 changes, firmware 2.4.1 (modem) is_deactivated: false → true '.repeat(50))).toBe(false);
  });

  it('replaces the whole run: a key that straddles a cut is one [REDACTED], and two keys side by side are one', () => {
    registerSecret(KEY);
    registerSecret('other-key-0123456789');
    expect(redact(`a ${KEY}other-key-0123456789 b`)).toBe('a [REDACTED] b');
    expect(redact(`a ${KEY} other-key-0123456789 b`)).toBe('a [REDACTED] [REDACTED] b');
    expect(redact(`…${KEY.slice(-12)} and ${KEY.slice(0, 12)}…`)).toBe('…[REDACTED] and [REDACTED]…');
  });

  it('cuts the text as written, around whole escapes, so that JSON stays JSON', () => {
    registerSecret(ODD);
    const doc = JSON.stringify({ detail: `key ${ODD}!`, twice: JSON.stringify({ k: ODD }) });
    const out = redact(doc);
    expect(() => JSON.parse(out) as unknown).not.toThrow();
    expect(JSON.parse(out)).toEqual({ detail: 'key [REDACTED]!', twice: '{"k":"[REDACTED]"}' });
  });

  it('matches short keys (4-7 characters) whole only', () => {
    registerSecret('abcd12');
    expect(redact('x abcd12 y abcd1 z')).toBe('x [REDACTED] y abcd1 z');
    // Whole, in the spellings a breaker tried: `+` for a space, a look-alike hyphen, base64 after 1 or 2 other bytes.
    registerSecret('ab cd12');
    registerSecret('ab-cd12');
    registerSecret('k3y_abc');
    for (const text of ['key=ab+cd12', 'x ab&hyphen;cd12 y', 'x ab\u2011cd12 y', `x ${b64('Pk3y_abc')} y`, `x ${b64('PQk3y_abc')} y`, `x ${b64url('PQk3y_abc')} y`]) {
      expect(redact(text), text).toContain('[REDACTED]');
    }
    // A 4-character key leaves 4 characters its bits alone decide in each alignment.
    registerSecret('k3yZ');
    for (const plain of ['k3yZ"}', 'pk3yZ"}', 'ppk3yZX']) {
      expect(redact(`blob=${b64url(plain)} end`), plain).toContain('[REDACTED]');
    }
    registerSecret('abc');
    expect(redact('abc')).toBe('abc');
  });

  it('redactDeep: strings, object keys and Map keys, with the path of each', () => {
    registerSecret(KEY);
    const found: string[] = [];
    const value = {
      phases: [{ name: 'ok', info: { token: `t=${KEY}`, [KEY]: 1, n: 2 } }],
      deps: new Map([[`v-${KEY}`, { min_version: KEY }]]),
      n: 1, b: true, z: null,
    };
    const out = redactDeep(value, (p) => found.push(p));
    expect(JSON.stringify({ ...out, deps: [...out.deps] })).not.toContain(KEY.slice(0, 8));
    expect(out.phases[0]!.info).toEqual({ token: 't=[REDACTED]', '[REDACTED]': 1, n: 2 });
    expect([...out.deps.keys()]).toEqual(['v-[REDACTED]']);
    expect(found).toEqual([
      'phases[0].info.token',
      'phases[0].info["[REDACTED]"]',
      'deps["v-[REDACTED]"]',
      'deps["v-[REDACTED]"].min_version',
    ]);
    expect(value.phases[0]!.info.token).toBe(`t=${KEY}`);
  });

  it('costs little: 1 MB of log text with escapes and a few keys in well under a second', () => {
    registerSecret(KEY);
    registerSecret(ODD);
    const line = `{"level":"info","msg":"GET /api/v1/firmware-bundles?page=3 200 \\"ok\\" 12 ms","tenant":"acme","path":"a%2Fb&amp;c"}\n`;
    const text = line.repeat(Math.ceil(1_000_000 / line.length)) + `leak ${KEY}\n`;
    const started = performance.now();
    const out = redact(text);
    const ms = performance.now() - started;
    expect(out.endsWith('leak [REDACTED]\n')).toBe(true);
    expect(ms).toBeLessThan(1000);
  });
});
