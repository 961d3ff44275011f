// The agent's work on a whole table, in a worker thread: the whole node's diagnosis, the hashes of BIRD's full
// `show route all`, reconcile's plan (the fix service's) and /report (check's JSON). On a full table each is many
// seconds of CPU without a pause; in the agent's own thread it would leave /metrics and /healthz unanswered that long
// (a kubelet restarts an agent whose liveness probe times out, and a keep-alive request that waited is reset). The
// answer crosses in pieces that each take the agent's thread a moment: the prefixes a slice at a time, the hashes as
// typed arrays, the report a chunk at a time. The worker's heap goes with it.
import {Writable} from 'node:stream'
import {isMainThread, parentPort, Worker, workerData} from 'node:worker_threads'

import {BirdSocket, findBirdSocket} from '../collect/bird-socket.js'
import {RouteDoctorError} from '../model/errors.js'
import type {OverlayPlan} from '../plan/plan.js'
import type {SourceOptions} from '../services/load.js'
import {diagnoseNode, type NodeDiagnosis} from './diagnose.js'
import {plannedOverlay, type FixSettings, type PlannedOverlay} from './planned.js'
import {birdBlockHashes, type BlockHashes} from './incremental.js'
import type {SeenPrefix} from './state.js'

const TASK = 'routedoctor-watch-task'
const SLICE = 4096 // prefixes a message

type Job =
  | {kind: 'node'; source: SourceOptions; fixProtocol: string}
  | {kind: 'plan'; source: SourceOptions; fix: FixSettings; skip: string[]; ask: string[]}
  | {kind: 'bird-hashes'; source: SourceOptions}
  | {kind: 'report'; source: SourceOptions}

type Message =
  | {prefixes: Array<[string, SeenPrefix]>}
  | {diagnosis: NodeDiagnosis}
  | {hashes: BlockHashes}
  | {planned: PlannedOverlay}
  | {chunk: Uint8Array}
  | {done: true}
  | {error: string; code?: string; exit?: number}

/** A worker's job ended by the agent's stop: nothing to report. */
export class WorkerStopped extends Error {}

/** The worker's side of a pause: resolves when the agent has taken the last message. */
const taken = () => new Promise((resolve) => parentPort!.once('message', resolve))

const transferOf = (h: BlockHashes | undefined): ArrayBuffer[] =>
  h ? [h.keys.buffer as ArrayBuffer, h.hashes.buffer as ArrayBuffer] : []

async function run(job: Job, post: (m: Message, transfer?: ArrayBuffer[]) => void): Promise<void> {
  if (job.kind === 'bird-hashes') {
    const hashes = await hashBird(job.source)
    post({hashes}, transferOf(hashes))
    return
  }
  if (job.kind === 'plan')
    return post({planned: plannedOverlay(await planOverlay(job.source, job.fix), job.skip, job.ask)})
  if (job.kind === 'report') {
    // one chunk at a time, each once the last is written to the client (a slow client holds the worker, not memory)
    const out = new Writable({
      highWaterMark: 0,
      write(data: Buffer, _encoding, done) {
        const chunk = new Uint8Array(data) // its own buffer, handed over rather than copied again
        const next = taken()
        post({chunk}, [chunk.buffer])
        next.then(() => done(), done)
      },
    })
    await writeReport(job.source, out)
    return post({done: true})
  }
  const d = await diagnoseNode(job.source, job.fixProtocol)
  const entries = [...d.state.prefixes]
  // one slice at a time, each once the last is taken: the agent's thread answers requests in between
  for (let i = 0; i < entries.length; i += SLICE) {
    const next = taken()
    post({prefixes: entries.slice(i, i + SLICE)})
    await next
  }
  d.state.prefixes = new Map()
  post({diagnosis: d}, [d.state.healthyKeys.buffer as ArrayBuffer, ...transferOf(d.birdHashes)])
}

// loaded as a worker's module: the job, its answer, the end
if (!isMainThread && (workerData as {task?: string} | undefined)?.task === TASK) {
  const post = (m: Message, transfer: ArrayBuffer[] = []) => parentPort!.postMessage(m, transfer)
  run((workerData as {job: Job}).job, post).catch((error: Error) =>
    post({error: error.message, ...(error instanceof RouteDoctorError ? {code: error.code, exit: error.exit} : {})}),
  )
}

// the workers under way: the agent's stop ends them rather than wait for a whole table's diagnosis
const cancels = new Set<() => void>()

/** Ends every worker under way; their jobs reject. */
export function stopWorkers(): void {
  for (const cancel of [...cancels]) cancel()
}

/** Runs a job in a worker thread (in this one where this module is not a file Node can start: a test's source). */
function apart<T>(
  job: Job,
  inline: () => Promise<T>,
  answer: (m: Message, prefixes: Map<string, SeenPrefix>) => T | undefined,
  chunks?: (chunk: Uint8Array) => Promise<void>,
): Promise<T> {
  const url = new URL(import.meta.url)
  if (!url.pathname.endsWith('.js')) return inline()
  return new Promise((resolve, reject) => {
    const worker = new Worker(url, {workerData: {task: TASK, job}})
    const prefixes = new Map<string, SeenPrefix>()
    let answered = false
    const end = (settle: () => void) => {
      answered = true
      cancels.delete(cancel)
      settle()
      void worker.terminate()
    }
    const cancel = () => end(() => reject(new WorkerStopped('the agent is stopping')))
    cancels.add(cancel)
    worker.on('message', (m: Message) => {
      if ('prefixes' in m) {
        for (const [p, seen] of m.prefixes) prefixes.set(p, seen)
        setImmediate(() => worker.postMessage('taken'))
      } else if ('chunk' in m && chunks) {
        chunks(m.chunk).then(() => worker.postMessage('taken'), (error: Error) => end(() => reject(error)))
      } else if ('error' in m) {
        end(() => reject(m.code === undefined ? new Error(m.error) : new RouteDoctorError(m.error, m.exit, m.code)))
      }
      else {
        const value = answer(m, prefixes)
        if (value !== undefined) end(() => resolve(value))
      }
    })
    worker.once('error', (error) => {
      if (!answered) end(() => reject(error))
    })
    worker.once('exit', (code) => {
      cancels.delete(cancel)
      if (!answered) reject(new Error(`the worker ended without an answer (exit ${code})`))
    })
  })
}

/** diagnoseNode, in a worker thread. */
export function diagnoseNodeApart(source: SourceOptions, fixProtocol: string): Promise<NodeDiagnosis> {
  return apart({kind: 'node', source, fixProtocol}, () => diagnoseNode(source, fixProtocol), (m, prefixes) => {
    if (!('diagnosis' in m)) return undefined
    m.diagnosis.state.prefixes = prefixes
    return m.diagnosis
  })
}

/** birdBlockHashes of BIRD's `show route all`, read and hashed in a worker thread. */
export function birdHashesApart(source: SourceOptions): Promise<BlockHashes> {
  return apart({kind: 'bird-hashes', source}, () => hashBird(source), (m) => ('hashes' in m ? m.hashes : undefined))
}

/** The fix service's plan of the node's overlay, as `fix --json` plans it (the kernel's routes required). */
export async function planOverlay(source: SourceOptions, fix: FixSettings): Promise<OverlayPlan> {
  const {loadFixPlan} = await import('../services/fix.js')
  const req = {fixProtocol: Number(fix.fixProtocol), rulePriority: fix.rulePriority}
  return (await loadFixPlan({...source, requireKernelRoutes: true}, req)).plan
}

/** planOverlay without the routes to `skip`, made in a worker thread and held as reconcile holds it. */
export function planOverlayApart(
  source: SourceOptions,
  fix: FixSettings,
  skip: string[],
  ask: string[] = [],
): Promise<PlannedOverlay> {
  return apart({kind: 'plan', source, fix, skip, ask},
    async () => plannedOverlay(await planOverlay(source, fix), skip, ask),
    (m) => ('planned' in m ? m.planned : undefined))
}

/** `check --json` of the node (the kernel's routes required), written to `out`. */
export async function writeReport(source: SourceOptions, out: Writable): Promise<void> {
  const [{loadCheckRun}, {writeCheckJson}] = await Promise.all([import('../services/load.js'), import('../render/json.js')])
  await writeCheckJson(out, await loadCheckRun({...source, requireKernelRoutes: true}, true))
}

/** writeReport, in a worker thread: each chunk written to `out`, the next once `out` takes more. */
export async function writeReportApart(source: SourceOptions, out: Writable): Promise<void> {
  const write = (chunk: Uint8Array) => new Promise<void>((resolve, reject) => {
    if (out.destroyed) return reject(new Error('the client went away'))
    if (out.write(chunk)) return resolve()
    const go = () => {
      out.off('drain', go)
      out.off('close', go)
      if (out.destroyed) reject(new Error('the client went away'))
      else resolve()
    }
    out.on('drain', go)
    out.on('close', go)
  })
  await apart({kind: 'report', source}, async () => {
    await writeReport(source, out)
    return true
  }, (m) => ('done' in m ? true : undefined), write)
}

async function hashBird(source: SourceOptions): Promise<BlockHashes> {
  const bird = await BirdSocket.connect(findBirdSocket(source.birdSocket), {timeoutMs: 5000})
  try {
    return birdBlockHashes(await bird.command('show route all'))
  } finally {
    bird.close()
  }
}
