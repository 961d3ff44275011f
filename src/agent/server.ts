// `watch --listen`: /metrics (no token), /healthz, /readyz, and the report, explanations and the agent's own state
// (/report, /explain, /state) only for loopback clients or a client presenting the bearer token of --token-file.
// /report and /explain are made by the check and explain services from a fresh collection, as the commands make
// them (/report in a worker thread: a full table's would hold the agent's thread); /state is what the agent holds,
// kept current change by change.
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import {isIP} from 'node:net'
import {timingSafeEqual} from 'node:crypto'

import {RouteDoctorError, UsageError} from '../model/errors.js'
import {loadExplainReport} from '../services/explain.js'
import type {SourceOptions} from '../services/load.js'
import type {AgentMetrics} from './metrics.js'
import {writeReportApart} from './node-worker.js'
import {stateJson} from './state.js'
import type {WatchAgent} from './watch.js'

// outside the ports Calico (9091, 9093, 9094, 9099), node-problem-detector (20256, 20257), bird_exporter (9324)
// and the exporters' 9100-9999 range use
export const DEFAULT_PORT = 21179
// a diagnosis running this long is stuck: /healthz says so and the kubelet restarts the agent
const STUCK_MS = 10 * 60_000

export interface ListenAddress {
  host: string
  port: number
}

/**
 * ADDR:PORT, [ADDR]:PORT or :PORT (every address); a usage error (exit 2) otherwise. Brackets take either family, as
 * Go's SplitHostPort does: `--listen=[$(HOST_IP)]:PORT` serves an IPv4 and an IPv6 node alike.
 */
export function parseListen(text: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text)
  const port = m ? Number(m[3]) : NaN
  const host = m ? (m[1] ?? m[2] ?? '') : ''
  if (!m || port < 1 || port > 65535 || (host !== '' && isIP(host) === 0)) {
    throw new UsageError(`--listen ${text}: expected ADDR:PORT with an IP address and a port 1-65535 ` +
      `(0.0.0.0:${DEFAULT_PORT}, [::1]:${DEFAULT_PORT}, [10.0.0.1]:${DEFAULT_PORT}, :${DEFAULT_PORT})`)
  }
  return {host, port}
}

/** Where it listens, as a URL's authority: `[ADDR]:PORT` only for IPv6 (`http://[10.0.0.1]:21179` is no URL). */
export function listenText({host, port}: ListenAddress): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`
}

export function isLoopback(address: string | undefined): boolean {
  if (!address) return false
  const a = address.startsWith('::ffff:') ? address.slice(7) : address
  return a === '::1' || /^127\./.test(a)
}

export interface ServeOptions {
  listen: ListenAddress
  token?: Buffer // the bearer token /report and /explain accept from non-loopback clients
  source: SourceOptions
}

/** 401 without a token, 403 with a wrong one or when no token is configured; undefined when allowed. */
export function authorize(
  remote: string | undefined,
  header: string | undefined,
  token: Buffer | undefined,
): 401 | 403 | undefined {
  if (isLoopback(remote)) return undefined
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1]
  if (presented === undefined) return token ? 401 : 403
  if (!token) return 403
  const given = Buffer.from(presented)
  return given.length === token.length && timingSafeEqual(given, token) ? undefined : 403
}

function send(
  res: ServerResponse,
  status: number,
  body: string,
  type = 'text/plain; charset=utf-8',
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {'content-type': type, 'cache-control': 'no-store', ...headers})
  res.end(body)
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, JSON.stringify(value, null, 2) + '\n', 'application/json')
}

// /report and /explain each collect the node afresh: one at a time, never a pile of collections at once
let collecting: Promise<unknown> = Promise.resolve()
function oneAtATime<T>(work: () => Promise<T>): Promise<T> {
  const run = collecting.then(work, work)
  collecting = run.catch(() => undefined)
  return run
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  agent: WatchAgent,
  metrics: AgentMetrics,
  opts: ServeOptions,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost')
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return send(res, 405, 'method not allowed\n', undefined, {allow: 'GET, HEAD'})
  switch (url.pathname) {
    case '/metrics':
      return send(res, 200, await metrics.metrics(), metrics.contentType)
    case '/healthz':
      return agent.running && Date.now() - agent.runningSince > STUCK_MS
        ? send(res, 503, `a diagnosis has been running for ${Math.round((Date.now() - agent.runningSince) / 1000)} s\n`)
        : send(res, 200, 'ok\n')
    case '/readyz':
      return agent.ready ? send(res, 200, 'ready\n') : send(res, 503, 'the first diagnosis has not finished\n')
    case '/report':
    case '/explain':
    case '/state': {
      const denied = authorize(req.socket.remoteAddress, req.headers.authorization, opts.token)
      if (denied === 401)
        return send(res, 401, 'a bearer token is required\n', undefined, {
          'www-authenticate': 'Bearer realm="routedoctor"',
        })
      if (denied === 403)
        return send(res, 403, opts.token ? 'wrong token\n' : 'only loopback clients (no --token-file given)\n')
      if (url.pathname === '/state') return sendJson(res, 200, stateJson(agent.state))
      if (url.pathname === '/report') {
        return oneAtATime(async () => {
          // sent with the first chunk: a report that cannot be made is an error's status instead
          res.statusCode = 200
          res.setHeader('content-type', 'application/json')
          res.setHeader('cache-control', 'no-store')
          await writeReportApart(opts.source, res)
          res.end()
        })
      }
      const prefix = url.searchParams.get('prefix')
      if (!prefix)
        return sendJson(res, 400, {schema: 1, error: {code: 'E_USAGE', message: 'expected ?prefix=PREFIX|ADDRESS'}})
      // judged as `explain` judges: without the kernel's routes, refused (E_NO_KERNEL_ROUTES, 503), not `missing`
      const judged = {...opts.source, requireKernelRoutes: true}
      return oneAtATime(async () => sendJson(res, 200, await loadExplainReport(judged, prefix)))
    }
    default:
      return send(res, 404, 'not found: /metrics, /healthz, /readyz, /report, /explain?prefix=, /state\n')
  }
}

/** Listens; a usage error (exit 2) when the address cannot be bound (in use, not this host's). */
export async function serve(agent: WatchAgent, metrics: AgentMetrics, opts: ServeOptions): Promise<Server> {
  const server = createServer((req, res) => {
    handle(req, res, agent, metrics, opts).catch((error: Error) => {
      // no kernel routes to judge by: this node's collection failed, not the request (a later one may succeed)
      const noRoutes = error instanceof RouteDoctorError && error.code === 'E_NO_KERNEL_ROUTES'
      const status = error instanceof UsageError ? 400 : noRoutes ? 503 : 500
      const code = error instanceof RouteDoctorError ? error.code : 'E_INTERNAL'
      if (!res.headersSent) sendJson(res, status, {schema: 1, error: {code, message: error.message}})
      else res.destroy(error)
    })
  })
  server.keepAliveTimeout = 5000
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const where = `${opts.listen.host.includes(':') ? `[${opts.listen.host}]` : opts.listen.host}:${opts.listen.port}`
      const why = error.code === 'EADDRINUSE' ? 'the port is in use'
        : error.code === 'EADDRNOTAVAIL' ? 'the address is not one of this host\'s'
        : error.code === 'EACCES' ? 'permission denied' : error.message
      reject(new UsageError(`--listen ${where}: cannot listen: ${why}`))
    })
    server.listen({host: opts.listen.host === '' ? undefined : opts.listen.host, port: opts.listen.port}, () =>
      resolve(),
    )
  })
  return server
}
