// `show protocols` and `show protocols all` of BIRD 1.6 (protocol-level Routes/stats) and 2.x/3.x
// (per-channel `Channel ipv4` blocks). Reference: bird-output-formats.md §2.2–2.3, §3.2–3.3, §4.2–4.3, §5.5.
//
// A row is `NAME PROTO TABLE STATE SINCE INFO`: split on whitespace runs (long names push the
// columns right), SINCE may be two words (`2026-11-29 15:45:52`), INFO is the rest verbatim.
// Detail lines are `Key: value` nested by indentation; they are flattened into `details` with
// parent keys joined by "/" (`BGP state/Neighbor address`, `Channel ipv4/Routes`).
import {ParseError} from '../model/errors.js'
import {canonicalAddress} from '../model/prefix.js'
import type {BirdChannelStats, BirdProtocol, BirdRouteCounts} from '../model/types.js'
import {frameBirdText, isErrorCode} from './bird-framing.js'

const ROW_SHAPE = 'a protocol row "NAME PROTO TABLE STATE SINCE [INFO]"'

// proto_state_name() in 1.6 and 2.x/3.x
const STATES = new Set(['down', 'start', 'up', 'wait', 'feed', 'stop', 'flush', '???'])

// 8003 "No protocols match": an empty listing, not bad input.
const NO_MATCH = 'No protocols match'

interface Word {
  text: string
  start: number
  end: number
}

function words(s: string, max: number): Word[] {
  const out: Word[] = []
  let i = 0
  const n = s.length
  while (i < n && out.length < max) {
    while (i < n && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 9)) i++
    if (i >= n) break
    const start = i
    while (i < n && s.charCodeAt(i) !== 32 && s.charCodeAt(i) !== 9) i++
    out.push({text: s.slice(start, i), start, end: i})
  }
  return out
}

const isDate = (s: string): boolean => /^\d{4}-\d{2}-\d{2}$/.test(s)
const isClock = (s: string): boolean => /^\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(s)

function isHeadingRow(ws: Word[]): boolean {
  return (
    ws.length >= 5 &&
    ws[0]!.text.toLowerCase() === 'name' &&
    ws[1]!.text.toLowerCase() === 'proto' &&
    ws[2]!.text.toLowerCase() === 'table'
  )
}

/** `8 imported, 1 filtered, 10 exported, 7 preferred`, by label (the filtered part is optional). */
export function parseRoutesCounts(value: string): BirdRouteCounts | undefined {
  const counts: Record<string, number> = {}
  for (const part of value.split(',')) {
    const ws = part.trim().split(/\s+/)
    if (ws.length === 2 && /^\d+$/.test(ws[0]!)) counts[ws[1]!] = Number(ws[0])
  }
  if (counts.imported === undefined || counts.exported === undefined) return undefined
  const routes: BirdRouteCounts = {imported: counts.imported, exported: counts.exported}
  if (counts.filtered !== undefined) routes.filtered = counts.filtered
  if (counts.preferred !== undefined) routes.preferred = counts.preferred
  return routes
}

// `Routes` and `Route change stats/Import updates|withdraws`, of a channel (2.x/3.x) or of the protocol (1.6)
const CHANNEL_STAT = /^(?:Channel ([^/]+)\/)?(?:(Routes)|Route change stats\/Import (updates|withdraws))$/

/** Every channel's counts and accepted imports, from the flattened details. */
function channelStats(details: Record<string, string>): BirdChannelStats[] {
  const out = new Map<string, BirdChannelStats>()
  for (const [key, value] of Object.entries(details)) {
    const m = CHANNEL_STAT.exec(key)
    if (m === null) continue
    const channel = m[1] ?? ''
    let c = out.get(channel)
    if (c === undefined) out.set(channel, (c = {channel}))
    if (m[2] !== undefined) {
      const routes = parseRoutesCounts(value)
      if (routes !== undefined) c.routes = routes
      continue
    }
    // received rejected filtered ignored accepted
    const accepted = value.trim().split(/\s+/).pop()!
    if (!/^\d+$/.test(accepted)) continue
    if (m[3] === 'updates') c.importUpdatesAccepted = Number(accepted)
    else c.importWithdrawsAccepted = Number(accepted)
  }
  return [...out.values()]
}

function finishProtocol(p: BirdProtocol): void {
  const d = p.details
  if (p.proto === 'BGP') {
    // BGP's Info is `%-14s` state, then the error class and message (`Socket: Connection refused`)
    const info = p.info
    let sp = 0
    while (sp < info.length && info.charCodeAt(sp) !== 32) sp++
    const infoState = info.slice(0, sp)
    const infoError = info.slice(sp).trim()
    const state = d['BGP state'] ?? (infoState.length > 0 ? infoState : undefined)
    if (state !== undefined) p.bgpState = state
    const nbr = d['BGP state/Neighbor address']
    if (nbr !== undefined) p.neighborAddress = canonicalAddress(nbr) ?? nbr
    const nAs = Number(d['BGP state/Neighbor AS'])
    if (d['BGP state/Neighbor AS'] !== undefined && Number.isInteger(nAs)) p.neighborAs = nAs
    const lAs = Number(d['BGP state/Local AS'])
    if (d['BGP state/Local AS'] !== undefined && Number.isInteger(lAs)) p.localAs = lAs
    const err = d['BGP state/Last error'] ?? (infoError.length > 0 ? infoError : undefined)
    if (err !== undefined) p.lastError = err
  }
  const channels = channelStats(d)
  if (channels.length === 0) return
  p.channels = channels
  // 1.6: the protocol's `Routes:` (channel ""); 2.x/3.x: the ipv4 channel's, else the first channel's
  const routes =
    channels.find((c) => (c.channel === '' || c.channel === 'ipv4') && c.routes)?.routes ??
    channels.find((c) => c.routes)?.routes
  if (routes !== undefined) p.routes = routes
}

export function parseBirdProtocols(text: string, file = 'birdc-show-protocols-all.txt'): BirdProtocol[] {
  const protocols: BirdProtocol[] = []
  let cur: BirdProtocol | undefined
  // open parents of the current detail line: indentation, and the path of its key ("BGP state/Neighbor address")
  const stack: {indent: number; path: string}[] = []

  const close = (): void => {
    if (cur !== undefined) finishProtocol(cur)
    cur = undefined
    stack.length = 0
  }

  const detail = (p: BirdProtocol, indent: number, key: string, value: string, lineNo: number): void => {
    while (stack.length > 0 && stack[stack.length - 1]!.indent >= indent) stack.pop()
    const path = stack.length > 0 ? `${stack[stack.length - 1]!.path}/${key}` : key
    stack.push({indent, path})
    if (!(path in p.details)) p.details[path] = value
    p.pos.endLine = lineNo
  }

  // A birdc detail line read in place, as the sink below reads it, without slicing the line and its body
  // first (a route reflector's listing is thousands of them). false: the sink reads it (a row, a detail
  // line before any row, white space other than spaces and TABs at an end).
  const inPlace = (t: string, start: number, end: number, lineNo: number): boolean => {
    const c0 = t.charCodeAt(start)
    if ((c0 !== 32 && c0 !== 9) || cur === undefined) return false
    let from = start + 1
    while (from < end && (t.charCodeAt(from) === 32 || t.charCodeAt(from) === 9)) from++
    let to = end
    while (to > from && (t.charCodeAt(to - 1) === 32 || t.charCodeAt(to - 1) === 9)) to--
    if (!isPrintableAscii(t.charCodeAt(to - 1))) return false
    let sep = from // `Key: value`: the first ": ", if it is not where the body starts
    while (sep < to - 1 && !(t.charCodeAt(sep) === 58 && t.charCodeAt(sep + 1) === 32)) sep++
    if (sep > from && sep < to - 1) {
      let v = sep + 2
      while (v < to && (t.charCodeAt(v) === 32 || t.charCodeAt(v) === 9)) v++
      if (v < to && !isPrintableAscii(t.charCodeAt(v))) return false
      detail(cur, from - start, t.slice(from, sep), t.slice(v, to), lineNo)
    } else {
      detail(cur, from - start, t.slice(from, t.charCodeAt(to - 1) === 58 ? to - 1 : to), '', lineNo)
    }
    return true
  }

  frameBirdText(text, file, (line, lineNo, code) => {
    if (isErrorCode(code)) {
      if (code === 8003) return
      throw new ParseError(file, lineNo, 'a protocol listing', `BIRD error ${code}: ${line}`)
    }
    if (line === NO_MATCH) return
    const c0 = line.charCodeAt(0)
    if (c0 === 32 || c0 === 9) {
      if (cur === undefined) throw new ParseError(file, lineNo, `${ROW_SHAPE} before its detail lines`, line)
      let indent = 0
      while (indent < line.length && (line.charCodeAt(indent) === 32 || line.charCodeAt(indent) === 9)) indent++
      const body = line.slice(indent).trimEnd()
      // `Key: value`, `Key:` (empty) or a bare heading (`Channel ipv4`, `Local capabilities`)
      const sep = body.indexOf(': ')
      if (sep > 0) detail(cur, indent, body.slice(0, sep), body.slice(sep + 2).trim(), lineNo)
      else detail(cur, indent, body.endsWith(':') ? body.slice(0, -1) : body, '', lineNo)
      return
    }
    const ws = words(line, 7)
    if (isHeadingRow(ws)) return close()
    if (ws.length < 5 || !STATES.has(ws[3]!.text)) throw new ParseError(file, lineNo, ROW_SHAPE, line)
    close()
    let sinceEnd = ws[4]!.end
    if (ws.length >= 6 && isDate(ws[4]!.text) && isClock(ws[5]!.text)) sinceEnd = ws[5]!.end
    const p: BirdProtocol = {
      name: ws[0]!.text,
      proto: ws[1]!.text,
      table: ws[2]!.text,
      state: ws[3]!.text,
      since: line.slice(ws[4]!.start, sinceEnd),
      info: line.slice(sinceEnd).trim(),
      details: {},
      pos: {file, line: lineNo, endLine: lineNo},
    }
    protocols.push(p)
    cur = p
  }, inPlace)
  close()
  return protocols
}

function isPrintableAscii(c: number): boolean {
  return c > 32 && c < 127
}
