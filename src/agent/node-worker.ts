// The agent's work on a whole table, in a worker thread: the whole node's diagnosis, and the hashes of BIRD's full
// `show route all`. On a full table each is many seconds of CPU without a pause; in the agent's own thread it would
// leave /metrics and /healthz unanswered that long (a kubelet restarts an agent whose liveness probe times out, and
// a keep-alive request that waited is reset). The answer crosses in pieces that each take the agent's thread a moment:
// the prefixes a slice at a time, the hashes as typed arrays. The worker's heap goes with it.
import {isMainThread, parentPort, Worker, workerData} from 'node:worker_threads'

import {BirdSocket, findBirdSocket} from '../collect/bird-socket.js'
import type {SourceOptions} from '../services/load.js'
import {diagnoseNode, type NodeDiagnosis} from './diagnose.js'
import {birdBlockHashes, type BlockHashes} from './incremental.js'
import type {SeenPrefix} from './state.js'

const TASK = 'routedoctor-watch-task'
const SLICE = 4096 // prefixes a message

type Job = {kind: 'node'; source: SourceOptions; fixProtocol: string} | {kind: 'bird-hashes'; source: SourceOptions}

type Message =
  {prefixes: Array<[string, SeenPrefix]>} | {diagnosis: NodeDiagnosis} | {hashes: BlockHashes} | {error: string}

const transferOf = (h: BlockHashes | undefined): ArrayBuffer[] =>
  h ? [h.keys.buffer as ArrayBuffer, h.hashes.buffer as ArrayBuffer] : []

async function run(job: Job, post: (m: Message, transfer?: ArrayBuffer[]) => void): Promise<void> {
  if (job.kind === 'bird-hashes') {
    const hashes = await hashBird(job.source)
    post({hashes}, transferOf(hashes))
    return
  }
  const d = await diagnoseNode(job.source, job.fixProtocol)
  const entries = [...d.state.prefixes]
  // one slice at a time, each once the last is taken: the agent's thread answers requests in between
  for (let i = 0; i < entries.length; i += SLICE) {
    const taken = new Promise((resolve) => parentPort!.once('message', resolve))
    post({prefixes: entries.slice(i, i + SLICE)})
    await taken
  }
  d.state.prefixes = new Map()
  post({diagnosis: d}, [d.state.healthyKeys.buffer as ArrayBuffer, ...transferOf(d.birdHashes)])
}

// loaded as a worker's module: the job, its answer, the end
if (!isMainThread && (workerData as {task?: string} | undefined)?.task === TASK) {
  const post = (m: Message, transfer: ArrayBuffer[] = []) => parentPort!.postMessage(m, transfer)
  run((workerData as {job: Job}).job, post).catch((error: Error) => post({error: error.message}))
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
    const cancel = () => end(() => reject(new Error('the agent is stopping')))
    cancels.add(cancel)
    worker.on('message', (m: Message) => {
      if ('prefixes' in m) {
        for (const [p, seen] of m.prefixes) prefixes.set(p, seen)
        setImmediate(() => worker.postMessage('taken'))
      }
      else if ('error' in m) end(() => reject(new Error(m.error)))
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

async function hashBird(source: SourceOptions): Promise<BlockHashes> {
  const bird = await BirdSocket.connect(findBirdSocket(source.birdSocket), {timeoutMs: 5000})
  try {
    return birdBlockHashes(await bird.command('show route all'))
  } finally {
    bird.close()
  }
}
