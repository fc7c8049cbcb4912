// The one top-level error handler: typed errors become an exit code and one clear sentence
// on standard error; a stack trace only with --debug.
import { CommanderError } from 'commander';
import { ConfigError, isDusError } from '../errors.js';
import { redact } from '../redact.js';

export function handleError(err: unknown, debug: boolean): number {
  if (err instanceof CommanderError) {
    // --help and --version end here with exit code 0; usage errors were already printed.
    return err.exitCode === 0 ? 0 : 1;
  }
  if (err instanceof ConfigError) {
    for (const issue of err.issues) {
      process.stderr.write(`${issue.file}:${issue.line}:${issue.column}: ${redact(issue.message)}\n`);
    }
    if (err.issues.length === 0) process.stderr.write(`error: ${redact(err.message)}\n`);
    else process.stderr.write(`error: ${err.issues.length} problem${err.issues.length === 1 ? '' : 's'} in the configuration; nothing was written.\n`);
  } else if (isDusError(err)) {
    process.stderr.write(`error: ${redact(err.message)}\n`);
  } else if (err instanceof Error) {
    process.stderr.write(`error: ${redact(err.message)}${debug ? '' : ' (run with --debug for details)'}\n`);
  } else {
    process.stderr.write(`error: ${redact(String(err))}\n`);
  }
  if (debug && err instanceof Error && err.stack) process.stderr.write(`${redact(err.stack)}\n`);
  return 1;
}
