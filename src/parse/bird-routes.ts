// `show route [all]` of BIRD 1.6, 2.x and 3.x (reference: bird-output-formats.md §5.1–5.4).
//
// A line-fed state machine: lines are classified by their first character (TAB: next hop or
// attribute of the current route; space: secondary route of the current network; anything else:
// `Table X:` or a new network). It keeps only the route being built, so it can be fed a stream of
// a full-table dump; `parseBirdRoutes` is the whole-text wrapper: it handles the common lines (primary
// headers, next hops, attributes) on offsets into the text (`lineSpan`), and hands every other line to
// the line path the stream uses. No regular expressions run on the hot path (no backtracking), and
// repeated strings (protocols, interfaces, names) are interned.
//
// Costs in V8 (Node 20) on a dump read as one latin1 string, which shaped the in-place paths: indexOf
// is cheap; a slice under 13 characters is a copy that === and Map lookups handle fast, a longer one
// is a view they compare or hash several times slower; startsWith costs more than slice-and-compare.
import {networkKey, prefixKey} from '../model/prefix-key.js'
import {ParseError} from '../model/errors.js'
import {canonicalAddress, canonicalPrefix, ipv4Network, ipv4Value} from '../model/prefix.js'
import type {BirdAttribute, BirdNexthop, BirdRoute, SourcePos} from '../model/types.js'
import {BirdFramer, bannerVersion, frameBirdText, isErrorCode} from './bird-framing.js'

const HEADER_SHAPE = 'a route header "PREFIX DEST [PROTO TIME] * (PREF)"'
const TAB_LINE_SHAPE = 'a next hop ("via GW on IF", "dev IF") or an attribute ("Name: value")'

// BIRD's "no such network" replies to `show route for X` (1.6 / 2.x+): an empty answer, not bad input.
const NOT_FOUND = new Set(['Network not found', 'Network not in table'])

/** Bounded string interning: a full table repeats a few hundred distinct names millions of times. */
class Interner {
  private readonly map = new Map<string, string>()
  get(s: string): string {
    const hit = this.map.get(s)
    if (hit !== undefined) return hit
    if (this.map.size < 50_000) this.map.set(s, s)
    return s
  }
}

/**
 * Values derived from a span of text (an attribute's value), by that text: consecutive routes mostly
 * repeat the last one's, and a full table has a few hundred others. `derive` must be a pure function.
 */
export class SubstringMemo<T> {
  private lastText: string | undefined
  private lastValue!: T
  private readonly byText = new Map<string, T>()

  constructor(private readonly derive: (text: string) => T) {}

  /** The value for src[start, end). */
  get(src: string, start: number, end: number): T {
    const text = src.slice(start, end)
    if (text === this.lastText) return this.lastValue
    let value = this.byText.get(text)
    if (value === undefined && !this.byText.has(text)) {
      value = this.derive(text)
      if (this.byText.size < 50_000) this.byText.set(text, value)
    }
    this.lastText = text
    this.lastValue = value as T
    return value as T
  }
}

// What `attribute` reads from an attribute, by its name (BIRD 1.6 `bgp_*`, 2.x+ `BGP.*`, 3.x `source`, `from`).
const SOURCE = 1
const NEXT_HOP = 2
const FROM = 3
const LOCAL_PREF = 4
const MED = 5
const ORIGIN = 6
const AS_PATH = 7

/**
 * The kind of the attribute named s[start, end) (0: one `attribute` ignores). By length first: most
 * names of a dump (BGP.community, Kernel.metric...) have a length no kind has, and are not sliced.
 */
export function attributeKind(s: string, start: number, end: number): number {
  switch (end - start) {
    case 4: {
      const name = s.slice(start, end)
      return name === 'Type' ? SOURCE : name === 'from' ? FROM : 0
    }
    case 6:
      return s.slice(start, end) === 'source' ? SOURCE : 0
    case 7: {
      const name = s.slice(start, end)
      return name === 'BGP.med' || name === 'bgp_med' ? MED : 0
    }
    case 8:
      return s.slice(start, end) === 'bgp_path' ? AS_PATH : 0
    case 10: {
      const name = s.slice(start, end)
      return name === 'BGP.origin' || name === 'bgp_origin' ? ORIGIN : 0
    }
    case 11:
      return s.slice(start, end) === 'BGP.as_path' ? AS_PATH : 0
    case 12: {
      const name = s.slice(start, end)
      return name === 'BGP.next_hop' || name === 'bgp_next_hop' ? NEXT_HOP : 0
    }
    case 14: {
      // in two slices: V8 compares strings of 13 characters or more (views, not copies) in a runtime call
      const head = s.slice(start, start + 12)
      return (head === 'BGP.local_pr' || head === 'bgp_local_pr') && s.slice(start + 12, end) === 'ef' ? LOCAL_PREF : 0
    }
    default:
      return 0
  }
}

/**
 * src[start, end) as model/prefix-key.ts prefixKey gives it (network · 64 + length) when it is dotted-quad
 * `A.B.C.D/LEN` that canonicalPrefix returns unchanged (no leading zeros, no host bits), else -1. Nearly
 * every network of a full table is, and this needs no slice to find out. -1 only means "not known
 * canonical": prefixOf decides then.
 */
export function canonicalIpv4Key(src: string, start: number, end: number): number {
  // LEN is 0..32: one digit, or two without a leading zero
  let slash = end - 2
  if (src.charCodeAt(slash) !== 47 /* / */) slash = end - 3
  if (slash <= start || src.charCodeAt(slash) !== 47) return -1
  const d0 = src.charCodeAt(slash + 1) - 48
  const d1 = slash === end - 3 ? src.charCodeAt(end - 1) - 48 : -1
  if (d0 < 0 || d0 > 9 || (slash === end - 3 && (d0 === 0 || d1 < 0 || d1 > 9))) return -1
  const len = d1 < 0 ? d0 : d0 * 10 + d1
  if (len > 32) return -1
  const v = ipv4Value(src, start, slash)
  return v >= 0 && ipv4Network(v, len) === v ? networkKey(v, len) : -1
}

function isBlankChar(c: number): boolean {
  return c === 32 || c === 9
}

/** Does s[start...] begin `\tvia ` or `\tdev `? */
function isNexthopLine(s: string, start: number): boolean {
  const c1 = s.charCodeAt(start + 1)
  if (c1 === 118 /* v */)
    return s.charCodeAt(start + 2) === 105 && s.charCodeAt(start + 3) === 97 && s.charCodeAt(start + 4) === 32
  if (c1 === 100 /* d */)
    return s.charCodeAt(start + 2) === 101 && s.charCodeAt(start + 3) === 118 && s.charCodeAt(start + 4) === 32
  return false
}

/** A network as BIRD prints it, canonical; undefined for anything but PREFIX/LEN. */
function prefixOf(net: string): string | undefined {
  return net.includes('/') ? canonicalPrefix(net, net.includes(':') ? 'inet6' : 'inet') : undefined
}

function isNonIpNet(net: string): boolean {
  // flowspec (`flow4 { ... }`), ROA (`10.0.0.0/24-24 AS1`), VPN (`RD PREFIX`), ASPA: real BIRD
  // tables, but not IP unicast routes the doctor reasons about.
  if (net === 'flow4' || net === 'flow6') return true
  const slash = net.indexOf('/')
  const dash = net.indexOf('-', slash)
  // ROA `/LEN-MAXLEN`
  if (slash > 0 && dash > slash + 1 && isDigits(net.slice(slash + 1, dash), 0) && isDigits(net, dash + 1)) return true
  if (net.startsWith('AS') && net.length > 2 && isDigits(net, 2)) return true
  const colon = net.indexOf(':')
  return colon > 0 && !net.includes('/') && isDigits(net, colon + 1) // route distinguisher 65000:1
}

function isDigits(s: string, from: number): boolean {
  if (from >= s.length) return false
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 48 || c > 57) return false
  }
  return true
}

function splitWords(s: string): string[] {
  const out: string[] = []
  let i = 0
  const n = s.length
  while (i < n) {
    while (i < n && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 9)) i++
    if (i >= n) break
    const start = i
    while (i < n && s.charCodeAt(i) !== 32 && s.charCodeAt(i) !== 9) i++
    out.push(s.slice(start, i))
  }
  return out
}

/** Does `list` hold the first n of `hops`? */
function sameHops(list: BirdNexthop[], hops: BirdNexthop[], n: number): boolean {
  if (list.length !== n) return false
  for (let i = 0; i < n; i++) if (list[i] !== hops[i]) return false
  return true
}

/** What follows a header's network: `DEST [PROTO TIME( from ADDR)]( *| !) INFO`, read. */
interface HeaderRest {
  part: string // DEST as printed, for `destination`
  dest: string | undefined // DEST when it is one word (or none); see plainDestination
  protocol: string
  since: string
  from: string | undefined
  primary: boolean
  kernelSyncFailed: boolean
  info: string
  preference: number | undefined
}

const NO_HOPS: BirdNexthop[] = Object.freeze([]) as unknown as BirdNexthop[]

/**
 * A parsed BIRD path. Attribute lines are held compactly — one string (a slice of the source text when
 * the lines are verbatim and consecutive in it, else the payload lines joined) — and `attributes`
 * materialises them on access; a full table holds millions of them and only a few are ever displayed.
 * The decision values `equalPreference` compares are eager fields. `toJSON` prints the plain shape.
 */
export class ParsedBirdRoute implements BirdRoute {
  table?: string
  from?: string
  preference?: number
  source?: string
  bgpNextHop?: string
  localPref?: number
  origin?: string
  med?: number
  asPathLength: number = 0
  nexthops: BirdNexthop[] = NO_HOPS
  /** The attribute payload lines, `\n`-separated ('' for none). */
  attrText = ''
  /** Line of the first attribute line; the others follow it, unless `attrLines` lists them. */
  attrLine = 0
  attrLines?: number[]
  // Where it is in the whole text it was read from in place, for dropping that text (bulk/drop-texts.ts): its
  // header line's start, its last line's end, its attribute text's start (-1: not known, as when fed line by
  // line). Private, so that routes of equal fields are equal whatever text they came from.
  #textAt = -1
  #textEnd = -1
  #attrAt = -1

  constructor(
    public prefix: string,
    public dest: string,
    public protocol: string,
    public since: string,
    public primary: boolean,
    public kernelSyncFailed: boolean,
    public info: string,
    public pos: SourcePos,
  ) {}

  get textAt(): number {
    return this.#textAt
  }

  set textAt(offset: number) {
    this.#textAt = offset
  }

  get textEnd(): number {
    return this.#textEnd
  }

  set textEnd(offset: number) {
    this.#textEnd = offset
  }

  get attrAt(): number {
    return this.#attrAt
  }

  set attrAt(offset: number) {
    this.#attrAt = offset
  }

  get attributes(): BirdAttribute[] {
    return materialiseAttributes(this.attrText, this.attrLine, this.attrLines)
  }

  toJSON(): Record<string, unknown> {
    return {
      prefix: this.prefix,
      table: this.table,
      dest: this.dest,
      protocol: this.protocol,
      since: this.since,
      from: this.from,
      primary: this.primary,
      kernelSyncFailed: this.kernelSyncFailed,
      preference: this.preference,
      info: this.info,
      source: this.source,
      bgpNextHop: this.bgpNextHop,
      nexthops: this.nexthops,
      attributes: this.attributes,
      pos: this.pos,
    }
  }
}

/** Attribute objects from payload lines (`\tName: value`, `\t\t` continuations joined with a space). */
function materialiseAttributes(text: string, first: number, lines: number[] | undefined): BirdAttribute[] {
  const out: BirdAttribute[] = []
  if (text.length === 0) return out
  let last: BirdAttribute | undefined
  let start = 0
  for (let i = 0; start <= text.length; i++) {
    let end = text.indexOf('\n', start)
    if (end < 0) end = text.length
    const t = text.slice(start, end)
    start = end + 1
    const line = lines !== undefined ? lines[i]! : first + i
    if (t.charCodeAt(1) === 9) {
      if (last) {
        const more = t.trim()
        last.value = last.value.length > 0 ? `${last.value} ${more}` : more
        last.endLine = line
      }
      continue
    }
    let colon = t.indexOf(': ')
    let value = ''
    if (colon < 0) colon = t.length - 1
    else value = t.slice(colon + 2)
    last = {name: t.slice(1, colon), value, line, endLine: line}
    out.push(last)
  }
  return out
}

function wordCount(s: string, from = 0, to = s.length): number {
  let n = 0
  let inWord = false
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i)
    const space = c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 11
    if (!space && !inWord) n++
    inWord = !space
  }
  return n
}

/** The preference in a header's INFO: `(100/?) [i]` -> 100; undefined without one. */
function preferenceOf(info: string): number | undefined {
  const paren = info.indexOf('(')
  if (paren < 0) return undefined
  let j = paren + 1
  let v = 0
  while (j < info.length && info.charCodeAt(j) >= 48 && info.charCodeAt(j) <= 57) v = v * 10 + info.charCodeAt(j++) - 48
  return j > paren + 1 ? v : undefined
}

/** The first word of a `Type:` / `source:` value (`BGP univ` -> "BGP"), '' for none. */
function sourceOf(value: string): string {
  const w = value.trim()
  const sp = w.indexOf(' ')
  return sp < 0 ? w : w.slice(0, sp)
}

/** The next hop of a BGP next-hop value, canonical: IPv6 sessions print `GLOBAL LINKLOCAL`, the first is it. */
function bgpNextHopOf(value: string): string | undefined {
  const w = value.trim()
  const sp = w.indexOf(' ')
  return canonicalAddress(sp < 0 ? w : w.slice(0, sp))
}

/** A decimal integer as BIRD prints it, else NaN (compared as equal to NaN by equalPreference). */
function integer(s: string): number {
  const t = s.trim()
  return t.length > 0 && isDigits(t, 0) ? Number(t) : Number.NaN
}

export class BirdRouteParser {
  private readonly routes: BirdRoute[] = []
  private cur: ParsedBirdRoute | undefined
  // the route being built: its next hops (the first hopCount of hops and hopKeys: the arrays are
  // reused, as truncating one costs V8 a runtime call), and its attribute lines (see ParsedBirdRoute)
  private readonly hops: BirdNexthop[] = []
  private readonly hopKeys: string[] = []
  private hopCount = 0
  private readonly hopCache = new Map<string, BirdNexthop>()
  private readonly hopListCache = new Map<string, BirdNexthop[]>()
  private attrCount = 0 // attribute lines of the current route (continuations included)
  private attrPrevLine = 0
  private attrStart = -1 // offset in `source` of the first attribute line, while they are a verbatim run of it
  private attrEnd = 0
  private attrParts: string[] | undefined // the lines, once they are not a verbatim run
  private attrLineNos: number[] | undefined // the line numbers, once they are not consecutive
  private lastIsAttr = false // the previous TAB line was an attribute or a continuation (a continuation may follow)
  private inAsPath = false // ... and it was the path whose length counts
  private asPathSeen = false
  // offset of line `srcLine` in `source` (lines are fed in increasing order)
  private srcLine = 1
  private srcOff = 0
  private prefix: string | undefined // network of the last primary header, for secondary routes
  private skipNet = false // inside a non-IP network (flowspec, ROA...): its lines are consumed, not kept
  private table: string | undefined
  // skimming (see deferTo): a network's only path is read for its key, source and BGP next hop, not built
  private deferredTo: DeferredPathSink | undefined
  private skimming = false
  private skim = {key: 0, kernel: 0, offset: 0, end: 0, line: 0, table: undefined as string | undefined, source: '', bgpNextHop: undefined as string | undefined, build: false,
    unreachable: false}
  private readonly intern = new Interner()
  // the lists `hopList` returned lately that hopListCache holds (it never drops one)
  private readonly recentLists: BirdNexthop[][] = []
  private recentNext = 0
  // headerSpan: the text after a header's network, read, remembered per protocol: a peer's routes
  // mostly share it (all but the time, when that differs). Keyed by at most the last 12 characters of
  // the protocol name: V8 hashes a copy that short several times faster than a longer slice of the dump.
  private readonly restsByProtocol = new Map<string, {text: string; rest: HeaderRest | string}>()
  // attribute values, by their text
  private readonly sources = new SubstringMemo((v) => {
    const src = sourceOf(v)
    return src.length > 0 ? this.intern.get(src) : src
  })
  private readonly bgpNextHops = new SubstringMemo((v) => {
    const nh = bgpNextHopOf(v)
    return nh === undefined ? nh : this.intern.get(nh)
  })
  private readonly origins = new SubstringMemo((v) => this.intern.get(v.trim()))
  private readonly integers = new SubstringMemo(integer)

  /**
   * With `onRoute`, each finished route is handed over and not retained (streaming use). `source`: the
   * whole text the payload lines come from, when there is one: attribute lines are then kept as slices of it.
   */
  constructor(
    readonly file = 'birdc-show-route-all.txt',
    private readonly onRoute?: (route: BirdRoute) => void,
    private readonly source?: string,
  ) {}

  /** A framed payload line (see bird-framing.ts) with its original line number and reply code. */
  feed(text: string, line: number, code?: number): void {
    if (isErrorCode(code)) {
      if (code === 8001) return // "Network not found"
      throw new ParseError(this.file, line, 'a route listing', `BIRD error ${code}: ${text}`)
    }
    const c0 = text.charCodeAt(0)
    if (c0 === 9) return this.tabLine(text, line, code)
    if (c0 === 32) return this.secondaryHeader(text, line)
    if (text.startsWith('Table ') && text.endsWith(':')) {
      this.finish()
      this.table = this.intern.get(text.slice(6, -1))
      this.prefix = undefined
      this.skipNet = false
      return
    }
    if (text.charCodeAt(0) === 78 /* N */ && NOT_FOUND.has(text)) return this.finish()
    this.primaryHeader(text, line)
  }

  /** Flush the last route; returns every route when no `onRoute` callback was given. */
  end(): BirdRoute[] {
    this.finish()
    return this.routes
  }

  private finish(): void {
    if (this.skimming) return this.endSkim(false)
    const route = this.cur
    if (route === undefined) return
    this.cur = undefined
    this.lastIsAttr = false
    this.inAsPath = false
    this.asPathSeen = false
    if (this.hopCount > 0) {
      route.nexthops = this.hopList()
      this.hopCount = 0
    }
    if (this.attrCount > 0) {
      if (this.attrParts !== undefined) route.attrText = this.attrParts.join('\n')
      else {
        route.attrText = this.source!.slice(this.attrStart, this.attrEnd)
        route.attrAt = this.attrStart
      }
      if (this.attrLineNos !== undefined) route.attrLines = this.attrLineNos
      this.attrCount = 0
      this.attrStart = -1
      this.attrParts = undefined
      this.attrLineNos = undefined
    }
    if (this.onRoute) this.onRoute(route)
    else this.routes.push(route)
  }

  /** Start as if `Table NAME:` came before (BirdBlockReader: a network's paths parsed on their own). */
  inTable(table: string | undefined): void {
    this.table = table
  }

  /**
   * Skim instead of building the paths that may be deferred (bulk/deferred.ts): a primary `unicast` (or
   * `unreachable`) path of an IPv4 network whose header is read in place and where the kernel deferred a route
   * (`kernelAt`), or that is outside every pool (`outside`). Its lines are read only for the source and the BGP next
   * hop (next hops are still checked, as building them would).
   * It is deferred (`onDeferred`) when it turns out to be its network's only path, over BGP, with an IPv4 BGP
   * next hop, and every line was one the in-place paths read; otherwise it is built after all, from its text,
   * and handed over as any other path: results and errors are the same as without skimming.
   */
  deferTo(deferred: DeferredPathSink): void {
    this.deferredTo = deferred
  }

  /** The skimmed path, deferred or (`build`, or not of the shape) built. */
  private endSkim(build: boolean): void {
    this.skimming = false
    this.hopCount = 0
    const k = this.skim
    if (!build && !k.build && k.source === 'BGP' && k.bgpNextHop !== undefined && ipv4Value(k.bgpNextHop) >= 0) {
      this.deferredTo!.onDeferred(k.key, k.kernel, k.bgpNextHop, k.offset, k.end, k.line, k.table, k.unreachable)
      return
    }
    for (const route of this.deferredTo!.reader.at(k.offset, k.line, k.table, k.end)) {
      if (this.onRoute) this.onRoute(route)
      else this.routes.push(route)
    }
  }

  /** The current next hops as a shared list: a table repeats a few hundred combinations. */
  private hopList(): BirdNexthop[] {
    // A recent list holding the same next-hop objects is the one the lookup below would find: a next-hop
    // object comes from one text, so the key is the same, and hopListCache never drops a list.
    const n = this.hopCount
    for (const list of this.recentLists) if (sameHops(list, this.hops, n)) return list
    const key = n === 1 ? this.hopKeys[0]! : this.hopKeys.slice(0, n).join('\n')
    let list = this.hopListCache.get(key)
    if (list === undefined) {
      list = Object.freeze(this.hops.slice(0, n)) as BirdNexthop[]
      if (this.hopListCache.size >= 50_000) return list
      this.hopListCache.set(key, list)
    }
    this.recentLists[this.recentNext++ % 8] = list
    return list
  }

  /** A next hop from its words (else the words of `text`), shared by every route with the same text. */
  private sharedNexthop(key: string, words: string[] | undefined, line: number, text: string): BirdNexthop {
    let nh = this.hopCache.get(key)
    if (nh === undefined) {
      nh = Object.freeze(this.nexthop(words ?? splitWords(text), line, text))
      if (this.hopCache.size < 50_000) this.hopCache.set(key, nh)
    }
    this.hops[this.hopCount] = nh
    this.hopKeys[this.hopCount++] = key
    return nh
  }

  /** Keep one attribute line (or continuation) of the current route. */
  private keepAttrLine(text: string, line: number, code: number | undefined): void {
    const n = this.attrCount++
    if (n === 0) this.cur!.attrLine = line
    else if (line !== this.attrPrevLine + 1 && this.attrLineNos === undefined) {
      const first = this.cur!.attrLine
      this.attrLineNos = Array.from({length: n}, (_, i) => first + i)
    }
    if (this.attrLineNos !== undefined) this.attrLineNos.push(line)
    const consecutive = n === 0 || line === this.attrPrevLine + 1
    this.attrPrevLine = line
    if (this.attrParts === undefined) {
      // still a verbatim run of the source? (birdc framing hands over whole lines, `\r` stripped)
      const off = code === undefined && consecutive ? this.offsetOf(line) : -1
      if (off >= 0 && (n === 0 || off === this.attrEnd + 1) && this.source!.charCodeAt(off) === 9 &&
        (off + text.length === this.source!.length || this.source!.charCodeAt(off + text.length) === 10)) {
        if (n === 0) this.attrStart = off
        this.attrEnd = off + text.length
        return
      }
      this.attrParts = n === 0 ? [] : this.source!.slice(this.attrStart, this.attrEnd).split('\n')
    }
    this.attrParts.push(text)
  }

  /** Offset of a line in `source`, or -1 without one. */
  private offsetOf(line: number): number {
    const src = this.source
    if (src === undefined || line < this.srcLine) return -1
    while (this.srcLine < line) {
      const nl = src.indexOf('\n', this.srcOff)
      if (nl < 0) return -1
      this.srcOff = nl + 1
      this.srcLine++
    }
    return this.srcOff
  }

  private primaryHeader(text: string, line: number): void {
    this.finish()
    let sp = text.indexOf(' ')
    if (sp < 0) sp = text.length
    const net = text.slice(0, sp)
    const prefix = prefixOf(net)
    if (prefix === undefined) {
      if (isNonIpNet(net) && text.includes('[')) {
        this.skipNet = true
        this.prefix = undefined
        return
      }
      throw new ParseError(this.file, line, 'a route header starting with a prefix (or "Table NAME:")', text)
    }
    this.skipNet = false
    this.prefix = prefix
    this.cur = this.header(text, sp, line, prefix)
  }

  private secondaryHeader(text: string, line: number): void {
    if (this.skipNet) return
    if (this.skimming) this.endSkim(true) // the network has several paths
    this.finish()
    if (this.prefix === undefined) {
      throw new ParseError(this.file, line, 'a route header with a prefix before an indented (secondary) route', text)
    }
    this.cur = this.header(text, 0, line, this.prefix)
  }

  /** Parse `DEST [PROTO TIME( from ADDR)]( *| !)? INFO` starting at `from` in `text`. */
  private header(text: string, from: number, line: number, prefix: string): ParsedBirdRoute {
    const rest = this.headerRest(text.slice(from))
    if (typeof rest === 'string') throw new ParseError(this.file, line, rest, text)
    const route = this.newRoute(prefix, '', rest, line)
    this.destination(route, rest.part, line, text)
    return route
  }

  /** A header's text after its network, read; a string says what a ParseError expected instead. */
  private headerRest(rest: string): HeaderRest | string {
    const open = rest.indexOf('[')
    const close = open < 0 ? -1 : rest.indexOf(']', open)
    if (close < 0) return HEADER_SHAPE
    const bracket = rest.slice(open + 1, close)
    const sp = bracket.indexOf(' ')
    if (sp <= 0 || sp === bracket.length - 1) return `${HEADER_SHAPE} with "[PROTO TIME]"`
    const protocol = this.intern.get(bracket.slice(0, sp))
    // TIME may hold a space (`2026-11-29 15:55:30`), so `from` is found from the right.
    const fromAt = bracket.lastIndexOf(' from ')
    let since: string
    let from: string | undefined
    if (fromAt > sp) {
      since = bracket.slice(sp + 1, fromAt)
      const raw = bracket.slice(fromAt + 6)
      from = this.intern.get(canonicalAddress(raw) ?? raw)
    } else {
      since = bracket.slice(sp + 1)
    }

    // mark and info after the bracket
    let i = close + 1
    while (i < rest.length && rest.charCodeAt(i) === 32) i++
    let primary = false
    let kernelSyncFailed = false
    const m = rest.charCodeAt(i)
    if ((m === 42 /* * */ || m === 33 /* ! */) && (i + 1 === rest.length || rest.charCodeAt(i + 1) === 32)) {
      primary = true
      kernelSyncFailed = m === 33
      i++
    }
    const info = rest.slice(i).trim()
    const part = rest.slice(0, open)
    return {
      part, dest: this.plainDestination(part), protocol, since: this.intern.get(since), from, primary, kernelSyncFailed,
      info: this.intern.get(info), preference: preferenceOf(info),
    }
  }

  private newRoute(prefix: string, dest: string, rest: HeaderRest, line: number): ParsedBirdRoute {
    const route = new ParsedBirdRoute(
      prefix,
      dest,
      rest.protocol,
      rest.since,
      rest.primary,
      rest.kernelSyncFailed,
      rest.info,
      {file: this.file, line, endLine: line},
    )
    if (this.table !== undefined) route.table = this.table
    if (rest.from !== undefined) route.from = rest.from
    if (rest.preference !== undefined) route.preference = rest.preference
    return route
  }

  /** What `destination` sets for a DEST of one word or none; undefined for anything else (1.6's next hop, MPLS...). */
  private plainDestination(part: string): string | undefined {
    const words = splitWords(part)
    if (words.length === 0) return ''
    const w = words[0]!
    if (words.length > 1 || w === 'via' || w === 'dev') return undefined
    return w === 'multipath' ? 'unicast' : this.intern.get(w)
  }

  /** 2.x/3.x destination word, or 1.6's next hop on the header (`via GW on IF`, `dev IF`, `multipath`). */
  private destination(route: ParsedBirdRoute, part: string, line: number, text: string): void {
    const words = splitWords(part)
    // 2.14+ MPLS label policy heads: `PREFIX mpls LABEL DEST`
    if (words.length >= 3 && words[0] === 'mpls') words.splice(0, 2)
    if (words.length === 0) return // RTD_NONE: empty destination word
    const w0 = words[0]!
    if (w0 === 'via' || w0 === 'dev') {
      route.dest = 'unicast'
      this.sharedNexthop(words.join(' '), words, line, text)
      return
    }
    if (words.length !== 1) {
      throw new ParseError(
        this.file,
        line,
        'a destination ("unicast", "unreachable", "blackhole", "via GW on IF", "dev IF", "multipath") before "["',
        text,
      )
    }
    route.dest = w0 === 'multipath' ? 'unicast' : this.intern.get(w0)
  }

  /** `via GW[ on IF][ table T][ mpls L][ onlink][ weight N]` or `dev IF[ mpls L][ onlink]`, as words. */
  private nexthop(words: string[], line: number, text: string): BirdNexthop {
    const nh: BirdNexthop = {}
    const value = (k: number): string => {
      const v = words[k + 1]
      if (v === undefined) throw new ParseError(this.file, line, `a value after "${words[k]}"`, text)
      return v
    }
    if (words[0] === 'via') {
      const gw = canonicalAddress(value(0))
      if (gw === undefined) throw new ParseError(this.file, line, 'a gateway address after "via"', text)
      nh.gateway = gw
    } else {
      nh.iface = this.intern.get(value(0))
    }
    for (let k = 2; k < words.length; k++) {
      switch (words[k]) {
        case 'on':
          nh.iface = this.intern.get(value(k++))
          break
        case 'weight': {
          const w = Number(value(k++))
          if (!Number.isInteger(w) || w < 0) throw new ParseError(this.file, line, 'an integer weight', text)
          nh.weight = w
          break
        }
        case 'mpls':
          nh.mpls = value(k++)
          break
        case 'table':
          nh.table = this.intern.get(value(k++))
          break
        case 'onlink':
          nh.onlink = true
          break
        default:
          // a flag word of a later BIRD: the next hop itself is still understood
          break
      }
    }
    return nh
  }

  private tabLine(text: string, line: number, code: number | undefined): void {
    if (this.skipNet) return
    if (this.skimming) {
      // not one of the in-place shapes: the path is built after all, from its text (errors included)
      this.skim.build = true
      this.skim.end = this.offsetOf(line) + text.length
      return
    }
    const route = this.cur
    if (route === undefined) {
      throw new ParseError(this.file, line, 'a route header before next-hop and attribute lines', text)
    }
    route.pos.endLine = line
    route.textEnd = -1 // a line fed on its own: where it ends in the text is not known here
    if (text.charCodeAt(1) === 9) {
      // `\t\t…`: a community set wrapped at BIRD's 500-byte line buffer
      if (!this.lastIsAttr) throw new ParseError(this.file, line, 'an attribute line before a continuation line', text)
      this.keepAttrLine(text, line, code)
      if (this.inAsPath) route.asPathLength += wordCount(text)
      return
    }
    if (text.startsWith('\tvia ') || text.startsWith('\tdev ')) {
      this.lastIsAttr = false
      this.inAsPath = false
      this.sharedNexthop(text, undefined, line, text)
      return
    }
    let colon = text.indexOf(': ')
    let vstart: number
    if (colon < 0) {
      if (text.charCodeAt(text.length - 1) !== 58 /* : */) throw new ParseError(this.file, line, TAB_LINE_SHAPE, text)
      colon = text.length - 1
      vstart = text.length
    } else {
      vstart = colon + 2
    }
    if (colon <= 1) throw new ParseError(this.file, line, TAB_LINE_SHAPE, text)
    this.keepAttrLine(text, line, code)
    this.attribute(route, attributeKind(text, 1, colon), text, vstart, text.length)
  }

  /**
   * A payload line at src[start, end) of the whole text (see frameBirdText), handled in place when it
   * has a common shape: a route header, a next hop, an attribute. False for anything else, before any
   * change: the line path (`feed`) then handles it, errors included.
   */
  lineSpan(src: string, start: number, end: number, line: number): boolean {
    if (src !== this.source) return false
    if (src.charCodeAt(start) !== 9) return this.headerSpan(src, start, end, line)
    if (this.skimming) return this.skimSpan(src, start, end, line)
    const c1 = src.charCodeAt(start + 1)
    if ((c1 === 118 /* v */ || c1 === 100) /* d */ && isNexthopLine(src, start))
      return this.nexthopSpan(src, start, end, line)
    if (c1 === 9 || c1 === 32) return false // a continuation, or an odd indent: the line path
    return this.attributeSpan(src, start, end, line)
  }

  /**
   * `primaryHeader` or `secondaryHeader`, and `header`, for `PREFIX DEST [PROTO TIME( from ADDR)]( *| !) INFO`
   * (a secondary route: the same, indented, without PREFIX): the text after the network is read by
   * headerRest only when it differs from the last one of the same protocol (restsByProtocol).
   */
  private headerSpan(src: string, start: number, end: number, line: number): boolean {
    const c0 = src.charCodeAt(start)
    let prefix: string | undefined
    let sp = start // where the network ends
    let netKey = -1 // the network's prefixKey, once known
    if (c0 === 32) {
      // another route of the network above; without one, the line path
      if (this.skipNet || this.prefix === undefined) return false
      prefix = this.prefix
    } else {
      // IPv4 and IPv6 networks only: not `Table NAME:`, `Network not found`...
      if (!((c0 >= 48 && c0 <= 57) || (c0 >= 97 && c0 <= 102) || c0 === 58)) return false
      sp = src.indexOf(' ', start)
      if (sp < 0 || sp >= end) return false
      netKey = canonicalIpv4Key(src, start, sp)
      prefix = netKey >= 0 ? src.slice(start, sp) : prefixOf(src.slice(start, sp))
      if (prefix === undefined) return false // not a network, or not an IP one (flowspec, ROA...)
    }
    const open = src.indexOf('[', sp)
    const psp = open < 0 || open >= end ? -1 : src.indexOf(' ', open + 1)
    if (psp < 0 || psp >= end) return false // not a header: the line path says why
    // from DEST on: BIRD pads the network to a column, so the padding varies (headerRest reads past it)
    let ws = sp
    while (isBlankChar(src.charCodeAt(ws))) ws++
    const text = src.slice(ws, end)
    const key = src.slice(Math.max(open + 1, psp - 12), psp)
    let seen = this.restsByProtocol.get(key)
    if (seen === undefined) {
      seen = {text, rest: this.headerRest(text)}
      if (this.restsByProtocol.size < 50_000) this.restsByProtocol.set(key, seen)
    } else if (seen.text !== text) {
      seen.text = text
      seen.rest = this.headerRest(text)
    }
    const rest = seen.rest
    if (typeof rest === 'string') return false // the line path throws the ParseError

    if (c0 === 32 && this.skimming) this.endSkim(true) // the network has several paths
    this.finish()
    if (c0 !== 32) {
      this.skipNet = false
      this.prefix = prefix
      // 1.6 prints a single next hop on the header (`via GW on IF`): a unicast path like 2.x's
      const dest = rest.dest ?? (isNexthopWords(rest.part) ? 'unicast' : undefined)
      if (this.deferredTo !== undefined && rest.primary && !rest.kernelSyncFailed && (dest === 'unicast' || dest === 'unreachable')) {
        const key = netKey >= 0 ? netKey : prefixKey(prefix) // read by prefixOf: canonical now, or not IPv4
        const kernel = key < 0 ? -1 : this.deferredTo.kernelAt.get(key)
        if (kernel >= 0 || (key >= 0 && this.deferredTo.outside?.(key) === true)) {
          if (rest.dest === undefined) {
            // checked as `destination` checks it when building (the same error)
            const words = splitWords(rest.part)
            this.sharedNexthop(words.join(' '), words, line, src.slice(start, end))
          }
          const k = this.skim
          k.key = key
          k.kernel = kernel
          k.offset = start
          k.end = end
          k.line = line
          k.table = this.table
          k.source = ''
          k.bgpNextHop = undefined
          k.build = false
          k.unreachable = dest === 'unreachable'
          this.skimming = true
          return true
        }
      }
    }
    const route = this.newRoute(prefix, rest.dest ?? '', rest, line)
    route.textAt = start // lineSpan's `src` is the whole text (parseBirdRoutes, BirdBlockReader)
    route.textEnd = end
    // a DEST of several words (1.6's next hop on the header, an MPLS label): as `header` reads it
    if (rest.dest === undefined) this.destination(route, rest.part, line, src.slice(start, end))
    this.cur = route
    return true
  }

  /** A TAB line of a skimmed path (see deferTo), read in place. */
  private skimSpan(src: string, start: number, end: number, line: number): boolean {
    const k = this.skim
    k.end = end
    const c1 = src.charCodeAt(start + 1)
    if ((c1 === 118 /* v */ || c1 === 100 /* d */) && isNexthopLine(src, start)) {
      // checked as building it would (an error is the same error); the list is dropped at the end
      const text = src.slice(start, end)
      this.sharedNexthop(text, undefined, line, text)
      return true
    }
    const colon = c1 === 9 || c1 === 32 ? -1 : src.indexOf(': ', start + 1)
    if (colon < 0 || colon >= end || colon <= start + 1) {
      k.build = true // a continuation, or not `Name: value`: as the line path reads it, when built
      return true
    }
    // the last of each, as attribute() keeps them
    const kind = attributeKind(src, start + 1, colon)
    if (kind === SOURCE) {
      const source = this.sources.get(src, colon + 2, end)
      if (source.length > 0) k.source = source
    } else if (kind === NEXT_HOP) {
      const nh = this.bgpNextHops.get(src, colon + 2, end)
      if (nh !== undefined) k.bgpNextHop = nh
    }
    return true
  }

  /** `tabLine` for a next-hop line (`\tvia …`, `\tdev …`) with no framing around it. */
  private nexthopSpan(src: string, start: number, end: number, line: number): boolean {
    const route = this.cur
    if (route === undefined || this.skipNet) return false
    route.pos.endLine = line
    route.textEnd = end
    this.lastIsAttr = false
    this.inAsPath = false
    const text = src.slice(start, end)
    this.sharedNexthop(text, undefined, line, text)
    return true
  }

  /**
   * `tabLine` for an attribute line `\tName: value` (no next hop, no continuation), by offsets (no slice
   * of the line): most lines of a dump are these. False when it is anything else (a line without ": ",
   * an attribute run that is not verbatim), which then takes the line path.
   */
  private attributeSpan(src: string, start: number, end: number, line: number): boolean {
    const route = this.cur
    if (route === undefined || this.skipNet || this.attrParts !== undefined) return false
    const colon = src.indexOf(': ', start + 1)
    if (colon < 0 || colon >= end || colon <= start + 1) return false
    const n = this.attrCount
    if (n > 0 && (line !== this.attrPrevLine + 1 || start !== this.attrEnd + 1)) return false
    // keepAttrLine's verbatim run, by offsets
    this.attrCount = n + 1
    if (n === 0) {
      route.attrLine = line
      this.attrStart = start
    }
    this.attrEnd = end
    this.attrPrevLine = line
    route.pos.endLine = line
    route.textEnd = end
    this.attribute(route, attributeKind(src, start + 1, colon), src, colon + 2, end)
    return true
  }

  /** What an attribute of kind `kind` (see attributeKind) tells about the path; its value is text[vstart, vend). */
  private attribute(route: ParsedBirdRoute, kind: number, text: string, vstart: number, vend: number): void {
    this.lastIsAttr = true
    this.inAsPath = false
    switch (kind) {
      case SOURCE: {
        // 1.6 `Type: BGP unicast univ`, 2.x `Type: BGP univ`, 3.x `source: BGP`
        const src = this.sources.get(text, vstart, vend)
        if (src.length > 0) route.source = src
        break
      }
      case NEXT_HOP: {
        const nh = this.bgpNextHops.get(text, vstart, vend)
        if (nh !== undefined) route.bgpNextHop = nh
        break
      }
      case FROM: {
        // 3.x prints the peer as an attribute; the header shows `from` only when it differs from the gateway
        if (route.from === undefined) {
          const a = canonicalAddress(text.slice(vstart, vend).trim())
          if (a !== undefined) route.from = this.intern.get(a)
        }
        break
      }
      // the BGP decision values `equalPreference` compares (the first of either name, as `attributes.find`)
      case LOCAL_PREF:
        if (route.localPref === undefined) route.localPref = this.integers.get(text, vstart, vend)
        break
      case MED:
        if (route.med === undefined) route.med = this.integers.get(text, vstart, vend)
        break
      case ORIGIN:
        if (route.origin === undefined) route.origin = this.origins.get(text, vstart, vend)
        break
      case AS_PATH:
        if (!this.asPathSeen) {
          route.asPathLength = wordCount(text, vstart, vend)
          this.asPathSeen = true
          this.inAsPath = true
        }
        break
      default:
        break
    }
  }
}

/** Is a header's DEST 1.6's next hop (`via GW on IF`, `dev IF`), which `destination` reads as a unicast path? */
function isNexthopWords(part: string): boolean {
  const t = part.trimStart()
  return t.startsWith('via ') || t.startsWith('dev ')
}

/** The index of what is kept at a prefix key, or a negative number when nothing is. */
export interface KeyLookup {
  get(key: number): number
}

/**
 * Where parseBirdRoutes sends, unbuilt, the paths of its shape (src/bulk keeps them as numbers): `kernelAt` and
 * `outside` say which networks qualify; `add` gets what DeferredPathSink.onDeferred gets and the path's place in the
 * dump.
 */
export interface BirdPathSink {
  readonly kernelAt: KeyLookup
  readonly outside?: (key: number) => boolean
  add(
    key: number,
    kernel: number,
    bgpNextHop: string,
    offset: number,
    end: number,
    line: number,
    table: string | undefined,
    ordinal: number,
    unreachable: boolean,
  ): void
}

/** Where a skimming parser (deferTo) sends the paths it defers, and what it builds skimmed paths with. */
export interface DeferredPathSink {
  kernelAt: KeyLookup
  /** Is a network key outside every pool (its path may be deferred without a kernel route: `kernel` -1)? */
  outside?: (key: number) => boolean
  reader: BirdBlockReader
  /** `offset` and `end`: where the path's text starts, and where its last line read ends. */
  onDeferred(
    key: number,
    kernel: number,
    bgpNextHop: string,
    offset: number,
    end: number,
    line: number,
    table: string | undefined,
    unreachable: boolean,
  ): void
}

/**
 * Every route of a `show route [all]` reply, in output order (best route of a network first). With
 * `deferred`, the paths of its shape (see bulk/deferred.ts) are deferred there instead of returned.
 */
export function parseBirdRoutes(text: string, file = 'birdc-show-route-all.txt', deferred?: BirdPathSink): BirdRoute[] {
  const routes: BirdRoute[] = []
  let count = 0 // paths so far, deferred or not: a path's ordinal
  const parser =
    deferred === undefined
      ? new BirdRouteParser(file, undefined, text)
      : new BirdRouteParser(
          file,
          (route) => {
            routes.push(route)
            count++
          },
          text,
        )
  if (deferred !== undefined) {
    parser.deferTo({
      kernelAt: deferred.kernelAt,
      outside: deferred.outside,
      reader: new BirdBlockReader(text, file),
      onDeferred: (key, kernel, bgpNextHop, offset, end, line, table, unreachable) =>
        deferred.add(key, kernel, bgpNextHop, offset, end, line, table, count++, unreachable),
    })
  }
  frameBirdText(
    text,
    file,
    (t, l, c) => parser.feed(t, l, c),
    (src, start, end, line) => parser.lineSpan(src, start, end, line),
  )
  const built = parser.end() // with `deferred`, routes came through the callback instead
  return deferred === undefined ? built : routes
}

/**
 * The paths of networks of a birdc dump, parsed as parseBirdRoutes parsed them: paths it deferred, read
 * after all. One parser reads them all, so they must be asked for in the order of the dump.
 */
export class BirdBlockReader {
  private readonly found: BirdRoute[] = []
  private readonly parser: BirdRouteParser
  private readonly framer: BirdFramer

  constructor(private readonly text: string, file = 'birdc-show-route-all.txt') {
    this.parser = new BirdRouteParser(file, (route) => this.found.push(route), text)
    this.framer = new BirdFramer(file, (t, l, c) => this.parser.feed(t, l, c))
    this.framer.mode = 'birdc'
  }

  /** The paths of the network whose header is at `offset` (line `line`), listed under `table`; not past `until`. */
  at(offset: number, line: number, table: string | undefined, until = this.text.length): BirdRoute[] {
    const {text, parser} = this
    parser.inTable(table)
    const n = Math.min(until, text.length)
    // the header, then its lines (TAB or space first) up to the next line that is neither
    for (let start = offset, lineNo = line; start < n; lineNo++) {
      let end = text.indexOf('\n', start)
      if (end < 0) end = n
      const c0 = text.charCodeAt(start)
      // lines the framer drops (blank, `>>>`, a banner) do not end a network's lines; anything else not indented does
      if (
        start > offset &&
        c0 !== 9 &&
        c0 !== 32 &&
        start !== end &&
        !(c0 === 62 && text.startsWith('>>>', start)) &&
        !(c0 === 66 && bannerVersion(text.slice(start, end).replace(/\r$/, '')) !== undefined)
      )
        break
      // as frameBirdText hands them over: the header (read in place before) and TAB lines offered in place first
      if (!((start === offset || c0 === 9) && parser.lineSpan(text, start, end, lineNo)))
        this.framer.push(text.slice(start, end), lineNo)
      start = end + 1
    }
    parser.end()
    return this.found.splice(0)
  }
}
