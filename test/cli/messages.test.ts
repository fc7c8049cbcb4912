// The newcomer's messages (issue 13), through the built CLI: bad input gets one sentence naming
// the file, the line and what to do, exit 1, and never a stack trace.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator, type Seed } from '../../src/emulator/index.js';
import { runCli, writeTree } from '../e2e/helpers.js';

const FIRMWARE_HEAD = 'apiVersion: dus-sync/v1\nkind: Firmware\nmetadata:\n  tenant: acme\nspec:\n  version_number: "2.4.1"\n';

/** `validate` of one file a.yaml (tenant acme, no config): its stdout lines, without the count. */
async function validateOne(text: string): Promise<{ code: number | null; lines: string[]; stderr: string }> {
  const dir = writeTree({ 'a.yaml': text });
  const r = await runCli(['--dir', dir, 'validate'], { cwd: dir, env: { DUS_TENANT: 'acme' } });
  return { code: r.code, lines: r.stdout.split('\n').filter((l) => l.startsWith('a.yaml:')), stderr: r.stderr };
}

describe('YAML indentation', () => {
  it('a line indented too far is reported at that line, not at the line above', async () => {
    const r = await validateOne(FIRMWARE_HEAD + '  is_deactivated: true\n      uncompressed_size: 5\n');
    expect(r.code).toBe(1);
    expect(r.lines).toEqual(['a.yaml:8:7: YAML syntax error: this line is indented more than "is_deactivated" on line 7, whose value is already given; line it up with "is_deactivated" (or fix line 7)']);
  });

  it('the same in metadata, in a list item, and across a blank line and a comment', async () => {
    const meta = await validateOne('apiVersion: dus-sync/v1\nkind: Firmware\nmetadata:\n  tenant: acme\n   labels: { team: radio }\nspec:\n  version_number: "1"\n');
    expect(meta.lines).toEqual([expect.stringMatching(/^a\.yaml:5:4: YAML syntax error: this line is indented more than "tenant" on line 4/)]);
    const item = await validateOne(FIRMWARE_HEAD + '  dependencies:\n    - component_name: radio\n       min_version: "1.0"\n');
    expect(item.lines).toEqual([expect.stringMatching(/^a\.yaml:9:8: YAML syntax error: this line is indented more than "component_name" on line 8/)]);
    const gap = await validateOne(FIRMWARE_HEAD + '  is_deactivated: true\n\n  # size\n      uncompressed_size: 5\n');
    expect(gap.lines).toEqual([expect.stringMatching(/^a\.yaml:10:7: YAML syntax error: this line is indented more than "is_deactivated" on line 7/)]);
  });

  it('a quoted value above (yaml reports column 1 of the line) points at where the line starts', async () => {
    const r = await validateOne(FIRMWARE_HEAD + '    is_deactivated: true\n');
    expect(r.lines).toEqual([expect.stringMatching(/^a\.yaml:7:5: YAML syntax error: this line is indented more than "version_number" on line 6/)]);
  });
});

describe('a field in the wrong place, or misspelt, is one error that says what to do', () => {
  const ACTION = 'apiVersion: dus-sync/v1\nkind: Action\nmetadata:\n  tenant: acme\nspec:\n  id: 42\n  phases:\n';

  it('a spec field at column 1 after spec: says to indent it under spec', async () => {
    const r = await validateOne(FIRMWARE_HEAD + 'is_deactivated: true\n');
    expect(r.code).toBe(1);
    expect(r.lines).toEqual(['a.yaml:7:1: unknown field "is_deactivated" in the document; it belongs in spec: indent it under spec']);
  });

  it('a metadata field at the top level says to indent it under metadata, and nothing about metadata missing', async () => {
    const r = await validateOne('apiVersion: dus-sync/v1\nkind: Firmware\ntenant: acme\nspec:\n  version_number: "1"\n');
    expect(r.lines).toEqual(['a.yaml:3:1: unknown field "tenant" in the document; it belongs in metadata: indent it under metadata']);
    const labels = await validateOne(FIRMWARE_HEAD + 'labels: { team: radio }\n');
    expect(labels.lines).toEqual(['a.yaml:7:1: unknown field "labels" in the document; it belongs in metadata: indent it under metadata']);
  });

  it('a spec field written in metadata says to move it, and not also that spec lacks it', async () => {
    const r = await validateOne('apiVersion: dus-sync/v1\nkind: Action\nmetadata:\n  tenant: acme\n  id: 5\nspec:\n  phases: []\n');
    expect(r.lines).toEqual(['a.yaml:5:3: unknown field "id" in metadata; it belongs in spec: move it there']);
  });

  it('a phase field indented as a spec field says it belongs in a phase', async () => {
    const r = await validateOne(ACTION + '    - name: canary\n  trigger_on: { after_minutes: 60 }\n');
    expect(r.lines).toEqual(['a.yaml:9:3: unknown field "trigger_on" in spec; it belongs in an item of spec.phases: indent it to line up with the fields of that item']);
  });

  it('a misspelt phase field is one error with did-you-mean, also for the required name (and a swap of two letters)', async () => {
    const r = await validateOne(ACTION + '    - name: canary\n      trigger-on: { after_minutes: 60 }\n    - nmae: wave-1\n    - title: wave-2\n');
    expect(r.code).toBe(1);
    expect(r.lines).toEqual([
      'a.yaml:9:7: unknown field "trigger-on" in spec.phases[0]; did you mean "trigger_on"?',
      'a.yaml:10:7: unknown field "nmae" in spec.phases[1]; did you mean "name"?',
      'a.yaml:11:7: unknown field "title" in spec.phases[2]; did you mean the required field "name"?',
    ]);
  });

  it('a renamed required field of a firmware is one error', async () => {
    const r = await validateOne('apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version: "1"\n');
    expect(r.lines).toEqual(['a.yaml:5:3: unknown field "version" in spec; did you mean the required field "version_number"?']);
  });

  it('two different mistakes in one phase stay two errors', async () => {
    const r = await validateOne(ACTION + '    - { infos: {}, trigger_on: {} }\n');
    expect(r.lines).toEqual([
      'a.yaml:8:7: spec.phases[0] is missing the required field "name"',
      'a.yaml:8:9: unknown field "infos" in spec.phases[0]; did you mean "info"?',
    ]);
  });

  it('in dus-sync.yaml too: a safety limit at the top level says to indent it under safety', async () => {
    const dir = writeTree({ 'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\nmax_changes: 5\n' });
    const r = await runCli(['validate'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('dus-sync.yaml:3:1: unknown field "max_changes" in the document; it belongs in safety: indent it under safety\n');
  });
});

describe('talking to the API', () => {
  it('https:// to a plain-http server says so, not that the certificate failed', async () => {
    const server = createServer((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"results":[]}'); });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const dir = writeTree({ 'a.yaml': FIRMWARE_HEAD });
      const r = await runCli(['--dir', dir, 'plan'], { cwd: dir, env: { DUS_TENANT: 'acme', DUS_API_KEY: 'k-plain-http', DUS_BASE_URL: `https://127.0.0.1:${port}` } });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^error: the server at 127\\.0\\.0\\.1:${port} speaks plain http, not https; use http://127\\.0\\.0\\.1:${port} \\(plain http is allowed to loopback\\) or fix base_url \\(GET /api/v1/firmware-bundles for tenant acme was not sent: [A-Z_]+\\)\\n$`, 'm'));
      expect(r.stderr).not.toContain('certificate');
      expect(r.stdout).toBe('');
    } finally {
      server.close();
    }
  });

  it('a base_url ending in /api/v1 is refused before any request, naming the URL to use', async () => {
    const dir = writeTree({ 'a.yaml': FIRMWARE_HEAD });
    const r = await runCli(['--dir', dir, 'plan'], { cwd: dir, env: { DUS_TENANT: 'acme', DUS_API_KEY: 'k-api-v1', DUS_BASE_URL: 'http://127.0.0.1:1/api/v1/' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: the API base URL http://127.0.0.1:1/api/v1 should not include /api/v1; dus-sync adds it: set base_url (or DUS_BASE_URL) to http://127.0.0.1:1\n');
    expect(r.stderr).not.toMatch(/404|not found|\n\s+at /);
  });

  it('validate points at a base_url that is not a URL, and plan refuses it at the same line', async () => {
    const dir = writeTree({ 'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\nbase_url: "http://127.0.0.1:99999"\ndefault_tenant: acme\n', 'a.yaml': FIRMWARE_HEAD });
    const line = 'dus-sync.yaml:3:11: base_url "http://127.0.0.1:99999" is not a URL';
    const v = await runCli(['validate'], { cwd: dir });
    expect(v.code).toBe(1);
    expect(v.stdout).toContain(line);
    const p = await runCli(['plan'], { cwd: dir, env: { DUS_API_KEY: 'k-not-a-url' } });
    expect(p.code).toBe(1);
    expect(p.stdout + p.stderr).toContain(line);
    expect(p.stderr).not.toMatch(/\n\s+at /);
  });

  it('validate points at a base_url with /api/v1 in dus-sync.yaml', async () => {
    const dir = writeTree({ 'dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\nbase_url: https://dus.example.com/prefix/API/v1\ndefault_tenant: acme\n', 'a.yaml': FIRMWARE_HEAD });
    const r = await runCli(['validate'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('dus-sync.yaml:3:11: base_url should not include /api/v1; dus-sync adds it: write https://dus.example.com/prefix\n');
  });
});

describe('the config file', () => {
  it('-c FOLDER says it is a folder and names the dus-sync.yaml in it, for every command', async () => {
    const dir = writeTree({ 'repo/dus-sync.yaml': 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\n', 'empty/.keep': '' });
    for (const command of ['validate', 'plan']) {
      const r = await runCli(['-c', 'repo', command], { cwd: dir });
      expect([r.code, r.stdout], command).toEqual([1, '']);
      expect(r.stderr, command).toBe('error: repo is a folder; --config takes the dus-sync.yaml file (did you mean repo/dus-sync.yaml?)\n');
    }
    const none = await runCli(['--config', 'empty/', 'plan'], { cwd: dir });
    expect(none.stderr).toBe('error: empty is a folder; --config takes the dus-sync.yaml file (there is no dus-sync.yaml in it)\n');
  });
});

const KEY = 'messages-test-key-acme-0123456789';

function seed(): Seed {
  return {
    tenants: {
      acme: {
        api_key: KEY,
        bundles: [{ version: '2024.06', firmwares: ['1.0.0', '1.0.1', '1.0.2'].map((v) => (
          { version_number: v, component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] })) }],
        actions: [{ id: 42, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: {} }] }],
      },
    },
  } as unknown as Seed;
}

let emulator: RunningEmulator | undefined;
afterEach(async () => { await emulator?.close(); emulator = undefined; });

/** Three deactivations of acme, with this config. */
function deactivations(config: string): string {
  const fw = (v: string) => `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "${v}"\n  is_deactivated: true\n`;
  return writeTree({ 'dus-sync.yaml': config, 'fw.yaml': ['1.0.0', '1.0.1', '1.0.2'].map(fw).join('---\n') });
}

const SAFE_CONFIG = 'apiVersion: dus-sync/v1\nkind: Config\ndefault_tenant: acme\nsafety:\n  max_changes: 2\n  max_deactivations: 5\n';

describe('the safety refusal names where its limit was set', () => {
  it('a flag is named as the flag, not as the config setting', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = deactivations(SAFE_CONFIG);
    const env = { DUS_BASE_URL: emulator.url, DUS_API_KEY: KEY };
    const plan = await runCli(['plan', '--max-changes', '1'], { cwd: dir, env });
    expect(plan.code).toBe(1);
    expect(plan.stderr).toContain('error: apply would refuse this plan: the plan has 3 changes, more than --max-changes (1); review it and pass --allow-large.\n');
    const apply = await runCli(['apply', '--auto-approve', '--max-deactivations', '2', '--max-changes', '10'], { cwd: dir, env });
    expect(apply.code).toBe(1);
    expect(apply.stderr).toContain('error: the plan deactivates 3 firmware records, more than --max-deactivations (2); review it and pass --allow-large. Nothing was written.\n');
    expect(emulator.stats.writes).toBe(0);
  });

  it('a config setting is named with its file and line', async () => {
    emulator = await startEmulator({ seed: seed() });
    const dir = deactivations(SAFE_CONFIG);
    const r = await runCli(['apply', '--auto-approve'], { cwd: dir, env: { DUS_BASE_URL: emulator.url, DUS_API_KEY: KEY } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: the plan has 3 changes, more than safety.max_changes (2, set at dus-sync.yaml:5); review it and pass --allow-large. Nothing was written.\n');
    expect(emulator.stats.writes).toBe(0);
  });
});

describe('--concurrency', () => {
  // Issue 13 found the parser and apply contradicting each other ("0 or more" and "at least 1");
  // commit 380a1fe (src/limits.ts, one range for apply and watch) fixed it. This keeps it so,
  // in the refusal and in --help.
  it('plan, apply and watch refuse the same values with the same sentence and document the same range', async () => {
    const dir = writeTree({ 'a.yaml': FIRMWARE_HEAD });
    for (const flag of ['--concurrency', '--min-concurrency', '--max-concurrency']) {
      for (const bad of ['0', '65', '1.5', 'x']) {
        const [plan, apply, watch] = await Promise.all(['plan', 'apply', 'watch'].map((c) => runCli([c, flag, bad], { cwd: dir })));
        expect(apply!.stderr, bad).toBe(`error: ${flag} takes a whole number from 1 to 64, not "${bad}".\n`);
        expect(watch!.stderr, bad).toBe(apply!.stderr);
        expect(plan!.stderr, bad).toBe(apply!.stderr);
        expect([plan!.code, apply!.code, watch!.code]).toEqual([1, 1, 1]);
      }
    }
    const helps = await Promise.all(['plan', 'apply', 'watch'].map((c) => runCli([c, '--help'], { cwd: dir })));
    const line = (help: string) => /--concurrency <n>\s+(.*?)--min-concurrency/s.exec(help)?.[1]?.replace(/\s+/g, ' ');
    expect(line(helps[1]!.stdout)).toBe('requests in flight per tenant, 1 to 64: the most, as the limit starts there and only adapts down (default: starts at 8 and adapts between the floor and ceiling below) ');
    expect(line(helps[2]!.stdout)).toBe(line(helps[1]!.stdout));
    expect(line(helps[0]!.stdout)).toBe(line(helps[1]!.stdout));
  });
});

describe('conflicts and appends point at the phase\'s own line', () => {
  // Live action 42 has one phase, canary with trigger_on {}.
  const actions = (canaryTrigger: string) => `# rollout of 42
apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 42
  phases:
    - name: canary
      trigger_on: ${canaryTrigger}

    # the first wave
    - { name: wave-1, trigger_on: { after_minutes: 60 } }
    - name: wave-2
`;

  it('in plan text and json, and in apply', async () => {
    emulator = await startEmulator({ seed: seed() });
    const env = { DUS_BASE_URL: emulator.url, DUS_API_KEY: KEY, DUS_TENANT: 'acme' };
    const ok = writeTree({ 'tenants/acme/actions.yaml': actions('{}') });
    const json = await runCli(['--dir', ok, 'plan', '--format', 'json'], { cwd: ok, env });
    expect(json.code, json.stderr).toBe(0);
    const plan = JSON.parse(json.stdout) as { changes: { index: number; source: unknown }[] };
    expect(plan.changes.map((c) => [c.index, c.source])).toEqual([
      [1, { file: 'tenants/acme/actions.yaml', line: 12, column: 7 }],
      [2, { file: 'tenants/acme/actions.yaml', line: 13, column: 7 }],
    ]);

    const conflicting = writeTree({ 'tenants/acme/actions.yaml': actions('{ after_minutes: 5 }') });
    const text = await runCli(['--dir', conflicting, 'plan'], { cwd: conflicting, env });
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('differs in trigger_on');
    expect(text.stdout).toContain('\n      at tenants/acme/actions.yaml:8\n');
    const apply = await runCli(['--dir', conflicting, 'apply', '--auto-approve'], { cwd: conflicting, env });
    expect(apply.code).toBe(1);
    expect(apply.stdout).toContain('\n      at tenants/acme/actions.yaml:8\n');
    expect(emulator.stats.writes).toBe(0);
  });
});
