// A worker thread of `fleet` (services/fleet.ts): it claims the sources one at a time from the counter the workers
// share, loads and diagnoses each node, and sends back its fold, or its error as data, until none is left. Built as
// its own entry of the bundle (scripts/bundle.mjs).
import {parentPort, workerData} from 'node:worker_threads'

import {foldSource, sharedTruth, workerErrorOf, type FleetWorkerData, type FleetWorkerMessage} from './fleet-node.js'

async function work({opts, truth, sources, next}: FleetWorkerData): Promise<void> {
  const shared = sharedTruth(truth)
  for (let index = Atomics.add(next, 0, 1); index < sources.length; index = Atomics.add(next, 0, 1)) {
    // said first: should this thread die on the source, the error is that source's, not an earlier one's
    parentPort!.postMessage({index} satisfies FleetWorkerMessage)
    const reply: FleetWorkerMessage['reply'] = await foldSource(sources[index], opts, shared).then(
      ({name, fold}) => ({name, fold}),
      (error: unknown) => ({error: workerErrorOf(error)}),
    )
    parentPort!.postMessage({index, reply} satisfies FleetWorkerMessage)
  }
}

await work(workerData as FleetWorkerData)
