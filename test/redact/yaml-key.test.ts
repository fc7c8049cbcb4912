// A key pasted into a desired-state file by mistake: every command that quotes the file (validate
// in each format, diff, and plan, status and apply, which report load errors before they read
// any key) shows it [REDACTED], because every key the config can name is known to redaction as
// soon as the config is read (src/load/config.ts).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const CLI = resolve(process.env.DUS_SYNC_CLI ?? 'dist/cli.js');
const KEY = 'Zq8vR2mK7pXw4Lb9Tn3Hc6Yd1Fs5Gj0A';
const dir = mkdtempSync(join(tmpdir(), 'dus-yaml-key-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: dir, encoding: 'utf8', timeout: 30_000,
    env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(dir, '.state'), ...env },
  });
  return `${r.stdout}\n${r.stderr}`;
}

function expectNoKey(out: string, what: string) {
  for (let i = 0; i + 8 <= KEY.length; i++) expect(out.includes(KEY.slice(i, i + 8)), `${what}: ${out}`).toBe(false);
}

describe('a key typed into a desired-state file', () => {
  mkdirSync(join(dir, 'tenants'), { recursive: true });
  writeFileSync(join(dir, 'dus-sync.yaml'), 'apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:9\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\nresources: ["tenants/*.yaml"]\n');
  const action = (name: string) => `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: 7\n  phases:\n    - name: ${name}\n      info: { note: "${name}" }\n`;
  writeFileSync(join(dir, 'tenants/a.yaml'), action('wave-1'));
  execFileSync('git', ['init', '-q'], { cwd: dir });
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', 'add', '.'], { cwd: dir });
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-qm', 'base'], { cwd: dir });

  it('in a value apply would send, is an issue of diff (every format), validate, plan and apply: nothing is sent', () => {
    writeFileSync(join(dir, 'tenants/a.yaml'), action(`wave-${KEY}`));
    for (const args of [['diff', '--base', 'HEAD'], ['diff', '--base', 'HEAD', '--format', 'json'], ['diff', '--base', 'HEAD', '--format', 'markdown'], ['validate'], ['plan'], ['apply', '--auto-approve']]) {
      const r = spawnSync(process.execPath, [CLI, ...args], {
        cwd: dir, encoding: 'utf8', timeout: 30_000,
        env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', DUS_API_KEY_ACME: KEY, DUS_SYNC_STATE_DIR: join(dir, '.state') },
      });
      const out = `${r.stdout}\n${r.stderr}`;
      expect(r.status, `${args.join(' ')}: ${out}`).toBe(1);
      expect(out).toContain('tenants/a.yaml:7:13: spec.phases.0.name holds an API key or part of one (shown as [REDACTED])');
      expectNoKey(out, args.join(' '));
    }
  });

  it('is [REDACTED] in the markdown of diff when its characters are ones the markdown and mermaid escapes respell', () => {
    const odd = 'ab1:cd2;ef3#gh4:ij5;kl6@mn7';
    // A phase named by the key in the base (a change that takes it out is diffed): shown in the
    // list and in the mermaid chart, and escaped there.
    writeFileSync(join(dir, 'tenants/a.yaml'), `${action('wave-1')}    - name: ${odd}\n`);
    const git = (...a: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...a], { cwd: dir });
    git('add', '.');
    git('commit', '-qm', 'with the key');
    writeFileSync(join(dir, 'tenants/a.yaml'), `${action('wave-1')}    - name: wave-2\n`);
    const out = run(['diff', '--base', 'HEAD', '--format', 'markdown'], { DUS_API_KEY_ACME: odd });
    // As GitHub shows it: mermaid's #58; and HTML's &#64; decoded, zero-width spaces dropped.
    const shown = out.replace(/&?#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n))).replace(/\u200b/g, '');
    expect(out).toContain('[REDACTED]');
    expect(out).not.toContain('holds an API key');
    for (let i = 0; i + 8 <= odd.length; i++) expect(shown.includes(odd.slice(i, i + 8)), shown).toBe(false);
    git('reset', '-q', '--hard', 'HEAD~1');
  });

  // A breaker typed the key as a field name: review's list of problems escaped the message
  // (`@` as &#64;&#8203;) before the output's redaction, which then no longer found the key.
  it('is [REDACTED] in review\'s list of problems when the escapes would respell it', () => {
    for (const key of ['p@ss1', 'Zk3wQ9@xLm2Pq@7Rt5Yv@', 'www.k3y']) {
      writeFileSync(join(dir, 'tenants/a.yaml'), action('wave-1').replace('  id: 7\n', `  id: 7\n  "${key}": 1\n`));
      const out = run(['review', '--platform', 'none', '--mode', 'diff', '--base', 'HEAD'], { DUS_API_KEY_ACME: key });
      const shown = out.replace(/&?#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n))).replace(/\u200b/g, '');
      expect(out, key).toContain('[REDACTED]');
      expect(shown.includes(key), shown).toBe(false);
    }
    writeFileSync(join(dir, 'tenants/a.yaml'), action('wave-1'));
  });

  it('is [REDACTED] in an issue of dus-sync.yaml itself, whichever variable or file holds it', () => {
    const config = (extra: string) => `apiVersion: dus-sync/v1\nkind: Config\nbase_url: http://127.0.0.1:9\ntenants:\n  acme: { api_key_env: DUS_API_KEY_ACME }\n  globex: { api_key_file: globex.key }\nresources: ["tenants/*.yaml"]\n${extra}`;
    const sub = join(dir, 'cfg');
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, 'globex.key'), `${KEY}\n`);
    for (const [extra, env] of [[`${KEY}: 1\n`, {}], [`default_tenant: ${KEY}\n`, { DUS_API_KEY_ACME: 'other-key-123456' }], [`${KEY}: 1\n`, { DUS_API_KEY_ACME: 'other-key-123456', DUS_API_KEY: KEY }]] as const) {
      writeFileSync(join(sub, 'dus-sync.yaml'), config(extra));
      for (const args of [['validate'], ['validate', '--format', 'json'], ['plan']]) {
        const out = run(['--config', 'cfg/dus-sync.yaml', ...args], env);
        expect(out, args.join(' ')).toMatch(/unknown field|default_tenant/);
        expectNoKey(out, `${args.join(' ')} with ${extra}`);
      }
    }
  });

  it('is [REDACTED] in the issues of validate (every format), plan, status and apply', () => {
    writeFileSync(join(dir, 'tenants/b.yaml'), `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "1.0"\n  ${KEY}: 5\n`);
    for (const args of [['validate'], ['validate', '--format', 'json'], ['validate', '--format', 'github'], ['plan', '--no-read-ahead'], ['status'], ['apply', '--auto-approve']]) {
      const out = run(args);
      expect(out, args.join(' ')).toContain('unknown field');
      expectNoKey(out, args.join(' '));
    }
  });
});
