// Shared fixtures of the client tests: a MockAgent with no network, a clock that never sleeps.
import { MockAgent } from 'undici';
import { createApiClient, type ApiClient, type CreateApiClientOptions, type RequestEvent } from '../../src/api/client.js';
import type { Clock } from '../../src/model/index.js';

export const BASE = 'https://dus.test';
export const KEY = 'sk-test-acme-0123456789abcdef';

export interface FakeClock extends Clock {
  readonly sleeps: number[];
}

/** Time moves only when the client sleeps, so retry tests take no wall-clock time. */
export function fakeClock(start = Date.parse('2026-01-01T00:00:00Z')): FakeClock {
  let now = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
  };
}

export function mockAgent(): MockAgent {
  const agent = new MockAgent();
  agent.disableNetConnect();
  return agent;
}

export function clientFor(agent: MockAgent, overrides: Partial<CreateApiClientOptions> = {}): { client: ApiClient; clock: FakeClock; events: RequestEvent[] } {
  const clock = fakeClock();
  const events: RequestEvent[] = [];
  const client = createApiClient({
    baseUrl: BASE,
    keys: new Map([['acme', KEY]]),
    dispatcher: agent,
    clock,
    random: () => 0.5,
    onRequest: (e) => events.push(e),
    ...overrides,
  });
  return { client, clock, events };
}

export function bundle(version: string, firmwares: Array<Record<string, unknown>>): Record<string, unknown> {
  return { version, firmwares };
}

export function firmware(version_number: string, component_name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { version_number, component_name, is_deactivated: false, uncompressed_size: 1000, dependencies: [], ...extra };
}

export const ACTION = { id: 42, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] };

export const JSON_HEADERS = { headers: { 'content-type': 'application/json' } };
