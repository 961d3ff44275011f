// Fast paths for IPv4 text on the apply path (one call or more per planned route): a plain dotted
// quad is read by hand; anything else goes through ../model/prefix.ts and ipaddr.js, so the results
// are always the same as theirs.
import {canonicalPrefix} from '../model/prefix.js'
import type {Family} from '../model/types.js'

// decimal octets without leading zeros (ipaddr.js reads "010" as octal, so those take the slow
// path); a regular expression runs natively, which matters for code that runs only a few times
const QUAD = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/
const QUAD_PREFIX = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})(?:\/(0|[1-9]\d?))?$/

function quadValue(m: RegExpExecArray): number {
  const a = +m[1]
  const b = +m[2]
  const c = +m[3]
  const d = +m[4]
  return a > 255 || b > 255 || c > 255 || d > 255 ? -1 : ((a << 24) | (b << 16) | (c << 8) | d) >>> 0
}

/** A plain dotted quad as an unsigned 32-bit number; -1 for anything else. */
export function dottedQuad(text: string): number {
  const m = QUAD.exec(text)
  return m ? quadValue(m) : -1
}

/** An IPv4 "a.b.c.d/len" (or "a.b.c.d", /32) as [address, length]; undefined when not that plain form. */
export function dottedPrefix(text: string): [number, number] | undefined {
  const m = QUAD_PREFIX.exec(text)
  if (!m) return undefined
  const addr = quadValue(m)
  const len = m[5] === undefined ? 32 : +m[5]
  return addr < 0 || len > 32 ? undefined : [addr, len]
}

export const quadText = (v: number): string => `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`

/** The same as canonicalPrefix(text, family), quicker for IPv4 dotted quads. */
export function canonicalDst(text: string, family: Family = 'inet'): string | undefined {
  if (family === 'inet') {
    const p = dottedPrefix(text)
    if (p) {
      const [addr, len] = p
      return `${quadText(len === 0 ? 0 : (addr & (~0 << (32 - len))) >>> 0)}/${len}`
    }
  }
  return canonicalPrefix(text, family)
}
