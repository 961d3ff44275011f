// A client for BIRD's control socket (the protocol birdc speaks), so live mode needs no birdc.
// The framing is the same in BIRD 1.6, 2 and 3 (reference/bird-output-formats.md §1):
//   `NNNN-text`  a line with code NNNN, more follow
//   ` text`      continuation: takes the previous line's code; the space is a marker, not payload
//   `NNNN text`  the final line of the reply (0xxx done, 8xxx run-time error, 9xxx parse error)
//   `+text`      asynchronous message, not part of any reply
// A code is only printed when it changes, so replies are assembled line by line, never per chunk.

import { existsSync } from 'node:fs'
import net from 'node:net'
import { RouteDoctorError } from '../model/errors.js'
import { bannerVersion, isErrorCode } from '../parse/bird-framing.js'

export const DEFAULT_BIRD_SOCKETS = ['/var/run/calico/bird.ctl', '/run/bird/bird.ctl', '/var/run/bird/bird.ctl', '/run/bird.ctl']

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
    super(`no BIRD control socket found (tried ${tried.join(', ')}); pass --bird-socket PATH`, tried[0] ?? '', 'E_BIRD_SOCKET_NOT_FOUND')
    this.name = 'BirdSocketNotFoundError'
  }
}

export class BirdSocketMissingError extends BirdSocketError {
  constructor(path: string) {
    super(`BIRD control socket ${path} does not exist (is BIRD running? pass --bird-socket PATH)`, path, 'E_BIRD_SOCKET_MISSING')
    this.name = 'BirdSocketMissingError'
  }
}

export class BirdSocketRefusedError extends BirdSocketError {
  constructor(path: string) {
    super(`BIRD control socket ${path} refused the connection (nothing listens on it; is BIRD running?)`, path, 'E_BIRD_SOCKET_REFUSED')
    this.name = 'BirdSocketRefusedError'
  }
}

export class BirdSocketPermissionError extends BirdSocketError {
  constructor(path: string) {
    super(`no permission to open BIRD control socket ${path} (run as root or as BIRD's group)`, path, 'E_BIRD_SOCKET_PERMISSION')
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
  /** Reply code; for a continuation line, the code it continues. -1 for a line that is not framed (birdc prints it as `??? <line>`). */
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
}

const CODED = /^(\d{4})([ -])(.*)$/s

/**
 * Assembles replies from the byte stream of a control socket. Feed it chunks as they arrive, in any
 * sizes; a reply is complete only when its final `NNNN ` line has fully arrived (newline included).
 */
export class BirdReplyAssembler {
  private pending: Buffer = Buffer.alloc(0)
  private lines: BirdReplyLine[] = []
  private asyncLines: string[] = []
  private rawLines: string[] = []
  private lastCode = -1
  private readonly done: BirdReply[] = []

  /** Feed bytes; returns the replies completed by this chunk (usually zero or one). */
  push(chunk: Buffer | string): BirdReply[] {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk
    this.pending = this.pending.length === 0 ? data : Buffer.concat([this.pending, data])
    let start = 0
    for (;;) {
      const nl = this.pending.indexOf(0x0a, start)
      if (nl < 0) break
      // Decode whole lines only, so a multi-byte character split across chunks stays intact.
      this.line(this.pending.subarray(start, nl).toString('utf8'))
      start = nl + 1
    }
    this.pending = this.pending.subarray(start)
    return this.done.splice(0)
  }

  /** Bytes received after the last complete line (a reply cut off mid-line). */
  get partial(): string {
    return this.pending.toString('utf8')
  }

  /** True while a reply has begun but its final line has not arrived. */
  get inReply(): boolean {
    return this.lines.length > 0 || this.pending.length > 0
  }

  private line(raw: string): void {
    if (raw.startsWith('+')) {
      this.asyncLines.push(raw.slice(1))
      this.rawLines.push(raw)
      return
    }
    this.rawLines.push(raw)
    if (raw.startsWith(' ')) {
      this.lines.push({ code: this.lastCode, text: raw.slice(1), kind: 'continuation', raw })
      return
    }
    const m = CODED.exec(raw) ?? (/^\d{4}$/.test(raw) ? [raw, raw, ' ', ''] : null)
    if (!m) {
      this.lines.push({ code: -1, text: raw, kind: 'unframed', raw })
      return
    }
    const code = Number(m[1])
    this.lastCode = code
    if (m[2] === '-') {
      this.lines.push({ code, text: m[3]!, kind: 'coded', raw })
      return
    }
    this.lines.push({ code, text: m[3]!, kind: 'final', raw })
    this.done.push({
      lines: this.lines,
      code,
      text: m[3]!,
      async: this.asyncLines,
      raw: this.rawLines.map((l) => l + '\n').join(''),
    })
    this.lines = []
    this.asyncLines = []
    this.rawLines = []
  }
}

/**
 * A reply as birdc prints it (client/client.c server_got_reply): code and marker stripped, lines
 * of code 0 (the `0000` terminator) print nothing, unframed lines print as `??? <line>`.
 * Each printed line ends with a newline; an empty reply is "".
 */
export function birdcText(reply: BirdReply): string {
  let out = ''
  for (const l of reply.lines) {
    if (l.kind === 'continuation') out += l.text + '\n'
    else if (l.kind === 'unframed') out += `??? <${l.raw}>\n`
    else if (l.code !== 0) out += l.text + '\n'
  }
  return out
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

  /** Runs one command; the reply as birdc prints it, without birdc's greeting line. Throws BirdError on 8xxx/9xxx. */
  async command(cmd: string): Promise<string> {
    const reply = await this.request(cmd)
    if (isErrorCode(reply.code)) throw new BirdError(this.path, cmd, reply.code, reply.text)
    return birdcText(reply)
  }

  /** Runs one command; the reply as received, codes kept. An error reply is returned, not thrown: its code is in the text. */
  async commandRaw(cmd: string): Promise<string> {
    return (await this.request(cmd)).raw
  }

  /** Runs one command and returns the assembled reply. Calls are queued: one command at a time on the wire. */
  request(cmd: string): Promise<BirdReply> {
    if (/[\r\n]/.test(cmd)) return Promise.reject(new BirdProtocolError(this.path, `a command is one line: ${JSON.stringify(cmd)}`))
    const run = this.queue.then(() => this.send(cmd))
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

  private send(cmd: string): Promise<BirdReply> {
    if (this.closedError) return Promise.reject(this.closedError)
    return new Promise<BirdReply>((resolve, reject) => {
      this.waiter = { what: `\`${cmd}\``, resolve, reject }
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
    if (this.waiter) this.arm()
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
      return new BirdSocketRefusedError(path)
    case 'EACCES':
    case 'EPERM':
      return new BirdSocketPermissionError(path)
    case 'ENOTSOCK':
      return new BirdSocketError(`${path} is not a socket (expected BIRD's control socket)`, path)
    default:
      return new BirdSocketError(`BIRD control socket ${path}: ${e.code ?? ''} ${e.message}`.replace(/ {2,}/g, ' '), path)
  }
}
