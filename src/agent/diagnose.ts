// One diagnosis of the node as `watch` holds it: the `check` service's run (the same loading, settling and
// rules as `check`), reduced to the NodeState that changes are computed from.
import {isEstablished} from '../model/context.js'
import {loadCheckContext, type SourceOptions} from '../services/load.js'
import {checkRun, isSettledPrefixes} from '../report/report.js'
import type {NodeState, SeenFinding} from './state.js'

const NO_KEYS = new Float64Array(0)

export async function diagnoseNode(source: SourceOptions, fixProtocol: string): Promise<NodeState> {
  const ctx = await loadCheckContext(source, {evidence: false, texts: true, fixProtocol})
  const run = checkRun(ctx, {plans: false})
  const prefixes = new Map<string, {verdict: string; findings: SeenFinding[]}>()
  for (const l of run.lines) {
    if (isSettledPrefixes(l)) continue
    prefixes.set(l.prefix, {verdict: l.verdict, findings: l.findings.map((f) => ({id: f.id, severity: f.severity, title: f.title}))})
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
  return {
    prefixes,
    healthyKeys: ctx.snapshot.healthy?.keys ?? NO_KEYS,
    verdicts: {...run.summary().verdicts},
    host: run.host.findings.map((f) => ({id: f.id, severity: f.severity, title: f.title})),
    sessions,
    sources,
    overlayRoutes,
  }
}
