// The kernel's IPv4 routes, kept current without reading the table again: one dump, then every route notification
// applied. Each route is held as a copy of its netlink message, decoded only when a diagnosis reads it, so a full
// table costs its messages' bytes rather than a million route objects. Routes are found by their network's key
// (model/prefix-key.ts networkKey): the routes at a prefix, and the routes a longest-prefix lookup of an address can find.
import {endianness} from 'node:os'

import {networkKey} from '../model/prefix-key.js'
import {ipv4Network, ipv4Value} from '../model/prefix.js'
import type {KernelRoute} from '../model/types.js'
import {decodeDumpedRoute, openRouteClient} from './client.js'
import {AF_INET, RTA_DST, RTA_TABLE} from './codec.js'
import type {KernelEvent} from './events.js'
import type {RoutesWanted} from './routes-for.js'

const RTA_PRIORITY = 6
const RT_TABLE_LOCAL = 255
const LE = endianness() === 'LE'
const rd16 = (b: Buffer, o: number): number => (LE ? b.readUInt16LE(o) : b.readUInt16BE(o))
const rd32 = (b: Buffer, o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o))

/** What identifies an IPv4 route message: its network's key, and the table, metric and TOS that tell routes there apart. */
interface Identity {
  key: number
  table: number
  metric: number
  tos: number
}

/** The identity of an RTM_NEWROUTE/RTM_DELROUTE payload; undefined for another family or a malformed message. */
export function routeIdentity(m: Buffer): Identity | undefined {
  if (m.length < 12 || m[0] !== AF_INET) return undefined
  const len = m[1]
  let table = m[4]
  let metric = 0
  let dst = 0
  for (let o = 12; o + 4 <= m.length;) {
    const alen = rd16(m, o)
    if (alen < 4 || o + alen > m.length) return undefined
    const type = rd16(m, o + 2) & 0x3fff
    if (type === RTA_DST && alen === 8) dst = m.readUInt32BE(o + 4)
    else if (type === RTA_TABLE && alen === 8) table = rd32(m, o + 4)
    else if (type === RTA_PRIORITY && alen === 8) metric = rd32(m, o + 4)
    o += (alen + 3) & ~3
  }
  return {key: networkKey(ipv4Network(dst, len), len), table, metric, tos: m[3]}
}

const same = (a: Identity, b: Identity): boolean => a.table === b.table && a.metric === b.metric && a.tos === b.tos

export class KernelRouteStore {
  // the messages at each network key: one Buffer where there is one route (most), else a list
  private readonly at = new Map<number, Buffer | Buffer[]>()
  private readonly local = new Set<number>() // keys holding a route of the local table
  /** ifindex → device name, for the next hops of a decoded route; kept from link notifications. */
  readonly links = new Map<number, string>()
  loaded = false

  /** Reads the kernel's IPv4 routes (every table) and its links, replacing whatever was held. */
  async load(): Promise<void> {
    const client = await openRouteClient()
    try {
      this.at.clear()
      this.local.clear()
      this.links.clear()
      for (const [index, name] of await client.links()) this.links.set(index, name)
      await client.scanRoutes!('inet', (buf, start, end) => {
        if (end - start >= 12 && buf[start] === AF_INET) this.put(Buffer.from(buf.subarray(start, end)))
      })
      this.loaded = true
    } finally {
      client.close()
    }
  }

  get size(): number {
    let n = 0
    for (const v of this.at.values()) n += Array.isArray(v) ? v.length : 1
    return n
  }

  /** Applies notifications: routes added, replaced or deleted, links named or gone. */
  apply(events: readonly KernelEvent[]): void {
    for (const e of events) {
      if (e.kind === 'link') {
        if (e.op === 'del') this.links.delete(e.ifindex)
        else if (e.name !== undefined) this.links.set(e.ifindex, e.name)
      } else if (e.kind === 'route' && e.family === 'inet' && e.message !== undefined) {
        if (e.op === 'new') this.put(Buffer.from(e.message))
        else this.remove(e.message)
      }
    }
  }

  private put(m: Buffer): void {
    const id = routeIdentity(m)
    if (id === undefined) return
    if (id.table === RT_TABLE_LOCAL) this.local.add(id.key)
    const held = this.at.get(id.key)
    if (held === undefined) {
      this.at.set(id.key, m)
      return
    }
    const list = Array.isArray(held) ? held : [held]
    const i = list.findIndex((h) => same(routeIdentity(h)!, id))
    if (i >= 0) list[i] = m
    else list.push(m)
    this.at.set(id.key, list.length === 1 ? list[0] : list)
  }

  private remove(m: Buffer): void {
    const id = routeIdentity(m)
    if (id === undefined) return
    const held = this.at.get(id.key)
    if (held === undefined) return
    const list = (Array.isArray(held) ? held : [held]).filter((h) => !same(routeIdentity(h)!, id))
    if (list.length === 0) this.at.delete(id.key)
    else this.at.set(id.key, list.length === 1 ? list[0] : list)
    if (id.table === RT_TABLE_LOCAL && !list.some((h) => routeIdentity(h)!.table === RT_TABLE_LOCAL)) this.local.delete(id.key)
  }

  private decoded(key: number, out: KernelRoute[]): void {
    const held = this.at.get(key)
    if (held === undefined) return
    for (const m of Array.isArray(held) ? held : [held]) {
      const route = decodeDumpedRoute(m, 0, m.length, this.links, out.length)?.route
      if (route !== undefined) out.push(route)
    }
  }

  /**
   * The routes one diagnosis reads, each once, as routes-for.ts collects them from a dump: those at the wanted
   * prefixes and those holding the wanted addresses, in every table, and the local table's.
   */
  routesFor(wanted: RoutesWanted): KernelRoute[] {
    const keys = new Set<number>(this.local)
    for (const p of wanted.prefixes) {
      const slash = p.indexOf('/')
      const v = ipv4Value(p, 0, slash < 0 ? p.length : slash)
      const len = slash < 0 ? 32 : Number(p.slice(slash + 1))
      if (v >= 0) keys.add(networkKey(ipv4Network(v, len), len))
    }
    for (const a of wanted.addresses) {
      const v = ipv4Value(a)
      if (v >= 0) for (let len = 0; len <= 32; len++) keys.add(networkKey(ipv4Network(v, len), len))
    }
    const out: KernelRoute[] = []
    for (const key of keys) this.decoded(key, out)
    return out
  }
}
