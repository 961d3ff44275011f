// An rtnetlink client on the `netlink` package's socket. Only the socket is used: payloads are built
// and replies parsed by ./codec.ts, one message at a time, so one odd route never fails a dump.
// The package (a native addon) is loaded on first use, so commands that never write routes skip it.
import {endianness} from 'node:os'
import {getSystemErrorName} from 'node:util'

import {RouteDoctorError} from '../model/errors.js'
import type {Family, KernelRoute} from '../model/types.js'
import {
  NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REPLACE, NLMSG_ERROR, RTM_DELROUTE, RTM_GETLINK, RTM_GETROUTE, RTM_NEWLINK,
  RTM_NEWROUTE, type RouteSpec, encodeLinkDumpRequest, encodeRoute, encodeRouteDumpRequest, parseLinkMessage,
  parseRouteMessage, protocolName, tableName, toKernelRoute,
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
  data: Buffer
}
interface NlSocket {
  request(type: number, data: Uint8Array | Uint8Array[], options?: {flags?: number; checkError?: boolean; timeout?: number}): Promise<[NlMessage[], unknown]>
  close(): void
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

export interface RouteClient {
  dumpRoutes(family?: Family | 'all'): Promise<DumpResult>
  replaceRoute(route: RouteSpec): Promise<void>
  addRoute(route: RouteSpec): Promise<void>
  deleteRoute(route: RouteSpec): Promise<void>
  links(): Promise<Map<number, string>>
  linkIndex(name: string): Promise<number | undefined>
  close(): void
}

const TIMEOUT_MS = 10_000
const LE = endianness() === 'LE'

class RtnlClient implements RouteClient {
  constructor(private readonly sock: NlSocket) {}

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

  async dumpRoutes(family: Family | 'all' = 'inet'): Promise<DumpResult> {
    const links = await this.links()
    const msgs = await this.dump(RTM_GETROUTE, encodeRouteDumpRequest(family), 'RTM_GETROUTE')
    const result: DumpResult = {routes: [], undecodable: []}
    msgs.forEach((m, index) => {
      if (m.type !== RTM_NEWROUTE) return
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
    const [msgs] = await this.sock.request(type, payload, {flags, checkError: false, timeout: TIMEOUT_MS})
    const err = msgs.find((m) => m.type === NLMSG_ERROR)
    if (!err) throw new NetlinkError(0, 'ENOACK', operation, route, `${operation} ${describeSpec(route)}: the kernel sent no acknowledgement`)
    const errno = readErrno(err.data)
    if (errno !== 0) throw netlinkError(errno, operation, route)
  }

  replaceRoute(route: RouteSpec): Promise<void> {
    return this.write(RTM_NEWROUTE, route, NLM_F_CREATE | NLM_F_REPLACE, 'RTM_NEWROUTE')
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

/** Open an rtnetlink socket in this process's network namespace. */
export async function openRouteClient(): Promise<RouteClient> {
  let mod: Record<string, unknown>
  try {
    mod = (await import('netlink')) as Record<string, unknown>
  } catch (error) {
    throw new RouteDoctorError(`cannot load the netlink module: ${(error as Error).message}`, 1, 'E_NETLINK_LOAD')
  }
  const api = (typeof mod.createRtNetlink === 'function' ? mod : (mod.default as Record<string, unknown>)) as {
    createRtNetlink: () => {socket: NlSocket}
  }
  try {
    return new RtnlClient(api.createRtNetlink().socket)
  } catch (error) {
    const e = error as {code?: string; message: string}
    if (e.code === 'EPERM' || e.code === 'EACCES') throw netlinkError(e.code === 'EPERM' ? 1 : 13, 'socket(NETLINK_ROUTE)')
    throw new RouteDoctorError(`cannot open an rtnetlink socket: ${e.message}`, 1, 'E_NETLINK_SOCKET')
  }
}
