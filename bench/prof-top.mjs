// Summarize a V8 .cpuprofile (node --cpu-prof): top functions by self time and by inclusive time,
// plus self time per file (dist/ paths shown as their src/ counterparts).
// Usage: node bench/prof-top.mjs FILE.cpuprofile [N]
import {readFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..') // the project: its dist/ maps to src/

const [file, nText = '25'] = process.argv.slice(2)
if (!file) {
  console.error('usage: node bench/prof-top.mjs FILE.cpuprofile [N]')
  process.exit(2)
}
const N = Number(nText)
const prof = JSON.parse(readFileSync(file, 'utf8'))
const byId = new Map(prof.nodes.map((n) => [n.id, n]))
const parent = new Map()
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

// sample time per node: deltas between consecutive samples
const selfUs = new Map()
for (let i = 0; i < prof.samples.length; i++) {
  const dt = prof.timeDeltas[i + 1] ?? 0
  selfUs.set(prof.samples[i], (selfUs.get(prof.samples[i]) ?? 0) + dt)
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0)

function where(cf) {
  let url = cf.url.replace(/^file:\/\//, '')
  const m = url.startsWith(`${ROOT}/dist/`) && /\/dist\/(.*)\.js$/.exec(url.slice(ROOT.length))
  if (m) url = `src/${m[1]}.ts`
  else url = url.replace(/.*\/node_modules\//, 'node_modules/')
  return url || '(native)'
}
const key = (cf) => `${cf.functionName || '(anonymous)'}  ${where(cf)}:${cf.lineNumber + 1}`

const self = new Map()
const incl = new Map()
const perFile = new Map()
for (const [id, us] of selfUs) {
  const n = byId.get(id)
  const k = key(n.callFrame)
  self.set(k, (self.get(k) ?? 0) + us)
  const f = where(n.callFrame)
  perFile.set(f, (perFile.get(f) ?? 0) + us)
  // inclusive: count once per distinct function on the stack
  const seen = new Set()
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const kk = key(byId.get(cur).callFrame)
    if (seen.has(kk)) continue
    seen.add(kk)
    incl.set(kk, (incl.get(kk) ?? 0) + us)
  }
}
const ms = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%`
const top = (m, title) => {
  console.log(`\n== ${title} (total ${(total / 1000).toFixed(0)} ms)`)
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, N)) console.log(`${ms(us)}  ${k}`)
}
top(self, 'self time')
top(incl, 'inclusive time')
top(perFile, 'self time per file')
