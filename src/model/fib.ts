// Longest-prefix match over the kernel FIB, per table, the way the kernel looks a destination up:
// the rules' tables in order (local, main, default unless `ip rule` says otherwise), the longest
// matching prefix, then the lowest metric. Lookups index prefixes by length, so one lookup costs
// at most 33 (IPv4) or 129 (IPv6) map probes whatever the table size.
import ipaddr from 'ipaddr.js'

import type {Family, IpRule, KernelRoute} from './types.js'

const TABLE_IDS: Record<string, number> = {local: 255, main: 254, default: 253}

export function tableIdOf(table: string): number {
  if (table in TABLE_IDS) return TABLE_IDS[table]
  const n = Number(table)
  return Number.isInteger(n) ? n : -1
}

// Types that stop a lookup: the packet is delivered, dropped or rejected there.
const TERMINAL = new Set(['unicast', 'local', 'broadcast', 'blackhole', 'unreachable', 'prohibit', 'anycast'])

export interface Lookup {
  address: string
  route?: KernelRoute // the route the kernel uses (lowest metric of the longest match)
  candidates: KernelRoute[] // every route at that prefix in that table
  tableId?: number
  reachable: boolean // unicast or local: the kernel can send (or deliver) it
}

/** A key of the first `len` bits of an address: a number for IPv4, a hex string for IPv6. */
function keyOf(bytes: number[], len: number): string {
  let key = ''
  const full = len >> 3
  for (let i = 0; i < full; i++) key += bytes[i].toString(16).padStart(2, '0')
  const rest = len & 7
  if (rest) key += ((bytes[full] >> (8 - rest)) << (8 - rest)).toString(16).padStart(2, '0')
  return `${len}/${key}`
}

function addressBytes(address: string): number[] | undefined {
  try {
    return ipaddr.parse(address).toByteArray()
  } catch {
    return undefined
  }
}

export class Fib {
  // tableId -> family -> key -> routes
  private readonly index = new Map<number, Map<string, KernelRoute[]>>()
  private readonly lengths = new Map<string, Set<number>>() // `${tableId}|${family}` -> prefix lengths present
  readonly tableOrder: number[]

  constructor(routes: KernelRoute[], rules: IpRule[] = []) {
    for (const route of routes) {
      if (route.type === 'multicast') continue
      const slash = route.dst.indexOf('/')
      const bytes = addressBytes(route.dst.slice(0, slash))
      if (!bytes) continue
      const len = Number(route.dst.slice(slash + 1))
      let table = this.index.get(route.tableId)
      if (!table) this.index.set(route.tableId, (table = new Map()))
      const key = `${route.family}|${keyOf(bytes, len)}`
      const list = table.get(key)
      if (list) list.push(route)
      else table.set(key, [route])
      const lk = `${route.tableId}|${route.family}`
      let set = this.lengths.get(lk)
      if (!set) this.lengths.set(lk, (set = new Set()))
      set.add(len)
    }
    for (const [lk, set] of this.lengths) this.lengths.set(lk, new Set([...set].sort((a, b) => b - a)))
    const fromRules = rules
      .filter((r) => r.table !== undefined && /^from all lookup /.test(r.text))
      .sort((a, b) => a.priority - b.priority)
      .map((r) => tableIdOf(r.table!))
      .filter((id) => id >= 0)
    this.tableOrder = fromRules.length > 0 ? fromRules : [255, 254, 253]
  }

  /** Routes in one table whose dst is exactly `prefix`. */
  exact(prefix: string, tableId: number, family: Family): KernelRoute[] {
    const slash = prefix.indexOf('/')
    const bytes = addressBytes(prefix.slice(0, slash))
    if (!bytes) return []
    return this.index.get(tableId)?.get(`${family}|${keyOf(bytes, Number(prefix.slice(slash + 1)))}`) ?? []
  }

  /** Longest-prefix match in one table. */
  lookupInTable(address: string, tableId: number): KernelRoute[] {
    const bytes = addressBytes(address)
    if (!bytes) return []
    const family: Family = bytes.length === 4 ? 'inet' : 'inet6'
    const table = this.index.get(tableId)
    const lengths = this.lengths.get(`${tableId}|${family}`)
    if (!table || !lengths) return []
    for (const len of lengths) {
      const routes = table.get(`${family}|${keyOf(bytes, len)}`)
      if (routes) {
        const usable = routes.filter((r) => TERMINAL.has(r.type) || r.type === 'throw')
        if (usable.length > 0) return [...usable].sort((a, b) => a.metric - b.metric)
      }
    }
    return []
  }

  /** What the kernel does with a packet to `address`: the tables in rule order, `throw` moves on. */
  lookup(address: string, tables: number[] = this.tableOrder): Lookup {
    for (const tableId of tables) {
      const candidates = this.lookupInTable(address, tableId)
      const route = candidates[0]
      if (!route || route.type === 'throw') continue
      return {address, route, candidates, tableId, reachable: route.type === 'unicast' || route.type === 'local'}
    }
    return {address, candidates: [], reachable: false}
  }
}
