// What reconcile holds of a plan between making it and writing it: its signature (is it the plan that was pending?)
// and its JSON. Made where the plan is made (a worker thread): a full table's plan can hold a route for every block,
// whose copy to the agent's thread, sorting and JSON would hold that thread; it is parsed there only to be written.
import type {OverlayPlan} from '../plan/plan.js'

export interface PlannedOverlay {
  signature: string
  json: string // the OverlayPlan
  routes: number // its items
  rules: number
  asked: string[] // those of the prefixes asked about that the plan writes
}

/** How reconcile asks the fix service to plan: fix's --protocol and --rule-priority. */
export interface FixSettings {
  fixProtocol: string
  rulePriority?: number
}

/**
 * `plan` without the routes to `skip` (prefixes in a route war's back-off), as reconcile holds it, saying which of
 * `ask` (prefixes whose back-off is over) it writes.
 */
export function plannedOverlay(
  plan: OverlayPlan,
  skip: readonly string[],
  ask: readonly string[] = [],
): PlannedOverlay {
  const skipped = new Set(skip)
  const items = skipped.size === 0 ? plan.items : plan.items.filter((item) => !skipped.has(item.planned.dst))
  const planned = items.map((i) => i.planned).sort((a, b) => (a.dst < b.dst ? -1 : a.dst > b.dst ? 1 : 0))
  return {
    signature: JSON.stringify([planned, plan.rules]),
    json: JSON.stringify({...plan, items}),
    routes: items.length,
    rules: plan.rules.length,
    asked: ask.filter((dst) => items.some((i) => i.planned.dst === dst)),
  }
}
