// The least any client must do, as a whole process: the floor the benchmarks compare to.
//   parse:    read the same YAML files and parse them with js-yaml (core schema), the parser of
//             dus-sync's fast path: what validate cannot do less than.
//   plan:     parse, then fetch every bundle page in turn and the declared actions eight at a
//             time with Node's own fetch.
//   apply:    the same, then the same writes (PUTs, then appends) at a fixed concurrency
//             (LEAST_CONCURRENCY, default 8), then fetch once more to verify.
// No validation, no diffing beyond what the writes need, no error handling: a floor, not a tool.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import jsyaml from 'js-yaml';

const [mode, repo, baseUrl, key] = process.argv.slice(2);
const width = Number(process.env.LEAST_CONCURRENCY ?? 8);
const headers = { 'x-service-api-key': key, 'x-service-tenant': 'acme', 'content-type': 'application/json' };

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith('.yaml') && name !== 'dus-sync.yaml') out.push(p);
  }
  return out;
}

async function pool(items, n, fn) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (i < items.length) { const item = items[i++]; await fn(item); }
  }));
}

async function fetchAll(actionIds) {
  const firmwares = new Map();
  let url = `${baseUrl}/api/v1/firmware-bundles`;
  while (url) {
    const page = await (await fetch(url, { headers })).json();
    for (const b of page.results) for (const f of b.firmwares) firmwares.set(f.version_number, f);
    url = page.next ? new URL(page.next, baseUrl).href : null;
  }
  const actions = new Map();
  await pool(actionIds, 8, async (id) => {
    actions.set(id, await (await fetch(`${baseUrl}/api/v1/actions/${id}`, { headers })).json());
  });
  return { firmwares, actions };
}

const docs = [];
for (const file of walk(repo)) {
  for (const d of jsyaml.loadAll(readFileSync(file, 'utf8'), null, { schema: jsyaml.CORE_SCHEMA })) if (d != null) docs.push(d);
}
if (mode === 'parse') {
  process.stdout.write(`${docs.length} documents\n`);
  process.exit(0);
}
const fwDocs = docs.filter((d) => d.kind === 'Firmware');
const actionDocs = docs.filter((d) => d.kind === 'Action');
const live = await fetchAll(actionDocs.map((d) => d.spec.id));

if (mode === 'apply') {
  const puts = fwDocs.filter((d) => {
    const l = live.firmwares.get(d.spec.version_number);
    return l.uncompressed_size !== d.spec.uncompressed_size || l.is_deactivated !== d.spec.is_deactivated;
  });
  const appends = actionDocs.flatMap((d) => d.spec.phases.slice(live.actions.get(d.spec.id).phases.length)
    .map((p) => ({ id: d.spec.id, p })));
  await pool(puts, width, async (d) => {
    const r = await fetch(`${baseUrl}/api/v1/firmwares/${encodeURIComponent(d.spec.version_number)}`, {
      method: 'PUT', headers, body: JSON.stringify({ is_deactivated: d.spec.is_deactivated, uncompressed_size: d.spec.uncompressed_size, dependencies: d.spec.dependencies }),
    });
    await r.arrayBuffer();
  });
  await pool(appends, width, async ({ id, p }) => {
    const r = await fetch(`${baseUrl}/api/v1/actions/${id}/append_phase`, { method: 'POST', headers, body: JSON.stringify(p) });
    await r.arrayBuffer();
  });
  await fetchAll(actionDocs.map((d) => d.spec.id));
  process.stdout.write(`${puts.length} puts, ${appends.length} appends\n`);
} else {
  process.stdout.write(`${fwDocs.length} firmwares, ${actionDocs.length} actions, ${live.firmwares.size} live\n`);
}
