// `show route [all]` of BIRD 1.6, 2.x and 3.x (reference: bird-output-formats.md §5.1–5.4).
//
// A line-fed state machine: lines are classified by their first character (TAB: next hop or
// attribute of the current route; space: secondary route of the current network; anything else:
// `Table X:` or a new network). It keeps only the route being built, so it can be fed a stream of
// a full-table dump; `parseBirdRoutes` is the whole-text wrapper. No regular expressions run on the
// hot path (no backtracking), and repeated strings (protocols, interfaces, names) are interned.
import {ParseError} from '../model/errors.js'
import {canonicalAddress, canonicalPrefix, ipv4Text, ipv4Value} from '../model/prefix.js'
import type {BirdAttribute, BirdNexthop, BirdRoute} from '../model/types.js'
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

function address(text: string): string | undefined {
  if (ipv4Value(text, 0, text.length) >= 0) return text // already canonical
  return canonicalAddress(text)
}

function prefixOf(net: string): string | undefined {
  const slash = net.indexOf('/')
  if (slash < 0) return undefined
  const v = ipv4Value(net, 0, slash)
  const lenText = net.slice(slash + 1)
  const len = lenText.length > 0 && lenText.length <= 2 && isDigits(lenText, 0) ? Number(lenText) : 99
  if (v >= 0 && len <= 32 && !(lenText.length === 2 && lenText.charCodeAt(0) === 48)) {
    const hostBits = 2 ** (32 - len)
    const network = v - (v % hostBits)
    return network === v ? net : `${ipv4Text(network)}/${len}`
  }
  return canonicalPrefix(net, net.includes(':') ? 'inet6' : 'inet')
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

export class BirdRouteParser {
  private readonly routes: BirdRoute[] = []
  private cur: BirdRoute | undefined
  private lastAttr: BirdAttribute | undefined
  private prefix: string | undefined // network of the last primary header, for secondary routes
  private skipNet = false // inside a non-IP network (flowspec, ROA...): its lines are consumed, not kept
  private table: string | undefined
  private readonly intern = new Interner()

  /** With `onRoute`, each finished route is handed over and not retained (streaming use). */
  constructor(readonly file = 'birdc-show-route-all.txt', private readonly onRoute?: (route: BirdRoute) => void) {}

  /** A framed payload line (see bird-framing.ts) with its original line number and reply code. */
  feed(text: string, line: number, code?: number): void {
    if (isErrorCode(code)) {
      if (code === 8001) return // "Network not found"
      throw new ParseError(this.file, line, 'a route listing', `BIRD error ${code}: ${text}`)
    }
    const c0 = text.charCodeAt(0)
    if (c0 === 9) return this.tabLine(text, line)
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
    this.lastAttr = undefined
    if (this.onRoute) this.onRoute(route)
    else this.routes.push(route)
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
  private header(text: string, from: number, line: number, prefix: string): BirdRoute {
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
      fromAddr = address(raw) ?? raw
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

    const route: BirdRoute = {
      prefix,
      dest: '',
      protocol,
      since,
      primary,
      kernelSyncFailed,
      info,
      nexthops: [],
      attributes: [],
      pos: {file: this.file, line, endLine: line},
    }
    if (this.table !== undefined) route.table = this.table
    if (fromAddr !== undefined) route.from = fromAddr
    if (preference !== undefined) route.preference = preference
    this.destination(route, text.slice(from, open), line, text)
    return route
  }

  /** 2.x/3.x destination word, or 1.6's next hop on the header (`via GW on IF`, `dev IF`, `multipath`). */
  private destination(route: BirdRoute, part: string, line: number, text: string): void {
    const words = splitWords(part)
    // 2.14+ MPLS label policy heads: `PREFIX mpls LABEL DEST`
    if (words.length >= 3 && words[0] === 'mpls') words.splice(0, 2)
    if (words.length === 0) return // RTD_NONE: empty destination word
    const w0 = words[0]!
    if (w0 === 'via' || w0 === 'dev') {
      route.dest = 'unicast'
      route.nexthops.push(this.nexthop(words, line, text))
      return
    }
    if (words.length !== 1) {
      throw new ParseError(this.file, line, 'a destination ("unicast", "unreachable", "blackhole", "via GW on IF", "dev IF", "multipath") before "["', text)
    }
    route.dest = w0 === 'multipath' ? 'unicast' : this.intern.get(w0)
  }

  /** `via GW[ on IF][ table T][ mpls L][ onlink][ weight N]` or `dev IF[ mpls L][ onlink]`, as words. */
  private nexthop(words: string[], line: number, text: string): BirdNexthop {
    const nh: BirdNexthop = {line}
    const value = (k: number): string => {
      const v = words[k + 1]
      if (v === undefined) throw new ParseError(this.file, line, `a value after "${words[k]}"`, text)
      return v
    }
    if (words[0] === 'via') {
      const gw = address(value(0))
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

  private tabLine(text: string, line: number): void {
    if (this.skipNet) return
    const route = this.cur
    if (route === undefined) {
      throw new ParseError(this.file, line, 'a route header before next-hop and attribute lines', text)
    }
    route.pos.endLine = line
    if (text.charCodeAt(1) === 9) {
      // `\t\t…`: a community set wrapped at BIRD's 500-byte line buffer
      const attr = this.lastAttr
      if (attr === undefined) throw new ParseError(this.file, line, 'an attribute line before a continuation line', text)
      attr.value = attr.value.length > 0 ? `${attr.value} ${text.trim()}` : text.trim()
      attr.endLine = line
      return
    }
    if (text.startsWith('\tvia ') || text.startsWith('\tdev ')) {
      this.lastAttr = undefined
      route.nexthops.push(this.nexthop(splitWords(text), line, text))
      return
    }
    let colon = text.indexOf(': ')
    let value: string
    if (colon < 0) {
      if (text.charCodeAt(text.length - 1) !== 58 /* : */) throw new ParseError(this.file, line, TAB_LINE_SHAPE, text)
      colon = text.length - 1
      value = ''
    } else {
      // short values (origin, local_pref, next hop, type) repeat across a table: share one string
      value = text.length - colon - 2 <= 24 ? this.intern.get(text.slice(colon + 2)) : text.slice(colon + 2)
    }
    if (colon <= 1) throw new ParseError(this.file, line, TAB_LINE_SHAPE, text)
    const name = this.intern.name(text, 1, colon, route.attributes.length)
    const attr: BirdAttribute = {name, value, line, endLine: line}
    route.attributes.push(attr)
    this.lastAttr = attr
    switch (name) {
      case 'Type': // 1.6 `BGP unicast univ`, 2.x `BGP univ`
      case 'source': {
        // 3.x `source: BGP`
        const w = value.trim()
        const sp = w.indexOf(' ')
        const src = sp < 0 ? w : w.slice(0, sp)
        if (src.length > 0) route.source = this.intern.get(src)
        break
      }
      case 'BGP.next_hop':
      case 'bgp_next_hop': {
        // IPv6 sessions print `GLOBAL LINKLOCAL`; the first is the next hop
        const w = value.trim()
        const sp = w.indexOf(' ')
        const nh = address(sp < 0 ? w : w.slice(0, sp))
        if (nh !== undefined) route.bgpNextHop = nh
        break
      }
      case 'from': {
        // 3.x prints the peer as an attribute; the header shows `from` only when it differs from the gateway
        if (route.from === undefined) {
          const a = address(value.trim())
          if (a !== undefined) route.from = a
        }
        break
      }
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
  const parser = new BirdRouteParser(file)
  frameBirdText(text, file, (t, l, c) => parser.feed(t, l, c))
  return parser.end()
}
