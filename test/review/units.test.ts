// The bounds of review's comment, and the path re-basing, without a process or a server.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plan } from '../../src/core/plan.js';
import { renderMarkdown } from '../../src/core/render/markdown.js';
import { bounded, COMMENT_LIMIT, defaultBase, detectPlatform, keySourceChange } from '../../src/cli/review.js';
import { codeQualityReport, fromRoot, superprojectOf, workflowCommands } from '../../src/review/annotations.js';
import { markerFor } from '../../src/review/sticky.js';
import { desired, firmware, live, liveFirmware } from '../core/builders.js';

describe('the comment stays under GitHub\'s 65,536 characters', () => {
  it('a plan of 3000 changes, with the marker', () => {
    const many = Array.from({ length: 3000 }, (_, i) => `1.0.${i}`);
    const p = plan(
      desired(...many.map((v) => firmware({ version_number: v, is_deactivated: true, uncompressed_size: 1 }))),
      live({ acme: { firmwares: many.map((v) => liveFirmware({ version_number: v })) } }),
    );
    const body = `${markerFor(undefined)}\n${bounded(renderMarkdown(p, { maxLength: COMMENT_LIMIT - 1024 - 600 }), COMMENT_LIMIT - 1024)}`;
    expect(body.length).toBeLessThan(COMMENT_LIMIT);
    expect(body).toMatch(/more changes not shown/);
  });

  it('bounded() cuts at a line, with a note, and leaves short text alone', () => {
    expect(bounded('a\nb\n', 100)).toBe('a\nb\n');
    const cut = bounded('line\n'.repeat(1000), 300);
    expect(cut.length).toBeLessThanOrEqual(300);
    expect(cut).toMatch(/line\n\n> \[!NOTE\]\n> … cut to stay under the comment size limit\.\n$/);
  });
});

describe('paths from the repository root', () => {
  it('re-bases a path shown relative to the working folder', () => {
    expect(fromRoot('tenants/a.yaml', '/repo/config', '/repo')).toBe('config/tenants/a.yaml');
    expect(fromRoot('../other/b.yaml', '/repo/config', '/repo')).toBe('other/b.yaml');
    expect(fromRoot('tenants/a.yaml', '/repo', '/repo')).toBe('tenants/a.yaml');
    // Outside the repository, or no repository: as it was.
    expect(fromRoot('../../x.yaml', '/repo/config', '/repo')).toBe('../../x.yaml');
    expect(fromRoot('tenants/a.yaml', '/repo/config', undefined)).toBe('tenants/a.yaml');
  });

  it('escapes file names and messages in workflow commands, and fingerprints Code Quality issues stably', () => {
    const f = { severity: 'error' as const, file: 'a,b:c.yaml', line: 3, column: 2, title: 'invalid', message: 'bad\n::error::x 100%' };
    expect(workflowCommands([f])).toBe('::error file=a%2Cb%3Ac.yaml,line=3,col=2,title=dus-sync%3A invalid::bad%0A::error::x 100%25\n');
    const a = JSON.parse(codeQualityReport([f])) as { fingerprint: string }[];
    const b = JSON.parse(codeQualityReport([{ ...f, line: 9 }])) as { fingerprint: string }[];
    expect(a[0]!.fingerprint).toBe(b[0]!.fingerprint);
  });
});

describe('where and against what', () => {
  it('finds the platform and the base from the CI environment', () => {
    expect(detectPlatform('auto', { GITHUB_ACTIONS: 'true' })).toBe('github');
    expect(detectPlatform('auto', { GITLAB_CI: 'true' })).toBe('gitlab');
    expect(detectPlatform('auto', {})).toBe('none');
    expect(detectPlatform('none', { GITHUB_ACTIONS: 'true' })).toBe('none');
    expect(defaultBase({ GITHUB_BASE_REF: 'main' })).toBe('origin/main');
    expect(defaultBase({ CI_MERGE_REQUEST_DIFF_BASE_SHA: 'abc', CI_MERGE_REQUEST_TARGET_BRANCH_NAME: 'main' })).toBe('abc');
    expect(defaultBase({})).toBeUndefined();
  });

  it('a marker per name, and only plain names', () => {
    expect(markerFor('prod')).toBe('<!-- dus-sync-plan:prod -->');
    expect(() => markerFor('x -->')).toThrow(/--marker/);
  });
});

describe('the keys go only where the base config sends them (keySourceChange)', () => {
  const url = 'https://dus.example.com';
  const base = { base_url: url, tenants: { acme: { api_key_env: 'DUS_API_KEY_ACME' }, globex: { api_key_file: 'keys/globex' } } };
  const head = (tenants: Record<string, { apiKeyEnv?: string; apiKeyFile?: string; tenantId?: string }>, baseUrl = url) => ({ baseUrl, tenants });
  const same = { acme: { apiKeyEnv: 'DUS_API_KEY_ACME' }, globex: { apiKeyFile: 'keys/globex' } };

  it('nothing moved: undefined, also with another tenant_id (it checks answers, the key and its header stay)', () => {
    expect(keySourceChange(base, head(same), ['acme', 'globex'], {})).toBeUndefined();
    expect(keySourceChange(base, head({ ...same, acme: { apiKeyEnv: 'DUS_API_KEY_ACME', tenantId: 'other' } }), ['acme'], {})).toBeUndefined();
  });

  it('a tenant the base does not list, with its own variable or with DUS_API_KEY, is added', () => {
    expect(keySourceChange(base, head({ ...same, evil: { apiKeyEnv: 'GITHUB_TOKEN' } }), ['evil'], {})).toBe('tenant evil added');
    expect(keySourceChange(base, head({ ...same, evil: {} }), ['evil'], {})).toBe('tenant evil added');
    // Listed only: its key is never read, but it is where the change says it would be.
    expect(keySourceChange(base, head({ ...same, evil: { apiKeyFile: '/proc/self/environ' } }), [], {})).toBe('tenant evil added');
  });

  it('a renamed tenant that keeps another\'s variable is added', () => {
    expect(keySourceChange(base, head({ initech: { apiKeyEnv: 'DUS_API_KEY_ACME' }, globex: { apiKeyFile: 'keys/globex' } }), ['initech'], {})).toBe('tenant initech added');
  });

  it('another variable, another file, or the DUS_API_KEY fallback instead of the base\'s source: changed', () => {
    expect(keySourceChange(base, head({ ...same, acme: { apiKeyEnv: 'GITHUB_TOKEN' } }), ['acme'], {})).toBe('the key source of tenant acme changed');
    expect(keySourceChange(base, head({ ...same, globex: { apiKeyFile: '../../.git-credentials' } }), ['globex'], {})).toBe('the key source of tenant globex changed');
    expect(keySourceChange(base, head({ ...same, acme: {} }), ['acme'], {})).toBe('the key source of tenant acme changed');
    // The tenants: list removed: acme's documents would be sent with DUS_API_KEY.
    expect(keySourceChange(base, head({}), ['acme'], {})).toBe('the key source of tenant acme changed');
  });

  it('a base without a tenants: list sends DUS_API_KEY for any tenant, and nothing else', () => {
    const single = { base_url: url };
    expect(keySourceChange(single, head({}), ['acme', 'evil'], {})).toBeUndefined();
    expect(keySourceChange(single, head({ evil: {} }), ['evil'], {})).toBeUndefined();
    expect(keySourceChange(single, head({ evil: { apiKeyEnv: 'GITHUB_TOKEN' } }), ['evil'], {})).toBe('the key source of tenant evil changed');
  });

  it('base_url: changed, unless DUS_BASE_URL (which wins on both sides) is set', () => {
    expect(keySourceChange(base, head(same, 'https://evil.example.com'), ['acme'], {})).toBe('base_url changed');
    expect(keySourceChange(base, head(same, 'https://ci.example.com'), ['acme'], { DUS_BASE_URL: 'https://ci.example.com' })).toBeUndefined();
  });
});

describe('superprojectOf (review sends no key from a config in a submodule: its base ref is the submodule\'s own)', () => {
  it('names the outer working tree for a folder of a submodule, and nothing for the outer repository or a plain folder', () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dus-submodule-')));
    const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'protocol.file.allow=always', ...args], { cwd, encoding: 'utf8', env: { ...process.env, GIT_CEILING_DIRECTORIES: root } });
    const inner = join(root, 'inner');
    mkdirSync(inner);
    git(inner, 'init', '-q', '-b', 'main');
    writeFileSync(join(inner, 'dus-sync.yaml'), 'apiVersion: dus-sync/v1\nkind: Config\n');
    git(inner, 'add', '-A');
    git(inner, 'commit', '-qm', 'staging');
    const outer = join(root, 'outer');
    mkdirSync(outer);
    git(outer, 'init', '-q', '-b', 'main');
    git(outer, 'submodule', '-q', 'add', inner, 'config');
    return Promise.all([superprojectOf(join(outer, 'config')), superprojectOf(outer), superprojectOf(root)]).then(([sub, top, none]) => {
      expect(sub).toBe(outer);
      expect(top).toBeUndefined();
      expect(none).toBeUndefined();
    });
  });
});
