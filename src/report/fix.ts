// `fix`'s report: the overlay plan as `fix` prints it and `fix --json` writes it (DESIGN §4); built by services/fix.ts.
import type {PlanItem} from '../plan/plan.js'
import type {BirdConfigAdvice} from '../plan/bird-config.js'
import type {KernelRoute, PlannedRoute, PlannedRule, Verdict} from '../model/types.js'
import type {NodeSummary} from './report.js'

export interface FixEntry {
  prefix: string
  verdict: Verdict
  action: 'replace' | 'delete'
  current: KernelRoute[] // the prefix's routes in BIRD's tables and routedoctor's own
  planned: PlannedRoute
  mode: PlanItem['mode']
  ipRoute: string
}

/** A route of the plan as `fix --json` lists it (DESIGN §4): the action first. */
export type FixRoute = PlannedRoute & {action: 'replace' | 'delete'}

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
  applied?: PlannedRoute[]
  verified?: boolean
  journal?: string
  routeWar?: unknown[]
  restored?: boolean
  errors?: unknown[]
}
