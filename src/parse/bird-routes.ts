// `show route [all]` of BIRD 1.6, 2.x and 3.x (reference: bird-output-formats.md §5.1–5.4).
//
// A line-fed state machine: lines are classified by their first character (TAB: next hop or
// attribute of the current route; space: secondary route of the current network; anything else:
// `Table X:` or a new network). It keeps only the route being built, so it can be fed a stream of
// a full-table dump; `parseBirdRoutes` is the whole-text wrapper. No regular expressions run on the
// hot path (no backtracking), and repeated strings (protocols, interfaces, names) are interned.
import {ParseError} from '../model/errors.js'
import {canonicalAddress, canonicalPrefix} from '../model/prefix.js'
import type {BirdAttribute, BirdNexthop, BirdRoute, SourcePos} from '../model/types.js'
import {BirdFramer, frameBirdText, isErrorCode} from './bird-framing.js'

const HEADER_SHAPE = 'a route header "PREFIX DEST [PROTO TIME] * (PREF)"'
const TAB_LINE_SHAPE = 'a next hop ("via GW on IF", "dev IF") or an attribute ("Name: value")'

// BIRD's "no such network" replies to `show route for X` (1.6 / 2.x+): an empty answer, not bad input.
const NOT_FOUND = new Set(['Network not found', 'Network not in table'])

/** Bounded string interning: a full table repeats a few hundred distinct names millions of times. */
class Interner {
  private readonly map = new Map<string, string>()
  // attribute names by position in the route: consecutive routes mostly repeat the same sequence,
  // so a startsWith against the previous route's name avoids the slice and the hash
  private readonly names: string[] = []
  get(s: string): string {
    const hit = this.map.get(s)
    if (hit !== undefined) return hit
    if (this.map.size < 50_000) this.map.set(s, s)
    return s
  }
  /** text.slice(start, end) interned, reusing the name seen at the same position last time. */
  name(text: string, start: number, end: number, position: number): string {
    const last = this.names[position]
    if (last !== undefined && last.length === end - start && text.startsWith(last, start)) return last
    const name = this.get(text.slice(start, end))
    if (position <= 64) this.names[position] = name // 0..63 attribute positions, 64 the protocol
    return name
  }
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
  if (slash > 0 && dash > slash + 1 && isDigits(net.slice(slash + 1, dash), 0) && isDigits(net, dash + 1)) return true // ROA `/LEN-MAXLEN`
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

  get attributes(): BirdAttribute[] {
    return materialiseAttributes(this.attrText, this.attrLine, this.attrLines)
  }

  toJSON(): Record<string, unknown> {
    return {
      prefix: this.prefix, table: this.table, dest: this.dest, protocol: this.protocol, since: this.since, from: this.from,
      primary: this.primary, kernelSyncFailed: this.kernelSyncFailed, preference: this.preference, info: this.info,
      source: this.source, bgpNextHop: this.bgpNextHop, nexthops: this.nexthops, attributes: this.attributes, pos: this.pos,
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

function wordCount(s: string): number {
  let n = 0
  let inWord = false
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const space = c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 11
    if (!space && !inWord) n++
    inWord = !space
  }
  return n
}

/** A decimal integer as BIRD prints it, else NaN (compared as equal to NaN by equalPreference). */
function integer(s: string): number {
  const t = s.trim()
  return t.length > 0 && isDigits(t, 0) ? Number(t) : Number.NaN
}

export class BirdRouteParser {
  private readonly routes: BirdRoute[] = []
  private cur: ParsedBirdRoute | undefined
  // the route being built: its next hops, and its attribute lines (see ParsedBirdRoute)
  private readonly hops: BirdNexthop[] = []
  private readonly hopKeys: string[] = []
  private readonly hopCache = new Map<string, BirdNexthop>()
  private readonly hopListCache = new Map<string, BirdNexthop[]>()
  private attrCount = 0 // attribute lines of the current route (continuations included)
  private attrNames = 0 // attributes (continuations excluded)
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
  private readonly intern = new Interner()

  /**
   * With `onRoute`, each finished route is handed over and not retained (streaming use). `source`: the
   * whole text the payload lines come from, when there is one: attribute lines are then kept as slices of it.
   */
  constructor(readonly file = 'birdc-show-route-all.txt', private readonly onRoute?: (route: BirdRoute) => void, private readonly source?: string) {}

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
    const route = this.cur
    if (route === undefined) return
    this.cur = undefined
    this.lastIsAttr = false
    this.inAsPath = false
    this.asPathSeen = false
    if (this.hops.length > 0) {
      route.nexthops = this.hopList()
      this.hops.length = 0
      this.hopKeys.length = 0
    }
    if (this.attrCount > 0) {
      route.attrText = this.attrParts !== undefined ? this.attrParts.join('\n') : this.source!.slice(this.attrStart, this.attrEnd)
      if (this.attrLineNos !== undefined) route.attrLines = this.attrLineNos
      this.attrCount = 0
      this.attrNames = 0
      this.attrStart = -1
      this.attrParts = undefined
      this.attrLineNos = undefined
    }
    if (this.onRoute) this.onRoute(route)
    else this.routes.push(route)
  }

  /** The current next hops as a shared list: a table repeats a few hundred combinations. */
  private hopList(): BirdNexthop[] {
    const key = this.hopKeys.length === 1 ? this.hopKeys[0]! : this.hopKeys.join('\n')
    const hit = this.hopListCache.get(key)
    if (hit !== undefined) return hit
    const list = Object.freeze(this.hops.slice()) as BirdNexthop[]
    if (this.hopListCache.size < 50_000) this.hopListCache.set(key, list)
    return list
  }

  /** A next hop from its words, shared by every route with the same text. */
  private sharedNexthop(key: string, words: () => string[], line: number, text: string): BirdNexthop {
    let nh = this.hopCache.get(key)
    if (nh === undefined) {
      nh = Object.freeze(this.nexthop(words(), line, text))
      if (this.hopCache.size < 50_000) this.hopCache.set(key, nh)
    }
    this.hops.push(nh)
    this.hopKeys.push(key)
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
    this.finish()
    if (this.prefix === undefined) {
      throw new ParseError(this.file, line, 'a route header with a prefix before an indented (secondary) route', text)
    }
    this.cur = this.header(text, 0, line, this.prefix)
  }

  /** Parse `DEST [PROTO TIME( from ADDR)]( *| !)? INFO` starting at `from` in `text`. */
  private header(text: string, from: number, line: number, prefix: string): ParsedBirdRoute {
    const open = text.indexOf('[', from)
    const close = open < 0 ? -1 : text.indexOf(']', open)
    if (close < 0) throw new ParseError(this.file, line, HEADER_SHAPE, text)
    const bracket = text.slice(open + 1, close)
    const sp = bracket.indexOf(' ')
    if (sp <= 0 || sp === bracket.length - 1) throw new ParseError(this.file, line, `${HEADER_SHAPE} with "[PROTO TIME]"`, text)
    const protocol = this.intern.name(text, open + 1, open + 1 + sp, 64)
    // TIME may hold a space (`2026-11-29 15:55:30`), so `from` is found from the right.
    const fromAt = bracket.lastIndexOf(' from ')
    let since: string
    let fromAddr: string | undefined
    if (fromAt > sp) {
      since = bracket.slice(sp + 1, fromAt)
      const raw = bracket.slice(fromAt + 6)
      fromAddr = canonicalAddress(raw) ?? raw
    } else {
      since = bracket.slice(sp + 1)
    }

    // mark and info after the bracket
    let i = close + 1
    while (i < text.length && text.charCodeAt(i) === 32) i++
    let primary = false
    let kernelSyncFailed = false
    const m = text.charCodeAt(i)
    if ((m === 42 /* * */ || m === 33 /* ! */) && (i + 1 === text.length || text.charCodeAt(i + 1) === 32)) {
      primary = true
      kernelSyncFailed = m === 33
      i++
    }
    const info = text.slice(i).trim()
    let preference: number | undefined
    const paren = info.indexOf('(')
    if (paren >= 0) {
      let j = paren + 1
      let v = 0
      while (j < info.length && info.charCodeAt(j) >= 48 && info.charCodeAt(j) <= 57) v = v * 10 + info.charCodeAt(j++) - 48
      if (j > paren + 1) preference = v
    }

    const route = new ParsedBirdRoute(prefix, '', protocol, this.intern.get(since), primary, kernelSyncFailed, this.intern.get(info), {file: this.file, line, endLine: line})
    if (this.table !== undefined) route.table = this.table
    if (fromAddr !== undefined) route.from = this.intern.get(fromAddr)
    if (preference !== undefined) route.preference = preference
    this.destination(route, text.slice(from, open), line, text)
    return route
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
      this.sharedNexthop(words.join(' '), () => words, line, text)
      return
    }
    if (words.length !== 1) {
      throw new ParseError(this.file, line, 'a destination ("unicast", "unreachable", "blackhole", "via GW on IF", "dev IF", "multipath") before "["', text)
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
    const route = this.cur
    if (route === undefined) {
      throw new ParseError(this.file, line, 'a route header before next-hop and attribute lines', text)
    }
    route.pos.endLine = line
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
      this.sharedNexthop(text, () => splitWords(text), line, text)
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
    const name = this.intern.name(text, 1, colon, this.attrNames++)
    this.keepAttrLine(text, line, code)
    this.attribute(route, name, text, vstart, text.length)
  }

  /**
   * An attribute line `\tName: value` at [start, end) of the whole text, handled in place (no slice of the
   * line): most lines of a dump are these. False when it is anything else (a next hop, a continuation, a
   * line without ": ", an attribute run that is not verbatim), which then takes the line-by-line path.
   */
  attributeSpan(src: string, start: number, end: number, line: number): boolean {
    const route = this.cur
    if (route === undefined || this.skipNet || src !== this.source || this.attrParts !== undefined) return false
    const c1 = src.charCodeAt(start + 1)
    if (c1 === 9 || c1 === 32 || (c1 === 118 /* v */ && src.startsWith('via ', start + 1)) || (c1 === 100 /* d */ && src.startsWith('dev ', start + 1))) return false
    const colon = src.indexOf(': ', start + 1)
    if (colon < 0 || colon >= end || colon <= start + 1) return false
    const n = this.attrCount
    if (n > 0 && (line !== this.attrPrevLine + 1 || start !== this.attrEnd + 1)) return false
    const name = this.intern.name(src, start + 1, colon, this.attrNames++)
    // keepAttrLine's verbatim run, by offsets
    this.attrCount = n + 1
    if (n === 0) {
      route.attrLine = line
      this.attrStart = start
    }
    this.attrEnd = end
    this.attrPrevLine = line
    route.pos.endLine = line
    this.attribute(route, name, src, colon + 2, end)
    return true
  }

  /** What an attribute tells about the path (its value is text[vstart, vend)). */
  private attribute(route: ParsedBirdRoute, name: string, text: string, vstart: number, vend: number): void {
    this.lastIsAttr = true
    this.inAsPath = false
    switch (name) {
      case 'Type': // 1.6 `BGP unicast univ`, 2.x `BGP univ`
      case 'source': {
        // 3.x `source: BGP`
        const w = text.slice(vstart, vend).trim()
        const sp = w.indexOf(' ')
        const src = sp < 0 ? w : w.slice(0, sp)
        if (src.length > 0) route.source = this.intern.get(src)
        break
      }
      case 'BGP.next_hop':
      case 'bgp_next_hop': {
        // IPv6 sessions print `GLOBAL LINKLOCAL`; the first is the next hop
        const w = text.slice(vstart, vend).trim()
        const sp = w.indexOf(' ')
        const nh = canonicalAddress(sp < 0 ? w : w.slice(0, sp))
        if (nh !== undefined) route.bgpNextHop = this.intern.get(nh)
        break
      }
      case 'from': {
        // 3.x prints the peer as an attribute; the header shows `from` only when it differs from the gateway
        if (route.from === undefined) {
          const a = canonicalAddress(text.slice(vstart, vend).trim())
          if (a !== undefined) route.from = this.intern.get(a)
        }
        break
      }
      // the BGP decision values `equalPreference` compares (the first of either name, as `attributes.find`)
      case 'BGP.local_pref':
      case 'bgp_local_pref':
        if (route.localPref === undefined) route.localPref = integer(text.slice(vstart, vend))
        break
      case 'BGP.med':
      case 'bgp_med':
        if (route.med === undefined) route.med = integer(text.slice(vstart, vend))
        break
      case 'BGP.origin':
      case 'bgp_origin':
        if (route.origin === undefined) route.origin = this.intern.get(text.slice(vstart, vend).trim())
        break
      case 'BGP.as_path':
      case 'bgp_path':
        if (!this.asPathSeen) {
          route.asPathLength = wordCount(text.slice(vstart, vend))
          this.asPathSeen = true
          this.inAsPath = true
        }
        break
      default:
        break
    }
  }
}

/** Line-at-a-time entry for streams: raw lines (birdc or control-socket framing) in, routes out. */
export function createBirdRouteStream(file: string, onRoute: (route: BirdRoute) => void): {push(raw: string, lineNo: number): void; end(): void} {
  const parser = new BirdRouteParser(file, onRoute)
  const framer = new BirdFramer(file, (t, l, c) => parser.feed(t, l, c))
  return {
    push: (raw, lineNo) => framer.push(raw, lineNo),
    end: () => {
      parser.end()
    },
  }
}

/** Every route of a `show route [all]` reply, in output order (best route of a network first). */
export function parseBirdRoutes(text: string, file = 'birdc-show-route-all.txt'): BirdRoute[] {
  const parser = new BirdRouteParser(file, undefined, text)
  frameBirdText(text, file, (t, l, c) => parser.feed(t, l, c), (src, start, end, line) => parser.attributeSpan(src, start, end, line))
  return parser.end()
}
