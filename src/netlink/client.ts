// An rtnetlink client on the `netlink` package's native socket. Only the socket is used: messages
// are framed and matched to their requests by sequence number here, payloads are built and replies
// parsed by ./codec.ts, one message at a time (in place, in the datagram), so one odd route never
// fails a dump. For large plans (`fix --apply`): route writes are encoded once and go out many to a
// sendmsg (prepareReplaces, replaceRoutes), and a dump can be read in place, each message handed
// over undecoded (scanRoutes; ./scan.ts reads them). Datagrams are read one recvmsg each into a
// 64 KiB buffer, so the kernel fills dump datagrams to 32 KiB. The package (a native addon) is
// loaded on first use, so commands that never write routes skip it.
import {existsSync} from 'node:fs'
import {createRequire} from 'node:module'
import {endianness} from 'node:os'
import {dirname} from 'node:path'
import {getSystemErrorName} from 'node:util'

import {RouteDoctorError} from '../model/errors.js'
import type {Family, KernelRoute} from '../model/types.js'
import {
  NLM_F_ACK,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
  NLMSG_DONE,
  NLMSG_ERROR,
  RTM_DELROUTE,
  RTM_GETLINK,
  RTM_GETROUTE,
  RTM_NEWLINK,
  RTM_NEWROUTE,
  type RouteSpec,
  encodeLinkDumpRequest,
  encodeRoute,
  encodeRouteBatch,
  encodeRouteDumpRequest,
  parseLinkMessage,
  parseRouteMessage,
  protocolName,
  routeMessageKey,
  tableName,
  toKernelRoute,
  AF_INET,
  AF_INET6,
  RTM_DELRULE,
  RTM_GETRULE,
  RTM_NEWRULE,
  type RuleSpec,
  encodeRule,
  parseRuleMessage,
  ruleText,
} from './codec.js'

// Human text for the errnos route writes commonly meet (Node 20 has no getSystemErrorMessage).
const ERRNO_TEXT: Record<string, string> = {
  EEXIST: 'a route with this table, destination and metric already exists',
  ENETUNREACH: 'the gateway is not reachable (no onlink, or no route to it)',
  ENODEV: 'the next-hop device does not exist',
  ESRCH: 'no such route',
  EINVAL: 'the kernel rejected the route as invalid',
  EPERM: 'operation not permitted',
  EACCES: 'permission denied',
  ENOBUFS: 'no buffer space',
  EHOSTUNREACH: 'host unreachable',
}

/** A kernel NACK, with the errno name and the route it was about. */
export class NetlinkError extends RouteDoctorError {
  constructor(
    readonly errno: number, // positive errno
    readonly errnoName: string, // EEXIST, ENETUNREACH, ENODEV, EPERM, ...
    readonly operation: string, // RTM_NEWROUTE, RTM_DELROUTE, ...
    readonly route?: RouteSpec,
    message?: string,
  ) {
    super(
      message ??
        `${operation}${route ? ` ${describeSpec(route)}` : ''}: ${errnoName} (${ERRNO_TEXT[errnoName] ?? 'kernel error'})`,
      1,
      `E_NETLINK_${errnoName}`,
    )
    this.name = 'NetlinkError'
  }
}

/** EPERM / EACCES: the process lacks CAP_NET_ADMIN. */
export class NetlinkPermissionError extends NetlinkError {
  constructor(errno: number, errnoName: string, operation: string, route?: RouteSpec) {
    super(
      errno,
      errnoName,
      operation,
      route,
      `${operation}${route ? ` ${describeSpec(route)}` : ''}: ${errnoName}: changing routes needs CAP_NET_ADMIN; run as root (sudo), or inside the namespace with \`ip netns exec NS routedoctor …\` as root`,
    )
    this.name = 'NetlinkPermissionError'
  }
}

export function describeSpec(r: RouteSpec): string {
  return `${r.dst} table ${tableName(r.tableId)} metric ${r.metric} proto ${protocolName(r.protocol)}`
}

function errnoName(errno: number): string {
  try {
    return getSystemErrorName(-errno)
  } catch {
    return `E${errno}`
  }
}

export function netlinkError(errno: number, operation: string, route?: RouteSpec): NetlinkError {
  const name = errnoName(errno)
  return name === 'EPERM' || name === 'EACCES'
    ? new NetlinkPermissionError(errno, name, operation, route)
    : new NetlinkError(errno, name, operation, route)
}

// The slice of the package's raw socket (dist/raw.js, a native addon) this client uses: it sends
// bytes and hands over each datagram received; the messages in them are read here, in place.
interface RawSocket {
  addMembership?(group: number): void
  send(data: Uint8Array, options: {port?: number; groups?: number}, callback: (error?: Error) => void): void
  on(event: 'message', listener: (datagram: Buffer) => void): unknown
  on(event: 'truncatedMessage' | 'error', listener: (error: Error | Buffer) => void): unknown
  address(): {port: number}
  ref(): void
  unref(): void
  close(): void
}

export interface DumpedRoute {
  route: KernelRoute
  spec: RouteSpec
}

// The KernelRoute of a dumped route is built when first read: a read-back that only compares
// specs never pays for it. It is an own enumerable property (JSON and spreads see it).
function dumpedRoute(spec: RouteSpec, links: ReadonlyMap<number, string>, index: number): DumpedRoute {
  let route: KernelRoute | undefined
  return {
    spec,
    get route(): KernelRoute {
      route ??= toKernelRoute(spec, links, {file: 'rtnetlink', line: index + 1, endLine: index + 1})
      return route
    },
  }
}

/**
 * Decode the RTM_NEWROUTE payload buf[start, end) of a dump into a DumpedRoute, next-hop devices
 * named from `links`; undefined when it does not decode (dumpRoutes lists those as undecodable).
 */
export function decodeDumpedRoute(
  buf: Buffer,
  start: number,
  end: number,
  links: ReadonlyMap<number, string>,
  index: number,
): DumpedRoute | undefined {
  try {
    return decodeOrThrow(buf, start, end, links, index)
  } catch {
    return undefined
  }
}

function decodeOrThrow(
  buf: Buffer,
  start: number,
  end: number,
  links: ReadonlyMap<number, string>,
  index: number,
): DumpedRoute {
  const spec = parseRouteMessage(buf.subarray(start, end))
  for (const nh of spec.nexthops) if (nh.ifindex) nh.dev = links.get(nh.ifindex)
  return dumpedRoute(spec, links, index)
}

/**
 * decodeDumpedRoute, put off until the route or spec is first read: for a message the caller knows
 * decodes (scan.ts's wireDecodes), which it may well never read. It keeps the datagram.
 */
export function lazyDumpedRoute(
  buf: Buffer,
  start: number,
  end: number,
  links: ReadonlyMap<number, string>,
  index: number,
): DumpedRoute {
  return new LazyDumpedRoute(buf, start, end, links, index)
}

// one object a route (thousands of them are made and never read): the getters are the class's
class LazyDumpedRoute implements DumpedRoute {
  private decoded: DumpedRoute | undefined
  constructor(
    private readonly buf: Buffer,
    private readonly start: number,
    private readonly end: number,
    private readonly links: ReadonlyMap<number, string>,
    private readonly index: number,
  ) {}

  private get it(): DumpedRoute {
    this.decoded ??= decodeOrThrow(this.buf, this.start, this.end, this.links, this.index)
    return this.decoded
  }

  get spec(): RouteSpec {
    return this.it.spec
  }

  get route(): KernelRoute {
    return this.it.route
  }

  toJSON(): {route: KernelRoute; spec: RouteSpec} {
    return {route: this.route, spec: this.spec}
  }
}

/** Sees each RTM_NEWROUTE payload of a dump in place, buf[start, end), with its index in the dump. */
export type RouteVisitor = (buf: Buffer, start: number, end: number, index: number) => void

/**
 * Route writes encoded ahead, sent a slice at a time (see RouteClient.prepareReplaces): so a large
 * apply can encode while its journal is being synced, and sends no request twice.
 */
export interface PreparedWrites {
  readonly count: number
  /** Send routes from..to-1 in one sendmsg; each one's outcome, as replaceRoutes gives it. */
  send(from: number, to: number): Promise<Array<Error | undefined>>
}

export interface DumpResult {
  routes: DumpedRoute[]
  // messages that did not decode, kept so a caller can report them; they never fail the dump
  undecodable: Array<{index: number; error: string}>
}

export interface DumpOptions {
  // decode only the routes whose key text (codec.routeKeyText: family|table|dst|metric) is here;
  // the rest, and routes with a TOS, are skipped unread
  keys?: ReadonlySet<string>
}

export interface RouteClient {
  dumpRoutes(family?: Family | 'all', options?: DumpOptions): Promise<DumpResult>
  replaceRoute(route: RouteSpec): Promise<void>
  /**
   * RTM_NEWROUTE (NLM_F_CREATE|NLM_F_REPLACE) for each route, all sent before any reply is awaited;
   * resolves when the kernel has handled every one, with each route's outcome in order: undefined
   * when written, else its error (a NetlinkError carrying that route, matched by sequence number).
   * Optional: without it, callers use replaceRoute.
   */
  replaceRoutes?(routes: RouteSpec[]): Promise<Array<Error | undefined>>
  /** Optional: replaceRoutes in two steps, encode now and send slices later. */
  prepareReplaces?(routes: RouteSpec[]): PreparedWrites
  /**
   * A dump read in place. `visit` sees every RTM_NEWROUTE payload of the family (decode one with
   * decodeDumpedRoute and `links`, which the caller fetched); resolves when the dump is done.
   */
  scanRoutes(family: Family | 'all', visit: RouteVisitor): Promise<void>
  addRoute(route: RouteSpec): Promise<void>
  deleteRoute(route: RouteSpec): Promise<void>
  /**
   * The kernel's rules of a family (RTM_GETRULE dump). Optional: a client without it cannot write the overlay's rules.
   */
  rules?(family: Family): Promise<RuleSpec[]>
  /** RTM_NEWRULE with NLM_F_CREATE|NLM_F_EXCL: EEXIST when the same rule is there. */
  addRule?(rule: RuleSpec): Promise<void>
  /** RTM_DELRULE: ENOENT when no such rule is there. */
  deleteRule?(rule: RuleSpec): Promise<void>
  links(): Promise<Map<number, string>>
  /** Optional: a link dump read in place, every RTM_NEWLINK payload to `visit`. */
  scanLinks?(visit: RouteVisitor): Promise<void>
  linkIndex(name: string): Promise<number | undefined>
  close(): void
}

const TIMEOUT_MS = 10_000
const LE = endianness() === 'LE'

// Room for the ACKs of the pipelined writes (apply.ts keeps up to WRITE_WINDOW in flight): an ACK
// that does not fit is dropped by the kernel. Capped by net.core.rmem_max.
const RECV_BUFFER = 4 << 20

// Datagrams are read into a buffer of this size, one recvmsg each (the package's default peeks at
// each first, two calls a datagram). The kernel sizes a dump's datagrams to the reader's buffer, up
// to 32 KiB less its skb overhead (NLMSG_GOODSIZE, under 4 KiB, otherwise): a route dump comes in a
// ninth as many. A larger buffer gets no larger datagram, and the binding allocates (and zero-fills)
// a buffer of this size for every datagram it reads, ACKs included, so a larger one only touches more
// memory. Only a link dump's datagram can be larger (min_dump_alloc: its largest link
// message, a few KiB without VF details, which are not asked for); one that does not fit fails what
// waits, at once.
const MESSAGE_BUFFER = 32 << 10

const rd16 = (b: Buffer, o: number): number => (LE ? b.readUInt16LE(o) : b.readUInt16BE(o))
const rd32 = (b: Buffer, o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o))
const rdS32 = (b: Buffer, o: number): number => (LE ? b.readInt32LE(o) : b.readInt32BE(o))

/** Receives one message of a request: the datagram, where the message's payload starts and ends, its type. */
type MessageHandler = (buf: Buffer, start: number, end: number, type: number) => void
type RangeHandler = (i: number, buf: Buffer, start: number, end: number, type: number) => void

/**
 * Requests and their answers on the raw socket: each request has a sequence number, and every
 * message that comes back is handed, in place, to the handler of its sequence number.
 */
class Transport {
  private seq = 1
  private readonly handlers = new Map<number, MessageHandler>()
  private lastSeq = -1
  private lastHandler: MessageHandler | undefined
  // a run of sequence numbers answered by one handler (a batch of writes): first, count, handler(i, ...)
  private ranges: Array<{first: number; count: number; handler: RangeHandler}> = []
  // how to fail each request waiting for answers, should they be lost
  readonly aborts = new Set<(error: Error) => void>()
  private readonly port: number
  // a socket-level error (ENOBUFS: answers were dropped) must not crash the process mid-apply: the
  // requests whose answers were lost fail by timeout (or at once, see replaceRoutes), and the apply restores
  socketError: Error | undefined

  constructor(private readonly raw: RawSocket) {
    this.port = raw.address().port >>> 0
    raw.on('message', (datagram) => this.receive(datagram))
    raw.on('truncatedMessage', () => {
      this.socketError = new Error(`a netlink message was truncated (larger than ${MESSAGE_BUFFER} bytes)`)
      // whatever it answered is lost: fail every request waiting now instead of at its timeout
      for (const abort of [...this.aborts]) abort(this.socketError)
    })
    raw.on('error', (error) => {
      this.socketError = error instanceof Error ? error : new Error(String(error))
    })
    raw.unref() // only a request in flight keeps the process alive
  }

  close(): void {
    this.raw.close()
  }

  nextSeq(): number {
    const s = this.seq
    this.seq = (this.seq % 0xffffffff) + 1
    return s
  }

  /** `count` consecutive sequence numbers (never wrapping inside the run); the first. */
  reserveSeqs(count: number): number {
    if (this.seq + count > 0xffffffff) this.seq = 1
    const first = this.seq
    this.seq += count
    if (this.seq > 0xffffffff) this.seq = 1
    return first
  }

  header(buf: Buffer, at: number, len: number, type: number, flags: number, seq: number): void {
    if (LE) {
      buf.writeUInt32LE(len, at)
      buf.writeUInt16LE(type, at + 4)
      buf.writeUInt16LE(flags, at + 6)
      buf.writeUInt32LE(seq, at + 8)
      buf.writeUInt32LE(this.port, at + 12)
    } else {
      buf.writeUInt32BE(len, at)
      buf.writeUInt16BE(type, at + 4)
      buf.writeUInt16BE(flags, at + 6)
      buf.writeUInt32BE(seq, at + 8)
      buf.writeUInt32BE(this.port, at + 12)
    }
  }

  get portId(): number {
    return this.port
  }

  private get waiting(): boolean {
    return this.handlers.size > 0 || this.ranges.length > 0
  }

  listen(seq: number, handler: MessageHandler): void {
    if (!this.waiting) this.raw.ref()
    this.handlers.set(seq, handler)
  }

  forget(seq: number): void {
    if (seq === this.lastSeq) {
      this.lastSeq = -1
      this.lastHandler = undefined
    }
    if (this.handlers.delete(seq) && !this.waiting) this.raw.unref()
  }

  /** Answers to sequence numbers first..first+count-1 go to `handler`, with their offset in the run. */
  listenRange(first: number, count: number, handler: RangeHandler): () => void {
    if (!this.waiting) this.raw.ref()
    const entry = {first, count, handler}
    this.ranges.push(entry)
    return () => {
      const before = this.ranges.length
      this.ranges = this.ranges.filter((r) => r !== entry)
      if (before !== this.ranges.length && !this.waiting) this.raw.unref()
    }
  }

  send(buf: Buffer, onError: (error: Error) => void): void {
    this.raw.send(buf, {}, (error) => {
      if (error) onError(error)
    })
  }

  private receive(buf: Buffer): void {
    let o = 0
    while (o + 16 <= buf.length) {
      const len = rd32(buf, o)
      if (len < 16 || o + len > buf.length) break // a malformed tail: nothing more to read in it
      const seq = rd32(buf, o + 8)
      // a dump's datagram holds many messages of one sequence number: its handler is looked up once
      let handler = seq === this.lastSeq ? this.lastHandler : undefined
      if (!handler) {
        handler = this.handlers.get(seq)
        this.lastSeq = handler ? seq : -1
        this.lastHandler = handler
      }
      if (handler) handler(buf, o + 16, o + len, rd16(buf, o + 4))
      else {
        for (const r of this.ranges) {
          const i = (seq - r.first) >>> 0
          if (i < r.count) {
            r.handler(i, buf, o + 16, o + len, rd16(buf, o + 4))
            break
          }
        }
      }
      o += (len + 3) & ~3
    }
  }
}

class RtnlClient implements RouteClient {
  constructor(private readonly t: Transport) {}

  close(): void {
    this.t.close()
  }

  /** One request (one message); the handler `answers(done)` makes sees each answer until `done` settles it. */
  private request<T>(
    type: number,
    flags: number,
    payload: Buffer,
    answers: (done: (error: Error | undefined, value?: T) => void) => MessageHandler,
    onTimeout: () => Error,
    idle = false, // the timeout counts from the last answer, not from the request (a dump that is still coming)
  ): Promise<T> {
    const seq = this.t.nextSeq()
    const buf = Buffer.alloc(16 + ((payload.length + 3) & ~3))
    this.t.header(buf, 0, 16 + payload.length, type, NLM_F_REQUEST | flags, seq)
    payload.copy(buf, 16)
    return new Promise<T>((resolve, reject) => {
      let settled = false
      const done = (error: Error | undefined, value?: T): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        this.t.forget(seq)
        this.t.aborts.delete(done)
        if (error) reject(error)
        else resolve(value as T)
      }
      const timer = setTimeout(() => done(onTimeout()), TIMEOUT_MS)
      this.t.aborts.add(done)
      const handler = answers(done)
      let answered = 0
      this.t.listen(seq, idle ? (buf, start, end, msgType) => {
        if ((++answered & 255) === 0) timer.refresh()
        handler(buf, start, end, msgType)
      } : handler)
      this.t.send(buf, (error) => done(error))
    })
  }

  /**
   * A dump: every message up to NLMSG_DONE goes to `visit`, in order, with its index (counting
   * every message); with `only`, only the messages of that type are visited.
   */
  private dump(
    type: number,
    payload: Buffer,
    operation: string,
    visit: (buf: Buffer, start: number, end: number, type: number, index: number) => void,
    only?: number,
  ): Promise<void> {
    let index = 0
    return this.request<void>(type, NLM_F_DUMP, payload, (done) => (buf, start, end, msgType) => {
      if (msgType === NLMSG_DONE) {
        // NLMSG_DONE carries an int: 0, or a negative errno when the dump failed
        const errno = end - start >= 4 ? -rdS32(buf, start) : 0
        done(errno > 0 ? netlinkError(errno, operation) : undefined)
      } else if (msgType === NLMSG_ERROR) {
        const errno = end - start >= 4 ? -rdS32(buf, start) : 0
        done(errno !== 0 ? netlinkError(errno, operation) : undefined)
      } else if (only === undefined || msgType === only) {
        try {
          visit(buf, start, end, msgType, index++)
        } catch (error) {
          done(error as Error)
        }
      } else index++
    }, () => new Error(`${operation}: no answer within ${TIMEOUT_MS / 1000} s${this.why()}`), true)
  }

  private why(): string {
    return this.t.socketError ? ` (socket error: ${this.t.socketError.message})` : ''
  }

  async links(): Promise<Map<number, string>> {
    const out = new Map<number, string>()
    await this.dump(RTM_GETLINK, encodeLinkDumpRequest(), 'RTM_GETLINK', (buf, start, end, type) => {
      if (type !== RTM_NEWLINK) return
      try {
        const l = parseLinkMessage(buf.subarray(start, end))
        if (l.ifname !== undefined) out.set(l.ifindex, l.ifname)
      } catch {
        // a link we cannot read is simply not nameable
      }
    })
    return out
  }

  async scanLinks(visit: RouteVisitor): Promise<void> {
    await this.dump(RTM_GETLINK, encodeLinkDumpRequest(), 'RTM_GETLINK', visit, RTM_NEWLINK)
  }

  async linkIndex(name: string): Promise<number | undefined> {
    for (const [index, n] of await this.links()) if (n === name) return index
    return undefined
  }

  async dumpRoutes(family: Family | 'all' = 'inet', options: DumpOptions = {}): Promise<DumpResult> {
    const links = await this.links()
    const result: DumpResult = {routes: [], undecodable: []}
    const keys = options.keys
    // the tables and metrics of the wanted keys: most routes of a full table fail this number check
    // before their key text is built
    let want: ((tableId: number, metric: number) => boolean) | undefined
    if (keys) {
      const tables = new Set<number>()
      const metrics = new Set<number>()
      for (const k of keys) {
        const [, table, , metric] = k.split('|')
        tables.add(Number(table))
        metrics.add(Number(metric))
      }
      want = (tableId, metric) => tables.has(tableId) && metrics.has(metric)
    }
    await this.dump(RTM_GETROUTE, encodeRouteDumpRequest(family), 'RTM_GETROUTE', (buf, start, end, type, index) => {
      if (type !== RTM_NEWROUTE) return
      if (keys) {
        let key: string | undefined
        try {
          key = routeMessageKey(buf, start, end, want)
        } catch {
          key = '' // malformed: the full decode below records it
        }
        if (key === undefined || (key !== '' && !keys.has(key))) return
      }
      try {
        result.routes.push(decodeOrThrow(buf, start, end, links, index))
      } catch (error) {
        result.undecodable.push({index, error: (error as Error).message})
      }
    })
    return result
  }

  async scanRoutes(family: Family | 'all', visit: RouteVisitor): Promise<void> {
    await this.dump(RTM_GETROUTE, encodeRouteDumpRequest(family), 'RTM_GETROUTE', visit, RTM_NEWROUTE)
  }

  private write(type: number, route: RouteSpec, flags: number, operation: string): Promise<void> {
    const payload = encodeRoute(route, type === RTM_DELROUTE ? 'del' : 'new')
    return this.request<void>(
      type,
      NLM_F_ACK | flags,
      payload,
      (done) => (buf, start, end, msgType) => {
        if (msgType !== NLMSG_ERROR) return // only an ACK or an error answers a write
        const errno = end - start >= 4 ? -rdS32(buf, start) : 0
        done(errno !== 0 ? netlinkError(errno, operation, route) : undefined)
      },
      () =>
        new NetlinkError(
          0,
          'ENOACK',
          operation,
          route,
          `${operation} ${describeSpec(route)}: no acknowledgement within ${TIMEOUT_MS / 1000} s${this.why()}`,
        ),
    )
  }

  replaceRoute(route: RouteSpec): Promise<void> {
    return this.write(RTM_NEWROUTE, route, NLM_F_CREATE | NLM_F_REPLACE, 'RTM_NEWROUTE')
  }

  replaceRoutes(routes: RouteSpec[]): Promise<Array<Error | undefined>> {
    return this.prepareReplaces(routes).send(0, routes.length)
  }

  prepareReplaces(routes: RouteSpec[]): PreparedWrites {
    const operation = 'RTM_NEWROUTE'
    // One buffer of nlmsghdr + payload for all of them, sequence numbers first.., encoded once. A
    // slice goes out in one sendmsg. The kernel handles its messages in order and answers a failed
    // one with an error under its sequence number whether or not it asked for an ACK; only the
    // slice's last asks. So when the last one's answer comes, every earlier error is already on the
    // socket, ahead of it, and a route with no error was written.
    const first = this.t.reserveSeqs(Math.max(1, routes.length))
    const flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE
    const {buf, offsets} = encodeRouteBatch(routes, 'new', RTM_NEWROUTE, flags, first, this.t.portId)
    const sent = new Uint8Array(routes.length)
    const t = this.t
    const why = (): string => this.why()
    return {
      count: routes.length,
      send(from: number, to: number): Promise<Array<Error | undefined>> {
        const n = to - from
        const outcome: Array<Error | undefined> = new Array(Math.max(0, n)).fill(undefined)
        if (n <= 0) return Promise.resolve(outcome)
        for (let i = from; i < to; i++) {
          if (sent[i]) throw new Error(`route ${i} of the batch was sent already`)
          sent[i] = 1
        }
        const last = n - 1
        // the slice's last message asks for the ACK (its flags are the u16 at +6 of its header)
        const flagsAt = offsets[to - 1] + 6
        const ackFlags = flags | NLM_F_ACK
        if (LE) buf.writeUInt16LE(ackFlags, flagsAt)
        else buf.writeUInt16BE(ackFlags, flagsAt)
        const socketErrorBefore = t.socketError
        return new Promise((resolve) => {
          let done = false
          let stop: (() => void) | undefined
          const finish = (unanswered?: (i: number) => Error): void => {
            if (done) return
            done = true
            clearTimeout(timer)
            stop?.()
            t.aborts.delete(abort)
            if (unanswered) for (let i = 0; i < n; i++) outcome[i] ??= unanswered(i)
            resolve(outcome)
          }
          const abort = (error: Error): void =>
            finish(
              (i) =>
                new NetlinkError(
                  0,
                  'ENOACK',
                  operation,
                  routes[from + i],
                  `${operation} ${describeSpec(routes[from + i])}: answers were lost (${error.message})`,
                ),
            )
          t.aborts.add(abort)
          const timer = setTimeout(() => {
            finish(
              (i) =>
                new NetlinkError(
                  0,
                  'ENOACK',
                  operation,
                  routes[from + i],
                  `${operation} ${describeSpec(routes[from + i])}: no acknowledgement within ${TIMEOUT_MS / 1000} s${why()}`,
                ),
            )
          }, TIMEOUT_MS)
          stop = t.listenRange((first + from) >>> 0, n, (i, b, start, end, msgType) => {
            if (done || msgType !== NLMSG_ERROR) return // only an ACK or an error answers a write
            const errno = end - start >= 4 ? -rdS32(b, start) : 0
            if (errno !== 0) outcome[i] = netlinkError(errno, operation, routes[from + i])
            if (i !== last) return
            if (t.socketError !== socketErrorBefore) {
              // the socket overflowed meanwhile: an error may have been dropped, so nothing unanswered counts as
              // written
              finish(
                (j) =>
                  new NetlinkError(
                    0,
                    'ENOACK',
                    operation,
                    routes[from + j],
                    `${operation} ${describeSpec(routes[from + j])}: answers may have been lost${why()}`,
                  ),
              )
            } else finish()
          })
          t.send(buf.subarray(offsets[from], offsets[to]), (error) =>
            finish(
              (i) =>
                new NetlinkError(
                  0,
                  'ESEND',
                  operation,
                  routes[from + i],
                  `${operation} ${describeSpec(routes[from + i])}: ${error.message}`,
                ),
            ),
          )
        })
      },
    }
  }

  addRoute(route: RouteSpec): Promise<void> {
    return this.write(RTM_NEWROUTE, route, NLM_F_CREATE | NLM_F_EXCL, 'RTM_NEWROUTE')
  }

  deleteRoute(route: RouteSpec): Promise<void> {
    return this.write(RTM_DELROUTE, route, 0, 'RTM_DELROUTE')
  }

  async rules(family: Family): Promise<RuleSpec[]> {
    const out: RuleSpec[] = []
    const request = Buffer.alloc(12)
    request[0] = family === 'inet6' ? AF_INET6 : AF_INET
    await this.dump(RTM_GETRULE, request, 'RTM_GETRULE', (buf, start, end) => {
      out.push(parseRuleMessage(Buffer.from(buf.subarray(start, end))))
    }, RTM_NEWRULE)
    return out
  }

  addRule(rule: RuleSpec): Promise<void> {
    return this.writeRule(RTM_NEWRULE, rule, NLM_F_CREATE | NLM_F_EXCL, 'RTM_NEWRULE')
  }

  deleteRule(rule: RuleSpec): Promise<void> {
    return this.writeRule(RTM_DELRULE, rule, 0, 'RTM_DELRULE')
  }

  private writeRule(type: number, rule: RuleSpec, flags: number, operation: string): Promise<void> {
    return this.request<void>(
      type,
      NLM_F_ACK | flags,
      encodeRule(rule),
      (done) => (buf, start, end, msgType) => {
        if (msgType !== NLMSG_ERROR) return
        const errno = end - start >= 4 ? -rdS32(buf, start) : 0
        done(errno !== 0 ? netlinkError(errno, `${operation} ${ruleText(rule)}`) : undefined)
      },
      () =>
        new NetlinkError(
          0,
          'ENOACK',
          operation,
          undefined,
          `${operation} ${ruleText(rule)}: no acknowledgement within ${TIMEOUT_MS / 1000} s${this.why()}`,
        ),
    )
  }
}

type RawSocketClass = new (
  protocol: number,
  options?: {recvBufferSize?: number; messagePeeking?: boolean; msgBufferSize?: number},
) => RawSocket
const NETLINK_ROUTE = 0

// The package's native socket class (its dist/raw.js wraps it in RawNetlinkSocket): new (protocol,
// read buffer size (0: peek at each datagram first), onDatagram, onError).
interface NativeNetlink {
  bind(port: number, groups: number): void
  send(port: number, groups: number, data: Uint8Array, callback: (error?: Error) => void): void
  address(): {port: number}
  setRecvBufferSize(size: number): void
  addMembership(group: number): void
  ref(): void
  unref(): void
  close(): void
}
type NativeNetlinkClass = new (
  protocol: number,
  msgBuffer: number,
  onDatagram: (datagram: Buffer, rinfo: {truncated?: number}) => void,
  onError: (error: Error) => void,
) => NativeNetlink

/**
 * The package's native binding, loaded straight from the prebuilt (or locally built) addon: the
 * package's loader (node-gyp-build) searches the file system for it, which takes longer than the
 * rest of opening the socket. Undefined when it is not where the package puts it.
 */
function loadNativeNetlink(): NativeNetlinkClass | undefined {
  try {
    const require = createRequire(import.meta.url)
    const dir = dirname(dirname(require.resolve('netlink/dist/raw.js'))) // the package's folder
    for (const file of [
      `${dir}/build/Release/netlink_binding.node`,
      `${dir}/prebuilds/${process.platform}-${process.arch}/node.napi.node`,
    ]) {
      if (!existsSync(file)) continue
      const binding = require(file) as {NativeNetlink?: unknown}
      return typeof binding.NativeNetlink === 'function' ? (binding.NativeNetlink as NativeNetlinkClass) : undefined
    }
  } catch {
    // the package's own loader will say what is wrong
  }
  return undefined
}

/** RawSocket on the native class, as RawNetlinkSocket is, bound to a port the kernel picks. */
class NativeSocket implements RawSocket {
  private onMessage: (datagram: Buffer) => void = () => undefined
  private onTruncated: (error: Error | Buffer) => void = () => undefined
  private onError: (error: Error | Buffer) => void = () => undefined
  private readonly native: NativeNetlink

  constructor(Native: NativeNetlinkClass, options: {recvBufferSize: number; msgBufferSize: number}) {
    this.native = new Native(
      NETLINK_ROUTE,
      options.msgBufferSize,
      (datagram, rinfo) => (rinfo?.truncated !== undefined ? this.onTruncated(datagram) : this.onMessage(datagram)),
      (error) => this.onError(error),
    )
    try {
      this.native.setRecvBufferSize(options.recvBufferSize)
      this.native.bind(0, 0) // port 0: the kernel assigns a free one
    } catch (error) {
      this.native.close()
      throw error
    }
  }

  on(event: 'message' | 'truncatedMessage' | 'error', listener: (arg: never) => void): this {
    if (event === 'message') this.onMessage = listener as (datagram: Buffer) => void
    else if (event === 'truncatedMessage') this.onTruncated = listener as (error: Error | Buffer) => void
    else this.onError = listener as (error: Error | Buffer) => void
    return this
  }

  send(data: Uint8Array, options: {port?: number; groups?: number}, callback: (error?: Error) => void): void {
    this.native.send(options.port ?? 0, options.groups ?? 0, data, callback)
  }

  address(): {port: number} {
    return this.native.address()
  }

  addMembership(group: number): void {
    this.native.addMembership(group)
  }

  ref(): void {
    this.native.ref()
  }

  unref(): void {
    this.native.unref()
  }

  close(): void {
    this.native.close()
  }
}

// Only the package's raw socket (dist/raw.js) is used: its index also builds the generated structs
// of every family (genl, nl80211, wg, rt), which takes several times as long to load.
// It is CommonJS: require()d, it skips the ESM loader's translation of it.
async function loadRawSocket(): Promise<RawSocketClass> {
  let mod: Record<string, unknown>
  try {
    mod = createRequire(import.meta.url)('netlink/dist/raw.js') as Record<string, unknown>
  } catch {
    try {
      mod = (await import('netlink')) as Record<string, unknown>
    } catch (error) {
      throw new RouteDoctorError(`cannot load the netlink module: ${(error as Error).message}`, 1, 'E_NETLINK_LOAD')
    }
  }
  const api = (
    typeof mod.RawNetlinkSocket === 'function' ? mod : (mod.default as Record<string, unknown> | undefined)
  ) as {RawNetlinkSocket?: RawSocketClass} | undefined
  if (typeof api?.RawNetlinkSocket !== 'function')
    throw new RouteDoctorError('cannot load the netlink module: it has no RawNetlinkSocket', 1, 'E_NETLINK_LOAD')
  return api.RawNetlinkSocket
}

/** Open an rtnetlink socket in this process's network namespace. */
export async function openRouteClient(): Promise<RouteClient> {
  const Native = loadNativeNetlink()
  const RawNetlinkSocket = Native ? undefined : await loadRawSocket()
  try {
    const options = {recvBufferSize: RECV_BUFFER, messagePeeking: false, msgBufferSize: MESSAGE_BUFFER}
    return new RtnlClient(
      new Transport(Native ? new NativeSocket(Native, options) : new RawNetlinkSocket!(NETLINK_ROUTE, options)),
    )
  } catch (error) {
    const e = error as {code?: string; message: string}
    if (e.code === 'EPERM' || e.code === 'EACCES')
      throw netlinkError(e.code === 'EPERM' ? 1 : 13, 'socket(NETLINK_ROUTE)')
    throw new RouteDoctorError(`cannot open an rtnetlink socket: ${e.message}`, 1, 'E_NETLINK_SOCKET')
  }
}

/** A socket subscribed to rtnetlink multicast groups (RTNLGRP_*): every notification datagram goes to `onDatagram`. */
export interface MulticastSocket {
  close(): void
}

export async function openMulticastSocket(
  groups: readonly number[],
  onDatagram: (datagram: Buffer) => void,
  onError: (error: Error) => void,
): Promise<MulticastSocket> {
  const Native = loadNativeNetlink()
  const RawNetlinkSocket = Native ? undefined : await loadRawSocket()
  let raw: RawSocket | undefined
  try {
    // each datagram is read at its own size (peeked first): a notification is one small message, and a buffer of
    // MESSAGE_BUFFER allocated for each would hold a burst's thousands of them outside the heap until collected
    const options = {recvBufferSize: RECV_BUFFER, messagePeeking: true, msgBufferSize: 0}
    raw = Native ? new NativeSocket(Native, options) : new RawNetlinkSocket!(NETLINK_ROUTE, options)
    for (const g of groups) raw.addMembership!(g)
  } catch (error) {
    raw?.close()
    const e = error as {code?: string; message: string}
    if (e.code === 'EPERM' || e.code === 'EACCES')
      throw netlinkError(e.code === 'EPERM' ? 1 : 13, 'socket(NETLINK_ROUTE)')
    throw new RouteDoctorError(`cannot subscribe to rtnetlink notifications: ${e.message}`, 1, 'E_NETLINK_SOCKET')
  }
  raw.on('message', onDatagram)
  // an overflow (ENOBUFS) loses notifications: the caller must read everything again
  raw.on('error', (error) => onError(error instanceof Error ? error : new Error(String(error))))
  raw.on('truncatedMessage', () => onError(new Error(`a notification was larger than ${MESSAGE_BUFFER} bytes`)))
  return {close: () => raw.close()}
}
