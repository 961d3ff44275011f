// Prefix math on ipaddr.js. Canonical forms keep every stage comparing like with like.
import ipaddr from 'ipaddr.js'

import type {Family} from './types.js'

export type Addr = ipaddr.IPv4 | ipaddr.IPv6

export function familyOf(address: string): Family {
  return address.includes(':') ? 'inet6' : 'inet'
}

/** Canonical address text, or undefined when it is not an address. */
export function canonicalAddress(text: string): string | undefined {
  try {
    return ipaddr.parse(text.replace(/%.*$/, '')).toString()
  } catch {
    return undefined
  }
}

/**
 * Canonical CIDR ("192.168.200.10/32", "0.0.0.0/0") from "192.168.200.10", "default", "10.0.0.0/8".
 * Host bits are cleared. Undefined when the text is not a prefix.
 */
export function canonicalPrefix(text: string, family: Family = 'inet'): string | undefined {
  if (text === 'default') return family === 'inet6' ? '::/0' : '0.0.0.0/0'
  const slash = text.indexOf('/')
  try {
    if (slash < 0) {
      const addr = ipaddr.parse(text)
      return `${addr.toString()}/${addr.kind() === 'ipv4' ? 32 : 128}`
    }
    const [addr, len] = ipaddr.parseCIDR(text)
    return `${networkAddress(addr, len).toString()}/${len}`
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
  const [oa, ol] = parsePrefix(outer)
  const [ia, il] = inner.includes('/') ? parsePrefix(inner) : [ipaddr.parse(inner) as Addr, inner.includes(':') ? 128 : 32]
  if (oa.kind() !== ia.kind() || il < ol) return false
  return (ia as ipaddr.IPv4).match(oa as ipaddr.IPv4, ol)
}

export function prefixLength(cidr: string): number {
  return Number(cidr.slice(cidr.indexOf('/') + 1))
}

export function isLinkLocal(address: string): boolean {
  try {
    const a = ipaddr.parse(address)
    return a.range() === 'linkLocal'
  } catch {
    return false
  }
}
