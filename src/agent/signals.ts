// SIGTERM / SIGINT: the first one stops gracefully (the running pass may finish within the grace
// period) and exits 0; a second one exits at once. Node as PID 1 in a container gets no default
// signal handling from the kernel, so these handlers are what make `docker stop` prompt.
import { constants } from 'node:os';

export type StopSignal = 'SIGTERM' | 'SIGINT';

export interface SignalOptions {
  /** Default: process.exit. */
  readonly exit?: (code: number) => void;
  readonly onSecond?: (signal: StopSignal) => void;
  readonly proc?: Pick<NodeJS.Process, 'on' | 'off'>;
}

/** Installs the handlers; returns a function that removes them. */
export function installSignalHandlers(onStop: (signal: StopSignal) => Promise<void>, opts: SignalOptions = {}): () => void {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const proc = opts.proc ?? process;
  let stopping = false;
  const handler = (signal: StopSignal): void => {
    if (stopping) {
      opts.onSecond?.(signal);
      exit(128 + (constants.signals[signal] ?? 15));
      return;
    }
    stopping = true;
    onStop(signal).then(() => exit(0), () => exit(1));
  };
  const onTerm = (): void => handler('SIGTERM');
  const onInt = (): void => handler('SIGINT');
  proc.on('SIGTERM', onTerm);
  proc.on('SIGINT', onInt);
  return () => {
    proc.off('SIGTERM', onTerm);
    proc.off('SIGINT', onInt);
  };
}
