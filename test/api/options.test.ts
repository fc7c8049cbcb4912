// Client options that fail before any request: CA files, aborts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { MockAgent } from 'undici';
import { createApiClient } from '../../src/api/client.js';
import { UserError } from '../../src/errors.js';
import { ACTION, BASE, clientFor, mockAgent } from './helpers.js';

let agent: MockAgent | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

describe('caFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dus-ca-'));

  it('an unreadable CA file is a UserError naming it', () => {
    const file = join(dir, 'missing.pem');
    expect(() => createApiClient({ baseUrl: BASE, keys: new Map(), caFile: file })).toThrow(UserError);
    expect(() => createApiClient({ baseUrl: BASE, keys: new Map(), caFile: file })).toThrow(`cannot read the CA file ${file} (--ca-file): ENOENT`);
  });

  it('a CA file that is not a regular file is one sentence at once, not an endless read or a wait (/dev/zero, a FIFO, a folder)', () => {
    const fifo = join(dir, 'ca.fifo');
    execFileSync('mkfifo', [fifo]);
    for (const [file, kind] of [['/dev/zero', 'a character device'], [fifo, 'a named pipe (FIFO)'], [dir, 'a folder']] as const) {
      expect(() => createApiClient({ baseUrl: BASE, keys: new Map(), caFile: file })).toThrow(`the CA file ${file} (--ca-file) is ${kind}, not a regular file: name a PEM file of CA certificates`);
    }
  });

  it('a CA file larger than any CA bundle (16 MiB) is refused before it is read', () => {
    const file = join(dir, 'huge.pem');
    writeFileSync(file, '');
    truncateSync(file, 17 * 1024 * 1024);
    expect(() => createApiClient({ baseUrl: BASE, keys: new Map(), caFile: file })).toThrow(`the CA file ${file} (--ca-file) is 17 MiB, larger than the 16 MiB a CA bundle could be`);
  });

  it('a CA file without a PEM certificate is a UserError', () => {
    const file = join(dir, 'not.pem');
    writeFileSync(file, 'hello');
    expect(() => createApiClient({ baseUrl: BASE, keys: new Map(), caFile: file })).toThrow(/holds no PEM certificate/);
  });
});

describe('abort', () => {
  it('an aborted signal stops the request with the caller\'s reason', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/actions/1', method: 'GET' }).reply(200, ACTION).delay(1000);
    const { client } = clientFor(agent);
    const ac = new AbortController();
    const pending = client.tenant('acme').getAction(1, ac.signal);
    ac.abort(new Error('stopped by the user'));
    await expect(pending).rejects.toThrow('stopped by the user');
  });

  it('an abort during a retry wait stops the wait', async () => {
    agent = mockAgent();
    agent.get(BASE).intercept({ path: '/api/v1/actions/1', method: 'GET' }).reply(503, '');
    const ac = new AbortController();
    const { client } = clientFor(agent, {
      clock: {
        now: () => 0,
        sleep: async () => {
          ac.abort(new Error('shutting down'));
          throw ac.signal.reason as Error;
        },
      },
    });
    await expect(client.tenant('acme').getAction(1, ac.signal)).rejects.toThrow('shutting down');
  });
});
