// Any owner but routedoctor (BIRD, Felix proto 80, static, boot) tunnels the prefix to an endpoint BIRD's best BGP
// paths do not name.
import {NONE, prefixEvidence, prefixFinding, type PrefixRule, tunnelEndpoints} from '../rule.js'
import {formatNexthops} from '../../model/format.js'

export const rule: PrefixRule = {
  id: 'tunnel-endpoint-mismatch',
  scope: 'prefix',
  run(ctx, facts) {
    const r = facts.effective
    // BIRD's own kernel route counts too: one left behind, or out of step with BIRD's paths, misroutes alike
    if (!r || facts.local || !ctx.haveBird || r.protocol === ctx.fixProtocol) return NONE
    const hops = tunnelEndpoints(ctx, r)
    if (hops === undefined) return NONE
    const foreign = hops.filter((h) => !facts.bgpNextHops.includes(h))
    if (foreign.length === 0) return NONE
    return [
      prefixFinding(ctx, 'tunnel-endpoint-mismatch', facts.prefix, () => ({
        title: `${facts.prefix} is tunnelled to ${foreign.join(', ')} (proto ${r.protocol}), which BIRD does not name`,
        detail:
          `The route in force goes ${formatNexthops(r)}, written by proto ${r.protocol}; ` +
          (facts.bgpNextHops.length > 0
            ? `BIRD's best BGP paths name ${facts.bgpNextHops.join(', ')}.`
            : 'BIRD has no BGP path for it.'),
        evidence: prefixEvidence(ctx, facts),
        fix:
          r.protocol === 'bird'
            ? 'BIRD\'s own route no longer matches its best paths (left in the kernel by persist or a restart, or a ' +
              'kernel write that failed: see BIRD\'s log); routedoctor fix programs the right route meanwhile.'
            : `Find the owner of proto ${r.protocol} routes (Felix writes proto 80) and correct its view of the block's owner.`,
      })),
    ]
  },
}
