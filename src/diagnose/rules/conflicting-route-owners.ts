// BIRD (proto bird) and Felix (proto 80) both writing the same prefix: they overwrite each other.
import {FELIX_PROTOCOL} from '../../model/snapshot-index.js'
import {NONE, prefixFinding, type PrefixRule} from '../rule.js'

export const rule: PrefixRule = {
  id: 'conflicting-route-owners',
  scope: 'prefix',
  run(ctx, facts) {
    if (facts.kernel.length < 2) return NONE
    const bird = facts.kernel.filter((r) => r.protocol === 'bird')
    const felix = facts.kernel.filter((r) => r.protocol === FELIX_PROTOCOL)
    if (bird.length === 0 || felix.length === 0) return NONE
    return [
      prefixFinding(ctx, 'conflicting-route-owners', facts.prefix, () => ({
        title: `${facts.prefix} is programmed by both BIRD (proto bird) and Felix (proto 80)`,
        detail:
          'Calico is moving route programming from BIRD to Felix (programClusterRoutes); with both on, each rewrites the other\'s route and it flaps.',
        evidence: [...bird, ...felix].flatMap((r) => ctx.citeKernelRoute(r)),
        fix: 'Let one owner program cluster routes: either Felix (programClusterRoutes) or BIRD, not both.',
      })),
    ]
  },
}
