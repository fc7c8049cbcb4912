// Golden files for the renderers: review a change to one of them like a change to the product.
// Update after an intended change with: npx vitest run test/core -u
import { describe, expect, it } from 'vitest';
import { renderJson } from '../../src/core/render/json.js';
import { renderMarkdown } from '../../src/core/render/markdown.js';
import { renderApplyReport } from '../../src/core/render/report.js';
import { renderText } from '../../src/core/render/text.js';
import { richLive, richPlan, richReport } from './fixtures.js';

// The footer as plan --format markdown writes it: tool, commit (dirty) and time, all fixed here.
const footer = { toolVersion: '1.2.3', generatedAt: '2024-06-01T12:00:00.000Z', revision: { commit: '0123456789abcdef0123456789abcdef01234567', dirty: true } };

describe('golden renderings of one rich plan', () => {
  it('text without colour', async () => {
    await expect(renderText(richPlan, { color: false })).toMatchFileSnapshot('../golden/plan.txt');
  });

  it('text with colour', async () => {
    await expect(renderText(richPlan, { color: true })).toMatchFileSnapshot('../golden/plan.color.txt');
  });

  it('json', async () => {
    await expect(renderJson(richPlan)).toMatchFileSnapshot('../golden/plan.json');
  });

  it('markdown with the live phases', async () => {
    await expect(renderMarkdown(richPlan, { live: richLive, footer })).toMatchFileSnapshot('../golden/plan.md');
  });

  it('markdown shrunk to 2500 characters', async () => {
    await expect(renderMarkdown(richPlan, { live: richLive, maxLength: 2500, footer })).toMatchFileSnapshot('../golden/plan.truncated.md');
  });

  it('the apply report', async () => {
    await expect(renderApplyReport(richReport, { color: false })).toMatchFileSnapshot('../golden/report.txt');
  });

  it('the apply report with colour', async () => {
    await expect(renderApplyReport(richReport, { color: true })).toMatchFileSnapshot('../golden/report.color.txt');
  });
});
