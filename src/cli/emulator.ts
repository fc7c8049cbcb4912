// `dus-sync emulator`: the emulator as a process. The first line on standard output is the
// URL (scripts and tests read it to learn the port); request logs go to standard error.
import { existsSync } from 'node:fs';
import { UserError } from '../errors.js';
import { startEmulator } from '../emulator/index.js';
import type { FaultSettings, HostileMode, HostileRoute, HostileSettings } from '../emulator/index.js';
import { parseSize } from '../api/limits.js';
import type { GlobalOptions } from './context.js';

function rate(name: string, value: unknown): number {
  const n = typeof value === 'number' ? value : Number(value ?? 0);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new UserError(`${name} takes a share between 0 and 1, not "${String(value)}".`);
  return n;
}

/** "--rate-limit 20/s" or "20": requests per second per tenant. */
export function parseRateLimit(value: unknown): number {
  if (value === undefined || value === null || value === '') return 0;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*s)?\s*$/.exec(String(value));
  if (!m) throw new UserError(`--rate-limit takes requests per second like "20/s", not "${String(value)}".`);
  return Number(m[1]);
}

function faultsFrom(opts: Record<string, unknown>): FaultSettings {
  const hostile = hostileFrom(opts);
  return {
    latencyMs: Number(opts.latency ?? 0),
    failRate: rate('--fail-rate', opts.failRate),
    rateLimit: parseRateLimit(opts.rateLimit),
    dropAfterCommitRate: rate('--drop-after-commit-rate', opts.dropAfterCommitRate),
    readLagMs: Number(opts.readLag ?? 0),
    lateCommitMs: Number(opts.lateCommit ?? 0),
    raceAppendEvery: Number(opts.raceAppendEvery ?? 0),
    wrongAction: parseWrongAction(opts.wrongAction),
    seed: Number(opts.faultSeed ?? 1),
    ...(hostile ? { hostile } : {}),
  };
}

/** --hostile and its companions; the companions alone are a mistake worth a sentence. */
export function hostileFrom(opts: Record<string, unknown>): HostileSettings | undefined {
  const mode = opts.hostile as HostileMode | undefined;
  const companions = ['hostileRoute', 'hostileSize', 'hostileStatus'].filter((k) => opts[k] !== undefined);
  if (mode === undefined) {
    if (companions.length > 0) throw new UserError('--hostile-route, --hostile-size and --hostile-status need --hostile MODE (huge, endless, drip or echo).');
    return undefined;
  }
  let bytes: number | undefined;
  if (typeof opts.hostileSize === 'string') {
    bytes = parseSize(opts.hostileSize);
    if (bytes === undefined) throw new UserError(`--hostile-size takes a size such as 200MiB, 5MB or 1048576 (bytes), not "${opts.hostileSize}".`);
  }
  const status = typeof opts.hostileStatus === 'number' ? opts.hostileStatus : undefined;
  if (status !== undefined && (status < 200 || status > 599)) throw new UserError(`--hostile-status takes an HTTP status from 200 to 599, not ${status}.`);
  const interval = typeof opts.hostileInterval === 'number' ? opts.hostileInterval : undefined;
  if (interval !== undefined && interval < 1) throw new UserError('--hostile-interval takes at least 1 (millisecond).');
  return {
    mode,
    ...(Array.isArray(opts.hostileRoute) ? { routes: opts.hostileRoute as HostileRoute[] } : {}),
    ...(bytes !== undefined ? { bytes } : {}),
    ...(interval !== undefined ? { intervalMs: interval } : {}),
    ...(status !== undefined ? { status } : {}),
  };
}

/** "--wrong-action 100=101" (repeatable): GET /actions/100 is answered with action 101. */
export function parseWrongAction(value: unknown): Record<number, number> {
  const out: Record<number, number> = {};
  for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
    const m = /^\s*(\d+)\s*=\s*(\d+)\s*$/.exec(String(item));
    if (!m) throw new UserError(`--wrong-action takes ASKED=ANSWERED action ids like "100=101", not "${String(item)}".`);
    out[Number(m[1])] = Number(m[2]);
  }
  return out;
}

function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

export async function run(opts: Record<string, unknown>, _globals: GlobalOptions, _args: string[]): Promise<number> {
  const seed = typeof opts.seed === 'string' ? opts.seed : undefined;
  const data = typeof opts.data === 'string' ? opts.data : undefined;
  if (!seed && !(data && existsSync(data))) {
    throw new UserError('the emulator needs --seed FILE (a YAML or JSON seed), or --data FILE naming an existing state file.');
  }
  const emulator = await startEmulator({
    // With an existing --data file the seed is not read, so a missing --seed is fine then.
    seed: seed ?? { tenants: {} },
    host: typeof opts.host === 'string' ? opts.host : '127.0.0.1',
    port: Number(opts.port ?? 8080),
    dataFile: data,
    pageSize: Number(opts.pageSize ?? 0),
    absoluteNext: opts.absoluteNext === true,
    faults: faultsFrom(opts),
    ...(typeof opts.triggerAfter === 'number' ? { phaseClock: { triggerAfterMs: opts.triggerAfter } } : {}),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  // Ready for a signal before saying so: a supervisor (or a test) that stops the emulator as
  // soon as it reads the line must find it closing cleanly, its state written.
  const stopped = waitForSignal();
  process.stdout.write(`listening on ${emulator.url}\n`);
  const signal = await stopped;
  process.stderr.write(`${signal}: closing\n`);
  await emulator.close();
  return 0;
}
