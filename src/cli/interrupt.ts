// SIGINT / SIGTERM during a command that writes (apply): the first signal stops new writes and
// lets the ones in flight finish within a grace period, so the journal is settled, the report is
// printed and the lock released; the command then exits 130 (SIGINT) or 143 (SIGTERM). A second
// signal, or the end of the grace period, exits at once: an append still in flight stays in the
// journal, settled by the next run. A CI job cancel sends exactly this (GitHub: SIGINT, then
// SIGTERM 7.5 s later). Standard output or error closed by its reader (`dus-sync apply -y | head`,
// EPIPE) is a stop too, SIGPIPE's (exit 141), taken when a write to it fails: it had ended the
// process at once, mid-apply, lock held and exit status 0.
import { setMaxListeners } from 'node:events';
import { constants } from 'node:os';
import type { Logger } from '../model/index.js';

export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGPIPE';

export interface Interrupt {
  /** Aborted on the first signal. */
  readonly signal: AbortSignal;
  /** The signal received, if any. */
  received(): StopSignal | undefined;
  /** 128 + the signal's number once one was received. */
  exitCode(): number | undefined;
  /** Removes the handlers (the command is done). */
  dispose(): void;
}

export interface InterruptOptions {
  readonly log: Logger;
  readonly graceMs: number;
  /** Default: process.exit. */
  readonly exit?: (code: number) => void;
  readonly proc?: Pick<NodeJS.Process, 'on' | 'off'>;
}

const codeOf = (s: StopSignal): number => 128 + (constants.signals[s] ?? 15);

/** The handlers of the commands running now (apply), for outputClosed. */
const active = new Set<(s: StopSignal) => void>();

/**
 * Standard output's reader went away (EPIPE): a command that writes stops as on a signal, and
 * true is returned; false when none runs (the caller then ends the process, as SIGPIPE would).
 */
export function outputClosed(): boolean {
  for (const stop of active) stop('SIGPIPE');
  return active.size > 0;
}

export function onInterrupt(opts: InterruptOptions): Interrupt {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const proc = opts.proc ?? process;
  const controller = new AbortController();
  // Every write and read of the run listens on it (up to --max-concurrency at once): by design.
  setMaxListeners(0, controller.signal);
  let got: StopSignal | undefined;
  let timer: NodeJS.Timeout | undefined;
  const handler = (s: StopSignal): void => {
    if (got !== undefined) {
      opts.log.warn(`${s} received again: exiting now; an append still in flight is settled from the journal by the next run`);
      exit(codeOf(got));
      return;
    }
    got = s;
    if (s === 'SIGPIPE') opts.log.warn(`standard output or error was closed by its reader (SIGPIPE): no more writes are started; any in flight may finish within ${Math.round(opts.graceMs / 1000)} s, and the lock is released (send SIGINT to stop at once)`);
    else opts.log.warn(`${s} received: no new writes are sent; those in flight may finish within ${Math.round(opts.graceMs / 1000)} s, then the report is printed (${s === 'SIGINT' ? 'press Ctrl-C again' : 'send it again'} to stop at once)`);
    controller.abort(new Error(`interrupted by ${s}`));
    timer = setTimeout(() => {
      opts.log.error(`writes still in flight after the grace period of ${Math.round(opts.graceMs / 1000)} s: exiting; the journal settles them on the next run`);
      exit(codeOf(s));
    }, opts.graceMs);
    timer.unref();
  };
  const onInt = (): void => handler('SIGINT');
  const onTerm = (): void => handler('SIGTERM');
  proc.on('SIGINT', onInt);
  proc.on('SIGTERM', onTerm);
  // Standard output closes once: the first EPIPE stops the command, and the next ones (the report
  // written to it) change nothing.
  const onPipe = (s: StopSignal): void => { if (got === undefined) handler(s); };
  active.add(onPipe);
  return {
    signal: controller.signal,
    received: () => got,
    exitCode: () => (got === undefined ? undefined : codeOf(got)),
    dispose: () => {
      if (timer) clearTimeout(timer);
      proc.off('SIGINT', onInt);
      proc.off('SIGTERM', onTerm);
      active.delete(onPipe);
    },
  };
}
