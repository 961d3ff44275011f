// rtnetlink notifications: what changed in the kernel's routes, links, addresses and rules, read from the
// multicast groups a process joins (no polling). Each notification is decoded only as far as `watch` needs
// to know what it touches: the route's prefix and table, the link's name, the address, the rule's table.
import {endianness} from 'node:os'

import type {Family} from '../model/types.js'
import {parseRouteMessage, routeKeyText, routeMessageKey} from './codec.js'
import {openMulticastSocket, openRouteClient} from './client.js'

// RTNLGRP_* (linux/rtnetlink.h)
const RTNLGRP_LINK = 1
const RTNLGRP_IPV4_IFADDR = 5
const RTNLGRP_IPV4_ROUTE = 7
const RTNLGRP_IPV4_RULE = 8
const RTNLGRP_IPV6_IFADDR = 9
const RTNLGRP_IPV6_ROUTE = 11
const RTNLGRP_IPV6_RULE = 19
export const WATCH_GROUPS = [
  RTNLGRP_LINK,
  RTNLGRP_IPV4_IFADDR,
  RTNLGRP_IPV4_ROUTE,
  RTNLGRP_IPV4_RULE,
  RTNLGRP_IPV6_IFADDR,
  RTNLGRP_IPV6_ROUTE,
  RTNLGRP_IPV6_RULE,
]

const RTM_NEWLINK = 16
const RTM_DELLINK = 17
const RTM_NEWADDR = 20
const RTM_DELADDR = 21
const RTM_NEWROUTE = 24
const RTM_DELROUTE = 25
const RTM_NEWRULE = 32
const RTM_DELRULE = 33
const RTM_F_CLONED = 0x200 // a route cache entry (IPv6 exceptions), not a route anyone wrote
const IFLA_IFNAME = 3
const IFLA_MTU = 4
const IFA_ADDRESS = 1
const IFA_LOCAL = 2
const FRA_TABLE = 15

const LE = endianness() === 'LE'
const rd16 = (b: Buffer, o: number): number => (LE ? b.readUInt16LE(o) : b.readUInt16BE(o))
const rd32 = (b: Buffer, o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o))

export type KernelEvent =
  // message: the notification's payload (a view of the datagram: copied by whoever keeps it)
  | {
      kind: 'route'
      op: 'new' | 'del'
      family: Family
      dst: string
      table: number
      metric: number
      protocol: number
      message?: Buffer
    }
  // flags: the ifinfomsg's (IFF_UP, IFF_LOWER_UP, ...)
  | {kind: 'link'; op: 'new' | 'del'; ifindex: number; name?: string; flags?: number; mtu?: number}
  | {kind: 'address'; op: 'new' | 'del'; ifindex: number; address?: string}
  | {kind: 'rule'; op: 'new' | 'del'; table: number}

/** Every attribute of a payload from `from`: type → [start, end). */
function attrs(p: Buffer, from: number): Map<number, [number, number]> {
  const out = new Map<number, [number, number]>()
  let o = from
  while (o + 4 <= p.length) {
    const len = rd16(p, o)
    if (len < 4 || o + len > p.length) break
    out.set(rd16(p, o + 2) & 0x3fff, [o + 4, o + len])
    o += (len + 3) & ~3
  }
  return out
}

function addressText(b: Buffer): string | undefined {
  if (b.length === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`
  if (b.length === 16) {
    const parts: string[] = []
    for (let i = 0; i < 16; i += 2) parts.push(b.readUInt16BE(i).toString(16))
    return parts.join(':')
  }
  return undefined
}

/** One notification (type, payload) as a KernelEvent; undefined for what `watch` ignores or cannot read. */
export function decodeKernelEvent(type: number, p: Buffer): KernelEvent | undefined {
  try {
    switch (type) {
      case RTM_NEWROUTE:
      case RTM_DELROUTE: {
        if (p.length < 12 || rd32(p, 8) & RTM_F_CLONED) return undefined
        const spec = parseRouteMessage(p)
        return {
          kind: 'route',
          op: type === RTM_NEWROUTE ? 'new' : 'del',
          family: spec.family,
          dst: spec.dst,
          table: spec.tableId,
          metric: spec.metric,
          protocol: spec.protocol,
          message: p,
        }
      }
      case RTM_NEWLINK:
      case RTM_DELLINK: {
        if (p.length < 16) return undefined
        const a = attrs(p, 16)
        const name = a.get(IFLA_IFNAME)
        const mtu = a.get(IFLA_MTU)
        return {kind: 'link', op: type === RTM_NEWLINK ? 'new' : 'del', ifindex: rd32(p, 4), flags: rd32(p, 8),
          ...(name ? {name: p.toString('utf8', name[0], name[1]).replace(/\0+$/, '')} : {}),
          ...(mtu && mtu[1] - mtu[0] === 4 ? {mtu: rd32(p, mtu[0])} : {})}
      }
      case RTM_NEWADDR:
      case RTM_DELADDR: {
        if (p.length < 8) return undefined
        const a = attrs(p, 8)
        const at = a.get(IFA_LOCAL) ?? a.get(IFA_ADDRESS)
        const address = at ? addressText(p.subarray(at[0], at[1])) : undefined
        return {
          kind: 'address',
          op: type === RTM_NEWADDR ? 'new' : 'del',
          ifindex: rd32(p, 4),
          ...(address ? {address: `${address}/${p[1]}`} : {}),
        }
      }
      case RTM_NEWRULE:
      case RTM_DELRULE: {
        if (p.length < 12) return undefined
        const t = attrs(p, 12).get(FRA_TABLE)
        return {kind: 'rule', op: type === RTM_NEWRULE ? 'new' : 'del', table: t ? rd32(p, t[0]) : p[4]}
      }
      default:
        return undefined
    }
  } catch {
    return undefined // one odd message never stops the stream
  }
}

/** Every message of a notification datagram, decoded. */
export function decodeKernelEvents(datagram: Buffer): KernelEvent[] {
  const out: KernelEvent[] = []
  let o = 0
  while (o + 16 <= datagram.length) {
    const len = rd32(datagram, o)
    if (len < 16 || o + len > datagram.length) break
    const e = decodeKernelEvent(rd16(datagram, o + 4), datagram.subarray(o + 16, o + len))
    if (e) out.push(e)
    o += (len + 3) & ~3
  }
  return out
}

export interface KernelEventStream {
  close(): void
}

/**
 * Subscribes to the kernel's route, link, address and rule notifications (IPv4 and IPv6) of this network
 * namespace. `onLost`: notifications were dropped (the socket overflowed), so whatever was derived from them
 * must be read again.
 */
export async function watchKernel(
  onEvents: (events: KernelEvent[]) => void,
  onLost: (error: Error) => void,
): Promise<KernelEventStream> {
  return openMulticastSocket(
    WATCH_GROUPS,
    (datagram) => {
      const events = decodeKernelEvents(datagram)
      if (events.length > 0) onEvents(events)
    },
    onLost,
  )
}

/**
 * The keys (codec.routeKeyText) of the kernel's routes of one protocol number, kept from one dump and then the
 * notifications: `watch`'s count of routedoctor's own routes, without reading the table again.
 */
export class ProtocolRoutes {
  keys = new Set<string>()
  private next: Set<string> | undefined // filled by a dump under way
  private replay: KernelEvent[] = []

  constructor(readonly protocol: number) {}

  /** Reads the kernel's routes once (each message's protocol byte first: others are not decoded). */
  async load(): Promise<void> {
    const client = await openRouteClient()
    this.begin()
    try {
      await client.scanRoutes!('all', (buf, start, end) => this.visit(buf, start, end))
      this.commit()
    } finally {
      this.abort()
      client.close()
    }
  }

  /** A dump starts: visit() takes its messages, commit() puts them in place of the keys held. */
  begin(): void {
    this.next = new Set()
    this.replay = []
  }

  /** One message of a route dump (any family). */
  visit(buf: Buffer, start: number, end: number): void {
    if (this.next === undefined || end - start < 12 || buf[start + 5] !== this.protocol) return
    const key = routeMessageKey(buf, start, end)
    if (key !== undefined) this.next.add(key)
  }

  /** The dump is read: its keys, with the notifications that came meanwhile applied on top. */
  commit(): void {
    if (this.next === undefined) return
    this.keys = this.next
    this.next = undefined
    this.apply(this.replay)
    this.replay = []
  }

  /** The dump failed: the keys held stay. */
  abort(): void {
    this.next = undefined
    this.replay = []
  }

  apply(events: readonly KernelEvent[]): void {
    for (const e of events) {
      if (e.kind !== 'route' || e.protocol !== this.protocol) continue
      if (this.next !== undefined) this.replay.push({...e, message: undefined})
      const key = routeKeyText(e.family, e.table, e.dst, e.metric)
      if (e.op === 'new') this.keys.add(key)
      else this.keys.delete(key)
    }
  }
}
