// displayPath joins the folder and the path when it can (no path.relative per file): it must
// give exactly what path.relative gives, wherever the working folder is.
import { relative, join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { displayPath } from '../../src/load/index.js';
import type { ResolvedConfig } from '../../src/model/index.js';

afterEach(() => { vi.restoreAllMocks(); });

const segment = fc.oneof(fc.constantFrom('a', 'b', 'tenants', '..', '.', 'x y', '-'), fc.stringMatching(/^[a-z.]{1,4}$/));
const folder = fc.array(segment, { maxLength: 4 }).map((s) => `/${s.join('/')}`);
const file = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));

describe('displayPath', () => {
  it('is path.relative from the working folder, for every working folder, config folder and path', () => {
    fc.assert(fc.property(folder, folder, file, (cwd, dir, path) => {
      vi.spyOn(process, 'cwd').mockReturnValue(join(cwd));
      const config = { dir: join(dir), tenants: {} } as unknown as ResolvedConfig;
      const expected = relative(join(cwd), join(dir, path)) || '.';
      expect(displayPath(config, path)).toBe(expected);
      vi.restoreAllMocks();
    }), { numRuns: 3000 });
  });
});
