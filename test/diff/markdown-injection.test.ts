// `diff --format markdown` runs on a fork's pull request and its output becomes a bot's comment:
// whatever the pull request names (a tenant, a phase, a component) must not leave its code span
// or its escaping as a team mention, a link, math or HTML. The diff and the plan share one
// escaper (src/core/render/markdown-escape.ts).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { escapeMarkdown } from '../../src/core/render/markdown-escape.js';
import { buildCli } from './built-cli.js';

const HOSTILE = '@github/security-team $\\color{red}{\\text{PWNED}}$ https://evil.example/login www.evil.example ops@evil.example <img src=x>';

/** The markdown outside code spans and <code>: what GitHub reads as prose. */
function prose(md: string): string {
  return md.replace(/<code>[\s\S]*?<\/code>/g, '').split('\n').map((l) => l.replace(/(`+)(?:(?!\1).)*?\1/g, '')).join('\n');
}

function expectInert(md: string): void {
  const text = prose(md);
  expect(text, 'a mention').not.toMatch(/@[\w-]/);
  expect(text, 'math').not.toContain('$');
  expect(text, 'a link').not.toMatch(/:\/\/|www\./i);
  expect(text, 'HTML').not.toContain('<img');
}

describe('the shared markdown escaper', () => {
  it('breaks mentions, e-mail addresses, bare links and math, and keeps the rest readable', () => {
    expect(escapeMarkdown('@team ops@evil.example https://evil.example www.evil.example $x$ plain: 1.0')).toBe(
      '&#64;&#8203;team ops&#64;&#8203;evil.example https&#58;&#8203;//evil.example www&#46;&#8203;evil.example &#36;x&#36; plain: 1.0');
    expectInert(escapeMarkdown(HOSTILE));
  });
});

describe('diff --base --format markdown, built CLI, a tenant named by the pull request', () => {
  const dirs: string[] = [];
  afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

  it('keeps the name in its code span, and the warning callout that repeats it inert', async () => {
    const { cli } = await buildCli();
    const repo = mkdtempSync(join(tmpdir(), 'dus-sync-diffmd-'));
    dirs.push(repo);
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd: repo });
    git('init', '-q', '-b', 'main');
    writeFileSync(join(repo, 'dus-sync.yaml'), 'apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:9\n');
    git('add', '.');
    git('commit', '-q', '-m', 'base');
    writeFileSync(join(repo, 'fw.yaml'), `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: ${JSON.stringify(HOSTILE)} }
spec: { version_number: "1.0.0", is_deactivated: true }
`);
    git('add', 'fw.yaml');
    const r = spawnSync(process.execPath, [cli, 'diff', '--base', 'main', '--format', 'markdown'], {
      cwd: repo, encoding: 'utf8', timeout: 20_000, env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1' },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(2);
    // The callout names the deactivation, with the name escaped, not as plain text.
    expect(r.stdout).toContain('> [!WARNING]');
    expect(r.stdout).toContain('will be deactivated');
    expectInert(r.stdout);
  });
});
