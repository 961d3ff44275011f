// The kernel's IPv4 routes that one explanation reads, from one rtnetlink dump read in place: the routes at
// the wanted prefixes, every route whose prefix holds a wanted address (what a longest-prefix lookup of it
// can find, in every table), and the local table (the node's own addresses). Only those are decoded. They
// are given in iproute2's `ip -j -d route` form, so that the parsers read them as they read a full dump.
import {endianness} from 'node:os'

import {ipv4Network, ipv4Value} from '../model/prefix.js'
import type {KernelRoute} from '../model/types.js'
import {type RouteClient, decodeDumpedRoute} from './client.js'
import {AF_INET, RTA_DST} from './codec.js'

export interface RoutesWanted {
  /** IPv4 prefixes whose routes are wanted, in every table. */
  prefixes: string[]
  /** IPv4 addresses whose covering routes are wanted, in every table. */
  addresses: string[]
}

const RT_TABLE_LOCAL = 255
// netlink's integers are in the host's byte order; addresses in the network's
const LE = endianness() === 'LE'

/** The routes of `wanted` in dump order (the kernel's: by table, then prefix), as KernelRoutes. */
export async function kernelRoutesFor(client: RouteClient, wanted: RoutesWanted): Promise<KernelRoute[]> {
  if (client.scanRoutes === undefined) throw new Error('kernelRoutesFor: the route client cannot read a dump in place')
  const links = await client.links()
  // a few prefixes and addresses: plain lists of numbers, compared with the two numbers read off each message
  const nets: number[] = []
  const lens: number[] = []
  for (const p of wanted.prefixes) {
    const slash = p.indexOf('/')
    const v = ipv4Value(p, 0, slash)
    if (v >= 0) {
      nets.push(v)
      lens.push(Number(p.slice(slash + 1)))
    }
  }
  const addresses = wanted.addresses.map((a) => ipv4Value(a)).filter((v) => v >= 0)
  const routes: KernelRoute[] = []
  await client.scanRoutes('inet', (buf, start, end, index) => {
    if (end - start < 12 || buf[start] !== AF_INET) return
    const len = buf[start + 1]
    // the header's table byte is the id below 256 (RT_TABLE_COMPAT above): enough to tell the local table; of the
    // attributes only the destination is read (absent when the length is 0)
    const table = buf[start + 4]
    let dst = 0
    for (let o = start + 12; len > 0 && o + 4 <= end;) {
      const alen = LE ? buf[o] | (buf[o + 1] << 8) : (buf[o] << 8) | buf[o + 1]
      const type = (LE ? buf[o + 2] | (buf[o + 3] << 8) : (buf[o + 2] << 8) | buf[o + 3]) & 0x3fff
      if (alen < 4 || o + alen > end) break // malformed: the decoder below says so, if it is wanted
      if (type === RTA_DST && alen === 8) {
        dst = ((buf[o + 4] << 24) | (buf[o + 5] << 16) | (buf[o + 6] << 8) | buf[o + 7]) >>> 0
        break
      }
      o += (alen + 3) & ~3
    }
    if (table !== RT_TABLE_LOCAL && !wantedAt(dst, len)) return
    const route = decodeDumpedRoute(buf, start, end, links, index)?.route
    if (route !== undefined) routes.push(route)
  })
  return routes

  function wantedAt(dst: number, len: number): boolean {
    for (let i = 0; i < nets.length; i++) if (lens[i] === len && nets[i] === dst) return true
    for (const a of addresses) if (ipv4Network(a, len) === dst) return true
    return false
  }
}

/** Routes as `ip -j -d route show` prints them (one line): what parseIpRouteJson reads back into the same routes. */
export function ipRouteJsonText(routes: KernelRoute[]): string {
  return `${JSON.stringify(routes.map(ipRouteJsonObject))}\n`
}

function ipRouteJsonObject(r: KernelRoute): Record<string, unknown> {
  const out: Record<string, unknown> = {type: r.type, dst: r.dst}
  const single = r.nexthops.length === 1 ? r.nexthops[0] : undefined
  if (single !== undefined) {
    if (single.gateway !== undefined) Object.assign(out, gatewayJson(r, single.gateway))
    if (single.dev !== undefined) out.dev = single.dev
  }
  out.table = r.table
  out.protocol = r.protocol
  out.scope = r.scope
  if (r.metric !== 0) out.metric = r.metric
  if (r.prefsrc !== undefined) out.prefsrc = r.prefsrc
  if (r.tos !== undefined) out.tos = r.tos
  out.flags = single !== undefined ? [...new Set([...r.flags, ...single.flags])] : r.flags
  if (r.nexthops.length > 1) {
    out.nexthops = r.nexthops.map((n) => ({
      ...(n.gateway !== undefined ? gatewayJson(r, n.gateway) : {}),
      ...(n.dev !== undefined ? {dev: n.dev} : {}),
      weight: n.weight,
      flags: n.flags,
    }))
  }
  return out
}

/** iproute2 prints a gateway of the route's own family as `gateway`, another family's as `via`. */
function gatewayJson(r: KernelRoute, g: {family: string; address: string}): Record<string, unknown> {
  return g.family === r.family ? {gateway: g.address} : {via: {family: g.family, host: g.address}}
}
