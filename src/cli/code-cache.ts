// Loading dist/'s CommonJS files (dist/main.cjs, dist/commands/NAME.cjs) through V8's code cache.
//
// A cold `validate` spent some 30 ms of its 150 compiling: parsing 650 KB of bundled JavaScript and
// compiling each function the first time it ran. The build runs the CLI once and keeps, beside
// each file, what V8 compiled (scripts/code-cache.mjs): FILE.v8cache. Loading a file with it skips
// that work. Node 22 has module.enableCompileCache for the same, but writes its cache at run time,
// into a folder of its own; dist/ is made once and read-only after that (the container image).
//
// V8 takes a cache only if it was made by the same V8 with the same flags; a cache it refuses
// costs nothing but the read. What V8 does not check, this file does:
// - V8 checks a source by its length only, so the cache also holds the bytes it was made from: a
//   file changed since (an edit of the same length) is compiled from its own text, never run as
//   the code of another;
// - V8's checksum of its data is off in release builds, and a damaged cache crashed the process
//   (a fatal error in the deserializer) or ran other code: one-shot commands turn it on
//   (--verify-snapshot-checksum, src/cli/short-run.ts), for the build's caches as for their use;
// - a cache is read only if it is a regular file of a plausible size (not a FIFO, not a device).
// The scripts are named by their place in the package (dist/commands/NAME.cjs), not the disk:
// Node 20's V8 keeps the name a cache was made with, which would name the builder's folder. With
// --debug (stack traces are shown) or Node's --enable-source-maps, files are required as usual,
// and stack traces name the files on disk (mapped to src/ with source maps).
import { closeSync, constants, existsSync, fstatSync, openSync, readdirSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative, sep } from 'node:path';
import { Script } from 'node:vm';

export const CODE_CACHE_SUFFIX = '.v8cache';
const MAGIC = 'dus-sync V8 code cache';

/** A file loaded here: its compiled script, and what became of its cache. */
export interface LoadedFile {
  readonly file: string;
  readonly script: Script;
  /** The bytes compiled, kept only while the build makes the caches (TRAINING_KEY). */
  readonly source?: Buffer;
  /** 'none': no cache, or one made by another Node or from other bytes; else whether V8 took it. */
  readonly cache: 'none' | 'taken' | 'refused';
}

/** What dist/cli.js shares with the files it loads (and with scripts/code-cache.mjs, which reads `loaded`). */
export interface Boot {
  readonly loaded: LoadedFile[];
  /**
   * A file of dist/commands/, loaded once: its exports; with `name`, what its function `name`
   * gives (online.cjs holds several commands, each initialized when first asked for).
   */
  command(file: string, name?: string): Promise<unknown>;
  /**
   * For the build only (scripts/code-cache.mjs calls it as the process exits): writes FILE.v8cache
   * for each file loaded, with what V8 compiled of it while it ran, and for each of
   * dist/commands/*.cjs that has none yet, its top level compiled. Nothing else calls it.
   */
  writeCaches(): string[];
}

export const BOOT_KEY = Symbol.for('dus-sync.boot');
/** Set on the global by scripts/code-cache-writer.cjs before dist/cli.js runs: the build is making the caches. */
export const TRAINING_KEY = Symbol.for('dus-sync.code-cache-training');

/** FILE.v8cache's contents: the header, the source it was made from, then V8's data. */
export function codeCacheFile(source: Buffer, data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${MAGIC}\n${process.version}\n${source.length}\n`), source, data]);
}

/** V8's data in a cache made by this Node from exactly these bytes, else undefined. */
export function cachedDataOf(cache: Buffer, source: Buffer): Buffer | undefined {
  const head = cache.subarray(0, 128).toString('latin1').split('\n');
  if (head.length < 4 || head[0] !== MAGIC || head[1] !== process.version || head[2] !== String(source.length)) return undefined;
  const start = head[0].length + head[1].length + head[2].length + 3;
  if (cache.length <= start + source.length || !cache.subarray(start, start + source.length).equals(source)) return undefined;
  return cache.subarray(start + source.length);
}

/** The cache file, if it is a regular file no larger than a cache of `sourceLength` bytes could be. */
function readCache(file: string, sourceLength: number): Buffer | undefined {
  let fd: number;
  try {
    // Non-blocking: a FIFO put in its place would otherwise hold the open until a writer comes.
    fd = openSync(`${file}${CODE_CACHE_SUFFIX}`, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    // V8's data is about as large as the source; a cache holds the source and that.
    if (!st.isFile() || st.size > 4 * sourceLength + (1 << 20)) return undefined;
    const buf = Buffer.allocUnsafe(st.size);
    let at = 0;
    while (at < st.size) {
      const n = readSync(fd, buf, at, st.size - at, at);
      if (n === 0) break;
      at += n;
    }
    return at === st.size ? buf : undefined;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * The script's name: its path in the package, the same wherever dist/ is and whoever built it.
 * Made by join, a new string: a part cut from the file's path is a slice of it to V8, and the
 * cache held the whole path it was cut from (the builder's folder).
 */
function scriptName(dist: string, file: string): string {
  return [basename(dist), ...relative(dist, file).split(sep)].join('/');
}

/** Whether stack traces may be shown or mapped: then files are required as Node does, named as on disk. */
export function plainRequire(argv: readonly string[] = process.argv): boolean {
  // process.sourceMapsEnabled: --enable-source-maps on the command line or in NODE_OPTIONS (Node >= 20.7).
  return argv.includes('--debug') || process.sourceMapsEnabled;
}

/** Node's CommonJS wrapper, on the file's first line, so that lines keep their numbers. */
function wrap(source: Buffer): string {
  return `(function (exports, require, module, __filename, __dirname) { ${source.toString('utf8')}\n})`;
}

function compile(dist: string, file: string, source: Buffer, cachedData?: Buffer): Script {
  return new Script(wrap(source), { filename: scriptName(dist, file), ...(cachedData === undefined ? {} : { cachedData }) });
}

/**
 * Runs a CommonJS file of dist/ as Node's require would (the same wrapper and arguments), compiled
 * with its cache when it has a good one; with plainRequire, by require itself.
 */
export function loadCompiled(dist: string, file: string, loaded: LoadedFile[]): unknown {
  if (plainRequire()) return createRequire(file)(file);
  const source = readFileSync(file);
  const cache = readCache(file, source.length);
  const cachedData = cache === undefined ? undefined : cachedDataOf(cache, source);
  const script = compile(dist, file, source, cachedData);
  const training = (globalThis as Record<symbol, unknown>)[TRAINING_KEY] === true;
  loaded.push({ file, script, ...(training ? { source } : {}), cache: cachedData === undefined ? 'none' : script.cachedDataRejected === true ? 'refused' : 'taken' });
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  const module = { exports: {} as unknown };
  run.call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
  return module.exports;
}

/** Puts the loader on the global for the files it loads, and loads `main`. */
export function boot(dist: string, main: string): void {
  const loaded: LoadedFile[] = [];
  const files = new Map<string, unknown>();
  const shared: Boot = {
    loaded,
    command(file, name) {
      return Promise.resolve().then(() => {
        const path = join(dist, 'commands', file);
        if (!files.has(path)) files.set(path, loadCompiled(dist, path, loaded));
        const exports = files.get(path) as Record<string, unknown>;
        if (name === undefined) return exports;
        const init = exports[name];
        if (typeof init !== 'function') throw new Error(`${path} has no command ${name}: rebuild dist/ (npm run build)`);
        return (init as () => unknown)();
      });
    },
    writeCaches() {
      const written: string[] = [];
      const write = (file: string, source: Buffer, script: Script): void => {
        writeFileSync(`${file}${CODE_CACHE_SUFFIX}`, codeCacheFile(source, script.createCachedData()));
        written.push(file);
      };
      // The bytes that were compiled, not the file read again: a file changed meanwhile would get
      // a cache of other code under its own bytes.
      for (const { file, script, source } of loaded) {
        if (source === undefined) throw new Error('the code caches are made only under scripts/code-cache-writer.cjs');
        write(file, source, script);
      }
      const commands = join(dist, 'commands');
      for (const name of readdirSync(commands).filter((f) => f.endsWith('.cjs')).sort()) {
        const file = join(commands, name);
        if (written.includes(file) || existsSync(`${file}${CODE_CACHE_SUFFIX}`)) continue;
        const source = readFileSync(file);
        write(file, source, compile(dist, file, source));
      }
      return written;
    },
  };
  (globalThis as Record<symbol, unknown>)[BOOT_KEY] = shared;
  loadCompiled(dist, join(dist, main), loaded);
}
