// A breaker's find: dus-sync.yaml is the repository's own, so a pull request can change its
// `resources`; a glob that climbs out of the repository (`../../home/ci/.config/*.yaml`) read
// those files and quoted their values in issues. Such a glob is refused at once, as a link out
// is, unless --follow-external-symlinks (Argo CD and kustomize keep to the repository the same way).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, treesRemovedAfterAll } from '../e2e/helpers.js';

const tree = treesRemovedAfterAll();

const firmware = (v: string, tenant = 'acme') => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: ${tenant} }\nspec:\n  version_number: "${v}"\n  component_name: modem\n  is_deactivated: false\n  uncompressed_size: 1\n  dependencies: []\n`;

describe('a resources glob that climbs out of the repository', () => {
  const top = tree({
    'repo/dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: {}\nresources: ["tenants/**/*.yaml", "../ci-home/config/*.yaml"]\n',
    'repo/tenants/a.yaml': firmware('1.0.0'),
    'ci-home/config/creds.yaml': firmware('6.6.6', 's3cr3t-token-from-outside'),
  });
  const repo = join(top, 'repo');

  for (const cmd of [['validate'], ['validate', '--format', 'json'], ['validate', '--format', 'github']]) {
    it(`is refused with one sentence, nothing outside read: ${cmd.join(' ')}`, async () => {
      const r = await runCli(cmd, { cwd: repo, env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined } });
      expect(r.code).toBe(1);
      const out = r.stdout + r.stderr;
      expect(out).not.toContain('s3cr3t');
      expect(out).not.toContain('6.6.6');
      expect(out).toMatch(/dus-sync\.yaml: the resources glob "\.\.\/ci-home\/config\/\*\.yaml" reaches outside the repository folder .*--follow-external-symlinks/);
      expect(out).not.toMatch(/\n\s+at /);
    });
  }

  it('is read with --follow-external-symlinks, which the operator passes, not the repository', async () => {
    const r = await runCli(['validate', '--follow-external-symlinks'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/unknown tenant "s3cr3t-token-from-outside"/);
  });
});

// A breaker's find: `..` after a glob's fixed part (`{../x}/*.yaml`) matched nothing outside, but
// read the repository's own x/ (picomatch's brace held a name no walk lists), silently: not what
// was written. Refused whatever the flags, naming the glob and where `..` may go.
describe('a resources glob holding ".." after its fixed part', () => {
  for (const glob of ['{../x}/*.yaml', 'tenants/{a,..}/*.yaml', '*/../x/*.yaml', '@(..)/x/*.yaml', '!{../x}/b.yaml']) {
    const top = tree({
      'repo/dus-sync.yaml': `apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\ntenants:\n  acme: {}\nresources: ["tenants/**/*.yaml", ${JSON.stringify(glob)}]\n`,
      'repo/tenants/a.yaml': firmware('1.0.0'),
      'repo/x/a.yaml': firmware('2.0.0'),
      'x/b.yaml': firmware('6.6.6', 's3cr3t-token-from-outside'),
    });
    const repo = join(top, 'repo');
    for (const flags of [[], ['--follow-external-symlinks']]) {
      it(`${glob} ${flags.join(' ')}: refused with one sentence, nothing read`, async () => {
        const r = await runCli(['validate', ...flags], { cwd: repo, env: { DUS_FOLLOW_EXTERNAL_SYMLINKS: undefined } });
        expect(r.code).toBe(1);
        const out = r.stdout + r.stderr;
        expect(out).not.toContain('s3cr3t');
        expect(out).toContain(`dus-sync.yaml: the resources glob ${JSON.stringify(glob)} holds ".." after its first wildcard or brace`);
        expect(out).toContain('write ".." only at its start');
        expect(out).not.toMatch(/\n\s+at /);
      });
    }
  }

  it('a ".." in the fixed part, or inside a bracket class, is not this refusal', async () => {
    const { climbsInGlob } = await import('../../src/load/index.js');
    expect(climbsInGlob('../x/*.yaml')).toBe(false);
    expect(climbsInGlob('tenants/../tenants/*.yaml')).toBe(false);
    expect(climbsInGlob('x/[..]/a.yaml')).toBe(false);
    expect(climbsInGlob('tenants/**/*.yaml')).toBe(false);
    expect(climbsInGlob('tenants/{a,b}/..yaml')).toBe(false);
    expect(climbsInGlob('tenants/{a,..}/*.yaml')).toBe(true);
    expect(climbsInGlob('**/../*.yaml')).toBe(true);
  });
});
