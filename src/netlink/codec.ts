// rtnetlink route messages, encoded and decoded here (pure, no I/O). The `netlink` package's own
// route codec cannot be used: it throws on a top-level RTA_VIA and cannot build RTA_MULTIPATH.
// Layouts follow linux/rtnetlink.h; every integer is in host byte order, as the kernel expects.
import {endianness} from 'node:os'

import ipaddr from 'ipaddr.js'

import {ipv4Value} from '../model/prefix.js'

import {ROUTE_TYPES, type Family, type KernelRoute, type Nexthop, type RouteType, type SourcePos} from '../model/types.js'

const LE = endianness() === 'LE'

// ------------------------------------------------------------------ constants (linux/rtnetlink.h)

export const RTM_NEWLINK = 16
export const RTM_GETLINK = 18
export const RTM_NEWROUTE = 24
export const RTM_DELROUTE = 25
export const RTM_GETROUTE = 26

export const NLMSG_ERROR = 2
export const NLMSG_DONE = 3

export const NLM_F_REQUEST = 0x1
export const NLM_F_ACK = 0x4
export const NLM_F_DUMP = 0x300
export const NLM_F_REPLACE = 0x100
export const NLM_F_EXCL = 0x200
export const NLM_F_CREATE = 0x400

export const AF_INET = 2
export const AF_INET6 = 10

export const RTA_DST = 1
export const RTA_OIF = 4
export const RTA_GATEWAY = 5
export const RTA_PRIORITY = 6
export const RTA_PREFSRC = 7
export const RTA_METRICS = 8
export const RTA_MULTIPATH = 9
export const RTA_TABLE = 15
export const RTA_VIA = 18
export const RTA_PREF = 20

export const IFLA_IFNAME = 3

export const RT_TABLE_UNSPEC = 0
export const RT_SCOPE_UNIVERSE = 0
export const RT_SCOPE_NOWHERE = 255

// next-hop flags (rtnh_flags, and rtm_flags of a single-path route) and route-only rtm_flags
export const RTNH_F_DEAD = 1
export const RTNH_F_PERVASIVE = 2
export const RTNH_F_ONLINK = 4
export const RTNH_F_OFFLOAD = 8
export const RTNH_F_LINKDOWN = 16
export const RTNH_F_UNRESOLVED = 32
export const RTNH_F_TRAP = 64
const RTNH_COMPARE_MASK = 0xff
const RTM_F_NOTIFY = 0x100
const RTM_F_OFFLOAD = 0x4000
const RTM_F_TRAP = 0x8000
const RTM_F_OFFLOAD_FAILED = 0x20000000

// The order iproute2 prints them in (print_rt_flags).
const FLAG_NAMES: Array<[number, string]> = [
  [RTNH_F_DEAD, 'dead'],
  [RTNH_F_ONLINK, 'onlink'],
  [RTNH_F_PERVASIVE, 'pervasive'],
  [RTNH_F_OFFLOAD, 'offload'],
  [RTNH_F_TRAP, 'trap'],
  [RTM_F_NOTIFY, 'notify'],
  [RTNH_F_LINKDOWN, 'linkdown'],
  [RTNH_F_UNRESOLVED, 'unresolved'],
  [RTM_F_OFFLOAD, 'rt_offload'],
  [RTM_F_TRAP, 'rt_trap'],
  [RTM_F_OFFLOAD_FAILED, 'rt_offload_failed'],
]

/** RTN_* number of a route type name (RTN_UNICAST = 1). */
export function routeTypeNumber(type: RouteType): number {
  return ROUTE_TYPES.indexOf(type) + 1
}

// /etc/iproute2/rt_protos as shipped; numbers without a name print as the number.
export const PROTOCOL_NAMES: Readonly<Record<number, string>> = {
  0: 'unspec',
  1: 'redirect',
  2: 'kernel',
  3: 'boot',
  4: 'static',
  8: 'gated',
  9: 'ra',
  10: 'mrt',
  11: 'zebra',
  12: 'bird',
  13: 'dnrouted',
  14: 'xorp',
  15: 'ntk',
  16: 'dhcp',
  18: 'keepalived',
  42: 'babel',
  99: 'openr',
  186: 'bgp',
  187: 'isis',
  188: 'ospf',
  189: 'rip',
  192: 'eigrp',
}

export const SCOPE_NAMES: Readonly<Record<number, string>> = {
  0: 'global',
  200: 'site',
  253: 'link',
  254: 'host',
  255: 'nowhere',
}
export const TABLE_NAMES: Readonly<Record<number, string>> = {0: 'unspec', 253: 'default', 254: 'main', 255: 'local'}

function reverse(map: Readonly<Record<number, string>>, name: string, what: string): number {
  if (/^\d+$/.test(name)) return Number(name)
  for (const [num, n] of Object.entries(map)) if (n === name) return Number(num)
  throw new Error(`unknown ${what} name: ${name}`)
}

export const protocolName = (n: number): string => PROTOCOL_NAMES[n] ?? String(n)
export const protocolNumber = (name: string): number => reverse(PROTOCOL_NAMES, name, 'protocol')
export const scopeName = (n: number): string => SCOPE_NAMES[n] ?? String(n)
export const scopeNumber = (name: string): number =>
  reverse(SCOPE_NAMES, name === 'universe' ? 'global' : name, 'scope')
export const tableName = (n: number): string => TABLE_NAMES[n] ?? String(n)

const flagNamesSeen = new Map<number, readonly string[]>()

export function flagNames(flags: number): string[] {
  let names = flagNamesSeen.get(flags)
  if (!names) {
    names = FLAG_NAMES.filter(([bit]) => flags & bit).map(([, name]) => name)
    if (flagNamesSeen.size < 1024) flagNamesSeen.set(flags, names)
  }
  return names.slice() // the caller's own array
}

// ------------------------------------------------------------------ the route description

/** One next hop as the wire carries it. */
export interface SpecNexthop {
  gateway?: string // same family as the route → RTA_GATEWAY, the other family → RTA_VIA
  ifindex?: number // RTA_OIF / rtnh_ifindex
  dev?: string // informational; the wire carries ifindex only
  onlink?: boolean
  weight?: number // 1..256 (wire rtnh_hops = weight - 1)
  flags?: number // other rtnh_flags bits as received (dead, linkdown...); never sent
}

/** A route as the kernel identifies and stores it, in numbers (what RTM_NEWROUTE carries). */
export interface RouteSpec {
  family: Family
  dst: string // canonical CIDR
  tableId: number
  protocol: number
  metric: number
  type: number // RTN_*
  scope: number // RT_SCOPE_*
  tos?: number
  prefsrc?: string
  metrics?: string // RTA_METRICS payload, hex, kept opaque so a restored route keeps its mtu etc.
  pref?: number // RTA_PREF (IPv6 router preference)
  flags?: number // rtm_flags as received (single-path next-hop flags included); only ONLINK is sent
  nexthops: SpecNexthop[]
}

// ------------------------------------------------------------------ writing

// One growing buffer; integers in host byte order, stored byte by byte (no bounds-checked calls).
class Writer {
  private buf: Buffer
  private len = 0
  constructor(capacity = 128) {
    this.buf = Buffer.allocUnsafe(capacity)
  }
  /** The buffer as it is now (room() may replace it). */
  get buffer(): Buffer {
    return this.buf
  }
  /** n more bytes: their offset in buffer. */
  room(n: number): number {
    const at = this.len
    if (at + n > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, at + n))
      this.buf.copy(bigger, 0, 0, at)
      this.buf = bigger
    }
    this.len = at + n
    return at
  }
  private put16(at: number, v: number): void {
    put16(this.buf, at, v)
  }
  private put32(at: number, v: number): void {
    put32(this.buf, at, v)
  }
  u8(v: number): this {
    this.buf[this.room(1)] = v & 0xff
    return this
  }
  u16(v: number): this {
    this.put16(this.room(2), v)
    return this
  }
  u32(v: number): this {
    this.put32(this.room(4), v)
    return this
  }
  /** struct rtmsg: family, dst_len, src_len (0), tos, table, protocol, scope, type, u32 flags. */
  rtmsg(
    family: number,
    dstLen: number,
    tos: number,
    table: number,
    protocol: number,
    scope: number,
    type: number,
    flags: number,
  ): void {
    const at = this.room(12)
    const b = this.buf
    b[at] = family
    b[at + 1] = dstLen
    b[at + 2] = 0
    b[at + 3] = tos
    b[at + 4] = table
    b[at + 5] = protocol
    b[at + 6] = scope
    b[at + 7] = type
    this.put32(at + 8, flags)
  }
  /** nlmsghdr with a zero length, patched in later by patchU32. */
  nlmsghdr(type: number, flags: number, seq: number, port: number): void {
    const at = this.room(16)
    this.put32(at, 0)
    this.put16(at + 4, type)
    this.put16(at + 6, flags)
    this.put32(at + 8, seq)
    this.put32(at + 12, port)
  }
  patchU32(at: number, v: number): void {
    this.put32(at, v)
  }
  s32(v: number): this {
    this.put32(this.room(4), v)
    return this
  }
  bytes(b: Uint8Array | readonly number[]): this {
    const at = this.room(b.length)
    for (let i = 0; i < b.length; i++) this.buf[at + i] = b[i] & 0xff
    return this
  }
  private pad(): void {
    const n = align4(this.len) - this.len
    if (n) this.buf.fill(0, this.room(n), this.len)
  }
  /** An rtattr: u16 len (header + payload, unpadded), u16 type, payload, padding to 4. */
  attr(type: number, payload: Uint8Array | readonly number[]): this {
    this.u16(4 + payload.length).u16(type).bytes(payload)
    this.pad()
    return this
  }
  attrU32(type: number, v: number): this {
    const at = this.room(8)
    this.put16(at, 8)
    this.put16(at + 2, type)
    this.put32(at + 4, v)
    return this
  }
  /** An IPv4 address attribute, the address given as a number (network byte order on the wire). */
  attrIPv4(type: number, v: number): this {
    const at = this.room(8)
    const b = this.buf
    this.put16(at, 8)
    this.put16(at + 2, type)
    b[at + 4] = (v >>> 24) & 0xff
    b[at + 5] = (v >>> 16) & 0xff
    b[at + 6] = (v >>> 8) & 0xff
    b[at + 7] = v & 0xff
    return this
  }
  get length(): number {
    return this.len
  }
  build(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.len)) // a copy the size of the message
  }
  /** The buffer itself (no copy), for a writer that is not written to again. */
  take(): Buffer {
    return this.buf.subarray(0, this.len)
  }
}

const align4 = (n: number): number => (n + 3) & ~3

/** An address's bytes and family: ipaddr.parse, quicker for IPv4 dotted quads. */
function parseAddress(text: string): {bytes: number[]; family: Family} {
  const v4 = ipv4Value(text)
  if (v4 >= 0) return {bytes: [v4 >>> 24, (v4 >>> 16) & 255, (v4 >>> 8) & 255, v4 & 255], family: 'inet'}
  const addr = ipaddr.parse(text)
  return {bytes: addr.toByteArray(), family: addr.kind() === 'ipv6' ? 'inet6' : 'inet'}
}

/** ipaddr.parseCIDR's address bytes (IPv4: a number) and length, quicker for IPv4. */
function parseCidr(text: string): [number[] | number, number] {
  const slash = text.indexOf('/')
  const v4 = slash > 0 ? ipv4Value(text, 0, slash) : -1
  const v4len = slash > 0 ? Number(text.slice(slash + 1)) : NaN
  if (v4 >= 0 && Number.isInteger(v4len) && v4len >= 0 && v4len <= 32) return [v4, v4len]
  const [addr, len] = ipaddr.parseCIDR(text)
  return [addr.toByteArray(), len]
}

function gatewayAttr(w: Writer, routeFamily: Family, gateway: string): void {
  if (routeFamily === 'inet') {
    const v4 = ipv4Value(gateway)
    if (v4 >= 0) {
      w.attrIPv4(RTA_GATEWAY, v4)
      return
    }
  }
  const addr = parseAddress(gateway)
  if (addr.family === routeFamily) {
    w.attr(RTA_GATEWAY, addr.bytes)
  } else {
    // rtvia: u16 family, then the address bytes
    w.attr(RTA_VIA, new Writer().u16(addr.family === 'inet6' ? AF_INET6 : AF_INET).bytes(addr.bytes).build())
  }
}

export type RouteOp = 'new' | 'del'

/**
 * The RTM_NEWROUTE / RTM_DELROUTE payload (struct rtmsg + rtattrs) for a route. A delete carries
 * scope NOWHERE, which the kernel reads as "any scope", like `ip route del`.
 */
export function encodeRoute(route: RouteSpec, op: RouteOp = 'new'): Buffer {
  const w = new Writer()
  writeRoute(w, route, op)
  return w.build()
}

/** One netlink message header: the length is patched in by `end`. */
export interface MessageHeader {
  type: number
  flags: number
  seq: number
  port: number
}

/**
 * Several RTM_NEWROUTE / RTM_DELROUTE messages back to back in one buffer (nlmsghdr + payload
 * each), for one sendmsg; `header(i)` gives route i's header.
 */
export function encodeRouteMessages(
  routes: readonly RouteSpec[],
  op: RouteOp,
  header: (i: number) => MessageHeader,
): Buffer {
  const w = new Writer(routes.length * 96)
  routes.forEach((route, i) => {
    const h = header(i)
    const start = w.length
    w.nlmsghdr(h.type, h.flags, h.seq, h.port)
    writeRoute(w, route, op)
    w.patchU32(start, w.length - start) // payloads are 4-aligned: the next header starts aligned
  })
  return w.build()
}

/**
 * Routes encoded once, each behind its own nlmsghdr (type, flags, seq = firstSeq + i, port), for
 * writes that go out a slice at a time: message i is buf[offsets[i], offsets[i + 1]).
 */
export interface EncodedMessages {
  buf: Buffer
  offsets: Uint32Array
}

export function encodeRouteBatch(
  routes: readonly RouteSpec[],
  op: RouteOp,
  type: number,
  flags: number,
  firstSeq: number,
  port: number,
): EncodedMessages {
  const w = new Writer(routes.length * 80 + 64)
  const offsets = new Uint32Array(routes.length + 1)
  for (let i = 0; i < routes.length; i++) {
    const start = w.length
    offsets[i] = start
    w.nlmsghdr(type, flags, (firstSeq + i) >>> 0, port)
    writeRoute(w, routes[i], op)
    w.patchU32(start, w.length - start)
  }
  offsets[routes.length] = w.length
  return {buf: w.take(), offsets}
}

function writeRoute(w: Writer, route: RouteSpec, op: RouteOp): void {
  if (
    route.family === 'inet' &&
    route.nexthops.length === 1 &&
    !route.prefsrc &&
    !route.metrics &&
    route.pref === undefined &&
    writeIPv4Route(w, route, op)
  )
    return
  writeRouteGeneral(w, route, op)
}

function writeRouteGeneral(w: Writer, route: RouteSpec, op: RouteOp): void {
  const [addr, len] = parseCidr(route.dst)
  const single = route.nexthops.length === 1 ? route.nexthops[0] : undefined
  let rtmFlags = 0
  if (single?.onlink) rtmFlags |= RTNH_F_ONLINK

  w.rtmsg(
    route.family === 'inet6' ? AF_INET6 : AF_INET,
    len,
    route.tos ?? 0,
    route.tableId > 255 ? RT_TABLE_UNSPEC : route.tableId, // the real id travels in RTA_TABLE
    route.protocol,
    op === 'del' ? RT_SCOPE_NOWHERE : route.scope,
    route.type,
    rtmFlags,
  )

  w.attrU32(RTA_TABLE, route.tableId)
  if (len > 0) {
    if (typeof addr === 'number') w.attrIPv4(RTA_DST, addr)
    else w.attr(RTA_DST, addr)
  }
  w.attrU32(RTA_PRIORITY, route.metric)
  if (route.prefsrc) w.attr(RTA_PREFSRC, parseAddress(route.prefsrc).bytes)
  if (route.metrics) w.attr(RTA_METRICS, Buffer.from(route.metrics, 'hex'))
  if (route.pref !== undefined) w.attr(RTA_PREF, Buffer.from([route.pref]))

  if (single) {
    if (single.gateway) gatewayAttr(w, route.family, single.gateway)
    if (single.ifindex !== undefined) w.attrU32(RTA_OIF, single.ifindex)
  } else if (route.nexthops.length > 1) {
    const mp = new Writer()
    for (const nh of route.nexthops) {
      const attrs = new Writer()
      if (nh.gateway) gatewayAttr(attrs, route.family, nh.gateway)
      const weight = nh.weight ?? 1
      if (!Number.isInteger(weight) || weight < 1 || weight > 256)
        throw new RangeError(`next-hop weight ${weight} is outside 1..256`)
      // rtnexthop: u16 len, u8 flags, u8 hops, s32 ifindex; its attributes follow inside len
      mp.u16(8 + attrs.length)
        .u8(nh.onlink ? RTNH_F_ONLINK : 0)
        .u8(weight - 1)
        .s32(nh.ifindex ?? 0)
        .bytes(attrs.build())
    }
    w.attr(RTA_MULTIPATH, mp.build())
  }
}

// Gateway text → its value: a plan repeats a few hundred gateways over thousands of routes.
const ipv4Gateways = new Map<string, number>()
function ipv4Gateway(text: string): number {
  let v = ipv4Gateways.get(text)
  if (v === undefined) {
    v = ipv4Value(text)
    if (ipv4Gateways.size < 65536) ipv4Gateways.set(text, v)
  }
  return v
}

/**
 * writeRoute for the routes a large plan is made of, byte for byte the same: IPv4, one next hop
 * (an IPv4 gateway or none), no prefsrc, metrics or preference, on a little-endian host; false
 * (nothing written) otherwise. One flat function of byte stores: it runs thousands of times
 * before the JIT has compiled it.
 */
function writeIPv4Route(w: Writer, route: RouteSpec, op: RouteOp): boolean {
  if (!LE) return false
  const text = route.dst
  const slash = text.indexOf('/')
  const digits = text.length - slash - 1
  if (slash <= 0 || digits < 1 || digits > 2) return false
  let len = text.charCodeAt(slash + 1) - 48
  if (len < 0 || len > 9) return false
  if (digits === 2) {
    const c = text.charCodeAt(slash + 2) - 48
    if (c < 0 || c > 9) return false
    len = len * 10 + c
  }
  const dst = ipv4Value(text, 0, slash)
  if (dst < 0 || len > 32) return false
  const nh = route.nexthops[0]
  let gw = -1
  if (nh.gateway) {
    gw = ipv4Gateway(nh.gateway)
    if (gw < 0) return false
  }
  const ifindex = nh.ifindex
  // rtmsg, RTA_TABLE, RTA_PRIORITY; the others
  const size = 28 + (len > 0 ? 8 : 0) + (gw >= 0 ? 8 : 0) + (ifindex !== undefined ? 8 : 0)
  let at = w.room(size)
  const b = w.buffer
  const table = route.tableId
  const metric = route.metric
  // struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, u32 flags
  b[at] = AF_INET
  b[at + 1] = len
  b[at + 2] = 0
  b[at + 3] = route.tos ?? 0
  b[at + 4] = table > 255 ? RT_TABLE_UNSPEC : table
  b[at + 5] = route.protocol
  b[at + 6] = op === 'del' ? RT_SCOPE_NOWHERE : route.scope
  b[at + 7] = route.type
  b[at + 8] = nh.onlink ? RTNH_F_ONLINK : 0
  b[at + 9] = 0
  b[at + 10] = 0
  b[at + 11] = 0
  at = rtaU32(b, at + 12, RTA_TABLE, table, false)
  if (len > 0) at = rtaU32(b, at, RTA_DST, dst, true)
  at = rtaU32(b, at, RTA_PRIORITY, metric, false)
  if (gw >= 0) at = rtaU32(b, at, RTA_GATEWAY, gw, true)
  if (ifindex !== undefined) rtaU32(b, at, RTA_OIF, ifindex, false)
  return true
}

/**
 * A 4-byte attribute (header and value, 8 bytes) at `at`: host order, or network order for an address. Returns the end.
 */
function rtaU32(b: Buffer, at: number, type: number, v: number, networkOrder: boolean): number {
  b[at] = 8
  b[at + 1] = 0
  b[at + 2] = type
  b[at + 3] = 0
  if (networkOrder) {
    b[at + 4] = (v >>> 24) & 0xff
    b[at + 5] = (v >>> 16) & 0xff
    b[at + 6] = (v >>> 8) & 0xff
    b[at + 7] = v & 0xff
  } else {
    b[at + 4] = v & 0xff
    b[at + 5] = (v >>> 8) & 0xff
    b[at + 6] = (v >>> 16) & 0xff
    b[at + 7] = (v >>> 24) & 0xff
  }
  return at + 8
}

function put16(b: Buffer, o: number, v: number): void {
  if (LE) {
    b[o] = v & 0xff
    b[o + 1] = (v >>> 8) & 0xff
  } else {
    b[o] = (v >>> 8) & 0xff
    b[o + 1] = v & 0xff
  }
}

function put32(b: Buffer, o: number, v: number): void {
  if (LE) {
    b[o] = v & 0xff
    b[o + 1] = (v >>> 8) & 0xff
    b[o + 2] = (v >>> 16) & 0xff
    b[o + 3] = (v >>> 24) & 0xff
  } else {
    b[o] = (v >>> 24) & 0xff
    b[o + 1] = (v >>> 16) & 0xff
    b[o + 2] = (v >>> 8) & 0xff
    b[o + 3] = v & 0xff
  }
}


// ------------------------------------------------------------------ reading

class Reader {
  constructor(readonly buf: Buffer) {}
  u8(o: number): number {
    return this.buf.readUInt8(o)
  }
  u16(o: number): number {
    return LE ? this.buf.readUInt16LE(o) : this.buf.readUInt16BE(o)
  }
  u32(o: number): number {
    return LE ? this.buf.readUInt32LE(o) : this.buf.readUInt32BE(o)
  }
  s32(o: number): number {
    return LE ? this.buf.readInt32LE(o) : this.buf.readInt32BE(o)
  }
}

export interface RawAttr {
  type: number
  data: Buffer
}

/** Split an rtattr stream; a truncated or malformed attribute throws. */
export function parseAttrs(buf: Buffer): RawAttr[] {
  const r = new Reader(buf)
  const out: RawAttr[] = []
  let o = 0
  while (o + 4 <= buf.length) {
    const len = r.u16(o)
    const type = r.u16(o + 2) & 0x3fff // strip NLA_F_NESTED / NLA_F_NET_BYTEORDER
    if (len < 4 || o + len > buf.length) throw new Error(`malformed rtattr at offset ${o}: length ${len}`)
    out.push({type, data: buf.subarray(o + 4, o + len)})
    o += align4(len)
  }
  return out
}

function addressText(data: Buffer): string {
  if (data.length === 4) return `${data[0]}.${data[1]}.${data[2]}.${data[3]}` // as ipaddr.js prints IPv4
  if (data.length !== 16) throw new Error(`unexpected address length ${data.length}`)
  return ipaddr.fromByteArray([...data]).toString()
}

function familyOfAf(af: number): Family {
  if (af === AF_INET) return 'inet'
  if (af === AF_INET6) return 'inet6'
  throw new Error(`unsupported address family ${af}`)
}

function viaGateway(data: Buffer): {family: Family; address: string} {
  const af = new Reader(data).u16(0)
  return {family: familyOfAf(af), address: addressText(data.subarray(2))}
}

const rd16 = (b: Buffer, o: number): number => (LE ? b.readUInt16LE(o) : b.readUInt16BE(o))
const rd32 = (b: Buffer, o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o))

// a u32 attribute's value; a payload shorter than 4 bytes throws, as reading it from its own slice would
function attrU32(b: Buffer, at: number, end: number): number {
  if (end - at < 4) throw new RangeError(`attribute too short for a u32: ${end - at} bytes`)
  return rd32(b, at)
}

/** Decode an RTM_NEWROUTE payload (struct rtmsg + rtattrs) into numbers and ifindexes. */
export function parseRouteMessage(payload: Buffer): RouteSpec {
  if (payload.length < 12) throw new Error(`route message too short: ${payload.length} bytes`)
  const family = familyOfAf(payload[0])
  const dstLen = payload[1]
  const spec: RouteSpec = {
    family,
    dst: '',
    tableId: payload[4],
    protocol: payload[5],
    scope: payload[6],
    type: payload[7],
    metric: 0,
    flags: rd32(payload, 8),
    nexthops: [],
  }
  const tos = payload[3]
  if (tos) spec.tos = tos
  let dst: string | undefined
  let gateway: string | undefined
  let oif: number | undefined
  let multipath: Buffer | undefined
  // the rtattr stream, walked in place (as parseAttrs splits it; a malformed attribute throws)
  let o = 12
  while (o + 4 <= payload.length) {
    const len = rd16(payload, o)
    const type = rd16(payload, o + 2) & 0x3fff // strip NLA_F_NESTED / NLA_F_NET_BYTEORDER
    if (len < 4 || o + len > payload.length) throw new Error(`malformed rtattr at offset ${o - 12}: length ${len}`)
    const at = o + 4
    const end = o + len
    switch (type) {
      case RTA_DST: dst = addressText(payload.subarray(at, end)); break
      case RTA_TABLE: spec.tableId = attrU32(payload, at, end); break
      case RTA_PRIORITY: spec.metric = attrU32(payload, at, end); break
      case RTA_OIF: oif = attrU32(payload, at, end); break
      case RTA_GATEWAY: gateway = addressText(payload.subarray(at, end)); break
      case RTA_VIA: gateway = viaGateway(payload.subarray(at, end)).address; break
      case RTA_PREFSRC: spec.prefsrc = addressText(payload.subarray(at, end)); break
      case RTA_METRICS: spec.metrics = payload.toString('hex', at, end); break
      case RTA_PREF:
        if (end === at) throw new RangeError('empty RTA_PREF')
        spec.pref = payload[at]
        break
      case RTA_MULTIPATH: multipath = payload.subarray(at, end); break
      default: break // cache info, expires, encap...: not part of what routedoctor compares or restores
    }
    o += align4(len)
  }
  const zero = family === 'inet6' ? '::' : '0.0.0.0'
  spec.dst = `${dst ?? zero}/${dstLen}`
  if (multipath) {
    spec.nexthops = parseMultipath(multipath)
  } else if (gateway !== undefined || oif !== undefined) {
    const nh: SpecNexthop = {weight: 1}
    if (gateway !== undefined) nh.gateway = gateway
    if (oif !== undefined) nh.ifindex = oif
    if ((spec.flags ?? 0) & RTNH_F_ONLINK) nh.onlink = true
    const other = (spec.flags ?? 0) & RTNH_COMPARE_MASK & ~RTNH_F_ONLINK
    if (other) nh.flags = other
    spec.nexthops = [nh]
  }
  return spec
}

/** The text of a route key, family|table|dst|metric: how apply.ts indexes a dump. */
export function routeKeyText(family: Family, tableId: number, dst: string, metric: number): string {
  return `${family}|${tableId}|${dst}|${metric}`
}

/**
 * The key text of an RTM_NEWROUTE payload, read from the header, RTA_TABLE, RTA_DST and RTA_PRIORITY
 * only (a quick filter before the full decode); undefined for a route with a TOS, which has no such
 * key. Throws on a malformed message, as parseRouteMessage would.
 */
export function routeMessageKey(
  buf: Buffer,
  start = 0,
  end = buf.length,
  want?: (tableId: number, metric: number) => boolean,
): string | undefined {
  if (end - start < 12) throw new Error(`route message too short: ${end - start} bytes`)
  if (buf[start + 3] !== 0) return undefined
  const family = familyOfAf(buf[start])
  let tableId = buf[start + 4]
  let metric = 0
  let dst: string | undefined
  let o = start + 12
  while (o + 4 <= end) {
    const len = rd16(buf, o)
    const type = rd16(buf, o + 2) & 0x3fff
    if (len < 4 || o + len > end) throw new Error(`malformed rtattr at offset ${o - start - 12}: length ${len}`)
    if (type === RTA_TABLE) tableId = attrU32(buf, o + 4, o + len)
    else if (type === RTA_PRIORITY) metric = attrU32(buf, o + 4, o + len)
    else if (type === RTA_DST)
      dst =
        len === 8
          ? `${buf[o + 4]}.${buf[o + 5]}.${buf[o + 6]}.${buf[o + 7]}`
          : addressText(buf.subarray(o + 4, o + len))
    o += align4(len)
  }
  if (want && !want(tableId, metric)) return '\u0000' // no key the caller wants: not worth the text
  return routeKeyText(family, tableId, `${dst ?? (family === 'inet6' ? '::' : '0.0.0.0')}/${buf[start + 1]}`, metric)
}

function parseMultipath(buf: Buffer): SpecNexthop[] {
  const r = new Reader(buf)
  const out: SpecNexthop[] = []
  let o = 0
  while (o + 8 <= buf.length) {
    const len = r.u16(o)
    if (len < 8 || o + len > buf.length) throw new Error(`malformed rtnexthop at offset ${o}: length ${len}`)
    const flags = r.u8(o + 2)
    const nh: SpecNexthop = {ifindex: r.s32(o + 4), weight: r.u8(o + 3) + 1}
    if (flags & RTNH_F_ONLINK) nh.onlink = true
    if (flags & ~RTNH_F_ONLINK) nh.flags = flags & ~RTNH_F_ONLINK
    for (const a of parseAttrs(buf.subarray(o + 8, o + len))) {
      if (a.type === RTA_GATEWAY) nh.gateway = addressText(a.data)
      else if (a.type === RTA_VIA) nh.gateway = viaGateway(a.data).address
    }
    out.push(nh)
    o += align4(len)
  }
  return out
}

// ------------------------------------------------------------------ the project's model

function gatewayOf(address: string): {family: Family; address: string} {
  return {family: address.includes(':') ? 'inet6' : 'inet', address}
}

/** A wire route in the project's KernelRoute shape, dev names looked up in `links` (ifindex → name). */
export function toKernelRoute(spec: RouteSpec, links: ReadonlyMap<number, string>, pos: SourcePos): KernelRoute {
  const rtmFlags = spec.flags ?? 0
  const single = spec.nexthops.length === 1
  const nexthops: Nexthop[] = spec.nexthops.map((nh) => {
    const bits = single ? rtmFlags & RTNH_COMPARE_MASK : (nh.flags ?? 0) | (nh.onlink ? RTNH_F_ONLINK : 0)
    // built key by key in this order (gateway, dev, weight, flags), as JSON output shows it
    const out = {} as Nexthop
    if (nh.gateway !== undefined) out.gateway = gatewayOf(nh.gateway)
    if (nh.ifindex !== undefined && nh.ifindex > 0) out.dev = links.get(nh.ifindex) ?? `if${nh.ifindex}`
    out.weight = single ? 1 : nh.weight ?? 1
    out.flags = flagNames(bits)
    return out
  })
  const route: KernelRoute = {
    family: spec.family,
    type: ROUTE_TYPES[spec.type - 1] ?? 'unicast',
    dst: spec.dst,
    table: tableName(spec.tableId),
    tableId: spec.tableId,
    protocol: protocolName(spec.protocol),
    scope: scopeName(spec.scope),
    metric: spec.metric,
    flags: flagNames(rtmFlags),
    nexthops,
    pos,
  }
  if (spec.prefsrc) route.prefsrc = spec.prefsrc
  if (spec.tos) route.tos = `0x${spec.tos.toString(16).padStart(2, '0')}`
  return route
}

/** Decode one RTM_NEWROUTE payload straight into a KernelRoute. */
export function decodeRoute(payload: Buffer, links: ReadonlyMap<number, string>, pos: SourcePos): KernelRoute {
  return toKernelRoute(parseRouteMessage(payload), links, pos)
}

/**
 * The spec that recreates `route` (a KernelRoute as decoded or journaled), next-hop devices
 * resolved by name through `ifindexOf`. Link-state flags (linkdown, dead) are the kernel's
 * to compute and are not carried.
 */
export function specFromKernelRoute(route: KernelRoute, ifindexOf: (dev: string) => number | undefined): RouteSpec {
  const spec: RouteSpec = {
    family: route.family,
    dst: route.dst,
    tableId: route.tableId,
    protocol: protocolNumber(route.protocol),
    metric: route.metric,
    type: routeTypeNumber(route.type),
    scope: scopeNumber(route.scope),
    nexthops: route.nexthops.map((nh) => {
      const out: SpecNexthop = {weight: nh.weight, onlink: nh.flags.includes('onlink')}
      if (nh.gateway) out.gateway = nh.gateway.address
      if (nh.dev !== undefined) {
        const ifindex = ifindexOf(nh.dev)
        if (ifindex === undefined) throw new Error(`device ${nh.dev} does not exist`)
        out.ifindex = ifindex
        out.dev = nh.dev
      }
      return out
    }),
  }
  if (route.prefsrc) spec.prefsrc = route.prefsrc
  if (route.tos) spec.tos = Number(route.tos)
  return spec
}

// ------------------------------------------------------------------ links

/** Decode an RTM_NEWLINK payload (struct ifinfomsg + attrs) into its index and name. */
export function parseLinkMessage(payload: Buffer): {ifindex: number; ifname?: string} {
  if (payload.length < 16) throw new Error(`link message too short: ${payload.length} bytes`)
  const ifindex = new Reader(payload).s32(4)
  for (const a of parseAttrs(payload.subarray(16))) {
    if (a.type === IFLA_IFNAME) return {ifindex, ifname: a.data.toString('utf8').replace(/\0.*$/s, '')}
  }
  return {ifindex}
}

/** The request payload of a route dump: an rtmsg with only the family set. */
export function encodeRouteDumpRequest(family: Family | 'all'): Buffer {
  const b = Buffer.alloc(12)
  b[0] = family === 'inet' ? AF_INET : family === 'inet6' ? AF_INET6 : 0
  return b
}

/** The request payload of a link dump: an empty ifinfomsg. */
export function encodeLinkDumpRequest(): Buffer {
  return Buffer.alloc(16)
}

// ------------------------------------------------------------------ rules (RTM_NEWRULE / RTM_DELRULE)

export const RTM_NEWRULE = 32
export const RTM_DELRULE = 33
export const RTM_GETRULE = 34
const FRA_DST = 1
const FRA_SRC = 2
const FRA_IIFNAME = 3
const FRA_PRIORITY = 6
const FRA_FWMARK = 10
const FRA_TABLE = 15
const FRA_OIFNAME = 17
const FRA_PROTOCOL = 21
const FR_ACT_TO_TBL = 1
const FIB_RULE_INVERT = 0x2

/** An `ip rule` as the kernel identifies it, in numbers: routedoctor writes `to DST lookup TABLE` at a priority. */
export interface RuleSpec {
  family: Family
  priority: number
  dst?: string // canonical prefix of the `to` selector
  src?: string // canonical prefix of the `from` selector
  table: number // 0 for a rule that is no table lookup
  action: number // FR_ACT_*: 1 lookup (to table)
  protocol?: number // FRA_PROTOCOL (kernels from 4.17)
  other?: boolean // it has selectors routedoctor never writes (iif, oif, fwmark, not, ...)
}

/** The RTM_NEWRULE / RTM_DELRULE payload (struct fib_rule_hdr + attributes) for a rule. */
export function encodeRule(rule: RuleSpec): Buffer {
  const w = new Writer(64)
  const [dstBytes, dstLen] = rule.dst !== undefined ? prefixBytes(rule.dst) : [[], 0]
  const [srcBytes, srcLen] = rule.src !== undefined ? prefixBytes(rule.src) : [[], 0]
  // struct fib_rule_hdr: family, dst_len, src_len, tos, table, res1, res2, action, u32 flags
  w.u8(rule.family === 'inet6' ? AF_INET6 : AF_INET).u8(dstLen).u8(srcLen).u8(0)
  w.u8(rule.table < 256 ? rule.table : RT_TABLE_UNSPEC).u8(0).u8(0).u8(rule.action).u32(0)
  w.attrU32(FRA_PRIORITY, rule.priority)
  if (rule.table >= 256 || rule.action === FR_ACT_TO_TBL) w.attrU32(FRA_TABLE, rule.table)
  if (rule.dst !== undefined) w.attr(FRA_DST, dstBytes)
  if (rule.src !== undefined) w.attr(FRA_SRC, srcBytes)
  if (rule.protocol !== undefined) w.attr(FRA_PROTOCOL, [rule.protocol])
  return w.build()
}

function prefixBytes(prefix: string): [number[], number] {
  const [bytes, len] = parseCidr(prefix)
  return typeof bytes === 'number'
    ? [[bytes >>> 24, (bytes >>> 16) & 255, (bytes >>> 8) & 255, bytes & 255], len]
    : [bytes, len]
}

/** Decode an RTM_NEWRULE payload. */
export function parseRuleMessage(payload: Buffer): RuleSpec {
  if (payload.length < 12) throw new Error(`rule message too short: ${payload.length} bytes`)
  const family = familyOfAf(payload[0])
  const dstLen = payload[1]
  const srcLen = payload[2]
  const rule: RuleSpec = {family, priority: 0, table: payload[4], action: payload[7]}
  const flags = rd32(payload, 8)
  if (flags & FIB_RULE_INVERT || payload[3] !== 0) rule.other = true
  for (const a of parseAttrs(payload.subarray(12))) {
    if (a.type === FRA_PRIORITY) rule.priority = attrU32(a.data, 0, a.data.length)
    else if (a.type === FRA_TABLE) rule.table = attrU32(a.data, 0, a.data.length)
    else if (a.type === FRA_DST) rule.dst = `${addressText(a.data)}/${dstLen}`
    else if (a.type === FRA_SRC) rule.src = `${addressText(a.data)}/${srcLen}`
    else if (a.type === FRA_PROTOCOL && a.data.length >= 1) rule.protocol = a.data[0]
    else if (a.type === FRA_IIFNAME || a.type === FRA_OIFNAME || a.type === FRA_FWMARK) rule.other = true
  }
  return rule
}

/** The same rule for routedoctor: priority, family, selectors, table and action (the protocol is a label). */
export function sameRule(a: RuleSpec, b: RuleSpec): boolean {
  return (
    a.family === b.family &&
    a.priority === b.priority &&
    a.dst === b.dst &&
    a.src === b.src &&
    a.table === b.table &&
    a.action === b.action &&
    Boolean(a.other) === Boolean(b.other)
  )
}

/** A lookup rule `to DST lookup TABLE` at a priority. */
export function lookupRule(family: Family, priority: number, dst: string, table: number, protocol?: number): RuleSpec {
  return {family, priority, dst, table, action: FR_ACT_TO_TBL, ...(protocol !== undefined ? {protocol} : {})}
}

/** `ip rule` text of a rule spec. */
export function ruleText(r: RuleSpec): string {
  return `${r.priority}: ${r.src ? `from ${r.src}` : 'from all'}${r.dst ? ` to ${r.dst}` : ''} ${r.action === FR_ACT_TO_TBL ? `lookup ${tableName(r.table)}` : `action ${r.action}`}`
}
