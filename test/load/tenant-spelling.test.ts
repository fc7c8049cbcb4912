// Two spellings of one tenant in the documents (a config without a tenants: list, where each
// tenant's key is DUS_API_KEY): "acme" and "ACME" are one tenant to a server that ignores case,
// and would be planned and applied as two, each appending the same phase. An issue, at the
// second spelling's document; watch's incremental assembly falls back to the full one for it.
import { describe, expect, it } from 'vitest';
import { assemble, parseFile } from '../../src/load/index.js';
import { assembleFrom } from '../../src/load/incremental.js';
import type { ResolvedConfig } from '../../src/model/index.js';

const config: ResolvedConfig = { dir: process.cwd(), tenants: {}, safety: {}, watchIntervalMs: 300_000, suspend: false };
const action = (tenant: string, id: number) => `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: "${tenant}" }\nspec:\n  id: ${id}\n  phases:\n    - name: wave-1\n`;
const file = (path: string, text: string) => parseFile({ path, text }, config);

describe('two spellings of one tenant', () => {
  for (const [a, b] of [['acme', 'ACME'], ['acme', 'Acme'], ['acme', ' acme'], ['acme', 'acme\t']] as const) {
    it(`${JSON.stringify(a)} and ${JSON.stringify(b)}: an issue at the second`, () => {
      const r = assemble([file('a.yaml', action(a, 42)), file('b.yaml', action(b, 42))], config);
      expect(r.issues.map((i) => `${i.file}:${i.line} ${i.message}`)).toEqual([
        `b.yaml:1 tenant ${JSON.stringify(b)} of this document and ${JSON.stringify(a)} (a.yaml:1) may be one tenant to the service, which may ignore case and spaces at the ends: as two they would be planned and applied apart, and could append the same phase twice; write the name one way`,
      ]);
    });
  }

  it('one spelling in many documents, and different tenants: no issue', () => {
    const r = assemble([file('a.yaml', action('acme', 1) + '---\n' + action('acme', 2)), file('b.yaml', action('globex', 1)), file('c.yaml', action('acme', 3))], config);
    expect(r.issues).toEqual([]);
    expect(r.desired.actions).toHaveLength(4);
  });

  it('watch: a changed file that spells a tenant another way is assembled in full, and the issue reported', () => {
    const first = [file('a.yaml', action('acme', 1)), file('b.yaml', action('globex', 1))];
    const kept = assembleFrom(first, config, undefined, undefined);
    expect(kept.issues).toEqual([]);
    const next = assembleFrom([first[0]!, file('b.yaml', action('ACME', 2))], config, undefined, kept.assembly);
    expect(next.how).toBe('a tenant is spelt two ways');
    expect(next.issues.map((i) => i.message)).toEqual([expect.stringContaining('tenant "ACME" of this document and "acme" (a.yaml:1) may be one tenant')]);
  });
});
