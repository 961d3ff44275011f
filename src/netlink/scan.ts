// Route dumps read in place, so that a large apply decodes only what it must.
//
//  - WireKeyIndex: the route keys an apply touches (family, table, dst, metric), looked up straight
//    from a dumped message's header and three attributes: an IPv4 destination is a number, so a
//    lookup builds no text. It finds exactly the messages whose decoded key text (codec.routeKeyText
//    of parseRouteMessage's fields) is a wanted one; routes with a TOS have no such key.
//  - wireMatches (with wireCheckable): "this dumped route is the planned one", decided on its bytes.
//    A yes is exact: the message decodes (parseRouteMessage would not throw on it) and the decoded
//    route passes apply.ts's specMatchesPlanned. A no only means "decode it and look": callers then
//    take the decoding path, so the answer never differs from it.
//  - wireDecodesLookedUp: would parseRouteMessage decode it, without decoding it.
// test/netlink/scan.test.ts holds each to the decoding path, on damaged messages too.
import {endianness} from 'node:os'

import ipaddr from 'ipaddr.js'

import {ipv4Value} from '../model/prefix.js'
import type {Family} from '../model/types.js'

import {
  AF_INET,
  AF_INET6,
  RTA_DST,
  RTA_GATEWAY,
  RTA_MULTIPATH,
  RTA_OIF,
  RTA_PREF,
  RTA_PREFSRC,
  RTA_PRIORITY,
  RTA_TABLE,
  RTA_VIA,
  RTNH_F_ONLINK,
  type RouteSpec,
} from './codec.js'

const LE = endianness() === 'LE'
const rd16 = (b: Buffer, o: number): number => (LE ? b[o] | (b[o + 1] << 8) : (b[o] << 8) | b[o + 1])
const rd32 = (b: Buffer, o: number): number =>
  LE
    ? (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16)) + b[o + 3] * 0x1000000
    : b[o] * 0x1000000 + ((b[o + 1] << 16) | (b[o + 2] << 8) | b[o + 3])
const rdS32 = (b: Buffer, o: number): number => rd32(b, o) | 0

const afOf = (family: Family): number => (family === 'inet6' ? AF_INET6 : AF_INET)

// dstKey's answer (a module's scratch pair: an apply parses thousands of keys, each read at once)
let keyLen = 0
let keyAddr: number | string = 0

/**
 * The index key of a destination, into keyLen and keyAddr: an IPv4 prefix's length and its address
 * as an int32 (a small integer for V8, as Map keys go), an IPv6 prefix's length and the hex of its
 * 16 bytes. False for text the dump can never show as a route's dst (routeKeyText of a decoded
 * route is canonical: no host bits, no leading zeros, "a.b.c.d/len").
 */
function dstKey(family: Family, dst: string): boolean {
  const slash = dst.indexOf('/')
  if (slash <= 0) return false
  // the length: decimal without leading zeros, as a decoded route's text has it
  const digits = dst.length - slash - 1
  if (digits < 1 || digits > 3 || (digits > 1 && dst.charCodeAt(slash + 1) === 48)) return false
  let len = 0
  for (let i = slash + 1; i < dst.length; i++) {
    const c = dst.charCodeAt(i) - 48
    if (c < 0 || c > 9) return false
    len = len * 10 + c
  }
  if (family === 'inet') {
    const v = ipv4Value(dst, 0, slash)
    if (v < 0 || len > 32) return false
    const addr = v | 0
    if (len < 32 && addr << len !== 0) return false // host bits: the kernel's dst never has them
    keyLen = len
    keyAddr = addr
    return true
  }
  if (len > 128) return false
  try {
    const text = dst.slice(0, slash)
    const addr = ipaddr.parse(text)
    if (addr.kind() !== 'ipv6' || addr.toString() !== text) return false // not the text a dump decodes to
    const bytes = addr.toByteArray()
    for (let bit = len; bit < 128; bit++) if (bytes[bit >> 3] & (0x80 >> (bit & 7))) return false
    keyLen = len
    keyAddr = Buffer.from(bytes).toString('hex')
    return true
  } catch {
    return false
  }
}

// What readAttrs found in the message it read last (a module's scratch: thousands of messages a
// dump, each read once for its key and, at a planned key, once more for its route).
const msg = {
  buf: undefined as Buffer | undefined,
  start: -1,
  end: -1,
  keyed: false, // the attributes a key is read from are whole (else the message has no key)
  decodes: false, // and every attribute parseRouteMessage reads is as it needs (it would not throw)
  tableId: 0,
  metric: 0,
  dstAt: -1,
  dstLen: 0,
  gwAt: -1, // the last RTA_GATEWAY or RTA_VIA address (as parseRouteMessage keeps the last)
  gwLen: -1,
  oif: -1,
  mpAt: -1, // the last RTA_MULTIPATH payload
  mpEnd: -1,
}

/** Walk the rtattrs of the route message in payload [start, end) once, into `msg`. */
function readAttrs(buf: Buffer, start: number, end: number): void {
  msg.buf = buf
  msg.start = start
  msg.end = end
  msg.keyed = false
  msg.decodes = false
  if (end - start < 12) return
  let decodes = buf[start] === AF_INET || buf[start] === AF_INET6
  let tableId = buf[start + 4]
  let metric = 0
  let dstAt = -1
  let dstLen = 0
  let gwAt = -1
  let gwLen = -1
  let oif = -1
  let mpAt = -1
  let mpEnd = -1
  for (let o = start + 12; o + 4 <= end; ) {
    const len = rd16(buf, o)
    if (len < 4 || o + len > end) return // malformed: it does not decode, so it has no key either
    const type = rd16(buf, o + 2) & 0x3fff
    const n = len - 4
    const at = o + 4
    switch (type) {
      case RTA_DST:
        if (!isAddressLength(n)) return // routeMessageKey cannot read it either
        dstAt = at
        dstLen = n
        break
      case RTA_TABLE:
        if (n < 4) return
        tableId = rd32(buf, at)
        break
      case RTA_PRIORITY:
        if (n < 4) return
        metric = rd32(buf, at)
        break
      case RTA_PREFSRC:
        if (!isAddressLength(n)) decodes = false
        break
      case RTA_OIF:
        if (n < 4) decodes = false
        else oif = rd32(buf, at)
        break
      case RTA_GATEWAY:
        if (!isAddressLength(n)) decodes = false
        gwAt = at
        gwLen = n
        break
      case RTA_VIA: {
        const via = n >= 2 ? rd16(buf, at) : -1
        if ((via !== AF_INET && via !== AF_INET6) || !isAddressLength(n - 2)) decodes = false
        gwAt = at + 2
        gwLen = n - 2
        break
      }
      case RTA_PREF:
        if (n < 1) decodes = false
        break
      case RTA_MULTIPATH:
        mpAt = at
        mpEnd = o + len
        break
      default:
        break // RTA_METRICS (kept as hex), cache info, expires, encap...: never a reason to throw
    }
    o += (len + 3) & ~3
  }
  msg.keyed = true
  msg.decodes = decodes
  msg.tableId = tableId
  msg.metric = metric
  msg.dstAt = dstAt
  msg.dstLen = dstLen
  msg.gwAt = gwAt
  msg.gwLen = gwLen
  msg.oif = oif
  msg.mpAt = mpAt
  msg.mpEnd = mpEnd
}

const TWO32 = 4294967296

/**
 * The key of canonical IPv4 prefix text ("10.0.0.64/26": no leading zeros, no host bits, which
 * canonicalPrefix gives back as it is), packed in one number (length × 2^32 + address), for
 * WireKeyIndex.obtainIPv4; -1 for any other text.
 */
export function ipv4PrefixKey(text: string): number {
  return dstKey('inet', text) ? keyLen * TWO32 + ((keyAddr as number) >>> 0) : -1
}

// family (AF_*) → table → metric → prefix length → address → value
type ByAddr<V> = Map<number | string, V>
type ByLength<V> = Map<number, ByAddr<V>>

/**
 * Keys to values, looked up by a dumped RTM_NEWROUTE payload in place: by family, table, metric,
 * prefix length, then address. A dump's messages mostly share a table and metric: the last
 * family/table/metric looked up is remembered.
 */
export class WireKeyIndex<V> {
  private readonly maps = new Map<number, Map<number, Map<number, ByLength<V>>>>()
  private lastAf = -1
  private lastTable = -1
  private lastMetric = -1
  private lastLengths: ByLength<V> | undefined
  private missAf = -1
  private missTable = -1
  private missMetric = -1
  size = 0

  private lengths(af: number, tableId: number, metric: number, create: boolean): ByLength<V> | undefined {
    if (af === this.lastAf && tableId === this.lastTable && metric === this.lastMetric) return this.lastLengths
    // a dump alternates between a wanted metric and others (BIRD's, beside ours): remember a miss too
    if (!create && af === this.missAf && tableId === this.missTable && metric === this.missMetric) return undefined
    let byTable = this.maps.get(af)
    if (!byTable && create) this.maps.set(af, (byTable = new Map()))
    let byMetric = byTable?.get(tableId)
    if (!byMetric && create) byTable!.set(tableId, (byMetric = new Map()))
    let lengths = byMetric?.get(metric)
    if (!lengths) {
      if (!create) {
        this.missAf = af
        this.missTable = tableId
        this.missMetric = metric
        return undefined
      }
      byMetric!.set(metric, (lengths = new Map()))
      this.missAf = -1 // it may have been the miss
    }
    this.lastAf = af
    this.lastTable = tableId
    this.lastMetric = metric
    this.lastLengths = lengths
    return lengths
  }

  /** The value at a key; undefined also for a dst no dump can show (see dstKey). */
  get(family: Family, tableId: number, dst: string, metric: number): V | undefined {
    return dstKey(family, dst)
      ? this.lengths(afOf(family), tableId, metric, false)?.get(keyLen)?.get(keyAddr)
      : undefined
  }

  /**
   * The value at a key, made by `make` when there is none yet. A key no dump can show gets a value
   * of its own that no message will find.
   */
  obtain(family: Family, tableId: number, dst: string, metric: number, make: () => V): V {
    if (!dstKey(family, dst)) return make()
    return this.slot(afOf(family), tableId, metric, keyLen, keyAddr, make)
  }

  /** obtain() for an IPv4 key packed by ipv4PrefixKey. */
  obtainIPv4(tableId: number, metric: number, packed: number, make: () => V): V {
    return this.slot(AF_INET, tableId, metric, Math.floor(packed / TWO32), (packed % TWO32) | 0, make)
  }

  private slot(af: number, tableId: number, metric: number, len: number, addr: number | string, make: () => V): V {
    const lengths = this.lengths(af, tableId, metric, true)!
    let addrs = lengths.get(len)
    if (!addrs) lengths.set(len, (addrs = new Map()))
    let value = addrs.get(addr)
    if (value === undefined) {
      value = make()
      addrs.set(addr, value)
      this.size++
    }
    return value
  }

  /** The value for the route in payload [start, end), or undefined (not wanted, a TOS route, malformed). */
  lookup(buf: Buffer, start: number, end: number): V | undefined {
    if (end - start < 12 || buf[start + 3] !== 0) return undefined
    const af = buf[start]
    if (af !== AF_INET && af !== AF_INET6) return undefined
    readAttrs(buf, start, end)
    if (!msg.keyed) return undefined
    const addrs = this.lengths(af, msg.tableId, msg.metric, false)?.get(buf[start + 1])
    if (!addrs) return undefined
    const dstAt = msg.dstAt
    if (af === AF_INET) {
      // a 16-byte dst decodes to IPv6 text, never an IPv4 key; a missing one is 0.0.0.0
      if (dstAt < 0) return addrs.get(0)
      return msg.dstLen === 4
        ? addrs.get((buf[dstAt] << 24) | (buf[dstAt + 1] << 16) | (buf[dstAt + 2] << 8) | buf[dstAt + 3])
        : undefined
    }
    // a 4-byte dst on an IPv6 route decodes to IPv4 text: never an IPv6 key; a missing one is ::
    if (dstAt < 0) return addrs.get('0'.repeat(32))
    return msg.dstLen === 16 ? addrs.get(buf.toString('hex', dstAt, dstAt + 16)) : undefined
  }
}

// ------------------------------------------------------------------ the planned route on the wire

// The bytes a dump gives for an address whose decoded text is exactly `text` (null: none do, such
// as non-canonical text). Plans repeat a few hundred gateways over thousands of routes: cached.
const addressBytes = new Map<string, Uint8Array | null>()
function canonicalAddressBytes(text: string): Uint8Array | null {
  let bytes = addressBytes.get(text)
  if (bytes !== undefined) return bytes
  const v4 = ipv4Value(text) // canonical dotted quads only
  if (v4 >= 0) bytes = Uint8Array.of(v4 >>> 24, (v4 >>> 16) & 255, (v4 >>> 8) & 255, v4 & 255)
  else {
    try {
      const addr = ipaddr.parse(text)
      bytes = addr.kind() === 'ipv6' && addr.toString() === text ? Uint8Array.from(addr.toByteArray()) : null
    } catch {
      bytes = null
    }
  }
  if (addressBytes.size < 65536) addressBytes.set(text, bytes)
  return bytes
}

/**
 * Can the bytes tell `write` (the spec apply.ts's plannedSpec made of the planned route, with the
 * planned protocol's number, devices and their ifindexes) from a dump read with `links`? They
 * cannot when a device's ifindex no longer has its planned name there, when a gateway's text is
 * not what a dump decodes to, or for more next hops than the matcher tracks: such a route is decoded.
 */
export function wireCheckable(write: RouteSpec, links: ReadonlyMap<number, string>): boolean {
  const nhs = write.nexthops
  if (nhs.length === 0 || nhs.length > 30) return false
  for (const nh of nhs) {
    if (nh.ifindex === undefined || !(nh.ifindex > 0) || nh.dev === undefined || links.get(nh.ifindex) !== nh.dev)
      return false
    if (nh.gateway !== undefined && canonicalAddressBytes(nh.gateway) === null) return false
    if (nhs.length > 1 && !Number.isInteger(nh.weight)) return false // compared as the planned weight's text is
  }
  return true
}

// an attribute holding an address: what addressText accepts
const isAddressLength = (n: number): boolean => n === 4 || n === 16

/** Is buf[at, at + len) the address `gateway` (len < 0: no gateway attribute) as wireCheckable vetted it? */
function sameGateway(buf: Buffer, at: number, len: number, gateway: string | undefined): boolean {
  if (gateway === undefined) return len < 0
  const want = canonicalAddressBytes(gateway)
  if (want === null || len !== want.length) return false
  for (let i = 0; i < len; i++) if (buf[at + i] !== want[i]) return false
  return true
}

/**
 * Does the dumped route in payload [start, end) carry exactly the route `write` describes (type
 * unicast, protocol, next-hop set as apply.ts's specMatchesPlanned compares it with the planned
 * route)? The caller found it at the planned key and checked wireCheckable(write, links). Every
 * check that parseRouteMessage makes is made here too, so true means it decodes.
 */
export function wireMatches(buf: Buffer, start: number, end: number, write: RouteSpec): boolean {
  readAttrs(buf, start, end)
  return matchesRead(buf, start, end, write)
}

/**
 * Does the message a WireKeyIndex.lookup just found decode (would parseRouteMessage not throw on
 * it)? Call it before anything else reads a message, as wireMatchesLookedUp.
 */
export function wireDecodesLookedUp(buf: Buffer, start: number, end: number): boolean {
  if (msg.buf !== buf || msg.start !== start || msg.end !== end) readAttrs(buf, start, end)
  if (!msg.decodes) return false
  // RTA_MULTIPATH: rtnexthops, and their attributes, as parseMultipath reads them
  const mpEnd = msg.mpEnd
  for (let o = msg.mpAt; o >= 0 && o + 8 <= mpEnd; ) {
    const len = rd16(buf, o)
    if (len < 8 || o + len > mpEnd) return false
    const attrsEnd = o + len
    for (let a = o + 8; a + 4 <= attrsEnd; ) {
      const alen = rd16(buf, a)
      if (alen < 4 || a + alen > attrsEnd) return false
      const type = rd16(buf, a + 2) & 0x3fff
      if (type === RTA_GATEWAY && !isAddressLength(alen - 4)) return false
      if (type === RTA_VIA) {
        if (alen - 4 < 2) return false
        const via = rd16(buf, a + 4)
        if ((via !== AF_INET && via !== AF_INET6) || !isAddressLength(alen - 6)) return false
      }
      a += (alen + 3) & ~3
    }
    o += (len + 3) & ~3
  }
  return true
}

/**
 * wireMatches for the message a WireKeyIndex.lookup just found (its attributes are read already):
 * call it before anything else reads a message.
 */
export function wireMatchesLookedUp(buf: Buffer, start: number, end: number, write: RouteSpec): boolean {
  if (msg.buf !== buf || msg.start !== start || msg.end !== end) readAttrs(buf, start, end)
  return matchesRead(buf, start, end, write)
}

function matchesRead(buf: Buffer, start: number, end: number, write: RouteSpec): boolean {
  if (!msg.decodes || end - start < 12) return false
  if (buf[start + 7] !== 1 || buf[start + 5] !== write.protocol) return false // RTN_UNICAST; our protocol
  const gwAt = msg.gwAt
  const gwLen = msg.gwLen
  const oif = msg.oif
  const mpAt = msg.mpAt
  const mpEnd = msg.mpEnd
  const want = write.nexthops
  const single = want.length === 1 // one planned next hop: its weight does not count
  if (mpAt < 0) {
    // a single next hop: onlink from rtm_flags (dev and gateway as their attributes)
    if (!single || (gwAt < 0 && oif < 0)) return false
    const w = want[0]
    return (
      oif === w.ifindex &&
      sameGateway(buf, gwAt, gwLen, w.gateway) &&
      ((rd32(buf, start + 8) & RTNH_F_ONLINK) !== 0) === Boolean(w.onlink)
    )
  }
  // RTA_MULTIPATH: rtnexthop {u16 len, u8 flags, u8 hops, s32 ifindex} + attributes, each matched
  // to a planned next hop not matched yet (the planned list is a multiset: order does not count)
  let used = 0
  let count = 0
  for (let o = mpAt; o + 8 <= mpEnd; ) {
    const len = rd16(buf, o)
    if (len < 8 || o + len > mpEnd) return false
    const onlink = (buf[o + 2] & RTNH_F_ONLINK) !== 0
    const weight = buf[o + 3] + 1
    const ifindex = rdS32(buf, o + 4)
    let nhGwAt = -1
    let nhGwLen = -1
    const attrsEnd = o + len
    for (let a = o + 8; a + 4 <= attrsEnd; ) {
      const alen = rd16(buf, a)
      if (alen < 4 || a + alen > attrsEnd) return false
      const type = rd16(buf, a + 2) & 0x3fff
      if (type === RTA_GATEWAY) {
        if (!isAddressLength(alen - 4)) return false
        nhGwAt = a + 4
        nhGwLen = alen - 4
      } else if (type === RTA_VIA) {
        if (alen - 4 < 2) return false
        const via = rd16(buf, a + 4)
        if ((via !== AF_INET && via !== AF_INET6) || !isAddressLength(alen - 6)) return false
        nhGwAt = a + 6
        nhGwLen = alen - 6
      }
      a += (alen + 3) & ~3
    }
    count++
    if (count > want.length) return false
    let found = -1
    for (let j = 0; j < want.length; j++) {
      if (used & (1 << j)) continue
      const w = want[j]
      if (
        w.ifindex === ifindex &&
        Boolean(w.onlink) === onlink &&
        (single || w.weight === weight) &&
        sameGateway(buf, nhGwAt, nhGwLen, w.gateway)
      ) {
        found = j
        break
      }
    }
    if (found < 0) return false
    used |= 1 << found
    o += (len + 3) & ~3
  }
  return count === want.length
}
