import {NONE, prefixFinding, type PrefixRule} from '../rule.js'

export const rule: PrefixRule = {
  id: 'local-block',
  scope: 'prefix',
  run(ctx, facts) {
    if (!facts.local) return NONE
    return [
      prefixFinding(ctx, 'local-block', facts.prefix, () => ({
        title: `${facts.prefix} is local to this node`,
        detail:
          facts.effective?.type === 'blackhole'
            ? `${facts.prefix} is this node's own block (a blackhole route catches addresses not assigned to a workload).`
            : `${facts.prefix} is a local workload route${facts.effective?.nexthops[0]?.dev ? ` on ${facts.effective.nexthops[0].dev}` : ''}; it is not tunnelled.`,
        evidence: [
          ...(facts.birdPrimary ? ctx.cite(facts.birdPrimary.pos) : []),
          ...(facts.effective ? ctx.citeKernelRoute(facts.effective) : []),
        ],
      })),
    ]
  },
}
