// Bundles the compiled CLI (dist/, from tsc) into dist/app/ with rolldown, for start-up time (docs/
// performance.md). bin/run.js imports dist/app/cli.js, whose one start-up chunk holds oclif, chalk,
// ipaddr.js and every command: `routedoctor explain` reads a few files instead of resolving and
// compiling ~150 CommonJS modules one by one. Run by `npm run build` after tsc and before
// scripts/manifest.mjs (oclif's "explicit" command discovery imports cli.js's COMMANDS).
//
// What only some runs need stays out of the start-up chunk:
//  - the netlink binding (`fix --apply/--revert`): reached through dynamic import(), loaded from
//    node_modules (LAZY);
//  - each command's own services (fix, bundle, the UI and its actions, live collection) are chunks of
//    their own, reached through dynamic import(). execa is bundled into the live collection's chunk,
//    and Ink with React into the UI's, React's production build (from node_modules execa is ~130 ES
//    modules that Node resolves and compiles one by one, ~95 ms of every live run; Ink and React
// ~350 ms of `ui`'s start), and prom-client into `watch --listen`'s; none of them may reach the start-up chunk
// (BUNDLED_LAZY);
//  - what is required synchronously but used only on some paths — yaml (a YAML IPPool file), and the
//    packages oclif requires when it loads but uses only for help, plugins, globbing, rc files or
//    spinners (SIDE) — is bundled into CommonJS files under dist/app/lazy/, required on first use of
//    one of its exports through a stand-in module with the same export names.
//
// The start-up chunk is compiled through V8's code cache (src/runtime/code-cache.ts): it is kept as a
// CommonJS file that the chunk loads (commonJsStartup below); scripts/code-cache.mjs records the cache
// after scripts/manifest.mjs.
import {existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {build} from 'rolldown'
import {parseAst} from 'rolldown/parseAst'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const outDir = path.join(root, 'dist', 'app')
const buildDir = path.join(root, 'dist', `.app-${process.pid}`) // swapped in for outDir when complete
const entry = path.join(root, 'dist', 'main.js')
if (!existsSync(entry)) throw new Error(`${path.relative(root, entry)} is missing: run tsc -p tsconfig.build.json first`)
const require = createRequire(import.meta.url)
const oclifRequire = createRequire(require.resolve('@oclif/core')) // oclif's own dependencies, as oclif resolves them

// Loaded from node_modules by dynamic import(), only by the commands that use them (a native addon; the
// Kubernetes client, for --kube).
const LAZY = ['netlink', '@kubernetes/client-node']
// Bundled, but only into lazy chunks: the start-up chunk must not hold their code.
const BUNDLED_LAZY = ['execa', 'ink', 'react', 'react-reconciler', 'yoga-layout', 'prom-client']
// Never loaded: oclif asks for them only to run TypeScript sources in development, which the bundled
// CLI turns off (src/main.ts); Ink for React's devtools only with DEV=true, which the ui command
// hides while Ink loads (src/commands/ui.ts).
const NEVER = ['typescript', 'tsx', 'ts-node', 'react-devtools-core']
// Required by oclif's modules when they load, used only for --help (ejs), plugins (minimatch),
// command globbing (tinyglobby), rc files (lilconfig), spinners (cli-spinners), the engine warning
// (semver; it cannot fire in a bundle), flags read from stdin (readline), performance tracing
// (perf_hooks).
const SIDE = ['ejs', 'minimatch', 'tinyglobby', 'lilconfig', 'cli-spinners', 'semver']
const LAZY_BUILTINS = ['node:readline', 'node:perf_hooks']
const OCLIF_DIR = `${path.sep}@oclif${path.sep}core${path.sep}`
// src/parse/load-yaml.ts requires yaml synchronously; in the bundle it requires the side file.
const loadYamlModule = path.join(root, 'dist', 'parse', 'load-yaml.js')
const yamlDir = path.dirname(require.resolve('yaml/package.json'))
const yamlLog = path.join(yamlDir, 'browser', 'dist', 'log.js')

const PLACEHOLDER = 'routedoctor-side:' // + name: becomes the side file's path relative to the chunk
// becomes the path of src/runtime/code-cache.ts's build relative to the chunk: one loader for every file it caches
const LOADER = 'routedoctor-loader:'
const loaderFile = path.join(root, 'dist', 'runtime', 'code-cache.js')
// + name: becomes the path of the bundle's entry `name` (ENTRIES) relative to the chunk, for a worker thread to start
const ENTRY = 'routedoctor-entry:'
// entries besides cli.js: the fleet's worker thread (src/services/fleet-worker.ts)
const ENTRIES = {'fleet-worker': path.join(root, 'dist', 'services', 'fleet-worker.js')}
const seen = new Set() // what the plugins replaced: a warning names what they no longer find

/** A CommonJS stand-in for module `real` (required as `spec`) that loads it on first use of an export. */
function standIn(spec, real) {
  const lines = ['let real', `const load = () => (real ??= require(${JSON.stringify(spec)}))`]
  if (typeof real === 'function') lines.push('module.exports = function (...args) { return new.target ? Reflect.construct(load(), args, new.target) : load().apply(this, args) }')
  if (real.__esModule) lines.push('Object.defineProperty(module.exports, "__esModule", {value: true})')
  for (const key of Object.getOwnPropertyNames(real)) {
    if (key === '__esModule' || (typeof real === 'function' && ['length', 'name', 'prototype', 'arguments', 'caller'].includes(key))) continue
    lines.push(`Object.defineProperty(module.exports, ${JSON.stringify(key)}, {enumerable: true, configurable: true, get: () => load()[${JSON.stringify(key)}]})`)
  }
  return lines.join('\n') + '\n'
}

/** The modules the entry reaches through static imports: they make up the start-up chunk. */
let closure
function staticClosure(ctx) {
  if (closure) return closure
  closure = new Set()
  const queue = [entry]
  while (queue.length > 0) {
    const id = queue.pop()
    if (closure.has(id)) continue
    closure.add(id)
    queue.push(...(ctx.getModuleInfo(id)?.importedIds ?? []))
  }
  return closure
}

const lazyPlugin = {
  name: 'routedoctor-lazy',
  resolveId(source, importer) {
    if (source.startsWith(PLACEHOLDER) || source === LOADER) return {id: source, external: true}
    if (importer?.includes(OCLIF_DIR) && (SIDE.includes(source) || LAZY_BUILTINS.includes(source))) return `\0lazy:${source}`
  },
  load(id) {
    if (id.startsWith('\0lazy:')) {
      const name = id.slice('\0lazy:'.length)
      seen.add(name)
      return name.startsWith('node:') ? standIn(name, require(name)) : standIn(PLACEHOLDER + name, oclifRequire(name))
    }
    if (id === loadYamlModule) {
      // through V8's code cache, as the start-up chunk (compiling yaml was ~10 ms of a run that reads ippools.yaml)
      seen.add('yaml')
      return [
        `import {loadCommonJs} from ${JSON.stringify(LOADER)}`,
        'let yaml',
        `export function loadYaml() { return (yaml ??= loadCommonJs(new URL(${JSON.stringify(PLACEHOLDER + 'yaml')}, import.meta.url))) }`,
        '',
      ].join('\n')
    }
  },
  transform(code, id) {
    // React's and its reconciler's production builds (their entries pick one by NODE_ENV when they load)
    if (/[\\/]node_modules[\\/](react|react-reconciler|scheduler)[\\/]/.test(id) && code.includes('process.env.NODE_ENV')) {
      seen.add('NODE_ENV')
      return {code: code.replaceAll('process.env.NODE_ENV', '"production"'), map: null}
    }
    // oclif sorts its command list with localeCompare, whose first call builds an ICU collator
    // (~15 ms, a tenth of start-up); command ids are ASCII, and comparing code units orders them the same.
    if (id.endsWith(path.join('@oclif', 'core', 'lib', 'config', 'plugin.js'))) {
      const from = '.sort((a, b) => a.id.localeCompare(b.id))'
      if (!code.includes(from)) return
      seen.add('localeCompare')
      return {code: code.replace(from, '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))'), map: null}
    }
  },
  renderChunk(code, chunk) {
    const from = path.dirname(path.join(buildDir, chunk.fileName))
    const relative = (to) => {
      const rel = path.relative(from, to)
      return JSON.stringify((rel.startsWith('.') ? rel : `./${rel}`).split(path.sep).join('/'))
    }
    const fixed = code
      .replace(new RegExp(`(["'])${PLACEHOLDER}([\\w-]+)\\1`, 'g'), (_, quote, name) => relative(path.join(buildDir, 'lazy', `${name}.cjs`)))
      // (buildDir becomes outDir, at the same depth under dist/)
      .replace(new RegExp(`(["'])${LOADER}\\1`, 'g'), () => relative(loaderFile))
      .replace(new RegExp(`(["'])${ENTRY}([\\w-]+)\\1`, 'g'), (_, quote, name) => {
        if (!(name in ENTRIES)) throw new Error(`scripts/bundle.mjs: ${ENTRY}${name} is no entry of the bundle`)
        seen.add(`${ENTRY}${name}`)
        return relative(path.join(buildDir, `${name}.js`))
      })
    return fixed === code ? null : {code: fixed}
  },
}

// yaml's ES module build (its non-node export: the same code as its CommonJS build, which rolldown
// would wrap module by module; hoisted into one scope it loads in half the time), with the node
// build's warning channel (process.emitWarning).
const yamlLogPlugin = {
  name: 'routedoctor-yaml-log',
  load(id) {
    if (id !== yamlLog) return
    seen.add('yaml log')
    return `import process from 'node:process'
export function debug(logLevel, ...messages) { if (logLevel === 'debug') console.log(...messages) }
export function warn(logLevel, warning) {
  if (logLevel === 'debug' || logLevel === 'warn') {
    if (typeof process.emitWarning === 'function') process.emitWarning(warning)
    else console.warn(warning)
  }
}
`
  },
}

/**
 * Makes the start-up chunk loadable through V8's code cache (src/runtime/code-cache.ts): its code becomes
 * a CommonJS file beside it (the rolldown runtime inlined, every import() rewritten to __import()),
 * and the chunk itself a facade that loads that file and re-exports `exportNames`, so the lazy chunks
 * and cli.js import it unchanged. Returns the CommonJS file's path.
 */
async function commonJsStartup(chunkFile, exportNames) {
  const chunksDir = path.dirname(chunkFile)
  const runtime = readdirSync(chunksDir).find((f) => f.startsWith('rolldown-runtime-'))
  const runtimeFile = runtime && path.join(chunksDir, runtime)
  const converted = await build({
    input: chunkFile,
    platform: 'node',
    logLevel: 'warn',
    write: false,
    // keep every import as it is (node: built-ins; the lazy chunks, loaded by import()) but the runtime
    external: (id, importer) => importer !== undefined && (id.startsWith('.') ? path.resolve(path.dirname(importer), id) : id) !== runtimeFile,
    output: {format: 'cjs', exports: 'named', strict: true},
  })
  const code = converted.output[0].code
  const imports = []
  const walk = (node) => {
    if (Array.isArray(node)) for (const n of node) walk(n)
    else if (node && typeof node === 'object') {
      if (node.type === 'ImportExpression') imports.push(node.start)
      for (const key in node) if (key !== 'start' && key !== 'end' && node[key] && typeof node[key] === 'object') walk(node[key])
    }
  }
  walk(parseAst(code, {sourceType: 'script'}))
  let out = ''
  let at = 0
  for (const start of imports.sort((a, b) => a - b)) {
    if (code.slice(start, start + 6) !== 'import') throw new Error(`scripts/bundle.mjs: no import() at offset ${start} of the start-up chunk (${JSON.stringify(code.slice(start, start + 20))})`)
    out += `${code.slice(at, start)}__import`
    at = start + 6
  }
  out += code.slice(at)
  const cjsFile = chunkFile.replace(/\.js$/, '.cjs')
  writeFileSync(cjsFile, out)
  const loader = path.relative(chunksDir, loaderFile).split(path.sep).join('/')
  const locals = exportNames.map((name, i) => `  e${i} = startup[${JSON.stringify(name)}]`)
  writeFileSync(chunkFile, [
    `// The start-up chunk: its code is ${path.basename(cjsFile)}, compiled through V8's code cache (src/runtime/code-cache.ts, scripts/bundle.mjs).`,
    `import {loadCommonJs} from ${JSON.stringify(loader)}`,
    `const startup = loadCommonJs(new URL(${JSON.stringify(`./${path.basename(cjsFile)}`)}, import.meta.url))`,
    `const\n${locals.join(',\n')}`,
    `export {${exportNames.map((name, i) => `e${i} as ${name}`).join(', ')}}`,
    '',
  ].join('\n'))
  return cjsFile
}

const t0 = Date.now()
rmSync(buildDir, {recursive: true, force: true})
try {
  const app = await build({
    input: {cli: entry, ...ENTRIES},
    platform: 'node',
    external: [...LAZY, ...NEVER].map((name) => new RegExp(`^${name}(/|$)`)),
    plugins: [lazyPlugin],
    logLevel: 'warn',
    output: {
      dir: buildDir, format: 'esm', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js',
      // everything the entry imports statically in one chunk (rolldown would otherwise split out each
      // module that a lazy chunk shares with it); the lazy chunks import from it
      codeSplitting: {groups: [{debugName: 'startup', name: (id, ctx) => (staticClosure(ctx).has(id) ? 'startup' : null)}]},
    },
  })
  await build({
    input: Object.fromEntries([...SIDE.map((name) => [name, oclifRequire.resolve(name)]), ['yaml', path.join(yamlDir, 'browser', 'index.js')]]),
    platform: 'node',
    plugins: [yamlLogPlugin],
    logLevel: 'warn',
    output: {dir: path.join(buildDir, 'lazy'), format: 'cjs', exports: 'named', entryFileNames: '[name].cjs', chunkFileNames: 'shared-[hash].cjs'},
  })
  const startup = app.output.find((c) => c.type === 'chunk' && c.fileName.startsWith('chunks/startup-'))
  if (!startup) throw new Error('rolldown made no start-up chunk')
  const heavy = BUNDLED_LAZY.filter((name) => startup.moduleIds.some((id) => id.includes(`${path.sep}node_modules${path.sep}${name}${path.sep}`)))
  if (heavy.length > 0) throw new Error(`the start-up chunk holds ${heavy.join(', ')}: it must be reached only through a dynamic import()`)
  const startupCjs = await commonJsStartup(path.join(buildDir, startup.fileName), startup.exports)

  const missing = [...SIDE, ...LAZY_BUILTINS, 'yaml', 'yaml log', 'localeCompare', 'NODE_ENV', ...Object.keys(ENTRIES).map((name) => `${ENTRY}${name}`)].filter((name) => !seen.has(name))
  if (missing.length > 0) console.error(`scripts/bundle.mjs: warning: nothing to replace for ${missing.join(', ')} (did oclif, yaml or src/parse/load-yaml.ts change?)`)

  // Nothing LAZY may be reachable through static imports from cli.js: follow them.
  const reached = new Set()
  const visit = (file) => {
    if (reached.has(file)) return
    reached.add(file)
    for (const m of readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm)) {
      const spec = m[1] ?? m[2]
      if (spec.startsWith('.')) visit(path.resolve(path.dirname(file), spec))
      else reached.add(spec)
    }
  }
  visit(path.join(buildDir, 'cli.js'))
  // …and the CommonJS start-up chunk requires none of them either
  for (const m of readFileSync(startupCjs, 'utf8').matchAll(/\brequire\(\s*["']([^"'.][^"']*)["']\s*\)/g)) reached.add(m[1])
  reached.add(startupCjs)
  const eager = [...reached].filter((s) => LAZY.some((name) => s === name || s.startsWith(`${name}/`)))
  if (eager.length > 0) throw new Error(`dist/app/cli.js imports ${eager.join(', ')} statically: they must stay behind a dynamic import()`)
  const files = [...reached].filter((s) => path.isAbsolute(s)).map((f) => path.relative(buildDir, f))

  // swap the new build in whole: a CLI starting meanwhile finds one build or the other
  const old = `${buildDir}-old`
  if (existsSync(outDir)) renameSync(outDir, old)
  renameSync(buildDir, outDir)
  rmSync(old, {recursive: true, force: true})
  console.error(`dist/app: built in ${Date.now() - t0} ms; start-up loads ${files.join(', ')}`)
} finally {
  rmSync(buildDir, {recursive: true, force: true})
}
