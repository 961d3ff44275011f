// `fix`: the whole overlay (DESIGN §5) planned from a snapshot, as a plan the netlink stage applies with its journal.
import {
  SnapshotIndex,
  type SnapshotIndexOptions,
  DEFAULT_JOURNAL_DIR,
  DEFAULT_RULE_PRIORITY,
  DEFAULT_WATCH_SECONDS,
  type PrefixFacts,
} from '../model/snapshot-index.js'
import {diagnoseFacts} from '../diagnose/engine.js'
import {
  type OverlayPlan,
  type OverlaySettings,
  type PlanItem,
  planPrefixOverlay,
  planRules,
  reportedRoute,
  whyNoPlan,
} from '../plan/plan.js'
import {birdConfigAdvice} from '../plan/bird-config.js'
import {ipRouteReplace} from '../model/format.js'
import type {PlannedRoute, PlannedRule} from '../model/types.js'
import {SCHEMA, nodeSummary, resolveTarget, targetScope} from '../report/report.js'
import {prefixContains} from '../model/prefix.js'
import {tableIdOf} from '../model/fib.js'
import {UsageError} from '../model/errors.js'
import {checkOverlayTable, checkRulePriority} from '../snapshot/build.js'
import type {ApplyOptions, ApplyResult, RevertResult} from '../netlink/apply.js'
import {
  appliedCleanly,
  type FixEntry,
  type FixMode,
  type FixReport,
  type FixRoute,
  fixPlanJson,
  type PlannedFix,
} from '../report/fix.js'
import {loadBulkHealthySnapshot, type SourceOptions} from './load.js'

/**
 * The SnapshotIndex a plan is made of: a plan shows verdicts and routes, never a finding's texts or evidence, so they
 * are not made (on many broken blocks, much of planning's time); verdicts and plans are the same either way.
 */
export const FIX_INDEX_OPTIONS: Readonly<SnapshotIndexOptions> = Object.freeze({evidence: false, texts: false})

export interface FixOptions {
  table?: number // the overlay table (default DEFAULT_OVERLAY_TABLE); must be the SnapshotIndex's overlayTable
  rulePriority?: number // not given: DEFAULT_RULE_PRIORITY, and a pool's rule already at another priority stays
}

/**
 * Refuse an overlay BIRD could learn or one that is not routedoctor's (exit 2, before anything is written): a table
 * inside 1-255, BIRD's kernel table, a table holding another owner's routes, a priority not below main's rule.
 */
export function checkOverlaySettings(ctx: SnapshotIndex, settings: OverlaySettings): void {
  const {table, rulePriority} = settings
  checkOverlayTable(table)
  checkRulePriority(rulePriority)
  if (ctx.kernelTables.includes(table)) {
    const pos = ctx.snapshot.bird.config?.pos
    throw new UsageError(
      `--table ${table}: it is the table BIRD's kernel protocol syncs (\`kernel table ${table}\`${pos ? ` in ${pos.file}` : ''}): ` +
        'BIRD would learn the overlay\'s routes and could advertise them. Choose another table.',
    )
  }
  const foreign = ctx.snapshot.kernelRoutes.find(
    (r) => r.tableId === table && r.protocol !== ctx.fixProtocol && r.tableId !== 255,
  )
  if (foreign) {
    throw new UsageError(
      `--table ${table}: the table holds a route of another owner (${foreign.dst} proto ${foreign.protocol}): ` +
        'the overlay must be a table of routedoctor\'s own. Choose another table.',
    )
  }
}

export function planFix(
  ctx: SnapshotIndex,
  only?: string,
  opts: FixOptions = {},
): {report: FixReport; items: PlanItem[]; plan: OverlayPlan} {
  const settings: OverlaySettings = {
    table: opts.table ?? ctx.overlayTable,
    rulePriority: opts.rulePriority ?? DEFAULT_RULE_PRIORITY,
    protocol: ctx.fixProtocol,
    ...(opts.rulePriority === undefined ? {keepRulePriority: true} : {}),
  }
  if (settings.table !== ctx.overlayTable)
    throw new Error('planFix: the SnapshotIndex reads another overlay table than the plan writes')
  checkOverlaySettings(ctx, settings)
  let facts: Iterable<PrefixFacts> = ctx.poolFacts()
  let scope: string | undefined
  if (only) {
    // a prefix or address inside a block is that block; a wider prefix is every tunnel prefix inside it
    const p = resolveTarget(ctx, only)
    const wide = targetScope(ctx, p)
    facts = wide ? ctx.poolPrefixes().filter((x) => prefixContains(p, x)).map((x) => ctx.facts(x)) : [ctx.facts(p)]
    if (wide && wide.insideCount === 0) scope = `no tunnel prefix lies inside ${p}`
    else if (wide) scope = `the tunnel prefixes inside ${p}`
    else scope = p
  }
  const entries: FixEntry[] = []
  const replaces: PlanItem[] = []
  const deletes: PlanItem[] = []
  const deleteEntries: FixEntry[] = []
  const skipped: FixReport['skipped'] = []
  const seen = new Set<string>()
  let kept = 0
  for (const f of facts) {
    seen.add(f.prefix)
    const p = planPrefixOverlay(ctx, f)
    if (p.kept) kept++
    if (!p.replace && p.deletes.length === 0) {
      if (p.kept) continue
      const d = diagnoseFacts(ctx, f)
      if (d.verdict !== 'ok' && d.verdict !== 'local') {
        skipped.push({prefix: d.prefix, verdict: d.verdict, reason: whyNoPlan(ctx, d) ?? 'nothing to program'})
      }
      continue
    }
    const d = diagnoseFacts(ctx, f)
    const current = f.ours.length === 0 ? f.kernel : [...f.kernel, ...f.ours.filter((r) => !f.kernel.includes(r))]
    if (p.replace) {
      replaces.push(p.replace)
      const planned = reportedRoute(p.replace.planned, 'replace')
      const ipRoute = ipRouteReplace(p.replace.planned)
      entries.push({prefix: d.prefix, verdict: d.verdict, action: 'replace', current, planned, mode: p.replace.mode, ipRoute})
    }
    for (const del of p.deletes) {
      deletes.push(del)
      const planned = reportedRoute(del.planned, 'delete')
      const ipRoute = ipRouteDel(del.planned)
      deleteEntries.push({prefix: d.prefix, verdict: d.verdict, action: 'delete', current, planned, mode: del.mode, ipRoute})
    }
  }
  if (!only) {
    // routedoctor's routes outside every pool prefix walked (a pool removed): withdrawn
    for (const r of ctx.oursRoutes) {
      if (seen.has(r.dst) || r.type === 'local') continue
      const p = planPrefixOverlay(ctx, ctx.facts(r.dst))
      for (const del of p.deletes) {
        if (del.replaces !== r) continue
        deletes.push(del)
        const planned = reportedRoute(del.planned, 'delete')
        const ipRoute = ipRouteDel(del.planned)
        deleteEntries.push({prefix: r.dst, verdict: 'not-in-pool', action: 'delete', current: [r], planned, mode: del.mode, ipRoute})
      }
    }
  }
  const items = [...replaces, ...deletes]
  // does the overlay hold a route once the plan is applied?
  const deleted = new Set(deletes.map((d) => d.replaces))
  const holds = replaces.length > 0 || ctx.oursRoutes.some((r) => r.tableId === settings.table && !deleted.has(r))
  const rules = planRules(ctx, settings, holds)
  const plan: OverlayPlan = {settings, items, rules, kept}
  const status = ctx.snapshot.bird.status
  const node = nodeSummary(ctx)
  const birdFailed = node.failed.find((f) => f.file === 'birdc-show-route-all.txt')
  const unavailable = ctx.haveBird
    ? undefined
    : birdFailed
      ? `BIRD's routes could not be read (${birdFailed.error}): nothing can be planned without BIRD's BGP next hops`
      : 'the snapshot has no BIRD routes (birdc-show-route-all.txt): nothing can be planned without BIRD\'s BGP next hops'
  return {
    items,
    plan,
    report: {
      schema: SCHEMA,
      node,
      ...(unavailable ? {unavailable} : {}),
      ...(scope ? {scope} : {}),
      table: settings.table,
      routes: items.map((i) => fixRoute(i)),
      rules,
      replaced: items.flatMap((i) => (i.replaces ? [i.replaces] : [])),
      entries: [...entries, ...deleteEntries],
      ruleLines: rules.map(ipRuleLine),
      kept,
      skipped,
      birdConfig: birdConfigAdvice(
        status?.version,
        status?.calicoFork ?? false,
        ctx.snapshot.pools,
        ctx.snapshot.tunnelDev,
      ),
    },
  }
}

function fixRoute(i: PlanItem): FixRoute {
  return reportedRoute(i.planned, i.action)
}

/**
 * `fix --apply --json`: the plan's report with the apply's result, its routes shaped as the plan's; `rules` stays the
 * plan's rules, and what the apply did to them (`added 32000: from all to … lookup 1158`) is `appliedRules`.
 */
export function appliedReport(report: FixReport, result: ApplyResult): FixReport {
  const {applied, rules, routeWar, ...rest} = result
  return {
    ...report, ...rest, applied: applied.map((p) => reportedRoute(p)),
    ...(routeWar === undefined ? {} : {routeWar: routeWar.map((w) => ({...w, table: tableIdOf(w.table)}))}),
    ...(rules === undefined ? {} : {appliedRules: rules}),
  }
}

/** `ip route del` of a route routedoctor withdraws. */
export function ipRouteDel(p: PlannedRoute): string {
  return `ip${p.dst.includes(':') ? ' -6' : ''} route del ${p.dst}${p.table !== 'main' ? ` table ${p.table}` : ''} proto ${p.protocol} metric ${p.metric}`
}

/** `ip rule add|del` of a planned rule. */
export function ipRuleLine(r: PlannedRule): string {
  return `ip${r.to.includes(':') ? ' -6' : ''} rule ${r.action === 'add' ? 'add' : 'del'} priority ${r.priority} to ${r.to} lookup ${r.table}`
}

export interface FixRequest extends FixOptions {
  prefix?: string // only this prefix (or the block an address is in, or the tunnel prefixes inside a wider prefix)
  fixProtocol?: number
  apply?: boolean // the plan is to be written: only on the live node
}

/**
 * `fix [PREFIX]`'s plan, from the snapshot as `fix` reads it (the healthy prefixes separated, PREFIX's routes kept).
 */
export async function loadFixPlan(source: SourceOptions, req: FixRequest = {}): Promise<PlannedFix> {
  if (req.apply && source.from) throw new UsageError('--apply programs the live kernel: it cannot be used with --from')
  // not given: what the snapshot recorded, else the default (the SnapshotIndex's)
  const protocol = req.fixProtocol ?? source.fixProtocol
  const table = req.table ?? source.overlayTable
  const ctx = new SnapshotIndex(await loadBulkHealthySnapshot(source, req.prefix), {
    ...FIX_INDEX_OPTIONS,
    ...(protocol === undefined ? {} : {fixProtocol: String(protocol)}),
    ...(table === undefined ? {} : {overlayTable: table}),
  })
  const {report, items, plan} = planFix(ctx, req.prefix, {table: ctx.overlayTable, rulePriority: req.rulePriority})
  return {report, items, plan, changes: items.length + plan.rules.length}
}

/**
 * Apply a plan (DESIGN §5): lock, journal first, write, read back, watch for a route war, restore on any failure.
 * What `fix --apply`, the UI and `watch --reconcile` call with a plan from planFix.
 */
export async function applyFix(plan: OverlayPlan, opts: Partial<ApplyOptions> = {}): Promise<ApplyResult> {
  const {applyPlan} = await import('../netlink/apply.js')
  return applyPlan(plan, {
    ...opts,
    journalDir: opts.journalDir ?? DEFAULT_JOURNAL_DIR,
    watchSeconds: opts.watchSeconds ?? DEFAULT_WATCH_SECONDS,
  })
}

/** Journal retention in `dir`: the newest `keep` stay, and those an apply or a revert may still need (journal.ts). */
export async function pruneFixJournals(dir: string, keep: number, protect?: ReadonlySet<string>) {
  const {pruneJournals} = await import('../netlink/journal.js')
  return pruneJournals(dir, keep, protect)
}

/** Undo an apply from its journal (`fix --revert`). */
export async function revertFix(journal: string): Promise<RevertResult> {
  const {revertJournal} = await import('../netlink/apply.js')
  return revertJournal(journal)
}

/**
 * What `fix` shows at one step: its text, or its JSON (written element by element: a full table's plan is hundreds of
 * MB of JSON, never one string), nothing when neither is given; and the exit status it sets.
 */
export interface FixShown {
  text?: string
  json?: object
  exitCode: 0 | 1
}

export interface FixRun extends FixShown {
  planned: PlannedFix
  /** The question to ask before writing the plan; undefined when nothing is to be written (dry run, or no change). */
  question?: string
}

/**
 * `fix [PREFIX]`: the plan and what shows of it. `--bird-config` alone prints the BIRD filter (and needs no kernel
 * routes); with --apply it is an apply, whose plan shows as text before the question and as JSON only with the result.
 */
async function fixRun(
  source: SourceOptions,
  req: FixRequest & {birdConfig?: boolean; json?: boolean},
): Promise<FixRun> {
  const mode: FixMode = req.apply ? 'apply' : req.birdConfig ? 'bird-config' : 'dry-run'
  const planned = await loadFixPlan(mode === 'bird-config' ? source : {...source, requireKernelRoutes: true}, req)
  const done = mode !== 'apply' || planned.report.unavailable !== undefined || planned.changes === 0
  const exitCode = planned.report.unavailable !== undefined && mode !== 'bird-config' ? 1 : 0
  const [{palette}, {renderFixPlan}, {applyQuestion}] =
    await Promise.all([import('../render/style.js'), import('../render/text.js'), import('../render/apply.js')])
  return {
    planned,
    exitCode,
    ...(req.json ? (done ? {json: fixPlanJson(planned, mode)} : {}) : {text: renderFixPlan(planned, mode, palette())}),
    ...(done ? {} : {question: applyQuestion(planned)}),
  }
}

/** `fix --apply` once confirmed: the plan written (applyFix) and what shows of it. */
async function applyFixRun(
  planned: PlannedFix,
  opts: Partial<ApplyOptions> & {json?: boolean} = {},
): Promise<FixShown> {
  const {json, ...applyOpts} = opts
  const result = await applyFix(planned.plan, applyOpts)
  const exitCode = appliedCleanly(result) ? 0 : 1
  if (json) return {json: appliedReport(planned.report, result), exitCode}
  const [{palette}, {renderApply}] = await Promise.all([import('../render/style.js'), import('../render/apply.js')])
  return {text: renderApply(result, palette()), exitCode}
}

/** `fix --revert JOURNAL` once confirmed: the journal undone (revertFix) and what shows of it. */
async function revertFixRun(journal: string, json = false): Promise<FixShown> {
  const result = await revertFix(journal)
  const exitCode = result.verified && result.errors.length === 0 ? 0 : 1
  // its routes as every fix document gives a route: the table by number (`main` is 254)
  const deleted = result.deleted.map((d) => reportedRoute(d, 'delete'))
  if (json) return {json: {schema: 1, ...result, deleted}, exitCode}
  const [{palette}, {renderRevert}] = await Promise.all([import('../render/style.js'), import('../render/apply.js')])
  return {text: renderRevert(result, palette()), exitCode}
}

/** What `fix` is asked to do: its source and plan request, --revert, and how an apply writes. */
export interface FixCommandRequest extends FixRequest {
  source: SourceOptions
  revert?: string // a journal to undo instead of planning
  birdConfig?: boolean
  json?: boolean
  journalDir?: string
  watchSeconds?: number
}

/** How `fix` talks to its user: asks before writing (false: nothing is written), shows each step's result. */
export interface FixDialog {
  confirm(question: string): Promise<boolean>
  show(shown: FixShown): Promise<void>
}

/**
 * `fix`: with --revert, the journal undone once confirmed; else the plan shown and, when it is an apply with changes
 * and the user confirms, written and its result shown.
 */
export async function fixCommand(req: FixCommandRequest, dialog: FixDialog): Promise<void> {
  if (req.revert) {
    if (await dialog.confirm(`Revert the routes journaled in ${req.revert}?`))
      await dialog.show(await revertFixRun(req.revert, req.json))
    return
  }
  const run = await fixRun(req.source, req)
  await dialog.show(run)
  if (run.question === undefined || !(await dialog.confirm(run.question))) return
  await dialog.show(
    await applyFixRun(run.planned, {journalDir: req.journalDir, watchSeconds: req.watchSeconds, json: req.json}),
  )
}
