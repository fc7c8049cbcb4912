// Shell completion is generated from the commander program, so it lists every command and every
// option the CLI has, and the values of --format; the bash script passes `bash -n` and completes
// for real when sourced. zsh and fish check their scripts' syntax only where they are installed
// (the scripts are generated and checked for content everywhere). Every command's --help lists
// the global options.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli, writeTree } from '../e2e/helpers.js';

const has = (shell: string): boolean => spawnSync(shell, ['-c', 'exit 0']).status === 0;

/** What the CLI says it has: the commands of `--help`, and the long options of each command's `--help`. */
interface Surface { commands: string[]; options: Map<string, string[]>; globals: string[] }

function section(help: string, title: string): string[] {
  const m = new RegExp(`^${title}:\\n((?:  .*\\n|\\s*\\n)*)`, 'm').exec(help);
  return m ? m[1]!.split('\n').filter((l) => /^ {2}\S/.test(l)) : [];
}

const longs = (lines: string[]): string[] => lines.flatMap((l) => [...l.matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]).slice(0, 1));

let surface: Surface;
const scripts = new Map<string, string>();

beforeAll(async () => {
  const top = await runCli(['--help']);
  const commands = section(top.stdout, 'Commands').map((l) => l.trim().split(/\s+/)[0]!);
  const options = new Map<string, string[]>();
  for (const c of commands) options.set(c, longs(section((await runCli([c, '--help'])).stdout, 'Options')));
  surface = { commands, options, globals: longs(section(top.stdout, 'Options')) };
  for (const shell of ['bash', 'zsh', 'fish']) {
    const r = await runCli(['completion', shell]);
    expect(r.code, r.stderr).toBe(0);
    scripts.set(shell, r.stdout);
  }
});

describe('dus-sync completion', () => {
  it('sees the whole CLI (the check below is not empty)', () => {
    expect(surface.commands).toEqual(expect.arrayContaining(['validate', 'plan', 'apply', 'watch', 'export', 'diff', 'status', 'emulator', 'schema', 'completion']));
    expect(surface.options.get('plan')).toEqual(expect.arrayContaining(['--format', '--out', '--detailed-exitcode']));
    expect(surface.globals).toEqual(expect.arrayContaining(['--config', '--tenant', '--no-color']));
  });

  it.each(['bash', 'zsh', 'fish'])('the %s script names every command, every option and the values of --format', (shell) => {
    const script = scripts.get(shell)!;
    for (const c of surface.commands) expect(script, c).toMatch(new RegExp(`(^|[\\s'(|])${c}[\\s:')|]`));
    const names = (o: string) => (shell === 'fish' ? `-l ${o.slice(2)}` : o);
    for (const o of surface.globals) expect(script, o).toContain(names(o));
    for (const [c, opts] of surface.options) for (const o of opts) expect(script, `${c} ${o}`).toContain(names(o));
    for (const values of ['text json github', 'text json markdown', 'text json']) expect(script).toContain(values);
  });

  it('bash -n accepts the bash script', () => {
    const dir = writeTree({ 'c.bash': scripts.get('bash')! });
    const r = spawnSync('bash', ['-n', join(dir, 'c.bash')], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('the bash script completes commands, options, --format values, files and arguments when sourced', () => {
    const dir = writeTree({ 'c.bash': scripts.get('bash')!, 'files/plan.json': '{}', 'files/pending.plan': '{}' });
    const cases: [string[], string][] = [
      [['dus-sync', ''], 'init validate plan apply watch export diff review status emulator schema completion help'],
      [['dus-sync', 'pl'], 'plan'],
      [['dus-sync', 'plan', '--format', ''], 'text json markdown'],
      [['dus-sync', 'plan', '--format', '=', 'j'], 'json'],
      [['dus-sync', 'apply', '--format', ''], 'text json'],
      [['dus-sync', '-c', 'x.yaml', 'validate', '--format', 'g'], 'github'],
      [['dus-sync', '-t', 'acme', 'apply', '--auto'], '--auto-approve'],
      [['dus-sync', 'apply', '--conf'], '--config'],
      [['dus-sync', 'apply', 'files/p'], 'files/pending.plan files/plan.json'],
      [['dus-sync', 'schema', 'f'], 'firmware'],
      [['dus-sync', 'completion', ''], 'bash zsh fish'],
      [['dus-sync', 'emulator', '--hostile', 'e'], 'echo endless'],
    ];
    const lines = cases.map(([words], i) => `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; COMPREPLY=(); _dus_sync; echo "${i}:\${COMPREPLY[*]}"`);
    writeFileSync(join(dir, 'try.bash'), `source ./c.bash\n${lines.join('\n')}\n`);
    const r = spawnSync('bash', ['try.bash'], { cwd: dir, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const got = r.stdout.trim().split('\n').map((l) => l.replace(/^\d+:/, '').split(' ').sort().join(' '));
    expect(got).toEqual(cases.map(([, want]) => want.split(' ').sort().join(' ')));
  });

  it.skipIf(!has('zsh'))('zsh -n accepts the zsh script (skipped: zsh is not installed)', () => {
    const dir = writeTree({ '_dus-sync': scripts.get('zsh')! });
    const r = spawnSync('zsh', ['-n', join(dir, '_dus-sync')], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it.skipIf(!has('fish'))('fish --no-execute accepts the fish script (skipped: fish is not installed)', () => {
    const dir = writeTree({ 'dus-sync.fish': scripts.get('fish')! });
    const r = spawnSync('fish', ['--no-execute', join(dir, 'dus-sync.fish')], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('refuses a shell it does not know', async () => {
    const r = await runCli(['completion', 'tcsh']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/Allowed choices are bash, zsh, fish/);
  });
});

describe('per-command --help', () => {
  it('lists the global options under every command', async () => {
    for (const c of surface.commands.filter((n) => n !== 'help')) {
      const help = (await runCli([c, '--help'])).stdout;
      expect(help, c).toMatch(/^Global Options:$/m);
      for (const o of surface.globals.filter((g) => g !== '--help')) expect(section(help, 'Global Options').join('\n'), `${c} ${o}`).toContain(o);
    }
  });
});
