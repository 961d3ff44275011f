// Longest-prefix match over the kernel FIB, per table, the way the kernel looks a destination up:
// the rules' tables in order (local, main, default unless `ip rule` says otherwise), the longest
// matching prefix, then the lowest metric. Lookups index prefixes by length, so one lookup costs
// at most one probe per prefix length present in the table, whatever the table size.
import ipaddr from 'ipaddr.js'

import {ipv4Network, ipv4Value, lengthValue, prefixContains} from './prefix.js'
import type {Family, IpRule, KernelRoute} from './types.js'

// rt_tables ids iproute2 knows without /etc/iproute2/rt_tables.
const TABLE_IDS: Record<string, number> = {unspec: 0, default: 253, main: 254, local: 255}

/** Kernel table id for the name ip prints: main 254, local 255, default 253, "1000" 1000; unknown names -1. */
export function tableIdOf(table: string): number {
  if (table in TABLE_IDS) return TABLE_IDS[table]
  if (/^\d+$/.test(table)) {
    const n = Number(table)
    return n <= 0xffffffff ? n : -1
  }
  return -1
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

/** An IPv6 key of the first `len` bits of an address, as hex. */
function keyOf(bytes: number[], len: number): string {
  let key = ''
  const full = len >> 3
  for (let i = 0; i < full; i++) key += bytes[i].toString(16).padStart(2, '0')
  const rest = len & 7
  if (rest) key += ((bytes[full] >> (8 - rest)) << (8 - rest)).toString(16).padStart(2, '0')
  return `${len}/${key}`
}

/** The IPv4 key within one prefix length: the network as a signed 32-bit integer (a small integer to V8, no boxing). */
function v4Key(v: number, len: number): number {
  return ipv4Network(v, len) | 0
}

function addressBytes(address: string): number[] | undefined {
  try {
    return ipaddr.parse(address).toByteArray()
  } catch {
    return undefined
  }
}

// A prefix's routes: the route itself when it is the only one (most are: a list each would cost memory).
type Routes = KernelRoute | KernelRoute[]

interface Table {
  v4: Array<Map<number, Routes> | undefined> // by prefix length, then v4Key
  v6: Map<string, Routes>
  v4Lengths: number[] // prefix lengths present, longest first
  v6Lengths: number[]
}

function push<K>(map: Map<K, Routes>, key: K, route: KernelRoute): void {
  const known = map.get(key)
  if (known === undefined) map.set(key, route)
  else if (Array.isArray(known)) known.push(route)
  else map.set(key, [known, route])
}

function list(routes: Routes | undefined): KernelRoute[] {
  return routes === undefined ? NO_ROUTES : Array.isArray(routes) ? routes : [routes]
}

export class Fib {
  private readonly tables = new Map<number, Table>()
  readonly tableOrder: number[] // the tables of the rules without a `to` selector, in priority order
  readonly policy: PolicyRule[]

  constructor(routes: KernelRoute[], rules: IpRule[] = []) {
    const v6Lengths = new Map<number, Set<number>>()
    let last: Table | undefined // routes come grouped by table: one table lookup per run of them
    let lastId = -1
    for (const route of routes) {
      if (route.type === 'multicast') continue
      if (route.tableId !== lastId || last === undefined) {
        lastId = route.tableId
        last = this.tables.get(lastId)
        if (last === undefined) this.tables.set(lastId, (last = {v4: [], v6: new Map(), v4Lengths: [], v6Lengths: []}))
      }
      const table = last
      const slash = route.dst.indexOf('/')
      const v = ipv4Value(route.dst, 0, slash)
      if (v >= 0) {
        const len = lengthValue(route.dst, slash + 1, 32)
        if (len < 0) continue // not a canonical prefix: the parsers never make one
        push((table.v4[len] ??= new Map()), v4Key(v, len), route)
        continue
      }
      const len = Number(route.dst.slice(slash + 1))
      const bytes = addressBytes(route.dst.slice(0, slash))
      if (!bytes || bytes.length !== 16) continue
      push(table.v6, keyOf(bytes, len), route)
      let seen = v6Lengths.get(lastId)
      if (seen === undefined) v6Lengths.set(lastId, (seen = new Set()))
      seen.add(len)
    }
    for (const [id, table] of this.tables) {
      // the IPv4 lengths present are the maps that exist
      for (let len = table.v4.length - 1; len >= 0; len--) if (table.v4[len] !== undefined) table.v4Lengths.push(len)
      table.v6Lengths = [...(v6Lengths.get(id) ?? [])].sort((a, b) => b - a)
    }
    this.policy = policyOf(rules)
    this.tableOrder = this.policy.filter((r) => r.to === undefined && r.tableId !== undefined).map((r) => r.tableId!)
  }

  /** The ids of the tables that hold routes. */
  tableIds(): number[] {
    return [...this.tables.keys()]
  }

  /**
   * The rules a destination lookup of `dst` (an address or a prefix: all of it must lie in a rule's `to`) walks,
   * in priority order: the kernel's own three when the snapshot has none.
   */
  rulesFor(dst: string): PolicyRule[] {
    if (!this.policy.some((r) => r.to !== undefined)) return this.policy
    return this.policy.filter((r) => r.to === undefined || prefixContains(r.to, dst))
  }

  /** Do rules other than the kernel's own three (0 local, 32766 main, 32767 default) decide lookups here? */
  get policyRouting(): boolean {
    return this.policy.some((r) => !r.builtin)
  }

  /** Routes in one table whose dst is exactly `prefix`. */
  exact(prefix: string, tableId: number, family: Family): KernelRoute[] {
    const slash = prefix.indexOf('/')
    const len = Number(prefix.slice(slash + 1))
    if (family === 'inet') {
      const v = ipv4Value(prefix, 0, slash)
      return v < 0 ? NO_ROUTES : this.exactV4(v, len, tableId)
    }
    const table = this.tables.get(tableId)
    if (!table) return NO_ROUTES
    const bytes = addressBytes(prefix.slice(0, slash))
    return bytes && bytes.length === 16 ? list(table.v6.get(keyOf(bytes, len))) : NO_ROUTES
  }

  /** Routes in one table whose dst is exactly the IPv4 prefix v/len (v its network). */
  exactV4(v: number, len: number, tableId: number): KernelRoute[] {
    return list(this.tables.get(tableId)?.v4[len]?.get(v4Key(v, len)))
  }

  /** Every IPv4 prefix of one table: its network (unsigned), length and routes (one, or a list when several). */
  forEachV4(
    tableId: number,
    each: (network: number, len: number, routes: KernelRoute | readonly KernelRoute[]) => void,
  ): void {
    const v4 = this.tables.get(tableId)?.v4
    if (v4 === undefined) return
    for (let len = 0; len < v4.length; len++) v4[len]?.forEach((routes, key) => each(key >>> 0, len, routes))
  }

  /** Longest-prefix match in one table. */
  lookupInTable(address: string, tableId: number): KernelRoute[] {
    const table = this.tables.get(tableId)
    if (!table) return []
    const v = ipv4Value(address)
    if (v >= 0) {
      for (const len of table.v4Lengths) {
        const found = usable(list(table.v4[len]?.get(v4Key(v, len))))
        if (found) return found
      }
      return []
    }
    const bytes = addressBytes(address)
    if (!bytes || bytes.length !== 16) return []
    for (const len of table.v6Lengths) {
      const found = usable(list(table.v6.get(keyOf(bytes, len))))
      if (found) return found
    }
    return []
  }

  /** What the kernel does with a packet to `address`: the rules in order (their tables; `throw` moves on). */
  lookup(address: string, tables?: number[]): Lookup {
    const walk = tables ?? this.rulesFor(address).map((r) => r.tableId ?? -1)
    for (const tableId of walk) {
      if (tableId < 0) continue // a rule that is no table lookup (a terminal action is the kernel's, not a route)
      const candidates = this.lookupInTable(address, tableId)
      const route = candidates[0]
      if (!route || route.type === 'throw') continue
      return {address, route, candidates, tableId, reachable: route.type === 'unicast' || route.type === 'local'}
    }
    return {address, candidates: [], reachable: false}
  }
}

/** A rule as a destination lookup walks it: its `to` selector, its table (a lookup rule) and where it was read. */
export interface PolicyRule {
  priority: number
  to?: string
  tableId?: number
  builtin: boolean // the kernel's own: 0 lookup local, 32766 lookup main, 32767 lookup default
  rule?: IpRule
}

const BUILTIN: PolicyRule[] = [
  {priority: 0, tableId: 255, builtin: true},
  {priority: 32766, tableId: 254, builtin: true},
  {priority: 32767, tableId: 253, builtin: true},
]

/**
 * The rules a destination lookup can match, in priority order: a rule with a selector a plain lookup does not satisfy
 * (iif, fwmark, a `from` other than all, `not`, ...) is skipped, as is one that is neither a lookup nor terminal.
 */
function policyOf(rules: IpRule[]): PolicyRule[] {
  if (rules.length === 0) return BUILTIN
  const out: PolicyRule[] = []
  for (const r of [...rules].sort((a, b) => a.priority - b.priority)) {
    if (r.otherSelectors || r.from !== undefined) continue
    if (r.action !== 'lookup' && r.action !== 'blackhole' && r.action !== 'unreachable' && r.action !== 'prohibit')
      continue
    const tableId = r.action === 'lookup' && r.table !== undefined ? tableIdOf(r.table) : undefined
    if (r.action === 'lookup' && (tableId === undefined || tableId < 0)) continue
    const builtin = r.to === undefined && BUILTIN.some((b) => b.priority === r.priority && b.tableId === tableId)
    out.push({
      priority: r.priority,
      ...(r.to !== undefined ? {to: r.to} : {}),
      ...(tableId !== undefined ? {tableId} : {}),
      builtin,
      rule: r,
    })
  }
  return out
}

const NO_ROUTES = Object.freeze([]) as unknown as KernelRoute[]

function usable(routes: KernelRoute[]): KernelRoute[] | undefined {
  if (routes.length === 0) return undefined
  const found = routes.filter((r) => TERMINAL.has(r.type) || r.type === 'throw')
  return found.length > 0 ? found.sort((a, b) => a.metric - b.metric) : undefined
}
