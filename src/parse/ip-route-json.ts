// `ip -j -d route show table all` (and `ip -j route`, which omits defaults) -> KernelRoute[].
//
// Two paths with the same result. The generic one JSON.parse's the array (in pieces when large) and reads
// each element through `Fields`. A full table is a million routes on one line, where the parsed objects
// cost more than the parse, so such a line is first read by a scanner for what iproute2 prints: it reads
// the text directly, and a route that repeats an earlier route's text but for its addresses (most of a
// full table) costs little more than comparing that text. Anything else goes back to the generic path:
// one element when it is merely unusual (escapes, nested values), the whole file when anything is wrong,
// so results and error messages never depend on which path ran.
import {prefixKey} from '../model/prefix-key.js'
import {ParseError} from '../model/errors.js'
import {ipv4Value} from '../model/prefix.js'
import type {Family, KernelRoute, Nexthop, SourcePos} from '../model/types.js'
import {
  Fields,
  buildRoute,
  buildRouteLike,
  isRecord,
  forEachJsonElement,
  type RawGateway,
  type RawNexthop,
  type RawRoute,
} from './ip-common.js'

/**
 * Where a scan sends, unbuilt, the routes of BIRD's tunnel shape through `tunnelDev` (src/bulk keeps them as numbers).
 * `add` gets the route's prefix key, its gateway as a number, its metric and its place among the file's routes;
 * false: not kept, the route is built as usual.
 */
export interface TunnelRouteSink {
  readonly tunnelDev: string
  readonly size: number
  add(key: number, gateway: number, metric: number, ordinal: number): boolean
  /**
   * BIRD's routes off the tunnel (`proto bird`, table main, unicast with no next hop through `tunnelDev`, or
   * `unreachable`), each like an earlier route of its shape; false: not kept, the route is built as usual.
   */
  addOffTunnel(key: number, metric: number, like: KernelRoute, nexthops: Nexthop[], ordinal: number): boolean
  clear(): void
}

/** Where a scan sends, unbuilt, IPv4 routes outside every pool: each like an earlier route of its shape. */
export interface OutsideRouteSink {
  readonly size: number
  outside(key: number): boolean
  add(key: number, metric: number, like: KernelRoute, nexthops: Nexthop[], ordinal: number): void
  clear(): void
}

export interface IpRouteParseOptions {
  /** Family of a route whose family nothing on it reveals (`default dev wg0`): e.g. inet6 for `ip -6` output. */
  family?: Family
  /**
   * Where to defer (leave unbuilt) the routes of BIRD's tunnel shape (see bulk/deferred.ts) through its
   * device; they are then not in the list returned. Only a scanned file defers any.
   */
  deferred?: TunnelRouteSink
  /**
   * For `check`: where to defer (leave unbuilt) IPv4 routes outside every pool (bulk/deferred.ts); they are then not
   * in the list returned either. Only a scanned file defers any, and only routes of a shape already built.
   */
  outsidePool?: OutsideRouteSink
}

export interface GenericParseOptions extends IpRouteParseOptions {
  /** Size of the pieces a large one-line array is JSON.parse'd in; tests lower it. */
  jsonPiece?: number
}

export function parseIpRouteJson(
  text: string,
  file = 'ip-j-d-route.json',
  opts: IpRouteParseOptions = {},
): KernelRoute[] {
  return scanIpRouteJson(text, file, opts) ?? parseIpRouteJsonGeneric(text, file, opts)
}

/**
 * The fast path alone: what parseIpRouteJson returns, or undefined when the text is not iproute2's
 * one-line array or anything in it is wrong (the generic path then reads it, and reports what is wrong).
 */
export function scanIpRouteJson(
  text: string,
  file = 'ip-j-d-route.json',
  opts: IpRouteParseOptions = {},
): KernelRoute[] | undefined {
  const span = oneLineArray(text)
  if (span === undefined) return undefined
  let routes: KernelRoute[] | undefined
  try {
    routes = scanRoutes(text, span.open, span.close, {file, line: 1, endLine: 1}, opts)
  } catch {
    // a route the model rejects (type, dst, gateway): the generic path finds the same one, or a JSON
    // error it reports first
  }
  if (routes === undefined) {
    opts.deferred?.clear()
    opts.outsidePool?.clear()
  }
  return routes
}

/** The reference path: JSON.parse, then typed field reads. */
export function parseIpRouteJsonGeneric(
  text: string,
  file = 'ip-j-d-route.json',
  opts: GenericParseOptions = {},
): KernelRoute[] {
  const routes: KernelRoute[] = []
  forEachJsonElement(
    text,
    file,
    'routes',
    (value, pos) => routes.push(routeOf(value, pos, opts.family)),
    opts.jsonPiece,
  )
  return routes
}

function routeOf(value: unknown, pos: SourcePos, family: Family | undefined): KernelRoute {
  if (!isRecord(value)) throw new ParseError(pos.file, pos.line, 'a route object', JSON.stringify(value))
  const f = new Fields(value, pos, 'route')
  const raw: RawRoute = {
    type: f.str('type'),
    dst: f.reqStr('dst'),
    gateway: rawGateway(f),
    dev: f.str('dev'),
    table: f.name('table'),
    protocol: f.name('protocol'),
    scope: f.name('scope'),
    metric: f.num('metric'),
    prefsrc: f.str('prefsrc'),
    tos: f.name('tos'),
    pref: f.str('pref'),
    flags: f.strs('flags') ?? [],
    nexthops: f.list('nexthops')?.map((nh) => rawNexthop(nh, pos)),
  }
  return buildRoute(raw, pos, family)
}

function rawGateway(f: Fields): RawGateway | undefined {
  const gw = f.str('gateway')
  if (gw !== undefined) return {host: gw}
  const via = f.rec('via')
  if (via === undefined) return undefined
  const v = new Fields(via, f.pos, 'via')
  return {family: v.str('family'), host: v.reqStr('host')}
}

function rawNexthop(value: unknown, pos: SourcePos): RawNexthop {
  if (!isRecord(value))
    throw new ParseError(pos.file, pos.line, 'a next hop object in "nexthops"', JSON.stringify(value))
  const f = new Fields(value, pos, 'nexthop')
  const nh: RawNexthop = {flags: f.strs('flags') ?? []}
  const gw = rawGateway(f)
  if (gw) nh.gateway = gw
  const dev = f.str('dev')
  if (dev !== undefined) nh.dev = dev
  const weight = f.num('weight')
  if (weight !== undefined) nh.weight = weight
  return nh
}

// ---------------------------------------------------------------- the scanner for iproute2's one-line output

const QUOTE = 34
const COMMA = 44
const COLON = 58
const LBRACKET = 91
const BACKSLASH = 92
const RBRACKET = 93
const LBRACE = 123
const RBRACE = 125

/**
 * Offsets of the `[` and `]` of a text that may be one JSON array on one line: JSON whitespace around it, no
 * newline before it; else undefined. (A newline inside it is left for scanRoutes to find: it reads none.)
 */
function oneLineArray(text: string): {open: number; close: number} | undefined {
  let open = 0
  while (open < text.length && isBlank(text.charCodeAt(open))) open++
  let close = text.length - 1
  while (close > open && (isBlank(text.charCodeAt(close)) || text.charCodeAt(close) === 10)) close--
  if (text.charCodeAt(open) !== LBRACKET || text.charCodeAt(close) !== RBRACKET || close === open) return undefined
  return {open, close}
}

// JSON whitespace other than a newline (a newline before the array would move it off line 1)
function isBlank(c: number): boolean {
  return c === 32 || c === 9 || c === 13
}

// Thrown when the text leaves what the tokenizer reads; never escapes scanRoutes.
const OUTSIDE = new Error('outside the scanned subset')

/**
 * Every route of the one-line array text[open..close], or undefined when the generic path must read the
 * file (bad JSON or anything the scanner cannot place). Elements the scanner declines are JSON.parse'd
 * one by one and read as the generic path reads them. Throws what buildRoute throws.
 */
function scanRoutes(
  text: string,
  open: number,
  close: number,
  pos: SourcePos,
  {family, deferred, outsidePool}: IpRouteParseOptions,
): KernelRoute[] | undefined {
  const routes: KernelRoute[] = []
  // a route's place among all of the file's, built or deferred
  const ordinal = (): number => routes.length + (deferred?.size ?? 0) + (outsidePool?.size ?? 0)
  const scanner = new RouteScanner(text)
  let i = skipBlanks(text, open + 1)
  if (text.charCodeAt(i) === RBRACKET) return i === close ? routes : undefined
  for (;;) {
    const start = i
    let read = false
    try {
      scanner.route(start)
      i = scanner.i
      read = true
    } catch (error) {
      if (error !== OUTSIDE) throw error
    }
    if (read) {
      const shape = scanner.shape
      // BIRD's tunnel routes: deferred, not built (the first of a shape is built: it decides the shape)
      if (
        deferred === undefined ||
        shape?.like === undefined ||
        !(shape.tunnel ??= isTunnelShape(shape, deferred.tunnelDev)) ||
        !deferred.add(scanner.dstKey(), scanner.gatewayValue(), scanner.metric ?? 0, ordinal())
      ) {
        if (
          !(deferred !== undefined && deferOffTunnel(scanner, deferred, ordinal())) &&
          (outsidePool === undefined || !deferOutsidePool(scanner, outsidePool, ordinal()))
        ) {
          routes.push(scannedRoute(scanner, pos, family))
        }
      }
    } else {
      // escapes, nested values, blanks, wrong types: this element as the generic path reads it. Not over
      // several lines: the generic path gives those routes their own lines.
      if (text.charCodeAt(start) !== LBRACE) return undefined
      const end = objectEnd(text, start)
      if (end < 0) return undefined
      const element = text.slice(start, end)
      if (element.includes('\n')) return undefined
      let value: unknown
      try {
        value = JSON.parse(element)
      } catch {
        return undefined
      }
      routes.push(routeOf(value, pos, family))
      i = end
    }
    i = skipBlanks(text, i)
    const c = text.charCodeAt(i++)
    if (c === RBRACKET) return i === close + 1 ? routes : undefined
    if (c !== COMMA) return undefined
    i = skipBlanks(text, i)
  }
}

/**
 * Is every route of this shape BIRD's tunnel route, `{"type":"unicast","dst":D,"gateway":G,"dev":DEV,
 * "table":"main","protocol":"bird","scope":"global","metric":M,"flags":["onlink"]}`, varying in D, G and M only?
 */
function isTunnelShape(shape: Shape, tunnelDev: string): boolean {
  const like = shape.like!
  const hop = like.nexthops[0]
  for (const key of shape.varying) if (key !== DST && key !== GATEWAY && key !== METRIC) return false
  const v = shape.values
  return (
    v[VIA] === undefined &&
    v[PREFSRC] === undefined &&
    v[TOS] === undefined &&
    v[NEXTHOPS] === undefined &&
    v[GATEWAY] !== undefined &&
    like.family === 'inet' &&
    like.type === 'unicast' &&
    like.table === 'main' &&
    like.tableId === 254 &&
    like.protocol === 'bird' &&
    like.scope === 'global' &&
    like.flags.length === 1 &&
    like.flags[0] === 'onlink' &&
    like.nexthops.length === 1 &&
    hop.dev === tunnelDev &&
    hop.gateway?.family === 'inet' &&
    hop.weight === 1
  )
}

/**
 * Is every route of this shape BIRD's route off the tunnel: IPv4, table main, `proto bird`, its source address the
 * same for all (a route of the shape is then built like its model), and either unicast with no next hop through
 * `tunnelDev` or `unreachable` (BIRD's for a path whose next hop it could not resolve)?
 */
function isOffTunnelShape(shape: Shape, tunnelDev: string): boolean {
  const like = shape.like!
  if (shape.varying.includes(PREFSRC) || like.family !== 'inet' || like.tableId !== 254 || like.protocol !== 'bird') return false
  if (like.type === 'unreachable') return like.nexthops.length === 0
  if (like.type !== 'unicast' || like.nexthops.length === 0) return false
  for (const hop of like.nexthops) if (hop.dev === tunnelDev || hop.dev === undefined) return false
  return true
}

/**
 * Defer the route the scanner just read as BIRD's route off the tunnel (isOffTunnelShape), when its next-hop list
 * is known: then its key, metric and that list make it again, as scannedRoute would build it. False when it is to
 * be built.
 */
function deferOffTunnel(scanner: RouteScanner, deferred: TunnelRouteSink, ordinal: number): boolean {
  const shape = scanner.shape
  if (
    shape === undefined ||
    shape.like === undefined ||
    !(shape.offTunnel ??= isOffTunnelShape(shape, deferred.tunnelDev))
  )
    return false
  const key = scanner.dstKey()
  if (key < 0) return false
  const seen = shape.nexthops.get(scanner.gatewayHost)
  if (seen === undefined || !seen.sure) return false
  return deferred.addOffTunnel(key, scanner.metric ?? 0, shape.like, seen.list, ordinal)
}

/**
 * Defer the route the scanner just read as outside the pools, when it is IPv4, outside every pool and would be
 * built like its shape's model (scannedRoute) with that model's source address: then its key, metric and next-hop
 * list make it again (src/bulk/deferred.ts outsidePoolRoute), and nothing of it can fail. False when it is to be built.
 */
function deferOutsidePool(scanner: RouteScanner, outsidePool: OutsideRouteSink, ordinal: number): boolean {
  const shape = scanner.shape
  if (shape === undefined || shape.like === undefined) return false
  const like = shape.like
  // not the local table's, which check reads whatever the pools; a varying source address is checked as it is built
  if (!(shape.outsidePool ??= like.tableId !== 255 && like.type !== 'local' && !shape.varying.includes(PREFSRC)))
    return false
  const key = scanner.dstKey()
  if (key < 0 || !outsidePool.outside(key)) return false
  const seen = shape.nexthops.get(scanner.gatewayHost)
  if (seen === undefined || !seen.sure) return false
  outsidePool.add(key, scanner.metric ?? 0, like, seen.list, ordinal)
  return true
}

/** The route the scanner just read: like its shape's model when its next hops are known, else by buildRoute. */
function scannedRoute(scanner: RouteScanner, pos: SourcePos, family: Family | undefined): KernelRoute {
  const {shape, dst, gatewayHost} = scanner
  if (shape === undefined) return buildRoute(scanner.raw(), pos, family)
  const seen = shape.nexthops.get(gatewayHost)
  if (seen !== undefined && seen.sure && shape.like !== undefined && dst !== 'default') {
    return buildRouteLike(shape.like, dst, scanner.metric ?? 0, scanner.prefsrc, seen.list) // 0: buildRoute's default
  }
  const route = buildRoute(scanner.raw(), pos, family)
  if (seen === undefined) {
    if (shape.nexthops.size < MAX_GATEWAYS) shape.nexthops.set(gatewayHost, {list: route.nexthops, sure: false})
  } else if (!seen.sure) {
    seen.sure = seen.list === route.nexthops
    seen.list = route.nexthops
  }
  if (shape.like === undefined && dst !== 'default') shape.like = route
  return route
}

function skipBlanks(s: string, i: number): number {
  while (isBlank(s.charCodeAt(i))) i++
  return i
}

/** Offset just past the `}` closing the object that starts at `start`, or -1. Strings may hold escapes. */
function objectEnd(s: string, start: number): number {
  let depth = 0
  for (let i = start; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === QUOTE) {
      for (i++; i < s.length && s.charCodeAt(i) !== QUOTE; i++) if (s.charCodeAt(i) === BACKSLASH) i++
    } else if (c === LBRACE || c === LBRACKET) depth++
    else if (c === RBRACE || c === RBRACKET) {
      depth--
      if (depth === 0) return i + 1
    }
  }
  return -1
}

/**
 * Does `text` (non-empty) appear in `s` at `i`? startsWith compares a character at a time; for a long text
 * comparing a slice is several times faster (one memcmp).
 */
function textAt(s: string, i: number, text: string): boolean {
  return text.length > 24 ? s.slice(i, i + text.length) === text : s.startsWith(text, i)
}

/**
 * Offset just past the digits of a JSON integer >= 0 of at most 15 digits (exactly a double) at `from`, or
 * -1: none, a leading zero (not JSON), or too many to be sure of the double (JSON.parse's to read).
 */
function integerEnd(s: string, from: number): number {
  let i = from
  for (let c = s.charCodeAt(i); c >= 48 && c <= 57; c = s.charCodeAt(++i));
  return i === from || i - from > 15 || (s.charCodeAt(from) === 48 && i - from > 1) ? -1 : i
}

/** The value of the digits s[from, to) that integerEnd accepted: exact, as JSON.parse reads them. */
function integerValue(s: string, from: number, to: number): number {
  let v = 0
  for (let i = from; i < to; i++) v = v * 10 + s.charCodeAt(i) - 48
  return v
}

/**
 * Offset of the quote that closes a JSON string whose text starts at `from`; -1 on an escape, a control character or
 * the end.
 */
function plainStringEnd(s: string, from: number): number {
  for (let i = from; ; i++) {
    const c = s.charCodeAt(i)
    if (c === QUOTE) return i
    if (!(c >= 32) || c === BACKSLASH) return -1 // NaN past the end fails `c >= 32` too
  }
}

// The keys the generic path reads; any other key is skipped when its value is simple.
const ROUTE_KEYS = [
  'type',
  'dst',
  'gateway',
  'via',
  'dev',
  'table',
  'protocol',
  'scope',
  'metric',
  'prefsrc',
  'tos',
  'pref',
  'flags',
  'nexthops',
] as const
const [TYPE, DST, GATEWAY, VIA, DEV, TABLE, PROTOCOL, SCOPE, METRIC, PREFSRC, TOS, PREF, FLAGS, NEXTHOPS] =
  ROUTE_KEYS.map((_, i) => i)
const NEXTHOP_KEYS = ['gateway', 'via', 'dev', 'weight', 'flags'] as const
const [NH_GATEWAY, NH_VIA, NH_DEV, NH_WEIGHT, NH_FLAGS] = NEXTHOP_KEYS.map((_, i) => i)
const VIA_KEYS = ['family', 'host'] as const
const [VIA_FAMILY, VIA_HOST] = VIA_KEYS.map((_, i) => i)

// Raw `flags: []`. Raw lists are never changed: buildRoute copies them.
const NO_STRINGS: string[] = Object.freeze([]) as unknown as string[]

/**
 * A route's text with what varies from route to route cut out (addresses, metric), e.g.
 * `{"type":"unicast","dst":"` · `","gateway":"` · `","dev":"tunl0","table":"main","protocol":"bird",
 * "scope":"global","metric":` · `,"flags":["onlink"]}`. A full table is a few shapes printed many times
 * over. A route made of the same pieces around other such values (strings without escapes, integers) holds
 * the same values but for those: the same text reads the same, so it needs no tokenizing.
 */
class Shape {
  hits = 0
  /**
   * Next-hop lists by gateway host ('' for none): all else that decides them (type, dev, flags, nexthops)
   * is in the pieces. A list is `sure` once buildRoute gave two routes that very list: then it sits in
   * buildRoute's cache, and buildRoute would return it again.
   */
  readonly nexthops = new Map<string, {list: Nexthop[]; sure: boolean}>()
  /** The first route built of this shape whose dst is not "default": buildRouteLike's model. */
  like: KernelRoute | undefined
  /** Its routes are BIRD's tunnel routes (isTunnelShape), once `like` is known. */
  tunnel: boolean | undefined
  /** Its routes outside the pools can be deferred (deferOutsidePool), once `like` is known. */
  outsidePool: boolean | undefined
  /** Its routes are BIRD's routes off the tunnel (isOffTunnelShape), once `like` is known. */
  offTunnel: boolean | undefined

  constructor(
    readonly pieces: string[], // the text around the varying values: one more than `varying`
    readonly varying: number[], // the key of each: DST, GATEWAY, VIA (its host), PREFSRC or METRIC
    readonly values: unknown[], // the route's values by key, as the tokenizer read them
  ) {}
}

// Keys whose values a shape leaves out
const VARYING = new Set([DST, GATEWAY, VIA, PREFSRC, METRIC])

// A full table is mostly a handful of shapes. A route is matched against a few (the newest first, and a hit
// moves a shape ahead of a less used one); one of yet another shape is tokenized and its shape put first,
// pushing out the last. A common shape pushed out by a run of odd routes comes back as the next one of it
// is tokenized. Shapes only pay when routes repeat them: while the last shape kept has had no hit, only
// every so many new shapes are kept (a device per route, say, makes every route a shape of its own). A
// shape's next hops are remembered for so many gateways.
const MAX_SHAPES = 4
const UNKEPT = 32
const MAX_GATEWAYS = 10_000

/**
 * Reads route objects, as the generic path reads their JSON.parse'd values, or throws OUTSIDE. A route is
 * first matched against the shapes of earlier routes; when none fits it is tokenized and its shape kept.
 * The tokenizer takes keys in any order (each at most once) and no whitespace: strings without backslashes
 * or control characters, integers of at most 15 digits (exact as doubles), `flags` lists of strings, `via`
 * objects and `nexthops` lists of such objects, and for a key the generic path ignores a string, integer,
 * true/false/null or list-of-strings value.
 */
class RouteScanner {
  i = 0
  // the route last read: its shape (undefined when not kept) and varying values
  shape: Shape | undefined
  prefsrc: string | undefined
  metric: number | undefined
  // dst and gateway: the shape's, or a varying one's place in the text, sliced only when asked for (a route
  // deferred needs their numbers only: dstKey, gatewayValue)
  private dstText: string | undefined = ''
  private dstFrom = 0
  private dstTo = 0
  private gatewayText: string | undefined = ''
  private gatewayFrom = 0
  private gatewayTo = 0
  private hostOf: 'gateway' | 'via' | '' = '' // which of them gatewayHost is
  private viaHost = ''
  private readonly shapes: Shape[] = []
  private readonly values: unknown[] = ROUTE_KEYS.map(() => undefined)
  // the varying values of the route being read: their keys, and where their text starts and ends
  private readonly varyingKeys: number[] = []
  private readonly starts: number[] = []
  private readonly ends: number[] = []
  private viaHostStart = 0 // where the host of the last `via` read starts and ends
  private viaHostEnd = 0
  private tokenized = false // the route last read is in `values`
  // values the tokenizer read last, by key: the next route's are often the same, and then the same strings
  // (as JSON.parse shares short strings, so do routes)
  private readonly last: Array<string | undefined> = ROUTE_KEYS.map(() => undefined)
  private lastNexthopDev: string | undefined
  private lastViaFamily: string | undefined
  private lastFlagsText = ''
  private lastFlags: string[] = NO_STRINGS
  private lastKept: Shape | undefined
  private unkept = 0 // shapes not kept since

  constructor(private readonly s: string) {}

  /** Read the route at `start`, and `i` just past it: its shape (undefined when not kept) and varying values. */
  route(start: number): void {
    this.tokenized = false
    for (let k = 0; k < this.shapes.length; k++) {
      // a shape that never had a hit is not worth the comparison, but for the one kept last (a shape of every tenth
      // route, say, that the others' pushed back from the front before its second route came)
      if (k > 0 && this.shapes[k].hits === 0 && this.shapes[k] !== this.lastKept) continue
      if (this.fits(this.shapes[k], start)) {
        this.promote(k)
        this.readVarying()
        return
      }
    }
    this.i = start
    this.tokenize()
    this.tokenized = true
    this.shape = undefined
    if (this.lastKept === undefined || this.lastKept.hits > 0 || ++this.unkept % UNKEPT === 0) {
      this.keepShape(start)
      this.lastKept = this.shape
      this.readVarying()
    }
  }

  get dst(): string {
    return (this.dstText ??= this.s.slice(this.dstFrom, this.dstTo))
  }

  private get gateway(): string {
    return (this.gatewayText ??= this.s.slice(this.gatewayFrom, this.gatewayTo))
  }

  /** Of `gateway`, else of `via`, else '': the key of the shape's next-hop memo. */
  get gatewayHost(): string {
    return this.hostOf === 'gateway' ? this.gateway : this.hostOf === 'via' ? this.viaHost : ''
  }

  /** prefixKey of the route last read's dst (what DeferredKernelRoutes keeps), read in place. */
  dstKey(): number {
    return this.dstText === undefined ? prefixKey(this.s, this.dstFrom, this.dstTo) : prefixKey(this.dstText)
  }

  /** ipv4Value of the route last read's gateway, read in place. */
  gatewayValue(): number {
    return this.gatewayText === undefined
      ? ipv4Value(this.s, this.gatewayFrom, this.gatewayTo)
      : ipv4Value(this.gatewayText)
  }

  /** The route last read, as a RawRoute. */
  raw(): RawRoute {
    if (this.tokenized || this.shape === undefined) return rawRoute(this.values)
    const v = this.values
    const {values, varying} = this.shape
    for (let k = 0; k < v.length; k++) v[k] = values[k]
    for (const key of varying) {
      if (key === DST) v[key] = this.dst
      else if (key === GATEWAY) v[key] = {host: this.gateway}
      else if (key === VIA) v[key] = {family: (values[VIA] as RawGateway).family, host: this.viaHost}
      else if (key === PREFSRC) v[key] = this.prefsrc
      else v[key] = this.metric
    }
    return rawRoute(v)
  }

  /** Does the route at `start` fit `shape`? If so, `shape` is the current one and its varying values are noted. */
  private fits(shape: Shape, start: number): boolean {
    const s = this.s
    const {pieces, varying} = shape
    let i = start
    if (!textAt(s, i, pieces[0])) return false
    i += pieces[0].length
    for (let k = 0; k < varying.length; k++) {
      const end = varying[k] === METRIC ? integerEnd(s, i) : plainStringEnd(s, i)
      if (end < 0) return false
      this.starts[k] = i
      this.ends[k] = end
      if (!textAt(s, end, pieces[k + 1])) return false
      i = end + pieces[k + 1].length
    }
    this.i = i
    this.shape = shape
    return true
  }

  /** Count a hit; a shape that hits more than the one before it moves ahead of it. */
  private promote(k: number): void {
    const shapes = this.shapes
    const shape = shapes[k]
    shape.hits++
    if (k > 0 && shape.hits > shapes[k - 1].hits) {
      shapes[k] = shapes[k - 1]
      shapes[k - 1] = shape
    }
  }

  /** The varying values of the current shape, from where `fits` or `tokenize` noted them. */
  private readVarying(): void {
    const {varying, values} = this.shape!
    // the shape's own values, for any of these that are not varying in it
    this.dstText = values[DST] as string
    this.gatewayText = (values[GATEWAY] as RawGateway | undefined)?.host ?? ''
    this.viaHost = (values[VIA] as RawGateway | undefined)?.host ?? ''
    this.prefsrc = values[PREFSRC] as string | undefined
    this.metric = values[METRIC] as number | undefined
    for (let k = 0; k < varying.length; k++) {
      const key = varying[k]
      if (key === METRIC) {
        this.metric = integerValue(this.s, this.starts[k], this.ends[k])
        continue
      }
      if (key === DST) {
        this.dstText = undefined
        this.dstFrom = this.starts[k]
        this.dstTo = this.ends[k]
        continue
      }
      if (key === GATEWAY) {
        this.gatewayText = undefined
        this.gatewayFrom = this.starts[k]
        this.gatewayTo = this.ends[k]
        continue
      }
      const text = this.s.slice(this.starts[k], this.ends[k])
      if (key === VIA) this.viaHost = text
      else this.prefsrc = text
    }
    // `gateway` wins over `via`, as in rawRoute
    this.hostOf = values[GATEWAY] !== undefined ? 'gateway' : values[VIA] !== undefined ? 'via' : ''
  }

  /** Keep the shape of the route just tokenized, from `start`, as the current one. */
  private keepShape(start: number): void {
    const s = this.s
    const pieces: string[] = []
    let from = start
    for (let k = 0; k < this.varyingKeys.length; k++) {
      pieces.push(s.slice(from, this.starts[k]))
      from = this.ends[k]
    }
    pieces.push(s.slice(from, this.i))
    this.shape = new Shape(pieces, this.varyingKeys.slice(), this.values.slice())
    if (this.shapes.length >= MAX_SHAPES) this.shapes.pop()
    this.shapes.unshift(this.shape)
  }

  /** Read the route object at i into `values`, noting where its varying values are. */
  private tokenize(): void {
    const s = this.s
    const v = this.values
    const last = this.last
    v.fill(undefined)
    this.varyingKeys.length = 0
    if (s.charCodeAt(this.i++) !== LBRACE) throw OUTSIDE
    let seen = 0
    for (;;) {
      const key = this.key(ROUTE_KEYS)
      if (key >= 0) {
        if (seen & (1 << key)) throw OUTSIDE // JSON.parse keeps the last of duplicate keys: let it
        seen |= 1 << key
      }
      let start = this.i
      switch (key) {
        case TYPE: v[TYPE] = last[TYPE] = this.string(last[TYPE]); break
        case DST: v[DST] = this.string(); break
        case GATEWAY: v[GATEWAY] = {host: this.string()}; break
        case VIA: v[VIA] = this.via(); break
        case DEV: v[DEV] = last[DEV] = this.string(last[DEV]); break
        case TABLE: v[TABLE] = last[TABLE] = this.name(last[TABLE]); break
        case PROTOCOL: v[PROTOCOL] = last[PROTOCOL] = this.name(last[PROTOCOL]); break
        case SCOPE: v[SCOPE] = last[SCOPE] = this.name(last[SCOPE]); break
        case METRIC: v[METRIC] = this.integer(); break
        case PREFSRC: v[PREFSRC] = this.string(); break
        case TOS: v[TOS] = last[TOS] = this.name(last[TOS]); break
        case PREF: v[PREF] = last[PREF] = this.string(last[PREF]); break
        case FLAGS: v[FLAGS] = this.strings(); break
        case NEXTHOPS: v[NEXTHOPS] = this.nexthops(); break
        default: this.skipValue()
      }
      if (VARYING.has(key)) {
        // where the value's text is: a string's between its quotes, via's in its host
        let end = this.i
        if (key === VIA) [start, end] = [this.viaHostStart, this.viaHostEnd]
        else if (key !== METRIC) [start, end] = [start + 1, end - 1]
        const n = this.varyingKeys.length
        this.varyingKeys[n] = key
        this.starts[n] = start
        this.ends[n] = end
      }
      const c = s.charCodeAt(this.i++)
      if (c === RBRACE) break
      if (c !== COMMA) throw OUTSIDE
    }
    if (v[DST] === undefined) throw OUTSIDE // the generic path's error to report
  }

  private nexthops(): RawNexthop[] {
    const s = this.s
    if (s.charCodeAt(this.i++) !== LBRACKET) throw OUTSIDE
    const list: RawNexthop[] = []
    if (s.charCodeAt(this.i) === RBRACKET) {
      this.i++
      return list
    }
    for (;;) {
      list.push(this.nexthop())
      const c = s.charCodeAt(this.i++)
      if (c === RBRACKET) return list
      if (c !== COMMA) throw OUTSIDE
    }
  }

  private nexthop(): RawNexthop {
    const s = this.s
    if (s.charCodeAt(this.i++) !== LBRACE) throw OUTSIDE
    const nh: RawNexthop = {flags: NO_STRINGS}
    if (s.charCodeAt(this.i) === RBRACE) {
      this.i++
      return nh
    }
    let gateway: RawGateway | undefined
    let via: RawGateway | undefined
    let seen = 0
    for (;;) {
      const key = this.key(NEXTHOP_KEYS)
      if (key >= 0) {
        if (seen & (1 << key)) throw OUTSIDE
        seen |= 1 << key
      }
      switch (key) {
        case NH_GATEWAY: gateway = {host: this.string()}; break
        case NH_VIA: via = this.via(); break
        case NH_DEV: nh.dev = this.lastNexthopDev = this.string(this.lastNexthopDev); break
        case NH_WEIGHT: nh.weight = this.integer(); break
        case NH_FLAGS: nh.flags = this.strings(); break
        default: this.skipValue()
      }
      const c = s.charCodeAt(this.i++)
      if (c === RBRACE) break
      if (c !== COMMA) throw OUTSIDE
    }
    const gw = gateway ?? via // `gateway` wins, as in rawGateway
    if (gw) nh.gateway = gw
    return nh
  }

  /** `{"family":"inet6","host":"fe80::1"}` (RTA_VIA); a missing host is the generic path's error to report. */
  private via(): RawGateway {
    const s = this.s
    if (s.charCodeAt(this.i++) !== LBRACE) throw OUTSIDE
    let family: string | undefined
    let host: string | undefined
    let seen = 0
    for (;;) {
      const key = this.key(VIA_KEYS)
      if (key >= 0) {
        if (seen & (1 << key)) throw OUTSIDE
        seen |= 1 << key
      }
      if (key === VIA_FAMILY) family = this.lastViaFamily = this.string(this.lastViaFamily)
      else if (key === VIA_HOST) {
        this.viaHostStart = this.i + 1
        host = this.string()
        this.viaHostEnd = this.i - 1
      } else this.skipValue()
      const c = s.charCodeAt(this.i++)
      if (c === RBRACE) break
      if (c !== COMMA) throw OUTSIDE
    }
    if (host === undefined) throw OUTSIDE
    return {family, host}
  }

  /** Index in `names` of the key at i (-1: a key the generic path does not read), past its colon. */
  private key(names: readonly string[]): number {
    const s = this.s
    const i = this.i
    if (s.charCodeAt(i) !== QUOTE) throw OUTSIDE
    const end = plainStringEnd(s, i + 1)
    if (end < 0 || s.charCodeAt(end + 1) !== COLON) throw OUTSIDE
    this.i = end + 2
    for (let k = 0; k < names.length; k++)
      if (names[k].length === end - i - 1 && s.startsWith(names[k], i + 1)) return k
    return -1
  }

  /** A string; `known` (read before, so plain) when the text repeats it. */
  private string(known?: string): string {
    const s = this.s
    const i = this.i
    if (s.charCodeAt(i) !== QUOTE) throw OUTSIDE
    if (known !== undefined && s.charCodeAt(i + 1 + known.length) === QUOTE && s.startsWith(known, i + 1)) {
      this.i = i + known.length + 2
      return known
    }
    const end = plainStringEnd(s, i + 1)
    if (end < 0) throw OUTSIDE
    this.i = end + 1
    return s.slice(i + 1, end)
  }

  /** A table, protocol, scope or tos: a string, or a number the generic path prints as one. */
  private name(known: string | undefined): string {
    return this.s.charCodeAt(this.i) === QUOTE ? this.string(known) : String(this.integer())
  }

  /** A JSON integer >= 0 of at most 15 digits (exactly a double); what follows is the caller's to check. */
  private integer(): number {
    const end = integerEnd(this.s, this.i)
    if (end < 0) throw OUTSIDE
    const v = integerValue(this.s, this.i, end)
    this.i = end
    return v
  }

  /** A list of strings (`flags`); the same list when the text repeats the last one read. */
  private strings(): string[] {
    const s = this.s
    const start = this.i
    if (s.charCodeAt(this.i++) !== LBRACKET) throw OUTSIDE
    if (s.charCodeAt(this.i) === RBRACKET) {
      this.i++
      return NO_STRINGS
    }
    if (this.lastFlagsText !== '' && s.startsWith(this.lastFlagsText, start)) {
      this.i = start + this.lastFlagsText.length
      return this.lastFlags
    }
    const list: string[] = []
    for (;;) {
      list.push(this.string())
      const c = s.charCodeAt(this.i++)
      if (c === RBRACKET) break
      if (c !== COMMA) throw OUTSIDE
    }
    this.lastFlagsText = s.slice(start, this.i)
    this.lastFlags = list
    return list
  }

  /** Skip the value of a key the generic path ignores, when it is simple; nested values are OUTSIDE. */
  private skipValue(): void {
    const s = this.s
    const c = s.charCodeAt(this.i)
    if (c === QUOTE) this.string()
    else if (c >= 48 && c <= 57) this.integer()
    else if (c === LBRACKET) this.strings()
    else if (s.startsWith('true', this.i) || s.startsWith('null', this.i)) this.i += 4
    else if (s.startsWith('false', this.i)) this.i += 5
    else throw OUTSIDE
  }
}

/** A RawRoute of values by key. */
function rawRoute(v: unknown[]): RawRoute {
  return {
    type: v[TYPE] as string | undefined,
    dst: v[DST] as string,
    gateway: (v[GATEWAY] ?? v[VIA]) as RawGateway | undefined, // `gateway` wins over `via`, as in rawGateway
    dev: v[DEV] as string | undefined,
    table: v[TABLE] as string | undefined,
    protocol: v[PROTOCOL] as string | undefined,
    scope: v[SCOPE] as string | undefined,
    metric: v[METRIC] as number | undefined,
    prefsrc: v[PREFSRC] as string | undefined,
    tos: v[TOS] as string | undefined,
    pref: v[PREF] as string | undefined,
    flags: (v[FLAGS] ?? NO_STRINGS) as string[],
    nexthops: v[NEXTHOPS] as RawNexthop[] | undefined,
  }
}
