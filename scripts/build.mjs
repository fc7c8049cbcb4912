// Bundles src/ into dist/ with esbuild, laid out for a fast cold start:
//
//   dist/cli.js             the entry (src/cli/boot.ts): tunes V8 for the run, then loads main.cjs
//   dist/main.cjs           commander, the command table and what they import, one file, so that
//                           `--version` and `--help` load nothing else
//   dist/commands/NAME.cjs  the offline commands of STANDALONE, each one file holding all its code
//   dist/commands/online.cjs  plan, apply, export, review, status and init, one file: each
//                           command's modules run when the command is first asked for (GROUPS)
//   dist/commands/agent.cjs watch and the emulator, the same way
//   dist/lazy/NAME.cjs      yaml and entities, required on first use (see LAZY)
//   dist/index.js           the programmatic API (src/index.ts), one file
//   dist/**/FILE.v8cache    V8's code cache of main.cjs and commands/*.cjs (scripts/code-cache.mjs)
//
// dist/ is CommonJS (dist/package.json). A CommonJS start skips Node's ES module loader (some
// 7 ms of a cold `validate` on Node 20), and V8's code cache, which Node 20 offers for scripts only
// (vm.Script), saves the compiling of what runs: some 25 ms more (src/cli/code-cache.ts). esbuild
// splits code into shared chunks only for ES modules, so the commands that used to share chunks
// are in two files (GROUPS), in which each command's modules are initialized lazily (esbuild wraps
// a module that is require()d so that it runs when first required).
//
// Every module file costs a start something (read, compile, link), and esbuild's code splitting
// gave validate 17 of them: one per set of entry points sharing code. The modules of dist/cli.js
// are shared with the commands by identity, not copied (one class for `instanceof`, one redaction
// registry, one output guard): dist/cli.js puts their namespaces on a global before the program
// runs, and in the command bundles an import of one of them reads that namespace (a CommonJS shim,
// so esbuild reads each binding live from it).
//
// The dependencies are bundled too: resolving and reading some 220 files of node_modules (yaml,
// Ajv, js-yaml, commander...) one by one was most of a cold start. They stay listed in
// package.json (an install still has them; nothing loads them from there). pino writes to a stream
// in this thread (never a worker transport, whose worker file a bundle would not have), so it
// bundles too. Bundled CommonJS calls require() for Node's builtins: the banner gives each ESM
// file a real require. Their license notices, which esbuild keeps only for /*! comments, are
// collected into dist/THIRD-PARTY-LICENSES.txt.
//
// The schemas that documents are checked against are not compiled by Ajv at run time: the build
// generates their validation functions as Ajv standalone code from schemas/ (with the options of
// src/load/document-ajv.ts) and bundles that module in place of src/load/validators.ts. Compiling
// them cost a cold validate some 70 ms, and Ajv's compiler is no longer loaded at all for it.
// The API's answers likewise (src/api/response-ajv.ts, in place of src/api/response-validators.ts):
// compiling them cost plan some 30 ms when its first answer came.
import { build } from 'esbuild';
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

/**
 * Commands built as one file each, all their code in it: the offline ones that run in CI, in
 * hooks and in shells, where their start is most of their time (validate's is a goal: at most
 * twice `node -e 0`). The others are in GROUPS: a copy of undici and the loader in each of them
 * would make dist/ some 40 MB.
 */
const STANDALONE = new Set(['validate', 'diff', 'schema', 'completion']);
/**
 * The other commands, in files of several (esbuild splits shared code into chunks only for ES
 * modules): each command's modules, and the packages they import, are initialized when it is first
 * asked for. watch and the emulator are apart: with them in one file, plan's peak RSS was some
 * 9 MB higher (V8 keeps what it compiled of the whole file), and they run with V8's default flags,
 * under which the code cache, made for one-shot commands, is refused (src/cli/short-run.ts).
 */
const GROUPS = { 'online.cjs': ['plan', 'apply', 'export', 'review', 'status', 'init'], 'agent.cjs': ['watch', 'emulator'] };
const LONG_RUNNING = 'agent.cjs';
const MAIN = resolve('src/cli/main.ts');
const BOOT = resolve('src/cli/boot.ts');
/** The global that dist/cli.js puts its modules' namespaces on, by path from the repository. */
const SHARED_KEY = "Symbol.for('dus-sync.cli-modules')";

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const validatorsSource = await precompiledValidatorsSource();
let validatorsReplaced = false;
const responseValidatorsSource = await precompiledResponseValidatorsSource();
let responseValidatorsReplaced = false;

const common = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  sourcemap: 'linked',
  legalComments: 'eof',
  banner: {
    js: "// Third-party code is bundled in dist/: its licenses are in dist/THIRD-PARTY-LICENSES.txt.\n"
      + "import { createRequire as __dusCreateRequire } from 'node:module'; const require = __dusCreateRequire(import.meta.url);",
  },
  define: { __DUS_SYNC_VERSION__: JSON.stringify(pkg.version) },
  metafile: true,
  logLevel: 'warning',
};
/** The same as CommonJS: import.meta.url is the file's URL, as in the ES modules. */
const cjs = {
  ...common,
  format: 'cjs',
  banner: {
    js: "// Third-party code is bundled in dist/: its licenses are in dist/THIRD-PARTY-LICENSES.txt.\n"
      + "const __dusImportMetaUrl = require('node:url').pathToFileURL(__filename).href;",
  },
  define: { ...common.define, 'import.meta.url': '__dusImportMetaUrl' },
};

// The command modules main.ts imports lazily (`import('./validate.js')`): dist/commands/NAME.cjs,
// or the command NAME of a file of GROUPS. dist/main.cjs runs as a script compiled with
// its code cache (src/cli/code-cache.ts), where an import() would need an experimental option of
// vm: main.ts's imports call the loader of dist/cli.js instead, which loads the file through its cache.
const commands = new Set();
const BOOT_KEY = "Symbol.for('dus-sync.boot')";
const commandsApart = {
  name: 'commands-apart',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/]cli[\\/]main\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8').replace(/\bimport\('\.\/([\w-]+)\.js'\)/g, (_, name) => {
        commands.add(name);
        const group = Object.keys(GROUPS).find((g) => GROUPS[g].includes(name));
        const args = STANDALONE.has(name) || group === undefined ? [`${name}.cjs`] : [group, name];
        return `globalThis[${BOOT_KEY}].command(${args.map((a) => JSON.stringify(a)).join(', ')})`;
      });
      if (/\bimport\(/.test(text)) throw new Error('scripts/build.mjs: src/cli/main.ts imports something other than a command lazily');
      return { contents: text, loader: 'ts' };
    });
  },
};

/**
 * Packages loaded only when first used. An import of one is a CommonJS shim with a getter per
 * export (the names taken from the package at build time) that loads the package on first
 * access; esbuild reads a binding of a CommonJS module at each use, so classes, instanceof and
 * functions are the package's own. yaml and entities are bundled on their own, into
 * dist/lazy/NAME.cjs, and required from there: the files that import them neither compile nor run
 * them unless they are used (dist/index.js, on its own, holds them and runs them on first use).
 * - yaml: some 250 KB, whose top level sets up classes and tables, some 4 ms, though a clean
 *   repository is read by js-yaml alone (yaml positions only issues);
 * - entities: some 80 KB, whose decoding tables are built when it loads, some 4 ms of every
 *   start, for the rare text that holds an HTML reference (redact.ts, the status page);
 * - child_process, for commander only: it is required when commander loads, for executable
 *   subcommands, which dus-sync does not have, and it brings net, dgram and the stream modules.
 */
const LAZY = [
  { filter: /^yaml$/, apart: true, from: () => true },
  { filter: /^entities$/, apart: true, from: () => true },
  { filter: /^(node:)?child_process$/, apart: false, from: (importer) => /[\\/]node_modules[\\/]commander[\\/]/.test(importer) },
];
const requireHere = createRequire(import.meta.url);
/** apart: the packages of LAZY that have a file of their own are required from it, beside dist/cli.js. */
const lazyModules = (apart) => ({
  name: 'lazy-modules',
  setup(b) {
    for (const { filter, from, apart: own } of LAZY) {
      b.onResolve({ filter }, (args) => (args.namespace === 'lazy-module' || !from(args.importer) ? undefined
        : { path: args.path, namespace: 'lazy-module', pluginData: { own: apart && own } }));
    }
    b.onLoad({ filter: /.*/, namespace: 'lazy-module' }, (args) => ({
      contents: `let m;\n`
        + (args.pluginData.own
          ? `const load = () => (m ??= require('node:module').createRequire(globalThis[${SHARED_KEY}]['dist/main.cjs'])(${JSON.stringify(`./lazy/${args.path}.cjs`)}));\n`
          : `const load = () => (m ??= require(${JSON.stringify(args.path)}));\n`)
        + `for (const k of ${JSON.stringify(Object.keys(requireHere(args.path)))}) Object.defineProperty(exports, k, { enumerable: true, get: () => load()[k] });\n`,
      loader: 'js',
      resolveDir: process.cwd(),
    }));
  },
});

const precompiledValidators = {
  name: 'precompiled-validators',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/]load[\\/]validators\.ts$/ }, (args) => {
      validatorsReplaced = true;
      return { contents: validatorsSource, loader: 'js', resolveDir: dirname(args.path) };
    });
    b.onLoad({ filter: /[\\/]src[\\/]api[\\/]response-validators\.ts$/ }, (args) => {
      responseValidatorsReplaced = true;
      return { contents: responseValidatorsSource, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

/**
 * undici's HTTP/2 client requires `node:http2` when it loads, for ten constants, and http2 brings
 * tls and crypto: some 10 ms of every start of plan and apply, for a protocol dus-sync never
 * offers (its Agent leaves `allowH2` off, so no connection is HTTP/2). The constants it reads
 * when it loads are copied here at build time (header names and error codes of the protocol);
 * anything else of http2 is required on first use, as before.
 */
const lazyHttp2 = {
  name: 'lazy-http2',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]undici[\\/]lib[\\/]dispatcher[\\/]client-h2\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      const loads = "http2 = require('node:http2')";
      const names = /const \{\s*constants: \{([^}]*)\}\s*\} = http2/.exec(text)?.[1].split(',').map((n) => n.trim()).filter(Boolean);
      if (!text.includes(loads) || names === undefined || names.length === 0) throw new Error('scripts/build.mjs: undici\'s client-h2.js no longer loads node:http2 as lazyHttp2 expects; update the plugin');
      const all = requireHere('node:http2').constants;
      const constants = Object.fromEntries(names.map((n) => {
        if (all[n] === undefined) throw new Error(`scripts/build.mjs: node:http2 has no constant ${n}`);
        return [n, all[n]];
      }));
      const lazy = `http2 = (() => { let m; const load = () => (m ??= require('node:http2')); const constants = ${JSON.stringify(constants)}; `
        + `return new Proxy({}, { get: (_, k) => (k === 'constants' ? new Proxy(constants, { get: (c, n) => (n in c ? c[n] : load().constants[n]) }) : load()[k]) }); })()`;
      return { contents: text.replace(loads, lazy), loader: 'js' };
    });
  },
};

const plugins = [lazyModules(true), precompiledValidators, lazyHttp2];
rmSync('dist', { recursive: true, force: true });

// 1. Which of our modules the entry holds (a dry run), then dist/main.cjs: a first module that
//    puts their namespaces on the global, then main.ts (whose last line runs the program); and
//    dist/cli.js, which tunes V8 and loads it.
const dry = await build({ ...cjs, entryPoints: [MAIN], outfile: 'dist/main.cjs', write: false, plugins: [commandsApart, ...plugins] });
const shared = Object.keys(dry.metafile.inputs).filter((p) => p.startsWith('src/') && resolve(p) !== MAIN).sort();
const registry = `${shared.map((p, i) => `import * as m${i} from ${JSON.stringify(resolve(p))};`).join('\n')}
globalThis[${SHARED_KEY}] = Object.freeze({ 'dist/main.cjs': import.meta.url, ${shared.map((p, i) => `${JSON.stringify(p)}: m${i}`).join(', ')} });
`;
const boot = await build({
  ...cjs,
  banner: { js: '#!/usr/bin/env node' },
  define: common.define,
  entryPoints: [BOOT],
  outfile: 'dist/cli.js',
  sourcemap: false,
});
chmodSync('dist/cli.js', 0o755);
writeFileSync('dist/package.json', `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
const cli = await build({
  ...cjs,
  stdin: { contents: `import 'dus-sync:shared-modules';\nimport ${JSON.stringify(MAIN)};\n`, resolveDir: process.cwd(), sourcefile: 'src/cli/entry.js' },
  outfile: 'dist/main.cjs',
  plugins: [commandsApart, ...plugins, {
    name: 'shared-modules',
    setup(b) {
      b.onResolve({ filter: /^dus-sync:shared-modules$/ }, () => ({ path: 'shared-modules', namespace: 'dus-sync' }));
      b.onLoad({ filter: /.*/, namespace: 'dus-sync' }, () => ({ contents: registry, resolveDir: process.cwd(), loader: 'js' }));
    },
  }],
});

// 2. The commands. An import of a module that dist/cli.js holds reads it from the global.
const sharedPaths = new Map(shared.map((p) => [resolve(p), p]));
const fromCli = {
  name: 'modules-of-cli',
  setup(b) {
    b.onResolve({ filter: /^\./ }, async (args) => {
      if (args.pluginData?.inner) return undefined;
      const r = await b.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, importer: args.importer, pluginData: { inner: true } });
      const p = r.errors.length === 0 ? sharedPaths.get(r.path) : undefined;
      return p === undefined ? undefined : { path: p, namespace: 'modules-of-cli' };
    });
    b.onLoad({ filter: /.*/, namespace: 'modules-of-cli' }, (args) => ({
      contents: `const all = globalThis[${SHARED_KEY}];\n`
        + `if (!all) throw new Error('dist/commands/ is loaded by dist/cli.js, not on its own');\n`
        + `module.exports = all[${JSON.stringify(args.path)}];\n`,
      loader: 'js',
    }));
  },
};
const commandsOut = { outdir: 'dist', entryNames: 'commands/[name]', chunkNames: 'chunks/[name]-[hash]' };
const entry = (name) => [name, `src/cli/${name}.ts`];
const builds = [dry, boot, cli];
for (const name of [...commands].filter((c) => STANDALONE.has(c))) {
  builds.push(await build({ ...cjs, ...commandsOut, outExtension: { '.js': '.cjs' }, entryPoints: Object.fromEntries([entry(name)]), plugins: [fromCli, ...plugins] }));
}
for (const [file, names] of Object.entries(GROUPS)) {
  builds.push(await build({
    ...cjs,
    stdin: {
      contents: names.map((c) => `exports[${JSON.stringify(c)}] = () => require(${JSON.stringify(resolve(`src/cli/${c}.ts`))});`).join('\n'),
      resolveDir: process.cwd(),
      sourcefile: `src/cli/${file.replace(/\.cjs$/, '.js')}`,
      loader: 'js',
    },
    outfile: `dist/commands/${file}`,
    plugins: [fromCli, ...plugins],
  }));
}
const grouped = Object.values(GROUPS).flat();
for (const name of commands) if (!STANDALONE.has(name) && !grouped.includes(name)) throw new Error(`scripts/build.mjs: main.ts imports the command ${name}, which neither STANDALONE nor GROUPS names`);
for (const name of STANDALONE) if (!commands.has(name)) throw new Error(`scripts/build.mjs: STANDALONE names ${name}, which main.ts does not import`);

// 3. The programmatic API, on its own.
builds.push(await build({ ...cjs, entryPoints: { index: 'src/index.ts' }, outdir: 'dist', plugins: [lazyModules(false), precompiledValidators, lazyHttp2] }));

// 4. dist/lazy/NAME.cjs: the packages of LAZY that are apart, each bundled on its own.
for (const { filter } of LAZY.filter((l) => l.apart)) {
  const name = filter.source.replace(/^\^|\$$/g, '');
  builds.push(await build({
    ...common,
    format: 'cjs',
    banner: { js: '// Third-party code: its license is in dist/THIRD-PARTY-LICENSES.txt.' },
    stdin: { contents: `module.exports = require(${JSON.stringify(name)});\n`, resolveDir: process.cwd(), sourcefile: `lazy-${name}.js` },
    outfile: `dist/lazy/${name}.cjs`,
  }));
}

// 5. Source maps keep the text of our sources only: the bundled packages' own are in node_modules
//    of any install, and a stack trace is mapped without them (half of the maps' size).
for (const dir of ['dist', 'dist/commands', 'dist/lazy']) {
  for (const name of readdirSync(dir).filter((f) => /\.c?js\.map$/.test(f))) {
    const map = JSON.parse(readFileSync(join(dir, name), 'utf8'));
    map.sourcesContent = map.sourcesContent?.map((text, i) => (map.sources[i].includes('node_modules/') ? null : text));
    writeFileSync(join(dir, name), JSON.stringify(map));
  }
}

if (!validatorsReplaced) throw new Error('src/load/validators.ts was not bundled: the precompiled validators are missing from dist/');
if (!responseValidatorsReplaced) throw new Error('src/api/response-validators.ts was not bundled: the precompiled response validators are missing from dist/');
writeFileSync('dist/THIRD-PARTY-LICENSES.txt', thirdPartyLicenses(builds.map((r) => r.metafile)));

// 6. V8's code cache of dist/main.cjs and dist/commands/*.cjs, from runs of the built CLI; none
//    for watch and the emulator, which would refuse it (GROUPS).
await import('./code-cache.mjs');
rmSync(join('dist', 'commands', `${LONG_RUNNING}.v8cache`));

/** Every package with code in the bundles: its name, version, license and license file(s). */
function thirdPartyLicenses(metafiles) {
  const dirs = new Map();
  for (const input of metafiles.flatMap((m) => Object.keys(m.inputs))) {
    const m = /^(.*node_modules\/((?:@[^/]+\/)?[^/]+))\//.exec(input);
    if (m) dirs.set(m[2], m[1]);
  }
  const parts = [`dus-sync bundles the following packages into dist/. Their license notices follow.\n`];
  for (const [name, dir] of [...dirs].sort(([a], [b]) => a.localeCompare(b))) {
    const meta = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const files = readdirSync(dir).filter((f) => /^(licen[cs]e|copying|notice)(\.|$)/i.test(f)).sort();
    if (files.length === 0) throw new Error(`${name} is bundled but has no license file to copy into dist/THIRD-PARTY-LICENSES.txt`);
    const texts = files.map((f) => readFileSync(join(dir, f), 'utf8').trim());
    parts.push(`${'-'.repeat(78)}\n${name}@${meta.version} (${meta.license ?? 'see below'})\n\n${texts.join('\n\n')}\n`);
  }
  return parts.join('\n');
}

/**
 * The module that replaces src/load/validators.ts: src/load/document-ajv.ts (bundled on the fly,
 * Ajv and all, and imported from memory) generates it from the schemas of this checkout.
 */
async function precompiledResponseValidatorsSource() {
  const generator = await build({
    entryPoints: [resolve('src/api/response-ajv.ts')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node20.19',
    logLevel: 'warning',
  });
  const { precompiledResponseValidatorsModule } = await import(`data:text/javascript;base64,${Buffer.from(generator.outputFiles[0].text).toString('base64')}`);
  return precompiledResponseValidatorsModule(JSON.parse(readFileSync(join('schemas', 'api.schema.json'), 'utf8')));
}

async function precompiledValidatorsSource() {
  const generator = await build({
    entryPoints: [resolve('src/load/document-ajv.ts')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node20.19',
    logLevel: 'warning',
  });
  const code = generator.outputFiles[0].text;
  const { precompiledValidatorsModule } = await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`);
  const schema = (name) => JSON.parse(readFileSync(join('schemas', `${name}.schema.json`), 'utf8'));
  return precompiledValidatorsModule({ resource: schema('resource'), config: schema('config') });
}
