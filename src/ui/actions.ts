// What the TUI can do, built from the services. The UI receives these as injected actions and
// shows "not available" for the optional ones that are absent, so wiring fix and bundle into the
// UI means adding them here and nowhere else.
import {Context} from '../model/context.js'
import {loadSnapshot, type SourceOptions} from '../services/load.js'
import {checkReport, explainReport, type CheckReport, type ExplainReport} from '../services/report.js'
import type {Capabilities} from './state.js'

export interface UiActions {
  /** Collect (live) or read (--from) a snapshot and diagnose it. */
  loadReport(): Promise<CheckReport>
  /** The explanation of one prefix, from the data of the last loadReport(). */
  explain(prefix: string): Promise<ExplainReport>
  /** The planned change for one prefix, as text (diff + `ip route replace` lines). */
  previewFix?(prefix: string): Promise<string>
  /** Program the planned route for one prefix; the text says what was applied and verified. */
  applyFix?(prefix: string): Promise<string>
  /** Write a support bundle; the text names the file. */
  writeBundle?(): Promise<string>
}

export function capabilities(actions: UiActions): Capabilities {
  return {previewFix: typeof actions.previewFix === 'function', applyFix: typeof actions.applyFix === 'function', writeBundle: typeof actions.writeBundle === 'function'}
}

export function createActions(opts: SourceOptions): UiActions {
  let ctx: Context | undefined
  const context = async (): Promise<Context> => (ctx ??= new Context(await loadSnapshot(opts)))
  const actions: UiActions = {
    async loadReport() {
      ctx = new Context(await loadSnapshot(opts))
      return checkReport(ctx)
    },
    async explain(prefix) {
      return explainReport(await context(), prefix)
    },
  }
  // Wiring point for the fix and bundle services (lead): e.g.
  //   actions.previewFix = async (prefix) => renderFixPlan(planFix(await context(), {prefixes: [prefix]}))
  //   if (!opts.from) actions.applyFix = async (prefix) => renderApplied(await applyFix(await context(), {prefixes: [prefix], yes: true}))
  //   actions.writeBundle = async () => `wrote ${(await writeBundle(opts)).path}`
  // applyFix must stay absent with --from: an offline snapshot is not this node's kernel.
  return actions
}
