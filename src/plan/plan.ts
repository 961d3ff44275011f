// The corrected route for a tunnel prefix (DESIGN §5): one onlink next hop on the tunnel per
// distinct BGP next hop of BIRD's best equal paths that the kernel can reach and that is not ours.
import type {Context} from '../model/context.js'
import type {PrefixDiagnosis} from '../diagnose/engine.js'
import {wantedGateways} from '../diagnose/rule.js'
import type {KernelRoute, Nexthop, PlannedNexthop, PlannedRoute} from '../model/types.js'
import {compareAddresses} from '../model/context.js'

export interface PlanItem {
  planned: PlannedRoute
  replaces?: KernelRoute // the kernel route it corrects
  // beside: add at a lower metric than BIRD's, leaving BIRD's route untouched (removal restores it);
  // replace: BIRD's metric is 0, nothing is lower, so replace it in place
  mode: 'beside' | 'replace'
}

const NOTHING_TO_DO = new Set(['ok', 'local', 'not-in-pool'])

export function planPrefix(ctx: Context, d: PrefixDiagnosis): PlanItem | null {
  const facts = d.facts
  if (NOTHING_TO_DO.has(d.verdict) || !facts.tunnelExpected) return null
  const gateways = wantedGateways(facts)
  if (gateways.length === 0) return null
  const replaces = facts.kernel.find((r) => r.protocol === 'bird') ?? facts.kernel.find((r) => r.protocol !== ctx.fixProtocol)
  const birdMetric = replaces?.metric ?? defaultKernelMetric(ctx)
  const mode = birdMetric > 0 ? 'beside' : 'replace'
  return {
    planned: {
      dst: facts.prefix,
      table: replaces?.table ?? 'main',
      tableId: replaces?.tableId ?? 254,
      metric: mode === 'beside' ? birdMetric - 1 : birdMetric,
      protocol: ctx.fixProtocol,
      nexthops: plannedNexthops(gateways, replaces?.nexthops, ctx.snapshot.tunnelDev),
    },
    ...(replaces ? {replaces} : {}),
    mode,
  }
}

/**
 * One onlink next hop on `dev` per gateway, in address order, weighted as the replaced route's next hop through
 * it (else 1). A full table's plans repeat a few hundred gateway lists and the kernel shares its next-hop lists: the
 * hops for a pair of shared lists are made once, frozen, and shared by the plans.
 */
function plannedNexthops(gateways: string[], replaced: readonly Nexthop[] | undefined, dev: string): PlannedNexthop[] {
  const shared = Object.isFrozen(gateways) && (replaced === undefined || Object.isFrozen(replaced))
  let byReplaced = shared ? hopsOf.get(gateways) : undefined
  const hit = replaced === undefined ? byReplaced?.none : byReplaced?.lists.get(replaced)
  if (hit !== undefined && hit.dev === dev) return hit.hops
  const weightOf = (g: string) => replaced?.find((n) => n.dev === dev && n.gateway?.address === g)?.weight ?? 1
  const hops = [...gateways].sort(compareAddresses).map((gateway) => ({gateway, dev, onlink: true, weight: weightOf(gateway)}))
  if (!shared) return hops
  const made = {dev, hops: Object.freeze(hops.map((h) => Object.freeze(h))) as PlannedNexthop[]}
  if (byReplaced === undefined) hopsOf.set(gateways, (byReplaced = {lists: new WeakMap()}))
  if (replaced === undefined) byReplaced.none = made
  else byReplaced.lists.set(replaced, made)
  return made.hops
}

const hopsOf = new WeakMap<string[], {none?: {dev: string; hops: PlannedNexthop[]}; lists: WeakMap<readonly Nexthop[], {dev: string; hops: PlannedNexthop[]}>}>()

/** BIRD 2 and 3 write metric 32 unless configured; BIRD 1.6 and Calico's fork write 0. */
export function defaultKernelMetric(ctx: Context): number {
  const configured = ctx.snapshot.bird.config?.kernelMetric
  if (configured !== undefined) return configured
  return (ctx.snapshot.bird.status?.major ?? 2) >= 2 ? 32 : 0
}
