import { describe, expect, it } from 'vitest';
import type { ApplyReport, Plan } from '../../src/model/index.js';
import { renderJson } from '../../src/core/render/json.js';
import { renderMarkdown } from '../../src/core/render/markdown.js';
import { plan } from '../../src/core/plan.js';
import { renderApplyReport } from '../../src/core/render/report.js';
import { renderText } from '../../src/core/render/text.js';
import { action, desired, firmware, live, liveAction, liveFirmware, phase } from './builders.js';
import { richPlan, richReport } from './fixtures.js';

describe('renderText', () => {
  it('says "No changes." with the unchanged count when there is nothing to do', () => {
    const p = plan(desired(firmware({ version_number: '1.0.0' })), live({ acme: { firmwares: [liveFirmware({ version_number: '1.0.0' })] } }));
    expect(renderText(p, { color: true })).toBe('\u001b[1mNo changes. 1 unchanged.\u001b[22m\n');
  });

  it('ends with the summary line', () => {
    const lines = renderText(richPlan, { color: false }).trimEnd().split('\n');
    expect(lines.at(-1)).toBe('Plan: 3 firmware updates, 3 phase appends, 1 conflict, 2 errors. 3 unchanged.');
  });

  it('renders a plan read back from its JSON (a saved plan) exactly as the original', () => {
    const reloaded = JSON.parse(renderJson(richPlan)) as Plan;
    expect(renderText(reloaded, { color: false })).toBe(renderText(richPlan, { color: false }));
    expect(renderMarkdown(reloaded)).toBe(renderMarkdown(richPlan));
    expect(renderJson(reloaded)).toBe(renderJson(richPlan));
  });

  it('has no escape codes without colour', () => {
    expect(renderText(richPlan, { color: false })).not.toContain('\u001b');
  });

  it('keeps control characters from YAML out of the terminal', () => {
    const p = plan(
      desired(action(1, [phase('canary'), phase('evil\u001b[2J')])),
      live({ acme: { actions: [liveAction(1, ['canary'])] } }),
    );
    const out = renderText(p, { color: false });
    expect(out).not.toContain('\u001b');
    expect(out).toContain('+ phase 1 "evil\\u001b[2J" on action 1');
  });
});

describe('renderApplyReport', () => {
  it('ends with the totals and lists what did not converge', () => {
    const out = renderApplyReport(richReport, { color: false });
    expect(out).toContain('Apply: 4 applied, 1 failed, 1 skipped.\nNot converged (still different after apply):\n  - acme action 42: 2 phases still to append\n');
  });

  it('has only the totals for an empty apply', () => {
    const empty: ApplyReport = { results: [], applied: 0, failed: 0, skipped: 0, unconverged: [], diverged: [] };
    expect(renderApplyReport(empty, { color: false })).toBe('Apply: 0 applied, 0 failed, 0 skipped.\n');
  });
});
