// Shared by the reliability suites: seeded scenarios (an emulator seed plus the desired-state
// YAML that changes part of it), a CLI runner that exposes the child for SIGKILL, and the
// checks every suite ends with: converged, no phase twice, unmanaged fields untouched.
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { expect } from 'vitest';
import { mulberry32, type RunningEmulator, type Seed, type SeedAction, type SeedFirmware } from '../../src/emulator/index.js';
import { CLI, runCli, writeTree, type RunResult } from '../e2e/helpers.js';

export { CLI, runCli, writeTree, type RunResult };

export const TENANT = 'acme';

export interface Scenario {
  readonly seed: Seed;
  /** path → text of the repository: dus-sync.yaml and the desired-state files. */
  readonly files: Record<string, string>;
  /** The exact phase names each action must end with. */
  readonly phases: ReadonlyMap<number, readonly string[]>;
  /** The exact firmware records (every field) the store must end with, by version number. */
  readonly firmwares: ReadonlyMap<string, Record<string, unknown>>;
  /** How many changes the first plan holds. */
  readonly changes: number;
}

export interface ScenarioSize {
  readonly firmwares: number;
  readonly actions: number;
  /** Phases already live on each action. */
  readonly livePhases: number;
  /** Phases to append to each action. */
  readonly newPhases: number;
}

const CONFIG = (maxChanges: number) => `apiVersion: dus-sync/v1
kind: Config
default_tenant: ${TENANT}
tenants:
  ${TENANT}: { api_key_env: DUS_API_KEY_ACME }
safety: { max_changes: ${maxChanges}, max_deactivations: ${maxChanges} }
`;

function pick<T>(rng: () => number, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)]!;
}

/**
 * A seed of `size.firmwares` firmware records and `size.actions` actions, and desired state that
 * sets one or two of the three managed fields of about half of the firmwares (so the others stay
 * unmanaged) and appends `size.newPhases` phases to every action. Same rng seed, same scenario.
 */
export function scenario(seedNumber: number, size: ScenarioSize, key: string): Scenario {
  const rng = mulberry32(seedNumber * 7919 + 13);
  const components = ['modem', 'wifi', 'bootloader', 'gps', 'radio'];
  const fws: SeedFirmware[] = [];
  for (let i = 0; i < size.firmwares; i++) {
    fws.push({
      version_number: `${1 + (i % 7)}.${Math.floor(i / 7)}.${i}`,
      component_name: components[i % components.length]!,
      uncompressed_size: 1000 + Math.floor(rng() * 100_000),
      is_deactivated: rng() < 0.3,
      dependencies: rng() < 0.5 ? [{ component_name: 'bootloader', min_version: `1.${i % 4}.0` }] : [],
      file_name: `fw-${i}.bin`,
      checksum: `sha256:${(i * 2654435761 >>> 0).toString(16)}`,
    });
  }
  const bundleSize = 4;
  const bundles = [];
  for (let b = 0; b * bundleSize < fws.length; b++) {
    bundles.push({ version: `2024.${String(b + 1).padStart(2, '0')}`, firmwares: fws.slice(b * bundleSize, (b + 1) * bundleSize) });
  }
  const actions: SeedAction[] = [];
  const phases = new Map<number, string[]>();
  const docs: string[] = [];
  let changes = 0;
  for (let a = 0; a < size.actions; a++) {
    const id = 100 + a;
    const live = Array.from({ length: size.livePhases }, (_, p) => ({ name: `a${id}-live-${p}`, trigger_on: { after_minutes: p * 10 }, info: { percent: p + 1 } }));
    actions.push({ id, status: pick(rng, ['pending', 'completed', 'failed']), release_notes: `notes of ${id}`, phases: live });
    const added = Array.from({ length: size.newPhases }, (_, p) => ({ name: `a${id}-new-${p}`, trigger_on: { min_success_rate: 0.9 + p / 1000 }, info: { percent: 10 + p, wave: p } }));
    changes += added.length;
    phases.set(id, [...live, ...added].map((p) => p.name));
    docs.push(`apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: ${TENANT} }
spec:
  id: ${id}
  phases:
${[...live, ...added].map((p) => `    - { name: "${p.name}", trigger_on: ${JSON.stringify(p.trigger_on)}, info: ${JSON.stringify(p.info)} }`).join('\n')}
`);
  }
  const expectedFw = new Map<string, Record<string, unknown>>();
  fws.forEach((f, i) => {
    if (i % 2 === 1) return; // unmanaged entirely: not in the YAML
    const spec: string[] = [`  version_number: "${f.version_number}"`];
    const after: Record<string, unknown> = {};
    const which = i % 6;
    if (which === 0 || which === 4) {
      after.is_deactivated = !f.is_deactivated;
      spec.push(`  is_deactivated: ${String(after.is_deactivated)}`);
    }
    if (which === 2 || which === 4) {
      after.uncompressed_size = f.uncompressed_size! + 1 + i;
      spec.push(`  uncompressed_size: ${String(after.uncompressed_size)}`);
    }
    if (which === 0) {
      after.dependencies = [{ component_name: 'bootloader', min_version: `9.${i}.0` }];
      spec.push(`  dependencies:\n    - { component_name: bootloader, min_version: "9.${i}.0" }`);
    }
    changes += 1;
    expectedFw.set(f.version_number, after);
    docs.push(`apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: ${TENANT} }\nspec:\n${spec.join('\n')}\n`);
  });
  const seed = { tenants: { [TENANT]: { api_key: key, bundles, actions } } } as unknown as Seed;
  const files: Record<string, string> = {
    'dus-sync.yaml': CONFIG(changes + 10),
    'tenants/acme/firmwares.yaml': docs.filter((d) => d.includes('kind: Firmware')).join('---\n'),
    'tenants/acme/actions.yaml': docs.filter((d) => d.includes('kind: Action')).join('---\n'),
  };
  return { seed, files, phases, firmwares: expectedFw, changes };
}

/** The firmware records of the seed as the emulator materialises them, by version number. */
export function firmwareRecords(em: RunningEmulator): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const b of em.store.listBundles(TENANT)) {
    for (const f of b.firmwares) out.set(f.version_number, JSON.parse(JSON.stringify(f)) as Record<string, unknown>);
  }
  return out;
}

/** Every field the store holds besides the phases: they must not move. */
export function actionRecords(em: RunningEmulator, ids: Iterable<number>): Map<number, Record<string, unknown>> {
  const out = new Map<number, Record<string, unknown>>();
  for (const id of ids) {
    const a = JSON.parse(JSON.stringify(em.store.getAction(TENANT, id))) as Record<string, unknown>;
    delete a.phases;
    delete a.phases_triggered;
    delete a.next_phase_index;
    out.set(id, a);
  }
  return out;
}

/**
 * The end state: each action holds exactly the desired names in order (so nothing twice), each
 * managed firmware field has its desired value, and every other field equals what it was before.
 */
export function expectConverged(em: RunningEmulator, sc: Scenario, before: Map<string, Record<string, unknown>>, actionsBefore: Map<number, Record<string, unknown>>): void {
  for (const [id, names] of sc.phases) {
    const action = em.store.getAction(TENANT, id)!;
    expect(action.phases.map((p) => p.name), `phases of action ${id}`).toEqual(names);
  }
  const after = firmwareRecords(em);
  expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
  for (const [vn, old] of before) {
    const managed = sc.firmwares.get(vn) ?? {};
    expect(after.get(vn), `firmware ${vn}`).toEqual({ ...old, ...managed });
  }
  expect(actionRecords(em, sc.phases.keys())).toEqual(actionsBefore);
}

/** Spawns the built CLI and hands back the child, for tests that kill it. */
export interface KilledResult extends RunResult { signal: NodeJS.Signals | null }

export function spawnCli(args: string[], env: Record<string, string>): { child: ChildProcess; done: Promise<KilledResult>; stderr: () => string } {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const done = new Promise<KilledResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done, stderr: () => stderr };
}

/** A stack trace line of our bundle or of node internals. */
export const STACK = /\n\s+at .+(\.js|\.ts|node:internal)/;

export interface ResetProxy {
  readonly url: string;
  /** Connections reset before the request reached the server, and after its answer left it. */
  readonly resets: { beforeServer: number; afterServer: number };
  close(): Promise<void>;
}

/**
 * A TCP proxy on 127.0.0.1 that resets connections at seeded random moments: some requests never
 * reach the server, some answers never reach the client (the server did the work). The emulator
 * only drops append answers; this breaks every route, reads and PUTs included.
 */
export async function startResetProxy(target: URL, opts: { rate: number; seed: number }): Promise<ResetProxy> {
  const rng = mulberry32(opts.seed);
  const resets = { beforeServer: 0, afterServer: 0 };
  const sockets = new Set<Socket>();
  const kill = (a: Socket, b: Socket) => { a.resetAndDestroy(); b.resetAndDestroy(); };
  const server = createNetServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    client.on('data', (chunk: Buffer) => {
      if (rng() < opts.rate) { resets.beforeServer++; kill(client, upstream); return; }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (rng() < opts.rate) { resets.afterServer++; kill(client, upstream); return; }
      client.write(chunk);
    });
    for (const [s, other] of [[client, upstream], [upstream, client]] as const) {
      s.on('error', () => other.destroy());
      s.on('close', () => { sockets.delete(s); other.destroy(); });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    resets,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

export interface HookProxy {
  readonly url: string;
  /** Requests forwarded so far, as "METHOD /path". */
  readonly seen: string[];
  close(): Promise<void>;
}

/**
 * An HTTP proxy on 127.0.0.1 that calls `before` with each request ("METHOD /path" and how many
 * times that exact request was seen, counting this one) and forwards it only once `before`
 * resolves (and answers only once `holdAnswer` resolves): a test makes another actor act at an
 * exact moment of a run, or holds an answer back while the world moves on.
 */
export async function startHookProxy(target: string, before: (request: string, n: number) => void | Promise<void>,
  opts: { holdAnswer?: (request: string, n: number) => void | Promise<void> } = {}): Promise<HookProxy> {
  const { createServer } = await import('node:http');
  const counts = new Map<string, number>();
  const seen: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = `${req.method ?? 'GET'} ${(req.url ?? '/').split('?')[0]}`;
      const n = (counts.get(request) ?? 0) + 1;
      counts.set(request, n);
      seen.push(request);
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<string, string>;
      void Promise.resolve(before(request, n))
        .then(() => fetch(`${target}${req.url ?? '/'}`, { method: req.method, headers, ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}) }))
        .then(async (r) => {
          const body = Buffer.from(await r.arrayBuffer());
          await opts.holdAnswer?.(request, n);
          res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
          res.end(body);
        }, () => { res.destroy(); });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}

/** Runs the CLI on a pseudo-terminal (util-linux `script`), answering the approval prompt after `atPrompt` ran. */
export function onTerminal(args: string[], env: Record<string, string>, atPrompt: () => void | Promise<void>, answer: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const cmd = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let asked = false;
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (!asked && /\[y\/N\]/.test(out)) {
        asked = true;
        void Promise.resolve(atPrompt()).then(() => { child.stdin!.end(`${answer}\n`); });
      }
    });
    child.on('close', (code) => resolve({ code, out }));
  });
}
