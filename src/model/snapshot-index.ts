// Indices and derived facts over a Snapshot, computed once and shared by every rule, the planner
// and the presenters. Pure: a function of the Snapshot alone.
import {clusterIndex, type CalicoNode, type ClusterIndex} from './calico.js'
import {indexOfKey, keyPrefix, networkKey, prefixKey} from './prefix-key.js'
import {Fib, type Lookup} from './fib.js'
import {formatKernelRoute} from './format.js'
import {PrefixMap} from './prefix-map.js'
import {jsonElements, kernelRouteKey, textDumpLines} from './route-cite.js'
import {
  canonicalPrefix,
  familyOf,
  ipv4Network,
  ipv4Value,
  prefixContains,
  prefixLength,
  prefixSortKey,
} from './prefix.js'
import type {
  Address,
  BirdProtocol,
  BirdRoute,
  CitedLines,
  Evidence,
  IpRule,
  KernelRoute,
  Link,
  Pool,
  SourcePos,
  Snapshot,
} from './types.js'

/** Protocol numbers whose routes are someone's own programming of pod routes. */
export const FELIX_PROTOCOL = '80'
/** The number routedoctor writes its routes with (iproute2 prints the number; no rt_protos name). */
export const DEFAULT_FIX_PROTOCOL_NUMBER = 158
/**
 * The overlay table routedoctor's routes live in (DESIGN §5): outside 1-255 (Felix may claim 1-250; 253-255 are the
 * kernel's).
 */
export const DEFAULT_OVERLAY_TABLE = 1158
/**
 * Where a snapshot records the --protocol, --table and --tunnel-dev it was diagnosed with (written by `bundle`; the
 * name predates the tunnel device and is kept, so that bundles of either version read the same).
 */
export const OVERLAY_SETTINGS_FILE = 'overlay-settings.json'
/** The tunnel device when neither --tunnel-dev nor the snapshot names one: Calico's IP-in-IP device. */
export const DEFAULT_TUNNEL_DEV = 'tunl0'
/** The priority of the overlay's `ip rule`s: below main's 32766, so the overlay is looked up first. */
export const DEFAULT_RULE_PRIORITY = 32000
/** An overlay rule's priority: after local's rule (0), before main's (32766), or main's routes answer first. */
export function ruleBeforeMain(priority: number): boolean {
  return Number.isInteger(priority) && priority >= 1 && priority <= 32765
}
/** Where an apply writes its journal and takes its lock. */
export const DEFAULT_JOURNAL_DIR = '/var/lib/routedoctor'
/** How long an apply watches for another writer putting a replaced route back. */
export const DEFAULT_WATCH_SECONDS = 5

export interface NexthopResolution {
  bgpNextHop: string
  lookup: Lookup // the kernel's own view of how to reach N
  own: boolean // N is one of this node's addresses
  viaInet6: boolean // the underlay route uses IPv6 (link-local) gateways for an IPv4 next hop
  multipath: boolean // the underlay route is ECMP
}

export interface PrefixFacts {
  prefix: string
  pool?: Pool
  tunnelExpected: boolean // in an IP-in-IP pool
  kernel: KernelRoute[] // routes for the prefix in the kernel tables BIRD writes (effective first)
  // the one the kernel uses: the first table in `ip rule` order that holds the prefix, its lowest metric (without such
  // a table, the lowest metric of `kernel`)
  effective?: KernelRoute
  rule?: IpRule // the rule (other than the kernel's own three) whose table holds `effective`
  ours: KernelRoute[] // routedoctor's routes for the prefix (its protocol), in any table
  bird: BirdRoute[] // every BIRD path for the prefix, primary first
  birdPrimary?: BirdRoute
  bestSet: BirdRoute[] // the primary and the paths equal to it in preference and BGP attributes
  bgpNextHops: string[] // distinct BGP next hops of bestSet, in address order (the plan's: every text lists them so)
  resolutions: NexthopResolution[]
  local: boolean // this node's own block or a local workload
  ownersDown: BirdProtocol[] // BGP sessions not Established
}

export interface SnapshotIndexOptions {
  fixProtocol?: string // protocol text our own routes carry in the kernel
  // false: findings cite nothing (`cite` gives no evidence), for a presenter that shows none (check's text
  // report: verdicts and finding ids); the findings, verdicts and plans are the same either way
  evidence?: boolean
  // false: prefix findings say nothing but their id, severity and prefix (empty title and detail, no evidence,
  // no fix: diagnose/rule.ts prefixFinding), for a presenter that shows them by id (check's text report again)
  texts?: boolean
  overlayTable?: number // the table routedoctor's corrections live in (DESIGN §5)
  // cite a kernel route read from the one-line JSON dump by the line of the text dump that prints it when the
  // snapshot holds that dump, else by its element index (explain); off, such a route is cited as line 1
  kernelLines?: boolean
}

export class SnapshotIndex {
  readonly fib: Fib
  readonly kernelTables: number[]
  // BIRD's paths by prefix: the path itself when it is the only one (most are: a list each would cost memory)
  private readonly birdIndex = new PrefixMap<BirdRoute | BirdRoute[]>()
  readonly ownAddresses = new Set<string>()
  readonly links = new Map<string, Link>()
  readonly sysctl = new Map<string, {value: string; pos: SourcePos}>()
  readonly bgpProtocols: BirdProtocol[]
  // names of BIRD's kernel protocols (their routes are learnt from the kernel)
  readonly birdKernelProtocols: Set<string>
  readonly sessionsDown: BirdProtocol[] // BGP sessions not Established
  readonly fixProtocol: string
  readonly overlayTable: number
  // every route of routedoctor's protocol, in any table (except the local table), and the tables that hold one
  readonly oursRoutes: KernelRoute[] = []
  private readonly oursTables: number[]
  readonly evidence: boolean // see SnapshotIndexOptions
  readonly texts: boolean // see SnapshotIndexOptions
  private readonly kernelLines: boolean
  private kernelPlaces?: {lines?: Map<string, [number, number]>; elements?: Map<string, number>}
  private readonly lineStarts = new Map<string, Uint32Array>()
  private readonly sources = new Map<string, string>() // file name -> text ('' when not in the snapshot)
  // file name -> its cited lines, for a file whose text was dropped
  private readonly kept = new Map<string, CitedLines>()
  private readonly tables: number[]
  private readonly indexTables: number[] // the tables whose pool prefixes check walks: BIRD's, main, the overlay
  private readonly poolCache = new Map<string, Pool | undefined>()
  private readonly v4Pools: Ipv4Pool[]
  // v4Keys[i]: the key of prefixes[i], for the IPv4 ones (first)
  private poolPrefixList?: {prefixes: string[]; v4Keys: Float64Array}
  private readonly resolutions = new Map<string, NexthopResolution>()
  private poolResolutionList?: NexthopResolution[]
  private readonly present = new Map<string, boolean>() // has(file), asked per prefix by rules
  private readonly resolutionCites = new Map<NexthopResolution, Evidence[]>()
  private readonly singles = new Map<string, {hops: string[]; resolutions: NexthopResolution[]}>()
  private readonly severals = new Map<string, {hops: string[]; resolutions: NexthopResolution[]}>()
  private tunnelAddr: Address | undefined | null = null // null: not looked up yet
  private clusterIndex: ClusterIndex | undefined | null = null // null: not built yet

  constructor(readonly snapshot: Snapshot, opts: SnapshotIndexOptions = {}) {
    // flags given win over what the snapshot recorded (a bundle's overlay-settings.json), which wins over the defaults
    this.fixProtocol = opts.fixProtocol ?? String(snapshot.overlay?.protocol ?? DEFAULT_FIX_PROTOCOL_NUMBER)
    this.overlayTable = opts.overlayTable ?? snapshot.overlay?.table ?? DEFAULT_OVERLAY_TABLE
    this.evidence = opts.evidence ?? true
    this.texts = opts.texts ?? true
    this.kernelLines = opts.kernelLines ?? false
    this.fib = new Fib(snapshot.kernelRoutes, snapshot.rules)
    const tables = snapshot.bird.config?.kernelTables.map(Number).filter((n) => Number.isInteger(n)) ?? []
    this.kernelTables = tables.length > 0 ? tables : [254]
    const lists: BirdRoute[][] = [] // the prefixes with several paths, to put the primary first
    for (const route of snapshot.bird.routes) {
      const list = this.birdIndex.add(route.prefix, route)
      if (list !== undefined) lists.push(list)
    }
    for (const list of lists) list.sort((a, b) => Number(b.primary) - Number(a.primary))
    for (const a of snapshot.addresses) this.ownAddresses.add(a.local)
    const oursTables = new Set<number>()
    for (const r of snapshot.kernelRoutes) {
      if (r.tableId === 255) {
        if (r.type === 'local') this.ownAddresses.add(r.dst.replace(/\/(32|128)$/, ''))
      } else if (r.protocol === this.fixProtocol) {
        this.oursRoutes.push(r)
        oursTables.add(r.tableId)
      }
    }
    this.oursTables = [...oursTables]
    for (const l of snapshot.links) this.links.set(l.ifname, l)
    for (const s of snapshot.sysctl) this.sysctl.set(s.name, {value: s.value, pos: s.pos})
    this.bgpProtocols = snapshot.bird.protocols.filter((p) => p.proto.toUpperCase() === 'BGP')
    this.sessionsDown = this.bgpProtocols.filter((p) => !isEstablished(p))
    this.birdKernelProtocols = new Set(
      snapshot.bird.protocols.filter((p) => p.proto.toLowerCase() === 'kernel').map((p) => p.name),
    )
    this.tables = [...new Set([...this.kernelTables, 254])]
    this.indexTables = [...new Set([...this.tables, ...this.oursTables, this.overlayTable])]
    this.v4Pools = ipv4Pools(snapshot.pools)
    for (const f of snapshot.files) if (f.kept !== undefined) this.kept.set(f.name, f.kept)
  }

  /** Calico's truth, indexed; undefined without one. */
  get cluster(): ClusterIndex | undefined {
    if (this.clusterIndex === null)
      this.clusterIndex = this.snapshot.calico ? clusterIndex(this.snapshot.calico) : undefined
    return this.clusterIndex
  }

  /**
   * This node in Calico's truth (by its name: --node, node-name.txt, or its address); undefined when the truth has no
   * such node.
   */
  get clusterNode(): CalicoNode | undefined {
    const name = this.snapshot.nodeName
    return name === undefined ? undefined : this.cluster?.nodesByName.get(name)
  }

  has(file: string): boolean {
    let hit = this.present.get(file)
    if (hit === undefined) {
      hit = this.snapshot.files.some((f) => f.name === file && f.text !== undefined)
      this.present.set(file, hit)
    }
    return hit
  }

  get haveBird(): boolean {
    return this.has('birdc-show-route-all.txt')
  }

  get haveKernel(): boolean {
    return this.has('ip-j-d-route.json') || this.has('ip-d-route.txt')
  }

  get haveLinks(): boolean {
    return this.has('ip-j-d-link.json') || this.has('ip-d-link.txt')
  }

  poolOf(prefix: string): Pool | undefined {
    const slash = prefix.indexOf('/')
    const v = ipv4Value(prefix, 0, slash < 0 ? prefix.length : slash)
    if (v >= 0) return this.v4PoolOf(v, slash < 0 ? 32 : Number(prefix.slice(slash + 1)))
    if (this.poolCache.has(prefix)) return this.poolCache.get(prefix)
    // the most specific pool that contains the prefix
    let best: Pool | undefined
    for (const pool of this.snapshot.pools) {
      if (prefixContains(pool.cidr, prefix) && (!best || prefixLength(pool.cidr) > prefixLength(best.cidr))) best = pool
    }
    this.poolCache.set(prefix, best)
    return best
  }

  /** Every BIRD path for a prefix, primary first. */
  birdRoutesFor(prefix: string): BirdRoute[] {
    const known = this.birdIndex.get(prefix)
    return pathsOf(known)
  }

  /** The pool of IPv4 prefix v/len: integer arithmetic over a handful of pools, cheaper than any cache. */
  private v4PoolOf(v: number, len: number): Pool | undefined {
    return ipv4PoolOf(this.v4Pools, v, len)
  }

  /** Every prefix inside the pools that BIRD holds or the kernel routes (not the local table), in prefix order. */
  poolPrefixes(): string[] {
    return this.poolPrefixIndex().prefixes
  }

  /**
   * The facts of every pool prefix, in prefix order: `check`'s walk. IPv4 prefixes are looked up by their
   * numeric keys, so no prefix text is parsed again.
   */
  *poolFacts(): Generator<PrefixFacts> {
    const {prefixes} = this.poolPrefixIndex()
    for (let i = 0; i < prefixes.length; i++) yield this.poolFactsAt(i)
  }

  /** The facts of the i-th of poolPrefixIndex's prefixes. */
  poolFactsAt(i: number): PrefixFacts {
    const {prefixes, v4Keys} = this.poolPrefixIndex()
    if (i >= v4Keys.length) return this.facts(prefixes[i])
    const key = v4Keys[i]
    const len = key % 64
    const v = (key - len) / 64
    return this.computeFacts(prefixes[i], pathsOf(this.birdIndex.getV4(v, len)), v, len)
  }

  /**
   * The pool prefixes (poolPrefixes) and, for the IPv4 ones (first), their keys (model/prefix-key.ts prefixKey).
   * Not the prefixes found healthy in bulk (snapshot.healthy): `check` merges those in by key.
   */
  poolPrefixIndex(): {prefixes: string[]; v4Keys: Float64Array} {
    if (this.poolPrefixList) return this.poolPrefixList
    // IPv4 prefixes by their key network·64 + length (exact in a double, and in prefix order), sorted as
    // numbers; the others by text, after them. A kernel route's prefix counts only when BIRD does not hold it.
    const keys: number[] = []
    const kernelOnly = new Map<number, string>()
    const other = new Set<string>()
    this.birdIndex.forEachV4((network, len) => {
      if (this.v4PoolOf(network, len)) keys.push(networkKey(network, len))
    })
    for (const [prefix] of this.birdIndex.otherEntries()) if (this.poolOf(prefix)) other.add(prefix)
    // the kernel's IPv4 prefixes from the FIB's own index (no prefix text parsed again), the others from the routes
    for (const t of this.indexTables) {
      if (t === 255) continue
      this.fib.forEachV4(t, (v, len, routes) => {
        const dst = routedDst(routes)
        if (dst === undefined || this.birdIndex.getV4(v, len) !== undefined || !this.v4PoolOf(v, len)) return
        const key = networkKey(v, len)
        if (kernelOnly.has(key)) return
        kernelOnly.set(key, dst)
        keys.push(key)
      })
    }
    for (const r of this.snapshot.kernelRoutes) {
      if (r.family === 'inet' || r.tableId === 255 || !ROUTED(r) || !this.indexTables.includes(r.tableId)) continue
      if (this.birdIndex.get(r.dst) === undefined && this.poolOf(r.dst)) other.add(r.dst)
    }
    // Calico's blocks in the pools that neither holds (block-unrouted), unless found healthy in bulk
    const cluster = this.cluster
    if (cluster) {
      const seen = new Set(keys)
      const healthy = this.snapshot.healthy?.keys
      for (const key of cluster.ownerKeys((cidr) => prefixKey(cidr))) {
        const len = key % 64
        if (
          key < 0 ||
          seen.has(key) ||
          !this.v4PoolOf((key - len) / 64, len) ||
          (healthy !== undefined && indexOfKey(healthy, key) >= 0)
        )
          continue
        seen.add(key)
        keys.push(key)
        kernelOnly.set(key, keyPrefix(key))
      }
    }
    const sorted = Float64Array.from(keys).sort()
    const list: string[] = new Array(sorted.length)
    for (let i = 0; i < sorted.length; i++) {
      const key = sorted[i]
      const len = key % 64
      const held = this.birdIndex.getV4((key - len) / 64, len)
      list[i] = held === undefined ? kernelOnly.get(key)! : (Array.isArray(held) ? held[0] : held).prefix
    }
    this.poolPrefixList = {prefixes: other.size > 0 ? list.concat(sortPrefixes([...other])) : list, v4Keys: sorted}
    return this.poolPrefixList
  }

  /**
   * How the kernel reaches every distinct BGP next hop of the pool routes BIRD holds: what node-wide checks look at.
   */
  poolResolutions(): NexthopResolution[] {
    if (this.poolResolutionList) return this.poolResolutionList
    const hops = new Set<string>()
    const addHops = (routes: BirdRoute | BirdRoute[]) => {
      for (const r of Array.isArray(routes) ? routes : [routes]) if (r.bgpNextHop !== undefined) hops.add(r.bgpNextHop)
    }
    this.birdIndex.forEachV4((network, len, routes) => {
      if (this.v4PoolOf(network, len)) addHops(routes)
    })
    for (const [prefix, routes] of this.birdIndex.otherEntries()) if (this.poolOf(prefix)) addHops(routes)
    for (const n of this.snapshot.healthy?.bgpNextHops ?? []) hops.add(n)
    for (const n of this.snapshot.otherNextHops ?? []) hops.add(n)
    // in address order: the same whichever prefixes were reported in bulk
    this.poolResolutionList = [...hops].sort(compareAddresses).map((n) => this.resolve(n))
    return this.poolResolutionList
  }

  kernelRoutesFor(prefix: string): KernelRoute[] {
    const slash = prefix.indexOf('/')
    const v = ipv4Value(prefix, 0, slash)
    if (v >= 0) return this.v4KernelRoutes(v, Number(prefix.slice(slash + 1)))
    const family = familyOf(prefix)
    return this.routesAt((t) => this.fib.exact(prefix, t, family))
  }

  /** kernelRoutesFor an IPv4 prefix already parsed: v/len. */
  private v4KernelRoutes(v: number, len: number): KernelRoute[] {
    // the common case, one table with one route: no closure, no list (the FIB's own one-element list is read-only)
    if (this.tables.length === 1) {
      const at = this.fib.exactV4(v, len, this.tables[0])
      if (at.length === 0) return at
      if (at.length === 1) return ROUTED(at[0]) ? at : NO_KERNEL_ROUTES
    }
    return this.routesAt((t) => this.fib.exactV4(v, len, t))
  }

  /**
   * The routes at one prefix in the tables BIRD writes, lowest metric first; local, broadcast and multicast left out.
   */
  private routesAt(exact: (tableId: number) => KernelRoute[]): KernelRoute[] {
    let out: KernelRoute[] | undefined
    for (const t of this.tables) {
      for (const r of exact(t)) {
        if (!ROUTED(r)) continue
        if (out === undefined) out = [r]
        else out.push(r)
      }
    }
    if (out === undefined) return []
    if (out.length > 1) out.sort((a, b) => a.metric - b.metric)
    return out
  }

  resolve(bgpNextHop: string): NexthopResolution {
    const cached = this.resolutions.get(bgpNextHop)
    if (cached) return cached
    const resolution = this.computeResolution(bgpNextHop)
    this.resolutions.set(bgpNextHop, resolution)
    return resolution
  }

  private computeResolution(bgpNextHop: string): NexthopResolution {
    const lookup = this.fib.lookup(bgpNextHop)
    const nexthops = lookup.route?.nexthops ?? []
    return {
      bgpNextHop,
      lookup,
      own: this.ownAddresses.has(bgpNextHop),
      viaInet6: familyOf(bgpNextHop) === 'inet' && nexthops.some((n) => n.gateway?.family === 'inet6'),
      multipath: nexthops.length > 1,
    }
  }

  facts(prefixText: string): PrefixFacts {
    let held = this.birdIndex.get(prefixText)
    if (held === undefined) {
      const prefix = canonicalPrefix(prefixText) ?? prefixText
      held = prefix === prefixText ? undefined : this.birdIndex.get(prefix)
      if (held === undefined) return this.computeFacts(prefix, NO_ROUTES)
    }
    const paths = pathsOf(held)
    return this.computeFacts(paths[0].prefix, paths) // BIRD's text of the prefix is canonical
  }

  /** v/len: the prefix parsed, when the caller has it (IPv4); else parsed here. */
  private computeFacts(prefix: string, bird: BirdRoute[], v = -2, len = 0): PrefixFacts {
    if (v === -2) {
      const slash = prefix.indexOf('/')
      v = ipv4Value(prefix, 0, slash)
      len = v >= 0 ? Number(prefix.slice(slash + 1)) : 0
    }
    const pool = v >= 0 ? this.v4PoolOf(v, len) : this.poolOf(prefix)
    const kernel = v >= 0 ? this.v4KernelRoutes(v, len) : this.kernelRoutesFor(prefix)
    let birdPrimary: BirdRoute | undefined
    for (const r of bird) {
      if (r.primary) {
        birdPrimary = r
        break
      }
    }
    birdPrimary ??= bird[0]
    let bestSet: BirdRoute[] = NO_ROUTES
    let bgpNextHops: string[] = NO_STRINGS
    let resolutions: NexthopResolution[] = NO_RESOLUTIONS
    if (birdPrimary !== undefined) {
      if (bird.length === 1) {
        bestSet = bird // the common case: one path, shared lists per next hop
        const n = birdPrimary.bgpNextHop
        if (n !== undefined) {
          const one = this.single(n)
          bgpNextHops = one.hops
          resolutions = one.resolutions
        }
      } else {
        bestSet = bird.filter((r) => r === birdPrimary || equalPreference(birdPrimary, r))
        const hops: string[] = []
        for (const r of bestSet) if (r.bgpNextHop !== undefined && !hops.includes(r.bgpNextHop)) hops.push(r.bgpNextHop)
        if (hops.length > 0) {
          const shared = hops.length === 1 ? this.single(hops[0]) : this.several(hops.sort(compareAddresses))
          bgpNextHops = shared.hops
          resolutions = shared.resolutions
        }
      }
    }
    let effective = kernel[0]
    let rule: IpRule | undefined
    if (this.fib.policyRouting) {
      const decided = this.inForce(prefix, v, len)
      if (decided !== undefined) {
        effective = decided.route
        rule = decided.rule
      }
    }
    const ours = this.oursTables.length === 0 ? NO_KERNEL_ROUTES : this.oursAt(prefix, v, len)
    // CrossSubnet: a next hop on one of our own subnets (a connected route, no gateway) is reached directly
    // without BIRD's BGP next hops, the kernel route's gateways stand in for them
    const tunnelExpected = pool?.mode === 'ipip' &&
      !(pool.crossSubnet && this.sameSubnet(resolutions.length > 0 ? resolutions : this.gatewayResolutions(effective)))
    return {
      prefix,
      pool,
      tunnelExpected,
      kernel,
      effective,
      ...(rule !== undefined ? {rule} : {}),
      ours,
      bird,
      birdPrimary,
      bestSet,
      bgpNextHops,
      resolutions,
      local: this.isLocal(prefix, birdPrimary, effective),
      ownersDown: this.sessionsDown,
    }
  }

  /** The routes at exactly `prefix` (v/len when IPv4) in one table, lowest metric first; local kinds left out. */
  private exactRoutes(prefix: string, v: number, len: number, tableId: number): KernelRoute[] {
    const at = v >= 0 ? this.fib.exactV4(v, len, tableId) : this.fib.exact(prefix, tableId, familyOf(prefix))
    const routed = at.filter(ROUTED)
    return routed.length > 1 ? routed.sort((a, b) => a.metric - b.metric) : routed
  }

  /**
   * The route in force for a prefix under policy routing: the rules in priority order whose selectors a lookup of the
   * prefix matches, the first whose table holds the prefix, its lowest metric. The rule is named unless it is one of
   * the kernel's own three. Undefined when no rule's table holds it.
   */
  private inForce(prefix: string, v: number, len: number): {route: KernelRoute; rule?: IpRule} | undefined {
    for (const r of this.fib.rulesFor(prefix)) {
      if (r.tableId === undefined) continue
      const routes = this.exactRoutes(prefix, v, len, r.tableId)
      if (routes.length > 0)
        return r.builtin || r.rule === undefined ? {route: routes[0]} : {route: routes[0], rule: r.rule}
    }
    return undefined
  }

  /** routedoctor's routes at exactly `prefix`, in every table that holds one of its routes. */
  private oursAt(prefix: string, v: number, len: number): KernelRoute[] {
    let out: KernelRoute[] | undefined
    for (const t of this.oursTables) {
      for (const r of this.exactRoutes(prefix, v, len, t)) if (r.protocol === this.fixProtocol) (out ??= []).push(r)
    }
    return out ?? NO_KERNEL_ROUTES
  }

  /** The one-element next-hop and resolution lists of a single BGP next hop, shared by every prefix behind it. */
  private single(bgpNextHop: string): {hops: string[]; resolutions: NexthopResolution[]} {
    let hit = this.singles.get(bgpNextHop)
    if (hit === undefined) {
      hit = {
        hops: Object.freeze([bgpNextHop]) as string[],
        resolutions: Object.freeze([this.resolve(bgpNextHop)]) as NexthopResolution[],
      }
      this.singles.set(bgpNextHop, hit)
    }
    return hit
  }

  /**
   * The next-hop and resolution lists of several BGP next hops (in this order), shared by every prefix behind the same
   * ones: what is made once per list (wanted gateways, planned next hops, wording) is then made once per set.
   */
  private several(bgpNextHops: string[]): {hops: string[]; resolutions: NexthopResolution[]} {
    const key = bgpNextHops.join(' ')
    let hit = this.severals.get(key)
    if (hit === undefined) {
      hit = {
        hops: Object.freeze(bgpNextHops) as string[],
        resolutions: Object.freeze(bgpNextHops.map((n) => this.resolve(n))) as NexthopResolution[],
      }
      if (this.severals.size < SHARED_SETS) this.severals.set(key, hit) // bounded: sets may all differ
    }
    return hit
  }

  /** The kernel's own view of each IPv4 gateway of a unicast route (none for any other route). */
  private gatewayResolutions(route: KernelRoute | undefined): NexthopResolution[] {
    if (route?.type !== 'unicast') return NO_RESOLUTIONS
    const out: NexthopResolution[] = []
    for (const n of route.nexthops) if (n.gateway?.family === 'inet') out.push(this.resolve(n.gateway.address))
    return out.length === route.nexthops.length ? out : NO_RESOLUTIONS
  }

  private sameSubnet(resolutions: NexthopResolution[]): boolean {
    return (
      resolutions.length > 0 &&
      resolutions.every(
        (r) =>
          r.lookup.route?.type === 'unicast' &&
          r.lookup.route.nexthops.length > 0 &&
          r.lookup.route.nexthops.every((n) => !n.gateway && n.dev !== this.snapshot.tunnelDev),
      )
    )
  }

  private isLocal(prefix: string, birdPrimary?: BirdRoute, effective?: KernelRoute): boolean {
    const dev = this.snapshot.tunnelDev
    if (birdPrimary) {
      const source = birdPrimary.source
      if (isBgp(source)) return false
      // no source: a plain `show route` without protocol data; a path with no peer (`from`) is not BGP's
      if ((source !== undefined && source !== '') || birdPrimary.from === undefined) {
        // a static blackhole block, a kernel/device route to a workload interface
        if (birdPrimary.dest === 'blackhole') return true
        if (birdPrimary.nexthops.length > 0 && birdPrimary.nexthops.every((n) => !n.gateway && n.iface !== dev))
          return true
      }
    }
    if (effective) {
      if (effective.type === 'blackhole' && effective.protocol !== 'bird') return true
      if (effective.type === 'blackhole' && !birdPrimary) return true
      if (effective.type === 'unicast' && effective.nexthops.length > 0 &&
        effective.nexthops.every((n) => !n.gateway && n.dev !== undefined && n.dev !== dev)) return true
    }
    // the tunnel device's own address lies in the block: this node's block
    if (this.tunnelAddr === null)
      this.tunnelAddr = this.snapshot.addresses.find((a) => a.ifname === dev && a.family === 'inet')
    const tunnelAddr = this.tunnelAddr
    if (tunnelAddr && prefixContains(prefix, tunnelAddr.local) && !birdPrimary?.bgpNextHop)
      return effective?.type !== 'unicast' || effective.nexthops.every((n) => !n.gateway)
    return false
  }

  /** The BGP session a path came over: by protocol name, else by neighbor address. */
  sessionOf(route: BirdRoute): BirdProtocol | undefined {
    return this.bgpProtocols.find((p) => p.name === route.protocol) ??
      this.bgpProtocols.find((p) => p.neighborAddress !== undefined && p.neighborAddress === route.from)
  }


  sysctlValue(name: string): {value: string; pos: SourcePos} | undefined {
    return this.sysctl.get(name)
  }

  /** Effective rp_filter of a device: the kernel uses max(all, dev). */
  rpFilter(dev: string): {value: number; cites: SourcePos[]} | undefined {
    const all = this.sysctl.get('net.ipv4.conf.all.rp_filter')
    // sysctl writes a dot in a device name (a VLAN, eth1.100) as a slash
    const own =
      this.sysctl.get(`net.ipv4.conf.${dev.replaceAll('.', '/')}.rp_filter`) ??
      this.sysctl.get(`net.ipv4.conf.${dev}.rp_filter`)
    if (!all && !own) return undefined
    const value = Math.max(Number(all?.value ?? 0), Number(own?.value ?? 0))
    return {value, cites: [all?.pos, own?.pos].filter((p): p is SourcePos => p !== undefined)}
  }

  /** The underlay route N resolves to, cited: computed once per next hop, as every prefix behind N cites it. */
  resolutionEvidence(r: NexthopResolution): Evidence[] {
    let hit = this.resolutionCites.get(r)
    if (hit === undefined) {
      const route = r.lookup.route
      hit = route ? this.citeKernelRoute(route) : []
      this.resolutionCites.set(r, hit)
    }
    return hit
  }

  /** A kernel route, cited: its lines, or (from a one-line JSON dump) the route as `ip route` prints it. */
  citeKernelRoute(route: KernelRoute): Evidence[] {
    if (this.kernelLines && this.evidence && route.pos?.file === 'ip-j-d-route.json') {
      const places = (this.kernelPlaces ??= this.indexKernelPlaces())
      const key = kernelRouteKey(route)
      const lines = places.lines?.get(key)
      if (lines) return this.cite({file: 'ip-d-route.txt', line: lines[0], endLine: lines[1]})
      const element = places.elements?.get(key)
      if (element !== undefined)
        return [{file: route.pos.file, line: 1, endLine: 1, element, text: formatKernelRoute(route)}]
    }
    return this.cite(route.pos, () => formatKernelRoute(route))
  }

  /** Where the JSON dump's routes are printed: the text dump's lines, else the JSON array's elements. */
  private indexKernelPlaces(): {lines?: Map<string, [number, number]>; elements?: Map<string, number>} {
    const text = this.snapshot.files.find((f) => f.name === 'ip-d-route.txt')?.text
    const lines = text ? textDumpLines(text) : undefined
    if (lines) return {lines}
    const json = this.snapshot.files.find((f) => f.name === 'ip-j-d-route.json')?.text
    return {elements: json ? jsonElements(json) : undefined}
  }

  /** The cited lines of a parsed object, verbatim (a one-line JSON file cites the object itself). */
  cite(pos: SourcePos | undefined, render?: () => string): Evidence[] {
    if (!pos || !this.evidence) return NO_EVIDENCE
    let source = this.sources.get(pos.file)
    if (source === undefined)
      this.sources.set(pos.file, (source = this.snapshot.files.find((f) => f.name === pos.file)?.text ?? ''))
    // a one-line JSON dump cites the object itself, rendered as ip prints it
    if (render && (source === '' || pos.file.endsWith('.json')))
      return [{file: pos.file, line: pos.line, endLine: pos.endLine, text: render()}]
    let text =
      source === '' && this.kept.has(pos.file)
        ? this.keptLines(pos.file, pos.line, pos.endLine)
        : this.lines(pos.file, source, pos.line, pos.endLine)
    // ASCII: a one-byte string keeps a full table's report one-byte
    if (text.length > 300) text = text.slice(0, 300) + '...'
    return [{file: pos.file, line: pos.line, endLine: pos.endLine, text}]
  }

  /**
   * Lines [from, to] of a file whose text was dropped (bulk/drop-texts.ts): every object the snapshot holds has its
   * lines kept.
   */
  private keptLines(file: string, from: number, to: number): string {
    const lines = this.kept.get(file)!.lines(from, to)
    if (lines === undefined)
      throw new Error(`SnapshotIndex: lines ${from}-${to} of ${file} were not kept when its text was dropped`)
    return withoutCr(lines)
  }

  /** Lines [from, to] (1-based) of a file, through an index of line starts built once per file. */
  private lines(file: string, text: string, from: number, to: number): string {
    let starts = this.lineStarts.get(file)
    if (!starts) {
      // grown by doubling: a full table's dump has ten million lines, too many for a list of numbers
      let list = new Uint32Array(1024)
      let n = 1 // list[0] = 0
      for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) {
        if (n === list.length) {
          const bigger = new Uint32Array(n * 2)
          bigger.set(list)
          list = bigger
        }
        list[n++] = i + 1
      }
      starts = list.subarray(0, n)
      this.lineStarts.set(file, starts)
    }
    if (from < 1 || from > starts.length) return ''
    const end = to < starts.length ? starts[to] - 1 : text.length
    return withoutCr(text.slice(starts[from - 1], Math.max(starts[from - 1], end)))
  }
}

// at most this many sets of several BGP next hops kept shared (SnapshotIndex.several)
const SHARED_SETS = 100_000

// shared empty lists of the facts of a prefix (read-only, as every list in PrefixFacts)
const NO_ROUTES = Object.freeze([]) as unknown as BirdRoute[]
const NO_STRINGS = Object.freeze([]) as unknown as string[]
const NO_RESOLUTIONS = Object.freeze([]) as unknown as NexthopResolution[]
const NO_KERNEL_ROUTES = Object.freeze([]) as unknown as KernelRoute[]
const NO_EVIDENCE = Object.freeze([]) as unknown as Evidence[]

/** Cited lines without the CR of CRLF line ends. */
function withoutCr(lines: string): string {
  return lines.includes('\r') ? lines.replace(/\r(?=\n|$)/g, '') : lines
}

/** BIRD's paths at one prefix as the index holds them (the path alone, a list, or nothing) as a list. */
function pathsOf(held: BirdRoute | BirdRoute[] | undefined): BirdRoute[] {
  return held === undefined ? NO_ROUTES : Array.isArray(held) ? held : [held]
}

/** A route that routes traffic somewhere (not the local, broadcast or multicast kind the kernel adds for addresses). */
const ROUTED = (r: KernelRoute): boolean => r.type !== 'local' && r.type !== 'broadcast' && r.type !== 'multicast'

/** The prefix of the first routing route among the routes at one prefix; undefined when none is. */
function routedDst(routes: KernelRoute | readonly KernelRoute[]): string | undefined {
  if (!Array.isArray(routes)) return ROUTED(routes as KernelRoute) ? (routes as KernelRoute).dst : undefined
  for (const r of routes as readonly KernelRoute[]) if (ROUTED(r)) return r.dst
  return undefined
}

/** Can the kernel send through this link: administratively up, with carrier, not operationally down. */
export function linkUsable(link: Link): boolean {
  return (
    link.flags.includes('UP') &&
    link.flags.includes('LOWER_UP') &&
    !link.flags.includes('NO-CARRIER') &&
    link.operstate !== 'DOWN'
  )
}

/** A path learnt over BGP (BIRD prints the source as `BGP`; compared without case, as other versions may not). */
/** BIRD route sources that are the kernel's own routes (learnt from it, or connected), never exported to it. */
export const KERNELS_OWN: ReadonlySet<string> = new Set(['inherit', 'device', 'kernel', 'direct'])

export function isBgp(source: string | undefined): boolean {
  return source === 'BGP' || (source !== undefined && source.length === 3 && source.toLowerCase() === 'bgp')
}

export function isEstablished(p: BirdProtocol): boolean {
  return (p.bgpState ?? p.info.split(/\s+/)[0]) === 'Established'
}

function attr(route: BirdRoute, ...names: string[]): string | undefined {
  return route.attributes.find((a) => names.includes(a.name))?.value.trim()
}

interface Decision {
  localPref: number | string | undefined
  origin: string | undefined
  med: number | string | undefined
  pathLength: number
}

/** A path's BGP decision values: the parser's eager fields, or (a route built without them) its attributes. */
function decision(r: BirdRoute): Decision {
  if (r.asPathLength !== undefined)
    return {localPref: r.localPref, origin: r.origin, med: r.med, pathLength: r.asPathLength}
  const num = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : v)
  return {
    localPref: num(attr(r, 'BGP.local_pref', 'bgp_local_pref')),
    origin: attr(r, 'BGP.origin', 'bgp_origin'),
    med: num(attr(r, 'BGP.med', 'bgp_med')),
    pathLength: (attr(r, 'BGP.as_path', 'bgp_path') ?? '').split(/\s+/).filter(Boolean).length,
  }
}

const same = (x: unknown, y: unknown): boolean => x === y || (Number.isNaN(x) && Number.isNaN(y))

/** Would BIRD merge these two paths (`merge paths`)? Equal preference and equal BGP decision attributes. */
export function equalPreference(a: BirdRoute, b: BirdRoute): boolean {
  if ((a.preference ?? -1) !== (b.preference ?? -1)) return false
  const sa = a.source, sb = b.source
  if (sa !== sb && (sa ?? '').toLowerCase() !== (sb ?? '').toLowerCase()) return false
  if (!isBgp(sa)) return false
  if (a.asPathLength !== undefined && b.asPathLength !== undefined) {
    return (
      a.asPathLength === b.asPathLength && same(a.localPref, b.localPref) && a.origin === b.origin && same(a.med, b.med)
    )
  }
  const da = decision(a),
    db = decision(b)
  return (
    da.pathLength === db.pathLength &&
    same(da.localPref, db.localPref) &&
    da.origin === db.origin &&
    same(da.med, db.med)
  )
}

export function comparePrefixes(a: string, b: string): number {
  const ka = prefixSortKey(a), kb = prefixSortKey(b)
  return ka < kb ? -1 : ka > kb ? 1 : 0
}

/** IPv4 before IPv6, then by address. */
export const compareAddresses = (a: string, b: string): number => comparePrefixes(`${a}/32`, `${b}/32`)

export interface Ipv4Pool {
  network: number
  len: number
  pool: Pool
}

/** The IPv4 pools, most specific first: the first that contains a prefix is its pool. */
export function ipv4Pools(pools: Pool[]): Ipv4Pool[] {
  return pools.flatMap((pool) => {
    const slash = pool.cidr.indexOf('/')
    const v = ipv4Value(pool.cidr, 0, slash)
    return v < 0 ? [] : [{network: v, len: Number(pool.cidr.slice(slash + 1)), pool}]
  }).sort((a, b) => b.len - a.len)
}

/** The pool of IPv4 prefix v/len: integer arithmetic over a handful of pools, cheaper than any cache. */
export function ipv4PoolOf(pools: Ipv4Pool[], v: number, len: number): Pool | undefined {
  for (const p of pools) if (len >= p.len && ipv4Network(v, p.len) === p.network) return p.pool
  return undefined
}

/**
 * Is an IPv4 network key (model/prefix-key.ts prefixKey) outside every pool, neither in one nor holding one? Undefined
 * when there is no IPv4 pool (nothing is outside then: no prefix is a pool prefix either).
 */
export function outsidePools(pools: Pool[]): ((key: number) => boolean) | undefined {
  const v4 = ipv4Pools(pools)
  if (v4.length === 0) return undefined
  return (key: number): boolean => {
    if (key < 0) return false
    const len = key % 64
    const v = (key - len) / 64
    for (const p of v4) {
      const l = Math.min(len, p.len)
      if (ipv4Network(v, l) === ipv4Network(p.network, l)) return false
    }
    return true
  }
}

/** Sorted by family, address, length: each key computed once. */
export function sortPrefixes(prefixes: string[]): string[] {
  return prefixes
    .map((p) => [prefixSortKey(p), p] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, p]) => p)
}
