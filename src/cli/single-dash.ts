// Terraform and Go tools take long flags with one dash (`-out=plan.json`, `-auto-approve`);
// commander reads such a token as a bundle of short flags: `-out=plan.json` is `-o` with the
// value `ut=plan.json`, and the plan is saved under that name. So before anything runs, a token
// whose letters after the one dash spell a long option of this program is refused with the
// two-dash form. Short flags keep working: `-t acme`, `-tacme`, `-c file`, `-l k=v`, `-5`.
import type { Command, Option } from 'commander';
import { UserError } from '../errors.js';

export interface SingleDashLongOption {
  /** The token as given, e.g. `-out=plan.json`. */
  readonly token: string;
  /** What was meant, e.g. `--out=plan.json`. */
  readonly suggestion: string;
}

function optionsOf(cmd: Command): readonly Option[] {
  return [...cmd.options, ...cmd.commands.flatMap((c) => optionsOf(c))];
}

/** Every long option name of the program and its commands, without dashes (`out`, `no-color`, `help`). */
export function longOptionNames(program: Command): Set<string> {
  const names = new Set<string>(['help']);
  for (const o of optionsOf(program)) if (o.long) names.add(o.long.replace(/^--/, ''));
  return names;
}

/** Flags (`-c`, `--config`) whose next token is their value, whatever it looks like. */
function valueFlags(program: Command): Set<string> {
  const flags = new Set<string>();
  for (const o of optionsOf(program)) {
    if (!o.required) continue;
    if (o.short) flags.add(o.short);
    if (o.long) flags.add(o.long);
  }
  return flags;
}

const SINGLE_DASH = /^-([A-Za-z][A-Za-z0-9-]+)(=.*)?$/s;

/**
 * The first argument (after node and the script) that is a long option written with one dash,
 * or undefined. Values of options that take one (`--tenant -out`) and everything after `--`
 * are operands, never flags.
 */
export function findSingleDashLongOption(program: Command, args: readonly string[]): SingleDashLongOption | undefined {
  const longs = longOptionNames(program);
  const takesValue = valueFlags(program);
  for (let i = 0; i < args.length; i++) {
    const token = args[i]!;
    if (token === '--') return undefined;
    if (takesValue.has(token)) {
      i += 1;
      continue;
    }
    const m = SINGLE_DASH.exec(token);
    if (m && longs.has(m[1]!)) return { token, suggestion: `-${token}` };
  }
  return undefined;
}

/** Throws the did-you-mean sentence (exit 1) for the first single-dash long option. */
export function refuseSingleDashLongOption(program: Command, args: readonly string[]): void {
  const found = findSingleDashLongOption(program, args);
  if (!found) return;
  throw new UserError(`${found.token}: long options take two dashes (one dash starts short options, as in -t NAME); did you mean ${found.suggestion}? Nothing was run`);
}
