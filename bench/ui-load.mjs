// What the interactive UI does first on a snapshot, without a terminal: its actions (dist/ui/actions.js, as
// `routedoctor ui --from DIR` builds them) load the list, then explain one broken prefix and one healthy one.
// Prints one JSON line: {prefixes, listMs, explainBrokenMs, explainHealthyMs}. Needs dist/ (npm run build).
// Usage: node bench/ui-load.mjs SNAPSHOT_DIR
import {performance} from 'node:perf_hooks'

const dir = process.argv[2]
if (!dir) {
  console.error('usage: node bench/ui-load.mjs SNAPSHOT_DIR')
  process.exit(2)
}
const {createActions} = await import('../dist/ui/actions.js')
const actions = createActions({from: dir})
const t0 = performance.now()
const report = await actions.loadReport()
const t1 = performance.now()
// from the middle of the list: neither the first prefixes nor the last
const pick = (ok) => report.prefixes.find((p, i) => i >= report.prefixes.length / 2 && (p.verdict === 'ok') === ok) ?? report.prefixes.find((p) => (p.verdict === 'ok') === ok)
const time = async (p) => {
  if (p === undefined) return undefined
  const t = performance.now()
  await actions.explain(p.prefix)
  return +(performance.now() - t).toFixed(1)
}
const explainBrokenMs = await time(pick(false))
const explainHealthyMs = await time(pick(true))
process.stdout.write(`${JSON.stringify({prefixes: report.prefixes.length, listMs: +(t1 - t0).toFixed(1), explainBrokenMs, explainHealthyMs})}\n`)
