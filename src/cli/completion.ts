// `dus-sync completion bash|zsh|fish`: a completion script generated from the commander program
// itself (its commands, options, option values and arguments, through commander's Help), so it
// cannot drift from the CLI: a new command or flag is in the next script without a change here.
//
// What each shell completes: command names (with their descriptions in zsh and fish); every
// option of the command and the global options, before or after it; the values of options that
// have a fixed list (`--format`, `--hostile`); file names for options whose value is a file
// (`<file>`), folder names for `<dir>`; and the arguments: the plan file of apply, the schema
// kinds, the shells of completion, the commands of help.
import type { Argument, Command, Option } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

type Value = { readonly kind: 'none' } | { readonly kind: 'file' } | { readonly kind: 'dir' } | { readonly kind: 'words'; readonly words: readonly string[] };

interface Flag {
  readonly short?: string;
  readonly long?: string;
  readonly description: string;
  /** undefined: a switch that takes no value. */
  readonly value?: Value;
  readonly repeatable: boolean;
}

interface Cmd {
  readonly name: string;
  readonly description: string;
  readonly flags: readonly Flag[];
  /** What the command's first argument completes to. */
  readonly operand?: Value;
}

interface Model {
  readonly name: string;
  readonly version: string;
  readonly globals: readonly Flag[];
  readonly commands: readonly Cmd[];
}

function valueOf(placeholder: string, choices: readonly string[] | undefined): Value {
  if (choices && choices.length > 0) return { kind: 'words', words: choices };
  if (/file/i.test(placeholder)) return { kind: 'file' };
  if (/dir/i.test(placeholder)) return { kind: 'dir' };
  return { kind: 'none' };
}

function flagOf(o: Option): Flag {
  const placeholder = /[<[]([^>\]]*)[>\]]/.exec(o.flags)?.[1];
  return {
    ...(o.short ? { short: o.short } : {}),
    ...(o.long ? { long: o.long } : {}),
    description: o.description,
    ...(placeholder !== undefined ? { value: valueOf(placeholder, o.argChoices) } : {}),
    repeatable: /repeatable/i.test(o.description),
  };
}

function operandOf(cmd: Command, commandNames: readonly string[]): Value | undefined {
  if (cmd.name() === 'help') return { kind: 'words', words: commandNames };
  const first: Argument | undefined = cmd.registeredArguments[0];
  return first ? valueOf(first.name(), first.argChoices) : undefined;
}

const spellings = (f: Flag): string[] => [f.short, f.long].filter((s): s is string => s !== undefined);

export function completionModel(program: Command): Model {
  const help = program.createHelp();
  const commands = help.visibleCommands(program);
  const names = commands.map((c) => c.name());
  const globals = help.visibleOptions(program).map(flagOf);
  // A command's own --help is the program's: listed once, with the global options.
  const global = new Set(globals.flatMap(spellings));
  return {
    name: program.name(),
    version: program.version() ?? '',
    globals,
    commands: commands.map((c) => ({
      name: c.name(),
      description: c.description(),
      flags: help.visibleOptions(c).map(flagOf).filter((f) => !spellings(f).some((s) => global.has(s))),
      ...(operandOf(c, names) ? { operand: operandOf(c, names)! } : {}),
    })),
  };
}

const funcName = (name: string): string => `_${name.replace(/[^A-Za-z0-9_]/g, '_')}`;
/** One line, no control characters: descriptions end up inside quotes in a script. */
// eslint-disable-next-line no-control-regex
const oneLine = (s: string): string => s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();

// ---------------------------------------------------------------- bash

function bashQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function bashValue(v: Value): string {
  switch (v.kind) {
    case 'none': return 'COMPREPLY=()';
    case 'file': return 'compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur")';
    case 'dir': return 'compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur")';
    case 'words': return `mapfile -t COMPREPLY < <(compgen -W ${bashQuote(v.words.join(' '))} -- "$cur")`;
  }
}

function bash(m: Model): string {
  const fn = funcName(m.name);
  const globalValued = m.globals.filter((f) => f.value).flatMap(spellings);
  const globalWords = m.globals.flatMap(spellings).join(' ');
  const valueCases: string[] = [];
  for (const c of m.commands) {
    for (const f of c.flags) {
      if (f.value) valueCases.push(`    ${spellings(f).map((s) => `${c.name}:${s}`).join('|')}) ${bashValue(f.value)}; return ;;`);
    }
  }
  for (const f of m.globals) {
    if (f.value) valueCases.push(`    ${spellings(f).map((s) => `*:${s}`).join('|')}) ${bashValue(f.value)}; return ;;`);
  }
  const commandCases = m.commands.map((c) => {
    const words = [...c.flags, ...m.globals].flatMap(spellings).join(' ');
    const operand = c.operand ? `\n      if [[ "$cur" != -* ]]; then ${bashValue(c.operand)}; return; fi` : '';
    return `    ${c.name})${operand}\n      mapfile -t COMPREPLY < <(compgen -W ${bashQuote(words)} -- "$cur") ;;`;
  });
  return `# bash completion for ${m.name} ${m.version}, generated by \`${m.name} completion bash\`.
# In this shell:    source <(${m.name} completion bash)
# In every shell:   ${m.name} completion bash > ~/.local/share/bash-completion/completions/${m.name}
${fn}() {
  local cur prev cmd="" word i skip=0
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  # --format=json: bash splits at the =, so the value's option is the word before it.
  if [[ "$cur" == "=" ]]; then cur=""; elif [[ "$prev" == "=" ]]; then prev="\${COMP_WORDS[COMP_CWORD-2]}"; fi
  # The command is the first word that is neither an option nor the value of a global option.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$word" in
      ${globalValued.length > 0 ? globalValued.join('|') : '--'}) skip=1 ;;
      -*) ;;
      *) cmd="$word"; break ;;
    esac
  done
  case "$cmd:$prev" in
${valueCases.join('\n')}
  esac
  case "$cmd" in
    "")
      if [[ "$cur" == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W ${bashQuote(globalWords)} -- "$cur")
      else
        mapfile -t COMPREPLY < <(compgen -W ${bashQuote(m.commands.map((c) => c.name).join(' '))} -- "$cur")
      fi ;;
${commandCases.join('\n')}
    *) COMPREPLY=() ;;
  esac
}
complete -F ${fn} ${m.name}
`;
}

// ---------------------------------------------------------------- zsh

/** Inside '…' in zsh: the quote closed, escaped and reopened; no backslashes of its own. */
function zshText(s: string): string {
  return oneLine(s).replace(/\\/g, '').replace(/'/g, `'\\''`);
}

/** The [description] of an _arguments spec: brackets escaped as well. */
function zshDescription(s: string): string {
  return zshText(s).replace(/\[/g, '\\[').replace(/\]/g, '\\]');
}

function zshAction(v: Value): string {
  switch (v.kind) {
    case 'none': return ' ';
    case 'file': return '_files';
    case 'dir': return '_files -/';
    case 'words': return `(${v.words.join(' ')})`;
  }
}

function zshSpecs(f: Flag): string[] {
  const star = f.repeatable ? '*' : '';
  const desc = zshDescription(f.description);
  const value = f.value ? `:${f.long?.replace(/^--/, '') ?? 'value'}:${zshAction(f.value)}` : '';
  return spellings(f).map((s) => {
    const attach = f.value ? (s.startsWith('--') ? '=' : '+') : '';
    return `'${star}${s}${attach}[${desc}]${value}'`;
  });
}

function zsh(m: Model): string {
  const fn = funcName(m.name);
  const globals = m.globals.flatMap(zshSpecs).map((s) => `    ${s}`).join('\n');
  const commands = m.commands.map((c) => `    '${zshText(c.name)}:${zshText(c.description)}'`).join('\n');
  const cases = m.commands.map((c) => {
    const specs = [...c.flags.flatMap(zshSpecs), ...(c.operand ? [`'1: :${zshAction(c.operand)}'`] : [])];
    return `        ${c.name})\n          _arguments -s "\${globals[@]}" ${specs.join(' ')} && ret=0 ;;`;
  }).join('\n');
  return `#compdef ${m.name}
# zsh completion for ${m.name} ${m.version}, generated by \`${m.name} completion zsh\`.
# In this shell:   source <(${m.name} completion zsh)   (after compinit)
# In every shell:  ${m.name} completion zsh > "\${fpath[1]}/_${m.name}"
${fn}() {
  local curcontext="$curcontext" state line ret=1
  typeset -A opt_args
  local -a globals commands
  globals=(
${globals}
  )
  commands=(
${commands}
  )
  _arguments -s -C "\${globals[@]}" '1: :->command' '*:: :->args' && ret=0
  case $state in
    command)
      _describe -t commands '${m.name} command' commands && ret=0 ;;
    args)
      case $words[1] in
${cases}
      esac ;;
  esac
  return ret
}
if [ "$funcstack[1]" = "${fn}" ]; then
  ${fn} "$@"
else
  compdef ${fn} ${m.name}
fi
`;
}

// ---------------------------------------------------------------- fish

function fishQuote(s: string): string {
  return `'${oneLine(s).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function fishValue(v: Value): string {
  switch (v.kind) {
    case 'none': return '-x';
    case 'file': return '-r -F';
    case 'dir': return `-x -a ${fishQuote('(__fish_complete_directories)')}`;
    case 'words': return `-x -a ${fishQuote(v.words.join(' '))}`;
  }
}

function fishFlag(name: string, f: Flag, condition?: string): string {
  const parts = [`complete -c ${name}`];
  if (condition) parts.push(`-n ${fishQuote(condition)}`);
  if (f.short) parts.push(`-s ${f.short.replace(/^-/, '')}`);
  if (f.long) parts.push(`-l ${f.long.replace(/^--/, '')}`);
  if (f.value) parts.push(fishValue(f.value));
  parts.push(`-d ${fishQuote(f.description)}`);
  return parts.join(' ');
}

function fish(m: Model): string {
  const lines = [
    `# fish completion for ${m.name} ${m.version}, generated by \`${m.name} completion fish\`.`,
    `# In this shell:   ${m.name} completion fish | source`,
    `# In every shell:  ${m.name} completion fish > ~/.config/fish/completions/${m.name}.fish`,
    `complete -c ${m.name} -f`,
    ...m.commands.map((c) => `complete -c ${m.name} -n __fish_use_subcommand -a ${c.name} -d ${fishQuote(c.description)}`),
    ...m.globals.map((f) => fishFlag(m.name, f)),
  ];
  for (const c of m.commands) {
    const when = `__fish_seen_subcommand_from ${c.name}`;
    lines.push(...c.flags.map((f) => fishFlag(m.name, f, when)));
    if (c.operand?.kind === 'words') lines.push(`complete -c ${m.name} -n ${fishQuote(when)} -a ${fishQuote(c.operand.words.join(' '))}`);
    if (c.operand?.kind === 'file') lines.push(`complete -c ${m.name} -n ${fishQuote(when)} -F`);
    if (c.operand?.kind === 'dir') lines.push(`complete -c ${m.name} -n ${fishQuote(when)} -a ${fishQuote('(__fish_complete_directories)')}`);
  }
  return lines.join('\n') + '\n';
}

export function completionScript(program: Command, shell: Shell): string {
  const m = completionModel(program);
  switch (shell) {
    case 'bash': return bash(m);
    case 'zsh': return zsh(m);
    case 'fish': return fish(m);
  }
}
