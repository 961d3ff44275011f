// A stand-in for fleet's worker thread (src/services/fleet-worker.ts), speaking its protocol: it claims sources from
// the shared counter and says so, then answers by the source's name. "crash": the thread dies of an uncaught error.
// "bad": a bad-input error, sent only after a later source was claimed by another worker and a moment more, so that
// the other worker's crash comes first. Anything else: a fold named after the source.
import {parentPort, workerData} from 'node:worker_threads'

const {sources, next} = workerData
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
for (let index = Atomics.add(next, 0, 1); index < sources.length; index = Atomics.add(next, 0, 1)) {
  const source = sources[index]
  parentPort.postMessage({index})
  if (source === 'crash') throw new Error('the thread fell over')
  if (source === 'bad') {
    while (Atomics.load(next, 0) <= index + 1) await sleep(5)
    await sleep(200)
    const error = {name: 'RouteDoctorError', message: 'bad/sysctl.txt:2: expected a "name = value" line', exit: 2, code: 'E_PARSE'}
    parentPort.postMessage({index, reply: {error}})
  } else parentPort.postMessage({index, reply: {name: source, fold: {}}})
}
