// The README is the quick start and docs/ holds the rest: every relative link between them (and
// from examples/ci/README.md) must reach a file that exists and, with a #anchor, a heading of that
// file, as GitHub computes heading anchors. A section renamed or moved breaks a test, not a reader.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** The documents whose links are checked, relative to the repository. */
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`),
  'examples/ci/README.md',
];

/** The lines of a markdown text outside fenced code blocks, with their 1-based numbers. */
function proseLines(markdown: string): { lines: { n: number; text: string }[]; unclosedFence: boolean } {
  const lines: { n: number; text: string }[] = [];
  let fence: { char: string; length: number } | undefined;
  markdown.split('\n').forEach((text, i) => {
    const m = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(text);
    if (fence === undefined) {
      if (m && !(m[1]!.startsWith('`') && m[2]!.includes('`'))) fence = { char: m[1]![0]!, length: m[1]!.length };
      else lines.push({ n: i + 1, text });
    } else if (m && m[1]![0] === fence.char && m[1]!.length >= fence.length && m[2]!.trim() === '') {
      fence = undefined;
    }
  });
  return { lines, unclosedFence: fence !== undefined };
}

/** A heading's anchor by GitHub's rules (github-slugger), before duplicates are numbered. */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link in a heading counts by its text
    .replace(/<[^>]+>/g, '') // as do HTML tags
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '') // punctuation goes; letters, digits, _, - and spaces stay
    .replace(/ /g, '-');
}

/** Every anchor a markdown text defines: its headings (duplicates get -1, -2, …) and <a id/name>. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const add = (base: string): void => {
    let candidate = base;
    for (let k = 1; anchors.has(candidate); k++) candidate = `${base}-${k}`;
    anchors.add(candidate);
  };
  const { lines } = proseLines(markdown);
  lines.forEach(({ text }, i) => {
    const atx = /^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(text);
    if (atx) {
      add(slug(atx[1] ?? ''));
    } else if (/^ {0,3}(=+|-+)[ \t]*$/.test(text) && i > 0) {
      // A setext heading: the paragraph line just above is the heading's text.
      const above = lines[i - 1]!;
      if (above.n === lines[i]!.n - 1 && /^ {0,3}[^\s#>|*+\-\d]/.test(above.text)) add(slug(above.text));
    }
    for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  });
  return anchors;
}

/** Every inline link and image of a markdown text outside code: its target and line. */
function linksOf(markdown: string): { target: string; line: number }[] {
  const { lines } = proseLines(markdown);
  // Paragraphs are joined so that a code span or a link broken over two lines is still seen whole;
  // each character keeps the number of its line.
  const text = lines.map((l) => l.text).join('\n');
  const lineAt: number[] = [];
  lines.forEach((l) => {
    for (let c = 0; c <= l.text.length; c++) lineAt.push(l.n);
  });
  // Code spans hide what looks like a link; they are blanked, keeping every offset.
  const prose = text.replace(/(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)/g, (span) => span.replace(/[^\n]/g, ' '));
  const links: { target: string; line: number }[] = [];
  const pattern = /!?\[((?:[^[\]]|\[[^\]]*\])*)\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g;
  for (const m of prose.matchAll(pattern)) {
    links.push({ target: m[2]!.replace(/^<|>$/g, ''), line: lineAt[m.index] ?? 0 });
  }
  return links;
}

/** The links of `markdown` (the text of the document `doc`, relative to ROOT) that do not resolve. */
function brokenLinks(markdown: string, doc: string): string[] {
  const problems: string[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsOfFile = (file: string): Set<string> => {
    let a = anchorCache.get(file);
    if (a === undefined) {
      a = file === doc ? anchorsOf(markdown) : anchorsOf(readFileSync(join(ROOT, file), 'utf8'));
      anchorCache.set(file, a);
    }
    return a;
  };
  for (const { target, line } of linksOf(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // https:, mailto:
    const hash = target.indexOf('#');
    const path = decodeURI(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const file = path === '' ? doc : relative(ROOT, path.startsWith('/') ? join(ROOT, path) : resolve(ROOT, dirname(doc), path));
    const where = `${doc}:${line}: ${target}`;
    if (file.startsWith('..')) {
      problems.push(`${where}: leaves the repository`);
      continue;
    }
    if (!existsSync(join(ROOT, file))) {
      problems.push(`${where}: ${file} does not exist`);
      continue;
    }
    if (anchor === undefined) continue;
    if (!file.endsWith('.md') || statSync(join(ROOT, file)).isDirectory()) {
      problems.push(`${where}: an anchor into ${file}, which is not a markdown file, cannot be checked`);
    } else if (!anchorsOfFile(file).has(anchor)) {
      problems.push(`${where}: ${file} has no heading with the anchor #${anchor}`);
    }
  }
  return problems;
}

describe('GitHub heading anchors', () => {
  it('follow github-slugger: lower case, punctuation dropped (not - or _), spaces to hyphens', () => {
    expect(slug('Plan JSON (`plan --format json`, format_version 1)')).toBe('plan-json-plan---format-json-format_version-1');
    expect(slug('Validate offline: `dus-sync validate`')).toBe('validate-offline-dus-sync-validate');
    expect(slug('Bring an existing tenant under git: `export`')).toBe('bring-an-existing-tenant-under-git-export');
    expect(slug('Every write is decided on fresh state, inside the lock')).toBe('every-write-is-decided-on-fresh-state-inside-the-lock');
    expect(slug('Point it at [a real](x.md) service')).toBe('point-it-at-a-real-service');
  });

  it('number duplicates -1, -2 and ignore headings inside code fences', () => {
    const md = ['# Usage', '## Usage', '```yaml', '# not a heading', '```', '### Usage', 'Setext', '---', '<a id="here"></a>'].join('\n');
    expect([...anchorsOf(md)]).toEqual(['usage', 'usage-1', 'usage-2', 'setext', 'here']);
  });
});

describe('the link checker', () => {
  it('flags a made-up missing file, a missing anchor here and a missing anchor elsewhere', () => {
    const md = [
      '# Title',
      'See [nowhere](docs/no-such-file.md), [a section](#no-such-section) and',
      '[a lock](docs/reference.md#no-such-lock), but [the lock](docs/reference.md#the-lock),',
      '[the title](#title), [a folder](examples/ci/) and [the web](https://example.com/x.md) are fine.',
      '`[in code](nowhere.md)` and',
      '```',
      '[in a fence](nowhere.md)',
      '```',
    ].join('\n');
    const problems = brokenLinks(md, 'README.md');
    expect(problems).toEqual([
      'README.md:2: docs/no-such-file.md: docs/no-such-file.md does not exist',
      'README.md:2: #no-such-section: README.md has no heading with the anchor #no-such-section',
      'README.md:3: docs/reference.md#no-such-lock: docs/reference.md has no heading with the anchor #no-such-lock',
    ]);
  });

  it('sees a link whose text is broken over two lines', () => {
    expect(brokenLinks('[two\nlines](#gone)', 'README.md')).toEqual(['README.md:1: #gone: README.md has no heading with the anchor #gone']);
  });
});

describe('the documentation', () => {
  it.each(DOCUMENTS)('%s: every relative link reaches a file, and every #anchor a heading of it', (doc) => {
    expect(brokenLinks(readFileSync(join(ROOT, doc), 'utf8'), doc)).toEqual([]);
  });

  it.each(DOCUMENTS)('%s: its code fences are closed', (doc) => {
    expect(proseLines(readFileSync(join(ROOT, doc), 'utf8')).unclosedFence).toBe(false);
  });

  it('README.md is the quick start: under 15,000 bytes, the two commands on its first screen', () => {
    const readme = readFileSync(join(ROOT, 'README.md'));
    expect(readme.byteLength).toBeLessThan(15_000);
    const firstScreen = readme.toString('utf8').split('\n').slice(0, 20).join('\n');
    expect(firstScreen).toContain('npm ci && npm run demo');
    expect(firstScreen).toContain('npm test');
  });

  it('the checker sees the links there are (examples/ci/README.md has none today)', () => {
    const count = (doc: string): number => linksOf(readFileSync(join(ROOT, doc), 'utf8')).length;
    expect(count('README.md')).toBeGreaterThan(20);
    expect(count('docs/reference.md')).toBeGreaterThan(20);
  });

  it('README.md links to every document in docs/', () => {
    const linked = new Set(linksOf(readFileSync(join(ROOT, 'README.md'), 'utf8')).map((l) => l.target.split('#')[0]));
    for (const doc of DOCUMENTS.filter((d) => d.startsWith('docs/'))) expect(linked, doc).toContain(doc);
  });
});
