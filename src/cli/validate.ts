// `dus-sync validate`: the schema and semantic checks, offline and without any API key.
import { ConfigError, type ConfigIssue } from '../errors.js';
import { resolveConfig } from '../load/config.js';
import { loadAssembled } from '../load/index.js';
import { checkSelection } from '../load/selection.js';
import { safeText } from '../core/render/ansi.js';
import { configEnv, paint, parseSelector, useColor, type GlobalOptions } from './context.js';
import { writeWorkflowCommands } from './output.js';

export type ValidateFormat = 'text' | 'json' | 'github';

export async function run(opts: Record<string, unknown>, globals: GlobalOptions, _args: string[]): Promise<number> {
  const format = (opts.format as ValidateFormat | undefined) ?? 'text';
  let issues: readonly ConfigIssue[];
  let files = 0;
  let documents = 0;
  try {
    const config = await resolveConfig({ config: globals.config, dir: globals.dir, cwd: process.cwd(), env: configEnv(globals) });
    const filter = { tenants: globals.tenant, selector: parseSelector(globals.selector) };
    // Only the issues are shown: each file is checked as it is parsed, and neither its parse
    // nor its objects are kept (the desired state is neither kept nor sorted).
    const { result, facts } = await loadAssembled(config, filter, { sorted: false, keepObjects: false });
    issues = result.issues;
    files = facts.files;
    // Valid files that hold nothing the flags ask for are an error, not "0 files: valid".
    if (issues.length === 0) checkSelection(facts, config, filter);
    documents = facts.documents ?? 0;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    issues = err.issues;
  }
  const out = renderIssues(issues, format, { files, documents, color: useColor(globals) });
  // Workflow commands on purpose: renderIssues escapes their data the way GitHub documents.
  if (format === 'github') writeWorkflowCommands(out);
  else process.stdout.write(out);
  return issues.length === 0 ? 0 : 1;
}

export interface RenderOptions {
  readonly files: number;
  readonly documents: number;
  readonly color?: boolean;
}

export function renderIssues(issues: readonly ConfigIssue[], format: ValidateFormat, o: RenderOptions): string {
  const sorted = sortIssues(issues);
  switch (format) {
    case 'json':
      return JSON.stringify(sorted.map((i) => ({ file: i.file, line: i.line, column: i.column, pointer: i.pointer, message: i.message })), null, 2) + '\n';
    case 'github':
      return sorted.map((i) => `::error file=${ghProperty(i.file)},line=${i.line},col=${i.column}::${ghData(i.message)}\n`).join('');
    case 'text':
      return renderText(sorted, o);
  }
}

function renderText(issues: readonly ConfigIssue[], o: RenderOptions): string {
  const c = paint(o.color === true);
  if (issues.length === 0) {
    return `${plural(o.files, 'file')}, ${plural(o.documents, 'document')}: ${c('green', 'valid')}\n`;
  }
  const groups = new Map<string, ConfigIssue[]>();
  for (const i of issues) groups.set(i.file, [...(groups.get(i.file) ?? []), i]);
  // File names and messages are one line each: a file name can hold a newline and `::error`.
  const blocks = [...groups.values()].map((g) => g.map((i) => `${c('bold', `${safeText(i.file)}:${i.line}:${i.column}`)}: ${safeText(i.message)}\n`).join(''));
  return `${blocks.join('\n')}\n${c('red', `${plural(issues.length, 'problem')} in ${plural(groups.size, 'file')}`)}\n`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function sortIssues(issues: readonly ConfigIssue[]): ConfigIssue[] {
  return [...issues].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line || a.column - b.column));
}

/**
 * GitHub workflow commands, escaped as GitHub documents (and as @actions/core does): in the
 * message % CR LF become %25 %0D %0A; in a property (file=, line=, col=, title=) also : and ,
 * become %3A and %2C. Other control characters are then escaped visibly, like everywhere else.
 */
export function ghData(s: string): string {
  return safeText(s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A'));
}

export function ghProperty(s: string): string {
  return ghData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
}
