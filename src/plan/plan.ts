// The overlay plan (DESIGN §5): routedoctor's corrections live in a table of their own, reached by one
// `ip rule to POOL lookup TABLE` per IP-in-IP pool, a table BIRD's kernel protocol never learns from. The plan
// is the whole overlay: routes to add or change, stale routedoctor routes to delete (routes of earlier versions
// in BIRD's table included), the rules to add, or to remove once the overlay is empty.
import type {SnapshotIndex, PrefixFacts} from '../model/snapshot-index.js'
import type {PrefixDiagnosis} from '../diagnose/engine.js'
import {carriesPlan, inInput, kernelLearnt, overlayGateways, unnamedBgpNexthops} from '../diagnose/rule.js'
import {tableIdOf} from '../model/fib.js'
import type {
  IpRule,
  KernelRoute,
  Nexthop,
  PlannedNexthop,
  PlannedRoute,
  PlannedRule,
  ReportedRoute,
} from '../model/types.js'
import {compareAddresses, ruleBeforeMain} from '../model/snapshot-index.js'

export interface PlanItem {
  action: 'replace' | 'delete'
  planned: PlannedRoute // replace: the route written; delete: the route withdrawn, as the kernel holds it
  // replace: the route of BIRD (or another owner) it takes precedence over; delete: the route withdrawn
  replaces?: KernelRoute
  // overlay: written into the overlay table; delete: withdrawn; beside / replace: a route in BIRD's table
  // (earlier versions' plans, still revertible from their journals)
  mode: 'overlay' | 'delete' | 'beside' | 'replace'
}

/** Where the overlay lives: its table, the priority of its rules, the protocol of its routes. */
export interface OverlaySettings {
  table: number
  rulePriority: number
  protocol: string
  // no priority asked for (--rule-priority not given): a pool's rule already there at another priority is its rule
  keepRulePriority?: boolean
}

/** A plan a long-running caller (watch --reconcile) can apply again and again: route changes, then rule changes. */
export interface OverlayPlan {
  settings: OverlaySettings
  items: PlanItem[] // replaces first (in prefix order), then deletes
  rules: PlannedRule[]
  kept: number // routedoctor routes in the overlay that are right and stay as they are
}

/** The routes for one prefix: the corrected route to write (if it is not there as planned) and routes to withdraw. */
export interface PrefixPlan {
  replace?: PlanItem
  deletes: PlanItem[]
  kept?: KernelRoute // our route, already as planned
}

const NO_DELETES: PlanItem[] = []

export function planPrefixOverlay(ctx: SnapshotIndex, facts: PrefixFacts): PrefixPlan {
  if (!facts.pool) return {deletes: facts.ours.length === 0 ? NO_DELETES : facts.ours.map(deleteItem)}
  if (tunnelDevMissing(ctx)) return {deletes: NO_DELETES} // plan nothing through a device that is not there
  const gateways = overlayGateways(ctx, facts)
  const table = ctx.overlayTable
  let kept: KernelRoute | undefined
  let deletes: PlanItem[] = NO_DELETES
  for (const r of facts.ours) {
    if (kept === undefined && r.tableId === table && r.metric === 0 && carriesPlan(ctx, r, gateways)) kept = r
    else (deletes === NO_DELETES ? (deletes = []) : deletes).push(deleteItem(r))
  }
  if (gateways.length === 0 || kept !== undefined) return {deletes, ...(kept ? {kept} : {})}
  const theirs = facts.kernel.find((r) => r.protocol !== ctx.fixProtocol)
  const planned: PlannedRoute = {
    action: 'replace',
    dst: facts.prefix,
    table: String(table),
    tableId: table,
    metric: 0,
    protocol: ctx.fixProtocol,
    nexthops: plannedNexthops(gateways, ctx.snapshot.tunnelDev, theirs?.nexthops),
  }
  // a delete at the key the replace writes is the replace itself
  deletes = deletes.filter((d) => d.planned.tableId !== table || d.planned.metric !== 0)
  return {replace: {action: 'replace', planned, ...(theirs ? {replaces: theirs} : {}), mode: 'overlay'}, deletes}
}

/** The corrected route of one diagnosed prefix (explain's `plan`): written into the overlay, or null. */
export function planPrefix(ctx: SnapshotIndex, d: PrefixDiagnosis): PlanItem | null {
  const p = planPrefixOverlay(ctx, d.facts)
  if (p.replace) return p.replace
  if (p.kept)
    return {action: 'replace', planned: fromKernel(p.kept, 'replace', ctx.snapshot.tunnelDev), mode: 'overlay'}
  return null
}

/** A planned route as the reports give it. */
export function reportedRoute(p: PlannedRoute, action: 'replace' | 'delete' = p.action ?? 'replace'): ReportedRoute {
  return {action, dst: p.dst, table: p.tableId, metric: p.metric, protocol: p.protocol, nexthops: p.nexthops}
}

function deleteItem(r: KernelRoute): PlanItem {
  return {action: 'delete', planned: fromKernel(r, 'delete'), replaces: r, mode: 'delete'}
}

/** A kernel route as a planned one (a route routedoctor withdraws, or keeps). */
function fromKernel(r: KernelRoute, action: 'replace' | 'delete', dev?: string): PlannedRoute {
  return {
    action,
    dst: r.dst,
    table: r.table,
    tableId: r.tableId,
    metric: r.metric,
    protocol: r.protocol,
    nexthops: r.nexthops.map((n) => ({
      gateway: n.gateway?.address ?? '',
      dev: n.dev ?? dev ?? '',
      onlink: n.flags.includes('onlink') || r.flags.includes('onlink'),
      weight: n.weight,
    })),
  }
}

/**
 * The rules the overlay needs: one `to POOL lookup TABLE` for every IP-in-IP pool while the overlay holds a route, none
 * once it is empty. A pool's rule is the one at the priority, or with keepRulePriority the first before main's (one an
 * earlier `--rule-priority` put there: recognised, not doubled); a rule of the overlay's table that is not one goes.
 */
export function planRules(ctx: SnapshotIndex, settings: OverlaySettings, overlayHoldsRoutes: boolean): PlannedRule[] {
  const existing = ctx.snapshot.rules.filter((r) => r.table !== undefined && tableIdOf(r.table) === settings.table)
  const wanted = overlayHoldsRoutes ? ctx.snapshot.pools.filter((p) => p.mode === 'ipip').map((p) => p.cidr) : []
  const out: PlannedRule[] = []
  const poolRule = (r: IpRule, to: string) =>
    r.to === to && r.from === undefined && !r.otherSelectors && r.action === 'lookup'
  const kept = new Set<IpRule>()
  for (const to of wanted) {
    const rules = existing.filter((r) => poolRule(r, to)).sort((a, b) => a.priority - b.priority)
    // a rule at or after main's is never reached for what main holds: kept, it would leave the overlay unused
    const rule = rules.find((r) => r.priority === settings.rulePriority) ??
      (settings.keepRulePriority ? rules.find((r) => ruleBeforeMain(r.priority)) : undefined)
    if (rule) kept.add(rule)
    else out.push({action: 'add', priority: settings.rulePriority, to, table: settings.table})
  }
  for (const r of existing) {
    if (kept.has(r)) continue
    // not a rule routedoctor writes: not ours to remove
    if (r.to === undefined || r.from !== undefined || r.otherSelectors) continue
    out.push({action: 'delete', priority: r.priority, to: r.to, table: settings.table})
  }
  return out
}

/** The links are known and the tunnel device is not among them: nothing can be routed through it. */
function tunnelDevMissing(ctx: SnapshotIndex): boolean {
  return ctx.haveLinks && !ctx.links.has(ctx.snapshot.tunnelDev)
}

/** Why planPrefix planned nothing for a prefix that is not healthy; undefined for a healthy or local one. */
export function whyNoPlan(ctx: SnapshotIndex, d: PrefixDiagnosis): string | undefined {
  const facts = d.facts
  if (d.verdict === 'ok' || d.verdict === 'local') return undefined
  if (d.verdict === 'not-in-pool' || !facts.tunnelExpected) return 'not in an IP-in-IP pool'
  const dev = ctx.snapshot.tunnelDev
  if (tunnelDevMissing(ctx))
    return `there is no ${dev} device, so nothing can be routed through it; --tunnel-dev names the tunnel device`
  if (!ctx.haveBird)
    return `no BIRD routes ${inInput(ctx)}: nothing can be planned without BIRD's BGP paths and next hops`
  if (facts.bird.length === 0) {
    // a guess at a down session only where one is down, or the sessions are unknown
    if (facts.ownersDown.length > 0)
      return `no BGP path: its owner's session may be the one down (${facts.ownersDown.map((p) => p.name).join(', ')})`
    return ctx.bgpProtocols.length > 0
      ? 'no BGP path: no peer announces it, over sessions that are all Established'
      : 'no BGP path: its owner\'s session is down or it is not announced'
  }
  if (unnamedBgpNexthops(facts))
    return 'BIRD\'s paths do not show their BGP next hop: the snapshot has `show route` without `all`'
  if (facts.bgpNextHops.length === 0) {
    return facts.bird.every((r) => kernelLearnt(ctx, r))
      ? 'BIRD\'s only path is one it learnt from the kernel: no BGP path names an owner'
      : 'BIRD\'s paths carry no BGP next hop'
  }
  const owner = ctx.cluster?.ownerOf(facts.prefix)
  if (
    owner?.address !== undefined &&
    owner.node !== ctx.clusterNode?.name &&
    !facts.bgpNextHops.includes(owner.address)
  ) {
    return `Calico's IPAM gives it to ${owner.node} (${owner.address}), and no best BGP path of BIRD's names that address`
  }
  return 'no BGP next hop the kernel can reach'
}

/**
 * One onlink next hop on `dev` per gateway, in address order, weighted as the replaced route's next hop through
 * it (else 1). A full table's plans repeat a few hundred gateway lists (wantedGateways' are frozen) and the kernel
 * shares its next-hop lists (frozen too): the hops for a pair of frozen lists are made once, frozen, and shared.
 */
function plannedNexthops(gateways: string[], dev: string, replaced: readonly Nexthop[] = NO_HOPS): PlannedNexthop[] {
  const shared = Object.isFrozen(gateways) && Object.isFrozen(replaced)
  const hit = shared ? hopsOf.get(gateways)?.get(replaced) : undefined
  if (hit !== undefined && hit.dev === dev) return hit.hops
  const weightOf = (g: string) => replaced.find((n) => n.dev === dev && n.gateway?.address === g)?.weight ?? 1
  const hops = [...gateways]
    .sort(compareAddresses)
    .map((gateway) => ({gateway, dev, onlink: true, weight: weightOf(gateway)}))
  if (!shared) return hops
  const made = {dev, hops: Object.freeze(hops.map((h) => Object.freeze(h))) as PlannedNexthop[]}
  let byReplaced = hopsOf.get(gateways)
  if (byReplaced === undefined) hopsOf.set(gateways, (byReplaced = new WeakMap()))
  byReplaced.set(replaced, made)
  return made.hops
}

// no replaced route: no next hop weighs anything, every weight is 1
const NO_HOPS: readonly Nexthop[] = Object.freeze([])
const hopsOf = new WeakMap<string[], WeakMap<readonly Nexthop[], {dev: string; hops: PlannedNexthop[]}>>()
