// Text from YAML, a pull request or a server, made inert in a GitHub comment. One escaper for the
// plan's markdown (markdown.ts) and the diff's (desired-diff-markdown.ts), so that what one
// defuses, the other does too: a fork's pull request sets tenant names, phase names and values
// that `diff --format markdown` puts in a bot's comment.
import { safeText } from './ansi.js';

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
