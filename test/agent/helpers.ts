// Test doubles for the agent: a fake clock for the loop and a scriptable reconcile pass.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { dirname, join } from 'node:path';
import { afterEach } from 'vitest';
import type { PassResult, PassTrigger, Timers } from '../../src/agent/types.js';
import type { Logger } from '../../src/model/index.js';

export const flush = async (rounds = 5): Promise<void> => {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
};

/** Timers that move only when the test says so. */
export class FakeTimers implements Timers {
  private t = 1_700_000_000_000;
  private seq = 0;
  private readonly queue = new Map<number, { at: number; fn: () => void }>();
  readonly scheduled: number[] = [];

  now(): number { return this.t; }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.queue.set(id, { at: this.t + ms, fn });
    this.scheduled.push(ms);
    return id;
  }
  clearTimeout(handle: unknown): void { this.queue.delete(handle as number); }

  /** Runs every timer due within `ms`, in order, letting promises settle in between. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await flush();
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.queue) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.queue.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
    }
    this.t = end;
    await flush();
  }
}

export function result(r: PassResult['result'], extra: Partial<PassResult> = {}): PassResult {
  return {
    result: r,
    message: `pass ${r}`,
    drift: new Map(),
    conflicts: new Map(),
    applied: [],
    configValid: r !== 'invalid-config',
    ...extra,
  };
}

export interface Deferred<T> { promise: Promise<T>; resolve(v: T): void }
export function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => { resolve = r; });
  return { promise, resolve };
}

/** A pass that records its triggers and answers from a script (default: success at once). */
export class FakePass {
  readonly triggers: PassTrigger[] = [];
  readonly signals: AbortSignal[] = [];
  inFlight = 0;
  maxInFlight = 0;
  next: (() => Promise<PassResult>) | undefined;
  outcomes: PassResult['result'][] = [];

  readonly run = async (trigger: PassTrigger, signal: AbortSignal): Promise<PassResult> => {
    this.triggers.push(trigger);
    this.signals.push(signal);
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.next) return await this.next();
      return result(this.outcomes.shift() ?? 'success');
    } finally {
      this.inFlight -= 1;
    }
  };
}

export interface Line { level: string; msg: string; fields?: Record<string, unknown> }
export function memoryLogger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => { lines.push({ level, msg, fields }); };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export async function waitFor(cond: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** What an end-to-end agent test starts: the emulator, the agent process, its folder. */
export interface AgentRun {
  emulator?: RunningEmulator;
  child?: ChildProcess;
  dir?: string;
}

/** An AgentRun whose agent is killed, emulator closed and folder removed after each test. */
export function agentRunPerTest(): AgentRun {
  const run: AgentRun = {};
  afterEach(async () => {
    run.child?.kill('SIGKILL');
    await run.emulator?.close();
    if (run.dir) rmSync(run.dir, { recursive: true, force: true });
    run.child = undefined; run.emulator = undefined; run.dir = undefined;
  });
  return run;
}

/** Writes a file below `dir`, making its folders. */
export function writeBelow(dir: string, path: string, text: string): void {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), text);
}
