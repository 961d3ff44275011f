// Values by prefix, for the indices a full table builds (a million entries). IPv4 prefixes live in one
// map per prefix length, keyed by the network as a signed 32-bit integer — small integers to V8, so no
// string hashing and no boxed keys — and any other prefix by its text.
import {ipv4Network, ipv4Value, lengthValue} from './prefix.js'

export class PrefixMap<V> {
  private readonly v4: Array<Map<number, V> | undefined> = []
  private readonly other = new Map<string, V>()

  get(prefix: string): V | undefined {
    const slash = prefix.indexOf('/')
    const v = slash < 0 ? -1 : ipv4Value(prefix, 0, slash)
    if (v >= 0) {
      const len = lengthValue(prefix, slash + 1, 32)
      return len < 0 ? undefined : this.getV4(v, len)
    }
    return this.other.get(prefix)
  }

  /** The value of IPv4 prefix v/len (v: the address as an unsigned integer; host bits are ignored). */
  getV4(v: number, len: number): V | undefined {
    return this.v4[len]?.get(ipv4Network(v, len) | 0)
  }

  set(prefix: string, value: V): void {
    const slash = prefix.indexOf('/')
    const v = slash < 0 ? -1 : ipv4Value(prefix, 0, slash)
    const len = v >= 0 ? lengthValue(prefix, slash + 1, 32) : -1
    if (len >= 0) (this.v4[len] ??= new Map()).set(ipv4Network(v, len) | 0, value)
    else this.other.set(prefix, value)
  }

  /**
   * Adds a value at a prefix: held alone, and in a list once there are several (most prefixes have one).
   * Returns the list when this call made one.
   */
  add<T>(this: PrefixMap<T | T[]>, prefix: string, value: T): T[] | undefined {
    const slash = prefix.indexOf('/')
    const v = slash < 0 ? -1 : ipv4Value(prefix, 0, slash)
    const len = v >= 0 ? lengthValue(prefix, slash + 1, 32) : -1
    let map: Map<number, T | T[]> | Map<string, T | T[]>
    let key: number | string
    if (len >= 0) {
      map = this.v4[len] ??= new Map()
      key = ipv4Network(v, len) | 0
    } else {
      map = this.other
      key = prefix
    }
    const known = (map as Map<number | string, T | T[]>).get(key)
    if (known === undefined) (map as Map<number | string, T | T[]>).set(key, value)
    else if (Array.isArray(known)) known.push(value)
    else {
      const list = [known, value]
      ;(map as Map<number | string, T | T[]>).set(key, list)
      return list
    }
    return undefined
  }

  /** Every IPv4 entry: its network (unsigned) and length. */
  forEachV4(each: (network: number, len: number, value: V) => void): void {
    for (let len = 0; len < this.v4.length; len++) this.v4[len]?.forEach((value, key) => each(key >>> 0, len, value))
  }

  /** Every entry that is not an IPv4 prefix, by its text. */
  otherEntries(): IterableIterator<[string, V]> {
    return this.other.entries()
  }

  *values(): Generator<V> {
    for (const map of this.v4) if (map) yield* map.values()
    yield* this.other.values()
  }
}
