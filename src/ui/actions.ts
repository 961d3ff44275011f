// What the TUI can do, built from the services. The UI receives these as injected actions and
// shows "not available" for the optional ones that are absent, so wiring more into the UI means
// changing this file and nowhere else.
import type {ChalkInstance} from 'chalk'

import {RouteDoctorError} from '../model/errors.js'
import {palette} from '../render/style.js'
import {renderFix} from '../render/text.js'
import {loadExplainReport} from '../services/explain.js'
import {
  loadBulkHealthySource,
  loadClusterTruth,
  type BulkHealthySource,
  type ClusterTruth,
  type SourceOptions,
} from '../services/load.js'
import {checkReport, type CheckReport, type ExplainReport} from '../report/report.js'
import type {Capabilities} from './state.js'

export interface UiActions {
  /** Collect (live) or read (--from) a snapshot and diagnose it; freshTruth: Calico's truth read again, of any age. */
  loadReport(freshTruth?: boolean): Promise<CheckReport>
  /** The explanation of one prefix: from the data of the last loadReport(), or (live) collected for that prefix. */
  explain(prefix: string): Promise<ExplainReport>
  /** The planned change for one prefix, as text (diff + `ip route replace` line). */
  previewFix?(prefix: string): Promise<string>
  /** Program the planned route for one prefix; the text says what was applied and verified. */
  applyFix?(prefix?: string): Promise<string> // no prefix: the whole plan
  /** Write a support bundle; the text names the file. */
  writeBundle?(): Promise<string>
}

export interface ActionOptions {
  palette?: ChalkInstance // for the text the fix and bundle actions return
  toolVersion?: string // recorded in a bundle's manifest
  bundleDir?: string // where `b` writes bundles (default: the current directory)
  journalDir?: string // where an apply journals what it replaced (default: as `fix`)
  watchSeconds?: number // how long an apply watches for a route war (default: as `fix`)
  truthIntervalSeconds?: number // --calico/--kube: Calico's truth read again once this old (default: at every load)
}

export function capabilities(actions: UiActions): Capabilities {
  return {
    previewFix: typeof actions.previewFix === 'function',
    applyFix: typeof actions.applyFix === 'function',
    writeBundle: typeof actions.writeBundle === 'function',
  }
}

/**
 * The first report, or why there is none when the source has no kernel routes (E_NO_KERNEL_ROUTES: the UI shows that
 * refusal in its view, as `check` refuses); any other error is the caller's (bad input: exit 2).
 */
export async function firstReport(actions: UiActions): Promise<{report?: CheckReport; loadError?: string}> {
  try {
    return {report: await actions.loadReport()}
  } catch (error) {
    if (error instanceof RouteDoctorError && error.code === 'E_NO_KERNEL_ROUTES') return {loadError: error.message}
    throw error
  }
}

export function createActions(given: SourceOptions, options: ActionOptions = {}): UiActions {
  // judged as `check` and `explain` judge: a source without the kernel's routes is refused, not shown as all missing
  const opts: SourceOptions = {...given, requireKernelRoutes: true}
  const c = options.palette ?? palette()
  // Calico's truth (--calico, --kube) read again only once --truth-interval old, as watch reads it: the refresh every
  // few seconds re-collects the node, not the whole cluster's IPAM
  let truth: {value: ClusterTruth | undefined; at: number} | undefined
  const judgedBy = async (fresh = false): Promise<SourceOptions> => {
    if (opts.calico === undefined && !opts.kube) return opts
    const maxAgeMs = (options.truthIntervalSeconds ?? 0) * 1000
    if (fresh || truth === undefined || Date.now() - truth.at >= maxAgeMs)
      truth = {value: await loadClusterTruth(opts), at: Date.now()}
    return {...opts, clusterTruth: truth.value}
  }
  // a full table's healthy prefixes stay separated: the list needs only their keys, an explanation its own prefix's
  // routes
  let held: BulkHealthySource | undefined
  const source = async (): Promise<BulkHealthySource> => (held ??= await loadBulkHealthySource(await judgedBy()))
  const actions: UiActions = {
    async loadReport(freshTruth) {
      held = await loadBulkHealthySource(await judgedBy(freshTruth))
      return checkReport(held.list)
    },
    async explain(prefix) {
      // live: collected afresh for that prefix alone, as `explain` collects it
      return loadExplainReport(await judgedBy(), prefix, opts.from ? {held: await source()} : {})
    },
    async previewFix(prefix) {
      const {planFix} = await import('../services/fix.js')
      const {report, items} = planFix((await source()).indexFor(prefix), prefix)
      return (
        renderFix(report, c) +
        (items.length > 0
          ? c.dim(`\nDry run: nothing was changed.${opts.from ? '' : ' Press a to program this route.'}`)
          : '')
      )
    },
    async writeBundle() {
      const {createBundle} = await import('../services/bundle.js')
      // a bundle writes what it got, kernel routes or not (support reads why they are missing)
      const toolVersion = options.toolVersion ?? '0.0.0'
      const result = await createBundle({...given, out: options.bundleDir, command: ['ui'], toolVersion})
      return `Wrote ${result.path}\n${result.sources.filter((s) => s.error).map((s) => `  ${s.file}: not collected (${s.error})`).join('\n')}`.trimEnd()
    },
  }
  // Applying writes this node's kernel: never from an offline snapshot. The plan is made from a
  // fresh collection, not from what the screen shows, so it matches the kernel at the moment of writing.
  if (!opts.from) {
    actions.applyFix = async (prefix) => {
      const [{applyFix, loadFixPlan}, {renderApply}] = await Promise.all([
        import('../services/fix.js'),
        import('../render/apply.js'),
      ])
      // as `fix PREFIX --apply` (or `fix --apply`) plans it
      const {plan, changes} = await loadFixPlan(opts, {prefix, apply: true})
      if (changes === 0) {
        return prefix === undefined
          ? 'Nothing to apply: no correction, withdrawal or rule change is planned now.'
          : `Nothing to apply for ${prefix}: nothing is planned for it now.`
      }
      return renderApply(await applyFix(plan, {journalDir: options.journalDir, watchSeconds: options.watchSeconds}), c)
    }
  }
  return actions
}
