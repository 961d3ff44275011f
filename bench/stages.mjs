// Time (and, with --expose-gc, live heap) of each stage of `check` in one process, to see where a full
// table's time goes: read files, parse the kernel's routes (then its text is dropped and collected),
// parse BIRD's, separate the healthy prefixes in bulk, drop the routes outside the pools that resolve nothing,
// drop BIRD's text (and collect), index the snapshot,
// diagnose and write the report (to /dev/null). CPU time (all threads, GC helpers included) is steadier
// than wall time on a busy machine. Needs dist/ (npm run build).
// As `check` runs it (bulk/build.ts buildBulkSnapshot, stage by stage): routes of the healthy shapes (and, for the
// text report, BIRD's routes off the tunnel) deferred while parsing and reported in bulk, the texts dropped; the text
// report without evidence or plans, as check writes it.
// --json: the JSON report (with evidence and plans). --rules: every route parsed and diagnosed by the
// rules, nothing dropped (the report is the same, byte for byte).
// Usage: node [--expose-gc] bench/stages.mjs SNAPSHOT_DIR [--json] [--rules]
import {createWriteStream} from 'node:fs'
import {performance} from 'node:perf_hooks'

const dist = new URL('../dist/', import.meta.url)
const {readSnapshotDir} = await import(new URL('collect/snapshot-dir.js', dist))
const {buildSnapshot} = await import(new URL('snapshot/build.js', dist))
const {dropSourceTexts, withoutUnreadRoutes} = await import(new URL('bulk/drop-texts.js', dist))
const {SnapshotIndex} = await import(new URL('model/snapshot-index.js', dist))
const {separateHealthy} = await import(new URL('bulk/healthy.js', dist))
const {Deferral} = await import(new URL('bulk/build.js', dist))
const {collectGarbage} = await import(new URL('runtime/collect-garbage.js', dist))
const {checkRun} = await import(new URL('report/report.js', dist))
const {writeJson, writeLines, checkLineJson} = await import(new URL('render/json.js', dist))
const {renderCheckLines} = await import(new URL('render/text.js', dist))
const {palette} = await import(new URL('render/style.js', dist))

const dir = process.argv[2]
const json = process.argv.includes('--json')
const bulk = !process.argv.includes('--rules')
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

// in a function of its own, as the CLI's loader: its frame (which holds the texts) is gone when it returns
async function snapshotOf() {
  const files = await readSnapshotDir(dir)
  stage('read')
  if (!bulk) {
    const s = buildSnapshot(files)
    stage('parse')
    return s
  }
  const deferral = new Deferral(!json) // the text report separates the prefixes BIRD routes off the tunnel too
  let s = buildSnapshot(files, {defer: deferral, consume: true, onTextDropped: () => {
    stage('parse kernel')
    collectGarbage()
    stage('collect')
  }})
  stage('parse BIRD')
  s = separateHealthy(s, deferral.routes, {offTunnel: !json})
  stage(`separate (${s.healthy?.keys.length ?? 0} healthy, ${s.broken?.keys.length ?? 0} broken)`)
  s = withoutUnreadRoutes(s)
  stage('drop unread')
  s = dropSourceTexts(s)
  stage('drop texts')
  return s
}
const snapshot = await snapshotOf()
if (bulk) {
  collectGarbage()
  stage('collect')
}
const ctx = new SnapshotIndex(snapshot, {evidence: json || !bulk, texts: json || !bulk})
stage('index')
const run = checkRun(ctx, {plans: json || !bulk})
stage('prepare')
const out = createWriteStream('/dev/null')
if (json)
  await writeJson(
    out,
    {schema: run.schema, node: run.node, prefixes: run.lines, host: run.host, summary: run.summary},
    {prefixes: checkLineJson},
  )
else await writeLines(out, renderCheckLines(run, palette(false)))
stage('diagnose+write')
console.log(`rss peak ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`)
