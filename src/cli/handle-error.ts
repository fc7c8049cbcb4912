// The one top-level error handler: typed errors become an exit code and one clear sentence
// on standard error; a stack trace only with --debug. Messages quote servers and file names:
// each is kept on one line, control characters escaped (keys are redacted in output.ts).
import { CommanderError } from 'commander';
import { safeLines, safeText } from '../core/render/ansi.js';
import { ConfigError, isDusError } from '../errors.js';

export function handleError(err: unknown, debug: boolean): number {
  if (err instanceof CommanderError) {
    // --help and --version end here with exit code 0; usage errors were already printed.
    return err.exitCode === 0 ? 0 : 1;
  }
  if (err instanceof ConfigError) {
    for (const issue of err.issues) {
      process.stderr.write(`${safeText(issue.file)}:${issue.line}:${issue.column}: ${safeText(issue.message)}\n`);
    }
    if (err.issues.length === 0) process.stderr.write(`error: ${safeText(err.message)}\n`);
    else process.stderr.write(`error: ${err.issues.length} problem${err.issues.length === 1 ? '' : 's'} in the configuration; nothing was written.\n`);
  } else if (isDusError(err)) {
    process.stderr.write(`error: ${safeText(err.message)}\n`);
  } else if (err instanceof Error) {
    process.stderr.write(`error: ${safeText(err.message)}${debug ? '' : ' (run with --debug for details)'}\n`);
  } else {
    process.stderr.write(`error: ${safeText(String(err))}\n`);
  }
  if (debug && err instanceof Error && err.stack) process.stderr.write(`${safeLines(err.stack)}\n`);
  return 1;
}
