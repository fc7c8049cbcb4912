#!/usr/bin/env node
// The CLI entry: commander wiring only. Each command lives in its own module, loaded when
// it runs, so that `--version` and `--help` stay fast. The one top-level error handler is here.
import { Argument, Command, InvalidArgumentError, Option } from 'commander';
import { UserError } from '../errors.js';
import { APPEND_QUIET_MS, checkCount, checkDuration, checkSize, CONCURRENCY, formatSize, GRACE_MS, MAX_FILE_SIZE, SETTLE_WINDOW_MS, WATCH_INTERVAL_MS, type Range } from '../limits.js';
import { checkedFetchTimeout, checkedMaxResponseSize, checkedRequestTimeout } from '../api/limits.js';
import { handleError } from './handle-error.js';
import { errorJson, watchResultOutput, writeJsonError } from './json-error.js';
import { outputClosed } from './interrupt.js';
import { guardProcessOutput } from './output.js';
import { runsForDays, tuneForShortRun } from './short-run.js';
import { refuseSingleDashLongOption } from './single-dash.js';
import { VERSION } from '../version.js';
import type { GlobalOptions } from './context.js';

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** A repeatable option limited to some values (Option.choices alone keeps only the last one). */
function collectChoice(choices: readonly string[], name: string) {
  return (value: string, previous: string[] = []): string[] => {
    if (!choices.includes(value)) throw new InvalidArgumentError(`${name} takes one of ${choices.join(', ')}.`);
    return [...previous, value];
  };
}

/** Flags parsed and bounded with the same words as the config keys (src/api/limits.ts). */
function bounded(check: (text: string, where: string) => number, name: string) {
  return (value: string): number => {
    try {
      return check(value, name);
    } catch (err) {
      throw new InvalidArgumentError(`${(err as Error).message}.`);
    }
  };
}

/**
 * An option parser that refuses a value out of range with one sentence naming the flag and the
 * range (a UserError, so the top-level handler prints just that sentence, exit 1).
 */
function ranged(check: (name: string, text: string, range: Range) => number | string, name: string, range: Range) {
  return (value: string): number => {
    const r = check(name, value, range);
    if (typeof r === 'string') throw new UserError(r);
    return r;
  };
}

const count = (name: string, range: Range = ANY_COUNT) => ranged(checkCount, name, range);
const duration = (name: string, range: Range) => ranged(checkDuration, name, range);
const ANY_COUNT: Range = { min: 0, max: Number.MAX_SAFE_INTEGER };

type Runner = (opts: Record<string, unknown>, globals: GlobalOptions, args: string[]) => Promise<number>;

/** Wraps a lazily imported command: its exit code becomes the process's. `long`: it runs for days (watch, the emulator). */
function lazy(load: () => Promise<{ run: Runner }>, long = false) {
  return async function action(this: Command, ...params: unknown[]): Promise<void> {
    if (!long) tuneForShortRun();
    const globals = this.optsWithGlobals() as GlobalOptions;
    const args = params.slice(0, -2).filter((p): p is string => typeof p === 'string');
    // --format json: a failure still leaves one JSON document on stdout (json-error.ts).
    const json = this.opts().format === 'json';
    if (json) watchResultOutput();
    const mod = await load();
    try {
      process.exitCode = await mod.run(this.opts(), globals, args);
    } catch (err) {
      if (json) writeJsonError(errorJson(err));
      throw err;
    }
  };
}

export function buildProgram(): Command {
  const program = new Command('dus-sync');
  program
    .description('Keep Device Update Service firmware records and rollout actions in git, and converge the service to them.')
    .version(VERSION, '-V, --version', 'print the version')
    .option('-c, --config <file>', 'the config file (default: env DUS_CONFIG, else the nearest dus-sync.yaml in --dir or here, or above)')
    .option('-d, --dir <dir>', 'the folder of desired-state files: narrows the config\'s resources to it (default: the config file\'s folder)')
    .option('-t, --tenant <name>', 'only this tenant (repeatable)', collect)
    .option('-l, --selector <k=v>', 'only documents whose metadata.labels match (repeatable, all must match)', collect)
    .option('--insecure-http', 'allow http:// to a host that is not loopback')
    .option('--ca-file <file>', 'trust this PEM CA bundle as well (private CAs)')
    .option('--max-file-size <size>', `refuse desired-state files larger than this, ${formatSize(MAX_FILE_SIZE.min)} to ${formatSize(MAX_FILE_SIZE.max)} (default ${formatSize(MAX_FILE_SIZE.default)}; env DUS_MAX_FILE_SIZE)`, ranged(checkSize, '--max-file-size', MAX_FILE_SIZE))
    .option('--follow-external-symlinks', 'read files outside the config\'s folder: through symbolic links that leave it (dus-sync.yaml, --dir or --config as a link out too), and resources globs that climb out of it (env DUS_FOLLOW_EXTERNAL_SYMLINKS=1)')
    .option('--max-response-size <size>', 'read at most this much of one API answer (default 32MiB; api.max_response_size)', bounded(checkedMaxResponseSize, '--max-response-size'))
    .option('--request-timeout <duration>', 'deadline for the headers and whole body of one API request (default 60s; api.request_timeout)', bounded(checkedRequestTimeout, '--request-timeout'))
    .option('--fetch-timeout <duration>', 'deadline for reading the whole live state of a run, every page and action (default 10m; api.fetch_timeout)', bounded(checkedFetchTimeout, '--fetch-timeout'))
    .option('--no-color', 'no colours (NO_COLOR is honoured too)')
    .option('--debug', 'debug logs and stack traces on standard error')
    .showHelpAfterError('(run dus-sync --help for usage)')
    // Every command's --help lists the global options too (commands copy this when added below).
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({ outputError: (str, write) => write(str) })
    .addHelpText('after', `
Examples:
  $ dus-sync validate                         # check the YAML offline
  $ dus-sync plan                             # show what would change
  $ dus-sync apply --auto-approve             # converge the service to git
  $ dus-sync watch --listen 0.0.0.0:9090      # run as an agent

Environment: DUS_CONFIG, DUS_BASE_URL, DUS_TENANT, DUS_API_KEY (single tenant), DUS_MAX_FILE_SIZE, DUS_FOLLOW_EXTERNAL_SYMLINKS, NO_COLOR.
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
    .option('--concurrency <n>', `requests in flight per tenant, ${CONCURRENCY.min} to ${CONCURRENCY.max}: the most, as the limit starts there and only adapts down (default: starts at 8 and adapts between the floor and ceiling below)`, count('--concurrency', CONCURRENCY))
    .option('--min-concurrency <n>', `the floor the limit never goes below, ${CONCURRENCY.min} to ${CONCURRENCY.max} (default 1)`, count('--min-concurrency', CONCURRENCY))
    .option('--max-concurrency <n>', `the ceiling the limit grows to while latency holds (halved on 429 and 5xx), ${CONCURRENCY.min} to ${CONCURRENCY.max} (default 64, or --concurrency)`, count('--max-concurrency', CONCURRENCY))
    .option('--max-changes <n>', 'refuse a plan with more changes (overrides safety.max_changes)', count('--max-changes'))
    .option('--max-deactivations <n>', 'refuse a plan with more deactivations', count('--max-deactivations'))
    .option('--allow-large', 'accept a plan over the safety limits')
    .option('--allow-broken-dependencies', 'plan deactivations that leave an active firmware\'s dependency unsatisfied (an error otherwise)')
    .option('--ignore-windows', 'emergencies: write outside the sync windows of the config (logged)')
    .option('--no-read-ahead', 'read nothing until the desired-state files are loaded and valid (by default the bundle lists of the tenants dus-sync.yaml names are read while they load)')
    .addHelpText('after', '\nExamples:\n  $ dus-sync plan\n  $ dus-sync plan --format markdown > plan.md\n  $ dus-sync plan --out plan.json && dus-sync apply plan.json')
    .action(lazy(() => import('./plan.js')));

  program.command('apply')
    .description('plan (or load a saved plan) and apply it')
    .argument('[planfile]', 'a plan saved with plan --out')
    .addOption(new Option('--format <format>', 'the report: text, or json on stdout (the plan and progress on stderr)').choices(['text', 'json']).default('text'))
    .option('-y, --auto-approve', 'do not ask; required without a TTY (a saved plan is its own approval)')
    .option('--concurrency <n>', `requests in flight per tenant, ${CONCURRENCY.min} to ${CONCURRENCY.max}: the most, as the limit starts there and only adapts down (default: starts at 8 and adapts between the floor and ceiling below)`, count('--concurrency', CONCURRENCY))
    .option('--min-concurrency <n>', `the floor the limit never goes below, ${CONCURRENCY.min} to ${CONCURRENCY.max} (default 1)`, count('--min-concurrency', CONCURRENCY))
    .option('--max-concurrency <n>', `the ceiling the limit grows to while latency holds (halved on 429 and 5xx), ${CONCURRENCY.min} to ${CONCURRENCY.max} (default 64, or --concurrency)`, count('--max-concurrency', CONCURRENCY))
    .option('--max-changes <n>', 'refuse a plan with more changes (overrides safety.max_changes)', count('--max-changes'))
    .option('--max-deactivations <n>', 'refuse a plan with more deactivations', count('--max-deactivations'))
    .option('--allow-large', 'accept a plan over the safety limits')
    .option('--fail-fast', 'stop starting new changes after the first failure')
    .option('--allow-broken-dependencies', 'plan deactivations that leave an active firmware\'s dependency unsatisfied (an error otherwise)')
    .option('--ignore-windows', 'emergencies: write outside the sync windows of the config (logged)')
.option('--journal <file>', 'the intent journal (default: DUS_SYNC_STATE_DIR/journal.jsonl, else a folder named by the API base URL under $XDG_STATE_HOME/dus-sync, ~/.local/state/dus-sync)')
    .option('--settle-window <duration>', 'how long reads must show an append whose outcome was unknown absent before it is sent again (default: safety.settle_window, else 30s; 0s to 24h)', duration('--settle-window', SETTLE_WINDOW_MS))
    .addOption(new Option('--grace <duration>', 'on SIGINT or SIGTERM, how long writes in flight may take to finish before the report (0s to 1h)').argParser(duration('--grace', GRACE_MS)).default(10_000, '10s'))
    .addHelpText('after', '\nExamples:\n  $ dus-sync apply                    # asks on a TTY\n  $ dus-sync apply --auto-approve     # in CI\n  $ dus-sync apply plan.json          # exactly the saved plan, no prompt, refused if live moved')
    .action(lazy(() => import('./apply.js')));

  program.command('watch')
    .description('run as an agent: reconcile at start, on file changes and every watch.interval')
    .option('--dry-run', 'only report drift, never write')
    .option('--allow-broken-dependencies', 'plan deactivations that leave an active firmware\'s dependency unsatisfied (an error otherwise)')
    .option('--ignore-windows', 'emergencies: write outside the sync windows of the config (logged)')
    .addOption(new Option('--listen <host:port>', 'serve a status page at / and /healthz, /readyz and /metrics').env('DUS_SYNC_LISTEN'))
    .option('--interval <duration>', 'override watch.interval (e.g. 30s, 5m; 1s to 24h)', duration('--interval', WATCH_INTERVAL_MS))
    .option('--concurrency <n>', `requests in flight per tenant, ${CONCURRENCY.min} to ${CONCURRENCY.max}: the most, as the limit starts there and only adapts down (default: starts at 8 and adapts between the floor and ceiling below)`, count('--concurrency', CONCURRENCY))
    .option('--min-concurrency <n>', `the floor the limit never goes below, ${CONCURRENCY.min} to ${CONCURRENCY.max} (default 1)`, count('--min-concurrency', CONCURRENCY))
    .option('--max-concurrency <n>', `the ceiling the limit grows to while latency holds (halved on 429 and 5xx), ${CONCURRENCY.min} to ${CONCURRENCY.max} (default 64, or --concurrency)`, count('--max-concurrency', CONCURRENCY))
    .addOption(new Option('--grace <duration>', 'on SIGTERM, how long the running pass may take to finish (0s to 1h)').argParser(duration('--grace', GRACE_MS)).default(20_000, '20s'))
    .option('--journal <file>', 'the intent journal (default: DUS_SYNC_STATE_DIR/journal.jsonl, else a folder named by the API base URL under $XDG_STATE_HOME/dus-sync, ~/.local/state/dus-sync)')
    .option('--settle-window <duration>', 'how long reads must show an append whose outcome was unknown absent before it is sent again (default: safety.settle_window, else 30s; 0s to 24h)', duration('--settle-window', SETTLE_WINDOW_MS))
    .option('--append-quiet <duration>', 'append a phase only from a file unchanged this long, so that a file still being written never appends half a phase (default 2s; 0s to 1h)', duration('--append-quiet', APPEND_QUIET_MS))
    .addOption(new Option('--log-format <format>', 'logs as JSON lines or readable lines (default: watch.log_format, else readable on a terminal and JSON otherwise)').choices(['json', 'pretty']))
    .addOption(new Option('--log-level <level>', 'the least severe level logged (default: watch.log_level, else info; debug with --debug)').choices(['trace', 'debug', 'info', 'warn', 'error']))
    .addHelpText('after', '\nExample:\n  $ dus-sync watch --listen 0.0.0.0:9090')
    .action(lazy(() => import('./watch.js'), true));

  program.command('export')
    .description('write the live state of a tenant as desired-state YAML')
    .requiredOption('-o, --out <dir>', 'the folder to write into')
    .option('--action <id>', 'also export this action (repeatable)', collect)
    .option('--force', 'overwrite files in --out that differ from the export (hand edits are lost)')
    .addHelpText('after', '\nExample:\n  $ dus-sync export --tenant acme --out tenants/acme --action 42')
    .action(lazy(() => import('./export.js')));

  program.command('diff')
    .description('the desired-state difference between a git ref and the working tree, offline')
    .requiredOption('--base <ref>', 'the git ref to compare against (e.g. origin/main)')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json', 'markdown']).default('text'))
    .addHelpText('after', '\nExample:\n  $ dus-sync diff --base origin/main --format markdown')
    .action(lazy(() => import('./diff.js')));

  program.command('review')
    .description('review a pull request: plan (or diff --base without keys), one sticky comment, the job summary, annotations')
    .addOption(new Option('--mode <mode>', 'plan needs the API keys; diff compares with --base in git; auto: plan when every key is there').choices(['auto', 'plan', 'diff']).default('auto'))
    .option('--base <ref>', 'the git ref for the keyless diff (default: origin/$GITHUB_BASE_REF, GitLab\'s merge base)')
    .addOption(new Option('--platform <platform>', 'where to comment and annotate (default: from GITHUB_ACTIONS / GITLAB_CI)').choices(['auto', 'github', 'gitlab', 'none']).default('auto'))
    .option('--no-comment', 'do not post or update the comment')
    .option('--marker <name>', 'one comment per name, for several configs in one repository')
    .option('--token-env <name>', 'the variable holding the token (default: GITHUB_TOKEN; GitLab: DUS_NOTE_TOKEN)')
    .option('--comment-author <login>', 'GitHub: the login the token comments as, when not github-actions[bot] (a GitHub App)')
    .option('--code-quality <file>', 'write a GitLab Code Quality report (JSON) of the problems')
    .addHelpText('after', '\nExit status: 0 no changes, 2 changes, 1 an error (like plan --detailed-exitcode).\nExamples:\n  $ dus-sync review                          # in a pull request\'s workflow\n  $ dus-sync review --mode diff --base origin/main --platform none   # locally')
    .action(lazy(() => import('./review.js')));

  program.command('status')
    .description('live rollout status of the declared actions')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .addHelpText('after', '\nExample:\n  $ dus-sync status --tenant acme')
    .action(lazy(() => import('./status.js')));

  program.command('init')
    .description('write a first dus-sync.yaml here (or in --dir); the intent journal lives outside the repository')
    .option('--base-url <url>', 'the API\'s base URL (else left for you to fill in)')
    .option('-f, --force', 'replace an existing dus-sync.yaml')
    .addHelpText('after', '\nThe global --tenant NAME (repeatable) lists the tenants.\nExample:\n  $ dus-sync init --base-url https://updates.example.com --tenant acme')
    .action(lazy(() => import('./init.js')));

  program.command('emulator')
    .description('run the local emulator of the Device Update Service API')
    .option('-p, --port <port>', 'port (0 picks a free one)', count('--port', { min: 0, max: 65_535 }), 8080)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--seed <file>', 'seed YAML or JSON (tenants, keys, bundles, actions)')
    .option('--data <file>', 'persist the state here after every write (atomic)')
    .option('--page-size <n>', 'bundles per page of the list (0: no pagination; at most 10000)', count('--page-size', { min: 0, max: 10_000 }), 0)
    .option('--absolute-next', 'give absolute next links (default: relative)')
    .option('--latency <ms>', 'add this latency to every response (at most 600000)', count('--latency', { min: 0, max: 600_000 }), 0)
    .option('--fail-rate <r>', 'answer this share of requests with a 5xx', parseFloat, 0)
    .option('--rate-limit <n/s>', 'answer 429 with Retry-After above this many requests a second')
    .option('--drop-after-commit-rate <r>', 'store this share of append_phase requests, then drop the connection', parseFloat, 0)
    .option('--read-lag <ms>', 'GET /actions/{id} shows the action as it was this long ago (a lagging read replica)', count('--read-lag', { min: 0, max: 600_000 }), 0)
    .option('--late-commit <ms>', 'answer append_phase 504 at once and store the phase this long afterwards', count('--late-commit', { min: 0, max: 600_000 }), 0)
    .option('--wrong-action <asked=answered>', 'answer GET /actions/ASKED with action ANSWERED (repeatable)', collect)
    .option('--race-append-every <n>', 'every Nth append_phase finds the same phase appended by another actor just before it', count('--race-append-every', { min: 0, max: 1_000_000 }), 0)
    .option('--trigger-after <ms>', 'mark each appended phase triggered this many milliseconds after its append, as a rollout would', count('--trigger-after', { min: 0, max: 86_400_000 }))
    .option('--fault-seed <n>', 'seed of the fault generator (deterministic faults)', count('--fault-seed', { min: 0, max: 0xffff_ffff }), 1)
    .addOption(new Option('--hostile <mode>', 'answer as a hostile server: a huge body, an endless one, one dripped a byte at a time, or an error echoing the key').choices(['huge', 'endless', 'drip', 'echo']))
    .option('--hostile-route <route>', 'only this route answers so: bundles, bundle, action, firmware or append (repeatable; default: every route)', collectChoice(['bundles', 'bundle', 'action', 'firmware', 'append'], '--hostile-route'))
    .option('--hostile-size <size>', 'huge: bytes of padding, e.g. 200MiB (the default) or 5MB')
    .option('--hostile-interval <ms>', 'drip: milliseconds between two bytes', count('--hostile-interval', { min: 1, max: 600_000 }), 1000)
    .option('--hostile-status <code>', 'answer with this status instead of the route\'s own (echo: 400 by default; huge with 400 or more pads the detail)', count('--hostile-status', { min: 100, max: 599 }))
    .addHelpText('after', '\nExamples:\n  $ dus-sync emulator --port 0 --seed examples/emulator-seed.yaml --page-size 2\n  $ dus-sync emulator --port 0 --seed examples/emulator-seed.yaml --hostile drip --hostile-route action --hostile-interval 500')
    .action(lazy(() => import('./emulator.js'), true));

  // The kinds are listed for help and completion; schema.ts checks them itself (any case).
  const kind = new Argument('[kind]', 'which schema');
  kind.argChoices = ['config', 'firmware', 'action', 'resource', 'api'];
  program.command('schema')
    .description('print the JSON Schemas (config, firmware, action, resource, api)')
    .addArgument(kind)
    .addHelpText('after', '\nExample:\n  $ dus-sync schema firmware')
    .action(lazy(() => import('./schema.js')));

  program.command('completion')
    .description('print a shell completion script: bash, zsh or fish')
    .addArgument(new Argument('<shell>', 'the shell').choices(['bash', 'zsh', 'fish']))
    .addHelpText('after', '\nExamples:\n  $ source <(dus-sync completion bash)          # this shell\n  $ dus-sync completion fish > ~/.config/fish/completions/dus-sync.fish')
    .action(async function (this: Command, shell: 'bash' | 'zsh' | 'fish') {
      const { completionScript } = await import('./completion.js');
      process.stdout.write(completionScript(this.parent!, shell));
    });

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
  // The reader of standard output or error went away (`dus-sync plan | head`): what is written
  // to that stream after that is dropped, never "error: write EPIPE". A one-shot command finishes
  // and exits with its own status (`plan --detailed-exitcode` still 2); apply takes it as a stop
  // like SIGINT's (interrupt.ts: no new writes, those in flight finish, the lock is released, exit
  // 141). watch and the emulator end at once, as before.
  const closed = new Set<NodeJS.WriteStream>();
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (closed.has(stream)) return;
      if (err.code === 'EPIPE') {
        closed.add(stream);
        if (runsForDays(argv.slice(2))) process.exit(process.exitCode ?? 0);
        outputClosed();
        return;
      }
      throw err;
    });
  }
  const program = buildProgram();
  program.exitOverride();
  try {
    refuseSingleDashLongOption(program, argv.slice(2));
    await program.parseAsync(argv);
  } catch (err) {
    process.exitCode = handleError(err, argv.includes('--debug'));
  }
}

// Not awaited at the top level: dist/main.cjs is CommonJS (src/cli/boot.ts). main() handles its
// own errors; anything else ends the process through the uncaughtException handler above.
void main(process.argv);
