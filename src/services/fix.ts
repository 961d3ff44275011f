// `fix`: the corrected routes for every unhealthy tunnel prefix, as a plan the netlink stage can apply.
import {Context, type ContextOptions, type PrefixFacts} from '../model/context.js'
import {diagnoseFacts} from '../diagnose/engine.js'
import {planPrefix, whyNoPlan, type PlanItem} from '../plan/plan.js'
import {birdConfigAdvice, type BirdConfigAdvice} from '../plan/bird-config.js'
import {ipRouteReplace} from '../model/format.js'
import type {KernelRoute, PlannedRoute, Verdict} from '../model/types.js'
import {SCHEMA, nodeSummary, resolveTarget, targetScope, type NodeSummary} from './report.js'
import {prefixContains} from '../model/prefix.js'

export interface FixEntry {
  prefix: string
  verdict: Verdict
  current: KernelRoute[]
  planned: PlannedRoute
  mode: PlanItem['mode']
  ipRoute: string
}

export interface FixReport {
  schema: number
  node: NodeSummary
  // why nothing could be planned at all (BIRD's routes missing or not collected)
  unavailable?: string
  scope?: string // with a PREFIX argument: what was planned (the block it resolved to, or the prefixes inside it)
  routes: PlannedRoute[]
  replaced: KernelRoute[] // the kernel routes the plan corrects (left in place when mode is beside)
  entries: FixEntry[]
  skipped: Array<{prefix: string; verdict: Verdict; reason: string}>
  birdConfig: BirdConfigAdvice
  applied?: PlannedRoute[]
  verified?: boolean
  journal?: string
  routeWar?: unknown[]
  restored?: boolean
  errors?: unknown[]
}

/**
 * The Context a plan is made of: a plan shows verdicts and routes, never a finding's texts or evidence, so they are
 * not made (for 10k broken blocks, a third of planning's time); verdicts and plans are the same either way.
 */
export const FIX_CONTEXT: Readonly<ContextOptions> = Object.freeze({evidence: false, texts: false})

export function planFix(ctx: Context, only?: string): {report: FixReport; items: PlanItem[]} {
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
  const items: PlanItem[] = []
  const skipped: FixReport['skipped'] = []
  for (const f of facts) {
    const d = diagnoseFacts(ctx, f)
    const prefix = d.prefix
    const item = planPrefix(ctx, d)
    if (!item) {
      if (d.verdict !== 'ok' && d.verdict !== 'local') {
        skipped.push({prefix, verdict: d.verdict, reason: whyNoPlan(ctx, d) ?? 'nothing to program'})
      }
      continue
    }
    items.push(item)
    entries.push({prefix, verdict: d.verdict, current: d.facts.kernel, planned: item.planned, mode: item.mode, ipRoute: ipRouteReplace(item.planned)})
  }
  const status = ctx.snapshot.bird.status
  const node = nodeSummary(ctx)
  const birdFailed = node.failed.find((f) => f.file === 'birdc-show-route-all.txt')
  const unavailable = ctx.haveBird ? undefined
    : birdFailed ? `BIRD's routes could not be read (${birdFailed.error}): nothing can be planned without BIRD's BGP next hops`
    : 'the snapshot has no BIRD routes (birdc-show-route-all.txt): nothing can be planned without BIRD\'s BGP next hops'
  return {
    items,
    report: {
      schema: SCHEMA,
      node,
      ...(unavailable ? {unavailable} : {}),
      ...(scope ? {scope} : {}),
      routes: items.map((i) => i.planned),
      replaced: items.flatMap((i) => (i.replaces ? [i.replaces] : [])),
      entries,
      skipped,
      birdConfig: birdConfigAdvice(status?.version, status?.calicoFork ?? false, ctx.snapshot.pools, ctx.snapshot.tunnelDev),
    },
  }
}
