// `ip -d route show table all`, plain `ip route`, `ip -6 -d route` text -> KernelRoute[].
// A line-fed state machine: a route is a header line plus its `\tnexthop ...` continuation lines, so
// a route is complete only when the next header (or the end) arrives. `feed`/`end` let a stream drive it.
import {ParseError} from '../model/errors.js'
import {canonicalAddress} from '../model/prefix.js'
import {ROUTE_TYPES, type KernelRoute, type SourcePos} from '../model/types.js'
import {
  ROUTE_FLAGS,
  buildRoute,
  splitLines,
  type RawGateway,
  type RawNexthop,
  type RawRoute,
} from './ip-common.js'
import type {IpRouteParseOptions} from './ip-route-json.js'

// Words that open a line ip prints under a route (`cache users 1 age 0sec`, `-s` statistics).
const CONTINUATION_WORDS = new Set(['cache', 'users', 'used', 'age', 'expires', 'ipid'])

// Keywords ip prints followed by one value that the model does not keep (metrics, marks, timers...).
const SKIP_WITH_VALUE = new Set([
  'from', 'nhid', 'mark', 'uid', 'expires', 'realm', 'realms', 'iif', 'mtu', 'advmss', 'rtt', 'rttvar', 'reordering',
  'window', 'cwnd', 'initcwnd', 'initrwnd', 'ssthresh', 'features', 'quickack', 'congctl', 'fastopen_no_cookie',
  'hoplimit', 'rto_min', 'error', 'ttl-propagate', 'users', 'age', 'used',
])

const NEXTHOP_EXPECTED = 'a next hop "nexthop via GW dev IF" or "nexthop dev IF"'

interface Pending {
  raw: RawRoute
  line: number
  endLine: number
}

export class IpRouteTextParser {
  private pending?: Pending
  private readonly routes: KernelRoute[] = []

  constructor(readonly file = 'ip-d-route.txt', readonly opts: IpRouteParseOptions = {}) {}

  /** Feed one line (without its terminator). Returns the route this line completed, if any. */
  feed(line: string, lineNo: number): KernelRoute | undefined {
    const text = line.endsWith('\r') ? line.slice(0, -1) : line
    const tokens = text.trim().split(/\s+/).filter((t) => t !== '')
    if (tokens.length === 0) return this.flush() // a blank line ends the route
    if (tokens[0] === 'nexthop') {
      if (!this.pending) throw new ParseError(this.file, lineNo, 'a route line before a "nexthop" line', text)
      this.pending.raw.nexthops ??= []
      this.pending.raw.nexthops.push(this.nexthop(tokens, lineNo, text.trim()))
      this.pending.endLine = lineNo
      return undefined
    }
    const c0 = text.charCodeAt(0)
    if ((c0 === 32 || c0 === 9) && !startsRoute(tokens)) {
      // a line ip prints under a route (`cache ...`): part of the route, not modelled; anything else
      // indented is neither a route nor part of one, and is refused rather than dropped
      if (!this.pending || !CONTINUATION_WORDS.has(tokens[0]))
        throw new ParseError(
          this.file,
          lineNo,
          'a route line, or a "nexthop" or "cache" line under a route',
          text.trim(),
        )
      this.pending.endLine = lineNo
      return undefined
    }
    const done = this.flush()
    this.pending = {raw: this.header(tokens, lineNo), line: lineNo, endLine: lineNo}
    return done
  }

  /** No more lines: returns the last route, if one was pending. */
  end(): KernelRoute | undefined {
    return this.flush()
  }

  /** Every route completed so far. */
  result(): KernelRoute[] {
    return this.routes
  }

  private flush(): KernelRoute | undefined {
    const p = this.pending
    if (!p) return undefined
    this.pending = undefined
    const pos: SourcePos = {file: this.file, line: p.line, endLine: p.endLine}
    const route = buildRoute(p.raw, pos, this.opts.family)
    this.routes.push(route)
    return route
  }

  private value(tokens: string[], i: number, lineNo: number): string {
    const v = tokens[i + 1]
    if (v === undefined) throw new ParseError(this.file, lineNo, `a value after "${tokens[i]}"`, tokens.join(' '))
    return v
  }

  private number(tokens: string[], i: number, lineNo: number): number {
    const v = this.value(tokens, i, lineNo)
    if (!/^\d+$/.test(v)) throw new ParseError(this.file, lineNo, `a number after "${tokens[i]}"`, v)
    return Number(v)
  }

  /** `via [inet|inet6] ADDR`: returns the gateway and how many tokens it used after `via`. */
  private via(tokens: string[], i: number, lineNo: number): [RawGateway, number] {
    const first = this.value(tokens, i, lineNo)
    if (first === 'inet' || first === 'inet6') return [{family: first, host: this.value(tokens, i + 1, lineNo)}, 2]
    return [{host: first}, 1]
  }

  private header(tokens: string[], lineNo: number): RawRoute {
    let i = 0
    if (tokens[0] === 'Deleted') i++ // `ip monitor` prefix
    const raw: RawRoute = {dst: '', flags: []}
    if ((ROUTE_TYPES as readonly string[]).includes(tokens[i])) raw.type = tokens[i++]
    const dst = tokens[i++]
    if (dst === undefined)
      throw new ParseError(this.file, lineNo, 'a route destination after the route type', tokens.join(' '))
    raw.dst = dst
    for (; i < tokens.length; i++) {
      const t = tokens[i]
      switch (t) {
        case 'via': {
          const [gw, n] = this.via(tokens, i, lineNo)
          raw.gateway = gw
          i += n
          break
        }
        case 'dev': raw.dev = this.value(tokens, i++, lineNo); break
        case 'table': raw.table = this.value(tokens, i++, lineNo); break
        case 'proto': raw.protocol = this.value(tokens, i++, lineNo); break
        case 'scope': raw.scope = this.value(tokens, i++, lineNo); break
        case 'src': raw.prefsrc = this.value(tokens, i++, lineNo); break
        case 'metric': raw.metric = this.number(tokens, i++, lineNo); break
        case 'tos':
        case 'dsfield': raw.tos = this.value(tokens, i++, lineNo); break
        case 'pref': raw.pref = this.value(tokens, i++, lineNo); break
        case 'lock': break // `lock mtu 1400`: the metric follows
        default:
          if (ROUTE_FLAGS.has(t)) raw.flags.push(t)
          else if (SKIP_WITH_VALUE.has(t)) i++
          // anything else (encap ..., future words) is tolerated and skipped
      }
    }
    return raw
  }

  // What iproute2's print_rta_multipath prints: `[encap ...] [as to ADDR] [via [FAMILY] ADDR] dev IF weight N FLAG...`
  // (`realm[s] ...` too); a word it never prints there is refused, not skipped, and so is a next hop with no
  // `dev`/`via`.
  private nexthop(tokens: string[], lineNo: number, text: string): RawNexthop {
    const nh: RawNexthop = {flags: []}
    const refuse = () => new ParseError(this.file, lineNo, NEXTHOP_EXPECTED, text)
    for (let i = 1; i < tokens.length; i++) {
      const t = tokens[i]
      switch (t) {
        case 'via': {
          const [gw, n] = this.via(tokens, i, lineNo)
          nh.gateway = gw
          i += n
          break
        }
        case 'dev': nh.dev = this.value(tokens, i++, lineNo); break
        case 'weight': nh.weight = this.number(tokens, i++, lineNo); break
        case 'src': this.value(tokens, i++, lineNo); break
        case 'as': i += tokens[i + 1] === 'to' ? 2 : 1; break // `as to LABEL` (MPLS)
        case 'encap': // `encap TYPE ...`, printed first: its words run up to `as`, `via` or `dev`
          while (i + 1 < tokens.length && !['as', 'via', 'dev'].includes(tokens[i + 1])) i++
          break
        default:
          if (ROUTE_FLAGS.has(t)) nh.flags.push(t)
          else if (SKIP_WITH_VALUE.has(t)) this.value(tokens, i++, lineNo)
          else throw refuse()
      }
    }
    if (nh.dev === undefined && nh.gateway === undefined) throw refuse()
    return nh
  }
}

/** Does a line (its tokens) begin a route of its own: `[Deleted] [TYPE] PREFIX|default ...`? */
function startsRoute(tokens: string[]): boolean {
  const first = tokens[0] === 'Deleted' ? tokens[1] : tokens[0]
  if (first === undefined) return false
  if ((ROUTE_TYPES as readonly string[]).includes(first) || first === 'default') return true
  const slash = first.indexOf('/')
  return canonicalAddress(slash < 0 ? first : first.slice(0, slash)) !== undefined
}

/** The whitespace every non-blank line starts with (a quoted paste indents the whole dump). */
function commonIndent(lines: string[]): string {
  let indent: string | undefined
  for (const line of lines) {
    if (line.trim() === '') continue
    const own = /^[ \t]*/.exec(line)![0]
    if (indent === undefined) indent = own
    else {
      let n = 0
      while (n < indent.length && n < own.length && indent[n] === own[n]) n++
      indent = indent.slice(0, n)
    }
    if (indent === '') return ''
  }
  return indent ?? ''
}

export function parseIpRouteText(text: string, file = 'ip-d-route.txt', opts: IpRouteParseOptions = {}): KernelRoute[] {
  const parser = new IpRouteTextParser(file, opts)
  const lines = splitLines(text)
  const indent = commonIndent(lines).length
  lines.forEach((line, i) => parser.feed(indent > 0 ? line.slice(indent) : line, i + 1))
  parser.end()
  return parser.result()
}
