// iproute2- and BIRD-style one-line renderings of model objects, for evidence and plain text.
import {familyOf} from './prefix.js'
import type {BirdRoute, KernelRoute, Link, Nexthop, PlannedRoute} from './types.js'

// Built by concatenation (no arrays, spreads or sets): a full table's report renders a route for most
// findings' evidence.

function shortDst(dst: string): string {
  if (dst === '0.0.0.0/0' || dst === '::/0') return 'default'
  // ip prints a host route as the bare address
  if (dst.endsWith('/32') && !dst.includes(':')) return dst.slice(0, -3)
  if (dst.endsWith('/128') && dst.includes(':')) return dst.slice(0, -4)
  return dst
}

const NO_FLAGS: readonly string[] = []

function formatNexthop(n: Nexthop, multipath: boolean, flags: readonly string[]): string {
  let s = ''
  if (n.gateway)
    s =
      n.gateway.family === 'inet6' && !n.gateway.address.includes('.')
        ? `via inet6 ${n.gateway.address}`
        : `via ${n.gateway.address}`
  if (n.dev) s += s === '' ? `dev ${n.dev}` : ` dev ${n.dev}`
  if (multipath) s += s === '' ? `weight ${n.weight}` : ` weight ${n.weight}`
  for (const f of flags) s += s === '' ? f : ` ${f}`
  return s
}

/** `ip route` style: `192.168.110.128/26 via 172.31.20.5 dev tunl0 proto bird metric 32 onlink`. */
export function formatKernelRoute(r: KernelRoute): string {
  const dst = r.type !== 'unicast' ? `${r.type} ${shortDst(r.dst)}` : shortDst(r.dst)
  if (!Object.isFrozen(r.nexthops)) return dst + afterDst(r)
  // a frozen next-hop list is shared by the kernel parser among routes (most of a full table's): what follows
  // the dst is made once per list and set of the fields it prints
  let seen = afterDstOf.get(r.nexthops)
  if (seen === undefined) afterDstOf.set(r.nexthops, (seen = []))
  for (const m of seen) {
    if (
      m.table === r.table &&
      m.protocol === r.protocol &&
      m.scope === r.scope &&
      m.prefsrc === r.prefsrc &&
      m.metric === r.metric &&
      sameFlags(m.flags, r.flags)
    )
      return dst + m.text
  }
  const text = afterDst(r)
  if (seen.length < 8)
    seen.push({
      table: r.table,
      protocol: r.protocol,
      scope: r.scope,
      prefsrc: r.prefsrc,
      metric: r.metric,
      flags: r.flags.slice(),
      text,
    })
  return dst + text
}

interface AfterDst {
  table: string
  protocol: string
  scope: string
  prefsrc: string | undefined
  metric: number
  flags: string[]
  text: string
}

const afterDstOf = new WeakMap<Nexthop[], AfterDst[]>()

function sameFlags(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** formatKernelRoute after the dst. */
function afterDst(r: KernelRoute): string {
  let s = ''
  const single = r.nexthops.length === 1
  if (single) {
    const nh = formatNexthop(r.nexthops[0], false, NO_FLAGS)
    if (nh !== '') s += ` ${nh}`
  }
  if (r.table !== 'main') s += ` table ${r.table}`
  s += ` proto ${r.protocol}`
  if (r.scope !== 'global') s += ` scope ${r.scope}`
  if (r.prefsrc) s += ` src ${r.prefsrc}`
  if (r.metric) s += ` metric ${r.metric}`
  // the route's flags, then a single next hop's (each once)
  for (let i = 0; i < r.flags.length; i++) if (r.flags.indexOf(r.flags[i]) === i) s += ` ${r.flags[i]}`
  if (single) {
    const own = r.nexthops[0].flags
    for (let i = 0; i < own.length; i++) if (!r.flags.includes(own[i]) && own.indexOf(own[i]) === i) s += ` ${own[i]}`
  } else {
    for (const n of r.nexthops) s += `\n\tnexthop ${formatNexthop(n, true, n.flags)}`
  }
  return s
}

/** formatKernelRoute on one line: a multipath route's `nexthop` lines joined as `ip route` takes them. */
export function formatKernelRouteLine(r: KernelRoute): string {
  return formatKernelRoute(r).replaceAll('\n\t', ' ')
}

export function formatNexthops(r: KernelRoute): string {
  if (r.type !== 'unicast') return r.type
  if (!Object.isFrozen(r.nexthops)) return nexthopsText(r.nexthops)
  let s = nexthopsTextOf.get(r.nexthops) // a shared list (see formatKernelRoute): its text made once
  if (s === undefined) nexthopsTextOf.set(r.nexthops, (s = nexthopsText(r.nexthops)))
  return s
}

const nexthopsTextOf = new WeakMap<Nexthop[], string>()

function nexthopsText(nexthops: readonly Nexthop[]): string {
  let s = ''
  for (const n of nexthops) {
    const nh = formatNexthop(n, false, n.flags.includes('onlink') ? ONLINK : NO_FLAGS)
    s += s === '' ? nh : `, ${nh}`
  }
  return s
}

const ONLINK: readonly string[] = ['onlink']

/** BIRD 2 style summary of a path: `unicast [Mesh_172_31_20_5 from 172.31.20.5] * via 172.31.11.1 on eth0, ...`. */
export function formatBirdPath(r: BirdRoute): string {
  const nh = r.nexthops
    .map((n) => (n.gateway ? `via ${n.gateway}${n.iface ? ` on ${n.iface}` : ''}` : `dev ${n.iface}`))
    .join(', ')
  return `${r.dest} [${r.protocol}${r.from ? ` from ${r.from}` : ''}]${r.primary ? ' *' : ''}${nh ? ` ${nh}` : ''}${r.bgpNextHop ? ` (BGP.next_hop ${r.bgpNextHop})` : ''}`
}

/**
 * The `ip route replace` line a person could paste for a planned route (`via inet6` for an IPv6 gateway of an IPv4
 * route).
 */
/** A planned route, as the plan holds it (its table's name) or as the reports give it (its table's number). */
export type AnyPlannedRoute = Pick<PlannedRoute, 'dst' | 'metric' | 'protocol' | 'nexthops'> & {
  table: string | number
  tableId?: number
}

/** ` table T` of an `ip route` line, nothing for main (`ip route` defaults to it). */
export function tableClause(table: string | number): string {
  return table === 'main' || table === 254 ? '' : ` table ${table}`
}

export function ipRouteReplace(p: AnyPlannedRoute): string {
  const family = familyOf(p.dst)
  const via = (gw: string): string => (familyOf(gw) === family ? `via ${gw}` : `via ${familyOf(gw)} ${gw}`)
  const head = `ip${family === 'inet6' ? ' -6' : ''} route replace ${p.dst}${tableClause(p.table)} proto ${p.protocol} metric ${p.metric}`
  if (p.nexthops.length === 1) {
    const n = p.nexthops[0]
    return `${head} ${via(n.gateway)} dev ${n.dev}${n.onlink ? ' onlink' : ''}`
  }
  return `${head} ${p.nexthops.map((n) => `nexthop ${via(n.gateway)} dev ${n.dev} weight ${n.weight}${n.onlink ? ' onlink' : ''}`).join(' ')}`
}

/** The next hops of a tunnel route through `gateways`, as `ip route` takes them (`nexthop via …` when several). */
export function tunnelNexthops(gateways: readonly string[], dev: string): string {
  return gateways.length === 1
    ? `via ${gateways[0]} dev ${dev} onlink`
    : gateways.map((g) => `nexthop via ${g} dev ${dev} onlink`).join(' ')
}

/** `ip link` style: `tunl0 (tun) <POINTOPOINT,NOARP,UP,LOWER_UP> mtu 1480 state UP`. */
export function formatLink(l: Link): string {
  return `${l.ifname} (${l.kind ?? 'kind unknown'}) <${l.flags.join(',')}> mtu ${l.mtu} state ${l.operstate}`
}

/** `1 prefix`, `2 prefixes`: a count and the word that agrees with it (`many`: the plural, when not word + s). */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`
}
