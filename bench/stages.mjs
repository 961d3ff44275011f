// Time (and, with --expose-gc, live heap) of each stage of `check --json` in one process, to see
// where a full table's time goes: read files, build the snapshot (parse), index the context,
// diagnose and write the JSON (to /dev/null). CPU time (all threads, GC helpers included) is
// steadier than wall time on a busy machine. Needs dist/ (npm run build).
// As `check` runs it: routes of the healthy shapes set aside while parsing and settled in bulk (settle);
// with --rules, every route parsed and diagnosed by the rules (the report is the same, byte for byte).
// Usage: node [--expose-gc] bench/stages.mjs SNAPSHOT_DIR [--rules]
import {createWriteStream} from 'node:fs'
import {performance} from 'node:perf_hooks'

const dist = new URL('../dist/', import.meta.url)
const {readSnapshotDir} = await import(new URL('collect/snapshot-dir.js', dist))
const {buildSnapshot} = await import(new URL('model/build.js', dist))
const {Context} = await import(new URL('model/context.js', dist))
const {settleHealthy} = await import(new URL('diagnose/healthy.js', dist))
const {checkRun} = await import(new URL('services/report.js', dist))
const {writeJson, prefixLineJson} = await import(new URL('render/json.js', dist))

const dir = process.argv[2]
let t = performance.now()
let cpu = process.cpuUsage()
const stage = (name) => {
  const now = performance.now()
  const used = process.cpuUsage(cpu)
  let heap = ''
  if (globalThis.gc) {
    globalThis.gc()
    heap = `  heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB`
  }
  console.log(`${name.padEnd(15)} ${((now - t) / 1000).toFixed(2)} s  cpu ${((used.user + used.system) / 1e6).toFixed(2)} s${heap}`)
  t = performance.now()
  cpu = process.cpuUsage()
}
const files = await readSnapshotDir(dir)
stage('read')
const bulk = !process.argv.includes('--rules')
let snapshot = buildSnapshot(files, {aside: bulk})
stage('parse')
if (bulk) {
  snapshot = settleHealthy(snapshot)
  stage('settle')
}
const ctx = new Context(snapshot)
stage('context')
const run = checkRun(ctx)
stage('prepare')
const out = createWriteStream('/dev/null')
await writeJson(out, {schema: run.schema, node: run.node, prefixes: run.prefixes, host: run.host, summary: run.summary}, {prefixes: prefixLineJson})
stage('diagnose+write')
console.log(`rss peak ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`)
