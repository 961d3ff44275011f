// The kernel itself has no usable route to the BGP next hop N.
import {NONE, prefixFinding, type PrefixRule} from '../rule.js'
import {formatKernelRouteLine} from '../../model/format.js'
import type {NexthopResolution} from '../../model/snapshot-index.js'

function allReachable(resolutions: readonly NexthopResolution[]): boolean {
  for (const r of resolutions) if (!r.lookup.reachable) return false
  return true
}

export const rule: PrefixRule = {
  id: 'nexthop-unreachable',
  scope: 'prefix',
  run(ctx, facts) {
    if (facts.local || allReachable(facts.resolutions) || !ctx.haveKernel) return NONE
    return facts.resolutions
      .filter((r) => !r.lookup.reachable)
      .map((res) =>
        prefixFinding(ctx, 'nexthop-unreachable', facts.prefix, () => ({
          title: `The kernel cannot reach BGP next hop ${res.bgpNextHop} of ${facts.prefix}`,
          detail: res.lookup.route
            ? `The kernel's route for ${res.bgpNextHop} is \`${formatKernelRouteLine(res.lookup.route)}\`: packets to that node are dropped, tunnelled or not.`
            : `No kernel route covers ${res.bgpNextHop}: the underlay to the node that owns ${facts.prefix} is missing.`,
          evidence: [
            ...facts.bestSet.filter((p) => p.bgpNextHop === res.bgpNextHop).flatMap((p) => ctx.cite(p.pos)),
            ...ctx.resolutionEvidence(res),
          ],
          fix: `Restore the underlay route to ${res.bgpNextHop} (uplinks, ToR sessions) before anything else.`,
        })),
      )
  },
}
