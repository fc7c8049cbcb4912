// `npm run demo`: the whole loop against the embedded emulator, as a user would run it.
// Starts the emulator in-process with the examples' seed, then runs the real CLI:
// validate, plan, apply --auto-approve, plan again (no changes) and status.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from '../dist/index.js';

const cli = join(import.meta.dirname, '..', 'dist', 'cli.js');
const config = join(import.meta.dirname, '..', 'examples', 'dus-sync.yaml');
const seed = join(import.meta.dirname, '..', 'examples', 'emulator-seed.yaml');
const work = mkdtempSync(join(tmpdir(), 'dus-sync-demo-'));

const emulator = await startEmulator({ seed, pageSize: 2 });
process.stdout.write(`Started the emulator of the Device Update Service at ${emulator.url} (seed: examples/emulator-seed.yaml)\n`);
const env = {
  ...process.env,
  DUS_BASE_URL: emulator.url,
  DUS_API_KEY_ACME: 'dev-key-acme',
  DUS_API_KEY_GLOBEX: 'dev-key-globex',
};

const steps = [
  ['Validate the desired state in examples/ (offline, no API key needed)', ['validate'], [0]],
  ['Plan: fetch the live state and show what would change', ['plan'], [0, 2]],
  ['Apply the plan (--auto-approve, as in CI)', ['apply', '--auto-approve', '--journal', join(work, 'journal.jsonl')], [0]],
  ['Plan again: live now equals desired, so nothing is left to do', ['plan', '--detailed-exitcode'], [0]],
  ['Status: the rollout of each declared action', ['status'], [0]],
];

let failed = false;
try {
  for (const [what, args, okCodes] of steps) {
    process.stdout.write(`\n==> ${what}\n$ dus-sync --config examples/dus-sync.yaml ${args.join(' ').replace(work, '$TMP')}\n`);
    // Asynchronous on purpose: the emulator runs in this process and must keep answering.
    const status = await new Promise((resolve) => {
      spawn(process.execPath, [cli, '--config', config, ...args], { env, stdio: 'inherit' }).on('close', resolve);
    });
    if (!okCodes.includes(status)) {
      process.stdout.write(`\nThat step exited with ${status}; the demo stops here.\n`);
      failed = true;
      break;
    }
  }
} finally {
  await emulator.close();
  rmSync(work, { recursive: true, force: true });
}
if (!failed) process.stdout.write('\nDone: the emulator converged to examples/. Try editing a file under examples/tenants and run the demo again.\n');
process.exit(failed ? 1 : 0);
