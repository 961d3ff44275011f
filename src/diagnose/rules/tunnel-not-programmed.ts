// A single-path route for a tunnel prefix that does not use the tunnel device.
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

export const rule: PrefixRule = {
  id: 'tunnel-not-programmed',
  scope: 'prefix',
  run(ctx, facts) {
    const r = facts.effective
    if (!facts.tunnelExpected || facts.local || !r || r.type !== 'unicast' || throughTunnel(ctx, facts)) return NONE
    if (r.nexthops.length !== 1) return NONE
    return [prefixFinding(ctx, 'tunnel-not-programmed', facts.prefix, () => ({
      title: `${facts.prefix} goes ${formatNexthops(r)}, not through ${ctx.snapshot.tunnelDev}`,
      detail: `The pool is IP-in-IP, yet the kernel sends ${facts.prefix} ${formatNexthops(r)} unencapsulated. ` +
        whyOffTunnel(ctx, false),
      evidence: [...prefixEvidence(ctx, facts), ...resolutionEvidence(ctx, facts)],
      fix: tunnelFixAdvice(ctx, facts),
    }))]
  },
}
