// dist/cli.js, the entry of the built CLI. It tunes V8 for the run before anything else is
// compiled, then loads dist/main.cjs (commander, the command table and the modules the commands
// share) through V8's code cache made at build time (src/cli/code-cache.ts). Not used from source:
// tests run src/cli/main.ts's functions directly and dist/cli.js as a user would.
import { boot } from './code-cache.js';
import { runsForDays, tuneForShortRun, verifyCodeCaches } from './short-run.js';

verifyCodeCaches();
if (!runsForDays(process.argv.slice(2))) tuneForShortRun();
boot(__dirname, 'main.cjs');
