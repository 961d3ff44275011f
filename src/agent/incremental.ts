// What a change of the node touches, and the diagnosis of only those prefixes. A route notification names its
// prefix; a change of BIRD's routes shows as a changed block of `show route all`. Such a prefix is diagnosed again
// by check's own walk (report/report.ts checkLines) over a snapshot of what its chain reads: BIRD's paths there
// (`show route PREFIX all`), the kernel's routes at it and those holding its next hops (netlink/route-store.ts,
// kept from the notifications) and the node-wide sources of the last full collection. What every prefix depends
// on (the tunnel device or an uplink, an address, a rule, an underlay route to a next hop, a sysctl, a BGP session)
// asks for a full diagnosis instead, which recomputes the host findings too. Another device's change touches the
// prefixes of its routes, or nothing.
import {BirdError, BirdSocket, findBirdSocket} from '../collect/bird-socket.js'
import {SNAPSHOT_FILES} from '../collect/snapshot-files.js'
import {keyPrefix, networkKey, prefixKey} from '../model/prefix-key.js'
import {SnapshotIndex, ipv4PoolOf, ipv4Pools, type Ipv4Pool} from '../model/snapshot-index.js'
import {ipv4Network, ipv4Value} from '../model/prefix.js'
import type {SourceFile} from '../model/types.js'
import type {KernelEvent} from '../netlink/events.js'
import type {KernelRouteStore, LinkChange} from '../netlink/route-store.js'
import {ipRouteJsonText} from '../netlink/routes-for.js'
import {parseBirdRoutes} from '../parse/bird-routes.js'
import {snapshotFrom, type LoadedSource, type SourceOptions} from '../services/load.js'
import {checkLines, type PrefixLine} from '../report/report.js'

// the table-wide sources a prefix's diagnosis reads for itself; every other one is kept from the full collection
const PER_PREFIX: ReadonlySet<string> = new Set([
  SNAPSHOT_FILES.ipRouteJson,
  SNAPSHOT_FILES.ipRouteText,
  SNAPSHOT_FILES.birdRoutes,
])
// BIRD's reply to `show route PREFIX all` when it holds nothing there
const NETWORK_NOT_FOUND = 8001
// prefixes diagnosed over one snapshot
const SLICE = 500

/** What the last full diagnosis leaves for diagnosing single prefixes. */
export interface NodeBase {
  // the node-wide sources as collected: links, addresses, rules, sysctls, BIRD's status, protocols, config
  files: SourceFile[]
  origin: LoadedSource['origin']
  v4Pools: Ipv4Pool[]
  v6Pools: boolean
  // the IPv4 BGP next hops of the pool paths and the sessions' neighbours: what underlay routes resolve
  nextHops: number[]
  tunnelDev: string
  uplinks: string[] // the devices the kernel reaches those next hops through
}

/** The node-wide sources among a collection's files (copies: the texts stay when the collection's are given up). */
export function nodeWideFiles(files: readonly SourceFile[]): SourceFile[] {
  return files.filter((f) => !PER_PREFIX.has(f.name)).map((f) => ({...f}))
}

export function baseOf(files: SourceFile[], origin: LoadedSource['origin'], ctx: SnapshotIndex): NodeBase {
  const hops = new Set<number>()
  const uplinks = new Set<string>()
  const resolutions = [...ctx.poolResolutions()]
  for (const p of ctx.bgpProtocols)
    if (p.neighborAddress !== undefined) resolutions.push(ctx.resolve(p.neighborAddress))
  for (const r of resolutions) {
    hops.add(ipv4Value(r.bgpNextHop))
    for (const n of r.lookup.route?.nexthops ?? []) if (n.dev) uplinks.add(n.dev)
  }
  hops.delete(-1)
  return {
    files,
    origin,
    v4Pools: ipv4Pools(ctx.snapshot.pools),
    v6Pools: ctx.snapshot.pools.some((p) => !p.cidr.includes('.')),
    nextHops: [...hops],
    tunnelDev: ctx.snapshot.tunnelDev,
    uplinks: [...uplinks],
  }
}

/** What `watch` is to diagnose again: these prefixes, or (with a reason) the whole node. */
export interface Touched {
  prefixes: Set<string>
  full?: string
}

/** Marks in `into` what kernel notifications touch. */
export function touchedBy(events: readonly KernelEvent[], base: NodeBase, into: Touched): void {
  for (const e of events) {
    if (e.kind === 'route') {
      if (e.family !== 'inet') {
        if (base.v6Pools) into.full ??= `IPv6 route ${e.dst} changed`
        continue
      }
      if (e.table === 255) continue // the node's own addresses: address notifications say what changed
      const slash = e.dst.indexOf('/')
      touchRoute(ipv4Value(e.dst, 0, slash), Number(e.dst.slice(slash + 1)), e.dst, base, into)
    } else if (e.kind === 'address') {
      // an IPv6 link-local address (every new device has one) is nothing a diagnosis reads
      if (!e.address?.startsWith('fe80:')) into.full ??= `address ${e.address ?? ''} changed`.replace(/ {2}/, ' ')
    }
    else if (e.kind === 'rule') into.full ??= 'a routing rule changed'
    // links: touchedByLinks, from what the route store knows of each device
  }
}

/**
 * A changed IPv4 route at network `v`/`len`: its prefix when in a pool; everything when a next hop's lookup can find
 * it.
 */
function touchRoute(v: number, len: number, dst: string | undefined, base: NodeBase, into: Touched): void {
  if (ipv4PoolOf(base.v4Pools, v, len)) into.prefixes.add(dst ?? keyPrefix(networkKey(v, len)))
  else if (base.nextHops.some((n) => ipv4Network(n, len) === v)) {
    into.full ??= `route ${dst ?? keyPrefix(networkKey(v, len))} (next-hop resolution) changed`
  }
}

/** Marks in `into` what changed routes (route-store.ts keys) touch. */
export function touchedByKeys(keys: Iterable<number>, base: NodeBase, into: Touched): void {
  for (const key of keys) {
    const len = key % 64
    touchRoute((key - len) / 64, len, undefined, base, into)
  }
}

/**
 * Marks in `into` what changed devices touch: the tunnel device and the devices next hops are reached through
 * (uplinks) everything; another device the prefixes of its routes (a rename here; routes flushed or marked by the
 * kernel when the store is read again, touchedByKeys); a device without routes nothing.
 */
export function touchedByLinks(
  links: readonly LinkChange[],
  base: NodeBase,
  store: KernelRouteStore,
  into: Touched,
): void {
  for (const l of links) {
    const name = l.names.find((n) => n === base.tunnelDev || base.uplinks.includes(n))
    if (name !== undefined) into.full ??= `link ${name} changed`
    else if (l.routes > 0 && l.names.length > 1 && into.full === undefined) {
      touchedByKeys(store.keysOnDevices(new Set([l.ifindex])), base, into)
    }
  }
}

/** FNV-1a of each network's lines of a `show route all` text: IPv4 networks by key (ascending), others by text. */
export interface BlockHashes {
  keys: Float64Array
  hashes: Uint32Array
  other: Map<string, number>
}

/** What tells a changed network: birdBlockHashes of two texts differ there. */
export function birdBlockHashes(text: string): BlockHashes {
  const out = new Map<number | string, number>()
  let key: number | string | undefined
  let h = 0
  const flush = () => {
    if (key !== undefined) out.set(key, (h ^ (out.get(key) ?? 0)) >>> 0)
  }
  for (let start = 0; start < text.length;) {
    let end = text.indexOf('\n', start)
    if (end < 0) end = text.length
    const c0 = text.charCodeAt(start)
    if (c0 !== 32 && c0 !== 9 && end > start) {
      // a network's header: its prefix first; any other unindented line (a table's name, the banner) ends it
      flush()
      key = undefined
      const sp = text.indexOf(' ', start)
      const first = text.slice(start, sp < 0 || sp > end ? end : sp)
      if (first.includes('/')) {
        const k = prefixKey(first)
        key = k >= 0 ? k : first
        h = 0x811c9dc5
      }
    }
    if (key !== undefined) {
      for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
      h = Math.imul(h ^ 10, 0x01000193)
    }
    start = end + 1
  }
  flush()
  // sorted arrays, not a Map: a full table's million entries cross from a worker and are compared without one
  const other = new Map<string, number>()
  const unsorted: number[] = []
  for (const [k, v] of out) {
    if (typeof k === 'string') other.set(k, v)
    else unsorted.push(k)
  }
  const keys = Float64Array.from(unsorted).sort()
  const hashes = new Uint32Array(keys.length)
  for (let i = 0; i < keys.length; i++) hashes[i] = out.get(keys[i])!
  return {keys, hashes, other}
}

/** The pool prefixes whose blocks differ between two birdBlockHashes (added, changed or gone). */
export function changedBlocks(before: BlockHashes, after: BlockHashes, base: NodeBase): string[] {
  const out: string[] = []
  const add = (key: number) => {
    const len = key % 64
    if (ipv4PoolOf(base.v4Pools, (key - len) / 64, len)) out.push(keyPrefix(key))
  }
  const [a, b] = [before.keys, after.keys]
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i] < b[j])) add(a[i++])
    else if (i >= a.length || b[j] < a[i]) add(b[j++])
    else {
      if (before.hashes[i] !== after.hashes[j]) add(a[i])
      i++
      j++
    }
  }
  if (base.v6Pools) {
    for (const [key, h] of after.other) if (before.other.get(key) !== h) out.push(key)
    for (const key of before.other.keys()) if (!after.other.has(key)) out.push(key)
  }
  return out
}

/**
 * check's lines of `prefixes` (canonical), diagnosed over what their chains read; a prefix without a line is held by
 * nothing now. `{full}` when they cannot be diagnosed alone (BIRD's socket fails: the whole node is, with that
 * failure).
 */
export async function diagnosePrefixes(
  prefixes: string[],
  base: NodeBase,
  store: KernelRouteStore,
  source: SourceOptions,
  fixProtocol: string,
): Promise<{lines: PrefixLine[]} | {full: string}> {
  // a slice at a time: what one slice's snapshot holds is garbage before the next is read, and the thread is free
  // between
  const lines: PrefixLine[] = []
  for (let i = 0; i < prefixes.length; i += SLICE) {
    const r = await diagnoseSlice(prefixes.slice(i, i + SLICE), base, store, source, fixProtocol)
    if ('full' in r) return r
    for (const l of r.lines) lines.push(l)
  }
  return {lines}
}

async function diagnoseSlice(prefixes: string[], base: NodeBase, store: KernelRouteStore, source: SourceOptions,
  fixProtocol: string): Promise<{lines: PrefixLine[]} | {full: string}> {
  let text: string
  try {
    text = await birdPathsAt(prefixes, source)
  } catch (error) {
    return {full: `BIRD's socket: ${(error as Error).message}`}
  }
  const addresses = new Set<string>()
  try {
    for (const p of parseBirdRoutes(text)) {
      if (p.bgpNextHop !== undefined) addresses.add(p.bgpNextHop)
      if (p.from !== undefined) addresses.add(p.from)
    }
  } catch (error) {
    return {full: `BIRD's paths: ${(error as Error).message}`}
  }
  const routes = store.routesFor({prefixes, addresses: [...addresses]})
  const files: SourceFile[] = [
    ...base.files,
    {name: SNAPSHOT_FILES.ipRouteJson, text: ipRouteJsonText(routes), exitStatus: 0},
    {name: SNAPSHOT_FILES.birdRoutes, text, exitStatus: 0},
  ]
  const ctx = new SnapshotIndex(await snapshotFrom({files, origin: base.origin}, source), {
    evidence: false,
    texts: true,
    fixProtocol,
  })
  return {lines: checkLines(ctx, prefixes, {plans: false})}
}

/** BIRD's paths at each prefix, as birdc prints `show route PREFIX all`, one after the other. */
async function birdPathsAt(prefixes: string[], source: SourceOptions): Promise<string> {
  const bird = await BirdSocket.connect(findBirdSocket(source.birdSocket), {timeoutMs: 5000})
  try {
    let text = `${bird.hello}\n`
    for (const p of prefixes) {
      try {
        text += await bird.command(`show route ${p} all`)
      } catch (error) {
        if (!(error instanceof BirdError && error.birdCode === NETWORK_NOT_FOUND)) throw error
      }
    }
    return text
  } finally {
    bird.close()
  }
}
