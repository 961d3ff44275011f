// Failure 1: the BGP next hop resolved through an ECMP underlay, the route became multipath, and
// Calico's fork (krt_tunnel honoured only on single-path routes) wrote it without the tunnel.
import {
  NONE,
  prefixEvidence,
  prefixFinding,
  type PrefixRule,
  resolutionEvidence,
  throughTunnel,
  tunnelFixAdvice,
  whyOffTunnel,
} from '../rule.js'
import {formatNexthops} from '../../model/format.js'
import type {NexthopResolution} from '../../model/snapshot-index.js'

export const rule: PrefixRule = {
  id: 'tunnel-bypassed-by-ecmp',
  scope: 'prefix',
  run(ctx, facts) {
    const r = facts.effective
    if (!facts.tunnelExpected || facts.local || !r || r.type !== 'unicast' || throughTunnel(ctx, facts)) return NONE
    if (r.nexthops.length < 2) return NONE
    return [prefixFinding(ctx, 'tunnel-bypassed-by-ecmp', facts.prefix, () => {
      const via = ecmpVia(facts.resolutions)
      return {
        title: `${facts.prefix} is multipath over the underlay, not through ${ctx.snapshot.tunnelDev}`,
        detail: `The kernel sends ${facts.prefix} ${formatNexthops(r)}: unencapsulated. ` +
          (via ? `Its BGP next hop ${via}, so BIRD made the route multipath; ` : 'The route is multipath; ') +
          whyOffTunnel(ctx, true),
        evidence: [...prefixEvidence(ctx, facts), ...resolutionEvidence(ctx, facts)],
        fix: tunnelFixAdvice(ctx, facts),
      }
    })]
  },
}

/**
 * How the multipath next hops resolve, in words: a list the SnapshotIndex shares among a next hop's prefixes is worded
 * once.
 */
function ecmpVia(resolutions: readonly NexthopResolution[]): string {
  let via = viaOf.get(resolutions)
  if (via === undefined) {
    via = resolutions
      .filter((n) => n.multipath)
      .map((n) => `${n.bgpNextHop} resolves through the ECMP route ${n.lookup.route!.dst}`)
      .join('; ')
    viaOf.set(resolutions, via)
  }
  return via
}

const viaOf = new WeakMap<readonly NexthopResolution[], string>()
