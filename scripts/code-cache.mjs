// Records V8's code cache for the CLI's start-up chunk (src/runtime/code-cache.ts). A child process runs
// the main commands on the shipped example, so the cache holds the functions they compile and not
// only the chunk's top level, then writes it; a second process checks that the cache is accepted.
// Run by `npm run build` last (after scripts/bundle.mjs and scripts/manifest.mjs: the commands read
// oclif.manifest.json). Nothing here touches the node: every command reads the example (--from).
import {spawnSync} from 'node:child_process'
import path from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const cli = pathToFileURL(path.join(root, 'dist', 'app', 'cli.js')).href
const loader = pathToFileURL(path.join(root, 'dist', 'runtime', 'code-cache.js')).href
const bin = path.join(root, 'bin', 'run.js')
const example = path.join(root, 'examples', 'bird2-ecmp-not-tunneled')

// what most runs do: the text and JSON of check, explain (a prefix and an address) and the fix plan
const RUNS = [
  ['check', '--from', example],
  ['check', '--json', '--from', example],
  ['explain', '192.168.110.128/26', '--from', example],
  ['explain', '--json', '192.168.110.130', '--from', example],
  ['fix', '--from', example],
  ['fix', '--json', '--from', example],
]

if (process.argv[2] === '--record') {
  const {writeCodeCaches} = await import(loader)
  const {run} = await import(cli)
  for (const args of RUNS) {
    process.argv = [process.argv[0], bin, ...args]
    await run(pathToFileURL(bin).href)
    process.exitCode = 0 // check exits 1 on the example's findings
  }
  const written = writeCodeCaches()
  if (written.length === 0) throw new Error('no start-up chunk was loaded through src/runtime/code-cache.ts')
  process.stderr.write(`${written.map((f) => path.relative(root, f)).join(', ')}\n`)
  process.exit(0)
}

const t0 = Date.now()
const env = {...process.env, ROUTEDOCTOR_NO_CODE_CACHE: '1', NO_COLOR: '1'} // record from a compile, not from an older cache
const record = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--record'], {cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8'})
if (record.status !== 0) {
  process.stderr.write(record.stderr)
  throw new Error(`scripts/code-cache.mjs: recording the code cache failed (exit ${record.status ?? record.signal})`)
}
const check = spawnSync(process.execPath, ['--input-type=module', '-e', `const {codeCacheStates} = await import(${JSON.stringify(loader)}); await import(${JSON.stringify(cli)}); console.log(JSON.stringify(codeCacheStates()))`], {cwd: root, encoding: 'utf8'})
const states = check.status === 0 ? JSON.parse(check.stdout) : []
const refused = states.filter((s) => s.state !== 'accepted')
if (states.length === 0 || refused.length > 0) console.error(`scripts/code-cache.mjs: warning: the code cache is not used (${check.stderr.trim() || refused.map((s) => `${path.relative(root, s.file)}: ${s.state}`).join(', ') || 'no chunk loaded'}); the CLI works, it compiles at start-up`)
else console.error(`code cache: ${record.stderr.trim()} recorded in ${Date.now() - t0} ms, accepted`)
