// One node of `fleet`: its source loaded and diagnosed as `check` does, folded into what the join keeps of it
// (fleet/join.ts foldNode). The same in the command's thread and in its worker threads (services/fleet-worker.ts).
import path from 'node:path'

import {BlockOwners, foldNode, type NodeFold} from '../fleet/join.js'
import {CALICO_DIR, clusterIndex, type CalicoTruth} from '../model/calico.js'
import {SnapshotIndex} from '../model/snapshot-index.js'
import {RouteDoctorError} from '../model/errors.js'
import {loadSourceFiles, ownRoutes, parseTruthFiles} from './load.js'
import {buildBulkSnapshot} from '../bulk/build.js'
import {checkRun} from '../report/report.js'

/** What every node is diagnosed with: plain data, given to the worker threads as it is. */
export interface FleetNodeOptions {
  pools?: string[]
  tunnelDev?: string
  fixProtocol?: number // the protocol number and overlay table of routedoctor's own routes on the nodes
  overlayTable?: number
}

export function nodeOptions(opts: FleetNodeOptions): FleetNodeOptions {
  return {pools: opts.pools, tunnelDev: opts.tunnelDev, fixProtocol: opts.fixProtocol, overlayTable: opts.overlayTable}
}

/** Calico's truth every node is judged by, and its blocks' owners. */
export interface SharedTruth {
  truth: CalicoTruth | undefined
  owners: BlockOwners
}

export function sharedTruth(truth: CalicoTruth | undefined): SharedTruth {
  return {truth, owners: new BlockOwners(truth && clusterIndex(truth))}
}

export interface FoldedSource {
  name: string // the node's recorded name, else the source's file name
  fold: NodeFold
}

/**
 * Source `source`'s node, folded. `shared` undefined: the truth is the source's own calico/ (none when it has none),
 * returned for the sources after it. An error that does not name the source is prefixed with it (same exit and code).
 */
export async function foldSource(
  source: string, opts: FleetNodeOptions, shared: SharedTruth | undefined,
): Promise<FoldedSource & {shared: SharedTruth}> {
  try {
    // every verdict compares BIRD with the kernel's route: a node without them is refused, as check refuses it
    const loaded = await loadSourceFiles({from: source, ownTruth: shared === undefined, requireKernelRoutes: true})
    if (shared === undefined) {
      const own = loaded.files.filter((f) => f.name.startsWith(CALICO_DIR))
      shared = sharedTruth(own.length > 0 ? parseTruthFiles(own, loaded.origin) : undefined)
    }
    const {pools, tunnelDev} = opts
    const snapshot = buildBulkSnapshot(loaded.files, {pools, tunnelDev, origin: loaded.origin, truth: shared.truth}, 'check')
    const name = snapshot.nodeName ?? path.basename(source).replace(/\.tar\.gz$/, '')
    const ctx = new SnapshotIndex(snapshot, {...ownRoutes(opts), evidence: false})
    return {name, fold: foldNode(name, ctx, checkRun(ctx, {plans: false}), shared.owners), shared}
  } catch (error) {
    if (!(error instanceof RouteDoctorError) || error.message.includes(source)) throw error
    throw new RouteDoctorError(`${source}: ${error.message}`, error.exit, error.code)
  }
}

/** What a worker thread is started with: `next` (shared by every worker) is the index of the next source to claim. */
export interface FleetWorkerData {
  opts: FleetNodeOptions
  truth: CalicoTruth | undefined
  sources: string[]
  next: Int32Array
}

/** A worker's error as plain data: `exit` and `code` when it is a RouteDoctorError. */
export interface FleetWorkerError {
  name: string
  message: string
  exit?: number
  code?: string
  stack?: string
}

/** A worker's answer to source `index`; without `reply`: it has claimed that source and is diagnosing it. */
export interface FleetWorkerMessage {
  index: number
  reply?: FoldedSource | {error: FleetWorkerError}
}

export function workerErrorOf(error: unknown): FleetWorkerError {
  if (error instanceof RouteDoctorError) {
    return {name: error.name, message: error.message, exit: error.exit, code: error.code}
  }
  if (error instanceof Error) return {name: error.name, message: error.message, stack: error.stack}
  return {name: 'Error', message: String(error)}
}
