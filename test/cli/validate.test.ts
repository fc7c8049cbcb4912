// `dus-sync validate`: the three formats, and the built CLI end to end (exit codes, no stack).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderIssues } from '../../src/cli/validate.js';
import type { ConfigIssue } from '../../src/errors.js';

// `npm test` builds dist/ first; DUS_SYNC_CLI lets a developer point at another build.
const CLI = resolve(process.env.DUS_SYNC_CLI ?? 'dist/cli.js');
const FIXTURES = resolve('test/fixtures/load');

function cli(args: string[], cwd: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', ...env }, timeout: 20_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const issues: ConfigIssue[] = [
  { file: 'b.yaml', line: 3, column: 1, pointer: '/spec', message: 'second' },
  { file: 'a,b:c.yaml', line: 9, column: 2, pointer: '', message: 'odd, path: 100%\nnext line' },
  { file: 'b.yaml', line: 1, column: 5, pointer: '/kind', message: 'first' },
];

describe('renderIssues', () => {
  it('text: grouped by file, sorted, with a count; each issue on one line, its newlines escaped', () => {
    expect(renderIssues(issues, 'text', { files: 2, documents: 3 })).toBe(
      'a,b:c.yaml:9:2: odd, path: 100%\\nnext line\n\nb.yaml:1:5: first\nb.yaml:3:1: second\n\n3 problems in 2 files\n');
  });
  it('text: a valid run says how much it checked', () => {
    expect(renderIssues([], 'text', { files: 1, documents: 12 })).toBe('1 file, 12 documents: valid\n');
  });
  it('json: a stable sorted array, [] when valid', () => {
    const out = JSON.parse(renderIssues(issues, 'json', { files: 2, documents: 3 })) as unknown[];
    expect(out).toEqual([
      { file: 'a,b:c.yaml', line: 9, column: 2, pointer: '', message: 'odd, path: 100%\nnext line' },
      { file: 'b.yaml', line: 1, column: 5, pointer: '/kind', message: 'first' },
      { file: 'b.yaml', line: 3, column: 1, pointer: '/spec', message: 'second' },
    ]);
    expect(renderIssues([], 'json', { files: 0, documents: 0 })).toBe('[]\n');
  });
  it('github: workflow commands with the escapes GitHub requires', () => {
    expect(renderIssues(issues, 'github', { files: 2, documents: 3 }).split('\n')[0]).toBe(
      '::error file=a%2Cb%3Ac.yaml,line=9,col=2::odd, path: 100%25%0Anext line');
  });
});

describe('dus-sync validate (built CLI)', () => {
  it('names each planted error at its exact file and line, and nothing else (golden)', () => {
    const r = cli(['validate', '--format', 'github'], `${FIXTURES}/planted`);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(readFileSync(`${FIXTURES}/planted/expected.github.txt`, 'utf8'));
    expect(r.stderr).toBe('');
  });

  it('exits 0 on examples/ and prints the count', () => {
    const r = cli(['--config', 'examples/dus-sync.yaml', 'validate'], process.cwd());
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^\d+ files, \d+ documents: valid\n$/);
    expect(r.code).toBe(0);
  });

  it('needs no API key and ignores DUS_API_KEY being absent', () => {
    const r = cli(['validate', '--format', 'json'], `${FIXTURES}/same-version-other-tenant`);
    expect([r.code, r.stdout]).toEqual([0, '[]\n']);
  });

  it('reports a config-file error like any other issue, in json', () => {
    const r = cli(['validate', '--format', 'json'], `${FIXTURES}/bad-config`);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual([
      { file: 'dus-sync.yaml', line: 5, column: 3, pointer: '/safety/max_change', message: 'unknown field "max_change" in safety; did you mean "max_changes"?' },
      { file: 'dus-sync.yaml', line: 7, column: 13, pointer: '/watch/interval', message: 'interval must be a duration such as 30s, 5m or 1h' },
    ]);
  });

  it('paths are relative to the working folder, and broken input never shows a stack trace', () => {
    for (const name of ['binary', 'alias-bomb', 'proto-key', 'syntax-error', 'not-a-mapping']) {
      const r = cli(['--dir', `test/fixtures/load/${name}`, 'validate'], process.cwd(), { DUS_TENANT: 'acme' });
      expect(r.code, name).toBe(1);
      expect(r.stdout, name).toMatch(new RegExp(`^test/fixtures/load/${name}/\\S+:\\d+:\\d+: `));
      expect(r.stdout + r.stderr, name).not.toMatch(/\n\s+at /);
    }
  });

  it('a missing --config is one sentence on stderr, exit 1', () => {
    const r = cli(['--config', 'nope.yaml', 'validate'], FIXTURES);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: the config file nope.yaml does not exist; check --config\n');
    expect(r.stdout).toBe('');
  });
});
