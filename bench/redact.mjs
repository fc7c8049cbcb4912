// `node bench/redact.mjs`: what redact() costs on 1 MB of text, the size of a big plan or a long
// burst of logs. Every line written to a terminal, a log, a file or an HTTP answer goes through it.
import { build } from 'esbuild';
import { join } from 'node:path';

const out = await build({ entryPoints: [join(import.meta.dirname, '..', 'src', 'redact.ts')], bundle: true, format: 'esm', platform: 'node', write: false });
const { redact, registerSecret } = await import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);

const MB = 1_000_000;
const fill = (line) => line.repeat(Math.ceil(MB / line.length)).slice(0, MB);
const texts = {
  'plain text (a text plan)': fill('  ~ firmware 2.4.1 (modem)\n      is_deactivated: false → true\n'),
  'JSON log lines (escapes: 2 decoding levels)': fill('{"level":"info","msg":"GET /api/v1/firmware-bundles?page=3 answered \\"ok\\"","path":"a%2Fb"}\n'),
  'one key every 1 KB': fill(`${'x'.repeat(1000)} sec-KEY-3f9a1c7e5b2d4f6a8c0e\n`),
  'an HTML page (many character references)': fill('<td>a&amp;b&nbsp;c&lt;d&gt; &quot;x&quot; &#39;y&#39; ?a=1&page=3</td>\n'),
  // Links whose queries are HTML-escaped (`&amp;`) and percent-encoded: junctions everywhere.
  'an HTML page of links (&amp; before %2F)': fill('<a href="/search?q=a%2Fb&amp;page=3&amp;sort=name%20asc&amp;x=%C3%A9">next &#8250;</a>\n'),
  // A breaker's: a log whose message is JSON holding a Windows path, %20 and references.
  'JSON in JSON (a Windows path, %20, &#38;)': fill('{"level":"info","msg":"{\\"path\\":\\"C:\\\\\\\\Users\\\\\\\\1\\\\\\\\2024\\\\\\\\a%20b\\",\\"title\\":\\"a &#38; b &amp; c\\"}"}\n'),
  // JSON text with accents as \u and line feeds as \n (a Python json.dumps): spots far apart.
  'JSON with \\u accents and \\n (spots apart)': fill(`{"detail":"caf\\u00e9\\nna\\u00efve ${'r'.repeat(300)}"}\n`),
  // A breaker's: every family of escapes, each eating a character next to another's (hostile).
  'every escape family at every step (hostile)': fill('\\1%41\\u{41}&#65\\x41\\b' + JSON.stringify('%41\\u0041&#65\\101\\x41\\n').slice(1, -1) + encodeURIComponent('\\2%42\\u0042&#66\\x42\\f')),
};

registerSecret('sec-KEY-3f9a1c7e5b2d4f6a8c0e');
for (const keys of [1, 10]) {
  // Ten tenants: nine more keys of 40 to 64 characters.
  if (keys === 10) for (let i = 1; i < 10; i++) registerSecret(`tenant-${i}-${'k3Y'.repeat(10 + i)}`);
  for (const [name, text] of Object.entries(texts)) {
    redact(text);
    const times = [];
    for (let r = 0; r < 7; r++) {
      const t = performance.now();
      redact(text);
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    process.stdout.write(`${keys} key(s), 1 MB, ${name}: ${times[3].toFixed(1)} ms (median of 7)\n`);
  }
}
for (const line of [
  'warning: the API failed on PUT /api/v1/firmwares/2.4.1 for tenant acme (500): internal error\n',
  '{"level":"warn","msg":"the API failed on PUT /api/v1/firmwares/2.4.1 for tenant acme (500): \\"internal\\" error"}\n',
]) {
  const t = performance.now();
  for (let i = 0; i < 100_000; i++) redact(line);
  process.stdout.write(`one line of ${line.length} characters${line.includes('\\') ? ' with escapes' : ''}: ${((performance.now() - t) / 100).toFixed(2)} µs\n`);
}

// Many long keys (200 tenants, keys of 4,096 characters, the longest accepted): what the
// matcher holds for them, and the time its first use takes (it is built then).
{
  const { clearSecretsForTests } = await import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);
  clearSecretsForTests?.();
  globalThis.gc?.();
  const before = process.memoryUsage();
  const t = performance.now();
  for (let i = 0; i < 200; i++) registerSecret(Buffer.from(Array.from({ length: 3072 }, (_, j) => (i * 7919 + j * 104729) % 256)).toString('base64'));
  redact('warm');
  const ms = performance.now() - t;
  const after = process.memoryUsage();
  const mb = (a, b) => ((a - b) / 1048576).toFixed(0);
  process.stdout.write(`200 keys of 4,096 characters: matcher built in ${ms.toFixed(0)} ms, heap +${mb(after.heapUsed, before.heapUsed)} MB, typed arrays +${mb(after.arrayBuffers, before.arrayBuffers)} MB\n`);
}
