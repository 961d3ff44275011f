// Deferred routes: routes `check` holds as numbers, not built yet. A full table is mostly one shape: BIRD's single
// BGP path to a pod block, and the kernel's `BLOCK via N dev tunl0 onlink proto bird`. The parsers defer such
// routes here (key, next hop, where their text is) rather than building them; bulk/healthy.ts then
// separates which of them are healthy and has every other one parsed after all, from its text. For `check`, BIRD's
// single BGP paths outside every pool (a route reflector's full table outside them) are deferred too, and only
// those that hold a BGP next hop are ever parsed; so are the kernel's routes there, and only those that resolve an
// address a BGP next hop leads to are ever built. For check's text report, BIRD's routes off the tunnel (the
// underlay's next hops instead of the tunnel's, or `unreachable`) are deferred too, and reported in bulk where that
// is all that is wrong.
import {coveringKeys, keyPrefix} from '../model/prefix-key.js'
import {ipv4Text, ipv4Value} from '../model/prefix.js'
import type {KernelRoute, Nexthop} from '../model/types.js'
import {buildRoute, buildRouteLike, type RawRoute} from '../parse/ip-common.js'

/**
 * A growing list of numbers in a typed array, doubled as it fills: a million entries without a JS array of a
 * million slots for the garbage collector to visit. Prefix keys (38 bits) need a Float64Array; indices, offsets,
 * line numbers and flags fit a narrower one, which lowers check's peak on a full table (they are held while its
 * routes are separated).
 */
class NumberColumn {
  private data: Float64Array | Int32Array | Uint8Array
  length = 0

  constructor(private readonly make: new (length: number) => Float64Array | Int32Array | Uint8Array = Float64Array) {
    this.data = new make(1024)
  }

  push(v: number): void {
    if (this.length === this.data.length) {
      const bigger = new this.make(this.data.length * 2)
      bigger.set(this.data)
      this.data = bigger
    }
    this.data[this.length++] = v
  }

  /** The i-th number (0 <= i < length). */
  get(i: number): number {
    return this.data[i]
  }

  clear(): void {
    this.length = 0
  }
}

/**
 * The kernel routes a scan deferred: `{"type":"unicast","dst":D,"gateway":G,"dev":TUNNEL,"table":"main",
 * "protocol":"bird","scope":"global","metric":M,"flags":["onlink"]}` and nothing else, as iproute2 prints
 * BIRD's tunnel routes: D, G and M are all there is to such a route, so one is built again from them
 * (deferredKernelRoute, below) without the file's text. `ordinal` is its place among all the
 * routes of the file (routes built and deferred alike), so a route built later goes back there.
 */
export class DeferredKernelRoutes {
  readonly keys = new NumberColumn()
  readonly gateways = new NumberColumn() // G as a 32-bit number; -1 for a route off the tunnel
  readonly metrics = new NumberColumn() // M (0 when not printed, as the kernel's default)
  readonly ordinals = new NumberColumn(Int32Array)
  // for `check`'s text report, also BIRD's routes off the tunnel (ip-route-json.ts isOffTunnelShape): each its
  // shape's model at another dst and metric (index in `offTunnel.list`); -1 for a tunnel route
  readonly models = new NumberColumn(Int32Array)
  readonly offTunnel = new RouteModels()

  /** `offTunnelToo`: also take BIRD's routes off the tunnel (addOffTunnel). */
  constructor(readonly file: string, readonly tunnelDev: string, readonly offTunnelToo = false) {}

  get size(): number {
    return this.keys.length
  }

  /**
   * Defer a route (prefixKey of its dst, ipv4Value of its gateway); false (nothing kept) when either is -1: not
   * canonical IPv4.
   */
  add(key: number, g: number, metric: number, ordinal: number): boolean {
    if (key < 0 || g < 0) return false
    this.keys.push(key)
    this.gateways.push(g)
    this.metrics.push(metric)
    this.ordinals.push(ordinal)
    this.models.push(-1)
    return true
  }

  /** Defer a route off the tunnel, like `like` at another dst and metric (deferredKernelRoute builds it again). */
  addOffTunnel(key: number, metric: number, like: KernelRoute, nexthops: Nexthop[], ordinal: number): boolean {
    if (!this.offTunnelToo || key < 0) return false
    this.keys.push(key)
    this.gateways.push(-1)
    this.metrics.push(metric)
    this.ordinals.push(ordinal)
    this.models.push(this.offTunnel.indexOf(like, nexthops))
    return true
  }

  /**
   * The routes by key: the index of the first at a key (ABSENT when none is), built once. `shared[j]` marks a
   * route whose key another route deferred also has.
   */
  index(): {byKey: KeyTable; shared: Uint8Array} {
    if (this.indexed !== undefined) return this.indexed
    const n = this.keys.length
    const byKey = new KeyTable(n)
    const shared = new Uint8Array(n)
    for (let j = 0; j < n; j++) {
      const first = byKey.claim(this.keys.get(j), j)
      if (first !== ABSENT) shared[first] = shared[j] = 1
    }
    this.indexed = {byKey, shared}
    return this.indexed
  }

  private indexed: {byKey: KeyTable; shared: Uint8Array} | undefined

  /** Forget everything: the scan gave up, and the generic path reads the whole file. */
  clear(): void {
    this.indexed = undefined
    this.keys.clear()
    this.gateways.clear()
    this.metrics.clear()
    this.ordinals.clear()
    this.models.clear()
    this.offTunnel.clear()
  }
}

/**
 * Kernel routes kept as a model route and a next-hop list each (a route deferred is built again like its model, at
 * its own dst and metric, through that list): each distinct pair once, by index. A table's routes come in runs of
 * one model: a lookup only when it changes.
 */
export class RouteModels {
  readonly list: Array<{like: KernelRoute; nexthops: Nexthop[]}> = []
  private readonly byLike = new Map<KernelRoute, Map<Nexthop[], number>>()
  private lastLike: KernelRoute | undefined
  private lastNexthops: Nexthop[] | undefined
  private last = -1

  indexOf(like: KernelRoute, nexthops: Nexthop[]): number {
    if (like === this.lastLike && nexthops === this.lastNexthops) return this.last
    let byHops = this.byLike.get(like)
    if (byHops === undefined) this.byLike.set(like, (byHops = new Map()))
    let m = byHops.get(nexthops)
    if (m === undefined) {
      m = this.list.push({like, nexthops}) - 1
      byHops.set(nexthops, m)
    }
    this.lastLike = like
    this.lastNexthops = nexthops
    this.last = m
    return m
  }

  /** The models' next-hop lists as `copy` makes them (bulk/drop-texts.ts: off the file's text). */
  copyNexthops(copy: (list: Nexthop[]) => Nexthop[]): void {
    for (const m of this.list) m.nexthops = copy(m.nexthops)
  }

  clear(): void {
    this.list.length = 0
    this.byLike.clear()
    this.lastLike = undefined
    this.lastNexthops = undefined
    this.last = -1
  }
}

/**
 * BIRD paths a parse deferred: the only path of its network, the primary, `unicast` or `unreachable`, learnt over
 * BGP, with an IPv4 BGP next hop, read in place from a `birdc` dump, where the kernel deferred a route at the same key
 * (`kernel`: its index there) or, for `check` (`outside` given), where the network is outside every pool
 * (`kernel` ABSENT: such a path is read only if it holds a BGP next hop, bulk/healthy.ts). `offset` and
 * `line` are where its header is, `end` where its last line ends; `table` the BIRD table it was listed under;
 * `ordinal` its place among all paths of the dump.
 */
export class DeferredBirdPaths {
  readonly keys = new NumberColumn()
  readonly bgpNextHops: string[] = []
  readonly offsets = new NumberColumn(Int32Array) // a string is shorter than 2^30
  readonly ends = new NumberColumn(Int32Array)
  readonly lines = new NumberColumn(Int32Array)
  readonly tables: Array<string | undefined> = []
  readonly ordinals = new NumberColumn(Int32Array)
  readonly kernel = new NumberColumn(Int32Array)
  readonly unreachable = new NumberColumn(Uint8Array) // 1: the path is `unreachable` (N unresolved), 0: unicast

  /**
   * `kernelAt`: the kernel's routes deferred, by key (DeferredKernelRoutes.index); `outside`: is a network key
   * outside every pool (`check` only: the other commands read every path).
   */
  constructor(
    readonly file: string,
    readonly kernelAt: KeyTable,
    readonly outside?: (key: number) => boolean,
  ) {}

  get size(): number {
    return this.keys.length
  }

  add(
    key: number,
    kernel: number,
    bgpNextHop: string,
    offset: number,
    end: number,
    line: number,
    table: string | undefined,
    ordinal: number,
    unreachable: boolean,
  ): void {
    this.keys.push(key)
    this.unreachable.push(unreachable ? 1 : 0)
    this.kernel.push(kernel)
    this.bgpNextHops.push(bgpNextHop)
    this.offsets.push(offset)
    this.ends.push(end)
    this.lines.push(line)
    this.tables.push(table)
    this.ordinals.push(ordinal)
  }
}

/**
 * For `check`, the kernel's IPv4 routes outside every pool that a scan read but did not build (a route reflector's
 * full table outside the pools; not the local table). Each is its shape's model route (`like`: parse/ip-route-json.ts
 * builds a shape's routes like it) at another dst and metric, through one of that shape's next-hop lists: a model.
 * bulk/healthy.ts builds only those that resolve an address a BGP next hop leads to (resolvingRoutes), the ones
 * bulk/drop-texts.ts withoutUnreadRoutes would keep. `ordinal` is the route's place among all the routes of the file.
 */
export class OutsidePoolRoutes {
  readonly keys = new NumberColumn()
  readonly metrics = new NumberColumn()
  readonly models = new NumberColumn(Int32Array) // index in modelList
  readonly ordinals = new NumberColumn(Int32Array)
  private readonly routeModels = new RouteModels()
  readonly modelList = this.routeModels.list

  constructor(readonly outside: (key: number) => boolean) {}

  get size(): number {
    return this.keys.length
  }

  add(key: number, metric: number, like: KernelRoute, nexthops: Nexthop[], ordinal: number): void {
    this.keys.push(key)
    this.metrics.push(metric)
    this.models.push(this.routeModels.indexOf(like, nexthops))
    this.ordinals.push(ordinal)
  }

  /** The models' next-hop lists as `copy` makes them (bulk/drop-texts.ts: off the file's text). */
  copyNexthops(copy: (list: Nexthop[]) => Nexthop[]): void {
    this.routeModels.copyNexthops(copy)
  }

  /** Forget everything: the scan gave up, and the generic path reads the whole file. */
  clear(): void {
    this.keys.clear()
    this.metrics.clear()
    this.models.clear()
    this.ordinals.clear()
    this.routeModels.clear()
  }
}

export interface DeferredRoutes {
  kernel?: DeferredKernelRoutes
  bird?: DeferredBirdPaths
  outsidePool?: OutsidePoolRoutes // check's only
}


/**
 * Which of `n` routes (the j-th at network key `keyOf(j)`, -1: none) resolve an address: every route whose network
 * holds one of `addresses` (IPv4 values), then, in turn, every route whose network holds an IPv4 gateway of a route
 * so found (its next hops: `nexthopsOf(j)`), until none is new. 1 for those, 0 for the others.
 */
export function resolvingRoutes(
  n: number,
  keyOf: (j: number) => number,
  nexthopsOf: (j: number) => readonly Nexthop[],
  addresses: Iterable<number>,
): Uint8Array {
  const found = new Uint8Array(n)
  const at = new KeyTable(n)
  const next = new Int32Array(n).fill(ABSENT) // the others at a key, chained from the first
  for (let j = 0; j < n; j++) {
    const key = keyOf(j)
    if (key < 0) continue
    const first = at.claim(key, j)
    if (first !== ABSENT) {
      next[j] = next[first]
      next[first] = j
    }
  }
  const seen = new Set<number>()
  const todo: number[] = []
  const add = (v: number): void => {
    if (v >= 0 && !seen.has(v)) {
      seen.add(v)
      todo.push(v)
    }
  }
  for (const v of addresses) add(v)
  while (todo.length > 0) {
    for (const key of coveringKeys(todo.pop()!)) {
      for (let j = at.get(key); j !== ABSENT; j = next[j]) {
        if (found[j] === 1) continue
        found[j] = 1
        for (const nh of nexthopsOf(j)) if (nh.gateway?.family === 'inet') add(ipv4Value(nh.gateway.address))
      }
    }
  }
  return found
}

export const ABSENT = -1 // KeyTable: no value at the key

/**
 * Prefix keys to small integers (-1 when absent), open addressing over typed arrays: a million entries
 * without a million boxed numbers in a Map.
 */
export class KeyTable {
  private keys: Float64Array
  private values: Int32Array
  private mask: number
  private shift: number
  private count = 0

  // filled to at most three quarters: linear probing stays short, and a full table's index is half the size it
  // would be at one half (it is held while the routes are separated, check's peak)
  constructor(expected: number) {
    let bits = 4
    while (2 ** bits * 3 < expected * 4) bits++
    this.keys = new Float64Array(2 ** bits).fill(-1)
    this.values = new Int32Array(2 ** bits)
    this.mask = 2 ** bits - 1
    this.shift = 32 - bits
  }

  private slot(key: number): number {
    const len = key % 64
    const v = (key - len) / 64
    // multiplicative hashing: the high bits of the product (a block's low address bits are all zero)
    let i = Math.imul(v ^ Math.imul(len, 0x85ebca6b), 0x9e3779b1) >>> this.shift
    const keys = this.keys
    while (keys[i] !== -1 && keys[i] !== key) i = (i + 1) & this.mask
    return i
  }

  get(key: number): number {
    const i = this.slot(key)
    return this.keys[i] === key ? this.values[i] : -1
  }

  /** The value at `key` when there is one; else sets `value` there and returns ABSENT. */
  claim(key: number, value: number): number {
    if ((this.count + 1) * 4 > this.keys.length * 3) this.grow()
    const i = this.slot(key)
    if (this.keys[i] === key) return this.values[i]
    this.keys[i] = key
    this.values[i] = value
    this.count++
    return ABSENT
  }

  private grow(): void {
    const {keys, values} = this
    this.keys = new Float64Array(keys.length * 2).fill(-1)
    this.values = new Int32Array(keys.length * 2)
    this.mask = this.keys.length - 1
    this.shift--
    this.count = 0
    for (let i = 0; i < keys.length; i++) if (keys[i] !== -1) this.claim(keys[i], values[i])
  }
}

/**
 * The j-th route a scan deferred outside the pools, built like its shape's model at its dst and metric: no text needed.
 */
export function outsidePoolRoute(routes: OutsidePoolRoutes, j: number): KernelRoute {
  const {like, nexthops} = routes.modelList[routes.models.get(j)]
  return buildRouteLike(like, keyPrefix(routes.keys.get(j)), routes.metrics.get(j), like.prefsrc, nexthops)
}

/**
 * The j-th route a scan deferred, built from its dst, gateway and metric as the generic path reads its
 * element (it is of BIRD's tunnel shape), or, off the tunnel, like its shape's model: no text needed.
 */
export function deferredKernelRoute(deferred: DeferredKernelRoutes, j: number): KernelRoute {
  const model = deferred.models.get(j)
  if (model >= 0) {
    const {like, nexthops} = deferred.offTunnel.list[model]
    return buildRouteLike(like, keyPrefix(deferred.keys.get(j)), deferred.metrics.get(j), like.prefsrc, nexthops)
  }
  const raw: RawRoute = {
    type: 'unicast',
    dst: keyPrefix(deferred.keys.get(j)),
    gateway: {host: ipv4Text(deferred.gateways.get(j))},
    dev: deferred.tunnelDev,
    table: 'main',
    protocol: 'bird',
    scope: 'global',
    metric: deferred.metrics.get(j),
    flags: ['onlink'],
  }
  return buildRoute(raw, {file: deferred.file, line: 1, endLine: 1})
}
