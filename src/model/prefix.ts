// Prefix math. Dotted-quad IPv4 — nearly every address of a full table — takes an integer fast
// path (ipaddr.js tries IPv6 first and throws for IPv4 text, which is slow); everything else goes
// through ipaddr.js. Canonical forms keep every stage comparing like with like.
import ipaddr from 'ipaddr.js'

import type {Family} from './types.js'

export type Addr = ipaddr.IPv4 | ipaddr.IPv6

/** The value of canonical dotted-quad text in s[from, to), or -1 (not IPv4, or not canonical: leading zeros). */
export function ipv4Value(s: string, from = 0, to = s.length): number {
  let v = 0
  let part = -1
  let digits = 0
  let dots = 0
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i)
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1
      v = v * 256 + part
      part = -1
      digits = 0
      dots++
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return -1
      part = (part < 0 ? 0 : part) * 10 + c - 48
      if (part > 255) return -1
      digits++
    } else {
      return -1
    }
  }
  if (dots !== 3 || digits === 0) return -1
  return v * 256 + part
}

export function ipv4Text(v: number): string {
  return `${Math.floor(v / 16777216) % 256}.${Math.floor(v / 65536) % 256}.${Math.floor(v / 256) % 256}.${v % 256}`
}

/** Prefix length text "0".."128" in s[from, to) without leading zeros, at most `max`; -1 otherwise. */
export function lengthValue(s: string, from: number, max: number, to = s.length): number {
  const n = to - from
  if (n < 1 || n > 3 || (n > 1 && s.charCodeAt(from) === 48)) return -1
  let v = 0
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i)
    if (c < 48 || c > 57) return -1
    v = v * 10 + c - 48
  }
  return v <= max ? v : -1
}

const POW2 = Array.from({length: 33}, (_, i) => 2 ** i)

/** The network address of v/len as a number. */
export function ipv4Network(v: number, len: number): number {
  const host = POW2[32 - len]
  return v - (v % host)
}

export function familyOf(address: string): Family {
  return address.includes(':') ? 'inet6' : 'inet'
}

/** Canonical address text, or undefined when it is not an address. */
export function canonicalAddress(text: string): string | undefined {
  if (ipv4Value(text) >= 0) return text
  try {
    return ipv6Only(ipaddr.parse(text.replace(/%.*$/, '')))?.toString()
  } catch {
    return undefined
  }
}

/**
 * An address ipaddr.js parsed, if IPv6. IPv4 is a dotted quad (ipv4Value) and nothing else: ipaddr.js also takes
 * inet_aton's forms, `192.168.110` as 192.168.0.110 and `010.1.1.1` as octal, which no route or user means.
 */
function ipv6Only<T extends Addr>(addr: T): T | undefined {
  return addr.kind() === 'ipv6' ? addr : undefined
}

/**
 * Canonical CIDR ("192.168.200.10/32", "0.0.0.0/0") from "192.168.200.10", "default", "10.0.0.0/8".
 * Host bits are cleared. Undefined when the text is not a prefix.
 */
export function canonicalPrefix(text: string, family: Family = 'inet'): string | undefined {
  if (text === 'default') return family === 'inet6' ? '::/0' : '0.0.0.0/0'
  const slash = text.indexOf('/')
  const v = ipv4Value(text, 0, slash < 0 ? text.length : slash)
  if (v >= 0) {
    if (slash < 0) return `${text}/32`
    const len = lengthValue(text, slash + 1, 32)
    if (len < 0) return undefined
    const network = ipv4Network(v, len)
    return network === v ? text : `${ipv4Text(network)}/${len}`
  }
  try {
    if (slash < 0) {
      const addr = ipv6Only(ipaddr.parse(text))
      return addr === undefined ? undefined : `${addr.toString()}/128`
    }
    const [addr, len] = ipaddr.parseCIDR(text)
    return ipv6Only(addr) === undefined ? undefined : `${networkAddress(addr, len).toString()}/${len}`
  } catch {
    return undefined
  }
}

export function parsePrefix(cidr: string): [Addr, number] {
  return ipaddr.parseCIDR(cidr) as [Addr, number]
}

function networkAddress(addr: Addr, len: number): Addr {
  const bytes = addr.toByteArray()
  for (let i = 0; i < bytes.length; i++) {
    const bit = i * 8
    if (bit >= len) bytes[i] = 0
    else if (bit + 8 > len) bytes[i] &= (0xff << (8 - (len - bit))) & 0xff
  }
  return ipaddr.fromByteArray(bytes) as Addr
}

/** Does prefix `outer` contain address or prefix `inner`? Both canonical; different families never match. */
export function prefixContains(outer: string, inner: string): boolean {
  const os = outer.indexOf('/')
  const is = inner.indexOf('/')
  const ov = ipv4Value(outer, 0, os)
  const iv = ipv4Value(inner, 0, is < 0 ? inner.length : is)
  if (ov >= 0 || iv >= 0) {
    if (ov < 0 || iv < 0) return false
    const ol = Number(outer.slice(os + 1))
    const il = is < 0 ? 32 : Number(inner.slice(is + 1))
    return il >= ol && ipv4Network(iv, ol) === ov
  }
  const [oa, ol] = parsePrefix(outer)
  const [ia, il] = is >= 0 ? parsePrefix(inner) : [ipaddr.parse(inner) as Addr, 128]
  if (oa.kind() !== ia.kind() || il < ol) return false
  return (ia as ipaddr.IPv4).match(oa as ipaddr.IPv4, ol)
}

export function prefixLength(cidr: string): number {
  return Number(cidr.slice(cidr.indexOf('/') + 1))
}

/** A sort key that orders IPv4 before IPv6, then by address, then by length. */
export function prefixSortKey(cidr: string): string {
  const slash = cidr.indexOf('/')
  const v = ipv4Value(cidr, 0, slash)
  const len = cidr.slice(slash + 1).padStart(3, '0')
  if (v >= 0) return `4${v.toString(16).padStart(8, '0')}${len}`
  try {
    return `6${ipaddr
      .parse(cidr.slice(0, slash))
      .toByteArray()
      .map((b) => b.toString(16).padStart(2, '0'))
      .join('')}${len}`
  } catch {
    return `7${cidr}`
  }
}

/**
 * The block a query is about: of `prefixes` (the tunnel prefixes, canonical), the longest that holds `query` (a
 * canonical prefix or address) or is it. Undefined when none does. explain, fix and the UI's search resolve by it.
 */
export function coveringPrefix(prefixes: Iterable<string>, query: string): string | undefined {
  const q = query.includes('/') ? query : canonicalPrefix(query)
  if (q === undefined) return undefined
  const len = prefixLength(q)
  let best: string | undefined
  for (const p of prefixes) {
    const l = prefixLength(p)
    if (l <= len && prefixContains(p, q) && (best === undefined || l > prefixLength(best))) best = p
  }
  return best
}

/** A prefix argument with host bits set (192.168.110.130/26): its network (192.168.110.128/26); else undefined. */
export function hostBitsSet(text: string): string | undefined {
  const slash = text.indexOf('/')
  if (slash < 0) return undefined
  const prefix = canonicalPrefix(text)
  const address = canonicalAddress(text.slice(0, slash))
  if (prefix === undefined || address === undefined) return undefined
  return prefix.slice(0, prefix.indexOf('/')) === address ? undefined : prefix
}
