import { describe, expect, it } from 'vitest';
import type { DesiredFirmware, LiveFirmware } from '../../src/model/index.js';
import { plan } from '../../src/core/plan.js';
import { decodeHTML } from 'entities';
import { escapeMarkdown, renderMarkdown } from '../../src/core/render/markdown.js';
import { escapeMermaid } from '../../src/core/render/markdown-escape.js';
import { rolloutMermaid } from '../../src/core/render/desired-diff-markdown.js';
import { action, desired, firmware, live, liveAction, liveFirmware, phase } from './builders.js';
import { richLive, richPlan } from './fixtures.js';

function balanced(md: string): void {
  expect(md.split('<details>').length).toBe(md.split('</details>').length);
  const fences = md.split('\n').filter((l) => /^`{3,}/.test(l));
  expect(fences.length % 2).toBe(0);
  expect(md.endsWith('\n')).toBe(true);
}

describe('renderMarkdown', () => {
  const footer = { toolVersion: '9.9.9', generatedAt: '2024-06-01T12:00:00.000Z', revision: { commit: 'f'.repeat(40), dirty: false } };

  it.each([600, 1500, 2500, 100_000])('ends with the provenance footer, kept within maxLength %i', (maxLength) => {
    const md = renderMarkdown(richPlan, { live: richLive, maxLength, footer });
    expect(md.length).toBeLessThanOrEqual(maxLength);
    expect(md.endsWith(`\n\n<sub>dus-sync 9.9.9 · from commit <code>ffffffffffff</code> · 2024-06-01T12:00:00.000Z</sub>\n`)).toBe(true);
    balanced(md);
  });

  it('says so when the desired state is not in git, and escapes a version it is given', () => {
    const md = renderMarkdown(richPlan, { footer: { toolVersion: '1.0.0-<b>x</b>', generatedAt: '2024-06-01T12:00:00.000Z' } });
    expect(md).toContain('<sub>dus-sync 1.0.0-&lt;b&gt;x&lt;/b&gt; · outside git (no commit) · 2024-06-01T12:00:00.000Z</sub>');
  });

  const fullLength = renderMarkdown(richPlan, { live: richLive }).length;

  it.each([300, 600, 1000, 1500, 2000, 2500, 3000])('stays within maxLength %i and valid', (maxLength) => {
    const md = renderMarkdown(richPlan, { live: richLive, maxLength });
    expect(fullLength).toBeGreaterThan(maxLength);
    expect(md.length).toBeLessThanOrEqual(maxLength);
    balanced(md);
    expect(md).toContain('run `dus-sync plan` locally for the full plan');
  });

  it('names every change in a compact list while the list fits', () => {
    const md = renderMarkdown(richPlan, { live: richLive, maxLength: 2500 });
    for (const key of ['2.4.1', '3.0.0', '7.1.0']) expect(md).toContain(`firmware <code>${key}</code>`);
    for (const key of ['42', '5']) expect(md).toContain(`action <code>${key}</code>`);
    expect(md).toContain('the details of 5 changes are not shown');
  });

  it('drops whole entries from the end, and says how many, when even the list does not fit', () => {
    const md = renderMarkdown(richPlan, { live: richLive, maxLength: 1800 });
    expect(md).toMatch(/… \d+ more (changes|entries \(changes, conflicts, errors\)) not shown/);
    expect(md).not.toContain('### globex');
  });

  it('keeps a plan of 2000 changes under GitHub’s comment limit', () => {
    const many = Array.from({ length: 2000 }, (_, i) => `1.0.${i}`);
    const p = plan(
      desired(...many.map((v) => firmware({ version_number: v, is_deactivated: true, uncompressed_size: 1 }))),
      live({ acme: { firmwares: many.map((v) => liveFirmware({ version_number: v })) } }),
    );
    const md = renderMarkdown(p);
    expect(md.length).toBeLessThanOrEqual(65536);
    expect(md.length).toBeGreaterThan(60000);
    balanced(md);
    expect(md).toMatch(/… \d+ more changes not shown/);
  });

  it('shows live phases as "phase N" when it is not given the live state', () => {
    const md = renderMarkdown(richPlan);
    expect(md).toContain('p0["phase 0"]');
    expect(md).toContain('p2["wave-2 (new)"]:::new');
  });

  it('uses the title it is given, escaped', () => {
    expect(renderMarkdown(richPlan, { title: 'plan for <prod> #1' }).split('\n')[0]).toBe('## plan for &lt;prod&gt; &#35;1');
  });

  it('says there is nothing to do for an empty plan', () => {
    const p = plan(desired(firmware({ version_number: '1.0.0' })), live({ acme: { firmwares: [liveFirmware({ version_number: '1.0.0' })] } }));
    const md = renderMarkdown(p);
    expect(md).toContain('**No changes. 1 unchanged.**');
    expect(md).toContain('| acme | 0 | 0 | 0 | 0 | 1 |');
    expect(md).not.toContain('[!WARNING]');
  });

  it('makes names from YAML inert in tables, HTML and mermaid', () => {
    const evil = 'x|y <img src=1> @everyone `z` ]]"';
    const p = plan(
      desired(action(1, [phase('canary'), phase(evil)])),
      live({ acme: { actions: [liveAction(1, ['canary'])] } }),
    );
    const md = renderMarkdown(p);
    expect(md).not.toContain('<img');
    // Mentions do not work inside a mermaid fence; everywhere else the @ is an entity.
    expect(md.replace(/```mermaid[\s\S]*?```/, '')).not.toContain('@everyone');
    expect(md).toContain('p1["x|y #60;img src=1#62; @everyone #96;z#96; ]]#34; (new)"]:::new');
    const row = md.split('\n').find((l) => l.startsWith('| 1 |'))!;
    expect(row.split(' | ')).toHaveLength(4);
  });

  it('escapes what markdown and HTML would interpret', () => {
    expect(escapeMarkdown('a|b <i>*x*</i> _y_ [l](u) @me $m$ #1 \\ ~s~')).toBe(
      'a&#124;b &lt;i&gt;&#42;x&#42;&lt;/i&gt; &#95;y&#95; &#91;l&#93;(u) &#64;&#8203;me &#36;m&#36; &#35;1 &#92; &#126;s&#126;',
    );
    expect(escapeMarkdown('line\nbreak')).toBe('line&#92;nbreak');
    expect(escapeMarkdown('a\u202eb\u001b[2Jc\u0085')).toBe('a&#92;u202eb&#92;u001b&#91;2Jc&#92;u0085');
  });

  it('fences a diff with more backticks than its content holds', () => {
    const weird: DesiredFirmware = firmware({ version_number: '1.0.0', dependencies: [{ component_name: '```evil', min_version: '1' }] });
    const record: LiveFirmware = liveFirmware({ version_number: '1.0.0' });
    const md = renderMarkdown(plan(desired(weird), live({ acme: { firmwares: [record] } })));
    expect(md).toContain('````diff\n');
    balanced(md);
  });
});

/**
 * What mermaid does to a flowchart's text, after its own encodeEntities/decodeEntities (mermaid
 * 10 and 11, mermaidAPI.ts): the `style`/`classDef` rules that cut a `;`, `#name;`/`#123;` to
 * placeholders before parsing, back to `&name;`/`&#123;` after, then decoded as HTML by the browser.
 * Returns the text of each ["…"] label as a reader sees it.
 */
function mermaidLabels(diagram: string): string[] {
  let t = diagram.replace(/style.*:\S*#.*;/g, (s) => s.slice(0, -1)).replace(/classDef.*:\S*#.*;/g, (s) => s.slice(0, -1));
  t = t.replace(/#\w+;/g, (s) => {
    const inner = s.slice(1, -1);
    return /^\+?\d+$/.test(inner) ? `\uFB02\u00B0\u00B0${inner}\u00B6\u00DF` : `\uFB02\u00B0${inner}\u00B6\u00DF`;
  });
  const labels = [...t.matchAll(/\["([^"]*)"\]/g)].map((m) => m[1]!);
  return labels.map((l) => decodeHTML(l.replace(/\uFB02\u00B0\u00B0/g, '&#').replace(/\uFB02\u00B0/g, '&').replace(/\u00B6\u00DF/g, ';')));
}

describe('mermaid labels', () => {
  const names = ['#1;', 'a;b', '#quot;', 'say "hi"', '<b>&amp;</b>', 'style:#1;', 'classDef x:#fff;', 'tick `x`', 'back\\slash', '\uFB02\u00B0 \u00B6\u00DF', 'wave:2 #35;'];

  it.each(names)('%s reads the same in the plan and the diff flowcharts', (name) => {
    const p = plan(desired(action(1, [phase('canary'), phase(name)])), live({ acme: { actions: [liveAction(1, ['canary'])] } }));
    const md = renderMarkdown(p);
    const diagram = md.slice(md.indexOf('```mermaid'), md.indexOf('```', md.indexOf('```mermaid') + 3));
    expect(mermaidLabels(diagram)).toContain(`${name} (new)`);
    expect(mermaidLabels(rolloutMermaid([{ name, trigger_on: {}, info: {} }], 0))).toEqual([`0: ${name} (new)`]);
  });

  it('writes only entity codes for what mermaid reads, never a raw quote, # or ;', () => {
    expect(escapeMermaid('#1; "x" a:b')).toBe('#35;1#59; #34;x#34; a#58;b');
  });
});

describe('long trigger_on and info', () => {
  it('go into a details block under the table, the cell says below', () => {
    const wide = { min_success_rate: 0.98, regions: ['eu-west-1', 'eu-central-1', 'us-east-1', 'ap-south-1'] };
    const p = plan(desired(action(1, [phase('canary'), { name: 'wide', trigger_on: wide, info: { percent: 5 } }])), live({ acme: { actions: [liveAction(1, ['canary'])] } }));
    const md = renderMarkdown(p);
    expect(md).toContain('| 1 | wide | <i>below</i> | <code>{&quot;percent&quot;:5}</code> |');
    expect(md).toContain('<summary>phase 1 wide: trigger&#95;on and info</summary>\n\n```json\n{\n  "trigger_on": {\n    "min_success_rate": 0.98,');
    balanced(md);
  });
});
