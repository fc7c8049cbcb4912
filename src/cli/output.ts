// The edge where text leaves the CLI for a terminal or a CI log: standard output and standard
// error. main() wraps both streams once, so every write passes here, whoever made it (a
// command, the stderr logger, the agent's pino logger, commander, readline, a library):
//
// 1. Keys are redacted (src/redact.ts): every form of every registered key.
// 2. Control characters are escaped visibly (`\u001b`, `\u202e`), except what dus-sync and its
//    libraries write on purpose: line feeds and tabs; a carriage return before a line feed or
//    an escape sequence (the progress line); and the escape sequences for colours (`ESC[...m`),
//    erasing a line (`ESC[K`) and readline's cursor moves (`ESC[nG`, `ESC[nA`..`ESC[nD`,
//    `ESC[0J`). The renderers already escape every value they print (safeText); this is the
//    net under them, for what they do not know about.
// 3. A line that would start (after blanks) with `::`, which GitHub Actions reads as a workflow
//    command (`::error`, `::add-mask`, `::stop-commands`), gets its first colon escaped, and
//    `##[` / `##vso[` (the older and the Azure Pipelines forms, read anywhere in a line) their
//    first `#`. Only `validate --format github` writes workflow commands, on purpose and with
//    its data escaped, through writeWorkflowCommands().
import { escapeChar } from '../core/render/ansi.js';
import { redact } from '../redact.js';

// First the sequences that are kept (captured), then the characters that are escaped.
// eslint-disable-next-line no-control-regex
const CONTROL = /(\u001b\[[0-9;]*[mK]|\u001b\[\d*[GABCD]|\u001b\[0?J|\r(?=\n|\u001b\[))|[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// The runner trims any white space before it looks for `::`.
const COMMAND_AT_LINE_START = /(^|\n)([^\S\n]*):(?=:)/g;
const LEGACY_COMMAND = /#(?=#(?:vso)?\[)/gi;

let workflowCommandsAllowed = false;

function escapeControl(match: string, kept: string | undefined): string {
  return kept ?? escapeChar(match);
}

/** One write's text, made safe. `atLineStart`: the stream's last write ended a line. */
export function guardText(text: string, atLineStart: boolean): string {
  let out = redact(text).replace(CONTROL, escapeControl);
  if (!workflowCommandsAllowed) {
    out = out.replace(LEGACY_COMMAND, '\\u0023');
    out = out.replace(COMMAND_AT_LINE_START, (m: string, nl: string, blanks: string, offset: number) =>
      offset === 0 && nl === '' && !atLineStart ? m : `${nl}${blanks}\\u003a`);
  }
  return out;
}

type Write = NodeJS.WriteStream['write'];

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Wraps the stream's write() so that everything written passes guardText(). Idempotent. */
export function guardStream(stream: NodeJS.WriteStream): void {
  const marked = stream as NodeJS.WriteStream & { __dusSyncGuarded?: boolean };
  if (marked.__dusSyncGuarded) return;
  marked.__dusSyncGuarded = true;
  const original = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  let atLineStart = true;
  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    let text: string | undefined;
    if (typeof chunk === 'string') text = chunk;
    else if (chunk instanceof Uint8Array) {
      try {
        text = decoder.decode(chunk);
      } catch {
        text = undefined;
      }
    }
    if (text === undefined) return original(chunk, ...rest);
    const safe = guardText(text, atLineStart);
    if (text.length > 0) atLineStart = text.endsWith('\n');
    // A string with its encoding argument, or a buffer decoded above: either way, text now.
    const tail = typeof rest[0] === 'string' ? rest.slice(1) : rest;
    return original(safe, 'utf8', ...tail);
  };
  stream.write = write as Write;
}

/** Standard output and standard error, for the whole process. */
export function guardProcessOutput(): void {
  guardStream(process.stdout);
  guardStream(process.stderr);
}

/**
 * Writes workflow commands on purpose (validate --format github on stdout; review's annotations on
 * stderr, which the runner reads for commands too): their data is escaped by the caller.
 */
export function writeWorkflowCommands(text: string, stream: NodeJS.WriteStream = process.stdout): void {
  workflowCommandsAllowed = true;
  try {
    stream.write(text);
  } finally {
    workflowCommandsAllowed = false;
  }
}
