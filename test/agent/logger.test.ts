import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/agent/logger.js';
import { clearSecretsForTests, registerSecret } from '../../src/redact.js';

const KEY = 'dev-key-acme-7f3a9c2e';

function sink(isTTY?: boolean) {
  const chunks: string[] = [];
  const stream = new Writable({ write(chunk: Buffer, _enc, done) { chunks.push(chunk.toString()); done(); } }) as Writable & { isTTY?: boolean };
  if (isTTY !== undefined) stream.isTTY = isTTY;
  return { stream, text: () => chunks.join('') };
}

afterEach(() => clearSecretsForTests());

describe('the agent logger', () => {
  it('writes one JSON object per line when the stream is not a TTY', () => {
    const out = sink();
    const log = createLogger({ stream: out.stream });
    log.info('reconcile success: in sync', { trigger: 'interval', drift: 0 });
    log.warn('no fields');
    log.debug('hidden without --debug');
    const lines = out.text().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: 'info', msg: 'reconcile success: in sync', trigger: 'interval', drift: 0 });
    expect(typeof lines[0]!.time).toBe('string');
    expect(lines[1]).toMatchObject({ level: 'warn', msg: 'no fields' });
  });

  it('logs debug lines with --debug', () => {
    const out = sink();
    createLogger({ stream: out.stream, debug: true }).debug('file change: a.yaml');
    expect(JSON.parse(out.text())).toMatchObject({ level: 'debug', msg: 'file change: a.yaml' });
  });

  it('never writes a registered key: not in messages, fields, errors, child bindings or headers', () => {
    registerSecret(KEY);
    const out = sink();
    const log = createLogger({ stream: out.stream, debug: true });
    log.error(`request failed with key ${KEY}`, { err: new Error(`401 for ${KEY}`), nested: { note: KEY } });
    log.pino.child({ bound: KEY }).info('child');
    log.info('request', { headers: { 'x-service-api-key': 'not-registered-but-a-header' } });
    const text = out.text();
    expect(text).not.toContain(KEY);
    expect(text).not.toContain('not-registered-but-a-header');
    expect(text).toContain('[REDACTED]');
    const first = JSON.parse(text.split('\n')[0]!) as { err: { message: string; type: string } };
    expect(first.err).toMatchObject({ type: 'Error', message: '401 for [REDACTED]' });
  });

  it('writes readable lines on a TTY (synchronously, without a worker), still redacted', () => {
    registerSecret(KEY);
    const out = sink(true);
    const log = createLogger({ stream: out.stream, color: false });
    log.info(`applied with ${KEY}`, { tenant: 'acme' });
    const text = out.text();
    expect(text).toMatch(/INFO.*applied with \[REDACTED\]/);
    expect(text).toContain('tenant: "acme"');
    expect(() => JSON.parse(text)).toThrow();
    expect(text).not.toContain(KEY);
  });
});
