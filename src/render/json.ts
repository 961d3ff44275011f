// JSON (and long text) on stdout without building one giant string: a full table's report can exceed
// V8's maximum string length, so top-level arrays are written element by element, in chunks, honouring
// backpressure. Elements are compact, one per line: a full table's report stays greppable and cheap to produce.
import type {Writable} from 'node:stream'

import {type CheckLine, type CheckRun, type PrefixLine, isBulkBrokenPrefixes, isBulkHealthyPrefixes} from '../report/report.js'
import {bulkHealthyRows} from './bulk-healthy.js'

const CHUNK = 1 << 20

/**
 * Text encoded as UTF-8 into ~1 MiB buffers as it comes, each handed to `sink` once full (and at `flush`).
 * Encoding each piece into the buffer, rather than joining the pieces into one string and encoding that,
 * spares V8 flattening a rope of thousands of pieces (a third of the time of writing a full table's JSON),
 * and no piece of output is ever one string: a full table's is larger than V8's longest.
 */
export class Utf8Chunks {
  private buffer = Buffer.allocUnsafe(CHUNK)
  private at = 0
  /** `sink` returns true when it is done with the chunk (it wrote it out): the buffer is then reused. */
  constructor(private readonly sink: (chunk: Buffer) => boolean | void) {}

  add(text: string): void {
    // UTF-8 takes at most three bytes per UTF-16 unit: a piece that might not fit goes after a flush
    if (this.at + text.length * 3 > CHUNK) {
      this.flush()
      if (text.length * 3 > CHUNK) {
        this.sink(Buffer.from(text, 'utf8')) // a piece larger than a chunk goes as it is
        return
      }
    }
    this.at += this.buffer.write(text, this.at, 'utf8')
    if (this.at >= CHUNK - (CHUNK >> 4)) this.flush()
  }

  /** Hand over what is buffered. */
  flush(): void {
    if (this.at === 0) return
    // a sink may hold on to the buffer (a pipe writes it later): the next chunk then gets a fresh one
    if (this.sink(this.buffer.subarray(0, this.at)) !== true) this.buffer = Buffer.allocUnsafe(CHUNK)
    this.at = 0
  }
}

/**
 * Text to a stream in ~1 MiB writes; `add` returns a promise only when the stream asked to wait (no await per element).
 */
class ChunkedWriter {
  private readonly chunks = new Utf8Chunks((chunk) => this.send(chunk))
  private pending: Promise<void> | undefined // until the stream drains, after it asked to wait
  constructor(private readonly out: Writable) {}

  add(text: string, force = false): Promise<void> | undefined {
    this.chunks.add(text)
    if (force) this.chunks.flush()
    return this.pending
  }

  private send(data: Buffer): void {
    if (this.out.write(data) || this.pending) return
    this.pending = new Promise<void>((resolve) => this.out.once('drain', () => {
      this.pending = undefined
      resolve()
    }))
  }
}

/**
 * `value` as JSON, in pieces to `emit`, without one string of it all: the objects of its first two
 * levels a key per line, every array of its first three an element per line, each element and every
 * deeper value compact (JSON.stringify). JSON.parse of the whole is JSON.parse(JSON.stringify(value)),
 * and a full table's model or report stays greppable, a route per line.
 */
export function jsonPieces(value: unknown, emit: (text: string) => void): void {
  piece(value, '', 0, emit)
  emit('\n')
}

function piece(v: unknown, indent: string, depth: number, emit: (text: string) => void, key = ''): void {
  if (v !== null && typeof v === 'object' && typeof (v as {toJSON?: unknown}).toJSON === 'function')
    v = (v as {toJSON: (k: string) => unknown}).toJSON(key)
  const inner = `${indent}  `
  if (Array.isArray(v) && depth <= 2) {
    if (v.length === 0) return emit('[]')
    emit('[')
    for (let i = 0; i < v.length; i++) emit(`${i === 0 ? '' : ','}\n${inner}${JSON.stringify(v[i]) ?? 'null'}`)
    return emit(`\n${indent}]`)
  }
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && depth <= 1) {
    let first = true
    for (const k of Object.keys(v)) {
      const x = (v as Record<string, unknown>)[k]
      if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue
      emit(`${first ? '{' : ','}\n${inner}${JSON.stringify(k)}: `)
      first = false
      piece(x, inner, depth + 1, emit, k)
    }
    return emit(first ? '{}' : `\n${indent}}`)
  }
  emit(JSON.stringify(v) ?? 'null')
}

/**
 * `value`'s keys in order. A value may also be an iterable (written as an array, consumed once, element
 * by element: a `check` run diagnoses each prefix as it is written) or a function, called when its key is
 * reached (a summary that is complete only after the iterable before it was consumed).
 */
export async function writeJson(
  out: Writable,
  value: Record<string, unknown>,
  elements: ElementWriters = {},
): Promise<void> {
  const w = new ChunkedWriter(out)
  const keys = Object.keys(value).filter((k) => value[k] !== undefined)
  await w.add('{\n')
  for (const [i, key] of keys.entries()) {
    let v = value[key]
    if (typeof v === 'function') v = (v as () => unknown)()
    await w.add(`  ${JSON.stringify(key)}: `)
    if (isIterable(v)) {
      const json = (elements[key] ?? JSON.stringify) as (item: unknown) => string
      // one element behind: the last one is written without a comma
      let pending = ''
      let any = false
      for (const item of v) {
        const wait = w.add(any ? `    ${pending},\n` : '[\n')
        if (wait) await wait
        any = true
        pending = json(item)
      }
      await w.add(any ? `    ${pending}\n  ]` : '[]')
    } else {
      await w.add(JSON.stringify(v))
    }
    await w.add(`${i < keys.length - 1 ? ',' : ''}\n`)
  }
  await w.add('}\n', true)
}

/**
 * writeJson's text of a value small enough to be one string: top-level keys a line each, arrays an element per line.
 */
export function jsonText(value: unknown): string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return `${JSON.stringify(value)}\n`
  const v = value as Record<string, unknown>
  const keys = Object.keys(v).filter((k) => v[k] !== undefined && typeof v[k] !== 'function')
  const lines = keys.map((k, i) => {
    const x = v[k]
    const json =
      Array.isArray(x) && x.length > 0
        ? `[\n${x.map((e) => `    ${JSON.stringify(e) ?? 'null'}`).join(',\n')}\n  ]`
        : JSON.stringify(x)
    return `  ${JSON.stringify(k)}: ${json}${i < keys.length - 1 ? ',' : ''}\n`
  })
  return `{\n${lines.join('')}}\n`
}

/** Per key of writeJson's value: how an element of that array is written (as JSON.stringify would, only faster). */
export type ElementWriters = Record<string, (item: never) => string>

/**
 * A check line as JSON.stringify writes it, without walking the object for the many lines with no
 * findings and no plan (most of a full table: key order is PrefixLine's); the others are JSON.stringify's.
 */
export function prefixLineJson(l: PrefixLine): string {
  if (l.findings.length > 0 || l.plan !== null) return JSON.stringify(l)
  return `{"prefix":${JSON.stringify(l.prefix)},"verdict":${JSON.stringify(l.verdict)},"findings":[],"plan":null}`
}

// a bulk-healthy prefix's line as prefixLineJson writes it; a run's lines are one element's text, joined as writeJson
// joins elements
const BULK_HEALTHY_JSON = {
  before: '{"prefix":"',
  after: '","verdict":"ok","findings":[],"plan":null}',
  sep: ',\n    ',
  width: 0,
}

/** A check line as prefixLineJson writes it, or a run of bulk-healthy prefixes' lines (written from their keys). */
export function checkLineJson(l: CheckLine): string {
  if (isBulkBrokenPrefixes(l)) throw new Error('checkLineJson: prefixes reported broken in bulk have no findings to write (check\'s text report only)')
  return isBulkHealthyPrefixes(l) ? bulkHealthyRows(l, BULK_HEALTHY_JSON) : prefixLineJson(l)
}

/** `check --json`'s document, streamed: each prefix is diagnosed as it is written. */
export async function writeCheckJson(out: Writable, run: CheckRun): Promise<void> {
  await writeJson(
    out,
    {schema: run.schema, node: run.node, prefixes: run.lines, host: run.host, summary: run.summary},
    {prefixes: checkLineJson},
  )
}

/** Text lines, each followed by a newline. */
export async function writeLines(out: Writable, lines: Iterable<string>): Promise<void> {
  const w = new ChunkedWriter(out)
  for (const line of lines) {
    const wait = w.add(`${line}\n`)
    if (wait) await wait
  }
  await w.add('', true)
}

function isIterable(v: unknown): v is Iterable<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as Iterable<unknown>)[Symbol.iterator] === 'function'
}
