#!/usr/bin/env node
// The CLI entry: commander wiring only. Each command lives in its own module, loaded when
// it runs, so that `--version` and `--help` stay fast. The one top-level error handler is here.
import { Command, InvalidArgumentError, Option } from 'commander';
import { handleError } from './handle-error.js';
import { guardProcessOutput } from './output.js';
import { VERSION } from '../version.js';
import type { GlobalOptions } from './context.js';

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function int(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) {
      throw new InvalidArgumentError(`${name} takes a whole number of 0 or more.`);
    }
    return n;
  };
}

type Runner = (opts: Record<string, unknown>, globals: GlobalOptions, args: string[]) => Promise<number>;

/** Wraps a lazily imported command: its exit code becomes the process's. */
function lazy(load: () => Promise<{ run: Runner }>) {
  return async function action(this: Command, ...params: unknown[]): Promise<void> {
    const globals = this.optsWithGlobals() as GlobalOptions;
    const args = params.slice(0, -2).filter((p): p is string => typeof p === 'string');
    const mod = await load();
    process.exitCode = await mod.run(this.opts(), globals, args);
  };
}

export function buildProgram(): Command {
  const program = new Command('dus-sync');
  program
    .description('Keep Device Update Service firmware records and rollout actions in git, and converge the service to them.')
    .version(VERSION, '-V, --version', 'print the version')
    .option('-c, --config <file>', 'the config file (default: ./dus-sync.yaml when present)')
    .option('-d, --dir <dir>', 'the folder of desired-state files (default: the config file\'s folder, else .)')
    .option('-t, --tenant <name>', 'only this tenant (repeatable)', collect)
    .option('-l, --selector <k=v>', 'only documents whose metadata.labels match (repeatable, all must match)', collect)
    .option('--insecure-http', 'allow http:// to a host that is not loopback')
    .option('--ca-file <file>', 'trust this PEM CA bundle as well (private CAs)')
    .option('--no-color', 'no colours (NO_COLOR is honoured too)')
    .option('--debug', 'debug logs and stack traces on standard error')
    .showHelpAfterError('(run dus-sync --help for usage)')
    .configureOutput({ outputError: (str, write) => write(str) })
    .addHelpText('after', `
Examples:
  $ dus-sync validate                         # check the YAML offline
  $ dus-sync plan                             # show what would change
  $ dus-sync apply --auto-approve             # converge the service to git
  $ dus-sync watch --listen 0.0.0.0:9090      # run as an agent

Environment: DUS_BASE_URL, DUS_TENANT, DUS_API_KEY (single tenant), NO_COLOR.
Exit status: 0 success, 1 error (invalid config, conflict, API failure, refused plan), 2 plan --detailed-exitcode with changes.`);

  program.command('validate')
    .description('check the desired-state files offline: schema and semantic checks')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json', 'github']).default('text'))
    .addHelpText('after', '\nExample:\n  $ dus-sync validate --format github   # annotations in GitHub Actions')
    .action(lazy(() => import('./validate.js')));

  program.command('plan')
    .description('fetch the live state and show what apply would change')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json', 'markdown']).default('text'))
    .option('-o, --out <file>', 'save the plan for a later apply')
    .option('--detailed-exitcode', 'exit 2 when there are changes (0 none, 1 error)')
    .option('--max-changes <n>', 'refuse a plan with more changes (overrides safety.max_changes)', int('--max-changes'))
    .option('--max-deactivations <n>', 'refuse a plan with more deactivations', int('--max-deactivations'))
    .option('--allow-large', 'accept a plan over the safety limits')
    .addHelpText('after', '\nExamples:\n  $ dus-sync plan\n  $ dus-sync plan --format markdown > plan.md\n  $ dus-sync plan --out plan.json && dus-sync apply plan.json')
    .action(lazy(() => import('./plan.js')));

  program.command('apply')
    .description('plan (or load a saved plan) and apply it')
    .argument('[planfile]', 'a plan saved with plan --out')
    .option('-y, --auto-approve', 'do not ask; required without a TTY')
    .option('--concurrency <n>', 'requests in flight at most (adapts down on 429)', int('--concurrency'), 8)
    .option('--max-changes <n>', 'refuse a plan with more changes (overrides safety.max_changes)', int('--max-changes'))
    .option('--max-deactivations <n>', 'refuse a plan with more deactivations', int('--max-deactivations'))
    .option('--allow-large', 'accept a plan over the safety limits')
    .option('--fail-fast', 'stop starting new changes after the first failure')
    .option('--journal <file>', 'the intent journal (default: .dus-sync/journal.jsonl beside the config)')
    .addHelpText('after', '\nExamples:\n  $ dus-sync apply                    # asks on a TTY\n  $ dus-sync apply --auto-approve     # in CI\n  $ dus-sync apply plan.json          # exactly the saved plan, refused if live moved')
    .action(lazy(() => import('./apply.js')));

  program.command('watch')
    .description('run as an agent: reconcile at start, on file changes and every watch.interval')
    .option('--dry-run', 'only report drift, never write')
    .option('--listen <host:port>', 'serve /healthz, /readyz and /metrics')
    .option('--interval <duration>', 'override watch.interval (e.g. 30s, 5m)')
    .option('--concurrency <n>', 'requests in flight at most', int('--concurrency'), 8)
    .option('--grace <duration>', 'on SIGTERM, how long the running pass may take to finish', '20s')
    .option('--journal <file>', 'the intent journal (default: .dus-sync/journal.jsonl beside the config)')
    .addHelpText('after', '\nExample:\n  $ dus-sync watch --listen 0.0.0.0:9090')
    .action(lazy(() => import('./watch.js')));

  program.command('export')
    .description('write the live state of a tenant as desired-state YAML')
    .requiredOption('-o, --out <dir>', 'the folder to write into')
    .option('--action <id>', 'also export this action (repeatable)', collect)
    .addHelpText('after', '\nExample:\n  $ dus-sync export --tenant acme --out tenants/acme --action 42')
    .action(lazy(() => import('./export.js')));

  program.command('diff')
    .description('the desired-state difference between a git ref and the working tree, offline')
    .requiredOption('--base <ref>', 'the git ref to compare against (e.g. origin/main)')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json', 'markdown']).default('text'))
    .addHelpText('after', '\nExample:\n  $ dus-sync diff --base origin/main --format markdown')
    .action(lazy(() => import('./diff.js')));

  program.command('status')
    .description('live rollout status of the declared actions')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .addHelpText('after', '\nExample:\n  $ dus-sync status --tenant acme')
    .action(lazy(() => import('./status.js')));

  program.command('emulator')
    .description('run the local emulator of the Device Update Service API')
    .option('-p, --port <port>', 'port (0 picks a free one)', int('--port'), 8080)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--seed <file>', 'seed YAML or JSON (tenants, keys, bundles, actions)')
    .option('--data <file>', 'persist the state here after every write (atomic)')
    .option('--page-size <n>', 'bundles per page of the list (0: no pagination)', int('--page-size'), 0)
    .option('--absolute-next', 'give absolute next links (default: relative)')
    .option('--latency <ms>', 'add this latency to every response', int('--latency'), 0)
    .option('--fail-rate <r>', 'answer this share of requests with a 5xx', parseFloat, 0)
    .option('--rate-limit <n/s>', 'answer 429 with Retry-After above this many requests a second')
    .option('--drop-after-commit-rate <r>', 'store this share of append_phase requests, then drop the connection', parseFloat, 0)
    .option('--fault-seed <n>', 'seed of the fault generator (deterministic faults)', int('--fault-seed'), 1)
    .addHelpText('after', '\nExample:\n  $ dus-sync emulator --port 0 --seed examples/emulator-seed.yaml --page-size 2')
    .action(lazy(() => import('./emulator.js')));

  program.command('schema')
    .description('print the JSON Schemas (config, firmware, action, resource, api)')
    .argument('[kind]', 'one of config, firmware, action, resource, api')
    .addHelpText('after', '\nExample:\n  $ dus-sync schema firmware')
    .action(lazy(() => import('./schema.js')));

  return program;
}

export async function main(argv: string[]): Promise<void> {
  // Before anything is written: every byte to stdout and stderr is redacted and defused there.
  guardProcessOutput();
  // A crash is output too, and Node would print it past the guard (a server's words in its
  // message): it goes through the one handler instead, and the process ends as Node's would.
  process.on('uncaughtException', (err) => {
    handleError(err, argv.includes('--debug'));
    process.exit(1);
  });
  const program = buildProgram();
  program.exitOverride();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    process.exitCode = handleError(err, argv.includes('--debug'));
  }
}

await main(process.argv);
