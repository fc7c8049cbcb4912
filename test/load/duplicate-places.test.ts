// The duplicate check keeps each first definition's place as a small number into typed arrays
// that grow (src/load/index.ts, Places): past their first size, a duplicate still names the
// first definition's file and line.
import { describe, expect, it } from 'vitest';
import { loadDocuments } from '../../src/load/index.js';
import type { ResolvedConfig } from '../../src/model/index.js';

const config: ResolvedConfig = { dir: process.cwd(), defaultTenant: 'acme', tenants: { acme: {} }, safety: {}, watchIntervalMs: 300_000, suspend: false };

const firmware = (v: string) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "${v}"\n  component_name: modem\n  is_deactivated: false\n  uncompressed_size: 1\n  dependencies: []\n`;

describe('the duplicate check past thousands of identities', () => {
  it('names the first definition of the 2,500th of 3,000 firmwares, in its own file and line', () => {
    // 30 files of 100 documents (9 lines each, the version on the 5th line of each).
    const files = Array.from({ length: 30 }, (_, f) => ({
      path: `fw-${String(f).padStart(2, '0')}.yaml`,
      text: Array.from({ length: 100 }, (_, d) => firmware(`1.0.${f * 100 + d}`)).join('---\n'),
    }));
    files.push({ path: 'z-again.yaml', text: `# again\n${firmware('1.0.2499')}---\n${firmware('1.0.7')}` });
    const { issues, desired } = loadDocuments(files, config);
    expect(desired.firmwares).toHaveLength(3000);
    expect(issues.map((i) => `${i.file}:${i.line} ${i.message}`)).toEqual([
      // 1.0.2499: file 24, document 99, whose first line is 99 × 10 + 1 (9 lines and a separator each).
      'z-again.yaml:6 firmware "1.0.2499" of tenant "acme" is defined twice; the first definition is at fw-24.yaml:995; keep one',
      'z-again.yaml:16 firmware "1.0.7" of tenant "acme" is defined twice; the first definition is at fw-00.yaml:75; keep one',
    ]);
  });
});
