// `fleet`: one bundle or snapshot directory per node, joined with Calico's truth, one node at a time (a node's
// texts and diagnosis are let go before the next is read).
import {writeFile} from 'node:fs/promises'
import path from 'node:path'

import {FleetJoin, type FleetReport} from '../fleet/join.js'
import {CALICO_DIR, type CalicoTruth} from '../model/calico.js'
import {SnapshotIndex} from '../model/snapshot-index.js'
import {RouteDoctorError, UsageError} from '../model/errors.js'
import {checkSnapshot, loadClusterTruth, loadSourceFiles, ownRoutes, parseTruthFiles} from './load.js'
import {checkRun} from '../report/report.js'
import {fleetExitCode, renderFleet} from '../render/fleet.js'
import {palette} from '../render/style.js'

export interface FleetOptions {
  sources: string[]
  calico?: string
  kube?: boolean
  pools?: string[]
  tunnelDev?: string
  fixProtocol?: number // the protocol number and overlay table of routedoctor's own routes on the nodes
  overlayTable?: number
  progress?: (line: string) => void
}

export async function runFleet(opts: FleetOptions): Promise<FleetReport> {
  if (opts.sources.length === 0) throw new UsageError('fleet: give one bundle or snapshot directory per node')
  let truth: CalicoTruth | undefined = (await loadClusterTruth(opts))?.truth
  let join: FleetJoin | undefined = truth ? new FleetJoin(truth) : undefined
  for (const source of opts.sources) {
    const snapshot = await fromSource(source, async () => {
      // every verdict compares BIRD with the kernel's route: a node without them is refused, as check refuses it
      const loaded = await loadSourceFiles({from: source, ownTruth: join === undefined, requireKernelRoutes: true})
      // without --calico/--kube, the first source that carries Calico's truth gives it to every node
      if (!join) {
        const own = loaded.files.filter((f) => f.name.startsWith(CALICO_DIR))
        if (own.length > 0) truth = parseTruthFiles(own, loaded.origin)
        join = new FleetJoin(truth)
      }
      return checkSnapshot(loaded.files, {pools: opts.pools, tunnelDev: opts.tunnelDev, origin: loaded.origin, truth})
    })
    const name = snapshot.nodeName ?? path.basename(source).replace(/\.tar\.gz$/, '')
    if (join!.has(name)) throw new UsageError(`${source}: node ${name} is already given by another source (record each node's name: bundle --node NAME)`)
    const ctx = new SnapshotIndex(snapshot, {...ownRoutes(opts), evidence: false})
    join!.add(name, source, ctx, checkRun(ctx, {plans: false}))
    opts.progress?.(`${name}: ${source}`)
  }
  return join!.finish()
}

/** Runs one source's load or parse; an error that does not name the source is prefixed with it (same exit and code). */
async function fromSource<T>(source: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    if (!(error instanceof RouteDoctorError) || error.message.includes(source)) throw error
    throw new RouteDoctorError(`${source}: ${error.message}`, error.exit, error.code)
  }
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
