// DESIGN.md: core/ is pure. It imports nothing from api/, apply/, agent/, emulator/, load/ or
// node:*, and reads no clock and no randomness, so plan() and the renderers stay testable and
// deterministic. This test keeps that true as the code grows.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const CORE = join(import.meta.dirname, '..', '..', 'src', 'core');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []);
}

describe('the pure core', () => {
  const sources = files(CORE).map((f) => ({ f, text: readFileSync(f, 'utf8') }));

  it('has files to check', () => {
    expect(sources.length).toBeGreaterThan(5);
  });

  it.each(sources.map((s) => [s.f.slice(CORE.length + 1), s.text]))('%s imports no I/O module and reads no clock or randomness', (_name, text) => {
    const imports = [...text.matchAll(/from '([^']+)'/g)].map((m) => m[1]!);
    expect(imports.filter((i) => i.startsWith('node:') || /\/(api|apply|agent|emulator|load|cli)\//.test(i))).toEqual([]);
    expect(text).not.toMatch(/Date\.now\(|Math\.random\(|new Date\(\)|process\./);
  });
});
