// Loads the CLI's start-up chunk through V8's code cache. Compiling that chunk (oclif, chalk,
// ipaddr.js and every command) and the functions a command calls is most of routedoctor's
// start-up beyond Node's own (docs/performance.md). Node 20 has no compile cache for ES modules
// (module.enableCompileCache came in Node 22), so scripts/bundle.mjs turns that chunk into a
// CommonJS function body, compiled here by vm.Script with the cache `npm run build` recorded
// (scripts/code-cache.mjs). A cache that does not fit — another Node or V8, other V8 flags, an edited
// chunk — is ignored: the chunk then compiles as it would without one.
import {readFileSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import vm from 'node:vm'
import {crc32} from 'node:zlib'

/**
 * `absent`: no cache file (or ROUTEDOCTOR_NO_CODE_CACHE); `stale`: recorded for other source bytes; `rejected`: V8
 * refused it.
 */
export type CodeCacheState = 'accepted' | 'rejected' | 'stale' | 'absent'

// A cache file: this header, then V8's data. V8 itself checks its version, its flags and the source's
// length, not its content, so the header pins the bytes the cache was made from.
const MAGIC = 0x52_44_43_43 // "RDCC"
const HEADER = 12 // magic, crc32 of the source bytes, their length (u32 little-endian each)

interface Loaded {
  file: string
  script: vm.Script
  crc: number
  length: number
  state: CodeCacheState
}
const loaded: Loaded[] = []

export function cacheFileOf(file: string): string {
  return `${file}.cache`
}

/**
 * Runs the CommonJS file at `url` as Node would require it and returns its exports. Its dynamic
 * imports must have been rewritten to `__import(…)` (scripts/bundle.mjs does): import() inside a
 * vm.Script needs importModuleDynamically, experimental in Node 20 (a warning on every run) and lost
 * when the script comes from a code cache. `__import` resolves relative specifiers against `url`.
 */
export function loadCommonJs(url: URL): Record<string, unknown> {
  const file = fileURLToPath(url)
  const bytes = readFileSync(file)
  const crc = crc32(bytes)
  const cache = process.env.ROUTEDOCTOR_NO_CODE_CACHE ? undefined : readCache(cacheFileOf(file), crc, bytes.length)
  // the wrapper stays on the source's first line, so line numbers in stack traces are the file's
  const script = new vm.Script(
    `(function (exports, require, module, __filename, __dirname, __import) {${bytes.toString('utf8')}\n})`,
    {filename: file, cachedData: cache?.data},
  )
  const state: CodeCacheState =
    cache === undefined
      ? 'absent'
      : cache.data === undefined
        ? 'stale'
        : script.cachedDataRejected
          ? 'rejected'
          : 'accepted'
  loaded.push({file, script, crc, length: bytes.length, state})
  const module = {exports: {} as Record<string, unknown>}
  const importFrom = (specifier: string): Promise<unknown> =>
    import(/^\.\.?\//.test(specifier) ? new URL(specifier, url).href : specifier)
  const body = script.runInThisContext() as (...args: unknown[]) => void
  body.call(module.exports, module.exports, createRequire(file), module, file, path.dirname(file), importFrom)
  return module.exports
}

function readCache(cacheFile: string, crc: number, length: number): {data?: Buffer} | undefined {
  let buf: Buffer
  try {
    buf = readFileSync(cacheFile)
  } catch {
    return undefined // not recorded (a build without scripts/code-cache.mjs): compile as usual
  }
  const fits =
    buf.length > HEADER &&
    buf.readUInt32LE(0) === MAGIC &&
    buf.readUInt32LE(4) === crc &&
    buf.readUInt32LE(8) === length
  return {data: fits ? buf.subarray(HEADER) : undefined}
}

/** What happened to each file loadCommonJs loaded in this process (for the build's check and the tests). */
export function codeCacheStates(): Array<{file: string; state: CodeCacheState}> {
  return loaded.map(({file, state}) => ({file, state}))
}

/**
 * Writes the code cache of every file loaded in this process, with the functions compiled so far:
 * run after the commands it should serve (scripts/code-cache.mjs). Returns the files written.
 */
export function writeCodeCaches(): string[] {
  return loaded.map(({file, script, crc, length}) => {
    const header = Buffer.alloc(HEADER)
    header.writeUInt32LE(MAGIC, 0)
    header.writeUInt32LE(crc, 4)
    header.writeUInt32LE(length, 8)
    writeFileSync(cacheFileOf(file), Buffer.concat([header, script.createCachedData()]))
    return cacheFileOf(file)
  })
}
