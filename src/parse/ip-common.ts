// Helpers shared by the iproute2 parsers: line splitting, JSON with positions, table ids.
import {tableIdOf as tableId} from '../model/fib.js'
import {ParseError} from '../model/errors.js'
import {ownCopy} from './own-copy.js'
import {canonicalAddress, canonicalPrefix, familyOf, ipv4Value} from '../model/prefix.js'
import {
  ROUTE_TYPES,
  type Family,
  type Gateway,
  type KernelRoute,
  type Nexthop,
  type RouteType,
  type SourcePos,
} from '../model/types.js'

/** Lines without their terminators (LF or CRLF); a missing trailing newline is fine. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l))
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
  return lines
}

/** 1-based line of a character offset. */
export function lineAt(text: string, offset: number): number {
  let line = 1
  const end = Math.min(offset, text.length)
  for (let i = 0; i < end; i++) if (text.charCodeAt(i) === 10) line++
  return line
}


/**
 * Start/end lines of every top-level element of a JSON array, in order. iproute2 prints the whole array on
 * one line, so this only matters for pretty-printed files; the text must already be valid JSON.
 */
export function topLevelElementLines(text: string): Array<{line: number; endLine: number}> {
  const out: Array<{line: number; endLine: number}> = []
  let depth = 0
  let inString = false
  let line = 1
  let start = 0
  let inScalar = false // a top-level element that is not an object/array (number, string, literal)
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '\n') line++
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') {
        inString = false
        if (depth === 1 && inScalar) {
          out.push({line: start, endLine: line})
          inScalar = false
        }
      }
      continue
    }
    if (c === '"') {
      inString = true
      if (depth === 1) {
        start = line
        inScalar = true
      }
    } else if (c === '{' || c === '[') {
      if (depth === 1) start = line
      depth++
    } else if (c === '}' || c === ']') {
      depth--
      if (depth === 1) out.push({line: start, endLine: line})
      if (depth === 1 && inScalar) inScalar = false
    } else if (depth === 1 && /[-0-9tfn]/.test(c) && !inScalar) {
      // number or literal: consume it
      start = line
      while (i + 1 < text.length && /[-+0-9.eEa-z]/.test(text[i + 1])) i++
      out.push({line: start, endLine: line})
    }
  }
  return out
}

/**
 * Parse a file holding one JSON array (iproute2 `-j` output). Empty text is an empty array. Errors become a
 * ParseError naming the line. Returns the elements with their positions.
 */
export function parseJsonArray(text: string, file: string, what: string): Array<{value: unknown; pos: SourcePos}> {
  const {values, posAt} = jsonArrayElements(text, file, what)
  return values.map((value, i) => ({value, pos: posAt(i)}))
}

/** parseJsonArray without a wrapper object per element: a full table has a million of them. */
export function jsonArrayElements(
  text: string,
  file: string,
  what: string,
): {values: unknown[]; posAt(i: number): SourcePos} {
  if (text.trim() === '') return {values: [], posAt: () => ({file, line: 1, endLine: 1})}
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    // `ip -4 -j ...; ip -6 -j ...` concatenated: several arrays back to back
    const arrays = concatenatedArrays(text)
    if (arrays) data = arrays.flat()
    if (!arrays) {
      const at = jsonErrorOffset(text)
      const line = lineAt(text, at)
      const found = at >= text.length ? 'end of file' : text.slice(at, at + 30).split('\n')[0]
      throw new ParseError(
        file,
        line,
        `a JSON array of ${what} (${error instanceof SyntaxError ? 'invalid JSON' : String(error)})`,
        found,
      )
    }
  }
  if (!Array.isArray(data))
    throw new ParseError(
      file,
      1,
      `a JSON array of ${what}`,
      typeof data === 'object' ? (data === null ? 'null' : 'an object') : typeof data,
    )
  // iproute2 prints the array on one line: every element is on line 1 (one shared position), no need to scan
  const newline = text.indexOf('\n')
  if (newline < 0 || newline >= text.trimEnd().length) {
    const pos = {file, line: 1, endLine: 1}
    return {values: data, posAt: () => pos}
  }
  const lines = topLevelElementLines(text)
  return {values: data, posAt: (i) => ({file, line: lines[i]?.line ?? 1, endLine: lines[i]?.endLine ?? 1})}
}

// One-line arrays larger than this are parsed in pieces of about this size (see forEachJsonElement).
const JSON_PIECE = 1 << 20

/**
 * Every element of a file holding one JSON array, handed to `each` with its position, as parseJsonArray
 * gives them. A large one-line array (iproute2's `-j` output of a full table) is parsed in ~1 MiB pieces,
 * so the parsed JSON of a route dies young instead of a million of them living until the end. A piece ends
 * at a `},{"` (never inside a string: a quote there would be escaped); when that one was inside a nested list
 * (the next hops of a multipath route) the piece does not parse, and the next candidate is taken.
 * `piece` is only lowered by tests, to cross piece boundaries with small inputs.
 */
export function forEachJsonElement(
  text: string, file: string, what: string, each: (value: unknown, pos: SourcePos) => void, piece = JSON_PIECE,
): void {
  const open = firstNonBlank(text)
  const close = lastNonBlank(text)
  const oneLine = text.indexOf('\n', open) < 0 || text.indexOf('\n', open) > close
  if (
    text.length <= 2 * piece ||
    !oneLine ||
    text.charCodeAt(open) !== 91 /* [ */ ||
    text.charCodeAt(close) !== 93 /* ] */
  ) {
    const {values, posAt} = jsonArrayElements(text, file, what)
    for (let i = 0; i < values.length; i++) each(values[i], posAt(i))
    return
  }
  const pos = {file, line: 1, endLine: 1}
  let start = open + 1 // first character of the next piece's first element
  while (start < close) {
    let cut = text.indexOf('},{"', start + piece)
    let values: unknown[] | undefined
    for (let tries = 0; values === undefined; tries++) {
      const end = cut < 0 || cut >= close ? close : cut + 1
      try {
        values = JSON.parse(`[${text.slice(start, end)}]`) as unknown[]
        start = end + 1
      } catch {
        // a cut inside a nested list: the next candidate. Bad JSON fails every candidate: after a few, or at
        // the end, the rest is parsed at once, which either works or says what is wrong where
        if (cut < 0 || cut >= close || tries >= 32) {
          const {values: rest} = jsonArrayElements(`[${text.slice(start, close)}]`, file, what)
          for (const value of rest) each(value, pos)
          return
        }
        cut = text.indexOf('},{"', cut + 1)
      }
    }
    for (const value of values) each(value, pos)
  }
}

function firstNonBlank(s: string): number {
  let i = 0
  while (i < s.length && s.charCodeAt(i) <= 32) i++
  return i
}

function lastNonBlank(s: string): number {
  let i = s.length - 1
  while (i >= 0 && s.charCodeAt(i) <= 32) i--
  return i
}

/** Offset of the first JSON syntax error (Node 20 does not always say where). */
export function jsonErrorOffset(s: string): number {
  let i = 0
  const fail = (): never => {
    throw i
  }
  const ws = () => {
    while (i < s.length && ' \t\r\n'.includes(s[i])) i++
  }
  const value = (): void => {
    ws()
    const c = s[i]
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']'
      i++
      ws()
      if (s[i] === close) return void i++
      for (;;) {
        if (c === '{') {
          ws()
          if (s[i] !== '"') fail()
          value()
          ws()
          if (s[i] !== ':') fail()
          i++
        }
        value()
        ws()
        if (s[i] === ',') i++
        else if (s[i] === close) return void i++
        else fail()
      }
    } else if (c === '"') {
      for (i++; i < s.length; i++) {
        if (s[i] === '"') return void i++
        if (s[i] === '\\') i++
        else if (s.charCodeAt(i) < 0x20) fail()
      }
      fail()
    } else {
      const m = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y
      m.lastIndex = i
      if (!m.exec(s)) fail()
      i = m.lastIndex
    }
  }
  try {
    value()
    ws()
    return i
  } catch (at) {
    // a number is our own position; anything else (stack overflow on absurd nesting) gives up
    return typeof at === 'number' ? at : s.length
  }
}

/** Two or more JSON arrays one after the other, or undefined when the text is not that. */
function concatenatedArrays(text: string): unknown[][] | undefined {
  const parts: string[] = []
  let depth = 0
  let start = -1
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '"') {
      i++
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1
    } else if (c === '[' || c === '{') {
      if (depth === 0) start = i
      depth++
    } else if (c === ']' || c === '}') {
      depth--
      if (depth < 0) return undefined
      if (depth === 0) parts.push(text.slice(start, i + 1))
    } else if (depth === 0 && !/\s/.test(c)) return undefined
  }
  if (depth !== 0 || parts.length < 2) return undefined
  try {
    const arrays = parts.map((p) => JSON.parse(p) as unknown)
    return arrays.every(Array.isArray) ? (arrays as unknown[][]) : undefined
  } catch {
    return undefined
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Typed field readers: absent gives undefined, a wrong type a ParseError. */
export class Fields {
  constructor(readonly obj: Record<string, unknown>, readonly pos: SourcePos, readonly what: string) {}

  private fail(key: string, expected: string): never {
    throw new ParseError(
      this.pos.file,
      this.pos.line,
      `${this.what} field "${key}" to be ${expected}`,
      JSON.stringify(this.obj[key]) ?? 'undefined',
    )
  }

  str(key: string): string | undefined {
    const v = this.obj[key]
    if (v === undefined) return undefined
    if (typeof v !== 'string') this.fail(key, 'a string')
    return v
  }

  reqStr(key: string): string {
    const v = this.str(key)
    if (v === undefined) this.fail(key, 'a string')
    return v
  }

  /** A string, or a number printed as one (a table or protocol id). */
  name(key: string): string | undefined {
    const v = this.obj[key]
    if (typeof v === 'number' && Number.isFinite(v)) return String(v)
    return this.str(key)
  }

  num(key: string): number | undefined {
    const v = this.obj[key]
    if (v === undefined) return undefined
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(key, 'a number')
    return v
  }

  strs(key: string): string[] | undefined {
    const v = this.obj[key]
    if (v === undefined) return undefined
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) this.fail(key, 'a list of strings')
    return v as string[]
  }

  list(key: string): unknown[] | undefined {
    const v = this.obj[key]
    if (v === undefined) return undefined
    if (!Array.isArray(v)) this.fail(key, 'a list')
    return v
  }

  rec(key: string): Record<string, unknown> | undefined {
    const v = this.obj[key]
    if (v === undefined) return undefined
    if (!isRecord(v)) this.fail(key, 'an object')
    return v
  }
}

// ---------------------------------------------------------------- routes (shared by the JSON and text parsers)

// Types whose route forwards nowhere: no next hops even when ip prints `dev lo` (IPv6 unreachable).
const NO_NEXTHOP_TYPES = new Set<string>(['blackhole', 'unreachable', 'prohibit', 'throw'])

// rtnh flags: on a single-path route the kernel reports them in rtm_flags, so they are copied to the next hop.
export const NEXTHOP_FLAGS = new Set(['dead', 'onlink', 'pervasive', 'offload', 'trap', 'linkdown', 'unresolved'])
export const ROUTE_FLAGS = new Set([...NEXTHOP_FLAGS, 'notify', 'rt_offload', 'rt_trap', 'rt_offload_failed'])

/** A gateway as printed: `gateway` (same family as the route) or `via {family, host}` (RTA_VIA). */
export interface RawGateway {
  family?: string // set for RTA_VIA
  host: string
}

export interface RawNexthop {
  gateway?: RawGateway
  dev?: string
  weight?: number
  flags: string[]
}

/** One route as ip printed it, before defaults and canonical forms. */
export interface RawRoute {
  type?: string
  dst: string
  gateway?: RawGateway
  dev?: string
  table?: string
  protocol?: string
  scope?: string
  metric?: number
  prefsrc?: string
  tos?: string
  pref?: string
  flags: string[]
  nexthops?: RawNexthop[]
}

function inferFamily(raw: RawRoute, defaultFamily: Family): Family {
  if (raw.dst !== 'default') return familyOf(raw.dst)
  const gws = [raw.gateway, ...(raw.nexthops ?? []).map((n) => n.gateway)].filter(
    (g): g is RawGateway => g !== undefined,
  )
  const plain = gws.find((g) => g.family === undefined)
  if (plain) return familyOf(plain.host)
  // RTA_VIA is only printed when the gateway's family differs from the route's
  if (gws.length > 0) return gws[0].family === 'inet6' ? 'inet' : 'inet6'
  if (raw.prefsrc) return familyOf(raw.prefsrc)
  if (raw.pref !== undefined) return 'inet6' // iproute2 prints `pref` for IPv6 routes only
  return defaultFamily
}

// A full table repeats a few gateways and flag sets millions of times: share them (never mutated).
const NO_FLAGS: string[] = Object.freeze([]) as unknown as string[]
const gateways = new Map<string, Gateway>()

function gateway(raw: RawGateway, pos: SourcePos): Gateway {
  const key = `${raw.family ?? ''}|${raw.host}`
  const known = gateways.get(key)
  if (known) return known
  const g = makeGateway(raw, pos)
  if (gateways.size < 100_000) gateways.set(ownCopy(key), g) // kept across parses: not a view into this dump's text
  return g
}

function makeGateway(raw: RawGateway, pos: SourcePos): Gateway {
  // shared by every route through it, and kept across parses: not a view into this dump's text
  const address = canonicalAddress(ownCopy(raw.host))
  if (address === undefined) throw new ParseError(pos.file, pos.line, 'a gateway address', raw.host)
  const family: Family = raw.family === 'inet6' || raw.family === 'inet' ? raw.family : familyOf(address)
  return {family, address}
}

// ... and a few hundred next-hop sets: one frozen list per distinct set, shared by every route using it
const NO_NEXTHOPS: Nexthop[] = Object.freeze([]) as unknown as Nexthop[]
const nexthopLists = new Map<string, Nexthop[]>()
// the common shape, one next hop of weight 1 without flags, by (shared) gateway object and device: no key string
const singleLists = new Map<Gateway | undefined, Map<string | undefined, Nexthop[]>>()

function sharedNexthops(list: Nexthop[]): Nexthop[] {
  const first = list[0]!
  const simple = list.length === 1 && first.weight === 1 && first.flags.length === 0
  let byDev: Map<string | undefined, Nexthop[]> | undefined
  let key = ''
  if (simple) {
    byDev = singleLists.get(first.gateway)
    const known = byDev?.get(first.dev)
    if (known) return known
  } else {
    for (const n of list)
      key += `${n.gateway ? `${n.gateway.family} ${n.gateway.address}` : '-'} ${n.dev ?? '-'} ${n.weight} ${n.flags.join(',')};`
    const known = nexthopLists.get(key)
    if (known) return known
  }
  for (const n of list) {
    if (n.dev !== undefined) n.dev = ownCopy(n.dev) // kept across parses: not a view into this dump's text
    Object.freeze(n)
  }
  Object.freeze(list)
  if (nexthopLists.size + singleLists.size >= 100_000) return list
  if (simple) {
    if (!byDev) singleLists.set(first.gateway, (byDev = new Map()))
    byDev.set(first.dev, list)
  } else {
    nexthopLists.set(ownCopy(key), list)
  }
  return list
}

/** Apply iproute2's omitted defaults (type unicast, proto boot, scope global, table main) and canonical forms. */
export function buildRoute(raw: RawRoute, pos: SourcePos, defaultFamily: Family = 'inet'): KernelRoute {
  const type = (raw.type ?? 'unicast') as RouteType
  if (!ROUTE_TYPES.includes(type))
    throw new ParseError(pos.file, pos.line, `a route type (${ROUTE_TYPES.join(', ')})`, raw.type)
  const family = inferFamily(raw, defaultFamily)
  const dst = routeDst(raw.dst, family, pos)
  const table = raw.table ?? 'main'
  const flags = raw.flags.length === 0 ? NO_FLAGS : [...raw.flags]
  let nexthops: Nexthop[]
  if (NO_NEXTHOP_TYPES.has(type)) nexthops = NO_NEXTHOPS
  else if (raw.nexthops && raw.nexthops.length > 0) {
    nexthops = sharedNexthops(raw.nexthops.map((nh) => {
      const out: Nexthop = {weight: nh.weight ?? 1, flags: nh.flags.length === 0 ? NO_FLAGS : [...nh.flags]}
      if (nh.gateway) out.gateway = gateway(nh.gateway, pos)
      if (nh.dev !== undefined) out.dev = nh.dev
      return out
    }))
  } else if (raw.gateway || raw.dev !== undefined) {
    const nh: Nexthop = {weight: 1, flags: flags.length === 0 ? NO_FLAGS : flags.filter((f) => NEXTHOP_FLAGS.has(f))}
    if (raw.gateway) nh.gateway = gateway(raw.gateway, pos)
    if (raw.dev !== undefined) nh.dev = raw.dev
    nexthops = sharedNexthops([nh])
  } else nexthops = NO_NEXTHOPS
  const route: KernelRoute = {
    family,
    type,
    dst,
    table,
    tableId: tableId(table),
    protocol: raw.protocol ?? 'boot',
    scope: raw.scope ?? 'global',
    metric: raw.metric ?? 0,
    flags,
    nexthops,
    pos,
  }
  if (raw.prefsrc !== undefined) route.prefsrc = routeSrc(raw.prefsrc, pos)
  if (raw.tos !== undefined) route.tos = raw.tos
  return route
}

/**
 * What buildRoute gives a raw route that differs from the one it built `like` from only in its dst (neither
 * of them "default"), gateway host, prefsrc and metric, when the caller knows that route's shared next-hop
 * list. For a full table: a few shapes of route printed many times over.
 */
export function buildRouteLike(
  like: KernelRoute,
  dst: string,
  metric: number,
  prefsrc: string | undefined,
  nexthops: Nexthop[],
): KernelRoute {
  const family = familyOf(dst) // inferFamily of a dst other than "default"
  // the keys in buildRoute's order (a literal, not a spread of `like`: a smaller object, less to collect)
  const route: KernelRoute = {
    family,
    type: like.type,
    dst: routeDst(dst, family, like.pos),
    table: like.table,
    tableId: like.tableId,
    protocol: like.protocol,
    scope: like.scope,
    metric,
    flags: like.flags.length === 0 ? NO_FLAGS : [...like.flags],
    nexthops,
    pos: like.pos,
  }
  if (prefsrc !== undefined) route.prefsrc = routeSrc(prefsrc, like.pos)
  if (like.tos !== undefined) route.tos = like.tos
  return route
}

function routeDst(raw: string, family: Family, pos: SourcePos): string {
  // ipaddr.js also takes "5" or "0x7f000001"; ip prints only dotted-quad, colon or "default"
  const slash = raw.indexOf('/')
  const dst =
    raw === 'default' ||
    ipv4Value(raw, 0, slash < 0 ? raw.length : slash) >= 0 ||
    /^[0-9a-fA-F:.]*[.:][0-9a-fA-F:.]*(\/\d{1,3})?$/.test(raw)
      ? canonicalPrefix(raw, family)
      : undefined
  if (dst === undefined)
    throw new ParseError(pos.file, pos.line, 'a route destination (prefix, address or "default")', raw)
  return dst
}

function routeSrc(raw: string, pos: SourcePos): string {
  const src = canonicalAddress(raw)
  if (src === undefined) throw new ParseError(pos.file, pos.line, 'a source address after "src"', raw)
  return src
}
