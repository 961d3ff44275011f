// The `watch` service: checks its options (exit 2 on bad input before anything starts), serves --listen,
// runs the agent until SIGTERM or SIGINT, and prints each change.
import {mkdirSync, readFileSync} from 'node:fs'
import type {Server} from 'node:http'

import {SNAPSHOT_FILES} from '../collect/snapshot-files.js'
import {DEFAULT_FIX_PROTOCOL_NUMBER} from '../model/snapshot-index.js'
import {KubeRequestError, UsageError} from '../model/errors.js'
import {checkRulePriority} from '../snapshot/build.js'
import {parseSeconds} from '../model/seconds.js'
import {palette} from '../render/style.js'
import {watchLineJson, watchLineText, type WatchStarted} from '../render/watch.js'
import type {SourceOptions} from '../services/load.js'
import {reportMemoryOnSignal} from '../runtime/memory-report.js'
import {WatchAgent, type TimedChange, type TruthOptions} from './watch.js'

export interface RunWatchOptions {
  source: SourceOptions
  json: boolean
  interval: string // seconds, as given
  truthInterval: string // seconds, as given
  listen?: string
  tokenFile?: string
  flapCount: number
  flapWindow: string // seconds, as given
  fixProtocol?: number // default DEFAULT_FIX_PROTOCOL_NUMBER
  version: string
  debounceMs?: number
  reconcile: boolean
  settle: string // seconds, as given
  writeInterval: string // seconds, as given
  rulePriority?: number // as fix's --rule-priority
  journalDir: string
  journalKeep: number
  cleanupOnExit: boolean
}

// a stop that waits for a diagnosis under way no longer than this
const STOP_WAIT_MS = 3000


export function readToken(file: string): Buffer {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new UsageError(
      `--token-file ${file}: cannot read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    )
  }
  const token = text.trim()
  if (token === '' || /\s/.test(token)) {
    throw new UsageError(
      `--token-file ${file}: expected one bearer token (no spaces), found ${token === '' ? 'an empty file' : 'spaces'}`,
    )
  }
  return Buffer.from(token)
}

/** Runs until SIGTERM or SIGINT; resolves when stopped cleanly. */
export async function runWatch(opts: RunWatchOptions): Promise<void> {
  if (opts.source.from)
    throw new UsageError('watch reads the live node: --from cannot be used (run check --from for a snapshot)')
  const intervalSeconds = parseSeconds('interval', opts.interval, 3600)
  const truthIntervalSeconds = parseSeconds('truth-interval', opts.truthInterval, 86400)
  const flapWindowSeconds = parseSeconds('flap-window', opts.flapWindow, 7 * 86400)
  const {listenText, parseListen} = await import('./server.js')
  const listen = opts.listen === undefined ? undefined : parseListen(opts.listen)
  const token = opts.tokenFile === undefined ? undefined : readToken(opts.tokenFile)
  if (token && !listen) throw new UsageError('--token-file needs --listen')
  const settleSeconds = parseSeconds('settle', opts.settle, 3600)
  const writeIntervalSeconds = parseSeconds('write-interval', opts.writeInterval, 86400)
  if (!opts.reconcile && opts.cleanupOnExit) throw new UsageError('--cleanup-on-exit needs --reconcile')
  if (!opts.reconcile && opts.rulePriority !== undefined) throw new UsageError('--rule-priority needs --reconcile')
  checkRulePriority(opts.rulePriority)
  if (opts.reconcile) {
    try {
      mkdirSync(opts.journalDir, {recursive: true})
    } catch (error) {
      throw new UsageError(
        `--journal-dir ${opts.journalDir}: cannot create (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      )
    }
  }
  let stop!: () => void
  const stopped = new Promise<void>((resolve) => (stop = resolve))
  // listening from before the first truth read until the end, not once: a library that tidies up after its child
  // processes (signal-exit) re-raises a signal nobody else listens to, which would end the agent withdrawing its routes
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  // Calico's truth read once here (a bad file is exit 2 before anything starts), then refreshed by the agent; an API
  // server that cannot be reached or refuses is a failing source: the node is diagnosed without the truth meanwhile
  let source = opts.source
  let truth: TruthOptions | undefined
  if (source.calico !== undefined || source.kube) {
    const {loadClusterTruth} = await import('../services/load.js')
    truth = {from: {calico: source.calico, kube: source.kube}, intervalSeconds: truthIntervalSeconds, group: {}}
    let clusterTruth: Awaited<ReturnType<typeof loadClusterTruth>>
    // SIGTERM during this read (an API server that does not answer holds it 30 s) is the same clean stop as later
    const firstRead = new AbortController()
    void stopped.then(() => firstRead.abort())
    try {
      clusterTruth = await loadClusterTruth(truth.from, firstRead.signal, truth.group)
    } catch (error) {
      if (firstRead.signal.aborted) {
        process.off('SIGTERM', stop)
        process.off('SIGINT', stop)
        return
      }
      if (!(error instanceof KubeRequestError)) throw error
      truth.error = error.message
    }
    // every diagnosis reads the agent's truth (source.clusterTruth), never --calico or --kube itself
    source = {...source, calico: undefined, kube: false, clusterTruth}
  }
  reportMemoryOnSignal()
  const p = palette()
  const write = (line: TimedChange | WatchStarted) => {
    process.stdout.write(`${opts.json ? watchLineJson(line) : watchLineText(line, p)}\n`)
  }
  const agent = new WatchAgent(
    {
      source,
      intervalSeconds,
      debounceMs: opts.debounceMs ?? 500,
      flapCount: opts.flapCount,
      flapWindowSeconds,
      fixProtocol: String(opts.fixProtocol ?? DEFAULT_FIX_PROTOCOL_NUMBER),
      ...(truth ? {truth} : {}),
      ...(opts.reconcile
        ? {
            reconcile: {
              settleSeconds,
              writeIntervalSeconds,
              rulePriority: opts.rulePriority,
              journalDir: opts.journalDir,
              journalKeep: opts.journalKeep,
              cleanupOnExit: opts.cleanupOnExit,
            },
          }
        : {}),
    },
    write,
  )
  let server: Server | undefined
  if (listen) {
    const [{agentMetrics}, {serve}] = await Promise.all([import('./metrics.js'), import('./server.js')])
    server = await serve(agent, agentMetrics(agent, opts.version), {listen, token, source})
  }
  await Promise.race([agent.start(), stopped])
  const s = agent.state
  if (agent.ready) {
    const up = [...s.sessions.values()].filter((x) => x.state === 'Established').length
    const sources = agent.sources()
    const known = sources.has(SNAPSHOT_FILES.birdProtocols) && sources.get(SNAPSHOT_FILES.birdProtocols) === undefined
    write({
      at: new Date().toISOString(),
      kind: 'started',
      prefixes: Object.values(s.verdicts).reduce((a, b) => a + b, 0),
      verdicts: s.verdicts,
      sessions: {up, total: s.sessions.size, known},
      ...(listen ? {listen: listenText(listen)} : {}),
    })
  }
  await stopped
  server?.close()
  server?.closeAllConnections()
  // withdrawing the overlay (--cleanup-on-exit) is waited for; a diagnosis under way only briefly
  const stopping = agent.stop()
  if (opts.cleanupOnExit) await stopping
  else await Promise.race([stopping, new Promise((resolve) => setTimeout(resolve, STOP_WAIT_MS).unref())])
  process.off('SIGTERM', stop)
  process.off('SIGINT', stop)
}
