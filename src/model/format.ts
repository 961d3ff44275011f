// iproute2- and BIRD-style one-line renderings of model objects, for evidence and plain text.
import {familyOf} from './prefix.js'
import type {BirdRoute, KernelRoute, Link, Nexthop, PlannedRoute} from './types.js'

function shortDst(dst: string): string {
  if (dst === '0.0.0.0/0' || dst === '::/0') return 'default'
  return dst.replace(/\/(32)$/, '').replace(/:.*\/128$/, (m) => m.slice(0, -4))
}

function formatNexthop(n: Nexthop, multipath: boolean): string {
  const parts: string[] = []
  if (n.gateway) parts.push(n.gateway.family === 'inet6' && !n.gateway.address.includes('.') ? `via inet6 ${n.gateway.address}` : `via ${n.gateway.address}`)
  if (n.dev) parts.push(`dev ${n.dev}`)
  if (multipath) parts.push(`weight ${n.weight}`)
  for (const f of n.flags) parts.push(f)
  return parts.join(' ')
}

/** `ip route` style: `192.168.110.128/26 via 172.31.20.5 dev tunl0 proto bird metric 32 onlink`. */
export function formatKernelRoute(r: KernelRoute): string {
  const head: string[] = []
  if (r.type !== 'unicast') head.push(r.type)
  head.push(shortDst(r.dst))
  const single = r.nexthops.length === 1
  if (single) head.push(formatNexthop({...r.nexthops[0], flags: []}, false))
  if (r.table !== 'main') head.push(`table ${r.table}`)
  head.push(`proto ${r.protocol}`)
  if (r.scope !== 'global') head.push(`scope ${r.scope}`)
  if (r.prefsrc) head.push(`src ${r.prefsrc}`)
  if (r.metric) head.push(`metric ${r.metric}`)
  const flags = new Set([...r.flags, ...(single ? r.nexthops[0].flags : [])])
  for (const f of flags) head.push(f)
  if (r.nexthops.length > 1) return [head.join(' '), ...r.nexthops.map((n) => `\tnexthop ${formatNexthop(n, true)}`)].join('\n')
  return head.join(' ')
}

export function formatNexthops(r: KernelRoute): string {
  if (r.type !== 'unicast') return r.type
  return r.nexthops.map((n) => formatNexthop({...n, flags: n.flags.filter((f) => f === 'onlink')}, false)).join(', ')
}

/** BIRD 2 style summary of a path: `unicast [Mesh_172_31_20_5 from 172.31.20.5] * via 172.31.11.1 on eth0, ...`. */
export function formatBirdPath(r: BirdRoute): string {
  const nh = r.nexthops.map((n) => (n.gateway ? `via ${n.gateway}${n.iface ? ` on ${n.iface}` : ''}` : `dev ${n.iface}`)).join(', ')
  return `${r.dest} [${r.protocol}${r.from ? ` from ${r.from}` : ''}]${r.primary ? ' *' : ''}${nh ? ` ${nh}` : ''}${r.bgpNextHop ? ` (BGP.next_hop ${r.bgpNextHop})` : ''}`
}

/** The `ip route replace` line a person could paste for a planned route (`via inet6` for an IPv6 gateway of an IPv4 route). */
export function ipRouteReplace(p: PlannedRoute): string {
  const family = familyOf(p.dst)
  const via = (gw: string): string => (familyOf(gw) === family ? `via ${gw}` : `via ${familyOf(gw)} ${gw}`)
  const head = `ip${family === 'inet6' ? ' -6' : ''} route replace ${p.dst}${p.table !== 'main' ? ` table ${p.table}` : ''} proto ${p.protocol} metric ${p.metric}`
  if (p.nexthops.length === 1) {
    const n = p.nexthops[0]
    return `${head} ${via(n.gateway)} dev ${n.dev}${n.onlink ? ' onlink' : ''}`
  }
  return `${head} ${p.nexthops.map((n) => `nexthop ${via(n.gateway)} dev ${n.dev} weight ${n.weight}${n.onlink ? ' onlink' : ''}`).join(' ')}`
}

/** `ip link` style: `tunl0 (tun) <POINTOPOINT,NOARP,UP,LOWER_UP> mtu 1480 state UP`. */
export function formatLink(l: Link): string {
  return `${l.ifname} (${l.kind ?? 'kind unknown'}) <${l.flags.join(',')}> mtu ${l.mtu} state ${l.operstate}`
}
