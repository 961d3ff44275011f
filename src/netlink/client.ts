// An rtnetlink client on the `netlink` package's raw socket. Only the socket is used: messages are
// framed and matched to their requests by sequence number here, payloads are built and replies
// parsed by ./codec.ts, one message at a time (in place, in the datagram), so one odd route never
// fails a dump. Route writes can go out many to a sendmsg (replaceRoutes), as `fix --apply` needs
// for large plans. The package (a native addon) is loaded on first use, so commands that never
// write routes skip it.
import {endianness} from 'node:os'
import {getSystemErrorName} from 'node:util'

import {RouteDoctorError} from '../model/errors.js'
import type {Family, KernelRoute} from '../model/types.js'
import {
  NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, RTM_DELROUTE, RTM_GETLINK, RTM_GETROUTE, RTM_NEWLINK,
  RTM_NEWROUTE, type RouteSpec, encodeLinkDumpRequest, encodeRoute, encodeRouteDumpRequest, encodeRouteMessages, parseLinkMessage,
  parseRouteMessage, protocolName, routeMessageKey, tableName, toKernelRoute,
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
    super(message ?? `${operation}${route ? ` ${describeSpec(route)}` : ''}: ${errnoName} (${ERRNO_TEXT[errnoName] ?? 'kernel error'})`, 1, `E_NETLINK_${errnoName}`)
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
  addRoute(route: RouteSpec): Promise<void>
  deleteRoute(route: RouteSpec): Promise<void>
  links(): Promise<Map<number, string>>
  linkIndex(name: string): Promise<number | undefined>
  close(): void
}

const TIMEOUT_MS = 10_000
const LE = endianness() === 'LE'

// Room for the ACKs of the pipelined writes (apply.ts keeps up to WRITE_WINDOW in flight): an ACK
// that does not fit is dropped by the kernel. Capped by net.core.rmem_max.
const RECV_BUFFER = 4 << 20

const rd16 = (b: Buffer, o: number): number => (LE ? b.readUInt16LE(o) : b.readUInt16BE(o))
const rd32 = (b: Buffer, o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o))
const rdS32 = (b: Buffer, o: number): number => (LE ? b.readInt32LE(o) : b.readInt32BE(o))

/** Receives one message of a request: the datagram, where the message's payload starts and ends, its type. */
type MessageHandler = (buf: Buffer, start: number, end: number, type: number) => void

/**
 * Requests and their answers on the raw socket: each request has a sequence number, and every
 * message that comes back is handed, in place, to the handler of its sequence number.
 */
class Transport {
  private seq = 1
  private readonly handlers = new Map<number, MessageHandler>()
  private readonly port: number
  // a socket-level error (ENOBUFS: answers were dropped) must not crash the process mid-apply: the
  // requests whose answers were lost fail by timeout (or at once, see replaceRoutes), and the apply restores
  socketError: Error | undefined

  constructor(private readonly raw: RawSocket) {
    this.port = raw.address().port >>> 0
    raw.on('message', (datagram) => this.receive(datagram))
    raw.on('truncatedMessage', () => {
      this.socketError = new Error('a netlink message was truncated')
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

  listen(seq: number, handler: MessageHandler): void {
    if (this.handlers.size === 0) this.raw.ref()
    this.handlers.set(seq, handler)
  }

  forget(seq: number): void {
    if (this.handlers.delete(seq) && this.handlers.size === 0) this.raw.unref()
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
      this.handlers.get(rd32(buf, o + 8))?.(buf, o + 16, o + len, rd16(buf, o + 4))
      o += (len + 3) & ~3
    }
  }
}

class RtnlClient implements RouteClient {
  constructor(private readonly t: Transport) {}

  close(): void {
    this.t.close()
  }

  /** One request (one message); `onMessage` sees each answer until `done` settles it. */
  private request<T>(
    type: number,
    flags: number,
    payload: Buffer,
    onMessage: (buf: Buffer, start: number, end: number, type: number, done: (error: Error | undefined, value?: T) => void) => void,
    onTimeout: () => Error,
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
        if (error) reject(error)
        else resolve(value as T)
      }
      const timer = setTimeout(() => done(onTimeout()), TIMEOUT_MS)
      this.t.listen(seq, (b, start, end, msgType) => onMessage(b, start, end, msgType, done))
      this.t.send(buf, (error) => done(error))
    })
  }

  /** A dump: every message up to NLMSG_DONE goes to `visit`, in order, with its index. */
  private dump(type: number, payload: Buffer, operation: string, visit: (buf: Buffer, start: number, end: number, type: number, index: number) => void): Promise<void> {
    let index = 0
    return this.request<void>(type, NLM_F_DUMP, payload, (buf, start, end, msgType, done) => {
      if (msgType === NLMSG_DONE) {
        // NLMSG_DONE carries an int: 0, or a negative errno when the dump failed
        const errno = end - start >= 4 ? -rdS32(buf, start) : 0
        done(errno > 0 ? netlinkError(errno, operation) : undefined)
      } else if (msgType === NLMSG_ERROR) {
        const errno = end - start >= 4 ? -rdS32(buf, start) : 0
        done(errno !== 0 ? netlinkError(errno, operation) : undefined)
      } else {
        try {
          visit(buf, start, end, msgType, index++)
        } catch (error) {
          done(error as Error)
        }
      }
    }, () => new Error(`${operation}: no answer within ${TIMEOUT_MS / 1000} s${this.why()}`))
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
        const spec = parseRouteMessage(buf.subarray(start, end))
        for (const nh of spec.nexthops) if (nh.ifindex) nh.dev = links.get(nh.ifindex)
        result.routes.push(dumpedRoute(spec, links, index))
      } catch (error) {
        result.undecodable.push({index, error: (error as Error).message})
      }
    })
    return result
  }

  private write(type: number, route: RouteSpec, flags: number, operation: string): Promise<void> {
    const payload = encodeRoute(route, type === RTM_DELROUTE ? 'del' : 'new')
    return this.request<void>(type, NLM_F_ACK | flags, payload, (buf, start, end, msgType, done) => {
      if (msgType !== NLMSG_ERROR) return // only an ACK or an error answers a write
      const errno = end - start >= 4 ? -rdS32(buf, start) : 0
      done(errno !== 0 ? netlinkError(errno, operation, route) : undefined)
    }, () => new NetlinkError(0, 'ENOACK', operation, route, `${operation} ${describeSpec(route)}: no acknowledgement within ${TIMEOUT_MS / 1000} s${this.why()}`))
  }

  replaceRoute(route: RouteSpec): Promise<void> {
    return this.write(RTM_NEWROUTE, route, NLM_F_CREATE | NLM_F_REPLACE, 'RTM_NEWROUTE')
  }

  replaceRoutes(routes: RouteSpec[]): Promise<Array<Error | undefined>> {
    const operation = 'RTM_NEWROUTE'
    const outcome: Array<Error | undefined> = new Array(routes.length).fill(undefined)
    if (routes.length === 0) return Promise.resolve(outcome)
    // One buffer of nlmsghdr + payload for all of them, one sendmsg. The kernel handles the messages
    // in order and answers a failed one with an error under its sequence number whether or not it
    // asked for an ACK; only the last asks. So when the last one's answer comes, every earlier
    // error is already on the socket, ahead of it, and a route with no error was written.
    const first = this.t.nextSeq()
    const seqs = [first]
    for (let i = 1; i < routes.length; i++) seqs.push(this.t.nextSeq())
    const last = routes.length - 1
    const port = this.t.portId
    const flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE
    const buf = encodeRouteMessages(routes, 'new', (i) => ({type: RTM_NEWROUTE, flags: i === last ? flags | NLM_F_ACK : flags, seq: seqs[i], port}))
    const socketErrorBefore = this.t.socketError
    return new Promise((resolve) => {
      let done = false
      const finish = (unanswered?: (i: number) => Error): void => {
        if (done) return
        done = true
        clearTimeout(timer)
        for (const seq of seqs) this.t.forget(seq)
        if (unanswered) for (let i = 0; i < routes.length; i++) outcome[i] ??= unanswered(i)
        resolve(outcome)
      }
      const timer = setTimeout(() => {
        finish((i) => new NetlinkError(0, 'ENOACK', operation, routes[i], `${operation} ${describeSpec(routes[i])}: no acknowledgement within ${TIMEOUT_MS / 1000} s${this.why()}`))
      }, TIMEOUT_MS)
      seqs.forEach((seq, i) => {
        this.t.listen(seq, (b, start, end, msgType) => {
          if (done || msgType !== NLMSG_ERROR) return // only an ACK or an error answers a write
          const errno = end - start >= 4 ? -rdS32(b, start) : 0
          if (errno !== 0) outcome[i] = netlinkError(errno, operation, routes[i])
          if (i !== last) return
          if (this.t.socketError !== socketErrorBefore) {
            // the socket overflowed meanwhile: an error may have been dropped, so nothing unanswered counts as written
            finish((j) => new NetlinkError(0, 'ENOACK', operation, routes[j], `${operation} ${describeSpec(routes[j])}: answers may have been lost${this.why()}`))
          } else finish()
        })
      })
      this.t.send(buf, (error) => finish((i) => new NetlinkError(0, 'ESEND', operation, routes[i], `${operation} ${describeSpec(routes[i])}: ${error.message}`)))
    })
  }

  addRoute(route: RouteSpec): Promise<void> {
    return this.write(RTM_NEWROUTE, route, NLM_F_CREATE | NLM_F_EXCL, 'RTM_NEWROUTE')
  }

  deleteRoute(route: RouteSpec): Promise<void> {
    return this.write(RTM_DELROUTE, route, 0, 'RTM_DELROUTE')
  }
}

type RawSocketClass = new (protocol: number, options?: {recvBufferSize?: number}) => RawSocket
const NETLINK_ROUTE = 0

// Only the package's raw socket (dist/raw.js) is used: its index also builds the generated structs
// of every family (genl, nl80211, wg, rt), which takes several times as long to load.
async function loadRawSocket(): Promise<RawSocketClass> {
  let mod: Record<string, unknown>
  try {
    mod = (await import('netlink/dist/raw.js')) as Record<string, unknown>
  } catch {
    try {
      mod = (await import('netlink')) as Record<string, unknown>
    } catch (error) {
      throw new RouteDoctorError(`cannot load the netlink module: ${(error as Error).message}`, 1, 'E_NETLINK_LOAD')
    }
  }
  const api = (typeof mod.RawNetlinkSocket === 'function' ? mod : (mod.default as Record<string, unknown> | undefined)) as {RawNetlinkSocket?: RawSocketClass} | undefined
  if (typeof api?.RawNetlinkSocket !== 'function') throw new RouteDoctorError('cannot load the netlink module: it has no RawNetlinkSocket', 1, 'E_NETLINK_LOAD')
  return api.RawNetlinkSocket
}

/** Open an rtnetlink socket in this process's network namespace. */
export async function openRouteClient(): Promise<RouteClient> {
  const RawNetlinkSocket = await loadRawSocket()
  try {
    return new RtnlClient(new Transport(new RawNetlinkSocket(NETLINK_ROUTE, {recvBufferSize: RECV_BUFFER})))
  } catch (error) {
    const e = error as {code?: string; message: string}
    if (e.code === 'EPERM' || e.code === 'EACCES') throw netlinkError(e.code === 'EPERM' ? 1 : 13, 'socket(NETLINK_ROUTE)')
    throw new RouteDoctorError(`cannot open an rtnetlink socket: ${e.message}`, 1, 'E_NETLINK_SOCKET')
  }
}
