// `dus-sync export --tenant T --out DIR [--action ID ...]`: the live state of one tenant as
// desired-state YAML, so that an existing tenant can be brought under git. It reads (every
// bundle page, the given actions), builds the files with the pure writer, and writes only
// those files, only inside --out. Other files in --out are left alone.
import { lstat, mkdir, readdir, readlink, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { createApiClient } from '../api/client.js';
import { tenantIdsOf } from '../agent/reconcile.js';
import { writeFileAtomic } from '../atomic-write.js';
import { kindOf } from '../load/read-file.js';
import { indexFirmwares, recordsBudget } from '../api/fetch-live.js';
import { effectiveLimits } from '../api/limits.js';
import { exportFiles, type ExportedFile } from '../core/export.js';
import { UserError } from '../errors.js';
import { readApiKeys } from '../load/keys.js';
import { readRegularFile } from '../load/read-file.js';
import { checkExportTenant } from '../load/selection.js';
import type { Action, Logger, ResolvedConfig } from '../model/index.js';
import { parseFile } from '../load/index.js';
import { REDACTED, redact, redactDeep } from '../redact.js';
import { VERSION } from '../version.js';
import { setup } from './common.js';
import { apiLimitFlags, type GlobalOptions } from './context.js';
import { EXPORTED, keysInExport, warnKeysInLive } from '../live-keys.js';

export const SCHEMA_URL = 'https://dus-sync.dev/schemas/v1/resource.schema.json';

function parseActionIds(raw: unknown): number[] {
  const list = Array.isArray(raw) ? raw.map(String) : raw === undefined ? [] : [String(raw)];
  const ids = list.map((s) => {
    const n = Number(s);
    if (!/^\d+$/.test(s.trim()) || !Number.isSafeInteger(n)) throw new UserError(`--action takes an action id (a whole number), not "${s}"`);
    return n;
  });
  return [...new Set(ids)].sort((a, b) => a - b);
}

function inside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

export interface ExportWrites {
  /** Files written where there was none. */
  readonly written: readonly string[];
  /** Files already holding what export would write (apart from its "Exported by" line): left alone. */
  readonly unchanged: readonly string[];
  /** Files that differed and were replaced (only with --force). */
  readonly overwritten: readonly string[];
}

/** The line export stamps with its version, source and time: not content, so not compared. */
const STAMP = /^# Exported by dus-sync [^\n]*\n/m;

const sameExport = (existing: string, text: string): boolean => existing.replace(STAMP, '') === text.replace(STAMP, '');

/** How much longer than the export an existing file may be and still be read to compare: room for another stamp line (a longer base URL). */
const STAMP_SLACK = 64 * 1024;

/**
 * What is at a file's path now: nothing, the same content, or other content. Only plain files
 * inside the folder are read; a link or anything odd is left to the write, which refuses it.
 */
type FileState = 'absent' | 'same' | 'differs';

async function existingState(realRoot: string, outDir: string, f: ExportedFile): Promise<FileState> {
  const target = resolve(realRoot, f.path);
  if (f.path.includes('\0') || isAbsolute(f.path) || !inside(realRoot, target)) return 'absent';
  const parent = await realpath(dirname(target)).catch(() => undefined);
  if (parent === undefined || (parent !== realRoot && !inside(realRoot, parent))) return 'absent';
  const st = await lstat(target).catch(() => undefined);
  if (!st?.isFile()) return 'absent';
  // Read bounded, never whole: a file far larger than the export (a 20 GiB one was read into
  // memory, or failed in a raw error naming no file) cannot hold the same content anyway.
  const read = readRegularFile(target, { maxBytes: Buffer.byteLength(f.text) + STAMP_SLACK });
  if (!read.ok) {
    if (read.tooLarge === true) return 'differs';
    throw new UserError(`cannot compare ${f.path} in ${outDir} with the export: ${read.message.replace(/^the file/, 'it')}; nothing was written`);
  }
  return sameExport(read.text, f.text) ? 'same' : 'differs';
}

function listed(paths: readonly string[], max = 10): string {
  return paths.length <= max ? paths.join(', ') : `${paths.slice(0, max).join(', ')} and ${paths.length - max} more`;
}

/**
 * Writes each file under `outDir`, refusing any path that would land outside it: through
 * `..`, an absolute path, or a symbolic link inside the folder that points elsewhere. A link
 * at a file's own path is refused too (the rename would replace it, but someone put it there
 * for a reason), and each file goes through a fresh temp file, never through a planted one.
 *
 * A file already there that differs from what export would write (a hand-written comment, a
 * label) is not overwritten: every such file is named and nothing is written, unless `force`.
 * One that holds the same content is left as it is.
 */
/**
 * Makes `path` and the folders up to it one at a time, each error a sentence. Not mkdir's
 * recursive mode: it loops forever on some paths under /proc, and says EEXIST for a file.
 */
async function makeFolders(path: string, shown: string): Promise<void> {
  const missing: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    const st = await stat(at).catch((err: NodeJS.ErrnoException) => err);
    if (!(st instanceof Error)) {
      if (!st.isDirectory()) throw new UserError(`cannot export to ${shown}: ${at === path ? 'it' : at} is ${st.isFile() ? 'a file' : kindOf(st)}, not a folder; give a folder for --out; nothing was written`);
      break;
    }
    // A link that leads nowhere: mkdir would say EEXIST, and realpath ENOENT.
    const link = await lstat(at).catch(() => undefined);
    if (link?.isSymbolicLink() === true) {
      throw new UserError(`cannot export to ${shown}: ${at} is a symbolic link to ${JSON.stringify(await readlink(at).catch(() => '?'))}, which does not exist; give a folder for --out; nothing was written`);
    }
    if ((st.code !== 'ENOENT' && st.code !== 'ENOTDIR') || dirname(at) === at) throw new UserError(`cannot export to ${shown}: ${at} cannot be looked at (${st.code ?? st.message}); give a folder you can write to for --out; nothing was written`);
    missing.unshift(at);
  }
  for (const folder of missing) {
    await mkdir(folder).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST') return;
      throw new UserError(`cannot export to ${shown}: the folder ${folder} cannot be made (${err.code ?? err.message}); give a folder you can write to for --out; nothing was written`);
    });
  }
}

export async function writeExport(outDir: string, files: readonly ExportedFile[], opts: { force?: boolean } = {}): Promise<ExportWrites> {
  const root = resolve(outDir);
  await makeFolders(root, outDir);
  const realRoot = await realpath(root);
  const states = await Promise.all(files.map((f) => existingState(realRoot, outDir, f)));
  const differing = files.filter((_, i) => states[i] === 'differs').map((f) => f.path);
  if (differing.length > 0 && opts.force !== true) {
    throw new UserError(`refusing to overwrite ${differing.length === 1 ? 'a file' : `${differing.length} files`} in ${outDir} that ${differing.length === 1 ? 'differs' : 'differ'} from the export, so hand edits would be lost: ${listed(differing)}; nothing was written. Commit or move ${differing.length === 1 ? 'it' : 'them'} aside, or pass --force to overwrite`);
  }
  const written: string[] = [];
  const unchanged: string[] = [];
  const overwritten: string[] = [];
  // Every target is checked (and its folder made) before the first file is written: a folder
  // that is a dangling link used to stop the export half-way, some files written, in a raw error.
  const targets: { file: ExportedFile; target: string; state: FileState }[] = [];
  for (const [i, f] of files.entries()) {
    if (states[i] === 'same') {
      unchanged.push(f.path);
      continue;
    }
    const target = resolve(realRoot, f.path);
    if (f.path.includes('\0') || isAbsolute(f.path) || !inside(realRoot, target)) {
      throw new UserError(`refusing to write ${JSON.stringify(f.path)}: it is outside ${outDir}`);
    }
    await mkdir(dirname(target), { recursive: true }).catch((err: NodeJS.ErrnoException) => {
      throw new UserError(`cannot make the folder of ${f.path} in ${outDir} (${err.code ?? err.message}; a dangling symbolic link?); nothing was written`);
    });
    const parent = await realpath(dirname(target));
    if (parent !== realRoot && !inside(realRoot, parent)) {
      throw new UserError(`refusing to write ${f.path}: its folder leads outside ${outDir} (a symbolic link?); nothing was written`);
    }
    const existing = await lstat(target).catch(() => undefined);
    if (existing?.isSymbolicLink()) {
      const to = await readlink(target).catch(() => '?');
      throw new UserError(`refusing to write ${f.path} in ${outDir}: it is a symbolic link (to ${JSON.stringify(to)}) and export never writes through one; remove the link and export again; nothing was written`);
    }
    if (existing && !existing.isFile()) {
      throw new UserError(`refusing to write ${f.path} in ${outDir}: something that is not a plain file is there; nothing was written`);
    }
    targets.push({ file: f, target, state: states[i]! });
  }
  for (const { file, target, state } of targets) {
    writeFileAtomic(target, file.text, { mode: 0o644 });
    (state === 'differs' ? overwritten : written).push(file.path);
  }
  return { written, unchanged, overwritten };
}

/** YAML files in the folders export writes to that this export did not write: maybe stale. */
async function strayFiles(outDir: string, files: readonly ExportedFile[]): Promise<string[]> {
  const ours = new Set(files.map((f) => f.path));
  const out: string[] = [];
  for (const sub of ['firmwares', 'actions']) {
    const names = await readdir(resolve(outDir, sub)).catch(() => [] as string[]);
    for (const n of names.sort()) {
      const p = `${sub}/${n}`;
      if (/\.ya?ml$/.test(n) && !ours.has(p)) out.push(p);
    }
  }
  return out;
}

async function readActions(get: (id: number) => Promise<Action | null>, ids: readonly number[], tenant: string): Promise<Action[]> {
  const out: Action[] = [];
  for (const id of ids) {
    const a = await get(id);
    if (a === null) throw new UserError(`action ${id} was not found in tenant "${tenant}"; nothing was written`);
    out.push(a);
  }
  return out;
}

export async function run(opts: Record<string, unknown>, globals: GlobalOptions): Promise<number> {
  const { config, log } = await setup(globals);
  const outDir = typeof opts.out === 'string' ? opts.out : '';
  if (outDir === '') throw new UserError('export needs --out DIR, the folder to write the YAML into');
  const tenants = globals.tenant ?? [];
  if (tenants.length > 1) throw new UserError(`export writes one tenant at a time; run it once for each of ${tenants.join(', ')}`);
  const tenant = tenants[0] ?? config.defaultTenant;
  if (!tenant) throw new UserError('export needs a tenant: pass --tenant NAME, or set default_tenant in dus-sync.yaml (or DUS_TENANT)');
  checkExportTenant(config, tenant);
  if (!config.baseUrl) throw new UserError('export needs the API\'s address: set base_url in dus-sync.yaml or DUS_BASE_URL');
  const actionIds = parseActionIds(opts.action);

  const keys = await readApiKeys(config, [tenant], process.env);
  const client = createApiClient({
    baseUrl: config.baseUrl,
    keys,
    tenantIds: tenantIdsOf(config),
    ...(globals.insecureHttp ? { insecureHttp: true } : {}),
    ...(globals.caFile ? { caFile: globals.caFile } : {}),
    ...effectiveLimits(config, apiLimitFlags(globals)),
    log,
  });
  try {
    const api = client.tenant(tenant);
    log.info(`reading the live state of tenant ${tenant}…`);
    // The API cannot list actions: without --action none are exported, which is easy to miss.
    if (actionIds.length === 0) log.info('note: actions are exported only when named: --action ID (repeatable)');
    const [firmwares, actions] = await Promise.all([
      // Export keeps every record of the tenant: bounded in total, not only per answer.
      indexFirmwares(api.bundlePages(), { tenant, budget: recordsBudget(client.limits.maxResponseBytes) }),
      readActions((id) => api.getAction(id), actionIds, tenant),
    ]);
    // YAML meant for git never holds a key: each place one was found live gets the placeholder
    // (validate refuses it until a person decides what belongs there) and a warning.
    warnKeysInLive(log, keysInExport(tenant, firmwares, actions), EXPORTED);
    const result = exportFiles({ firmwares: redactDeep(firmwares), actions: redactDeep(actions) }, {
      tenant,
      sourceUrl: config.baseUrl,
      generatedAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      schemaPath: SCHEMA_URL,
      toolVersion: VERSION,
    });
    report(log, result.skipped.map((s) => `not exported: ${s.reason}.`));
    const files = loadable(result.files.map((f) => ({ ...f, text: redact(f.text) })), config, tenant, log);
    const writes = await writeExport(outDir, files, { force: opts.force === true });
    for (const p of writes.written) process.stderr.write(`wrote ${p}\n`);
    for (const p of writes.unchanged) process.stderr.write(`unchanged ${p}\n`);
    for (const p of writes.overwritten) log.warn(`overwrote ${p}, which differed from the export (--force)`);
    report(log, (await strayFiles(outDir, files)).map((p) =>
      `${p} was not written by this export; if it held documents of tenant ${tenant}, they may now be stale or defined twice (remove it if so).`));
    process.stdout.write(`Exported ${result.firmwares} firmware${result.firmwares === 1 ? '' : 's'} of ${result.components} component${result.components === 1 ? '' : 's'} and ${result.actions} action${result.actions === 1 ? '' : 's'} of tenant ${tenant} to ${outDir} (${files.length} file${files.length === 1 ? '' : 's'}${writes.unchanged.length > 0 ? `, ${writes.unchanged.length} unchanged` : ''}${files.length < result.files.length ? `; ${result.files.length - files.length} not written, see above` : ''})${result.skipped.length > 0 ? `; ${result.skipped.length} version number${result.skipped.length === 1 ? '' : 's'} skipped` : ''}.\n`);
    return 0;
  } finally {
    await client.close();
  }
}

/**
 * The files dus-sync itself can load: a live object may hold what its YAML cannot declare (a
 * phase named "", a __proto__ key, a number YAML cannot carry exactly), and a file that does not
 * load would make every plan of the repository fail. Such a file is not written, with a warning
 * naming its first issue. The [REDACTED] placeholder is the exception: it is written, and refused
 * by validate until a person decides what belongs there.
 */
function loadable(files: readonly ExportedFile[], config: ResolvedConfig, tenant: string, log: Logger): ExportedFile[] {
  const as: ResolvedConfig = { ...config, tenants: { ...config.tenants, [tenant]: config.tenants[tenant] ?? {} } };
  return files.filter((f) => {
    const issues = parseFile({ path: f.path, text: f.text }, as, { sent: false }).issues.filter((i) => !i.message.includes(REDACTED));
    if (issues.length === 0) return true;
    const i = issues[0]!;
    log.warn(`not exported: ${f.path}, since dus-sync could not load it back (${i.line}:${i.column}: ${i.message}); the live object holds what its YAML cannot declare`);
    return false;
  });
}

function report(log: Logger, lines: readonly string[]): void {
  for (const l of lines) log.warn(l);
}
