// Failure 3: a prefix several nodes announce should be multipath over the tunnel, one next hop per node.
import {NONE, prefixEvidence, prefixFinding, type PrefixRule, wantedGateways} from '../rule.js'

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
        title: `${facts.prefix} is announced by ${wanted.length} nodes but ${lost.length === wanted.length ? 'none' : `not ${lost.join(', ')}`} is a ${ctx.snapshot.tunnelDev} next hop`,
        detail:
          `BIRD's best equal paths have BGP next hops ${wanted.join(', ')}, all reachable by the kernel; the route should be ` +
          `${wanted.map((g) => `nexthop via ${g} dev ${ctx.snapshot.tunnelDev} onlink`).join(' ')}. ` +
          `Missing through the tunnel: ${lost.join(', ')}.`,
        evidence: prefixEvidence(ctx, facts),
        fix: `Program the multipath onlink route (routedoctor fix).`,
      })),
    ]
  },
}
