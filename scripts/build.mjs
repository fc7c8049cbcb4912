// Bundles src/ into dist/ with esbuild: one small entry (commander + the command table) and
// one lazily loaded chunk per command, so `--version` loads almost nothing.
//
// The dependencies are bundled too: resolving and reading some 220 files of node_modules (yaml,
// Ajv, js-yaml, commander...) one by one was most of a cold start. They stay listed in
// package.json (an install still has them; nothing loads them from there). pino writes to a stream
// in this thread (never a worker transport, whose worker file a bundle would not have), so it
// bundles too. Bundled CommonJS calls require() for Node's builtins: the banner gives each ESM
// chunk a real require. Their license notices, which esbuild keeps only for /*! comments, are
// collected into dist/THIRD-PARTY-LICENSES.txt.
//
// The schemas that documents are checked against are not compiled by Ajv at run time: the build
// generates their validation functions as Ajv standalone code from schemas/ (with the options of
// src/load/document-ajv.ts) and bundles that module in place of src/load/validators.ts. Compiling
// them cost a cold validate some 70 ms, and Ajv's compiler is no longer loaded at all for it.
import { build } from 'esbuild';
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const validatorsSource = await precompiledValidatorsSource();
let validatorsReplaced = false;
rmSync('dist', { recursive: true, force: true });
const result = await build({
  entryPoints: { cli: 'src/cli/main.ts', index: 'src/index.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  sourcemap: 'linked',
  legalComments: 'eof',
  banner: {
    js: "// Third-party code is bundled in dist/: its licenses are in dist/THIRD-PARTY-LICENSES.txt.\n"
      + "import { createRequire as __dusCreateRequire } from 'node:module'; const require = __dusCreateRequire(import.meta.url);",
  },
  chunkNames: 'chunks/[name]-[hash]',
  define: { __DUS_SYNC_VERSION__: JSON.stringify(pkg.version) },
  metafile: true,
  logLevel: 'warning',
  plugins: [{
    // commander requires child_process when it loads, for executable subcommands, which
    // dus-sync does not have; with it came net, dgram and the stream modules, some 5 ms of every
    // start. Inside commander it is now loaded on first use instead.
    name: 'lazy-child-process-in-commander',
    setup(b) {
      b.onResolve({ filter: /^(node:)?child_process$/ }, (args) => (/[\\/]node_modules[\\/]commander[\\/]/.test(args.importer) ? { path: 'child_process', namespace: 'lazy-builtin' } : undefined));
      b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, () => ({
        contents: "let m; const load = () => (m ??= require('node:child_process'));\n"
          + 'module.exports = new Proxy({}, { get: (_, key) => load()[key], has: (_, key) => key in load(), ownKeys: () => Reflect.ownKeys(load()), getOwnPropertyDescriptor: (_, key) => Object.getOwnPropertyDescriptor(load(), key) });\n',
        loader: 'js',
      }));
    },
  }, {
    // entities (the HTML reference decoder of redact.ts, the escaper of the status page) builds
    // its decoding tables when it loads: some 4 ms of every start, though only text holding an
    // HTML reference needs it. Its functions are wrappers here that load it on first call.
    name: 'lazy-entities',
    setup(b) {
      b.onResolve({ filter: /^entities$/ }, (args) => (args.namespace === 'lazy-entities' ? undefined : { path: 'entities', namespace: 'lazy-entities' }));
      b.onLoad({ filter: /.*/, namespace: 'lazy-entities' }, () => ({
        contents: "let m; const load = () => (m ??= require('entities'));\n"
          + ['decodeHTML', 'escapeUTF8'].map((f) => `export const ${f} = (...args) => load().${f}(...args);\n`).join(''),
        loader: 'js',
        resolveDir: process.cwd(),
      }));
    },
  }, {
    name: 'precompiled-validators',
    setup(b) {
      b.onLoad({ filter: /[\\/]src[\\/]load[\\/]validators\.ts$/ }, (args) => {
        validatorsReplaced = true;
        return { contents: validatorsSource, loader: 'js', resolveDir: dirname(args.path) };
      });
    },
  }],
});
if (!validatorsReplaced) throw new Error('src/load/validators.ts was not bundled: the precompiled validators are missing from dist/');
chmodSync('dist/cli.js', 0o755);
writeFileSync('dist/THIRD-PARTY-LICENSES.txt', thirdPartyLicenses(result.metafile));

/** Every package with code in the bundle: its name, version, license and license file(s). */
function thirdPartyLicenses(metafile) {
  const dirs = new Map();
  for (const input of Object.keys(metafile.inputs)) {
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
