// The model every stage shares. Names follow iproute2 and BIRD: a kernel route has `nexthops`,
// a BIRD path has a `bgpNextHop`, a protocol has a `state`. Every parsed object carries `pos`
// (file and 1-based line range) so a finding can cite the lines it rests on.

export interface SourcePos {
  file: string // snapshot file name, e.g. "ip-j-d-route.json"
  line: number // 1-based, first line of the object
  endLine: number // 1-based, last line (inclusive)
}

export interface Evidence extends SourcePos {
  text: string // the cited lines verbatim
  element?: number // a route of a one-line JSON dump: its index in the array (0-based)
}

export type Family = 'inet' | 'inet6'

// ---------------------------------------------------------------- kernel

export interface Gateway {
  family: Family // inet6 on an IPv4 route = `via inet6` (RTA_VIA)
  address: string // canonical text form (ipaddr.js toString(); IPv6 compressed)
}

export interface Nexthop {
  gateway?: Gateway // absent: directly connected (`dev X` only)
  dev?: string
  weight: number // as iproute2 prints it (rtnh_hops + 1); 1 for a single-path route
  // per-next-hop flags as iproute2 prints them: onlink, linkdown, dead, pervasive, ...
  // For a single-path route the route-level next-hop flags are copied here too.
  flags: string[]
}

/** Route types as iproute2 names them, in the kernel's order: RTN_UNICAST is 1, RTN_XRESOLVE 11. */
export const ROUTE_TYPES = [
  'unicast',
  'local',
  'broadcast',
  'anycast',
  'multicast',
  'blackhole',
  'unreachable',
  'prohibit',
  'throw',
  'nat',
  'xresolve',
] as const

export type RouteType = (typeof ROUTE_TYPES)[number]

export interface KernelRoute {
  family: Family
  type: RouteType
  dst: string // canonical CIDR: "192.168.200.10/32", "0.0.0.0/0" for default
  table: string // as ip prints it: "main", "local", "default", or the number "1000"
  tableId: number // 254 main, 255 local, 253 default, else the number (unknown names: -1)
  protocol: string // as ip prints it: "bird", "kernel", "boot", "static", or a number "80" (Felix)
  scope: string // "global" | "link" | "host" | "site" | "nowhere" | number as string
  metric: number // RTA_PRIORITY; 0 when absent
  prefsrc?: string
  tos?: string
  flags: string[] // route-level flags (rtm_flags): onlink, linkdown, ...
  nexthops: Nexthop[] // always an array: single path = length 1; blackhole etc. = length 0
  pos: SourcePos
}

export interface Link {
  ifindex: number
  ifname: string // without the @ifN suffix
  flags: string[] // UP, LOWER_UP, NO-CARRIER, ...
  mtu: number
  operstate: string // UP, DOWN, UNKNOWN
  kind?: string // linkinfo.info_kind: ipip, tun, veth, vxlan, ... (absent for plain devices)
  address?: string // MAC
  pos: SourcePos
}

export interface Address {
  ifname: string
  family: Family
  local: string
  prefixlen: number
  scope: string
  pos: SourcePos
}

export interface Neighbor {
  dst: string
  dev: string
  lladdr?: string
  state: string[]
  pos: SourcePos
}

export interface IpRule {
  priority: number
  text: string // the selector and action as printed, e.g. "from all lookup main"
  table?: string
  from?: string // canonical prefix of `from P` (absent: from all)
  to?: string // canonical prefix of `to P` (absent: to all)
  // selectors a plain destination lookup does not satisfy or that cannot be judged from the rule text
  // (iif, oif, fwmark, not, tos, uid range, ...): such a rule is skipped by a destination lookup
  otherSelectors?: boolean
  action: 'lookup' | 'blackhole' | 'unreachable' | 'prohibit' | 'goto' | 'nop' | 'other'
  protocol?: string // `proto X` when printed (ip -d rule)
  pos: SourcePos
}

export interface SysctlEntry {
  name: string // net.ipv4.conf.eth0.rp_filter
  value: string
  pos: SourcePos
}

// ---------------------------------------------------------------- pools

export type PoolMode = 'ipip' | 'vxlan' | 'none'

export interface Pool {
  cidr: string // canonical
  mode: PoolMode
  origin: 'flag' | 'ippools' | 'bird.conf' | 'calico'
  // ipipMode CrossSubnet: encapsulate only towards nodes outside this node's own subnets
  crossSubnet?: boolean
  // spec.blockSize: the prefix length of the pool's blocks (absent: Calico's default, DEFAULT_BLOCK_SIZE)
  blockSize?: number
  name?: string
  pos?: SourcePos
}

// ---------------------------------------------------------------- BIRD

export interface BirdNexthop {
  gateway?: string // canonical address; may be IPv6 (link-local) for an IPv4 route
  iface?: string
  weight?: number
  onlink?: boolean
  mpls?: string
  table?: string // BIRD 3 `recursive`: `via GW table T`
  // no line of its own: the parser shares one object among every route with the same next hop (cite the route's pos)
}

export interface BirdAttribute {
  name: string // verbatim: "BGP.next_hop", "bgp_next_hop", "Kernel.metric", "Type", "source", ...
  value: string // verbatim, `\t\t` continuation lines joined with a space
  line: number // first line in the route's file
  endLine: number
}

export interface BirdRoute {
  prefix: string // canonical CIDR
  table?: string // BIRD table ("master4"); absent in 1.6 output
  // 2.x/3.x destination word, or 1.6's: unicast | blackhole | unreachable | prohibited | recursive | multipath | router
  // | device | ... Normalised: 1.6 `via X on IF` -> "unicast", `dev IF` -> "unicast", `multipath` -> "unicast".
  dest: string
  protocol: string // BIRD protocol name: Mesh_172_31_20_5, kernel1, blocks
  since: string
  from?: string // ` from ADDR` on the header
  primary: boolean // `*` (or `!`): the selected route of the network
  kernelSyncFailed: boolean // `!`
  preference?: number
  info: string // the rest after [..] verbatim, e.g. "(100/?) [i]"
  // route source: "BGP", "static", "inherit", "device", "Kernel"... from `Type:` (1.x/2.x) or `source:` (3.x)
  source?: string
  bgpNextHop?: string // BGP.next_hop / bgp_next_hop, first address
  // BGP decision values (BGP.* / bgp_*), the first of either name. The parser sets asPathLength on every
  // route (0 without a path) and the others when present; on a route built without them they are read from
  // `attributes`.
  localPref?: number
  origin?: string // IGP, EGP, Incomplete
  med?: number
  asPathLength?: number // ASNs in the path (a truncated path's `...` counts as one)
  nexthops: BirdNexthop[] // may be shared between routes: treat as read-only
  // every attribute line, unknown ones included (parsed routes build it on access: read it once)
  attributes: BirdAttribute[]
  pos: SourcePos
}

/** `Routes: 8 imported, 1 filtered, 10 exported, 7 preferred`. */
export interface BirdRouteCounts {
  imported: number
  filtered?: number
  exported: number
  preferred?: number
}

/**
 * A channel's route counts and the route changes it accepted on import (`Route change stats`, the last column): a
 * path that changes its next hop keeps the counts but is one more import accepted.
 */
export interface BirdChannelStats {
  channel: string // `Channel ipv4` → "ipv4"; "" for BIRD 1.6's protocol-level lines
  routes?: BirdRouteCounts
  importUpdatesAccepted?: number
  importWithdrawsAccepted?: number
}

export interface BirdProtocol {
  name: string
  proto: string // BGP, Kernel, Static, Device, Direct, Pipe, ...
  table: string
  state: string // up, down, start, ...
  since: string
  info: string // Established, Active, "Active        Socket: Connection refused", ...
  bgpState?: string // Established, Active, Idle, Connect, OpenSent, ...
  neighborAddress?: string
  neighborAs?: number
  localAs?: number
  lastError?: string // "Socket: Connection refused", "Hold timer expired", ...
  routes?: BirdRouteCounts // the ipv4 channel's (BIRD 1.6: the protocol's), else the first channel's
  channels?: BirdChannelStats[] // `show protocols all`: every channel's counts, in BIRD's order
  details: Record<string, string> // every `Key: value` of the `all` block, nested keys joined with "/"
  pos: SourcePos
}

export interface BirdStatus {
  version: string // "2.0.12", "1.6.8", "v0.3.3+birdv1.6.8", "3.2.3"
  major: number // 1, 2 or 3
  calicoFork: boolean
  routerId?: string
  gracefulRestart?: GracefulRestartStatus // BIRD is recovering from a graceful restart
  pos: SourcePos
}

/** `Graceful restart recovery in progress` / `Waiting for N protocols|channels to recover` / `Wait timer is R/W`. */
export interface GracefulRestartStatus {
  waiting?: number // protocols (1.6) or channels (2.x, 3.x) not yet recovered
  unit?: string // "protocols" or "channels", as BIRD says
  remaining?: number // seconds left on the wait timer
  wait?: number // the wait timer's full length (gr wait), seconds
  pos: SourcePos
}

export interface BirdConfig {
  // pools found in kernel filters: `net ~ CIDR` guarding `krt_tunnel = "tunl0"` or `ifname = "tunl0"`
  pools: Pool[]
  tunnelFilter?: 'krt_tunnel' | 'ifname' | 'ifname-onlink' // how the config points routes at the tunnel
  mergePaths?: boolean
  kernelMetric?: number
  kernelTables: string[] // kernel tables named in `kernel table N`
  // the export filters of the BGP protocols and templates: whether each can accept a route BIRD learnt
  // from the kernel (a filter that accepts by prefix alone does: Calico's calico_export_to_bgp_peers)
  bgpExports?: BgpExport[]
  pos: SourcePos
}

export interface BgpExport {
  protocol: string // the protocol or template whose export it is
  filter: string // filter name, `all`, `none` or `where …`
  acceptsKernelRoutes: boolean
  pos?: SourcePos // the filter's lines (a named filter's block, else the export line)
}

// ---------------------------------------------------------------- snapshot

import type {CalicoTruth} from './calico.js'

/**
 * Pool prefixes `check` found healthy in bulk (bulk/healthy.ts): BIRD's one BGP path and the kernel's one
 * onlink tunnel route, neither in `kernelRoutes` nor in `bird.routes`. Verdict ok, no findings.
 */
export interface HealthyPrefixes {
  keys: Float64Array // model/prefix-key.ts prefixKey, ascending
  // the distinct BGP next hops of their paths and of BrokenPrefixes' (node-wide checks look at them)
  bgpNextHops: string[]
}

/**
 * Pool prefixes `check`'s text report keeps as numbers, broken (bulk/healthy.ts): BIRD's one BGP path, with a
 * reachable BGP next hop, and the kernel's one `proto bird` route, off the tunnel; or BIRD's two equal BGP paths and
 * the kernel's one tunnel route to one of them; neither in `kernelRoutes` nor in `bird.routes`. Each has the
 * verdict and the one finding (an error) of its kind, BROKEN_KINDS[kinds[i]]. Their BGP next hops are in
 * HealthyPrefixes.bgpNextHops.
 */
export interface BrokenPrefixes {
  keys: Float64Array // model/prefix-key.ts prefixKey, ascending
  kinds: Uint8Array
}

/**
 * The kinds of BrokenPrefixes: a single-path route over the underlay, a multipath one, BIRD's `unreachable`, and a
 * tunnel route to one of two equal paths' next hops. At most four: bulk/healthy.ts codes a key and its kind together.
 */
export const BROKEN_KINDS = [
  {verdict: 'not-tunneled', finding: 'tunnel-not-programmed'},
  {verdict: 'not-tunneled', finding: 'tunnel-bypassed-by-ecmp'},
  {verdict: 'unreachable', finding: 'nexthop-unresolvable-by-bird'},
  {verdict: 'multipath-lost', finding: 'multipath-lost'},
] as const satisfies ReadonlyArray<{verdict: Verdict; finding: FindingId}>

export type BrokenKind = (typeof BROKEN_KINDS)[number]
export const [NOT_PROGRAMMED, BYPASSED_BY_ECMP, UNRESOLVABLE_BY_BIRD, MULTIPATH_LOST] = [0, 1, 2, 3]

/** The lines of a dropped text that evidence still cites (src/bulk/drop-texts.ts keeps them). */
export interface CitedLines {
  /** Lines [from, to] (1-based), `\n`-separated; undefined when they were not kept. */
  lines(from: number, to: number): string | undefined
}

/**
 * The --protocol, --table and --tunnel-dev a snapshot records (overlay-settings.json): a replay reads routedoctor's
 * routes and the tunnel by them.
 */
export interface OverlaySettingsRecord {
  protocol?: number
  table?: number
  tunnelDev?: string
  // a table inside 1-255 that builds before --table refused one recorded: read, not used (DESIGN §5)
  refusedTable?: {table: number; line: number}
}

export interface SourceFile {
  name: string // DESIGN §3 file name
  path?: string // where it was read from, when not the snapshot's own NAME (a parse error names it)
  text?: string // raw as collected ('' once dropped: bulk/drop-texts.ts)
  kept?: CitedLines // once its text is dropped, the lines still cited
  droppedLength?: number // once its text is dropped, how long it was
  error?: string // why it could not be collected
  command?: string
  exitStatus?: number
  durationMs?: number
}

export interface Snapshot {
  // warnings: what a replayed bundle's reader found wrong (a file edited after collection, a member missing)
  origin: { kind: 'dir' | 'live' | 'bundle'; path?: string; collectedAt?: string; host?: string; warnings?: string[] }
  files: SourceFile[]
  missing: string[] // DESIGN §3 files not present
  kernelRoutes: KernelRoute[]
  links: Link[]
  addresses: Address[]
  neighbors: Neighbor[]
  rules: IpRule[]
  sysctl: SysctlEntry[]
  bird: {
    status?: BirdStatus
    routes: BirdRoute[]
    protocols: BirdProtocol[]
    config?: BirdConfig
  }
  pools: Pool[]
  poolOrigin: 'flag' | 'ippools' | 'bird.conf' | 'calico' | 'none'
  uncheckedPools?: Pool[] // pools of another mode (vxlan, none): not IP-in-IP, not judged
  tunnelDev: string // --tunnel-dev, else overlay-settings.json's tunnelDev, else tunl0
  calico?: CalicoTruth // Calico's cluster truth (`calico/*.json`, --calico, --kube)
  nodeName?: string // the Kubernetes node this snapshot is (--node, node-name.txt, or found in the truth)
  overlay?: OverlaySettingsRecord // the overlay settings it was diagnosed with (overlay-settings.json)
  healthy?: HealthyPrefixes // once separated
  broken?: BrokenPrefixes // once separated, for check's text report only
  // a collection of one prefix's routes (services/targeted.ts): the BGP next hops of the pool paths it left out
  otherNextHops?: string[]
}

// ---------------------------------------------------------------- findings, verdicts, plans

export type Severity = 'error' | 'warning' | 'info'

export type FindingId =
  | 'tunnel-bypassed-by-ecmp' | 'tunnel-not-programmed' | 'nexthop-unresolvable-by-bird' | 'nexthop-unreachable'
  | 'multipath-lost' | 'prefix-missing' | 'peer-down' | 'tunnel-device-missing' | 'tunnel-device-down'
  | 'onlink-missing' | 'forwarding-off' | 'bird-kernel-mismatch'
  | 'tunnel-mtu' | 'rp-filter-strict' | 'hash-policy-l3' | 'stale-kernel-route' | 'conflicting-route-owners'
  | 'local-block'
  | 'overlay-stale' | 'overlay-learnable' | 'route-leaked-to-bgp' | 'tunnel-endpoint-mismatch' | 'overlay-active'
  | 'block-owner-mismatch' | 'block-affinity-conflict' | 'block-without-ipamblock' | 'block-unrouted'
  | 'node-address-mismatch' | 'route-owner-conflict' | 'borrowed-address-unrouted'

export interface Finding {
  id: FindingId
  severity: Severity
  prefix?: string
  title: string
  detail: string
  evidence: Evidence[]
  fix?: string
}

export type Verdict =
  'ok' | 'local' | 'not-tunneled' | 'unreachable' | 'missing' | 'misrouted' | 'multipath-lost' | 'not-in-pool'

export interface PlannedNexthop {
  gateway: string // the BGP next hop N
  dev: string // the tunnel device
  onlink: boolean
  weight: number
}

/** A route routedoctor would program (or, `action: 'delete'`, withdraw): DESIGN §4 `fix` route. */
export interface PlannedRoute {
  action?: 'replace' | 'delete' // absent: replace (journals of earlier versions)
  dst: string
  table: string // "main" or a number
  tableId: number
  metric: number
  protocol: string // the protocol routedoctor writes with (its own number, as text)
  nexthops: PlannedNexthop[]
}

/**
 * A planned route as the reports give it (fix's `routes` and `applied`, explain's and check's `plan`): its table by
 * number, as a rule's (`main` is 254).
 */
export interface ReportedRoute {
  action: 'replace' | 'delete'
  dst: string
  table: number
  metric: number
  protocol: string
  nexthops: PlannedNexthop[]
}

/** An `ip rule` routedoctor adds or removes: `to POOL lookup TABLE` at a priority (DESIGN §5). */
export interface PlannedRule {
  action: 'add' | 'delete'
  priority: number
  to: string
  table: number
}
