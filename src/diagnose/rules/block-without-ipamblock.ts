// With Calico's truth: a BlockAffinity whose block has no IPAMBlock (calico#4471): its node blackholes and
// announces a block IPAM does not know.
import {NONE, prefixEvidence, prefixFinding, type PrefixRule} from '../rule.js'
import {truthEvidence} from './block-affinity-conflict.js'

export const rule: PrefixRule = {
  id: 'block-without-ipamblock',
  scope: 'prefix',
  run(ctx, facts) {
    const owner = ctx.cluster?.ownerOf(facts.prefix)
    if (owner === undefined || owner.block !== undefined || owner.affinities.length === 0) return NONE
    // without an ipamblocks.json nothing can be said
    if (!ctx.cluster!.truth.files.some((f) => f.endsWith('ipamblocks.json'))) return NONE
    const nodes = [...new Set(owner.affinities.map((a) => a.node))]
    return [
      prefixFinding(ctx, 'block-without-ipamblock', facts.prefix, () => ({
        title: `${facts.prefix} has ${owner.affinities.length > 1 ? 'BlockAffinities' : 'a BlockAffinity'} (${nodes.join(', ')}) but no IPAMBlock`,
        detail:
          `Calico's IPAM has no IPAMBlock for ${facts.prefix}, yet ${nodes.join(' and ')} ${nodes.length > 1 ? 'hold affinities' : 'holds an affinity'} for it: ` +
          `${nodes.length > 1 ? 'each affine node blackholes' : 'the affine node blackholes'} the block and BIRD announces it, a bogus route on every node (calico#4471).`,
        evidence: [...truthEvidence(ctx, owner), ...prefixEvidence(ctx, facts)],
        fix: `Delete the stale ${owner.affinities.length > 1 ? 'BlockAffinities' : 'BlockAffinity'} (kubectl delete blockaffinities.crd.projectcalico.org ${owner.affinities.map((a) => a.name).join(' ')}) and restart calico-node on ${nodes.join(', ')}.`,
      })),
    ]
  },
}
