// With `--format json`, standard output is read by a program (`plan --format json > plan.json`,
// `jq`): a command that fails must still leave one JSON document there, not an empty file. So a
// failure before the command wrote its result becomes one error object on stdout:
//
//   {"format_version":1,"error":{"code":"API","message":"…","status":401,"endpoint":"GET /…"}}
//
// while the human sentence still goes to standard error and the exit code stays the same.
// Messages are redacted here and again where stdout leaves the process (output.ts).
import { ApiError, ConfigError, isDusError } from '../errors.js';
import { redact } from '../redact.js';

let resultWritten = false;
let watching = false;

/** From now on, note whether the command wrote anything on stdout (its result). Idempotent. */
export function watchResultOutput(): void {
  if (watching) return;
  watching = true;
  const original = process.stdout.write.bind(process.stdout) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    if ((typeof chunk === 'string' || chunk instanceof Uint8Array) && chunk.length > 0) resultWritten = true;
    return original(chunk, ...rest);
  };
  process.stdout.write = write as NodeJS.WriteStream['write'];
}

/** The error object's `error` member: a code, the sentence, and what a program can act on. */
export function errorJson(err: unknown): Record<string, unknown> {
  if (err instanceof ConfigError) {
    const n = err.issues.length;
    return {
      code: err.code,
      message: redact(n === 0 ? err.message : `${n} problem${n === 1 ? '' : 's'} in the configuration; nothing was written.`),
      issues: err.issues.map((i) => ({ file: redact(i.file), line: i.line, column: i.column, pointer: i.pointer, message: redact(i.message) })),
    };
  }
  if (err instanceof ApiError) {
    return {
      code: err.code,
      message: redact(err.message),
      ...(err.status !== undefined ? { status: err.status } : {}),
      ...(err.details.endpoint !== undefined ? { endpoint: redact(err.details.endpoint) } : {}),
    };
  }
  if (isDusError(err)) return { code: err.code, message: redact(err.message) };
  return { code: 'INTERNAL', message: redact(err instanceof Error ? err.message : String(err)) };
}

/** Writes `{"format_version":1,"error":{…}}` on stdout, unless the command already wrote its result. */
export function writeJsonError(error: Record<string, unknown>): void {
  if (resultWritten) return;
  process.stdout.write(JSON.stringify({ format_version: 1, error }, null, 2) + '\n');
}
