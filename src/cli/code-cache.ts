// Loading dist/'s CommonJS files (dist/main.cjs, dist/commands/NAME.cjs) through V8's code cache.
//
// A cold `validate` spent some 30 ms of its 150 compiling: parsing 650 KB of bundled JavaScript and
// compiling each function the first time it ran. The build runs the CLI once and keeps, beside
// each file, what V8 compiled (scripts/code-cache.mjs): FILE.v8cache. Loading a file with it skips
// that work. Node 22 has module.enableCompileCache for the same, but writes its cache at run time,
// into a folder of its own; dist/ is made once and read-only after that (the container image).
//
// V8 takes a cache only if it was made by the same V8 with the same flags; a cache it refuses
// costs nothing but the read. V8 checks a source by its length only, so the cache also holds the
// bytes it was made from: a file changed since (an edit of the same length) is compiled from its
// own text, never run as the code of another.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';

export const CODE_CACHE_SUFFIX = '.v8cache';
const MAGIC = 'dus-sync V8 code cache';

/** A file loaded here: its compiled script, and what became of its cache. */
export interface LoadedFile {
  readonly file: string;
  readonly script: Script;
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

function readCache(file: string): Buffer | undefined {
  try {
    return readFileSync(`${file}${CODE_CACHE_SUFFIX}`);
  } catch {
    return undefined;
  }
}

/** Node's CommonJS wrapper, on the file's first line, so that lines keep their numbers. */
function wrap(source: Buffer): string {
  return `(function (exports, require, module, __filename, __dirname) { ${source.toString('utf8')}\n})`;
}

/** Runs a CommonJS file as Node's require would (the same wrapper and arguments), compiled with its cache when it has one. */
export function loadCompiled(file: string, loaded: LoadedFile[]): unknown {
  const source = readFileSync(file);
  const cache = readCache(file);
  const cachedData = cache === undefined ? undefined : cachedDataOf(cache, source);
  const script = new Script(wrap(source), { filename: file, ...(cachedData === undefined ? {} : { cachedData }) });
  loaded.push({ file, script, cache: cachedData === undefined ? 'none' : script.cachedDataRejected === true ? 'refused' : 'taken' });
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
        if (!files.has(path)) files.set(path, loadCompiled(path, loaded));
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
      for (const { file, script } of loaded) write(file, readFileSync(file), script);
      const commands = join(dist, 'commands');
      for (const name of readdirSync(commands).filter((f) => f.endsWith('.cjs')).sort()) {
        const file = join(commands, name);
        if (written.includes(file) || existsSync(`${file}${CODE_CACHE_SUFFIX}`)) continue;
        const source = readFileSync(file);
        write(file, source, new Script(wrap(source), { filename: file }));
      }
      return written;
    },
  };
  (globalThis as Record<symbol, unknown>)[BOOT_KEY] = shared;
  loadCompiled(join(dist, main), loaded);
}
