// The framing pre-pass every BIRD parser runs first. It accepts both what `birdc` prints (greeting
// `BIRD x ready.`, codes stripped) and raw control-socket replies (`1007-text`, ` continuation`,
// `0000 ` end, `+async`), plus CRLF, blank lines and a missing trailing newline. It hands each
// payload line to a sink with its ORIGINAL 1-based line number, so positions cite the input file.
//
// Lines are walked by index (indexOf '\n'); the only copy is the one slice per line the sink needs,
// so a dump of hundreds of MB is never split into an array. BirdFramer takes one line at a time
// for callers that read a stream.
import {ParseError} from '../model/errors.js'

/** Receives one payload line. `code` is the reply code in raw-socket input, undefined for birdc text. */
export type BirdLineSink = (text: string, line: number, code: number | undefined) => void

export interface BirdBanner {
  version: string // from `BIRD 2.0.12 ready.`
  line: number
}

const RAW_LINE_SHAPE =
  'a BIRD control-socket reply line ("NNNN-text", "NNNN text" or a continuation starting with a space)'
const CLOSED_REPLY =
  'the reply to go on to its final line ("0000", or "NNNN text" without a dash): the capture is cut short here'

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57
}

/** `NNNN-` or `NNNN ` (or bare `NNNN` at end of line) at the start of the line. */
function hasReplyCode(s: string): boolean {
  if (s.length < 4) return false
  if (!(isDigit(s.charCodeAt(0)) && isDigit(s.charCodeAt(1)) && isDigit(s.charCodeAt(2)) && isDigit(s.charCodeAt(3))))
    return false
  if (s.length === 4) return true
  const sep = s.charCodeAt(4)
  return sep === 45 /* - */ || sep === 32 /* space */
}

function isBlank(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c !== 32 && c !== 9) return false
  }
  return true
}

/** `BIRD 2.0.12 ready.` -> "2.0.12"; undefined for any other line. */
export function bannerVersion(payload: string): string | undefined {
  if (!payload.startsWith('BIRD ') || !payload.endsWith(' ready.')) return undefined
  const version = payload.slice(5, -7)
  return version.length > 0 && !version.includes(' ') ? version : undefined
}

/**
 * Line-at-a-time framer. The mode (raw socket or birdc) is fixed by the first non-blank line:
 * it cannot be decided per line, because a leading space means "continuation" on the raw socket
 * but "secondary route header" in birdc text.
 */
export class BirdFramer {
  mode: 'unknown' | 'raw' | 'birdc' = 'unknown'
  banner?: BirdBanner
  private lastCode: number | undefined
  // raw socket: the last reply's final line (`NNNN text`, `0000`) not read yet, and where the input stopped
  private open = false
  private last: {line: number; text: string} | undefined

  constructor(private readonly file: string, private readonly sink: BirdLineSink) {}

  /**
   * The input is over: a raw-socket reply still open (no final `NNNN ` line, `0000` for tables) was cut short, and
   * what is missing of it would read as routes or sessions BIRD does not have.
   */
  end(): void {
    if (this.mode !== 'raw' || !this.open || this.last === undefined) return
    throw new ParseError(this.file, this.last.line, CLOSED_REPLY, this.last.text)
  }

  /** One input line without its '\n' (a trailing '\r' is dropped here). */
  push(raw: string, lineNo: number): void {
    const line = raw.length > 0 && raw.charCodeAt(raw.length - 1) === 13 ? raw.slice(0, -1) : raw
    if (isBlank(line)) return // blank lines carry nothing in any reply (protocol/table separators)
    // `>>> text`: birdc's rendering of an asynchronous message, or a transcript's command echo.
    if (line.startsWith('>>>')) return
    if (this.mode === 'unknown') this.mode = hasReplyCode(line) ? 'raw' : 'birdc'
    if (this.mode === 'birdc') return this.payload(line, lineNo, undefined)

    const c0 = line.charCodeAt(0)
    if (c0 === 32) {
      // continuation: one marker space, the rest (TABs, padding) is payload
      this.last = {line: lineNo, text: line}
      return this.payload(line.slice(1), lineNo, this.lastCode)
    }
    if (c0 === 43 /* + */) return // asynchronous message, not part of any reply
    if (!hasReplyCode(line)) throw new ParseError(this.file, lineNo, RAW_LINE_SHAPE, line)
    const code = Number(line.slice(0, 4))
    this.lastCode = code
    this.open = line.charCodeAt(4) === 45 /* - */
    this.last = {line: lineNo, text: line}
    const text = line.length > 5 ? line.slice(5) : ''
    if (code === 0 && isBlank(text)) return // `0000 `: end of reply, birdc prints nothing for it
    this.payload(text, lineNo, code)
  }

  private payload(text: string, lineNo: number, code: number | undefined): void {
    if (isBlank(text)) return
    // `birdc -r` (or `restrict` on the socket) answers `0016 Access restricted` before any reply
    if ((code === 16 || code === undefined) && text === 'Access restricted') return
    if (code === 1 || code === undefined) {
      const version = bannerVersion(text)
      if (version !== undefined) {
        this.banner ??= {version, line: lineNo}
        return
      }
    }
    this.sink(text, lineNo, code)
  }
}

/**
 * In-place handler of a birdc payload line: text[start, end) is a line the framer would hand to the
 * sink unchanged (no `\r`, not blank, no `>>>`, not the banner). Returns false to have the line sliced
 * and handed to the sink as usual.
 */
export type BirdSpanSink = (text: string, start: number, end: number, line: number) => boolean

/**
 * Would BirdFramer (in birdc mode) hand text[start, end) to its sink as it is? `BIRD ...` and
 * `Access restricted` are left to it.
 */
function isPlainPayload(text: string, start: number, end: number): boolean {
  if (start === end || text.charCodeAt(end - 1) === 13) return false
  const c0 = text.charCodeAt(start)
  if (c0 === 32 || c0 === 9) {
    for (let i = start + 1; i < end; i++) {
      const c = text.charCodeAt(i)
      if (c !== 32 && c !== 9) return true
    }
    return false // blank
  }
  if (c0 === 62 /* > */) return !text.startsWith('>>>', start)
  if (c0 === 65 /* A */ && end - start === 17 && text.startsWith('Access restricted', start)) return false
  return !(c0 === 66 /* B */ && text.startsWith('BIRD ', start))
}

/**
 * Frame a whole text, calling `sink` per payload line. Returns the framer (for its banner and mode).
 * With `span`, birdc payload lines are offered to it first, unsliced: a full table is millions of them.
 */
export function frameBirdText(text: string, file: string, sink: BirdLineSink, span?: BirdSpanSink): BirdFramer {
  const framer = new BirdFramer(file, sink)
  let start = 0
  let lineNo = 1
  const n = text.length
  while (start < n) {
    let end = text.indexOf('\n', start)
    if (end < 0) end = n
    if (!(
      span !== undefined &&
      framer.mode === 'birdc' &&
      isPlainPayload(text, start, end) &&
      span(text, start, end, lineNo)
    )) {
      framer.push(text.slice(start, end), lineNo)
    }
    start = end + 1
    lineNo++
  }
  framer.end()
  return framer
}

/** BIRD's answer was an error reply (8xxx run-time, 9xxx parse error) rather than data. */
export function isErrorCode(code: number | undefined): boolean {
  return code !== undefined && code >= 8000
}
