// Each output edge on its own: the stdout/stderr guard, the agent's logger (JSON and readable),
// the agent's HTTP bodies, and the renderers that print names from YAML and servers.
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/agent/logger.js';
import { startHttp, type AgentHttp } from '../../src/agent/http.js';
import { guardStream, guardText } from '../../src/cli/output.js';
import { diffDesired } from '../../src/core/desired-diff.js';
import { safeLines, safeText } from '../../src/core/render/ansi.js';
import { mdCode, renderDiffMarkdown } from '../../src/core/render/desired-diff-markdown.js';
import { renderDiffText } from '../../src/core/render/desired-diff-text.js';
import { renderStatusText } from '../../src/core/render/status.js';
import { clearSecretsForTests, registerSecret } from '../../src/redact.js';
import { action, fw, phase, state } from '../diff/builders.js';

const KEY = 'chan-KEY-0a1b2c3d4e5f';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const EVIL = 'a\u001b[2Jb\u0007c\r\n::error::d\u202ee\u2066f\u009bg\u0085h\u2028i';
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

afterEach(() => clearSecretsForTests());

describe('safeText', () => {
  it('escapes C0, DEL, C1, bidi controls and line separators visibly, and keeps the rest', () => {
    expect(safeText(EVIL)).toBe('a\\u001b[2Jb\\u0007c\\r\\n::error::d\\u202ee\\u2066f\\u009bg\\u0085h\\u2028i');
    expect(safeText('plain ü → ✓ "q" \\ 100%')).toBe('plain ü → ✓ "q" \\ 100%');
    expect(safeLines('one\ntwo\u001b')).toBe('one\ntwo\\u001b');
  });
});

describe('the stdout/stderr guard', () => {
  it('redacts, escapes stray controls, and keeps colours, the progress line and readline moves', () => {
    registerSecret(KEY);
    expect(guardText(`\u001b[1mbold\u001b[22m ${KEY.slice(0, 9)} ${b64(KEY)}\n`, true)).toBe('\u001b[1mbold\u001b[22m [REDACTED] [REDACTED]\n');
    expect(guardText('\r\u001b[K[1/2] 0 failed', true)).toBe('\r\u001b[K[1/2] 0 failed');
    expect(guardText('\u001b[1G\u001b[0JApply? \u001b[8G', true)).toBe('\u001b[1G\u001b[0JApply? \u001b[8G');
    expect(guardText('x\u001b]0;title\u0007\u001b[2J\ry\u202e\n', true)).toBe('x\\u001b]0;title\\u0007\\u001b[2J\\ry\\u202e\n');
  });

  it('defuses lines that a CI runner reads as workflow commands, at any line start, after blanks', () => {
    expect(guardText('::error::x\n  ::warning::y\nok ::not-at-start\n', true)).toBe('\\u003a:error::x\n  \\u003a:warning::y\nok ::not-at-start\n');
    expect(guardText('::continued', false)).toBe('::continued');
    expect(guardText('::starts', true)).toBe('\\u003a:starts');
    expect(guardText('a ##[error]b ##vso[task.setvariable]c\n', true)).toBe('a \\u0023#[error]b \\u0023#vso[task.setvariable]c\n');
  });

  it('wraps a stream: strings and buffers, with or without an encoding and a callback; line starts tracked across writes', async () => {
    registerSecret(KEY);
    const chunks: string[] = [];
    const stream = new Writable({ write(chunk: Buffer, _enc, done) { chunks.push(chunk.toString()); done(); } }) as unknown as NodeJS.WriteStream;
    guardStream(stream);
    guardStream(stream);
    let called = false;
    stream.write(`key ${KEY}\n`);
    stream.write(Buffer.from(`::error::${KEY.slice(3)}`), () => { called = true; });
    stream.write('::more\n', 'utf8');
    stream.write('::x\n');
    await new Promise((r) => setImmediate(r));
    expect(chunks.join('')).toBe('key [REDACTED]\n\\u003a:error::[REDACTED]::more\n\\u003a:x\n');
    expect(called).toBe(true);
  });
});

describe('the agent logger', () => {
  function sink(isTTY: boolean) {
    const chunks: string[] = [];
    const stream = new Writable({ write(chunk: Buffer, _enc, done) { chunks.push(chunk.toString()); done(); } }) as Writable & { isTTY?: boolean };
    stream.isTTY = isTTY;
    return { stream, text: () => chunks.join('') };
  }

  it('JSON lines: controls escaped in messages, fields and errors; keys cut short or encoded redacted', () => {
    registerSecret(KEY);
    const out = sink(false);
    const log = createLogger({ stream: out.stream, debug: true });
    log.warn(`detail ${EVIL} ${KEY.slice(0, 10)}`, { detail: EVIL, nested: { list: [EVIL, b64(KEY)] }, err: new Error(`e ${EVIL}`) });
    const text = out.text();
    expect(RAW.exec(text)).toBeNull();
    expect(text).not.toContain(KEY.slice(0, 8));
    expect(text).not.toContain(b64(KEY).slice(0, 8));
    const line = JSON.parse(text) as { msg: string; detail: string; nested: { list: string[] }; err: { message: string } };
    expect(line.msg).toBe(`detail ${safeText(EVIL)} [REDACTED]`);
    expect(line.detail).toBe(safeText(EVIL));
    expect(line.nested.list).toEqual([safeText(EVIL), '[REDACTED]']);
    expect(line.err.message).toBe(`e ${safeText(EVIL)}`);
  });

  it('readable lines on a terminal: no control character from a message reaches it', () => {
    const out = sink(true);
    createLogger({ stream: out.stream, color: false }).info(`phase ${EVIL}`, { name: EVIL });
    const text = out.text();
    expect(RAW.exec(text)).toBeNull();
    expect(text.trim().split('\n').filter((l) => /^\s*::/.test(l))).toEqual([]);
  });
});

describe('the agent HTTP server', () => {
  let http: AgentHttp | undefined;
  afterEach(async () => { await http?.close(); http = undefined; });

  it('/readyz and /metrics bodies are redacted; the reason is one line', async () => {
    registerSecret(KEY);
    http = await startHttp({
      listen: '127.0.0.1:0',
      metrics: { contentType: 'text/plain', text: async () => `dus_sync_drift_objects{tenant="${KEY}"} 1\n` },
      readiness: () => ({ ready: false, reason: `last pass: ${EVIL} ${KEY.slice(2, 14)} ${encodeURIComponent(b64(KEY))}` }),
    });
    const ready = await fetch(`${http.url}/readyz`);
    const body = await ready.text();
    expect(ready.status).toBe(503);
    expect(body).not.toMatch(/chan-KEY|-KEY-0a1b|Y2hhbi1LRVkt/);
    expect(RAW.exec(body)).toBeNull();
    expect((JSON.parse(body) as { reason: string }).reason).toBe(`last pass: ${safeText(EVIL)} [REDACTED] [REDACTED]`);
    const metrics = await (await fetch(`${http.url}/metrics`)).text();
    expect(metrics).toBe('dus_sync_drift_objects{tenant="[REDACTED]"} 1\n');
  });
});

describe('renderers of names from YAML files and servers', () => {
  it('status: a live phase name cannot rewrite the screen or start a line', () => {
    const text = renderStatusText([{ tenant: 'acme', id: 1, declaredPhases: 1,
      live: { id: 1, status: EVIL, phases: [{ name: EVIL, trigger_on: { x: '\u202e' }, info: {} }] } as never }], { color: false });
    expect(RAW.exec(text)).toBeNull();
    expect(text).not.toMatch(/^\s*::/m);
    expect(text).toContain(safeText(EVIL));
  });

  it('diff text and markdown: names from a pull request are escaped', () => {
    const head = state(fw('1.0', { component_name: EVIL, dependencies: [{ component_name: EVIL, min_version: '1' }] }), action(3, [phase(EVIL, { k: EVIL })]));
    const diff = diffDesired(state(), head);
    const text = renderDiffText(diff, { base: `main${EVIL}` });
    expect(RAW.exec(text)).toBeNull();
    expect(text).not.toMatch(/^\s*::/m);
    const md = renderDiffMarkdown(diff, { base: 'main' });
    expect(RAW.exec(md)).toBeNull();
    expect(md).not.toMatch(/^\s*::/m);
  });

  it('mdCode: no run of backticks in the value can close the span early', () => {
    expect(mdCode('a``b')).toBe('``` a``b ```');
    expect(mdCode('x ` y ``` z')).toBe('```` x ` y ``` z ````');
    expect(mdCode('plain')).toBe('`plain`');
  });
});
