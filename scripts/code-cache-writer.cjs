// Preloaded (node --require) into the CLI runs of scripts/code-cache.mjs, and nowhere else: as the
// process exits, dist/cli.js's loader writes V8's code cache of what it loaded (src/cli/code-cache.ts).
'use strict';
// The loader keeps the bytes it compiled, so that each cache is written with exactly those.
globalThis[Symbol.for('dus-sync.code-cache-training')] = true;
process.on('exit', () => {
  const shared = globalThis[Symbol.for('dus-sync.boot')];
  if (shared === undefined) throw new Error('scripts/code-cache-writer.cjs: dist/cli.js did not start its loader');
  shared.writeCaches();
});
