// An answer refused for its size is destroyed unread; undici then emits an AbortError on the
// body on the next tick. With nobody listening, that was an uncaught exception: plan, reading
// ahead while it loaded the files, ended with "error: Request aborted" instead of the sentence
// naming the request and --max-response-size (and printed no JSON error with --format json).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.js';

let server: Server | undefined;
afterEach(async () => { await new Promise<void>((r) => (server ? server.close(() => r()) : r())); server = undefined; });

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

describe('an answer refused for its size', () => {
  for (const [name, headers] of [['announced by Content-Length', true], ['found while reading', false]] as const) {
    it(`${name}: one error naming the request, and no uncaught exception after it`, async () => {
      const body = JSON.stringify({ count: 1, next: null, results: [{ version: 'b', firmwares: [{ version_number: '1', component_name: 'x'.repeat(20_000) }] }] });
      const url = await serve((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', ...(headers ? { 'content-length': String(Buffer.byteLength(body)) } : {}) });
        if (headers) res.end(body);
        else { res.write(body.slice(0, 9000)); setTimeout(() => res.end(body.slice(9000)), 20); }
      });
      const uncaught: unknown[] = [];
      const onUncaught = (e: unknown) => { uncaught.push(e); };
      process.on('uncaughtException', onUncaught);
      try {
        const client = createApiClient({ baseUrl: url, keys: new Map([['acme', 'k-0123456789abcdef']]), maxResponseBytes: 4096 });
        const read = (async () => { for await (const _ of client.tenant('acme').bundlePages()) { /* one page */ } })();
        await expect(read).rejects.toThrow(/GET \/api\/v1\/firmware-bundles .*larger than 4 KiB.*--max-response-size/);
        await sleep(50);
        await client.close();
      } finally {
        process.off('uncaughtException', onUncaught);
      }
      expect(uncaught).toEqual([]);
    });
  }
});
