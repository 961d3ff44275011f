// Where a kernel route read from the one-line JSON dump is cited: the line of the text dump that prints it, when
// the snapshot holds that dump, else the route's element index in the JSON array. Pure: a function of the texts.
import {canonicalPrefix} from './prefix.js'
import type {KernelRoute} from './types.js'

// texts larger than this are not indexed: a full table's citations keep the JSON file's one line
const MAX_INDEXED = 32 * 2 ** 20

/** A route's identity in both dumps: its prefix, table and metric. */
function routeKey(dst: string, table: string, metric: number): string {
  return `${dst}|${table}|${metric}`
}

export function kernelRouteKey(r: KernelRoute): string {
  return routeKey(r.dst, r.table, r.metric)
}

/** The text dump's routes by key: [first line, last line] (a multipath route's nexthop lines follow it). */
export function textDumpLines(text: string): Map<string, [number, number]> | undefined {
  if (text.length > MAX_INDEXED) return undefined
  const lines = text.split('\n')
  const out = new Map<string, [number, number]>()
  let last: [number, number] | undefined
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    if (line === '' || line.trim() === '') continue
    if (/^\s/.test(line)) {
      if (last) last[1] = i + 1
      continue
    }
    const words = line.trim().split(/\s+/)
    // `ip -d route` prints the type first; without -d a unicast route starts with its prefix
    const dstWord = /^[\d:a-f.]+(\/\d+)?$|^default$/i.test(words[0]) ? words[0] : words[1]
    const family = dstWord?.includes(':') ? 'inet6' : 'inet'
    const dst = dstWord === undefined ? undefined : canonicalPrefix(dstWord, family)
    const at = (w: string) => {
      const i = words.indexOf(w)
      return i < 0 ? undefined : words[i + 1]
    }
    last = undefined
    if (dst === undefined) continue
    const key = routeKey(dst, at('table') ?? 'main', Number(at('metric') ?? 0))
    last = [i + 1, i + 1]
    if (!out.has(key)) out.set(key, last)
  }
  return out
}

/** The JSON dump's routes by key: their element index (0-based) in the top-level array. */
export function jsonElements(text: string): Map<string, number> | undefined {
  if (text.length > MAX_INDEXED) return undefined
  let elements: unknown
  try {
    elements = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!Array.isArray(elements)) return undefined
  const out = new Map<string, number>()
  elements.forEach((e: {dst?: unknown; table?: unknown; metric?: unknown}, i) => {
    if (typeof e?.dst !== 'string') return
    const dst = canonicalPrefix(e.dst, e.dst.includes(':') ? 'inet6' : 'inet')
    if (dst === undefined) return
    const key = routeKey(
      dst,
      typeof e.table === 'string' ? e.table : 'main',
      typeof e.metric === 'number' ? e.metric : 0,
    )
    if (!out.has(key)) out.set(key, i)
  })
  return out
}
