// The bounds of review's comment, and the path re-basing, without a process or a server.
import { describe, expect, it } from 'vitest';
import { plan } from '../../src/core/plan.js';
import { renderMarkdown } from '../../src/core/render/markdown.js';
import { bounded, COMMENT_LIMIT, defaultBase, detectPlatform } from '../../src/cli/review.js';
import { codeQualityReport, fromRoot, workflowCommands } from '../../src/review/annotations.js';
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
