// Failure 2: the kernel can reach N, but BIRD could not resolve it (typically an ECMP underlay with
// IPv6 link-local next hops that BIRD before 2.0.8 drops as a "strange multipath route"), so BIRD
// holds the path as unreachable.
import {NONE, prefixFinding, type PrefixRule} from '../rule.js'
import type {BirdRoute} from '../../model/types.js'

function anyUnreachable(paths: readonly BirdRoute[]): boolean {
  for (const p of paths) if (p.dest === 'unreachable') return true
  return false
}

export const rule: PrefixRule = {
  id: 'nexthop-unresolvable-by-bird',
  scope: 'prefix',
  run(ctx, facts) {
    if (facts.local || !anyUnreachable(facts.bestSet)) return NONE
    // the kernel already sends the prefix through the tunnel to N (routedoctor's route): nothing is broken now
    const tunnelled = new Set((facts.effective?.type === 'unicast' ? facts.effective.nexthops : [])
      .filter((n) => n.dev === ctx.snapshot.tunnelDev && n.gateway).map((n) => n.gateway!.address))
    const out = []
    for (const res of facts.resolutions) {
      if (!res.lookup.reachable || res.own || tunnelled.has(res.bgpNextHop)) continue
      const paths = facts.bestSet.filter((p) => p.bgpNextHop === res.bgpNextHop && p.dest === 'unreachable')
      if (paths.length === 0) continue
      const underlay = res.lookup.route!
      const why = res.viaInet6
        ? ` The kernel route ${underlay.dst} has IPv6 link-local next hops (via inet6)${res.multipath ? ' and is multipath' : ''}; BIRD ${ctx.snapshot.bird.status?.version ?? ''} cannot import such a route (BIRD before 2.0.8 logs "strange multipath route"), so it has nothing to resolve ${res.bgpNextHop} against.`
        : ` BIRD has no usable route to ${res.bgpNextHop} in its table although the kernel has ${underlay.dst}.`
      out.push(prefixFinding(ctx, 'nexthop-unresolvable-by-bird', facts.prefix, () => ({
        title: `BIRD cannot resolve BGP next hop ${res.bgpNextHop} for ${facts.prefix}`,
        detail: `BIRD marks the path from ${res.bgpNextHop} unreachable, yet \`ip route get ${res.bgpNextHop}\` works in the kernel.${why}` +
          (facts.effective?.type === 'unreachable' ? ` BIRD installed \`unreachable ${facts.prefix}\`.` : ''),
        evidence: [...paths.flatMap((p) => ctx.cite(p.pos)), ...ctx.resolutionEvidence(res),
          ...(facts.effective ? ctx.citeKernelRoute(facts.effective) : [])],
        fix: `Program ${facts.prefix} via ${res.bgpNextHop} dev ${ctx.snapshot.tunnelDev} onlink (the outer packet follows the kernel's underlay route); durably, an underlay BIRD can import (IPv4 next hops) or BIRD 2.0.12+ with the onlink kernel filter.`,
      })))
    }
    return out
  },
}
