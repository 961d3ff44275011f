// An rtnetlink client on the `netlink` package's socket. Only the socket is used: payloads are built
// and replies parsed by ./codec.ts, one message at a time, so one odd route never fails a dump.
// The package (a native addon) is loaded on first use, so commands that never write routes skip it.
import {endianness} from 'node:os'
import {getSystemErrorName} from 'node:util'

import {RouteDoctorError} from '../model/errors.js'
import type {Family, KernelRoute} from '../model/types.js'
import {
  NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST, NLMSG_ERROR, RTM_DELROUTE, RTM_GETLINK, RTM_GETROUTE, RTM_NEWLINK,
  RTM_NEWROUTE, type RouteSpec, encodeLinkDumpRequest, encodeRoute, encodeRouteDumpRequest, parseLinkMessage,
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

// The slice of the package's NetlinkSocket this client uses.
interface NlMessage {
  type: number
  flags: number
  seq: number
  data: Buffer
}
interface NlSocket {
  request(type: number, data: Uint8Array | Uint8Array[], options?: {flags?: number; checkError?: boolean; timeout?: number}): Promise<[NlMessage[], unknown]>
  close(): void
  on(event: 'error', listener: (error: Error) => void): unknown
  on(event: 'message', listener: (msgs: NlMessage[]) => void): unknown
  // for the pipelined writes: sequence numbers from the socket's own counter, so they never collide
  // with request()'s, and the raw socket to send many messages in one sendmsg
  generateSeq(): number
  address(): {port: number}
  socket: {send(data: Uint8Array, options: Record<string, never>, callback: (error?: Error) => void): void}
}

export interface DumpedRoute {
  route: KernelRoute
  spec: RouteSpec
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

class RtnlClient implements RouteClient {
  // a socket-level error (ENOBUFS: replies were dropped) must not crash the process mid-apply: the
  // requests whose replies were lost time out and fail, and the apply restores
  private socketError: Error | undefined

  // the pipelined writes waiting for their ACKs, by sequence number
  private readonly pending = new Map<number, (msg: NlMessage) => void>()

  constructor(private readonly sock: NlSocket) {
    sock.on('error', (error) => {
      this.socketError = error
    })
    // replies to requests the socket did not make itself (replaceRoutes) come as 'message'
    sock.on('message', (msgs) => {
      for (const m of msgs) this.pending.get(m.seq)?.(m)
    })
  }

  close(): void {
    this.sock.close()
  }

  private async dump(type: number, payload: Buffer, operation: string): Promise<NlMessage[]> {
    const [msgs] = await this.sock.request(type, payload, {flags: NLM_F_DUMP, checkError: false, timeout: TIMEOUT_MS})
    for (const m of msgs) if (m.type === NLMSG_ERROR && readErrno(m.data) !== 0) throw netlinkError(readErrno(m.data), operation)
    return msgs
  }

  async links(): Promise<Map<number, string>> {
    const out = new Map<number, string>()
    for (const m of await this.dump(RTM_GETLINK, encodeLinkDumpRequest(), 'RTM_GETLINK')) {
      if (m.type !== RTM_NEWLINK) continue
      try {
        const l = parseLinkMessage(m.data)
        if (l.ifname !== undefined) out.set(l.ifindex, l.ifname)
      } catch {
        // a link we cannot read is simply not nameable
      }
    }
    return out
  }

  async linkIndex(name: string): Promise<number | undefined> {
    for (const [index, n] of await this.links()) if (n === name) return index
    return undefined
  }

  async dumpRoutes(family: Family | 'all' = 'inet', options: DumpOptions = {}): Promise<DumpResult> {
    const links = await this.links()
    const msgs = await this.dump(RTM_GETROUTE, encodeRouteDumpRequest(family), 'RTM_GETROUTE')
    const result: DumpResult = {routes: [], undecodable: []}
    const keys = options.keys
    msgs.forEach((m, index) => {
      if (m.type !== RTM_NEWROUTE) return
      if (keys) {
        let key: string | undefined
        try {
          key = routeMessageKey(m.data)
        } catch {
          key = '' // malformed: the full decode below records it
        }
        if (key === undefined || (key !== '' && !keys.has(key))) return
      }
      try {
        const spec = parseRouteMessage(m.data)
        for (const nh of spec.nexthops) if (nh.ifindex) nh.dev = links.get(nh.ifindex)
        const route = toKernelRoute(spec, links, {file: 'rtnetlink', line: index + 1, endLine: index + 1})
        result.routes.push({route, spec})
      } catch (error) {
        result.undecodable.push({index, error: (error as Error).message})
      }
    })
    return result
  }

  private async write(type: number, route: RouteSpec, flags: number, operation: string): Promise<void> {
    const payload = encodeRoute(route, type === RTM_DELROUTE ? 'del' : 'new')
    let msgs: NlMessage[]
    try {
      ;[msgs] = await this.sock.request(type, payload, {flags, checkError: false, timeout: TIMEOUT_MS})
    } catch (error) {
      if ((error as Error)?.message !== 'Timeout has been reached') throw error
      const why = this.socketError ? ` (socket error: ${this.socketError.message})` : ''
      throw new NetlinkError(0, 'ENOACK', operation, route, `${operation} ${describeSpec(route)}: no acknowledgement within ${TIMEOUT_MS / 1000} s${why}`)
    }
    const err = msgs.find((m) => m.type === NLMSG_ERROR)
    if (!err) throw new NetlinkError(0, 'ENOACK', operation, route, `${operation} ${describeSpec(route)}: the kernel sent no acknowledgement`)
    const errno = readErrno(err.data)
    if (errno !== 0) throw netlinkError(errno, operation, route)
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
    const payloads = routes.map((r) => encodeRoute(r, 'new'))
    const total = payloads.reduce((n, p) => n + 16 + ((p.length + 3) & ~3), 0)
    const buf = Buffer.alloc(total)
    const port = this.sock.address().port >>> 0
    const seqs: number[] = []
    let o = 0
    payloads.forEach((p, i) => {
      const seq = this.sock.generateSeq()
      seqs.push(seq)
      const flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE | (i === payloads.length - 1 ? NLM_F_ACK : 0)
      const len = 16 + p.length
      if (LE) {
        buf.writeUInt32LE(len, o)
        buf.writeUInt16LE(RTM_NEWROUTE, o + 4)
        buf.writeUInt16LE(flags, o + 6)
        buf.writeUInt32LE(seq, o + 8)
        buf.writeUInt32LE(port, o + 12)
      } else {
        buf.writeUInt32BE(len, o)
        buf.writeUInt16BE(RTM_NEWROUTE, o + 4)
        buf.writeUInt16BE(flags, o + 6)
        buf.writeUInt32BE(seq, o + 8)
        buf.writeUInt32BE(port, o + 12)
      }
      p.copy(buf, o + 16)
      o += 16 + ((p.length + 3) & ~3)
    })
    const socketErrorBefore = this.socketError
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined
      let done = false
      const finish = (unanswered?: (i: number) => Error): void => {
        if (done) return
        done = true
        clearTimeout(timer)
        for (const seq of seqs) this.pending.delete(seq)
        if (unanswered) for (let i = 0; i < routes.length; i++) outcome[i] ??= unanswered(i)
        resolve(outcome)
      }
      const last = routes.length - 1
      seqs.forEach((seq, i) => {
        this.pending.set(seq, (m) => {
          if (done || m.type !== NLMSG_ERROR) return // only an ACK or an error answers a write
          const errno = readErrno(m.data)
          if (errno !== 0) outcome[i] = netlinkError(errno, operation, routes[i])
          if (i !== last) return
          if (this.socketError !== socketErrorBefore) {
            // the socket overflowed meanwhile: an error may have been dropped, so nothing unanswered counts as written
            const why = this.socketError?.message
            finish((j) => new NetlinkError(0, 'ENOACK', operation, routes[j], `${operation} ${describeSpec(routes[j])}: answers may have been lost (socket error: ${why})`))
          } else finish()
        })
      })
      timer = setTimeout(() => {
        const why = this.socketError ? ` (socket error: ${this.socketError.message})` : ''
        finish((i) => new NetlinkError(0, 'ENOACK', operation, routes[i], `${operation} ${describeSpec(routes[i])}: no acknowledgement within ${TIMEOUT_MS / 1000} s${why}`))
      }, TIMEOUT_MS)
      this.sock.socket.send(buf, {}, (error) => {
        if (error) finish((i) => new NetlinkError(0, 'ESEND', operation, routes[i], `${operation} ${describeSpec(routes[i])}: ${error.message}`))
      })
    })
  }

  addRoute(route: RouteSpec): Promise<void> {
    return this.write(RTM_NEWROUTE, route, NLM_F_CREATE | NLM_F_EXCL, 'RTM_NEWROUTE')
  }

  deleteRoute(route: RouteSpec): Promise<void> {
    return this.write(RTM_DELROUTE, route, 0, 'RTM_DELROUTE')
  }
}

/** nlmsgerr starts with an s32 error: 0 for an ACK, else a negative errno. Returns the positive errno. */
function readErrno(data: Buffer): number {
  if (data.length < 4) return 0
  return -(LE ? data.readInt32LE(0) : data.readInt32BE(0))
}

type CreateNetlink = (protocol: number, options?: {recvBufferSize?: number}) => NlSocket
const NETLINK_ROUTE = 0

// The package's socket layer alone (dist/netlink.js) loads in a fraction of the time of its index,
// which also builds the generated structs of every family (genl, nl80211, wg, rt) this client
// does not use; the index is the fallback.
async function loadCreateNetlink(): Promise<CreateNetlink> {
  let mod: Record<string, unknown>
  try {
    mod = (await import('netlink/dist/netlink.js')) as Record<string, unknown>
  } catch {
    try {
      mod = (await import('netlink')) as Record<string, unknown>
    } catch (error) {
      throw new RouteDoctorError(`cannot load the netlink module: ${(error as Error).message}`, 1, 'E_NETLINK_LOAD')
    }
  }
  const api = (typeof mod.createNetlink === 'function' ? mod : (mod.default as Record<string, unknown> | undefined)) as {createNetlink?: CreateNetlink} | undefined
  if (typeof api?.createNetlink !== 'function') throw new RouteDoctorError('cannot load the netlink module: it has no createNetlink', 1, 'E_NETLINK_LOAD')
  return api.createNetlink
}

/** Open an rtnetlink socket in this process's network namespace. */
export async function openRouteClient(): Promise<RouteClient> {
  const createNetlink = await loadCreateNetlink()
  try {
    return new RtnlClient(createNetlink(NETLINK_ROUTE, {recvBufferSize: RECV_BUFFER}))
  } catch (error) {
    const e = error as {code?: string; message: string}
    if (e.code === 'EPERM' || e.code === 'EACCES') throw netlinkError(e.code === 'EPERM' ? 1 : 13, 'socket(NETLINK_ROUTE)')
    throw new RouteDoctorError(`cannot open an rtnetlink socket: ${e.message}`, 1, 'E_NETLINK_SOCKET')
  }
}
