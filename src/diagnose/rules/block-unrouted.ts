// With Calico's truth: another node's block of an IP-in-IP pool, with an affine node, and no route here.
import {NONE, overlayRouteByHand, prefixFinding, type PrefixRule} from '../rule.js'
import {truthEvidence} from './block-affinity-conflict.js'

export const rule: PrefixRule = {
  id: 'block-unrouted',
  scope: 'prefix',
  run(ctx, facts) {
    if (facts.kernel.length > 0 || facts.local || facts.pool?.mode !== 'ipip') return NONE
    const owner = ctx.cluster?.ownerOf(facts.prefix)
    const me = ctx.clusterNode
    if (owner?.node === undefined || owner.block === undefined || me === undefined || owner.node === me.name)
      return NONE
    const session = ctx.bgpProtocols.find((p) => p.neighborAddress !== undefined && p.neighborAddress === owner.address)
    return [
      prefixFinding(ctx, 'block-unrouted', facts.prefix, () => ({
        title: `${facts.prefix} belongs to ${owner.node} (${owner.address ?? 'address unknown'}) and has no route here`,
        detail:
          `Calico's IPAM gives ${facts.prefix} to ${owner.node}, yet this node's kernel has no route for it` +
          (facts.bird.length > 0 ? ' (BIRD holds a path but it is not in the kernel)' : ' and BIRD holds no path') +
          (session
            ? `; the session to ${owner.node} is ${session.bgpState ?? session.state}`
            : owner.address
              ? `; no BGP session to ${owner.address}`
              : '') +
          '.',
        evidence: [
          ...truthEvidence(ctx, owner),
          ...(session ? ctx.cite({...session.pos, endLine: session.pos.line}) : []),
        ],
        fix: owner.address
          ? `Check ${owner.node}'s BIRD exports it, and the session to ${owner.address}; meanwhile, ` +
            overlayRouteByHand(ctx, facts.prefix, owner.address)
          : undefined,
      })),
    ]
  },
}
