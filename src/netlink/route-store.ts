// The kernel's IPv4 routes, kept current without reading the table again: one dump, then every route notification
// applied. Each route is held as a copy of its netlink message, decoded only when a diagnosis reads it, so a full
// table costs its messages' bytes rather than a million route objects. Routes are found by their network's key
// (model/prefix-key.ts networkKey): the routes at a prefix, and the routes a longest-prefix lookup of an address can
// find. The kernel flushes or marks a device's routes without a notification when the device goes down or away: a
// change of a device that carries routes is answered by reading the table again (apply's LinkChange, load's changed
// keys).
import {endianness} from 'node:os'

import {networkKey} from '../model/prefix-key.js'
import {ipv4Network, ipv4Value} from '../model/prefix.js'
import type {KernelRoute} from '../model/types.js'
import {decodeDumpedRoute, openRouteClient} from './client.js'
import {AF_INET, RTA_DST, RTA_MULTIPATH, RTA_OIF, RTA_TABLE} from './codec.js'
import {decodeKernelEvent, type KernelEvent} from './events.js'
import type {RoutesWanted} from './routes-for.js'

const RTA_PRIORITY = 6
const RT_TABLE_LOCAL = 255
const RTM_NEWLINK = 16
// the link flags a route's life depends on: IFF_UP (routes flushed when cleared), IFF_LOWER_UP (next hops linkdown)
const IFF_UP = 0x1
const IFF_LOWER_UP = 0x10000
const LE = endianness() === 'LE'
const rd16 = (b: Buffer, o: number): number => (LE ? b.readUInt16LE(o) : b.readUInt16BE(o))
const rd32 = (b: Buffer, o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o))

/**
 * What identifies an IPv4 route message: its network's key, and the table, metric and TOS that tell routes there apart.
 */
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

/** The devices (ifindex) of a route message's next hops: RTA_OIF, and each RTA_MULTIPATH rtnexthop's. */
export function routeDevices(m: Buffer): number[] {
  const out: number[] = []
  for (let o = 12; o + 4 <= m.length;) {
    const alen = rd16(m, o)
    if (alen < 4 || o + alen > m.length) break
    const type = rd16(m, o + 2) & 0x3fff
    if (type === RTA_OIF && alen === 8) out.push(rd32(m, o + 4))
    else if (type === RTA_MULTIPATH) {
      // rtnexthop: len u16, flags u8, hops u8, ifindex s32, then its own attributes
      for (let n = o + 4; n + 8 <= o + alen;) {
        const nlen = rd16(m, n)
        if (nlen < 8) break
        out.push(rd32(m, n + 4))
        n += (nlen + 3) & ~3
      }
    }
    o += (alen + 3) & ~3
  }
  return out
}

/** A device as far as its routes care: its name, whether it is up and has carrier (IFF_UP, IFF_LOWER_UP), its MTU. */
interface LinkState {
  name?: string
  flags: number
  mtu?: number
}

const linkState = (e: {name?: string; flags?: number; mtu?: number}): LinkState => ({
  ...(e.name !== undefined ? {name: e.name} : {}),
  flags: (e.flags ?? 0) & (IFF_UP | IFF_LOWER_UP),
  ...(e.mtu !== undefined ? {mtu: e.mtu} : {}),
})

/** A device whose state changed, or that went away. */
export interface LinkChange {
  ifindex: number
  names: string[] // before and after: two on a rename
  routes: number // the held routes whose next hops use it
  // the kernel flushed or marked its routes without a notification: gone, or up or carrier changed
  routesChanged: boolean
}

type Held = Buffer | Buffer[]

const messagesOf = (held: Held | undefined): Buffer[] => (held === undefined ? [] : Array.isArray(held) ? held : [held])

export class KernelRouteStore {
  // the messages at each network key: one Buffer where there is one route (most), else a list
  private at = new Map<number, Held>()
  private local = new Set<number>() // keys holding a route of the local table
  private onDevice = new Map<number, number>() // ifindex → how many held routes' next hops use it
  /** ifindex → device name, for the next hops of a decoded route; kept from link notifications. */
  readonly links = new Map<number, string>()
  private readonly linkStates = new Map<number, LinkState>()
  private replay: KernelEvent[] | undefined // the notifications that arrive while the table is read
  loaded = false

  /**
   * Reads the kernel's routes (every table) and links, replacing whatever was held; notifications applied meanwhile
   * are applied again on top. `visit`: every route message of the dump, of every family (one dump serves more than
   * the store). Resolves to the keys whose routes differ from those held before (none on the first load).
   */
  async load(visit?: (buf: Buffer, start: number, end: number) => void): Promise<Set<number>> {
    const client = await openRouteClient()
    const before = {at: this.at, loaded: this.loaded}
    const replay: KernelEvent[] = []
    this.replay = replay
    try {
      const links = new Map<number, string>()
      const states = new Map<number, LinkState>()
      if (client.scanLinks) {
        await client.scanLinks((buf, start, end) => {
          const e = decodeKernelEvent(RTM_NEWLINK, buf.subarray(start, end))
          if (e?.kind !== 'link') return
          if (e.name !== undefined) links.set(e.ifindex, e.name)
          states.set(e.ifindex, linkState(e))
        })
      } else for (const [index, name] of await client.links()) links.set(index, name)
      const fresh = new KernelRouteStore()
      await client.scanRoutes!(visit ? 'all' : 'inet', (buf, start, end) => {
        visit?.(buf, start, end)
        if (end - start >= 12 && buf[start] === AF_INET) fresh.put(Buffer.from(buf.subarray(start, end)))
      })
      this.at = fresh.at
      this.local = fresh.local
      this.onDevice = fresh.onDevice
      this.links.clear()
      for (const [i, n] of links) this.links.set(i, n)
      this.linkStates.clear()
      for (const [i, st] of states) this.linkStates.set(i, st)
      this.replay = undefined
      this.applyAgain(replay)
      this.loaded = true
    } finally {
      this.replay = undefined
      client.close()
    }
    return before.loaded ? changedKeys(before.at, this.at) : new Set()
  }

  get size(): number {
    let n = 0
    for (const v of this.at.values()) n += Array.isArray(v) ? v.length : 1
    return n
  }

  /**
   * Applies notifications: routes added, replaced or deleted, links named or gone. Returns the devices whose
   * state (name, up, carrier, MTU) changed, or that went away.
   */
  apply(events: readonly KernelEvent[]): LinkChange[] {
    const changed: LinkChange[] = []
    for (const e of events) {
      if (e.kind !== 'link') continue
      const was = this.linkStates.get(e.ifindex)
      const wasName = this.links.get(e.ifindex)
      const names = [...new Set([wasName, e.name].filter((n) => n !== undefined))]
      const routes = this.onDevice.get(e.ifindex) ?? 0
      if (e.op === 'del') {
        this.links.delete(e.ifindex)
        this.linkStates.delete(e.ifindex)
        changed.push({ifindex: e.ifindex, names, routes, routesChanged: true})
        continue
      }
      if (e.name !== undefined) this.links.set(e.ifindex, e.name)
      const now = linkState({name: e.name ?? wasName, flags: e.flags, mtu: e.mtu})
      this.linkStates.set(e.ifindex, now)
      if (was !== undefined && was.name === now.name && was.flags === now.flags && was.mtu === now.mtu) continue
      changed.push({ifindex: e.ifindex, names, routes, routesChanged: was === undefined || was.flags !== now.flags})
    }
    // a notification's payload is a view of its datagram: what is kept is a copy
    if (this.replay)
      for (const e of events)
        this.replay.push(e.kind === 'route' && e.message ? {...e, message: Buffer.from(e.message)} : e)
    this.applyRoutes(events)
    return changed
  }

  /**
   * The notifications that came while the table was read, applied again on what was read (their changes were reported).
   */
  private applyAgain(events: readonly KernelEvent[]): void {
    for (const e of events) {
      if (e.kind !== 'link') continue
      if (e.op === 'del') {
        this.links.delete(e.ifindex)
        this.linkStates.delete(e.ifindex)
        continue
      }
      if (e.name !== undefined) this.links.set(e.ifindex, e.name)
      this.linkStates.set(e.ifindex, linkState({name: this.links.get(e.ifindex), flags: e.flags, mtu: e.mtu}))
    }
    this.applyRoutes(events)
  }

  private applyRoutes(events: readonly KernelEvent[]): void {
    for (const e of events) {
      if (e.kind !== 'route' || e.family !== 'inet' || e.message === undefined) continue
      const m = Buffer.from(e.message)
      if (e.op === 'new') this.put(m)
      else this.remove(m)
    }
  }

  private count(m: Buffer, by: number): void {
    for (const i of new Set(routeDevices(m))) {
      const n = (this.onDevice.get(i) ?? 0) + by
      if (n > 0) this.onDevice.set(i, n)
      else this.onDevice.delete(i)
    }
  }

  private put(m: Buffer): void {
    const id = routeIdentity(m)
    if (id === undefined) return
    if (id.table === RT_TABLE_LOCAL) this.local.add(id.key)
    this.count(m, 1)
    const held = this.at.get(id.key)
    if (held === undefined) {
      this.at.set(id.key, m)
      return
    }
    const list = Array.isArray(held) ? held : [held]
    const i = list.findIndex((h) => same(routeIdentity(h)!, id))
    if (i >= 0) {
      this.count(list[i], -1)
      list[i] = m
    } else list.push(m)
    this.at.set(id.key, list.length === 1 ? list[0] : list)
  }

  private remove(m: Buffer): void {
    const id = routeIdentity(m)
    if (id === undefined) return
    const held = this.at.get(id.key)
    if (held === undefined) return
    const list: Buffer[] = []
    for (const h of messagesOf(held)) {
      if (same(routeIdentity(h)!, id)) this.count(h, -1)
      else list.push(h)
    }
    if (list.length === 0) this.at.delete(id.key)
    else this.at.set(id.key, list.length === 1 ? list[0] : list)
    if (id.table === RT_TABLE_LOCAL && !list.some((h) => routeIdentity(h)!.table === RT_TABLE_LOCAL))
      this.local.delete(id.key)
  }

  private decoded(key: number, out: KernelRoute[]): void {
    const held = this.at.get(key)
    if (held === undefined) return
    for (const m of Array.isArray(held) ? held : [held]) {
      const route = decodeDumpedRoute(m, 0, m.length, this.links, out.length)?.route
      if (route !== undefined) out.push(route)
    }
  }

  /** The keys of the held routes whose next hops use one of these devices. */
  keysOnDevices(ifindexes: ReadonlySet<number>): Set<number> {
    const out = new Set<number>()
    if (ifindexes.size === 0) return out
    for (const [key, held] of this.at) {
      for (const m of messagesOf(held)) if (routeDevices(m).some((i) => ifindexes.has(i))) out.add(key)
    }
    return out
  }

  /** The devices (ifindex) of the routes held at these keys. */
  devicesAt(keys: Iterable<number>): Set<number> {
    const out = new Set<number>()
    for (const key of keys) for (const m of messagesOf(this.at.get(key))) for (const i of routeDevices(m)) out.add(i)
    return out
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

/** The keys whose messages differ between two tables (added, changed or gone). */
function changedKeys(a: Map<number, Held>, b: Map<number, Held>): Set<number> {
  const out = new Set<number>()
  const differ = (x: Held | undefined, y: Held | undefined): boolean => {
    const xs = messagesOf(x)
    const ys = messagesOf(y)
    if (xs.length !== ys.length) return true
    // the same routes in any order: each message of one found in the other
    return xs.some((m) => !ys.some((n) => m.equals(n)))
  }
  for (const [key, held] of a) if (differ(held, b.get(key))) out.add(key)
  for (const key of b.keys()) if (!a.has(key)) out.add(key)
  return out
}
