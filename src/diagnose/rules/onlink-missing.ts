// A tunnel route without onlink: the gateway (a remote node) is not on tunl0's subnet, so the
// kernel refuses or mis-resolves it; Calico always programs tunl0 routes onlink.
import {NONE, prefixEvidence, prefixFinding, type PrefixRule} from '../rule.js'
import type {Nexthop} from '../../model/types.js'

export const rule: PrefixRule = {
  id: 'onlink-missing',
  scope: 'prefix',
  run(ctx, facts) {
    const r = facts.effective
    if (!r || r.type !== 'unicast') return NONE
    if (r.flags.includes('onlink')) return NONE
    const dev = ctx.snapshot.tunnelDev
    let bad: Nexthop[] | undefined // most routes have none: no list for them
    for (const n of r.nexthops)
      if (n.dev === dev && n.gateway !== undefined && !n.flags.includes('onlink')) (bad ??= []).push(n)
    if (bad === undefined) return NONE
    return [
      prefixFinding(ctx, 'onlink-missing', facts.prefix, () => ({
        title: bad.length === 1
          ? `${facts.prefix} via ${bad[0].gateway!.address} dev ${ctx.snapshot.tunnelDev} lacks onlink`
          : `${facts.prefix}: next hops ${bad.map((n) => n.gateway!.address).join(', ')} on ${ctx.snapshot.tunnelDev} lack onlink`,
        detail: `A gateway on ${ctx.snapshot.tunnelDev} is a remote node's address, never on the tunnel's own subnet; without onlink the kernel treats it as unreachable or resolves it wrongly.`,
        evidence: prefixEvidence(ctx, facts),
        fix: 'Re-program the route with onlink (routedoctor fix).',
      })),
    ]
  },
}
