// `fix`'s report: the overlay plan as `fix` prints it and `fix --json` writes it (DESIGN §4).
// services/fix.ts builds it.
import type {OverlayPlan, PlanItem} from '../plan/plan.js'
import type {BirdConfigAdvice} from '../plan/bird-config.js'
import type {KernelRoute, PlannedRule, ReportedRoute, Verdict} from '../model/types.js'
import type {ApplyResult, RouteWar} from '../netlink/apply.js'
import type {NodeSummary} from './report.js'

export interface FixEntry {
  prefix: string
  verdict: Verdict
  action: 'replace' | 'delete'
  current: KernelRoute[] // the prefix's routes in BIRD's tables and routedoctor's own
  planned: ReportedRoute // its table by number, as every route of fix's report
  mode: PlanItem['mode']
  ipRoute: string
}

/** A route of the plan as `fix --json` lists it (DESIGN §4): the action first; its table by number, as a rule's. */
export type FixRoute = ReportedRoute

export interface FixReport {
  schema: number
  node: NodeSummary
  // why nothing could be planned at all (BIRD's routes missing or not collected)
  unavailable?: string
  scope?: string // with a PREFIX argument: what was planned (the block it resolved to, or the prefixes inside it)
  table: number // the overlay table
  routes: FixRoute[]
  rules: PlannedRule[]
  replaced: KernelRoute[] // the kernel routes the plan takes precedence over or withdraws
  entries: FixEntry[]
  ruleLines: string[] // `ip rule add|del …` of `rules`
  kept: number // routedoctor routes already as planned
  skipped: Array<{prefix: string; verdict: Verdict; reason: string}>
  birdConfig: BirdConfigAdvice
  applied?: FixRoute[]
  verified?: boolean
  journal?: string
  routeWar?: Array<Omit<RouteWar, 'table'> & {table: number}>
  restored?: boolean
  errors?: unknown[]
  appliedRules?: string[] // with --apply: what it did to the rules, as `added|removed PRIORITY: RULE`
}

/** `fix`'s plan: the report, the route changes and the whole overlay plan; `changes` counts routes and rules. */
export interface PlannedFix {
  report: FixReport
  items: PlanItem[]
  plan: OverlayPlan
  changes: number
}

/** What `fix` shows: the plan (`dry-run`), the BIRD filter (`bird-config`), or the plan it is about to apply. */
export type FixMode = 'dry-run' | 'bird-config' | 'apply'

/** `fix --json`'s document when nothing is applied: an apply with nothing to change says so as an apply would. */
export function fixPlanJson(p: PlannedFix, mode: FixMode): object {
  if (mode === 'apply' && p.report.unavailable === undefined && p.changes === 0)
    return {...p.report, applied: [], verified: true, journal: null}
  return p.report
}

/** Did an apply leave the kernel as planned: verified, no error, no route war? */
export function appliedCleanly(r: Pick<ApplyResult, 'verified' | 'errors' | 'routeWar'>): boolean {
  return r.verified && r.errors.length === 0 && !(r.routeWar?.length)
}
