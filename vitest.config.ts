import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// The CLIs the tests start keep their journals in $XDG_STATE_HOME/dus-sync (the default): in a
// folder of this run, never in the home of whoever runs the tests.
const stateHome = mkdtempSync(join(tmpdir(), 'dus-sync-test-state-'));

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    env: { XDG_STATE_HOME: stateHome },
    // Every test server listens on 127.0.0.1 port 0; nothing here touches another address.
  },
});
