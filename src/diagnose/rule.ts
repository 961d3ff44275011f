// What a rule is: a pure function of the SnapshotIndex (and, for prefix rules, one prefix's facts).
import {hasOnlinkAttribute} from '../model/bird-version.js'
import {tunnelNexthops} from '../model/format.js'
import {
  DEFAULT_RULE_PRIORITY,
  type NexthopResolution,
  type PrefixFacts,
  type SnapshotIndex,
} from '../model/snapshot-index.js'
import type {BirdRoute, Evidence, Finding, FindingId, KernelRoute, Severity} from '../model/types.js'

export const SEVERITY: Record<FindingId, Severity> = {
  'tunnel-bypassed-by-ecmp': 'error',
  'tunnel-not-programmed': 'error',
  'nexthop-unresolvable-by-bird': 'error',
  'nexthop-unreachable': 'error',
  'multipath-lost': 'error',
  'prefix-missing': 'error',
  'peer-down': 'error',
  'tunnel-device-missing': 'error',
  'tunnel-device-down': 'error',
  'onlink-missing': 'error',
  'forwarding-off': 'error',
  'bird-kernel-mismatch': 'error',
  'overlay-stale': 'error',
  'overlay-learnable': 'error',
  'route-leaked-to-bgp': 'error',
  'tunnel-endpoint-mismatch': 'error',
  'block-owner-mismatch': 'error',
  'block-affinity-conflict': 'error',
  'block-without-ipamblock': 'error',
  'block-unrouted': 'error',
  'node-address-mismatch': 'error',
  'route-owner-conflict': 'error',
  'borrowed-address-unrouted': 'warning',
  'tunnel-mtu': 'warning',
  'rp-filter-strict': 'warning',
  'hash-policy-l3': 'warning',
  'stale-kernel-route': 'warning',
  'conflicting-route-owners': 'warning',
  'local-block': 'info',
  'overlay-active': 'info',
}

/** What a rule returns when it finds nothing: one shared, read-only empty list (most prefixes are healthy). */
export const NONE = Object.freeze([]) as unknown as Finding[]

export interface PrefixRule {
  id: FindingId
  scope: 'prefix'
  run(ctx: SnapshotIndex, facts: PrefixFacts): Finding[]
}

export interface HostRule {
  id: FindingId
  scope: 'host'
  run(ctx: SnapshotIndex): Finding[]
}

export function finding(
  id: FindingId,
  f: {prefix?: string; title: string; detail: string; evidence: Evidence[]; fix?: string},
): Finding {
  // the keys in the order a finding's JSON has them (DESIGN §4), prefix and fix only when there are any
  const severity = SEVERITY[id]
  if (f.prefix) {
    return f.fix
      ? {id, severity, prefix: f.prefix, title: f.title, detail: f.detail, evidence: f.evidence, fix: f.fix}
      : {id, severity, prefix: f.prefix, title: f.title, detail: f.detail, evidence: f.evidence}
  }
  return f.fix
    ? {id, severity, title: f.title, detail: f.detail, evidence: f.evidence, fix: f.fix}
    : {id, severity, title: f.title, detail: f.detail, evidence: f.evidence}
}

/** What a finding says and cites, besides its id, severity and prefix. */
export interface FindingTexts {
  title: string
  detail: string
  evidence: Evidence[]
  fix?: string
}

const NO_EVIDENCE = Object.freeze([]) as unknown as Evidence[]

/**
 * A prefix rule's finding about `prefix`. What it says is made only when the SnapshotIndex wants it (`texts`): check's
 * text report shows a prefix finding by its id alone, and making the texts of a full table's findings is not free.
 */
export function prefixFinding(ctx: SnapshotIndex, id: FindingId, prefix: string, texts: () => FindingTexts): Finding {
  if (!ctx.texts) return {id, severity: SEVERITY[id], prefix, title: '', detail: '', evidence: NO_EVIDENCE}
  const made = texts()
  return finding(id, {prefix, title: made.title, detail: made.detail, evidence: made.evidence, fix: made.fix})
}

/** Where the input lacking something came from, for the sentence saying so: a snapshot (or bundle), or this node. */
export function inInput(ctx: SnapshotIndex): string {
  return ctx.snapshot.origin.kind === 'live' ? 'read from this node' : 'in the snapshot'
}

/** Is this kernel route through the tunnel: every next hop on the tunnel device? */
export function throughTunnel(ctx: SnapshotIndex, facts: PrefixFacts): boolean {
  const r = facts.effective
  if (!r || r.type !== 'unicast' || r.nexthops.length === 0) return false
  const dev = ctx.snapshot.tunnelDev
  for (const n of r.nexthops) if (n.dev !== dev) return false
  return true
}

/** Evidence for a kernel route and the BIRD paths behind a prefix. */
export function prefixEvidence(ctx: SnapshotIndex, facts: PrefixFacts): Evidence[] {
  const out: Evidence[] = []
  for (const r of facts.bestSet) for (const e of ctx.cite(r.pos)) out.push(e)
  if (facts.effective) for (const e of ctx.citeKernelRoute(facts.effective)) out.push(e)
  return out
}

export function resolutionEvidence(ctx: SnapshotIndex, facts: PrefixFacts): Evidence[] {
  return facts.resolutions.length === 1
    ? ctx.resolutionEvidence(facts.resolutions[0])
    : facts.resolutions.flatMap((r) => ctx.resolutionEvidence(r))
}

/**
 * The next hops a correct route has: distinct BGP next hops of the best set that the kernel can reach, not our own, in
 * the plan's (address) order as PrefixFacts.bgpNextHops is.
 */
export function wantedGateways(facts: PrefixFacts): string[] {
  // a list of resolutions is often one SnapshotIndex shares among the prefixes of a next hop: computed once for it
  let wanted = wantedOf.get(facts.resolutions)
  if (wanted === undefined) {
    wanted = Object.freeze(
      facts.resolutions.filter((r) => r.lookup.reachable && !r.own).map((r) => r.bgpNextHop),
    ) as string[]
    wantedOf.set(facts.resolutions, wanted)
  }
  return wanted
}

const wantedOf = new WeakMap<readonly NexthopResolution[], string[]>()

/**
 * A BIRD path its kernel protocol learnt from the kernel (`[kernel1 …]`, BIRD 2/3 `Kernel.source`, 1.6 `krt_source`):
 * no BGP path.
 */
export function kernelLearnt(ctx: SnapshotIndex, route: BirdRoute): boolean {
  if (ctx.birdKernelProtocols.has(route.protocol)) return true
  if ((route.source ?? '').toLowerCase() === 'kernel') return true
  if (isBgpSource(route)) return false
  return route.attributes.some((a) => a.name === 'Kernel.source' || a.name === 'krt_source')
}

const isBgpSource = (route: BirdRoute): boolean =>
  route.bgpNextHop !== undefined || (route.source ?? '').toUpperCase() === 'BGP'

/** The tunnel endpoints a kernel route sends the prefix to: its gateways, when every next hop is on the tunnel. */
export function tunnelEndpoints(ctx: SnapshotIndex, route: KernelRoute | undefined): string[] | undefined {
  if (!route || route.type !== 'unicast' || route.nexthops.length === 0) return undefined
  const dev = ctx.snapshot.tunnelDev
  const out: string[] = []
  for (const n of route.nexthops) {
    if (n.dev !== dev || n.gateway === undefined) return undefined
    out.push(n.gateway.address)
  }
  return out
}

const sameSet = (a: readonly string[], b: readonly string[]): boolean => {
  if (a.length !== b.length) return false
  const set = new Set(a)
  return b.every((x) => set.has(x)) && set.size === new Set(b).size
}

/**
 * What routedoctor's overlay should hold for the prefix today (DESIGN §5): the tunnel endpoints of the corrected
 * route, or nothing (empty) when no correction is needed: not an IP-in-IP prefix, this node's own, no BGP next hop
 * the kernel can reach, or the route of BIRD (or another owner) already right, the durable fix in place.
 */
export function overlayGateways(ctx: SnapshotIndex, facts: PrefixFacts): string[] {
  if (!facts.tunnelExpected || facts.local) return NO_GATEWAYS
  const wanted = ownerGateways(ctx, facts.prefix, wantedGateways(facts))
  if (wanted.length === 0) return NO_GATEWAYS
  let theirs: KernelRoute | undefined
  for (const r of facts.kernel) {
    if (r.protocol !== ctx.fixProtocol) {
      theirs = r
      break
    }
  }
  const hops = tunnelEndpoints(ctx, theirs)
  return hops !== undefined && sameSet(hops, wanted) ? NO_GATEWAYS : wanted
}

const NO_GATEWAYS = Object.freeze([]) as unknown as string[]

/**
 * With Calico's truth, of the wanted next hops only the block's owner's address (DESIGN §5: N must also be the
 * owner's); without the truth, or for a block it does not place on another node, the wanted next hops as they are.
 */
export function ownerGateways(ctx: SnapshotIndex, prefix: string, gateways: string[]): string[] {
  if (gateways.length === 0) return gateways
  const owner = ctx.cluster?.ownerOf(prefix)
  if (owner?.address === undefined || owner.block === undefined || owner.node === ctx.clusterNode?.name) return gateways
  if (gateways.length === 1) return gateways[0] === owner.address ? gateways : NO_GATEWAYS
  return gateways.includes(owner.address) ? [owner.address] : NO_GATEWAYS
}

/** Does one of routedoctor's routes carry exactly the overlay's endpoints (in any table)? */
export function carriesPlan(ctx: SnapshotIndex, route: KernelRoute, gateways: readonly string[]): boolean {
  const hops = tunnelEndpoints(ctx, route)
  return (
    gateways.length > 0 &&
    hops !== undefined &&
    sameSet(hops, gateways) &&
    route.nexthops.every((n) => n.flags.includes('onlink') || route.flags.includes('onlink'))
  )
}

/**
 * Does the route in force tunnel the prefix to an endpoint none of BIRD's best BGP paths names (DESIGN §4 misrouted),
 * or is there a route in force and no BGP path at all for a prefix that is not this node's?
 */
export function misrouted(ctx: SnapshotIndex, facts: PrefixFacts): boolean {
  if (facts.local || !facts.effective || !ctx.haveBird) return false
  const hops = tunnelEndpoints(ctx, facts.effective)
  // BIRD's paths without a BGP next hop (plain `show route`) name no endpoint: nothing to judge against
  if (facts.bgpNextHops.length === 0) return hops !== undefined && !facts.bird.some((r) => !kernelLearnt(ctx, r))
  if (hops === undefined) return false
  return hops.some((h) => !facts.bgpNextHops.includes(h))
}

/**
 * Why BIRD wrote a tunnel prefix's route off the tunnel, after the node's BIRD and its kernel export filter (DESIGN
 * §1): the fork's krt_tunnel is honoured on single-path routes only; upstream BIRD points a route at the tunnel only
 * through a filter setting ifname/onlink/gw; BIRD 3.0/3.1 (and 1.6) have no onlink, so no filter can.
 */
export function whyOffTunnel(ctx: SnapshotIndex, multipath: boolean): string {
  const dev = ctx.snapshot.tunnelDev
  const status = ctx.snapshot.bird.status
  const filter = ctx.snapshot.bird.config?.tunnelFilter
  const version = status ? `BIRD ${status.version}` : 'BIRD'
  if (status?.calicoFork || filter === 'krt_tunnel') {
    return multipath
      ? `Calico's BIRD (the fork's krt_tunnel) rewrites a route to ${dev} only when it has a single next hop, so the tunnel was skipped.`
      : `Calico's BIRD (the fork's krt_tunnel) did not rewrite this single-path route to ${dev}: its kernel filter did not set krt_tunnel for it.`
  }
  const v = status?.version.match(/^(\d+)\.(\d+)/)
  if (v && Number(v[1]) === 3 && Number(v[2]) < 2) {
    return `${version} has no onlink attribute: no kernel filter can point a route at ${dev} onlink, ` +
      'so BIRD writes the BGP route as it resolved it, over the underlay.'
  }
  if (status && status.major === 1) {
    return `${version} (upstream, not Calico's fork) has neither krt_tunnel nor onlink: it writes the BGP route as it resolved it, over the underlay.`
  }
  if (filter === 'ifname-onlink' || filter === 'ifname') {
    return `${version}'s kernel export filter sets ifname "${dev}", yet this route reached the kernel without it: ` +
      `the filter did not match it${filter === 'ifname' ? ' (and sets no onlink)' : ''}.`
  }
  if (ctx.snapshot.bird.config) {
    return (
      `${version}'s kernel export filter rewrites nothing (no ifname/onlink/gw for the pools): ` +
      `BIRD writes every BGP route as it resolved it, over the underlay, so no block is tunnelled${multipath ? ', not even a single-path one' : ''}.`
    )
  }
  return `${version} wrote the route as its next hop resolved, over the underlay: no kernel filter pointed it at ${dev} (no bird.conf was read).`
}

/** What to do about a tunnel prefix off the tunnel: program it through the tunnel, when BIRD's next hops are known. */
export function tunnelFixAdvice(ctx: SnapshotIndex, facts: PrefixFacts): string {
  const dev = ctx.snapshot.tunnelDev
  if (facts.bgpNextHops.length === 0) {
    if (!ctx.haveBird)
      return `No BIRD routes ${inInput(ctx)}: nothing can be planned without BIRD's BGP next hops (collect \`birdc show route all\`).`
    return unnamedBgpNexthops(facts)
      ? `BIRD's paths for ${facts.prefix} do not name their BGP next hop (a \`show route\` without \`all\`): ` +
          'nothing can be planned until `birdc show route all` is collected.'
      : `BIRD holds no BGP path for ${facts.prefix}: nothing can be planned until one is back.`
  }
  // the next hops the plan uses (reachable, not this node's), or BIRD's when the kernel reaches none of them, in the
  // plan's (address) order
  const wanted = wantedGateways(facts)
  const hops = wanted.length > 0 ? wanted : facts.bgpNextHops
  return `Program ${facts.prefix} ${tunnelNexthops(hops, dev)} (routedoctor fix), ${durableFix(ctx)}`
}

/**
 * Are BIRD's paths BGP paths whose next hop the input does not show? A plain `show route` (no `all`) prints a BGP
 * path's peer (`from`) and none of its attributes.
 */
export function unnamedBgpNexthops(facts: PrefixFacts): boolean {
  return facts.bgpNextHops.length === 0 && facts.bird.some((r) => r.from !== undefined && r.attributes.length === 0)
}

/** The durable fix after routedoctor's route, as far as the node's BIRD allows one (DESIGN §1, §5). */
function durableFix(ctx: SnapshotIndex): string {
  const status = ctx.snapshot.bird.status
  if (status === undefined || hasOnlinkAttribute(status.version, status.calicoFork))
    return 'and durably the BIRD kernel filter (routedoctor fix --bird-config).'
  const which = status.calicoFork ? `Calico's BIRD (${status.version})` : `BIRD ${status.version}`
  return `but no kernel filter of ${which} can do it durably (it has no onlink): ` +
    `${status.calicoFork ? '' : 'upgrade BIRD to 2.0.12+ or 3.2+, or '}let Felix program the routes (programClusterRoutes).`
}

/**
 * A route to add by hand until BIRD carries it: in routedoctor's overlay table, never in `main`, where BIRD's kernel
 * protocol would learn it and Calico's export filter advertise it (DESIGN §1 failure 4, §5); with the pool's rule
 * when the snapshot's `ip rule` lacks it.
 */
export function overlayRouteByHand(ctx: SnapshotIndex, prefix: string, gateway: string): string {
  const table = ctx.overlayTable
  const route = `ip route replace ${prefix} via ${gateway} dev ${ctx.snapshot.tunnelDev} onlink table ${table} ` +
    `proto ${ctx.fixProtocol}`
  const pool = ctx.poolOf(prefix)?.cidr
  const ruled = ctx.snapshot.rules.some((r) => r.action === 'lookup' && r.table === String(table) && r.to === pool)
  const rule = pool === undefined || ruled ? '' : `; ip rule add priority ${DEFAULT_RULE_PRIORITY} to ${pool} lookup ${table}`
  return `in routedoctor's overlay table (BIRD would learn a route in main and advertise it): ${route}${rule}`
}
