// IPv4 prefixes as exact numbers (network · 64 + length), in prefix order: keys for tables of prefixes.
import {ipv4Network, ipv4Text, ipv4Value, lengthValue} from './prefix.js'

/** An IPv4 prefix as one exact number, in prefix order: network · 64 + length. -1 for any other text. */
export function prefixKey(prefix: string, from = 0, to = prefix.length): number {
  const slash = prefix.indexOf('/', from)
  if (slash < 0 || slash >= to) return -1
  const v = ipv4Value(prefix, from, slash)
  if (v < 0) return -1
  const len = lengthValue(prefix, slash + 1, 32, to)
  // BIRD and iproute2 print networks without host bits: anything else is not deferred
  return len < 0 || ipv4Network(v, len) !== v ? -1 : networkKey(v, len)
}

/** The key of an IPv4 network (its value, without host bits) of length `len`: prefixKey of its text. */
export function networkKey(network: number, len: number): number {
  return network * 64 + len
}

/** The keys of the 33 networks, /0 to /32, that hold the IPv4 address of value `v`. */
export function coveringKeys(v: number): number[] {
  const keys: number[] = []
  for (let len = 0; len <= 32; len++) keys.push(networkKey(ipv4Network(v, len), len))
  return keys
}

/** The values of the IPv4 addresses among `addresses` (any other text, or none, is passed over). */
export function ipv4Values(addresses: Iterable<string | undefined>): number[] {
  const values: number[] = []
  for (const a of addresses) {
    const v = a === undefined ? -1 : ipv4Value(a)
    if (v >= 0) values.push(v)
  }
  return values
}

/** The keys of every network that holds one of `addresses` (IPv4 text; any other is passed over). */
export function keysHolding(addresses: Iterable<string | undefined>): Set<number> {
  const keys = new Set<number>()
  for (const v of ipv4Values(addresses)) for (const key of coveringKeys(v)) keys.add(key)
  return keys
}

/** Where `key` is in the ascending `keys`, by binary search; -1 when it is not there. */
export function indexOfKey(keys: Float64Array, key: number): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (keys[mid] < key) lo = mid + 1
    else hi = mid
  }
  return lo < keys.length && keys[lo] === key ? lo : -1
}

/** The prefix text of a key, as BIRD and iproute2 print it. */
export function keyPrefix(key: number): string {
  const len = key % 64
  return `${ipv4Text((key - len) / 64)}/${len}`
}

/** The length of keyPrefix(key), without making it. */
export function keyPrefixLength(key: number): number {
  const len = key % 64
  let v = (key - len) / 64
  let n = 4 + (len >= 10 ? 2 : 1) // three dots and the slash, the length
  for (let i = 0; i < 4; i++) {
    const octet = v % 256
    n += octet >= 100 ? 3 : octet >= 10 ? 2 : 1
    v = (v - octet) / 256
  }
  return n
}
