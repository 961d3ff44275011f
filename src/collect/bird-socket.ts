// A client for BIRD's control socket (the protocol birdc speaks), so live mode needs no birdc.
// The framing is the same in BIRD 1.6, 2 and 3 (reference/bird-output-formats.md §1):
//   `NNNN-text`  a line with code NNNN, more follow
//   ` text`      continuation: takes the previous line's code; the space is a marker, not payload
//   `NNNN text`  the final line of the reply (0xxx done, 8xxx run-time error, 9xxx parse error)
//   `+text`      asynchronous message, not part of any reply
// A code is only printed when it changes, so replies are assembled line by line, never per chunk.

import {existsSync, statSync} from 'node:fs'
import net from 'node:net'
import {RouteDoctorError} from '../model/errors.js'
import {bannerVersion, isErrorCode} from '../parse/bird-framing.js'
import {decodeText, fitsOneText, grownBuffer, tooLongForOneText} from './snapshot-files.js'

export const DEFAULT_BIRD_SOCKETS = [
  '/var/run/calico/bird.ctl',
  '/run/bird/bird.ctl',
  '/var/run/bird/bird.ctl',
  '/run/bird.ctl',
]

export const DEFAULT_BIRD_TIMEOUT_MS = 10_000

// ---------------------------------------------------------------- errors

export class BirdSocketError extends RouteDoctorError {
  constructor(message: string, readonly path: string, code = 'E_BIRD_SOCKET') {
    super(message, 2, code)
    this.name = 'BirdSocketError'
  }
}

export class BirdSocketNotFoundError extends BirdSocketError {
  constructor(readonly tried: string[]) {
    super(
      `no BIRD control socket found (tried ${tried.join(', ')}); pass --bird-socket PATH`,
      tried[0] ?? '',
      'E_BIRD_SOCKET_NOT_FOUND',
    )
    this.name = 'BirdSocketNotFoundError'
  }
}

export class BirdSocketMissingError extends BirdSocketError {
  constructor(path: string) {
    super(
      `BIRD control socket ${path} does not exist (is BIRD running? pass --bird-socket PATH)`,
      path,
      'E_BIRD_SOCKET_MISSING',
    )
    this.name = 'BirdSocketMissingError'
  }
}

export class BirdSocketRefusedError extends BirdSocketError {
  constructor(path: string, notSocket = false) {
    super(
      notSocket
        ? `BIRD control socket ${path} is not a socket but a file or directory ` +
          '(pass BIRD\'s socket, e.g. /var/run/calico/bird.ctl)'
        : `BIRD control socket ${path} refused the connection (nothing listens on it; is BIRD running?)`,
      path,
      'E_BIRD_SOCKET_REFUSED',
    )
    this.name = 'BirdSocketRefusedError'
  }
}

export class BirdSocketPermissionError extends BirdSocketError {
  constructor(path: string) {
    super(
      `no permission to open BIRD control socket ${path} (run as root or as BIRD's group)`,
      path,
      'E_BIRD_SOCKET_PERMISSION',
    )
    this.name = 'BirdSocketPermissionError'
  }
}

export class BirdTimeoutError extends BirdSocketError {
  constructor(path: string, readonly timeoutMs: number, what: string) {
    super(`BIRD control socket ${path}: no answer to ${what} within ${timeoutMs} ms`, path, 'E_BIRD_TIMEOUT')
    this.name = 'BirdTimeoutError'
  }
}

export class BirdProtocolError extends BirdSocketError {
  constructor(path: string, detail: string) {
    super(`BIRD control socket ${path}: ${detail}`, path, 'E_BIRD_PROTOCOL')
    this.name = 'BirdProtocolError'
  }
}

/** BIRD answered with an 8xxx (run-time) or 9xxx (parse) error reply. */
export class BirdError extends BirdSocketError {
  constructor(path: string, readonly command: string, readonly birdCode: number, readonly text: string) {
    super(`BIRD (${path}) rejected \`${command}\`: ${String(birdCode).padStart(4, '0')} ${text}`, path, 'E_BIRD_REPLY')
    this.name = 'BirdError'
  }
}

// ---------------------------------------------------------------- framing

export interface BirdReplyLine {
  /**
   * Reply code; for a continuation line, the code it continues. -1 for a line that is not framed (birdc prints it as
   * `??? <line>`).
   */
  code: number
  /** Payload: the text after `NNNN-`/`NNNN ` or after the continuation space. Leading tabs and spaces are kept. */
  text: string
  kind: 'coded' | 'continuation' | 'final' | 'unframed'
  /** The line as received, without its newline. */
  raw: string
}

export interface BirdReply {
  lines: BirdReplyLine[] // the final line included, asynchronous `+` lines excluded
  /** The final line's code: 0xxx success, 8xxx/9xxx error. */
  code: number
  /** The final line's payload. */
  text: string
  /** Asynchronous `+` messages that arrived while the reply was assembled (payload only). */
  async: string[]
  /** Everything received for this reply, newline-terminated lines, codes kept. */
  raw: string
  /** The reply as birdc prints it (birdcText), after `prefix`, in one string. */
  printed(prefix?: string): string
}

const NL = 0x0a

type LineKind = BirdReplyLine['kind'] | 'async'

/**
 * What a line buf[start, end) (its newline excluded) is, from its first bytes: `+` asynchronous, ` ` a
 * continuation, four digits and `-` coded, four digits and ` ` (or nothing) final, anything else unframed.
 */
function lineKind(buf: Buffer, start: number, end: number): LineKind {
  const c0 = buf[start]
  if (c0 === 0x2b && start < end) return 'async'
  if (c0 === 0x20 && start < end) return 'continuation'
  if (lineCode(buf, start, end) < 0) return 'unframed'
  if (end - start === 4) return 'final'
  const sep = buf[start + 4]
  return sep === 0x20 ? 'final' : sep === 0x2d ? 'coded' : 'unframed'
}

/** The code of a line starting with four digits, or -1. */
function lineCode(buf: Buffer, start: number, end: number): number {
  if (end - start < 4) return -1
  let code = 0
  for (let i = start; i < start + 4; i++) {
    const d = buf[i]! - 0x30
    if (d < 0 || d > 9) return -1
    code = code * 10 + d
  }
  return code
}

/** A coded or final line's payload: what follows `NNNN-` or `NNNN ` (empty for a bare `NNNN`). */
const payloadStart = (start: number, end: number): number => Math.min(start + 5, end)

/** Where the payload of the line at buf[start] starts if it is `NNNN-` with a code other than 0 (it prints), or -1. */
function codedPayload(buf: Buffer, start: number): number {
  return buf[start + 4] === 0x2d && lineCode(buf, start, start + 4) > 0 ? start + 5 : -1
}

/**
 * A reply as it came off the socket: its lines' bytes, kept as received (slices of the chunks), and
 * read only when asked. A full table's `show route all` is millions of lines: birdc's printed form is cut
 * from the bytes (`printed`) without a string or an object per line; `lines` and `raw` are made on demand.
 */
class AssembledReply implements BirdReply {
  private linesMade: BirdReplyLine[] | undefined
  private rawMade: string | undefined

  constructor(
    private readonly pieces: Buffer[], // the reply's bytes, asynchronous lines included, newline-terminated lines
    readonly code: number,
    readonly text: string,
    readonly async: string[],
    // what printed(early.prefix) gives, printed as the reply arrived (BirdReplyAssembler.printNext)
    private readonly early?: {prefix: string; out: PrintedBytes},
  ) {}

  get raw(): string {
    this.notPrintedEarly()
    this.rawMade ??= textOf(this.pieces)
    return this.rawMade
  }

  get lines(): BirdReplyLine[] {
    this.notPrintedEarly()
    if (this.linesMade === undefined) {
      const lines: BirdReplyLine[] = []
      let lastCode = -1
      forEachLine(this.pieces, (buf, start, end) => {
        const kind = lineKind(buf, start, end)
        if (kind === 'async') return
        const raw = buf.toString('utf8', start, end)
        if (kind === 'continuation') lines.push({code: lastCode, text: raw.slice(1), kind, raw})
        else if (kind === 'unframed') lines.push({code: -1, text: raw, kind, raw})
        else {
          lastCode = lineCode(buf, start, end)
          lines.push({code: lastCode, text: buf.toString('utf8', payloadStart(start, end), end), kind, raw})
        }
      })
      this.linesMade = lines
    }
    return this.linesMade
  }

  /**
   * birdcText of this reply, `prefix` first, in one string: each line's payload copied from the bytes
   * into one buffer, then decoded once (a full table's reply has millions of lines: a view or a string
   * per line would dominate the read).
   */
  printed(prefix = ''): string {
    if (this.early !== undefined) {
      if (this.early.prefix !== prefix) this.notPrintedEarly()
      const out = this.early.out
      if (!fitsOneText(out.size)) throw tooLongReply(out.size)
      return decodeText(out.bytes())
    }
    const head = Buffer.from(prefix, 'utf8')
    let bound = head.length // every framed line prints shorter than it came; only an unframed one longer
    for (const p of this.pieces) bound += p.length
    if (!fitsOneText(bound)) {
      // refused by its size before it is copied together (its printed size is counted, nothing copied)
      const size = this.printTo(new PrintedBytes(undefined, head.length))
      if (!fitsOneText(size)) throw tooLongReply(size)
    }
    const out = new PrintedBytes(Buffer.allocUnsafe(bound), 0)
    out.put(head, 0, head.length)
    const size = this.printTo(out)
    if (!fitsOneText(size)) throw tooLongReply(size) // grown past it by unframed lines
    return decodeText(out.bytes())
  }

  /** A reply printed as it arrived keeps only that: asked for anything else, a programming error. */
  private notPrintedEarly(): void {
    if (this.early !== undefined) throw new Error('BIRD reply printed as it arrived: only that text was kept')
  }

  /** What every piece prints goes to `out`; the size printed in all. */
  private printTo(out: PrintedBytes): number {
    for (const buf of this.pieces) printPiece(buf, out)
    return out.size
  }
}

/** birdc's rules, line by line: what each line of `buf` (newline-terminated lines) prints goes to `out`. */
function printPiece(buf: Buffer, out: PrintedBytes): void {
  let start = 0
  for (;;) {
    start = out.putLines(buf, start)
    if (start >= buf.length) break
    const end = buf.indexOf(NL, start)
    if (end < 0) break
    const kind = lineKind(buf, start, end)
    if (kind === 'continuation') out.put(buf, start + 1, end + 1)
    else if (kind === 'unframed') {
      out.put(UNFRAMED_OPEN, 0, UNFRAMED_OPEN.length)
      out.put(buf, start, end)
      out.put(UNFRAMED_CLOSE, 0, UNFRAMED_CLOSE.length)
    } else if (kind !== 'async' && lineCode(buf, start, end) !== 0) out.put(buf, payloadStart(start, end), end + 1)
    start = end + 1
  }
}

const UNFRAMED_OPEN = Buffer.from('??? <')
const UNFRAMED_CLOSE = Buffer.from('>\n')

const tooLongReply = (size: number) =>
  new RouteDoctorError(`BIRD's reply is ${tooLongForOneText(size)}`, 2, 'E_TOO_LONG')

/**
 * Bytes appended to one buffer, grown when full (grownBuffer); without a buffer, only their size is kept.
 */
class PrintedBytes {
  constructor(
    private buf: Buffer | undefined,
    public size: number,
  ) {}

  put(src: Buffer, from: number, to: number): void {
    const buf = this.buf
    if (buf !== undefined) {
      if (this.size + to - from > buf.length) this.grow(to - from)
      src.copy(this.buf!, this.size, from, to)
    }
    this.size += to - from
  }

  /**
   * The payloads of the continuation and coded lines from src[from] on (nearly every line of a reply), up to the first
   * other line or where this buffer might not hold the rest of src; where that line starts. A byte at a time, in one
   * loop: a line is a few dozen bytes, and a call to indexOf or copy per line costs more than that.
   */
  putLines(src: Buffer, from: number): number {
    const buf = this.buf
    if (buf === undefined) return from
    const n = src.length
    let i = from
    let j = this.size
    // a printed line is never longer than it came, so the room is checked against what is left of src
    while (i < n && buf.length - j >= n - i) {
      let p = src[i] === 0x20 ? i + 1 : codedPayload(src, i)
      if (p < 0) break
      let b: number
      do {
        b = src[p++]!
        buf[j++] = b
      } while (b !== NL && p < n)
      i = p
    }
    this.size = j
    return i
  }

  private grow(more: number): void {
    this.buf = grownBuffer(this.buf!, this.size, more)
  }

  bytes(): Buffer {
    return this.buf!.subarray(0, this.size)
  }
}

// the buffer a reply printed as it arrives starts in (grown as it fills)
const FIRST_PRINT_BUFFER = 2 ** 16

/** The one text of `pieces` (the raw reply), refused by its size before its bytes are copied together. */
function textOf(pieces: Buffer[]): string {
  let size = 0
  for (const p of pieces) size += p.length
  if (!fitsOneText(size)) throw tooLongReply(size)
  return decodeText(Buffer.concat(pieces, size))
}

/** Each newline-terminated line of `pieces` (a line never spans two pieces): buf[start, end) without its newline. */
function forEachLine(pieces: Buffer[], f: (buf: Buffer, start: number, end: number) => void): void {
  for (const buf of pieces) {
    let start = 0
    for (;;) {
      const nl = buf.indexOf(NL, start)
      if (nl < 0) break
      f(buf, start, nl)
      start = nl + 1
    }
  }
}

/**
 * Assembles replies from the byte stream of a control socket. Feed it chunks as they arrive, in any
 * sizes; a reply is complete only when its final `NNNN ` line has fully arrived (newline included).
 * Lines are told apart on their first bytes: only a final or an asynchronous line becomes a string.
 */
const EMPTY = Buffer.alloc(0)

export class BirdReplyAssembler {
  private pending: Buffer = EMPTY
  private pieces: Buffer[] = [] // complete lines of the reply being assembled
  private asyncLines: string[] = []
  private readonly done: BirdReply[] = []
  private early: {prefix: string; out: PrintedBytes} | undefined // the reply being printed as it arrives
  private earlyNext: {prefix: string; first: number} | undefined

  /**
   * The next reply begun is printed as its lines arrive, after `prefix` (its `printed(prefix)`), into a buffer of
   * `first` bytes grown as it fills: a full table's reply is printed while BIRD is still writing it, not after.
   */
  printNext(prefix: string, first = FIRST_PRINT_BUFFER): void {
    this.earlyNext = {prefix, first}
  }

  /** Complete lines of the reply being assembled, kept (and printed, when it is printed as it arrives). */
  private keep(piece: Buffer): void {
    const next = this.earlyNext
    if (this.early === undefined && next !== undefined) {
      const head = Buffer.from(next.prefix, 'utf8')
      const out = new PrintedBytes(Buffer.allocUnsafe(Math.max(head.length, next.first, 1)), 0)
      out.put(head, 0, head.length)
      for (const p of this.pieces) printPiece(p, out) // asynchronous lines that came first (they print nothing)
      this.pieces = []
      this.early = {prefix: next.prefix, out}
      this.earlyNext = undefined
    }
    // a reply printed as it arrives is not kept as received too: a full table's would be held twice
    if (this.early !== undefined) printPiece(piece, this.early.out)
    else this.pieces.push(piece)
  }

  /** Feed bytes; returns the replies completed by this chunk (usually zero or one). */
  push(chunk: Buffer | string): BirdReply[] {
    let data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk
    if (this.pending.length > 0) {
      // the line cut between two chunks is copied whole, alone: the chunk itself is read in place (a full table's
      // reply, copied chunk by chunk onto the pending bytes, was one more copy of the whole reply)
      const nl = data.indexOf(NL)
      if (nl < 0) {
        this.pending = Buffer.concat([this.pending, data])
        return this.done.splice(0)
      }
      const line = Buffer.concat([this.pending, data.subarray(0, nl + 1)])
      this.pending = EMPTY
      this.scan(line)
      data = data.subarray(nl + 1)
    }
    this.scan(data)
    return this.done.splice(0)
  }

  /** The complete lines of buf, read in place; what follows the last newline is kept pending. */
  private scan(buf: Buffer): void {
    let start = 0 // of the line being looked at
    let from = 0 // of this reply's lines not yet kept
    for (;;) {
      const nl = buf.indexOf(NL, start)
      if (nl < 0) break
      const kind = lineKind(buf, start, nl)
      if (kind === 'async') {
        this.asyncLines.push(buf.toString('utf8', start + 1, nl))
      } else if (kind === 'final') {
        // the reply is complete
        this.keep(buf.subarray(from, nl + 1))
        this.done.push(
          new AssembledReply(
            this.pieces,
            lineCode(buf, start, nl),
            buf.toString('utf8', payloadStart(start, nl), nl),
            this.asyncLines,
            this.early,
          ),
        )
        this.pieces = []
        this.asyncLines = []
        this.early = undefined
        from = nl + 1
      }
      start = nl + 1
    }
    if (start > from) this.keep(buf.subarray(from, start))
    this.pending = buf.subarray(start)
  }

  /** Bytes received after the last complete line (a reply cut off mid-line). */
  get partial(): string {
    return this.pending.toString('utf8')
  }

  /** True while a reply has begun but its final line has not arrived. */
  get inReply(): boolean {
    return this.pieces.length > 0 || this.early !== undefined || this.pending.length > 0
  }
}

/**
 * A reply as birdc prints it (client/client.c server_got_reply): code and marker stripped, lines
 * of code 0 (the `0000` terminator) print nothing, unframed lines print as `??? <line>`.
 * Each printed line ends with a newline; an empty reply is "".
 */
export function birdcText(reply: BirdReply): string {
  return reply.printed()
}

// ---------------------------------------------------------------- socket discovery

/**
 * DESIGN §2: an explicit path wins (checked when connecting, so its error names it); otherwise the
 * first candidate that exists.
 */
export function findBirdSocket(explicit?: string, candidates: string[] = DEFAULT_BIRD_SOCKETS): string {
  if (explicit !== undefined && explicit !== '') return explicit
  for (const p of candidates) if (existsSync(p)) return p
  throw new BirdSocketNotFoundError(candidates)
}

// ---------------------------------------------------------------- client

export interface BirdConnectOptions {
  /** Longest silence tolerated while connecting or waiting for a reply (reset by every chunk received). */
  timeoutMs?: number
}

interface Waiter {
  what: string
  resolve: (r: BirdReply) => void
  reject: (e: Error) => void
}

export class BirdSocket {
  /** The greeting as birdc prints it: `BIRD 2.0.12 ready.` */
  readonly hello: string
  /** The version from the greeting: `1.6.8`, `2.0.12`, `v0.3.3+birdv1.6.8`, `3.2.3`. */
  readonly version: string

  private waiter: Waiter | undefined
  private timer: NodeJS.Timeout | undefined
  private queue: Promise<unknown> = Promise.resolve()
  private closedError: Error | undefined

  private constructor(
    readonly path: string,
    private readonly sock: net.Socket,
    private readonly timeoutMs: number,
    greeting: BirdReply,
    // The assembler from connect(): it may already hold bytes that followed the greeting.
    private readonly assembler: BirdReplyAssembler,
  ) {
    this.hello = birdcText(greeting).replace(/\n$/, '')
    this.version = bannerVersion(greeting.text) ?? ''
  }

  static async connect(path: string, opts: BirdConnectOptions = {}): Promise<BirdSocket> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_BIRD_TIMEOUT_MS
    const sock = net.createConnection({ path })
    const assembler = new BirdReplyAssembler()
    const greeting = await new Promise<{ reply: BirdReply; rest: BirdReply[] }>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined
      const arm = () => {
        clearTimeout(timer)
        timer = setTimeout(() => fail(new BirdTimeoutError(path, timeoutMs, 'the connection greeting')), timeoutMs)
      }
      const cleanup = () => {
        clearTimeout(timer)
        sock.off('data', onData)
        sock.off('error', onError)
        sock.off('close', onClose)
      }
      const fail = (e: Error) => {
        cleanup()
        sock.destroy()
        reject(e)
      }
      const onData = (chunk: Buffer) => {
        arm()
        const replies = assembler.push(chunk)
        if (replies.length === 0) return
        cleanup()
        const [reply, ...rest] = replies
        resolve({ reply: reply!, rest })
      }
      const onError = (e: NodeJS.ErrnoException) => fail(socketError(path, e))
      const onClose = () => fail(new BirdProtocolError(path, 'closed the connection before greeting'))
      arm()
      sock.on('data', onData)
      sock.on('error', onError)
      sock.on('close', onClose)
    })
    if (isErrorCode(greeting.reply.code) || greeting.rest.length > 0) {
      sock.destroy()
      throw new BirdProtocolError(path, `unexpected greeting ${JSON.stringify(greeting.reply.raw.trimEnd())}`)
    }
    const bird = new BirdSocket(path, sock, timeoutMs, greeting.reply, assembler)
    bird.listen()
    return bird
  }

  /**
   * Runs one command; its reply as birdc prints it (without birdc's greeting line), after `prefix`. Throws BirdError on
   * 8xxx/9xxx.
   */
  async command(cmd: string, prefix = ''): Promise<string> {
    const reply = await this.request(cmd, prefix)
    if (isErrorCode(reply.code)) throw new BirdError(this.path, cmd, reply.code, reply.text)
    return reply.printed(prefix)
  }

  /**
   * Runs one command; the reply as received, codes kept. An error reply is returned, not thrown: its code is in the
   * text.
   */
  async commandRaw(cmd: string): Promise<string> {
    return (await this.request(cmd)).raw
  }

  /**
   * Runs one command and returns the assembled reply. Calls are queued: one command at a time on the wire. With
   * `printed`, the reply is printed after it as it arrives, and only that is kept (its `printed(printed)`).
   */
  request(cmd: string, printed?: string): Promise<BirdReply> {
    if (/[\r\n]/.test(cmd))
      return Promise.reject(new BirdProtocolError(this.path, `a command is one line: ${JSON.stringify(cmd)}`))
    const run = this.queue.then(() => this.send(cmd, printed))
    this.queue = run.catch(() => undefined)
    return run
  }

  close(): void {
    this.closedError ??= new BirdProtocolError(this.path, 'connection closed by the client')
    clearTimeout(this.timer)
    this.sock.destroy()
    this.failWaiter(this.closedError)
  }

  private listen(): void {
    this.sock.on('data', (chunk: Buffer) => this.onData(chunk))
    this.sock.on('error', (e: NodeJS.ErrnoException) => this.onGone(socketError(this.path, e)))
    this.sock.on('close', () => this.onGone(new BirdProtocolError(this.path, 'BIRD closed the connection')))
  }

  private send(cmd: string, printed: string | undefined): Promise<BirdReply> {
    if (this.closedError) return Promise.reject(this.closedError)
    return new Promise<BirdReply>((resolve, reject) => {
      this.waiter = { what: `\`${cmd}\``, resolve, reject }
      if (printed !== undefined) this.assembler.printNext(printed)
      this.arm()
      this.sock.write(cmd + '\n')
    })
  }

  private arm(): void {
    clearTimeout(this.timer)
    const w = this.waiter
    if (!w) return
    this.timer = setTimeout(() => {
      // The reply may still arrive later and would be taken for the next command's: drop the connection.
      this.closedError ??= new BirdTimeoutError(this.path, this.timeoutMs, w.what)
      this.sock.destroy()
      this.failWaiter(this.closedError)
    }, this.timeoutMs)
  }

  private onData(chunk: Buffer): void {
    const replies = this.assembler.push(chunk)
    if (this.waiter) this.timer?.refresh() // the waiter's own timeout, from now (a reply arrives in many chunks)
    for (const r of replies) {
      const w = this.waiter
      if (!w) {
        // A reply nobody asked for means the stream is out of step; stop trusting it.
        this.onGone(new BirdProtocolError(this.path, `unexpected reply ${JSON.stringify(r.raw.slice(0, 80))}`))
        this.sock.destroy()
        return
      }
      this.waiter = undefined
      clearTimeout(this.timer)
      w.resolve(r)
    }
  }

  private onGone(e: Error): void {
    this.closedError ??= e
    clearTimeout(this.timer)
    this.failWaiter(this.closedError)
  }

  private failWaiter(e: Error): void {
    const w = this.waiter
    this.waiter = undefined
    w?.reject(e)
  }
}

function socketError(path: string, e: NodeJS.ErrnoException): BirdSocketError {
  switch (e.code) {
    case 'ENOENT':
      return new BirdSocketMissingError(path)
    case 'ECONNREFUSED':
      // connect(2) to a path that is no socket is refused too: say which it is
      return new BirdSocketRefusedError(path, statSync(path, {throwIfNoEntry: false})?.isSocket() === false)
    case 'EACCES':
    case 'EPERM':
      return new BirdSocketPermissionError(path)
    case 'ENOTSOCK':
      return new BirdSocketError(`${path} is not a socket (expected BIRD's control socket)`, path)
    default:
      return new BirdSocketError(
        `BIRD control socket ${path}: ${e.code ?? ''} ${e.message}`.replace(/ {2,}/g, ' '),
        path,
      )
  }
}
