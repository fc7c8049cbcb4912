// Tiny ANSI styling for the pure renderers (node:util styleText is off limits in core).
export type Tone = 'bold' | 'dim' | 'red' | 'green' | 'yellow';

const CODES: Readonly<Record<Tone, readonly [number, number]>> = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
};

export type Painter = (tone: Tone, text: string) => string;

export function painter(color: boolean): Painter {
  if (!color) return (_tone, text) => text;
  return (tone, text) => {
    const [open, close] = CODES[tone];
    return `\u001b[${open}m${text}\u001b[${close}m`;
  };
}

/**
 * What must not reach a terminal or a CI log raw: C0 controls (ESC starts escape sequences, CR
 * and LF start a new line, where a CI runner reads `::error ...` as a command; BEL, backspace),
 * DEL, C1 controls (U+009B is a one-character CSI on some terminals), the Unicode bidi
 * embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) and marks (U+200E, U+200F,
 * U+061C) that make text read differently from what it is, and the line and paragraph
 * separators U+2028 and U+2029.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex
const UNSAFE_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const SHORT: Readonly<Record<string, string>> = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r' };

/** A control character as JSON would write it: `\n`, `\u001b`, `\u202e`. */
export function escapeChar(c: string): string {
  return SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * Names and messages come from YAML files, file names and API responses: each is shown on one
 * line, with every character above escaped visibly, so that it can neither rewrite the screen
 * (an escape sequence in a phase name), nor start a line of its own (a newline in a server's
 * detail followed by `::error ...`), nor read backwards.
 */
export function safeText(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

/** The same, for text that is several lines on purpose (a stack trace): line feeds are kept. */
export function safeLines(text: string): string {
  return text.replace(UNSAFE_BUT_NEWLINE, escapeChar);
}
