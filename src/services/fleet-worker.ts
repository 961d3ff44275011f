// A worker thread of `fleet` (services/fleet.ts): given one source at a time, it loads and diagnoses that node and
// answers with its fold, or with its error as data. Built as its own entry of the bundle (scripts/bundle.mjs).
import {parentPort, workerData} from 'node:worker_threads'

import {foldSource, sharedTruth, workerErrorOf, type FleetWorkerData, type FleetWorkerReply} from './fleet-node.js'

const data = workerData as FleetWorkerData
const shared = sharedTruth(data.truth)
const port = parentPort!

port.on('message', (source: string) => {
  foldSource(source, data.opts, shared).then(
    ({name, fold}): FleetWorkerReply => ({name, fold}),
    (error: unknown): FleetWorkerReply => ({error: workerErrorOf(error)}),
  ).then((reply) => port.postMessage(reply))
})
