// `fleet`: one bundle or snapshot directory per node, joined with Calico's truth. Each node is loaded and diagnosed
// on its own (its texts and diagnosis are let go once folded), several at once in worker threads; the join folds the
// nodes in the sources' order whichever finishes first.
import {open} from 'node:fs/promises'
import os from 'node:os'
import {Worker} from 'node:worker_threads'

import {FleetJoin, type FleetReport} from '../fleet/join.js'
import {RouteDoctorError, UsageError} from '../model/errors.js'
import {
  foldSource, nodeOptions, sharedTruth, type FleetNodeOptions, type FleetWorkerData, type FleetWorkerError,
  type FleetWorkerMessage, type FoldedSource, type SharedTruth,
} from './fleet-node.js'
import {loadClusterTruth} from './load.js'
import {fleetExitCode, renderFleet} from '../render/fleet.js'
import {palette} from '../render/style.js'

export interface FleetOptions extends FleetNodeOptions {
  sources: string[]
  calico?: string
  kube?: boolean
  /** Nodes loaded and diagnosed at once, each in a worker thread (1: all in this thread); default: the CPUs. */
  jobs?: number
  progress?: (line: string) => void
}

export async function runFleet(opts: FleetOptions): Promise<FleetReport> {
  if (opts.sources.length === 0) throw new UsageError('fleet: give one bundle or snapshot directory per node')
  const given = (await loadClusterTruth(opts))?.truth
  let shared: SharedTruth | undefined = given === undefined ? undefined : sharedTruth(given)
  let join: FleetJoin | undefined
  const add = (source: string, node: FoldedSource): void => {
    if (join!.has(node.name))
      throw new UsageError(
        `${source}: node ${node.name} is already given by another source (record each node's name: bundle --node NAME)`,
      )
    join!.add(node.name, source, node.fold)
    opts.progress?.(`${node.name}: ${source}`)
  }
  let rest = opts.sources
  if (shared === undefined) {
    // without --calico/--kube, the first source's own calico/ (if any) is the truth of every node
    const first = await foldSource(rest[0], opts, undefined)
    shared = first.shared
    join = new FleetJoin(shared.truth)
    add(rest[0], first)
    rest = rest.slice(1)
  } else join = new FleetJoin(shared.truth)
  const jobs = Math.min(opts.jobs ?? os.availableParallelism(), rest.length)
  const entry = workerEntry()
  if (jobs > 1 && entry !== undefined) {
    await foldInWorkers(entry, rest, jobs, {opts: nodeOptions(opts), truth: shared.truth}, add)
  } else for (const source of rest) add(source, await foldSource(source, opts, shared))
  return join.finish()
}

// the worker's entry in the bundle: scripts/bundle.mjs puts its path here; unbundled (src/ under the tests), there is
// none and every node is diagnosed in this thread
const WORKER_ENTRY = 'routedoctor-entry:fleet-worker'

function workerEntry(): URL | undefined {
  const url = new URL(WORKER_ENTRY, import.meta.url)
  return url.protocol === 'file:' ? url : undefined
}

/**
 * Folds the sources in, in their order, each loaded and diagnosed by one of `jobs` worker threads: each worker claims
 * the next source itself (a counter they share), so none waits on this thread, and sends back the node's fold, never
 * its texts or diagnosis. The first error in the sources' order is thrown, as in one thread; the workers are stopped
 * either way. A worker that dies fails the source it was on, naming it; the others go on with the rest.
 */
export async function foldInWorkers(entry: URL, sources: string[], jobs: number,
  data: Omit<FleetWorkerData, 'sources' | 'next'>, add: (source: string, node: FoldedSource) => void): Promise<void> {
  const results = sources.map(() => deferred<FoldedSource>())
  const next = new Int32Array(new SharedArrayBuffer(4))
  let stopping = false
  let running = jobs
  const workers = Array.from({length: jobs}, () => {
    const worker = new Worker(entry, {workerData: {...data, sources, next} satisfies FleetWorkerData})
    let current: number | undefined // the source this worker has claimed and not answered
    let crash: Error | undefined
    worker.on('message', ({index, reply}: FleetWorkerMessage) => {
      current = reply === undefined ? index : undefined
      if (reply === undefined) return
      if ('error' in reply) results[index].reject(workerError(reply.error))
      else results[index].resolve(reply)
    })
    worker.on('error', (error) => (crash = error))
    // a worker's messages are all delivered before its exit
    worker.on('exit', (code) => {
      running--
      if (stopping) return
      const why = crash === undefined ? `exit ${code}` : crash.message
      if (current !== undefined) {
        results[current].reject(new Error(`${sources[current]}: a worker thread stopped (${why}) while diagnosing it`))
      }
      // the last worker gone: no source is left to come
      if (running === 0) {
        for (const [i, r] of results.entries()) {
          r.reject(new Error(`${sources[i]}: not diagnosed: every worker thread stopped (the last: ${why})`))
        }
      }
    })
    return worker
  })
  try {
    for (let i = 0; i < sources.length; i++) add(sources[i], await results[i].promise)
  } finally {
    stopping = true
    await Promise.all(workers.map((w) => w.terminate()))
  }
}

/** A worker's error as this thread throws it: a RouteDoctorError stays one (its message, exit status and code). */
function workerError(e: FleetWorkerError): Error {
  if (e.exit !== undefined) {
    const error = new RouteDoctorError(e.message, e.exit, e.code)
    error.name = e.name
    return error
  }
  const error = new Error(e.message)
  error.name = e.name
  if (e.stack) error.stack = e.stack
  return error
}

function deferred<T>(): {promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void} {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  promise.catch(() => {}) // a result after the first error is never awaited
  return {promise, resolve, reject}
}

/**
 * The command's whole service: the join, its text, the HTML page when asked for (`written` is told the file once it is
 * complete), and the exit status.
 */
export async function fleetReport(
  opts: FleetOptions & {html?: string; written?: (file: string, bytes: number) => void},
): Promise<{report: FleetReport; text: string; exitCode: 0 | 1}> {
  const report = await runFleet(opts)
  if (opts.html !== undefined) {
    const {fleetHtmlPieces} = await import('../render/fleet-html.js')
    opts.written?.(opts.html, await writePieces(opts.html, fleetHtmlPieces(report), '--html'))
  }
  return {report, text: renderFleet(report, palette()), exitCode: fleetExitCode(report)}
}

// what is handed to the file at once: pieces gathered up to this many characters
const WRITE_CHUNK = 64 * 1024

/** Writes the pieces, each followed by a newline, in chunks; returns the bytes written. An error names the file. */
export async function writePieces(file: string, pieces: Iterable<string>, flag: string): Promise<number> {
  const cannot = (error: NodeJS.ErrnoException): never => {
    throw new UsageError(`${flag} ${file}: cannot write (${error.code ?? error.message})`)
  }
  const handle = await open(file, 'w').catch(cannot)
  let bytes = 0
  try {
    let chunk = ''
    const flush = async () => {
      const data = Buffer.from(chunk, 'utf8')
      chunk = ''
      await handle.writeFile(data)
      bytes += data.length
    }
    for (const piece of pieces) {
      chunk += `${piece}\n`
      if (chunk.length >= WRITE_CHUNK) await flush()
    }
    await flush()
  } catch (error) {
    cannot(error as NodeJS.ErrnoException)
  } finally {
    await handle.close()
  }
  return bytes
}
