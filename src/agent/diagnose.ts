// One diagnosis of the node as `watch` holds it: the `check` service's run (the same loading, separating and
// rules as `check`), reduced to the NodeState that changes are computed from; and the node-wide sources that
// collection read, kept for re-diagnosing single prefixes (incremental.ts).
import {isEstablished} from '../model/snapshot-index.js'
import {SNAPSHOT_FILES} from '../collect/snapshot-files.js'
import type {Finding, SourceFile} from '../model/types.js'
import {loadCheckIndex, type LoadedSource, type SourceOptions} from '../services/load.js'
import {checkRun, isBulkHealthyPrefixes, type PrefixLine} from '../report/report.js'
import {baseOf, birdBlockHashes, nodeWideFiles, type BlockHashes, type NodeBase} from './incremental.js'
import type {NodeState, SeenFinding, SeenPrefix} from './state.js'

const NO_KEYS = new Float64Array(0)

export const seenFindings = (findings: readonly Finding[]): SeenFinding[] =>
  findings.map((f) => ({id: f.id, severity: f.severity, title: f.title}))

/** What `watch` keeps of a prefix's line of check. */
export const seenPrefix = (l: PrefixLine): SeenPrefix => ({verdict: l.verdict, findings: seenFindings(l.findings)})

export interface NodeDiagnosis {
  state: NodeState
  base: NodeBase
  birdHashes?: BlockHashes // of BIRD's routes as collected
}

export async function diagnoseNode(source: SourceOptions, fixProtocol: string): Promise<NodeDiagnosis> {
  let files: SourceFile[] = []
  let origin: LoadedSource['origin'] = {kind: 'live'}
  let birdHashes: NodeDiagnosis['birdHashes']
  // before the collection's texts are given up: the node-wide sources kept, BIRD's networks hashed
  const ctx = await loadCheckIndex(source, {evidence: false, texts: true, fixProtocol}, (loaded) => {
    files = nodeWideFiles(loaded.files)
    origin = loaded.origin
    const bird = loaded.files.find((f) => f.name === SNAPSHOT_FILES.birdRoutes)?.text
    if (bird !== undefined) birdHashes = birdBlockHashes(bird)
  })
  const base = baseOf(files, origin, ctx)
  const run = checkRun(ctx, {plans: false})
  const prefixes = new Map<string, SeenPrefix>()
  for (const l of run.lines) {
    if (isBulkHealthyPrefixes(l)) continue
    prefixes.set(l.prefix, seenPrefix(l))
  }
  const sessions = new Map(ctx.bgpProtocols.map((p) => [p.name, {
    state: p.bgpState ?? (isEstablished(p) ? 'Established' : p.state),
    ...(p.neighborAddress ? {neighbor: p.neighborAddress} : {}),
    ...(p.lastError && !isEstablished(p) ? {lastError: p.lastError} : {}),
  }]))
  // the sources `routedoctor_source_up` shows: the snapshot files of DESIGN §3 a live collection reads
  const sources = new Map<string, string | undefined>()
  for (const f of ctx.snapshot.files) sources.set(f.name, f.error)
  let overlayRoutes = 0
  for (const r of ctx.snapshot.kernelRoutes) if (r.protocol === ctx.fixProtocol) overlayRoutes++
  const state: NodeState = {
    prefixes,
    healthyKeys: ctx.snapshot.healthy?.keys ?? NO_KEYS,
    verdicts: {...run.summary().verdicts},
    host: seenFindings(run.host.findings),
    sessions,
    sources,
    overlayRoutes,
  }
  return {state, base, ...(birdHashes ? {birdHashes} : {})}
}
