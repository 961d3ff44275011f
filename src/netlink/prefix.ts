// A fast path for the canonical text of an IPv4 prefix, the common case on the apply path (one call
// per planned route, more in the read-back). Anything that is not a plain dotted quad with a
// length goes through ../model/prefix.ts (ipaddr.js), so the result is always the same.
import {canonicalPrefix} from '../model/prefix.js'
import type {Family} from '../model/types.js'

// decimal octets without leading zeros: ipaddr.js reads "010" as octal, so those take the slow path
const DOTTED = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})(?:\/(0|[1-9]\d?))?$/

/** The same as canonicalPrefix(text, family), quicker for IPv4 dotted quads. */
export function canonicalDst(text: string, family: Family = 'inet'): string | undefined {
  if (family === 'inet') {
    const m = DOTTED.exec(text)
    if (m) {
      const a = +m[1]
      const b = +m[2]
      const c = +m[3]
      const d = +m[4]
      const len = m[5] === undefined ? 32 : +m[5]
      if (a <= 255 && b <= 255 && c <= 255 && d <= 255 && len <= 32) {
        const v = (((a << 24) | (b << 16) | (c << 8) | d) & (len === 0 ? 0 : ~0 << (32 - len))) >>> 0
        return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}/${len}`
      }
    }
  }
  return canonicalPrefix(text, family)
}
