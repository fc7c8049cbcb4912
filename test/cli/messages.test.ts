// The newcomer's messages (issue 13), through the built CLI: bad input gets one sentence naming
// the file, the line and what to do, exit 1, and never a stack trace.
import { describe, expect, it } from 'vitest';
import { runCli, writeTree } from '../e2e/helpers.js';

const FIRMWARE_HEAD = 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata:\n  tenant: acme\nspec:\n  version_number: "2.4.1"\n';

/** `validate` of one file a.yaml (tenant acme, no config): its stdout lines, without the count. */
async function validateOne(text: string): Promise<{ code: number | null; lines: string[]; stderr: string }> {
  const dir = writeTree({ 'a.yaml': text });
  const r = await runCli(['--dir', dir, 'validate'], { cwd: dir, env: { DUS_TENANT: 'acme' } });
  return { code: r.code, lines: r.stdout.split('\n').filter((l) => l.startsWith('a.yaml:')), stderr: r.stderr };
}

describe('YAML indentation', () => {
  it('a line indented too far is reported at that line, not at the line above', async () => {
    const r = await validateOne(FIRMWARE_HEAD + '  is_deactivated: true\n      uncompressed_size: 5\n');
    expect(r.code).toBe(1);
    expect(r.lines).toEqual(['a.yaml:8:7: YAML syntax error: this line is indented more than "is_deactivated" on line 7, whose value is already given; line it up with "is_deactivated" (or fix line 7)']);
  });

  it('the same in metadata, in a list item, and across a blank line and a comment', async () => {
    const meta = await validateOne('apiVersion: dus-sync/v1\nkind: Firmware\nmetadata:\n  tenant: acme\n   labels: { team: radio }\nspec:\n  version_number: "1"\n');
    expect(meta.lines).toEqual([expect.stringMatching(/^a\.yaml:5:4: YAML syntax error: this line is indented more than "tenant" on line 4/)]);
    const item = await validateOne(FIRMWARE_HEAD + '  dependencies:\n    - component_name: radio\n       min_version: "1.0"\n');
    expect(item.lines).toEqual([expect.stringMatching(/^a\.yaml:9:8: YAML syntax error: this line is indented more than "component_name" on line 8/)]);
    const gap = await validateOne(FIRMWARE_HEAD + '  is_deactivated: true\n\n  # size\n      uncompressed_size: 5\n');
    expect(gap.lines).toEqual([expect.stringMatching(/^a\.yaml:10:7: YAML syntax error: this line is indented more than "is_deactivated" on line 7/)]);
  });

  it('a quoted value above (yaml reports column 1 of the line) points at where the line starts', async () => {
    const r = await validateOne(FIRMWARE_HEAD + '    is_deactivated: true\n');
    expect(r.lines).toEqual([expect.stringMatching(/^a\.yaml:7:5: YAML syntax error: this line is indented more than "version_number" on line 6/)]);
  });
});
