// `check`'s bulk path: which of the routes the parsers set aside (model/aside.ts) are healthy prefixes,
// settled as numbers, and every other one parsed after all, back in its place, for the rules to read.
//
// A pool prefix is healthy here when BIRD holds exactly one path for it — the primary, unicast, over BGP,
// with IPv4 BGP next hop N — and the kernel exactly one route — `via G dev TUNNEL onlink proto bird`,
// unicast, table main — and nothing else holds the prefix in either, no route set aside covers N, and the
// kernel can reach N. Every prefix rule then finds nothing: prefix-missing and stale-kernel-route (both
// hold it), bird-kernel-mismatch (a proto bird route), nexthop-unresolvable-by-bird (unicast),
// nexthop-unreachable (N reachable), tunnel-bypassed-by-ecmp and tunnel-not-programmed (through the
// tunnel), multipath-lost (one next hop), onlink-missing (onlink), conflicting-route-owners (one route),
// local-block (a BGP path is not local). Its verdict is ok and it has no plan. Anything else, however
// small the difference, goes to the rules: test/diagnose/healthy.test.ts checks that both ways give the
// same report, byte for byte.
import {ABSENT, KeyTable, keysHolding, prefixKey} from '../model/aside.js'
import {ipv4PoolOf, ipv4Pools} from '../model/context.js'
import {Fib} from '../model/fib.js'
import type {BirdRoute, KernelRoute, Snapshot} from '../model/types.js'
import {BirdBlockReader} from '../parse/bird-routes.js'
import {asideKernelRoute} from '../parse/ip-route-json.js'

export interface SettleOptions {
  /** Prefix keys (model/aside.ts prefixKey) never settled, whatever their health: `explain` and `fix PREFIX` keep the routes they are about as objects. */
  unsettled?: (key: number) => boolean
}

/** The snapshot with its set-aside routes settled: the healthy ones as `healthy`, the others parsed into the lists. */
export function settleHealthy(snapshot: Snapshot, opts: SettleOptions = {}): Snapshot {
  const aside = snapshot.aside
  if (aside === undefined) return snapshot
  const kernel = aside.kernel
  const bird = aside.bird
  const nk = kernel?.size ?? 0
  const nb = bird?.size ?? 0

  // the kernel's routes set aside by key; a key held by two routes (set aside or parsed) is settled by neither
  const {byKey: kernelAt, shared} = kernel?.index() ?? {byKey: new KeyTable(0), shared: new Uint8Array(0)}
  if (nk > 0) {
    for (const r of snapshot.kernelRoutes) {
      const j = kernelAt.get(prefixKey(r.dst))
      if (j >= 0) shared[j] = 1
    }
  }
  // BIRD's paths set aside by the kernel route at their key (every one has one); `birdShared`: a key BIRD
  // holds more than one path for
  const birdOf = new Int32Array(nk).fill(ABSENT)
  const birdShared = new Uint8Array(nk)
  for (let i = 0; i < nb; i++) {
    const j = bird!.kernel.get(i)
    if (j === ABSENT) continue // outside every pool, without a kernel route set aside (check's parse)
    if (birdOf[j] === ABSENT) birdOf[j] = i
    else birdShared[j] = 1
  }
  if (nb > 0) {
    for (const r of snapshot.bird.routes) {
      const j = kernelAt.get(prefixKey(r.prefix))
      if (j >= 0) birdShared[j] = 1
    }
  }

  // a kernel route set aside that covers any BGP next hop takes part in resolving it: parsed, not settled
  const parseKernel = new Uint8Array(nk)
  const hops = new Map<string, boolean>() // N of a path set aside -> can the kernel reach it
  const resolved = new Set<string>()
  for (let i = 0; i < nb; i++) {
    resolved.add(bird!.bgpNextHops[i])
    // only a path with a kernel route set aside can be settled healthy: its next hop's reachability is looked up
    if (bird!.kernel.get(i) !== ABSENT) hops.set(bird!.bgpNextHops[i], false)
  }
  for (const r of snapshot.bird.routes) if (r.bgpNextHop !== undefined) resolved.add(r.bgpNextHop)
  const holdsHop = keysHolding(resolved) // the networks that hold a BGP next hop
  for (const key of holdsHop) {
    const j = kernelAt.get(key)
    if (j >= 0) parseKernel[j] = 1
  }
  const text = (name: string) => snapshot.files.find((f) => f.name === name)?.text ?? ''
  const covering = new Map<number, KernelRoute>()
  for (let j = 0; j < nk; j++) if (parseKernel[j]) covering.set(j, asideKernelRoute(kernel!, j))
  if (hops.size > 0) {
    const fib = new Fib(covering.size > 0 ? snapshot.kernelRoutes.concat([...covering.values()]) : snapshot.kernelRoutes, snapshot.rules)
    for (const n of hops.keys()) hops.set(n, fib.lookup(n).reachable)
  }

  const pools = ipv4Pools(snapshot.pools)
  const inPool = (key: number) => ipv4PoolOf(pools, (key - (key % 64)) / 64, key % 64) !== undefined

  const healthyBird = new Uint8Array(nb)
  const healthyKernel = new Uint8Array(nk)
  const keys: number[] = []
  const healthyHops = new Set<string>()
  let lastHop = ''
  for (let i = 0; i < nb; i++) {
    const j = bird!.kernel.get(i)
    if (j === ABSENT || birdOf[j] !== i || birdShared[j] || shared[j] || parseKernel[j]) continue
    const key = bird!.keys.get(i)
    const hop = bird!.bgpNextHops[i]
    if (!inPool(key) || !hops.get(hop) || opts.unsettled?.(key)) continue
    healthyBird[i] = 1
    healthyKernel[j] = 1
    keys.push(key)
    if (hop !== lastHop) healthyHops.add((lastHop = hop))
  }

  // every other route set aside, parsed and put back in its place among the routes built
  const kernelRoutes = putBack(snapshot.kernelRoutes, nk, (j) => kernel!.ordinals.get(j), (j, out) => {
    if (!healthyKernel[j]) out.push(covering.get(j) ?? asideKernelRoute(kernel!, j))
  })
  // for check (`outside`), a path set aside outside every pool is read only if its network holds a BGP next
  // hop: the rules read no other (model/release.ts withoutUnreadRoutes lets go of the same paths when built)
  const outside = bird?.outside
  const blocks = bird ? new BirdBlockReader(text(bird.file), bird.file) : undefined
  const birdRoutes = putBack(snapshot.bird.routes, nb, (i) => bird!.ordinals.get(i), (i, out) => {
    if (healthyBird[i]) return
    if (outside !== undefined && outside(bird!.keys.get(i)) && !holdsHop.has(bird!.keys.get(i))) return
    for (const r of blocks!.at(bird!.offsets.get(i), bird!.lines.get(i), bird!.tables[i], bird!.ends.get(i))) out.push(r)
  })

  const {aside: _settled, ...rest} = snapshot
  return {
    ...rest,
    kernelRoutes,
    bird: {...snapshot.bird, routes: birdRoutes},
    healthy: {keys: Float64Array.from(keys).sort(), bgpNextHops: [...healthyHops]},
  }
}

/**
 * The routes built with the n set aside merged back by ordinal (a route's place among all of its file's):
 * `put(k, out)` appends what the k-th set-aside route becomes. Routes built after the last ordinal (another
 * file's) stay last.
 */
function putBack<R extends KernelRoute | BirdRoute>(built: R[], n: number, ordinal: (k: number) => number, put: (k: number, out: R[]) => void): R[] {
  if (n === 0) return built
  const out: R[] = []
  let b = 0
  for (let k = 0; k < n; k++) {
    const at = ordinal(k)
    while (b < built.length && b + k < at) out.push(built[b++])
    put(k, out)
  }
  while (b < built.length) out.push(built[b++])
  return out
}
