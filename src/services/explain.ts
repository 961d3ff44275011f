// `explain QUERY`: the snapshot as explain reads it (live: only what the query's chain needs) and its explanation.
// The explain command, the UI's explanation pane and watch's /explain call it.
import {SnapshotIndex} from '../model/snapshot-index.js'
import {explainReport, type ExplainReport} from '../report/report.js'
import {loadExplainSnapshot, ownRoutes, type BulkHealthySource, type SourceOptions} from './load.js'

export interface ExplainRequest {
  /** Cite a kernel route by its line in the text route dump (read beside the JSON one), else by its JSON element. */
  citeRouteLines?: boolean
  /** A collection the caller holds (the UI's offline source): explained from it, nothing read again. */
  held?: BulkHealthySource
}

export async function loadExplainReport(
  source: SourceOptions,
  query: string,
  req: ExplainRequest = {},
): Promise<ExplainReport> {
  if (req.held) return explainReport(req.held.indexFor(query), query)
  const snapshot = await loadExplainSnapshot(req.citeRouteLines ? {...source, routeTextToo: true} : source, query)
  return explainReport(
    new SnapshotIndex(snapshot, {...ownRoutes(source), ...(req.citeRouteLines ? {kernelLines: true} : {})}),
    query,
  )
}

/** explain's exit status, as check's: 1 when a finding of severity error stands, else 0. */
export function explainExitCode(report: ExplainReport): 0 | 1 {
  return report.findings.some((f) => f.severity === 'error') ? 1 : 0
}
