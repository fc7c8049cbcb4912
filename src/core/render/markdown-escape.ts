// Text from YAML, a pull request or a server, made inert in a GitHub comment. One escaper for the
// plan's markdown (markdown.ts) and the diff's (desired-diff-markdown.ts), so that what one
// defuses, the other does too: a fork's pull request sets tenant names, phase names and values
// that `diff --format markdown` puts in a bot's comment.
import { safeLines, safeText } from './ansi.js';

const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  // GitHub finds @mentions (and email addresses) in the text after entities are decoded, so
  // `&#64;` alone still pings: a zero-width space after it breaks the name off, as Renovate does.
  '@': '&#64;&#8203;',
};

/**
 * Inert in both markdown and HTML (values also go inside `<code>` and `<summary>`): numeric
 * entities render as the character in either context, and keep `|` from splitting table cells,
 * `*_~` from emphasis, `[]` from links, `<>` from HTML, `$` from starting math and `@` from
 * pinging people or teams. A bare `https://…` or `www.…` is cut by an entity and a zero-width
 * space so that it does not become a link.
 */
export function escapeMarkdown(text: string): string {
  return safeText(text)
    .replace(/[&<>"`*_[\]|\\~#@$]/g, (c) => ENTITIES[c] ?? `&#${c.charCodeAt(0)};`)
    .replace(/:\/\//g, '&#58;&#8203;//')
    .replace(/(www)\./gi, '$1&#46;&#8203;');
}

// Mermaid reads `#name;` and `#123;` in a diagram as entity codes before it parses it (its
// encodeEntities), then decodes them as HTML entities in the label; its `style …:#…;` and
// `classDef …:#…;` rules also cut the last `;` of a line that has a `:` and a `#`. So in a label,
// `#` and `;` are always written as codes (a phase named `#1;` stays `#1;`), and `:` too (those
// rules then never see one of ours). `"` would end the label, `<>&` would be HTML, a backtick
// would start a markdown string; `ﬂ` and `¶` are the characters of mermaid's own placeholders.
const MERMAID_SPECIAL = /[#;:"&<>`\\ﬂ¶]/g;

/** A label inside mermaid's ["…"], with mermaid's numeric entity codes (`#35;`) for what it would read. */
export function escapeMermaid(text: string): string {
  return safeText(text).replace(MERMAID_SPECIAL, (c) => `#${c.codePointAt(0)};`);
}

/** A fence longer than any backtick run inside, so that no content can close it early. */
export function fenced(lang: string, body: string): string {
  const longest = Math.max(0, ...(body.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}${lang}\n${body}\n${fence}`;
}

/** Compact JSON longer than this goes into a details block: a table cell or a list line would overflow. */
export const INLINE_JSON_MAX = 60;

/**
 * A value pretty-printed as JSON in a collapsed block (for JSON too long to read inline, like a
 * phase's trigger_on and info). `summary` is HTML-safe text already.
 */
export function jsonDetails(summary: string, value: unknown): string {
  const body = safeLines(JSON.stringify(value, null, 2));
  return ['<details>', `<summary>${summary}</summary>`, '', fenced('json', body), '', '</details>'].join('\n');
}
