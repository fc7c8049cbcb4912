import { describe, expect, it } from 'vitest';
import { diffDesired } from '../../src/core/desired-diff.js';
import { renderDiffJson } from '../../src/core/render/desired-diff-json.js';
import { mdCellCode, mdCode, renderDiffMarkdown, rolloutMermaid } from '../../src/core/render/desired-diff-markdown.js';
import { renderDiffText } from '../../src/core/render/desired-diff-text.js';
import { action, fw, phase, state } from './builders.js';

const base = state(
  fw('2.4.1', { component_name: 'modem', is_deactivated: false, dependencies: [{ component_name: 'bootloader', min_version: '1.2.0' }] }),
  fw('1.0.0', { component_name: 'modem' }),
  action(42, [phase('canary', { after_minutes: 60 }, { percent: 1 })]),
  action(7, [phase('a'), phase('b')]),
);
const head = state(
  fw('2.4.1', { component_name: 'modem', is_deactivated: true, dependencies: [{ component_name: 'bootloader', min_version: '1.3.0' }] }),
  fw('3.0.0', { component_name: 'radio' }),
  action(42, [phase('canary', { after_minutes: 60 }, { percent: 1 }), phase('wave-1', { min_success_rate: 0.98 }, { percent: 10 })]),
  action(7, [phase('a', { changed: true })]),
);
const diff = diffDesired(base, head);

describe('text', () => {
  const text = renderDiffText(diff, { base: 'HEAD' });
  it('names every firmware, field, dependency and phase', () => {
    expect(text).toContain('Desired state: HEAD → working tree');
    expect(text).toContain('~ firmware "2.4.1" (modem)');
    expect(text).toContain('is_deactivated: false → true');
    expect(text).toContain('~ bootloader min_version "1.2.0" → "1.3.0"');
    expect(text).toContain('+ firmware "3.0.0" (radio)');
    expect(text).toContain('      no managed fields\n');
    expect(text).toContain('- firmware "1.0.0" (modem)');
    expect(text).toContain('+ phase 1 "wave-1" trigger_on {"min_success_rate":0.98} info {"percent":10}');
    expect(text).toContain('! phase 0 changed');
    expect(text).toContain('! phase 1 removed');
    expect(text).toMatch(/Warnings\n/);
  });
  it('ends with one summary line', () => {
    expect(text.trimEnd().split('\n').at(-1)).toBe('firmwares: 1 changed, 1 added, 1 removed; actions: 2 changed; 1 phase appended; 1 deactivation; 4 warnings.');
  });
  it('has no colour codes without a painter, and says so when nothing differs', () => {
    expect(text).not.toContain('\u001b[');
    expect(renderDiffText(diffDesired(base, base), { base: 'HEAD' })).toContain('No differences in the desired state.');
  });
});

describe('json', () => {
  it('is a stable document: same input, same bytes, fixed top-level order', () => {
    const a = renderDiffJson(diff, { base: 'HEAD', baseCommit: 'abc' });
    expect(renderDiffJson(diffDesired(base, head), { base: 'HEAD', baseCommit: 'abc' })).toBe(a);
    const doc = JSON.parse(a) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual(['format_version', 'base', 'head', 'summary', 'entries', 'warnings']);
    expect(doc.base).toEqual({ ref: 'HEAD', commit: 'abc' });
    expect((doc.summary as Record<string, number>).phases_appended).toBe(1);
  });
});

describe('markdown', () => {
  const md = renderDiffMarkdown(diff, { base: 'origin/main' });
  it('starts with a heading and the summary table, then risk callouts, then a section per tenant', () => {
    const heading = md.indexOf('## dus-sync diff');
    const table = md.indexOf('| tenant |');
    const warning = md.indexOf('> [!WARNING]');
    const section = md.indexOf('\n### acme\n');
    expect(heading).toBe(0);
    expect(table).toBeGreaterThan(heading);
    expect(warning).toBeGreaterThan(table);
    expect(section).toBeGreaterThan(warning);
    expect(md).toContain('<details open><summary>');
    expect(md).toContain('</details>');
  });
  it('holds every difference', () => {
    expect(md).toContain('`2.4.1`');
    expect(md).toContain('`is_deactivated`: `false` → `true`');
    expect(md).toContain('dependency `~ bootloader min_version "1.2.0" → "1.3.0"`');
    expect(md).toContain('| ➕ | `3.0.0` | `radio` | added to git: `no managed fields` |');
    const added = renderDiffMarkdown(diffDesired(state(), state(fw('4.0', { is_deactivated: true, dependencies: [{ component_name: 'boot', min_version: '1.10' }] }))), { base: 'b' });
    expect(added).toContain('added to git: `is_deactivated: true, dependencies: boot >= "1.10"`');
    expect(md).toContain('`1.0.0`');
    expect(md).toContain('phase 1 `wave-1`');
  });
  it('draws the rollout with the new phases highlighted', () => {
    expect(md).toContain('```mermaid\nflowchart LR\n  p0["0: canary"] --> p1["1: wave-1 (new)"]');
    expect(rolloutMermaid([phase('say "hi" <b>')], 1)).toContain('p0["0: say #34;hi#34; #60;b#62;"]');
    expect(rolloutMermaid([phase('#1;')], 1)).toContain('p0["0: #35;1#59;"]');
  });
  it('escapes pipes, backticks and HTML from names', () => {
    // A backslash is literal in a code span: only a table cell needs `\|` (GitHub drops it there).
    expect(mdCode('a|b')).toBe('`a|b`');
    expect(mdCellCode('a|b')).toBe('`a\\|b`');
    expect(mdCode('a`b')).toBe('`` a`b ``');
    const evil = renderDiffMarkdown(diffDesired(state(), state(fw('1', { component_name: '<script>|x' }))), { base: 'b' });
    expect(evil).toContain('`<script>\\|x`');
    expect(evil).not.toMatch(/\| <script>/);
    const listed = renderDiffMarkdown(diffDesired(state(action(9, [phase('a|b')])), state(action(9, [phase('a|b'), phase('c|d', { x: 'y|z' })]))), { base: 'b' });
    expect(listed).toContain('- ➕ phase 1 `c|d`: trigger_on `{"x":"y|z"}`, info `{}`');
    expect(listed).not.toContain('\\|');
  });
  it('stays under the limit with a note when there is too much', () => {
    const many = state(...Array.from({ length: 3000 }, (_, i) => fw(`1.0.${i}`, { component_name: 'modem', is_deactivated: true })));
    const big = renderDiffMarkdown(diffDesired(state(), many), { base: 'origin/main' });
    expect(big.length).toBeLessThanOrEqual(60_000);
    expect(big).toMatch(/\d+ more entries are not shown/);
    expect(big).toContain('</details>');
    expect((big.match(/<details/g) ?? []).length).toBe((big.match(/<\/details>/g) ?? []).length);
    const small = renderDiffMarkdown(diffDesired(state(), many), { base: 'x', maxLength: 5000 });
    expect(small.length).toBeLessThanOrEqual(5000);
  });
  it('moves long trigger_on and info JSON out of the list into a details block', () => {
    const long = { min_success_rate: 0.98, regions: ['eu-west-1', 'eu-central-1', 'us-east-1', 'ap-south-1'] };
    const out = renderDiffMarkdown(diffDesired(state(action(9, [phase('a')])), state(action(9, [phase('a'), phase('wide', long)]))), { base: 'b' });
    expect(out).toContain('- ➕ phase 1 `wide`: trigger_on and info below');
    expect(out).toContain('<summary>phase 1 wide: trigger&#95;on and info</summary>\n\n```json\n{\n  "trigger_on": {\n    "min_success_rate": 0.98,');
    expect(out).not.toContain('eu-west-1","eu-central-1');
  });
  it('says there is no difference plainly', () => {
    expect(renderDiffMarkdown(diffDesired(base, base), { base: 'HEAD' })).toContain('No differences in the desired state.');
  });
});

describe('golden', () => {
  // Review a change to this file like a change to the product; update with: npx vitest run test/diff/render.test.ts -u
  it('diff markdown: headings, tables and lists in the plan comment\'s style', async () => {
    const wide = { min_success_rate: 0.98, regions: ['eu-west-1', 'eu-central-1', 'us-east-1', 'ap-south-1'] };
    const b = state(...base.firmwares, ...base.actions, action(8, [phase('a|b')]));
    const h = state(...head.firmwares, ...head.actions, action(8, [phase('a|b'), phase('#1; "quoted"', wide, { percent: 5 })]));
    await expect(renderDiffMarkdown(diffDesired(b, h), { base: 'origin/main' })).toMatchFileSnapshot('../golden/diff.md');
  });
});
