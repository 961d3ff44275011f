// Drives routedoctor's netlink apply engine (dist/netlink/apply.js) on COUNT planned onlink routes
// through tunl0, in the current network namespace (run it with `ip netns exec NS node …`).
// The routes are the same as the `ip -batch` file run.mjs writes: DST via GW dev tunl0 onlink
// metric 31 proto 158, DST the /26 blocks of 10.0.0.0/8 from 10.0.0.64, GW one of 250 nodes.
// Prints one JSON line: {count, importMs, applyMs, applied, verified, errors}.
// Usage: node bench/apply-driver.mjs COUNT JOURNAL_DIR
import {performance} from 'node:perf_hooks'

import {APPLY_METRIC, APPLY_PROTO, plannedRoutes} from './apply-routes.mjs'

const count = Number(process.argv[2] ?? 10000)
const journalDir = process.argv[3]
if (!Number.isInteger(count) || count <= 0 || !journalDir) {
  console.error('usage: node bench/apply-driver.mjs COUNT JOURNAL_DIR')
  process.exit(2)
}

const t0 = performance.now()
const {applyPlan} = await import('../dist/netlink/apply.js')
const t1 = performance.now()
const items = plannedRoutes(count).map(({dst, gateway}) => ({
  planned: {dst, table: 'main', tableId: 254, metric: APPLY_METRIC, protocol: String(APPLY_PROTO), nexthops: [{gateway, dev: 'tunl0', onlink: true, weight: 1}]},
  mode: 'beside',
}))
const t2 = performance.now()
const result = await applyPlan(items, {journalDir, watchSeconds: 0})
const t3 = performance.now()
process.stdout.write(`${JSON.stringify({
  count,
  importMs: +(t1 - t0).toFixed(1),
  applyMs: +(t3 - t2).toFixed(1),
  applied: result.applied.length,
  verified: result.verified,
  errors: result.errors.slice(0, 3),
})}\n`)
