// BIRD's best path for a pool prefix that is not this node's is one it learnt from the kernel, and its BGP export
// filter accepts such a route: this node advertises a block it does not own.
import {kernelLearnt, NONE, prefixFinding, type PrefixRule} from '../rule.js'
import {formatBirdPath} from '../../model/format.js'

export const rule: PrefixRule = {
  id: 'route-leaked-to-bgp',
  scope: 'prefix',
  run(ctx, facts) {
    const p = facts.birdPrimary
    if (!p || facts.local || !facts.pool || !kernelLearnt(ctx, p)) return NONE
    const config = ctx.snapshot.bird.config
    const exports = config?.bgpExports ?? []
    const accepting = exports.filter((e) => e.acceptsKernelRoutes)
    if (config !== undefined && accepting.length === 0) return NONE
    const source = p.attributes.find((a) => a.name === 'Kernel.source' || a.name === 'krt_source')
    return [
      prefixFinding(ctx, 'route-leaked-to-bgp', facts.prefix, () => ({
        title: `${facts.prefix} is advertised over BGP from a route BIRD learnt from the kernel`,
        detail:
          `BIRD's best path is ${formatBirdPath(p)}${source ? ` (${source.name}: ${source.value})` : ''}: a route learnt from ` +
          'the kernel, not from the block\'s owner. ' +
          (accepting.length > 0
            ? `The BGP export filter ${[...new Set(accepting.map((e) => e.filter))].join(', ')} accepts it by prefix, so this node announces the block to its peers and they route it here.`
            : 'bird.conf was not collected, so whether the BGP export filter accepts it is unknown; Calico\'s does.'),
        evidence: [...ctx.cite(p.pos), ...accepting.flatMap((e) => ctx.cite(e.pos))],
        fix: 'Remove the kernel route BIRD learnt (a routedoctor route of an earlier version: routedoctor fix --apply moves it into the overlay table or withdraws it).',
      })),
    ]
  },
}
