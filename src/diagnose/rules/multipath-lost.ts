// Failure 3: a prefix several nodes announce should be multipath over the tunnel, one next hop per node.
import {NONE, prefixEvidence, prefixFinding, type PrefixRule, wantedGateways} from '../rule.js'
import {tunnelNexthops} from '../../model/format.js'

export const rule: PrefixRule = {
  id: 'multipath-lost',
  scope: 'prefix',
  run(ctx, facts) {
    if (!facts.tunnelExpected || facts.local || facts.resolutions.length < 2) return NONE
    const wanted = wantedGateways(facts)
    if (wanted.length < 2) return NONE
    const r = facts.effective
    const have = new Set((r?.type === 'unicast' ? r.nexthops : [])
      .filter((n) => n.dev === ctx.snapshot.tunnelDev && n.gateway).map((n) => n.gateway!.address))
    const lost = wanted.filter((g) => !have.has(g))
    if (lost.length === 0) return NONE
    return [
      prefixFinding(ctx, 'multipath-lost', facts.prefix, () => ({
        title: `${facts.prefix} is announced by ${wanted.length} nodes but ${lostTitle(lost, wanted.length, ctx.snapshot.tunnelDev)}`,
        detail:
          `BIRD's best equal paths have BGP next hops ${wanted.join(', ')}, all reachable by the kernel; the route should be ` +
          `${tunnelNexthops(wanted, ctx.snapshot.tunnelDev)}. ` +
          `Missing through the tunnel: ${lost.join(', ')}.`,
        evidence: prefixEvidence(ctx, facts),
        fix: `Program the multipath onlink route (routedoctor fix).`,
      })),
    ]
  },
}

/** "none is a tunl0 next hop", "172.20.6.11 is not a tunl0 next hop", "A, B are not tunl0 next hops". */
function lostTitle(lost: string[], announcers: number, dev: string): string {
  if (lost.length === announcers) return `none is a ${dev} next hop`
  return lost.length === 1 ? `${lost[0]} is not a ${dev} next hop` : `${lost.join(', ')} are not ${dev} next hops`
}
