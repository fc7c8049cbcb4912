// The end-to-end tests spawn the CLI as a user would. They build their own copy into a temp
// folder (same esbuild settings as scripts/build.mjs), because other test runs may be
// rebuilding dist/ at the same moment. schemas/ and node_modules/ are linked beside it.
import { build } from 'esbuild';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '../..');

export interface PrivateBuild {
  readonly cli: string;
  cleanup(): void;
}

export async function buildCli(): Promise<PrivateBuild> {
  const pkgDir = mkdtempSync(join(tmpdir(), 'dus-sync-build-'));
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
  await build({
    entryPoints: { cli: join(REPO, 'src/cli/main.ts') },
    outdir: join(pkgDir, 'dist'),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20.19',
    packages: 'external',
    chunkNames: 'chunks/[name]-[hash]',
    define: { __DUS_SYNC_VERSION__: JSON.stringify(pkg.version) },
    logLevel: 'error',
  });
  symlinkSync(join(REPO, 'schemas'), join(pkgDir, 'schemas'));
  symlinkSync(join(REPO, 'node_modules'), join(pkgDir, 'node_modules'));
  return { cli: join(pkgDir, 'dist', 'cli.js'), cleanup: () => rmSync(pkgDir, { recursive: true, force: true }) };
}
