// `fleet`: one bundle or snapshot directory per node, joined with Calico's truth. Each node is loaded and diagnosed
// on its own (its texts and diagnosis are let go once folded), several at once in worker threads; the join folds the
// nodes in the sources' order whichever finishes first.
import {writeFile} from 'node:fs/promises'
import os from 'node:os'
import {Worker} from 'node:worker_threads'

import {FleetJoin, type FleetReport} from '../fleet/join.js'
import {RouteDoctorError, UsageError} from '../model/errors.js'
import {
  foldSource, nodeOptions, sharedTruth, type FleetNodeOptions, type FleetWorkerData, type FleetWorkerError, type FleetWorkerReply,
  type FoldedSource, type SharedTruth,
} from './fleet-node.js'
import {loadClusterTruth} from './load.js'
import {fleetExitCode, renderFleet} from '../render/fleet.js'
import {palette} from '../render/style.js'

export interface FleetOptions extends FleetNodeOptions {
  sources: string[]
  calico?: string
  kube?: boolean
  /** Nodes loaded and diagnosed at once, each in a worker thread (1: all in this thread); default: the number of CPUs. */
  jobs?: number
  progress?: (line: string) => void
}

export async function runFleet(opts: FleetOptions): Promise<FleetReport> {
  if (opts.sources.length === 0) throw new UsageError('fleet: give one bundle or snapshot directory per node')
  const given = (await loadClusterTruth(opts))?.truth
  let shared: SharedTruth | undefined = given === undefined ? undefined : sharedTruth(given)
  let join: FleetJoin | undefined
  const add = (source: string, node: FoldedSource): void => {
    if (join!.has(node.name)) throw new UsageError(`${source}: node ${node.name} is already given by another source (record each node's name: bundle --node NAME)`)
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
  if (jobs > 1 && entry !== undefined) await foldInWorkers(entry, rest, jobs, {opts: nodeOptions(opts), truth: shared.truth}, add)
  else for (const source of rest) add(source, await foldSource(source, opts, shared))
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
 * Folds the sources in, in their order, each loaded and diagnosed by the next free one of `jobs` worker threads: what
 * comes back is a node's fold, never its texts or diagnosis. The first error in the sources' order is thrown, as it
 * would be in one thread; the workers are stopped either way.
 */
async function foldInWorkers(entry: URL, sources: string[], jobs: number, data: FleetWorkerData,
  add: (source: string, node: FoldedSource) => void): Promise<void> {
  const results = sources.map(() => deferred<FoldedSource>())
  const workers = Array.from({length: jobs}, () => new FleetWorker(entry, data))
  let next = 0
  const drive = async (w: FleetWorker): Promise<void> => {
    while (next < sources.length) {
      const i = next++
      await w.fold(sources[i]).then(results[i].resolve, (error: unknown) => {
        results[i].reject(error)
        next = sources.length // a later source's result is never folded
      })
    }
  }
  const driving = workers.map((w) => drive(w))
  try {
    for (let i = 0; i < sources.length; i++) add(sources[i], await results[i].promise)
    await Promise.all(driving)
  } finally {
    await Promise.all(workers.map((w) => w.stop()))
  }
}

/** One worker thread (services/fleet-worker.ts), given one source at a time. */
class FleetWorker {
  private readonly worker: Worker
  private pending?: {resolve: (node: FoldedSource) => void; reject: (error: unknown) => void}
  private failure?: Error // the thread failed or stopped

  constructor(entry: URL, data: FleetWorkerData) {
    this.worker = new Worker(entry, {workerData: data})
    this.worker.on('message', (m: FleetWorkerReply) => {
      const p = this.pending
      this.pending = undefined
      if ('error' in m) p?.reject(workerError(m.error))
      else p?.resolve(m)
    })
    const fail = (error: Error): void => {
      this.failure ??= error
      this.pending?.reject(error)
      this.pending = undefined
    }
    this.worker.on('error', fail)
    this.worker.on('exit', (code) => fail(new Error(`fleet: a worker thread stopped (exit ${code})`)))
  }

  fold(source: string): Promise<FoldedSource> {
    if (this.failure) return Promise.reject(this.failure)
    return new Promise((resolve, reject) => {
      this.pending = {resolve, reject}
      this.worker.postMessage(source)
    })
  }

  async stop(): Promise<void> {
    this.failure ??= new Error('fleet: worker thread stopped')
    await this.worker.terminate()
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

/** The command's whole service: the join, its text, the HTML page when asked for, and the exit status. */
export async function fleetReport(opts: FleetOptions & {html?: string}): Promise<{report: FleetReport; text: string; exitCode: 0 | 1}> {
  const report = await runFleet(opts)
  if (opts.html !== undefined) {
    const {renderFleetHtml} = await import('../render/fleet-html.js')
    await writeFile(opts.html, renderFleetHtml(report)).catch((error: NodeJS.ErrnoException) => {
      throw new UsageError(`--html ${opts.html}: cannot write (${error.code ?? error.message})`)
    })
  }
  return {report, text: renderFleet(report, palette()), exitCode: fleetExitCode(report)}
}
