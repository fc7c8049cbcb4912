// A known key must appear in no thrown error: not in its message, stack, JSON or inspect form,
// whatever the server echoes back and whatever the transport throws.
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import type { MockAgent } from 'undici';
import type { Logger } from '../../src/model/index.js';
import { BASE, KEY, clientFor, mockAgent } from './helpers.js';

let agent: MockAgent;
afterEach(async () => {
  await agent.close();
});

function assertNoKey(err: unknown): void {
  expect(err).toBeInstanceOf(Error);
  const e = err as Error;
  for (const text of [e.message, e.stack ?? '', JSON.stringify(e), JSON.stringify((e as { details?: unknown }).details ?? null), inspect(e, { depth: 10, showHidden: true }), String(e)]) {
    expect(text).not.toContain(KEY);
  }
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('key redaction', () => {
  it('a 401 body that echoes the key', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/actions/1', method: 'GET' }).reply(401, { detail: `Invalid API key ${KEY}.` });
    const { client } = clientFor(agent);
    const err = await caught(client.tenant('acme').getAction(1));
    assertNoKey(err);
    expect((err as Error).message).toBe('the API key for tenant acme was refused (401): Invalid API key [REDACTED].');
  });

  it('a 400 field map that echoes the key', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/firmwares/1', method: 'PUT' }).reply(400, { [KEY]: [`bad ${KEY}`] });
    const { client } = clientFor(agent);
    assertNoKey(await caught(client.tenant('acme').putFirmware('1', { is_deactivated: true, uncompressed_size: 1, dependencies: [] })));
  });

  it('a transport error whose message and properties hold the key', async () => {
    agent = mockAgent();
    const leaky = Object.assign(new Error(`socket hang up while sending x-service-api-key: ${KEY}`), {
      code: 'ECONNRESET',
      headers: { 'x-service-api-key': KEY },
    });
    agent.get(BASE).intercept({ path: '/api/v1/actions/1/append_phase', method: 'POST' }).replyWithError(leaky);
    const lines: string[] = [];
    const log: Logger = {
      debug: (m, f) => lines.push(m + JSON.stringify(f ?? {})),
      info: (m) => lines.push(m),
      warn: (m) => lines.push(m),
      error: (m) => lines.push(m),
    };
    const { client } = clientFor(agent, { log });
    const err = await caught(client.tenant('acme').appendPhase(1, { name: 'p', trigger_on: {}, info: {} }));
    assertNoKey(err);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).not.toContain(KEY);
  });

  it('a malformed body that holds the key', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/firmware-bundles', method: 'GET' }).reply(200, { results: [], next: `https://evil.test/?k=${KEY}` });
    const { client } = clientFor(agent);
    assertNoKey(await caught(client.tenant('acme').listBundles()));
  });

  it('retries exhausted on network errors', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/actions/1', method: 'GET' })
      .replyWithError(Object.assign(new Error(`refused ${KEY}`), { code: 'ECONNREFUSED' })).times(3);
    const { client } = clientFor(agent, { maxRetries: 2 });
    const err = await caught(client.tenant('acme').getAction(1));
    assertNoKey(err);
    expect((err as Error).message).toBe('could not complete GET /api/v1/actions/1 for tenant acme at dus.test: the connection was refused (ECONNREFUSED, 3 tries)');
  });
});
