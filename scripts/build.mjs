// Bundles src/ into dist/ with esbuild: one small entry (commander + the command table) and
// one lazily loaded chunk per command, so `--version` loads almost nothing. Dependencies stay
// external (installed by npm) so that pino's worker transports and Ajv keep working.
import { build } from 'esbuild';
import { readFileSync, rmSync, chmodSync } from 'node:fs';

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
rmSync('dist', { recursive: true, force: true });
await build({
  entryPoints: { cli: 'src/cli/main.ts', index: 'src/index.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  packages: 'external',
  sourcemap: 'linked',
  chunkNames: 'chunks/[name]-[hash]',
  define: { __DUS_SYNC_VERSION__: JSON.stringify(pkg.version) },
  logLevel: 'warning',
});
chmodSync('dist/cli.js', 0o755);
