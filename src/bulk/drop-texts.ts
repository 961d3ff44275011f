// `check` on a full table: once the healthy prefixes are separated, the snapshot lets go of its two big texts
// (BIRD's `show route all` and the kernel's JSON route dump) and keeps of them
// only what the report can still show: the lines of the BIRD paths it still holds, copied into one string,
// for evidence (or BIRD's whole text, when they are much of it). The routes' own strings are copied too where they
// could be views into those texts (see own-copy.ts), or the texts would stay alive through them.
import {resolvingRoutes, type OutsidePoolRoutes} from './deferred.js'
import {ipv4Values, keysHolding, prefixKey} from '../model/prefix-key.js'
import {outsidePools} from '../model/snapshot-index.js'
import {OwnCopies, ownCopy} from '../parse/own-copy.js'
import type {BirdNexthop, BirdRoute, Gateway, KernelRoute, Nexthop, Snapshot, SourceFile} from '../model/types.js'

const BIRD_ROUTES = 'birdc-show-route-all.txt'
const KERNEL_ROUTES_JSON = 'ip-j-d-route.json' // its routes are cited rendered, never by their text

/**
 * The lines of a dropped file that are still cited: blocks of consecutive lines, by line number, in one
 * string (their copy, or the file's whole text). Every object the snapshot holds from that file has its lines here.
 */
class KeptLines {
  constructor(
    private readonly text: string, // holds the blocks
    private readonly first: Int32Array, // first line of each block, ascending
    private readonly last: Int32Array, // last line of each block
    private readonly at: Int32Array, // where each block starts in `text`
    private readonly end: Int32Array, // where each block ends in `text`
  ) {}

  /** Lines [from, to] (1-based) as the file had them, `\n`-separated; undefined when they were not kept. */
  lines(from: number, to: number): string | undefined {
    const {first, last, at, text} = this
    let lo = 0
    let hi = first.length - 1
    if (hi < 0 || from < first[0]) return undefined
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (first[mid] <= from) lo = mid
      else hi = mid - 1
    }
    if (to > last[lo] || to < from) return undefined
    const blockEnd = this.end[lo]
    let start = at[lo]
    for (let l = first[lo]; l < from; l++) start = text.indexOf('\n', start) + 1
    let end = start
    for (let l = from; l <= to; l++) {
      const nl = text.indexOf('\n', end)
      if (nl < 0 || nl >= blockEnd) {
        end = blockEnd // the file ended before line `to`, as SnapshotIndex reads a whole text
        break
      }
      end = l < to ? nl + 1 : nl
    }
    return text.slice(start, end)
  }
}

/** What a parsed BIRD path holds of its file's text besides its fields (parse/bird-routes.ts ParsedBirdRoute). */
interface HeldAttributeText {
  attrText: string
}

function holdsAttributeText(r: BirdRoute): r is BirdRoute & HeldAttributeText {
  return typeof (r as Partial<HeldAttributeText>).attrText === 'string'
}

/**
 * The snapshot without the texts of its BIRD route dump and kernel JSON route dump: their entries in `files`
 * keep an empty text (the file was there) and, for the BIRD dump, the lines of its paths (`kept`). The routes
 * are changed in place: the snapshot given must not be used again. Only for a separated snapshot that nothing
 * else will read raw (check's; not a bundle's, which writes the texts).
 */
export function dropSourceTexts(snapshot: Snapshot): Snapshot {
  const birdFile = snapshot.files.find(
    (f) => f.name === BIRD_ROUTES && f.text !== undefined && f.droppedLength === undefined,
  )
  // already dropped when built with BuildOptions.consume, as check builds it
  const kernelFile = snapshot.files.find(
    (f) => f.name === KERNEL_ROUTES_JSON && f.text !== undefined && f.droppedLength === undefined,
  )
  if (birdFile === undefined && kernelFile === undefined) return snapshot

  let kept: KeptLines | undefined
  if (birdFile) kept = keepBirdLines(birdFile.text!, snapshot.bird.routes.filter((r) => r.pos.file === BIRD_ROUTES))

  const files: SourceFile[] = snapshot.files.map((f) => {
    if (f === birdFile) return {...f, text: '', kept, droppedLength: f.text!.length}
    if (f === kernelFile) return dropKernelRouteText(f, snapshot.kernelRoutes)
    return f
  })
  const d = new OwnCopies()
  const healthy = snapshot.healthy
    ? {...snapshot.healthy, bgpNextHops: snapshot.healthy.bgpNextHops.map((h) => d.str(h))}
    : undefined
  return {...snapshot, files, ...(healthy ? {healthy} : {})}
}

/**
 * The snapshot without the IPv4 routes that no pool prefix's diagnosis reads, for `check`: a route outside every
 * pool (neither in one nor holding one) is read only to resolve an address. The kernel's resolve a BGP next hop,
 * or, in turn, the gateway of a kernel route that resolves one; BIRD's are kept where they hold a BGP next hop (as
 * bulk/healthy.ts separates the paths it deferred). Every other such route goes: a full table outside the pools (a
 * route reflector's: most of a million routes) is then not indexed, nor its BIRD lines kept. The local table, IPv6
 * and any route whose destination is not a canonical IPv4 prefix stay. Its report is the snapshot's, byte for byte
 * (test/bulk/healthy.test.ts).
 */
export function withoutUnreadRoutes(snapshot: Snapshot): Snapshot {
  const outside = outsidePools(snapshot.pools)
  if (outside === undefined) return snapshot
  const kernel = snapshot.kernelRoutes
  const bird = snapshot.bird.routes
  const hops = new Set<string | undefined>(snapshot.healthy?.bgpNextHops)
  let last: string | undefined // consecutive paths mostly share their next hop's string
  for (const r of bird) {
    if (r.bgpNextHop !== last) hops.add((last = r.bgpNextHop))
    // a plain `show route`: the rules look up the path's peer
    if (r.bgpNextHop === undefined && r.from !== undefined) hops.add(r.from)
  }
  // CrossSubnet: a pool route's kernel gateways stand in for BGP next hops BIRD does not name
  // (SnapshotIndex.gatewayResolutions)
  if (snapshot.pools.some((p) => p.crossSubnet)) {
    for (const r of snapshot.kernelRoutes) {
      if (r.family !== 'inet' || r.type !== 'unicast' || outside(prefixKey(r.dst))) continue
      for (const nh of r.nexthops) if (nh.gateway?.family === 'inet') hops.add(nh.gateway.address)
    }
  }
  // BIRD's: kept where outside no pool, or where the network holds a BGP next hop
  const holdsHop = keysHolding(hops)
  const kept = (r: BirdRoute): boolean => {
    const key = prefixKey(r.prefix)
    return !outside(key) || holdsHop.has(key)
  }
  const birdRoutes = bird.every(kept) ? bird : bird.filter(kept)

  // the kernel's outside the pools, by key; kept: those that resolve a BGP next hop, or the gateway of one kept
  const keys = new Float64Array(kernel.length)
  let n = 0
  for (let j = 0; j < kernel.length; j++) {
    const r = kernel[j]
    const key = r.family === 'inet' && r.tableId !== 255 && r.type !== 'local' ? prefixKey(r.dst) : -1
    keys[j] = outside(key) ? key : -1
    if (keys[j] >= 0) n++
  }
  if (n === 0 && birdRoutes === bird) return snapshot
  const read = resolvingRoutes(kernel.length, (j) => keys[j], (j) => kernel[j].nexthops, ipv4Values(hops))
  const left = kernel.filter((_, j) => keys[j] < 0 || read[j] === 1)
  const kernelRoutes = left.length === kernel.length ? kernel : left
  if (kernelRoutes === kernel && birdRoutes === bird) return snapshot
  return {...snapshot, kernelRoutes, bird: {...snapshot.bird, routes: birdRoutes}}
}

/**
 * The kernel JSON route dump's file entry without its text, once its routes are read: the routes built from
 * it are changed in place to hold none of it (routes deferred need none: bulk/deferred.ts; those deferred
 * outside the pools or off the tunnel are made like routes built, with next-hop lists that `models` copy here too).
 */
export function dropKernelRouteText(file: SourceFile, routes: KernelRoute[], models: ReadonlyArray<Pick<OutsidePoolRoutes, 'copyNexthops'> | undefined> = []): SourceFile {
  const d = new OwnCopies()
  const hopList = kernelHopLists(d)
  for (const r of routes) if (r.pos.file === file.name) ownKernelRouteStrings(r, d, hopList)
  for (const m of models) m?.copyNexthops(hopList)
  return {...file, text: '', droppedLength: file.text?.length ?? 0}
}

/** Next-hop lists copied off a text, each once (lists are shared by many routes). */
function kernelHopLists(d: OwnCopies): (list: Nexthop[]) => Nexthop[] {
  const gateways = new Map<Gateway, Gateway>()
  const kernelHops = new Map<Nexthop[], Nexthop[]>()
  return (list: Nexthop[]): Nexthop[] => {
    let copy = kernelHops.get(list)
    if (copy === undefined) {
      copy =
        list.length === 0
          ? list
          : (Object.freeze(
              list.map((n) => {
                const out: Nexthop = {weight: n.weight, flags: d.strs(n.flags)}
                if (n.gateway) {
                  let g = gateways.get(n.gateway)
                  if (g === undefined)
                    gateways.set(n.gateway, (g = {family: n.gateway.family, address: d.str(n.gateway.address)}))
                  out.gateway = g
                }
                if (n.dev !== undefined) out.dev = d.str(n.dev)
                return Object.isFrozen(n) ? Object.freeze(out) : out
              }),
            ) as Nexthop[])
      kernelHops.set(list, copy)
    }
    return copy
  }
}

function ownKernelRouteStrings(r: KernelRoute, d: OwnCopies, hopList: (list: Nexthop[]) => Nexthop[]): void {
  r.dst = ownCopy(r.dst) // a route's own
  r.table = d.str(r.table)
  r.protocol = d.str(r.protocol)
  r.scope = d.str(r.scope)
  r.type = d.str(r.type) as KernelRoute['type']
  if (r.prefsrc !== undefined) r.prefsrc = d.str(r.prefsrc)
  if (r.tos !== undefined) r.tos = d.str(r.tos)
  r.flags = Object.isFrozen(r.flags) ? r.flags : d.strs(r.flags)
  r.nexthops = hopList(r.nexthops)
}

/**
 * What a parsed BIRD path knows of where it is in its file's text (parse/bird-routes.ts ParsedBirdRoute); -1: not
 * known.
 */
interface HeldTextAt {
  textAt: number // where its header line starts
  textEnd: number // where its last line ends
  attrAt: number // where its attribute text starts, when that is a run of the text
}

/** Copies the lines of `routes` (their `pos`) out of `text` into KeptLines, and their fields off the text. */
function keepBirdLines(text: string, routes: BirdRoute[]): KeptLines {
  const order = routes.map((_, i) => i)
  let sorted = true
  for (let i = 1; i < routes.length && sorted; i++) sorted = routes[i - 1].pos.line <= routes[i].pos.line
  if (!sorted) order.sort((a, b) => routes[a].pos.line - routes[b].pos.line)

  // the blocks: [start, end) in `text` of each route's lines, and where its attribute text starts
  const n = routes.length
  const first = new Int32Array(n)
  const last = new Int32Array(n)
  const starts = new Float64Array(n)
  const ends = new Float64Array(n)
  const blockOf = new Int32Array(n) // route -> its block
  let lineNo = 1 // a cursor: `off` is where line `lineNo` starts
  let off = 0
  let blocks = 0
  let prevLast = 0
  for (const i of order) {
    const r = routes[i]
    const {line, endLine} = r.pos
    if (line <= prevLast) {
      // a route whose lines another's block already holds (never seen in BIRD's output)
      if (endLine > last[blocks - 1])
        throw new Error(`dropSourceTexts: overlapping lines ${line}-${endLine} in ${BIRD_ROUTES}`)
      blockOf[i] = blocks - 1
      continue
    }
    const where = r as Partial<HeldTextAt>
    const at = where.textAt ?? -1
    if (at >= off && at <= text.length && (at === 0 || text.charCodeAt(at - 1) === 10)) {
      lineNo = line // read in place: where its header is, without walking the lines before it
      off = at
    }
    while (lineNo < line && off <= text.length) {
      const nl = text.indexOf('\n', off)
      off = nl < 0 ? text.length + 1 : nl + 1
      lineNo++
    }
    const start = Math.min(off, text.length)
    let end = where.textEnd ?? -1
    if (!(end >= start && (end === text.length || text.charCodeAt(end) === 10 || text.charCodeAt(end) === 13))) {
      // not read in place to its last line: its lines, walked
      end = start
      for (;;) {
        const nl = text.indexOf('\n', off)
        end = nl < 0 ? text.length : nl
        if (lineNo === endLine || nl < 0) break
        off = nl + 1
        lineNo++
      }
    }
    first[blocks] = line
    last[blocks] = endLine
    starts[blocks] = start
    ends[blocks] = end
    blockOf[i] = blocks
    blocks++
    prevLast = endLine
    off = end + 1
    lineNo = endLine + 1
  }
  let cited = 0
  for (let k = 0; k < blocks; k++) cited += ends[k] - starts[k] + 1
  if (cited * 3 > text.length) {
    // much of the text is cited (many blocks broken, and the report shows their evidence): kept whole, it costs less
    // than a copy of its cited lines made beside it (check's peak), and the routes' strings stay views into it
    const edges = (list: Float64Array): Int32Array => Int32Array.from(list.subarray(0, blocks))
    return new KeptLines(text, first.subarray(0, blocks), last.subarray(0, blocks), edges(starts), edges(ends))
  }
  const parts: string[] = []
  for (let k = 0; k < blocks; k++) parts.push(text.slice(starts[k], ends[k]))
  const keptText = parts.join('\n') // one new string: the views in `parts` go with the list
  const at = new Int32Array(blocks)
  const end = new Int32Array(blocks)
  for (let k = 0; k < blocks; k++) {
    if (k > 0) at[k] = end[k - 1] + 1
    end[k] = at[k] + (ends[k] - starts[k])
  }

  // the routes' fields (one OwnCopies per field: consecutive routes mostly repeat theirs), and their attribute
  // text as a view into the kept lines where it is a run of the text's
  const [table, dest, protocol, since, from, info, source, bgpNextHop, origin, attrs] = Array.from(
    {length: 10},
    () => new OwnCopies(),
  )
  const hopLists = new Map<BirdNexthop[], BirdNexthop[]>()
  const hops = new Map<BirdNexthop, BirdNexthop>()
  const hopList = (list: BirdNexthop[]): BirdNexthop[] => {
    let copy = hopLists.get(list)
    if (copy === undefined) {
      copy = list.length === 0 ? list : Object.freeze(list.map((h) => {
        let c = hops.get(h)
        if (c === undefined) {
          c = {...h}
          if (c.gateway !== undefined) c.gateway = ownCopy(c.gateway)
          if (c.iface !== undefined) c.iface = ownCopy(c.iface)
          if (c.mpls !== undefined) c.mpls = ownCopy(c.mpls)
          if (c.table !== undefined) c.table = ownCopy(c.table)
          hops.set(h, Object.isFrozen(h) ? Object.freeze(c) : c)
        }
        return c
      })) as BirdNexthop[]
      hopLists.set(list, copy)
    }
    return copy
  }
  for (let i = 0; i < n; i++) {
    const r = routes[i]
    const k = blockOf[i]
    // a network's own, and a primary path's header starts with it: a view into the kept lines, else a copy
    r.prefix = text.startsWith(r.prefix, starts[k]) ? keptText.slice(at[k], at[k] + r.prefix.length) : ownCopy(r.prefix)
    if (r.table !== undefined) r.table = table.str(r.table)
    r.dest = dest.str(r.dest)
    r.protocol = protocol.str(r.protocol)
    r.since = since.str(r.since)
    if (r.from !== undefined) r.from = from.str(r.from)
    r.info = info.str(r.info)
    if (r.source !== undefined) r.source = source.str(r.source)
    if (r.bgpNextHop !== undefined) r.bgpNextHop = bgpNextHop.str(r.bgpNextHop)
    if (r.origin !== undefined) r.origin = origin.str(r.origin)
    r.nexthops = hopList(r.nexthops)
    if (holdsAttributeText(r) && r.attrText.length > 0) {
      const a = (r as Partial<HeldTextAt>).attrAt ?? -1
      if (a >= starts[k] && a + r.attrText.length <= ends[k]) {
        const from = at[k] + (a - starts[k])
        r.attrText = keptText.slice(from, from + r.attrText.length)
      } else {
        r.attrText = attrs.str(r.attrText) // lines joined: a string of its own already
      }
    }
  }
  return new KeptLines(keptText, first.subarray(0, blocks), last.subarray(0, blocks), at, end)
}
