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
  const gateways = ownerGateways(ctx, facts.prefix, wantedGateways(facts))
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
      nexthops: plannedNexthops(gateways, ctx.snapshot.tunnelDev, replaces?.nexthops),
    },
    ...(replaces ? {replaces} : {}),
    mode,
  }
}

/** With Calico's truth, a block's one next hop is its owner's address, when the kernel can reach it (DESIGN §5). */
function ownerGateways(ctx: Context, prefix: string, gateways: string[]): string[] {
  const owner = ctx.cluster?.ownerOf(prefix)
  if (owner?.address === undefined || owner.block === undefined || owner.node === ctx.clusterNode?.name) return gateways
  if (gateways.length === 1 && gateways[0] === owner.address) return gateways
  return ctx.resolve(owner.address).lookup.reachable ? [owner.address] : []
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
  const hops = [...gateways].sort(compareAddresses).map((gateway) => ({gateway, dev, onlink: true, weight: weightOf(gateway)}))
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

/** BIRD 2 and 3 write metric 32 unless configured; BIRD 1.6 and Calico's fork write 0. */
export function defaultKernelMetric(ctx: Context): number {
  const configured = ctx.snapshot.bird.config?.kernelMetric
  if (configured !== undefined) return configured
  return (ctx.snapshot.bird.status?.major ?? 2) >= 2 ? 32 : 0
}
