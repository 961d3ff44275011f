// Rows of the prefixes reported ok in bulk (report/report.ts BulkHealthyPrefixes), written from their keys as one-byte
// text: most of a full table's report is such rows, and making a prefix string, a line object and a padded line for
// each would cost as much as diagnosing every broken prefix.
import {keyPrefix} from '../model/prefix-key.js'
import type {BulkHealthyPrefixes} from '../report/report.js'

/**
 * How a bulk-healthy prefix's row reads: `before`, the prefix padded as the text report pads a column (spaces up to
 * `width` characters, or one space when it is that long already; nothing when `width` is 0), `after`; rows joined by
 * `sep`.
 */
export interface BulkHealthyRowShape {
  before: string
  after: string
  sep: string
  width: number
}

// eslint-disable-next-line no-control-regex -- the whole ASCII range, NUL included
const ASCII = /^[\x00-\x7f]*$/
let scratch = Buffer.allocUnsafe(1 << 16)

// a shape's constant parts as bytes, made once per shape
interface ShapeBytes {
  before: Uint8Array
  after: Uint8Array
  sep: Uint8Array
}
const compiled = new WeakMap<BulkHealthyRowShape, ShapeBytes | null>()

function bytesOf(shape: BulkHealthyRowShape): ShapeBytes | null {
  let b = compiled.get(shape)
  if (b === undefined) {
    // a byte is a character only for ASCII: anything else takes the string path
    const ascii = ASCII.test(shape.before) && ASCII.test(shape.after) && ASCII.test(shape.sep)
    b = ascii
      ? {
          before: Buffer.from(shape.before, 'latin1'),
          after: Buffer.from(shape.after, 'latin1'),
          sep: Buffer.from(shape.sep, 'latin1'),
        }
      : null
    compiled.set(shape, b)
  }
  return b
}

/** The rows of `run`, joined by `shape.sep`: what joining `before + pad(keyPrefix(key)) + after` for each key gives. */
export function bulkHealthyRows(run: BulkHealthyPrefixes, shape: BulkHealthyRowShape): string {
  const bytes = bytesOf(shape)
  if (bytes === null) return slowRows(run, shape)
  const {before, after, sep} = bytes
  const width = shape.width
  const {keys, from, to} = run
  // 18: the longest IPv4 prefix, 255.255.255.255/32
  const row = before.length + Math.max(width, 18) + 1 + after.length + sep.length
  if (scratch.length < row * (to - from)) scratch = Buffer.allocUnsafe(row * (to - from))
  const buf = scratch
  let at = 0
  for (let j = from; j < to; j++) {
    if (j > from) at = copy(buf, at, sep)
    at = copy(buf, at, before)
    const start = at
    const key = keys[j]
    const len = key % 64
    const v = (key - len) / 64
    at = decimal(buf, at, v >>> 24)
    buf[at++] = 46 // .
    at = decimal(buf, at, (v >>> 16) & 255)
    buf[at++] = 46
    at = decimal(buf, at, (v >>> 8) & 255)
    buf[at++] = 46
    at = decimal(buf, at, v & 255)
    buf[at++] = 47 // /
    at = decimal(buf, at, len)
    if (width > 0) {
      if (at - start >= width) buf[at++] = 32
      else while (at < start + width) buf[at++] = 32
    }
    at = copy(buf, at, after)
  }
  return buf.toString('latin1', 0, at)
}

function copy(buf: Buffer, at: number, bytes: Uint8Array): number {
  if (bytes.length > 16) {
    buf.set(bytes, at) // a memcpy, once the loop would cost more than the call
    return at + bytes.length
  }
  for (let i = 0; i < bytes.length; i++) buf[at++] = bytes[i]
  return at
}

/** `n` (0-255) in decimal at `at`; where the next byte goes. */
function decimal(buf: Buffer, at: number, n: number): number {
  if (n >= 100) {
    buf[at++] = 48 + Math.floor(n / 100)
    n %= 100
    buf[at++] = 48 + Math.floor(n / 10)
  } else if (n >= 10) buf[at++] = 48 + Math.floor(n / 10)
  buf[at++] = 48 + (n % 10)
  return at
}

function slowRows({keys, from, to}: BulkHealthyPrefixes, {before, after, sep, width}: BulkHealthyRowShape): string {
  const rows: string[] = []
  for (let j = from; j < to; j++) {
    const prefix = keyPrefix(keys[j])
    rows.push(before + (width === 0 ? prefix : prefix.length >= width ? `${prefix} ` : prefix.padEnd(width)) + after)
  }
  return rows.join(sep)
}
