// A routedoctor route that differs from today's plan: the block moved, an anycast member left, the block was
// withdrawn, or BIRD's own route is right now (the durable fix landed). Left alone it wins over BIRD's route.
import {carriesPlan, NONE, overlayGateways, prefixFinding, type PrefixRule} from '../rule.js'
import {formatKernelRouteLine, tunnelNexthops} from '../../model/format.js'

export const rule: PrefixRule = {
  id: 'overlay-stale',
  scope: 'prefix',
  run(ctx, facts) {
    if (facts.ours.length === 0) return NONE
    const wanted = overlayGateways(ctx, facts)
    const stale = facts.ours.filter((r) => !carriesPlan(ctx, r, wanted))
    if (stale.length === 0) return NONE
    const dev = ctx.snapshot.tunnelDev
    return [
      prefixFinding(ctx, 'overlay-stale', facts.prefix, () => ({
        title: `routedoctor's route for ${facts.prefix} is stale`,
        detail:
          `\`${formatKernelRouteLine(stale[0])}\` (proto ${ctx.fixProtocol}, routedoctor's) ` +
          (wanted.length === 0
            ? `is no longer wanted: ${
                facts.local
                  ? 'the block is this node\'s own'
                  : facts.bgpNextHops.length === 0
                    ? 'no BGP path names an owner for the prefix any more'
                    : 'the route of BIRD (or its owner) is right by itself now'
              }.`
            : `should be ${tunnelNexthops(wanted, dev)}: ` +
              `BIRD's best BGP paths name ${facts.bgpNextHops.join(', ')}.`) +
          ' A stale correction keeps sending traffic to a node that may no longer own the block.',
        evidence: [...stale.flatMap((r) => ctx.citeKernelRoute(r)), ...facts.bestSet.flatMap((r) => ctx.cite(r.pos))],
        fix:
          wanted.length === 0
            ? 'routedoctor fix --apply withdraws it (`ip route del` in the plan).'
            : 'routedoctor fix --apply replaces it with today\'s plan.',
      })),
    ]
  },
}
