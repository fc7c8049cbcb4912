// Generates a large tenant for the benchmarks: an emulator seed (JSON) and a desired-state repo.
//   node bench/generate.mjs --firmwares 20000 --bundles 2000 --actions 200 --out DIR
// The repo declares every firmware; `changedFirmwares` of them differ from live (sizes, some
// deactivations, dependencies) and each action has one phase to append, so that plan has real
// work and apply makes `changedFirmwares` PUTs and `actions` appends.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

export function generate({ firmwares = 20000, bundles = 2000, actions = 200, changedFirmwares = 1000, out }) {
  const perBundle = Math.ceil(firmwares / bundles);
  const components = ['modem', 'wifi', 'bootloader', 'dsp', 'gps', 'radio', 'sensor', 'display'];
  const seedBundles = [];
  const files = new Map();
  let n = 0;
  for (let b = 0; b < bundles; b += 1) {
    const version = `2024.${String(b).padStart(5, '0')}`;
    const fws = [];
    const docs = [];
    for (let i = 0; i < perBundle && n < firmwares; i += 1, n += 1) {
      const component = components[n % components.length];
      const vn = `${1 + (n % 7)}.${Math.floor(n / 7) % 100}.${n}`;
      const live = { version_number: vn, component_name: component, uncompressed_size: 1000 + n, is_deactivated: false,
        dependencies: n % 3 === 0 ? [{ component_name: 'bootloader', min_version: '1.0.0' }] : [] };
      fws.push(live);
      const changed = n % Math.max(1, Math.floor(firmwares / changedFirmwares)) === 0 && n / Math.max(1, Math.floor(firmwares / changedFirmwares)) < changedFirmwares;
      const spec = {
        version_number: vn,
        component_name: component,
        is_deactivated: changed && n % 50 === 0 ? true : false,
        uncompressed_size: changed ? 2000 + n : 1000 + n,
        dependencies: live.dependencies.map((d) => ({ ...d, min_version: changed && d ? '1.1.0' : d.min_version })),
      };
      docs.push(firmwareDoc(spec));
    }
    seedBundles.push({ version, firmwares: fws });
    files.set(`tenants/acme/firmwares/bundle-${String(b).padStart(5, '0')}.yaml`, docs.join('---\n'));
  }
  const seedActions = [];
  for (let a = 0; a < actions; a += 1) {
    const id = 1000 + a;
    const phases = [
      { name: 'canary', trigger_on: { after_minutes: 60 }, info: { percent: 1 } },
      { name: 'wave-1', trigger_on: { min_success_rate: 0.98 }, info: { percent: 10 } },
    ];
    seedActions.push({ id, status: 'pending', phases });
    const desired = [...phases, { name: 'wave-2', trigger_on: { min_success_rate: 0.99 }, info: { percent: 50 } }];
    files.set(`tenants/acme/actions/action-${id}.yaml`, actionDoc(id, desired));
  }
  const seed = { tenants: { acme: { api_key: 'bench-key-acme', bundles: seedBundles, actions: seedActions } } };
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'seed.json'), JSON.stringify(seed));
  const repo = join(out, 'repo');
  for (const [path, text] of files) {
    mkdirSync(join(repo, path, '..'), { recursive: true });
    writeFileSync(join(repo, path), text);
  }
  writeFileSync(join(repo, 'dus-sync.yaml'), [
    'apiVersion: dus-sync/v1', 'kind: Config', 'default_tenant: acme',
    'tenants:', '  acme: { api_key_env: DUS_API_KEY_ACME }',
    'resources: ["tenants/**/*.yaml"]',
    'safety: { max_changes: 100000, max_deactivations: 100000 }',
    'watch: { interval: 10m }', '',
  ].join('\n'));
  return { seedFile: join(out, 'seed.json'), repo, config: join(repo, 'dus-sync.yaml'), key: 'bench-key-acme',
    expected: { puts: changedFirmwares, appends: actions } };
}

function firmwareDoc(spec) {
  const deps = spec.dependencies.length === 0 ? '  dependencies: []\n'
    : '  dependencies:\n' + spec.dependencies.map((d) => `    - { component_name: ${d.component_name}, min_version: "${d.min_version}" }\n`).join('');
  return `apiVersion: dus-sync/v1\nkind: Firmware\nmetadata: { tenant: acme }\nspec:\n  version_number: "${spec.version_number}"\n`
    + `  component_name: ${spec.component_name}\n  is_deactivated: ${spec.is_deactivated}\n  uncompressed_size: ${spec.uncompressed_size}\n${deps}`;
}

function actionDoc(id, phases) {
  return `apiVersion: dus-sync/v1\nkind: Action\nmetadata: { tenant: acme }\nspec:\n  id: ${id}\n  phases:\n`
    + phases.map((p) => `    - name: ${p.name}\n      trigger_on: ${JSON.stringify(p.trigger_on)}\n      info: ${JSON.stringify(p.info)}\n`).join('');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: {
    firmwares: { type: 'string', default: '20000' }, bundles: { type: 'string', default: '2000' },
    actions: { type: 'string', default: '200' }, changed: { type: 'string', default: '1000' }, out: { type: 'string' },
  } });
  if (!values.out) throw new Error('--out DIR is required');
  const r = generate({ firmwares: +values.firmwares, bundles: +values.bundles, actions: +values.actions, changedFirmwares: +values.changed, out: values.out });
  process.stdout.write(JSON.stringify(r, null, 2) + '\n');
}
