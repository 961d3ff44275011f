// Drives routedoctor's netlink apply engine (dist/netlink/apply.js) on COUNT planned onlink routes
// through tunl0, in the current network namespace (run it with `ip netns exec NS node …`).
// The routes are the same as the `ip -batch` file run.mjs writes: DST via GW dev tunl0 onlink
// metric 31 proto 158, DST the /26 blocks of 10.0.0.0/8 from 10.0.0.64, GW one of 250 nodes.
// With --replaces each item also names the BIRD route it corrects (metric 32, proto bird), as the
// planner's items do on a node (run.mjs prefills those routes): the engine then reads them too.
// With --engine FILE the engine is imported from FILE: run.mjs passes the engine bundled into one module
// (bench/engine-bundle.mjs), as the CLI loads it from its bundle; without, from tsc's output in dist/.
// Prints one JSON line: {count, importMs, applyMs, applied, verified, errors}.
// Usage: node bench/apply-driver.mjs COUNT JOURNAL_DIR [--replaces] [--engine FILE]
import path from 'node:path'
import {performance} from 'node:perf_hooks'
import {pathToFileURL} from 'node:url'

import {APPLY_METRIC, APPLY_PROTO, plannedRoutes} from './apply-routes.mjs'

const count = Number(process.argv[2] ?? 10000)
const journalDir = process.argv[3]
const withReplaces = process.argv.includes('--replaces')
const engineAt = process.argv.indexOf('--engine')
const engine = engineAt > 0 ? process.argv[engineAt + 1] : undefined
if (!Number.isInteger(count) || count <= 0 || !journalDir || (engineAt > 0 && !engine)) {
  console.error('usage: node bench/apply-driver.mjs COUNT JOURNAL_DIR [--replaces] [--engine FILE]')
  process.exit(2)
}

const t0 = performance.now()
const {applyPlan} = await import(engine ? pathToFileURL(path.resolve(engine)).href : '../dist/netlink/apply.js')
const t1 = performance.now()
const pos = {file: 'ip-j-d-route.json', line: 1, endLine: 1}
// the planner (src/plan/plan.ts) makes one frozen next-hop list per gateway list and shares it among
// the routes through those gateways: so do the items here (250 gateways, 250 lists)
const hopsOf = new Map()
const hops = (gateway) => {
  let list = hopsOf.get(gateway)
  if (!list) hopsOf.set(gateway, (list = Object.freeze([Object.freeze({gateway, dev: 'tunl0', onlink: true, weight: 1})])))
  return list
}
const items = plannedRoutes(count).map(({dst, gateway}) => {
  const item = {
    planned: {dst, table: 'main', tableId: 254, metric: APPLY_METRIC, protocol: String(APPLY_PROTO), nexthops: hops(gateway)},
    mode: 'beside',
  }
  if (withReplaces) {
    // BIRD's route as the kernel parser gives it (KernelRoute)
    item.replaces = {
      family: 'inet', type: 'unicast', dst, table: 'main', tableId: 254, protocol: 'bird', scope: 'global', metric: APPLY_METRIC + 1, flags: ['onlink'],
      nexthops: [{gateway: {family: 'inet', address: gateway}, dev: 'tunl0', weight: 1, flags: ['onlink']}], pos,
    }
  }
  return item
})
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
