// Hostile answers: what a compromised or broken server, or an echoing gateway, sends back.
// The client must stay bounded in memory and time against each, and never show a key:
//   huge     the route's answer, still valid JSON, padded to N bytes (with Content-Length)
//   endless  a chunked body that never ends
//   drip     the route's answer, one byte every N ms
//   echo     an error whose detail repeats the request's API key in the encodings a server may use
import type { ServerResponse } from 'node:http';

export type HostileMode = 'huge' | 'endless' | 'drip' | 'echo';
export const HOSTILE_MODES: readonly HostileMode[] = ['huge', 'endless', 'drip', 'echo'];

/** The emulator's routes, as --hostile-route names them. */
export type HostileRoute = 'bundles' | 'bundle' | 'action' | 'firmware' | 'append';
export const HOSTILE_ROUTES: readonly HostileRoute[] = ['bundles', 'bundle', 'action', 'firmware', 'append'];

export interface HostileSettings {
  readonly mode: HostileMode;
  /** Only these routes answer so (default: every route). */
  readonly routes?: readonly HostileRoute[];
  /** huge: bytes of padding (default 200 MiB). */
  readonly bytes?: number;
  /** drip: milliseconds between two bytes (default 1000). */
  readonly intervalMs?: number;
  /**
   * Answer with this status instead of the route's own (echo: default 400). huge with a status
   * of 400 or more sends {"detail": "<padding>"}: a valid error whose message is enormous.
   */
  readonly status?: number;
}

export const DEFAULT_HUGE_BYTES = 200 * 1024 * 1024;
export const DEFAULT_DRIP_MS = 1000;

/** The settings when they apply to this route, else undefined. */
export function hostileFor(settings: HostileSettings | undefined, route: HostileRoute): HostileSettings | undefined {
  if (!settings) return undefined;
  return !settings.routes || settings.routes.length === 0 || settings.routes.includes(route) ? settings : undefined;
}

/**
 * The key as an echoing server may send it back: raw; cut short; JSON-escaped inside a JSON
 * text (`"` and `\` escaped, `/` as `\/` the way PHP and some gateways write it, non-ASCII as
 * \uXXXX); percent-encoded as in a URL; base64 as in a Basic header. For the forms to differ
 * from the raw key, use a key with characters such as `"`, `/`, `+` or `=`.
 */
export function echoForms(key: string): Record<'raw' | 'prefix' | 'json' | 'percent' | 'base64', string> {
  return {
    raw: key,
    // A gateway that truncates a field: two characters short (but never under 8).
    prefix: key.slice(0, Math.max(8, key.length - 2)),
    json: JSON.stringify({ api_key: key }).replace(/\//g, '\\/')
      .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    percent: encodeURIComponent(key),
    base64: Buffer.from(key, 'utf8').toString('base64'),
  };
}

/** The body of an echo answer: a DRF {"detail"} that names the key in every form. */
export function echoBody(key: string): { detail: string } {
  const f = echoForms(key);
  return {
    detail: `The API key ${f.raw} is not accepted here (key prefix ${f.prefix}; request ${f.json}; `
      + `query api_key=${f.percent}; basic ${f.base64}).`,
  };
}

interface Sink {
  readonly res: ServerResponse;
  readonly sleep: (ms: number) => Promise<void>;
}

/**
 * Sends `body` (the route's answer) the hostile way; resolves when the answer is done or the
 * client went away. echo is not a way of sending (its answer replaces the route's), so it
 * sends the body as it is.
 */
export async function sendHostile(sink: Sink, h: HostileSettings, status: number, body: unknown, headers: Record<string, string> = {}): Promise<void> {
  const { res } = sink;
  if (res.destroyed || res.headersSent) return;
  const code = h.status ?? status;
  switch (h.mode) {
    case 'echo': {
      const text = JSON.stringify(body);
      res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
      res.end(text);
      return;
    }
    case 'huge': {
      const { head, tail } = padded(code, body);
      const bytes = h.bytes ?? DEFAULT_HUGE_BYTES;
      res.writeHead(code, { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(head) + bytes + Buffer.byteLength(tail)) });
      res.write(head);
      if (await pad(res, bytes)) res.end(tail);
      return;
    }
    case 'endless': {
      res.writeHead(code, { ...headers, 'content-type': 'application/json' });
      res.write(padded(code, body).head);
      await pad(res, Infinity);
      return;
    }
    case 'drip': {
      const text = Buffer.from(JSON.stringify(body ?? {}));
      res.writeHead(code, { ...headers, 'content-type': 'application/json', 'content-length': String(text.length) });
      res.flushHeaders();
      for (let i = 0; i < text.length; i++) {
        await sink.sleep(h.intervalMs ?? DEFAULT_DRIP_MS);
        if (res.destroyed) return;
        res.write(text.subarray(i, i + 1));
      }
      res.end();
      return;
    }
  }
}

/**
 * The answer split around a padding string: an error status pads its detail, a success adds a
 * "padding" field first (unknown fields are allowed), so the whole stays valid JSON.
 */
function padded(status: number, body: unknown): { head: string; tail: string } {
  if (status >= 400) return { head: '{"detail":"', tail: '"}' };
  const text = JSON.stringify(body ?? {});
  if (!text.startsWith('{')) return { head: '{"padding":"', tail: '"}' };
  return { head: '{"padding":"', tail: text === '{}' ? '"}' : `",${text.slice(1)}` };
}

const PAD_CHUNK = Buffer.alloc(64 * 1024, 'x');

/** Writes `bytes` of padding with backpressure; false when the client went away first. */
function pad(res: ServerResponse, bytes: number): Promise<boolean> {
  return new Promise((resolve) => {
    let left = bytes;
    const onClose = () => resolve(false);
    res.once('close', onClose);
    const pump = () => {
      while (left > 0) {
        if (res.destroyed) return;
        const chunk = left >= PAD_CHUNK.length ? PAD_CHUNK : PAD_CHUNK.subarray(0, left);
        left -= chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      res.off('close', onClose);
      resolve(true);
    };
    pump();
  });
}
