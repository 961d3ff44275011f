// `check`'s bulk path: which of the routes the parsers deferred (bulk/deferred.ts) are healthy prefixes,
// kept as numbers, and every other one parsed after all, back in its place, for the rules to read.
//
// A pool prefix is healthy here when BIRD holds exactly one path for it — the primary, unicast, over BGP,
// with IPv4 BGP next hop N — and the kernel exactly one route — `via G dev TUNNEL onlink proto bird`,
// unicast, table main — and nothing else holds the prefix in either, no route deferred covers N, and the
// kernel can reach N. Every prefix rule then finds nothing: prefix-missing and stale-kernel-route (both
// hold it), bird-kernel-mismatch (a proto bird route), nexthop-unresolvable-by-bird (unicast),
// nexthop-unreachable (N reachable), tunnel-bypassed-by-ecmp and tunnel-not-programmed (through the
// tunnel), multipath-lost (one next hop), onlink-missing (onlink), conflicting-route-owners (one route),
// local-block (a BGP path is not local). Its verdict is ok and it has no plan. Anything else, however
// small the difference, goes to the rules: test/bulk/healthy.test.ts checks that both ways give the
// same report, byte for byte.
//
// For check's text report (verdicts and finding ids only), a pool prefix is also kept as numbers, broken, when all of
// that holds but the kernel's one route is `proto bird` in table main and off the tunnel (model/types.ts
// BROKEN_KINDS), in an IP-in-IP pool that is not CrossSubnet, without Calico's truth:
// - unicast with no next hop through the tunnel, BIRD's path unicast: the rules find tunnel-bypassed-by-ecmp
//   (several next hops) or tunnel-not-programmed (one), and nothing else: onlink-missing and
//   tunnel-endpoint-mismatch look at next hops through the tunnel only, and the route tunnels nowhere, so it is not
//   misrouted. Verdict not-tunneled.
// - `unreachable`, BIRD's path `unreachable`, N not this node's: nexthop-unresolvable-by-bird (the kernel reaches
//   N), and nothing else: bird-kernel-mismatch needs a unicast path, the tunnel rules a unicast route. Verdict
//   unreachable.
// - BIRD's two paths, the primary and one other, both unicast over BGP, equal in preference (model/snapshot-index.ts
//   equalPreference: BIRD would merge them), their next hops N1 and N2 distinct, reachable and not this node's, both
//   built (the parser defers only a network's only path), and the kernel's one tunnel route to N1 or N2: the rules
//   find multipath-lost (one of N1, N2 is not a next hop of the route) and nothing else: the route tunnels to a next
//   hop BIRD names, with onlink. Verdict multipath-lost.
import {ABSENT, deferredKernelRoute, outsidePoolRoute, KeyTable, resolvingRoutes, type DeferredRoutes} from './deferred.js'
import {ipv4Values, keysHolding, prefixKey} from '../model/prefix-key.js'
import {clusterIndex, truthForbidsBulk} from '../model/calico.js'
import {equalPreference, ipv4PoolOf, ipv4Pools} from '../model/snapshot-index.js'
import {Fib} from '../model/fib.js'
import {ipv4Value} from '../model/prefix.js'
import {BYPASSED_BY_ECMP, MULTIPATH_LOST, NOT_PROGRAMMED, UNRESOLVABLE_BY_BIRD, type BirdRoute, type BrokenPrefixes, type Gateway, type KernelRoute, type Snapshot} from '../model/types.js'
import {BirdBlockReader} from '../parse/bird-routes.js'

export interface SeparateOptions {
  /**
   * Prefix keys (model/prefix-key.ts prefixKey) never separated, whatever their health: `explain` and `fix PREFIX` keep
   * the routes they are about as objects.
   */
  alwaysBuilt?: (key: number) => boolean
  /**
   * Also separate the prefixes BIRD routes off the tunnel (Snapshot.broken), from the kernel's routes deferred off the
   * tunnel (DeferredKernelRoutes' `offTunnelToo`): for check's text report, which shows their verdict and finding ids.
   */
  offTunnel?: boolean
}

/**
 * The snapshot with the routes its parse deferred (`deferred`) separated: the healthy ones as `healthy`, the others
 * parsed into the lists. `deferred` is only read: the same parse may be separated again with other options.
 */
export function separateHealthy(
  snapshot: Snapshot,
  deferred: DeferredRoutes | undefined,
  opts: SeparateOptions = {},
): Snapshot {
  if (deferred === undefined) return snapshot
  const kernel = deferred.kernel
  const bird = deferred.bird
  const nk = kernel?.size ?? 0
  const nb = bird?.size ?? 0

  // the kernel's routes deferred by key; a key held by two routes (deferred or parsed) is separated by neither
  const {byKey: kernelAt, shared} = kernel?.index() ?? {byKey: new KeyTable(0), shared: new Uint8Array(0)}
  if (nk > 0) {
    for (const r of snapshot.kernelRoutes) {
      const j = kernelAt.get(prefixKey(r.dst))
      if (j >= 0) shared[j] = 1
    }
  }
  // BIRD's paths deferred by the kernel route at their key (every one has one); `birdShared`: a key BIRD
  // holds more than one path for
  const birdOf = new Int32Array(nk).fill(ABSENT)
  const birdShared = new Uint8Array(nk)
  for (let i = 0; i < nb; i++) {
    const j = bird!.kernel.get(i)
    if (j === ABSENT) continue // outside every pool, without a kernel route deferred (check's parse)
    if (birdOf[j] === ABSENT) birdOf[j] = i
    else birdShared[j] = 1
  }
  // off the tunnel: where the tunnel is expected whatever the next hop (not CrossSubnet, whose kernel gateways the
  // rules look up) and Calico's truth judges nothing
  const offTunnel =
    opts.offTunnel === true && snapshot.calico === undefined && !snapshot.pools.some((p) => p.crossSubnet)
  // off the tunnel too: the paths built at a kernel route deferred, by that route (two of them: multipath-lost?)
  const builtAt = offTunnel && nk > 0 ? new Map<number, BirdRoute[]>() : undefined
  if (nb > 0 || builtAt !== undefined) {
    for (const r of snapshot.bird.routes) {
      const j = kernelAt.get(prefixKey(r.prefix))
      if (j < 0) continue
      birdShared[j] = 1
      const paths = builtAt?.get(j)
      if (paths === undefined) builtAt?.set(j, [r])
      else paths.push(r)
    }
  }

  // a kernel route deferred that covers any BGP next hop takes part in resolving it: parsed, not separated
  const parseKernel = new Uint8Array(nk)
  const hops = new Map<string, boolean>() // N of a path deferred -> can the kernel reach it
  const resolved = new Set<string>()
  for (let i = 0; i < nb; i++) {
    resolved.add(bird!.bgpNextHops[i])
    // only a path with a kernel route deferred can be found healthy: its next hop's reachability is looked up
    if (bird!.kernel.get(i) !== ABSENT) hops.set(bird!.bgpNextHops[i], false)
  }
  for (const r of snapshot.bird.routes) {
    if (r.bgpNextHop !== undefined) resolved.add(r.bgpNextHop)
    else if (r.from !== undefined) resolved.add(r.from) // a plain `show route`: the rules look up the peer instead
  }
  // BIRD's two equal BGP paths built at a kernel tunnel route deferred, nothing else at its key: their next hops'
  // reachability is looked up too
  const pairs: Array<{j: number; a: BirdRoute; b: BirdRoute}> = []
  for (const [j, paths] of builtAt ?? []) {
    if (paths.length !== 2 || birdOf[j] !== ABSENT || shared[j] || kernel!.models.get(j) >= 0) continue
    const [a, b] = paths
    if (!a.primary || b.primary || a.kernelSyncFailed || a.dest !== 'unicast' || b.dest !== 'unicast') continue
    if (a.source !== 'BGP' || b.source !== 'BGP' || a.bgpNextHop === undefined || b.bgpNextHop === undefined) continue
    if (a.bgpNextHop === b.bgpNextHop || ipv4Value(a.bgpNextHop) < 0 || ipv4Value(b.bgpNextHop) < 0) continue
    if (!equalPreference(a, b)) continue
    pairs.push({j, a, b})
    for (const n of [a.bgpNextHop, b.bgpNextHop]) if (!hops.has(n)) hops.set(n, false)
  }
  const holdsHop = keysHolding(resolved) // the networks that hold a BGP next hop
  for (const key of holdsHop) {
    const j = kernelAt.get(key)
    if (j >= 0) parseKernel[j] = 1
  }
  const text = (name: string) => snapshot.files.find((f) => f.name === name)?.text ?? ''
  const covering = new Map<number, KernelRoute>()
  for (let j = 0; j < nk; j++) if (parseKernel[j]) covering.set(j, deferredKernelRoute(kernel!, j))
  // check's kernel routes deferred outside every pool: built only if they resolve a BGP next hop, or in turn the
  // gateway of a route that does. Every built route's gateway is taken for one (withoutUnreadRoutes keeps fewer
  // after), and so is every route's deferred here: its next-hop list was built twice before any was deferred, so
  // its gateways are built routes' too, and following them is only a safeguard
  const outsidePool = deferred.outsidePool
  const outsideRead = new Map<number, KernelRoute>()
  if (outsidePool !== undefined && outsidePool.size > 0) {
    const addresses = new Set(ipv4Values(resolved))
    // routes in a row mostly share their gateway
    let lastGateway: Gateway | undefined
    for (const r of snapshot.kernelRoutes) {
      for (const nh of r.nexthops)
        if (nh.gateway?.family === 'inet' && nh.gateway !== lastGateway)
          addresses.add(ipv4Value((lastGateway = nh.gateway).address))
    }
    let lastValue = -1
    for (let j = 0; j < nk; j++)
      if (kernel!.gateways.get(j) !== lastValue) addresses.add((lastValue = kernel!.gateways.get(j)))
    for (const m of kernel?.offTunnel.list ?? []) for (const nh of m.nexthops) if (nh.gateway?.family === 'inet') addresses.add(ipv4Value(nh.gateway.address))
    const read = resolvingRoutes(
      outsidePool.size,
      (j) => outsidePool.keys.get(j),
      (j) => outsidePool.modelList[outsidePool.models.get(j)].nexthops,
      addresses,
    )
    for (let j = 0; j < outsidePool.size; j++) if (read[j]) outsideRead.set(j, outsidePoolRoute(outsidePool, j))
  }
  if (hops.size > 0) {
    const extra = covering.size + outsideRead.size > 0 ? [...covering.values(), ...outsideRead.values()] : undefined
    const fib = new Fib(extra ? snapshot.kernelRoutes.concat(extra) : snapshot.kernelRoutes, snapshot.rules)
    for (const n of hops.keys()) hops.set(n, fib.lookup(n).reachable)
  }

  const pools = ipv4Pools(snapshot.pools)
  const poolOf = (key: number) => ipv4PoolOf(pools, (key - (key % 64)) / 64, key % 64)

  // with Calico's truth, a path to another node than the block's owner, and what the truth finds odd, go to the rules
  const vetoed = snapshot.calico
    ? truthForbidsBulk(clusterIndex(snapshot.calico), snapshot.nodeName, (p) => prefixKey(p))
    : undefined

  let lastText = ''
  let lastValue = -1
  const hopValue = (hop: string): number => (hop === lastText ? lastValue : (lastValue = ipv4Value((lastText = hop))))
  const healthyBird = new Uint8Array(nb)
  const healthyKernel = new Uint8Array(nk)
  const keys: number[] = []
  const broken: number[] = [] // key · 4 + its kind (BROKEN_KINDS)
  let own: Set<string> | undefined
  const ownAddress = (hop: string) => (own ??= ownAddresses(snapshot)).has(hop)
  const healthyHops = new Set<string>()
  let lastHop = ''
  for (let i = 0; i < nb; i++) {
    const j = bird!.kernel.get(i)
    if (j === ABSENT || birdOf[j] !== i || birdShared[j] || shared[j] || parseKernel[j]) continue
    const key = bird!.keys.get(i)
    const hop = bird!.bgpNextHops[i]
    const pool = poolOf(key)
    if (pool === undefined || !hops.get(hop) || opts.alwaysBuilt?.(key) || vetoed?.(key, hop)) continue
    const model = kernel!.models.get(j)
    const unreachable = bird!.unreachable.get(i) === 1
    if (model >= 0) {
      if (!offTunnel || pool.mode !== 'ipip') continue
      const {like, nexthops} = kernel!.offTunnel.list[model]
      let kind: number
      if (like.type === 'unreachable') {
        // BIRD could not resolve N, which the kernel reaches (and is not this node's)
        if (!unreachable || ownAddress(hop)) continue
        kind = UNRESOLVABLE_BY_BIRD
      } else {
        if (unreachable) continue
        kind = nexthops.length > 1 ? BYPASSED_BY_ECMP : NOT_PROGRAMMED
      }
      broken.push(key * 4 + kind)
    } else {
      // the route tunnels to the endpoint BIRD names (else it is misrouted)
      if (unreachable || kernel!.gateways.get(j) !== hopValue(hop)) continue
      keys.push(key)
    }
    healthyBird[i] = 1
    healthyKernel[j] = 1
    if (hop !== lastHop) healthyHops.add((lastHop = hop))
  }
  // multipath-lost: the kernel tunnels to one of the two next hops, and each is wanted (reachable, not this node's)
  const pathsSeparated = new Set<BirdRoute>()
  for (const {j, a, b} of pairs) {
    const key = kernel!.keys.get(j)
    const [n1, n2] = [a.bgpNextHop!, b.bgpNextHop!]
    if (parseKernel[j] || poolOf(key)?.mode !== 'ipip' || opts.alwaysBuilt?.(key)) continue
    if (!hops.get(n1) || !hops.get(n2) || ownAddress(n1) || ownAddress(n2)) continue
    const g = kernel!.gateways.get(j)
    if (g !== ipv4Value(n1) && g !== ipv4Value(n2)) continue
    broken.push(key * 4 + MULTIPATH_LOST)
    healthyKernel[j] = 1
    pathsSeparated.add(a).add(b)
    healthyHops.add(n1).add(n2)
  }

  // every other route deferred, parsed and put back in its place among the routes built
  const kernelRoutes = putBack(
    snapshot.kernelRoutes,
    {
      n: nk,
      ordinal: (j) => kernel!.ordinals.get(j),
      put: (j, out) => {
        if (!healthyKernel[j]) out.push(covering.get(j) ?? deferredKernelRoute(kernel!, j))
      },
    },
    {
      n: outsidePool?.size ?? 0,
      ordinal: (j) => outsidePool!.ordinals.get(j),
      put: (j, out) => {
        const r = outsideRead.get(j)
        if (r !== undefined) out.push(r)
      },
    },
  )
  // for check (`outside`), a path deferred outside every pool is read only if its network holds a BGP next
  // hop: the rules read no other (bulk/drop-texts.ts withoutUnreadRoutes lets go of the same paths when built)
  const outside = bird?.outside
  const blocks = bird ? new BirdBlockReader(text(bird.file), bird.file) : undefined
  const birdRoutes = putBack(snapshot.bird.routes, {
    n: nb,
    ordinal: (i) => bird!.ordinals.get(i),
    put: (i, out) => {
      if (healthyBird[i]) return
      if (outside !== undefined && outside(bird!.keys.get(i)) && !holdsHop.has(bird!.keys.get(i))) return
      for (const r of blocks!.at(bird!.offsets.get(i), bird!.lines.get(i), bird!.tables[i], bird!.ends.get(i)))
        out.push(r)
    },
  })

  const routes = pathsSeparated.size > 0 ? birdRoutes.filter((r) => !pathsSeparated.has(r)) : birdRoutes
  return {
    ...snapshot,
    kernelRoutes,
    bird: {...snapshot.bird, routes},
    healthy: {keys: Float64Array.from(keys).sort(), bgpNextHops: [...healthyHops]},
    ...(broken.length > 0 ? {broken: brokenPrefixes(broken)} : {}),
  }
}

/** BrokenPrefixes of `codes` (key · 4 + kind). */
function brokenPrefixes(codes: number[]): BrokenPrefixes {
  const sorted = Float64Array.from(codes).sort()
  const keys = new Float64Array(sorted.length)
  const kinds = new Uint8Array(sorted.length)
  for (let k = 0; k < sorted.length; k++) {
    kinds[k] = sorted[k] % 4
    keys[k] = (sorted[k] - kinds[k]) / 4
  }
  return {keys, kinds}
}

/**
 * This node's addresses, as model/snapshot-index.ts SnapshotIndex.ownAddresses has them (its addresses, the local
 * table's).
 */
function ownAddresses(snapshot: Snapshot): Set<string> {
  const own = new Set(snapshot.addresses.map((a) => a.local))
  for (const r of snapshot.kernelRoutes) if (r.tableId === 255 && r.type === 'local') own.add(r.dst.replace(/\/(32|128)$/, ''))
  return own
}

/**
 * Routes deferred, in the order of their places among all of a file's (`ordinal`); `put(k, out)` appends what the k-th
 * becomes.
 */
interface DeferredList<R> {
  n: number
  ordinal: (k: number) => number
  put: (k: number, out: R[]) => void
}

/**
 * The routes built with those deferred merged back by ordinal (a route's place among all of its file's, built
 * or deferred, whichever kind). Routes built after the last ordinal (another file's) stay last.
 */
function putBack<R extends KernelRoute | BirdRoute>(
  built: R[],
  a: DeferredList<R>,
  b: DeferredList<R> = {n: 0, ordinal: () => 0, put: () => {}},
): R[] {
  if (a.n + b.n === 0) return built
  const out: R[] = []
  let i = 0
  let ka = 0
  let kb = 0
  while (ka < a.n || kb < b.n) {
    const oa = ka < a.n ? a.ordinal(ka) : Infinity
    const ob = kb < b.n ? b.ordinal(kb) : Infinity
    const at = Math.min(oa, ob)
    while (i < built.length && i + ka + kb < at) out.push(built[i++])
    if (oa < ob) a.put(ka++, out)
    else b.put(kb++, out)
  }
  while (i < built.length) out.push(built[i++])
  return out
}
