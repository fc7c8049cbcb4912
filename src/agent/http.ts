// The agent's small HTTP server: /healthz (liveness), /readyz (readiness), /metrics (Prometheus)
// and, when given one, a read-only status page at / (src/agent/status-page.ts).
// Every body leaves through send(), which redacts it: the readiness reason quotes the last
// pass's message (a server's words), and metrics labels carry names from the config.
import { clip } from '../core/canonical.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { safeText } from '../core/render/ansi.js';
import { UserError } from '../errors.js';
import { redact, secretsGeneration } from '../redact.js';
import { PAGE_HEADERS } from './status-page.js';

export interface ListenAddress {
  /** undefined: every interface (Node's default, dual-stack where available). */
  readonly host: string | undefined;
  readonly port: number;
}

/** Parses "0.0.0.0:9090", ":9090", "127.0.0.1:0", "[::1]:9090", "localhost:9090". */
export function parseListen(text: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]*)):(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || !Number.isInteger(port) || port > 65535) {
    throw new UserError(`--listen takes HOST:PORT (e.g. 0.0.0.0:9090, :9090 or [::1]:9090), not "${text}"`);
  }
  const host = m[1] ?? (m[2] === '' ? undefined : m[2]);
  return { host, port };
}

export interface Readiness {
  readonly ready: boolean;
  readonly reason?: string;
}

export interface ReadinessInput {
  readonly lastSuccessAt?: number;
  /** The last pass's outcome and message, to say why the agent is not ready. */
  readonly lastResult?: { readonly result: string; readonly message: string };
}

/** Ready once a pass succeeded and the last success is younger than three intervals. */
export function readinessOf(state: ReadinessInput, intervalMs: number, now: number): Readiness {
  const last = state.lastResult ? ` (last pass: ${state.lastResult.result}: ${clip(state.lastResult.message, 500)})` : '';
  if (state.lastSuccessAt === undefined) {
    return { ready: false, reason: `no reconcile pass has succeeded yet${last}` };
  }
  const age = now - state.lastSuccessAt;
  if (age > 3 * intervalMs) {
    return {
      ready: false,
      reason: `the last successful pass was ${Math.round(age / 1000)} s ago, more than three intervals (${Math.round((3 * intervalMs) / 1000)} s)${last}`,
    };
  }
  return { ready: true };
}

export interface MetricsSource {
  readonly contentType: string;
  text(): Promise<string>;
}

export interface HttpOptions {
  readonly listen: string | ListenAddress;
  readonly metrics: MetricsSource;
  readonly readiness: () => Readiness;
  /** The status page's HTML, rendered from memory (it must not call the API). */
  readonly page?: () => string;
}

export interface AgentHttp {
  /** http://HOST:PORT with the port actually bound (useful with port 0). */
  readonly url: string;
  close(): Promise<void>;
}

export async function startHttp(opts: HttpOptions): Promise<AgentHttp> {
  const addr = typeof opts.listen === 'string' ? parseListen(opts.listen) : opts.listen;
  const server = createServer((req, res) => { void handle(req, res, opts); });
  // Probes and scrapes are tiny; a client that holds a socket open must not block shutdown.
  server.keepAliveTimeout = 5000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((done, fail) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      fail(new UserError(`cannot listen on ${describe(addr)}: ${err.code === 'EADDRINUSE' ? 'the address is in use' : err.message}`));
    });
    server.listen(addr.port, addr.host, () => done());
  });
  const bound = server.address() as AddressInfo;
  const host = addr.host ?? '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound.port}`;
  return {
    url,
    close: () => new Promise<void>((done) => {
      server.close(() => done());
      server.closeAllConnections();
    }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, opts: HttpOptions): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { allow: 'GET, HEAD' });
    return;
  }
  try {
    switch (path) {
      case '/healthz':
        send(res, 200, 'text/plain; charset=utf-8', 'ok\n');
        return;
      case '/readyz': {
        const r = opts.readiness();
        if (r.ready) send(res, 200, 'text/plain; charset=utf-8', 'ok\n');
        // One line, control characters escaped: probes end up in terminals and logs too.
        else send(res, 503, 'application/json', `${JSON.stringify({ ready: false, reason: safeText(r.reason ?? 'not ready') })}\n`);
        return;
      }
      case '/metrics':
        send(res, 200, opts.metrics.contentType, await opts.metrics.text());
        return;
      case '/':
        if (opts.page) {
          send(res, 200, 'text/html; charset=utf-8', opts.page(), PAGE_HEADERS);
          return;
        }
        send(res, 404, 'text/plain; charset=utf-8', 'not found: try /healthz, /readyz or /metrics\n');
        return;
      default:
        send(res, 404, 'text/plain; charset=utf-8', `not found: try ${opts.page ? '/, ' : ''}/healthz, /readyz or /metrics\n`);
    }
  } catch (err) {
    send(res, 500, 'text/plain; charset=utf-8', `${safeText(err instanceof Error ? err.message : String(err))}\n`);
  }
}

/**
 * The last body redacted, while no key has been added since: the status page hands the same
 * string to every reload within a second, and redacting a large page takes tens of milliseconds.
 */
let lastRedacted: { readonly text: string; readonly generation: number; readonly body: string } | undefined;

function redactBody(text: string): string {
  const generation = secretsGeneration();
  if (lastRedacted && lastRedacted.text === text && lastRedacted.generation === generation) return lastRedacted.body;
  const body = redact(text);
  lastRedacted = { text, generation, body };
  return body;
}

function send(res: ServerResponse, status: number, type: string, text: string, headers: Record<string, string> = {}): void {
  const body = redactBody(text);
  res.writeHead(status, {
    'content-type': type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'content-length': Buffer.byteLength(body), ...headers,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

function describe(addr: ListenAddress): string {
  const host = addr.host ?? '';
  return `${host.includes(':') ? `[${host}]` : host}:${addr.port}`;
}
