// `dus-sync watch`: the long-running agent. One pass at start, then on file changes and every
// watch.interval; probes and metrics on --listen; SIGTERM/SIGINT stop it gracefully (exit 0).
// Logs (pino) go to standard error: standard output carries only a command's result.
import { setFlagsFromString } from 'node:v8';
import type { LogLevel, ResolvedConfig } from '../model/index.js';
import { resolveConfig } from '../load/config.js';
import { startHttp, readinessOf, type AgentHttp } from '../agent/http.js';
import { createLogger } from '../agent/logger.js';
import { AgentMetrics } from '../agent/metrics.js';
import { createReconcilePass } from '../agent/pass.js';
import { systemClock } from '../agent/reconcile.js';
import { installSignalHandlers } from '../agent/signals.js';
import { StatusBoard } from '../agent/status-page.js';
import { VERSION } from '../version.js';
import { fallbackTargets, resourcesKey, watchTargets, type WatchTargets } from '../agent/targets.js';
import { Watcher } from '../agent/watch.js';
import { apiLimitFlags, concurrencyFlags, configEnv, parseSelector, useColor, type GlobalOptions } from './context.js';

export async function run(opts: Record<string, unknown>, globals: GlobalOptions): Promise<number> {
  tightenHeap();
  // Parsed and range-checked by the option parsers (src/cli/main.ts).
  const intervalFlag = typeof opts.interval === 'number' ? opts.interval : undefined;
  const graceMs = typeof opts.grace === 'number' ? opts.grace : 20_000;
  const concurrency = concurrencyFlags(opts);
  const env = configEnv(globals);
  const dryRun = opts.dryRun === true;
  const cwd = process.cwd();
  const metrics = new AgentMetrics();

  // The first config only tells what to watch (and how to log); a broken one must not keep the
  // agent from starting (it logs, stays up and recovers when the file is fixed).
  let first: ResolvedConfig | undefined;
  let firstError: unknown;
  try {
    first = await resolveConfig({ config: globals.config, dir: globals.dir, cwd, env });
  } catch (err) {
    firstError = err;
  }
  // --log-format and --log-level win over watch.log_format and watch.log_level; the format is
  // chosen once, the level follows the config as it changes.
  const levelFlag = typeof opts.logLevel === 'string' ? opts.logLevel as LogLevel : undefined;
  const levelOf = (c: ResolvedConfig | undefined): LogLevel => levelFlag ?? c?.watchLog?.level ?? (globals.debug === true ? 'debug' : 'info');
  const format = typeof opts.logFormat === 'string' ? opts.logFormat as 'json' | 'pretty' : first?.watchLog?.format ?? 'auto';
  const log = createLogger({ debug: globals.debug === true, level: levelOf(first), format, color: useColor(globals, process.stderr), base: { name: 'dus-sync' } });
  if (firstError !== undefined) log.error(firstError instanceof Error ? firstError.message : String(firstError));
  const followConfig = (c: ResolvedConfig): void => {
    const level = levelOf(c);
    if (log.pino.level !== level) {
      log.info(`log level ${level} (was ${log.pino.level})`);
      log.pino.level = level;
    }
    metrics.setSuspended(c.suspend);
  };
  if (first) followConfig(first);
  const targets: WatchTargets = first ? watchTargets(first) : fallbackTargets(cwd, globals.config ?? (env.DUS_CONFIG?.trim() || undefined), globals.dir);
  let targetsKey = first ? resourcesKey(first) : '';
  let currentTargets = targets;
  const intervalOf = (c: ResolvedConfig | undefined): number => intervalFlag ?? c?.watchIntervalMs ?? 5 * 60_000;

  // The page's memory is kept (and redacted each pass) only when something can serve it.
  const board = typeof opts.listen === 'string' ? new StatusBoard({ version: VERSION }) : undefined;
  // The pass reports each config it reads to the loop, which is built right after it.
  const loop: { watcher?: Watcher } = {};
  const reconcile = createReconcilePass({
    configFile: globals.config,
    dir: globals.dir,
    cwd,
    env,
    filter: { tenants: globals.tenant, selector: parseSelector(globals.selector) },
    dryRun,
    concurrency: concurrency.max,
    startConcurrency: concurrency.start,
    minConcurrency: concurrency.min,
    journal: typeof opts.journal === 'string' ? opts.journal : undefined,
    allowBrokenDependencies: opts.allowBrokenDependencies === true,
    ignoreWindows: opts.ignoreWindows === true,
    ...(typeof opts.settleWindow === 'number' ? { settleWindowMs: opts.settleWindow } : {}),
    ...(typeof opts.appendQuiet === 'number' ? { appendQuietMs: opts.appendQuiet } : {}),
    insecureHttp: globals.insecureHttp,
    caFile: globals.caFile,
    limits: apiLimitFlags(globals),
    log,
    clock: systemClock,
    onRequest: metrics.onApiRequest,
    onLockHeld: (held) => metrics.setLockHeld(held),
    onConfig: (c) => {
      followConfig(c);
      // The same targets while what they depend on stays the same: a new filter each pass threw
      // away its cache of glob answers, and chokidar asks it about every file of a folder on
      // each save in it (20,000 glob matches per save in a large repository).
      const key = resourcesKey(c);
      if (key !== targetsKey) {
        targetsKey = key;
        currentTargets = watchTargets(c);
      }
      loop.watcher?.reconfigure({ ...currentTargets, intervalMs: intervalOf(c) });
    },
  });
  const agent = new Watcher({
    paths: targets.paths,
    filter: targets.filter,
    ...(targets.folder ? { folder: targets.folder } : {}),
    pass: reconcile.pass,
    intervalMs: intervalOf(first),
    log,
    metrics: {
      recordPass: (r, ms, now) => { board?.recordPass(r, ms, now); metrics.recordPass(r, ms, now); },
    },
  });
  loop.watcher = agent;

  let http: AgentHttp | undefined;
  if (board && typeof opts.listen === 'string') {
    http = await startHttp({
      listen: opts.listen,
      metrics,
      readiness: () => readinessOf(agent.status(), agent.intervalMs, Date.now()),
      page: () => {
        const now = Date.now();
        const s = agent.status();
        const r = readinessOf(s, agent.intervalMs, now);
        return board.render({
          passes: s.passes, running: s.running, intervalMs: agent.intervalMs, consecutiveFailures: s.consecutiveFailures,
          ...(s.lastSuccessAt !== undefined ? { lastSuccessAt: s.lastSuccessAt } : {}),
          ready: r.ready, ...(r.reason !== undefined ? { readyReason: r.reason } : {}),
        }, now);
      },
    });
    log.info(`serving the status page at / and /healthz, /readyz and /metrics on ${http.url}`);
  }

  const stopped = new Promise<number>((done) => {
    installSignalHandlers(async (signal) => {
      log.info(`${signal} received: stopping (the running pass has ${graceMs} ms to finish)`);
      const outcome = await agent.stop(graceMs);
      await reconcile.close().catch(() => undefined);
      await http?.close();
      log.info(outcome === 'aborted' ? 'stopped; the running pass was cut short (the journal resolves it on the next start)' : 'stopped');
    }, {
      exit: (code) => {
        // A second signal means "now": nothing is awaited any more.
        if (code >= 128) process.exit(code);
        done(code);
        // Exit even if a library left a handle open; unref'd, so a clean exit comes first.
        setTimeout(() => process.exit(code), 2000).unref();
      },
      onSecond: (signal) => log.warn(`${signal} received again: exiting now`),
    });
  });

  log.info(`watching ${targets.paths.join(', ')}; drift check every ${agent.intervalMs / 1000} s${dryRun ? '; dry run: nothing is written' : ''}`);
  // A signal during start-up must not wait for the watch to be armed.
  await Promise.race([agent.start(), stopped]);
  return stopped;
}

/**
 * The agent runs for days and holds the parses of every file and the live view between passes;
 * V8 lets the heap grow to several times what is live before a full collection when a pass
 * allocates fast (the first pass at 200,000 records peaked at 750 MB). Growing it by at most a
 * quarter between collections: 540 MB, the save-to-applied time unchanged (docs/performance.md).
 * `node --heap-growing-percent=N dist/cli.js watch` chooses otherwise.
 */
export const WATCH_HEAP_GROWING_PERCENT = 25;

function tightenHeap(): void {
  if (process.execArgv.some((a) => a.startsWith('--heap-growing-percent'))) return;
  setFlagsFromString(`--heap-growing-percent=${WATCH_HEAP_GROWING_PERCENT}`);
}
