// Progress while plan and apply read the live state, on standard error only (standard output
// carries the result, in every format). A silent server used to mean minutes of nothing.
//
// On a terminal: one live line, redrawn a few times a second and erased at the end. Otherwise (CI
// logs): one line at the start, then at most one line a minute. It counts events the API client
// reports (a try sent, an answer, a bundle page): a few integers per request, nothing per record.
import type { PageEvent, RequestEvent, RequestStart } from '../api/client.js';
import type { DesiredState } from '../model/index.js';
import { safeText } from '../core/render/ansi.js';

export interface ProgressHooks {
  readonly onRequestStart: (e: RequestStart) => void;
  readonly onRequest: (e: RequestEvent) => void;
  readonly onPage: (e: PageEvent) => void;
}

export interface LiveProgress {
  /** For connect(): the client reports to these. */
  readonly hooks: ProgressHooks;
  /** Runs `work` (the reads of the live state) with progress shown, and clears it after. */
  during<T>(work: () => Promise<T>): Promise<T>;
}

export interface ProgressOptions {
  readonly stream?: NodeJS.WriteStream;
  readonly now?: () => number;
  /** Between two lines when stderr is not a terminal (default 1 minute). */
  readonly intervalMs?: number;
  /** Between two redraws of the live line on a terminal (default 250 ms). */
  readonly redrawMs?: number;
}

const MINUTE = 60_000;
const ACTION_ROUTE = 'GET /actions/{id}';

/**
 * The line interval when stderr is not a terminal. DUS_SYNC_PROGRESS_INTERVAL_MS exists for the
 * tests only (a minute is too long to wait for in a test); it is not documented for users.
 */
function lineInterval(env: NodeJS.ProcessEnv = process.env): number {
  const ms = Number(env.DUS_SYNC_PROGRESS_INTERVAL_MS);
  return Number.isInteger(ms) && ms >= 10 ? ms : MINUTE;
}

/** "12s", "3m05s". */
export function formatElapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

export function liveProgress(desired: DesiredState, opts: ProgressOptions = {}): LiveProgress {
  const stream = opts.stream ?? process.stderr;
  const now = opts.now ?? Date.now;
  const tty = stream.isTTY === true;
  // Loops, not spreads and maps: 200,000 declared firmwares made two arrays of them (0.5 s of plan).
  const listing = new Set<string>();
  for (const f of desired.firmwares) listing.add(f.tenant);
  const all = new Set(listing);
  for (const a of desired.actions) all.add(a.tenant);
  const tenants = [...all].sort();
  const actionsWanted = desired.actions.length;

  let running = false;
  let started = 0;
  let inFlight = 0;
  let retries = 0;
  let actionsRead = 0;
  const pages = new Map<string, { read: number; total?: number }>();

  const hooks: ProgressHooks = {
    onRequestStart: (e) => {
      if (!running) return;
      inFlight += 1;
      if (e.attempt > 0) retries += 1;
    },
    onRequest: (e) => {
      if (!running) return;
      inFlight = Math.max(0, inFlight - 1);
      // An answer that settles the read (not one that will be retried).
      if (e.route === ACTION_ROUTE && typeof e.status === 'number' && e.status < 500 && e.status !== 429) actionsRead += 1;
    },
    onPage: (e) => {
      if (!running) return;
      pages.set(e.tenant, { read: e.read, ...(e.total === undefined ? {} : { total: e.total }) });
    },
  };

  const what = `reading the live state of ${tenants.length === 1 ? 'tenant' : 'tenants'} ${tenants.join(', ')}`;

  const status = (): string => {
    const parts: string[] = [];
    if (listing.size > 0) {
      let read = 0;
      let total = 0;
      let known = true;
      for (const t of listing) {
        const p = pages.get(t);
        read += p?.read ?? 0;
        if (p?.total === undefined) known = false;
        else total += p.total;
      }
      parts.push(known ? `${read} of ${plural(total, 'page', 'pages')}` : plural(read, 'page', 'pages'));
    }
    if (actionsWanted > 0) parts.push(`${actionsRead} of ${plural(actionsWanted, 'action', 'actions')}`);
    parts.push(`${plural(inFlight, 'request', 'requests')} in flight`, plural(retries, 'retry', 'retries'), formatElapsed(now() - started));
    return parts.join(', ');
  };

  const write = (text: string) => { stream.write(safeText(text)); };

  return {
    hooks,
    async during<T>(work: () => Promise<T>): Promise<T> {
      running = true;
      started = now();
      let timer: NodeJS.Timeout;
      if (tty) {
        // Cut to the terminal's width: a wrapped line could not be redrawn in place.
        const fit = (text: string) => (stream.columns > 1 && text.length >= stream.columns ? `${text.slice(0, stream.columns - 2)}…` : text);
        const draw = () => { stream.write(`\r\x1b[K${fit(safeText(`${what}… ${status()}`))}`); };
        draw();
        timer = setInterval(draw, opts.redrawMs ?? 250);
      } else {
        write(`${what}…`);
        stream.write('\n');
        timer = setInterval(() => { write(`still ${what}: ${status()}`); stream.write('\n'); }, opts.intervalMs ?? lineInterval());
      }
      // Progress never keeps the process alive on its own.
      timer.unref();
      try {
        return await work();
      } finally {
        clearInterval(timer);
        running = false;
        if (tty) stream.write('\r\x1b[K');
      }
    },
  };
}
