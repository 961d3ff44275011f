// With Calico's truth: two confirmed BlockAffinities for one block, or a pending/pendingDeletion leftover whose
// node still blackholes the block (here) or advertises it (seen here as a BGP next hop).
import type {BlockOwner} from '../../model/calico.js'
import type {SnapshotIndex} from '../../model/snapshot-index.js'
import type {Evidence} from '../../model/types.js'
import {NONE, prefixEvidence, prefixFinding, type PrefixRule} from '../rule.js'

/** The truth's objects behind a block, cited as one line each. */
export function truthEvidence(ctx: SnapshotIndex, owner: BlockOwner): Evidence[] {
  const out: Evidence[] = []
  const b = owner.block
  if (b)
    out.push(
      ...ctx.cite(
        b.pos,
        () => `IPAMBlock ${b.name}: cidr ${b.cidr}, affinity ${b.affinityNode ? `host:${b.affinityNode}` : 'none'}`,
      ),
    )
  for (const a of owner.affinities)
    out.push(...ctx.cite(a.pos, () => `BlockAffinity ${a.name}: cidr ${a.cidr}, node ${a.node}, state ${a.state}`))
  const n = owner.node === undefined ? undefined : ctx.cluster?.nodesByName.get(owner.node)
  if (n) out.push(...ctx.cite(n.pos, () => `Node ${n.name}: projectcalico.org/IPv4Address ${n.ipv4Cidr ?? 'not set'}`))
  return out
}

export const rule: PrefixRule = {
  id: 'block-affinity-conflict',
  scope: 'prefix',
  run(ctx, facts) {
    const owner = ctx.cluster?.ownerOf(facts.prefix)
    if (owner === undefined || (owner.affinities.length < 2 && owner.affinities.every((a) => a.state === 'confirmed')))
      return NONE
    const confirmed = owner.affinities.filter((a) => a.state === 'confirmed')
    const me = ctx.clusterNode?.name
    // a leftover matters where its node acts on it: blackholes it (this node) or announces it (a next hop here)
    const acting = owner.affinities
      .filter((a) => a.state !== 'confirmed')
      .filter((a) => {
        if (a.node === me) return facts.local
        const address = ctx.cluster!.nodesByName.get(a.node)?.ipv4Address
        return address !== undefined && facts.bgpNextHops.includes(address)
      })
    if (confirmed.length < 2 && acting.length === 0) return NONE
    return [
      prefixFinding(ctx, 'block-affinity-conflict', facts.prefix, () => ({
        title:
          confirmed.length > 1
            ? `${facts.prefix} has ${confirmed.length} confirmed BlockAffinities (${confirmed.map((a) => a.node).join(', ')})`
            : `${facts.prefix}: ${acting.map((a) => `${a.node}'s ${a.state} affinity`).join(', ')} still ${acting.some((a) => a.node === me) ? 'blackholes' : 'announces'} it`,
        detail:
          confirmed.length > 1
            ? 'Each affine node blackholes and announces the block, so other nodes route it by ECMP to both, and half its traffic goes to a node without its pods (calico#6486).'
            : 'A pending or pendingDeletion BlockAffinity is a leftover of an interrupted claim; its node blackholes the block and advertises it, pulling traffic from the owner (calico#6001, #6867).' +
              (owner.node ? ` The block's owner is ${owner.node}.` : ''),
        evidence: [...truthEvidence(ctx, owner), ...prefixEvidence(ctx, facts)],
        fix: affinityFix(owner),
      })),
    ]
  },
}

/**
 * Which BlockAffinities to delete: those whose node is not the IPAMBlock's affinity, by name; without an IPAMBlock
 * (or one without an affinity) IPAM names no owner, and the one to keep is the cluster's choice.
 */
function affinityFix(owner: BlockOwner): string {
  const b = owner.block
  const stray = b?.affinityNode === undefined ? [] : owner.affinities.filter((a) => a.node !== b.affinityNode)
  if (b === undefined || stray.length === 0) {
    return `Calico's IPAM names no owner for ${owner.cidr} (${b ? `IPAMBlock ${b.name} has no host affinity` : 'no IPAMBlock'}): ` +
      'keep the BlockAffinity of the node whose pods use the block, delete the others ' +
      '(kubectl delete blockaffinities.crd.projectcalico.org NAME), then restart calico-node on their nodes.'
  }
  const nodes = [...new Set(stray.map((a) => a.node))]
  return `Delete the BlockAffinit${stray.length > 1 ? 'ies' : 'y'} that IPAMBlock ${b.name} does not name ` +
    `(kubectl delete blockaffinities.crd.projectcalico.org ${stray.map((a) => a.name).join(' ')}), then restart ` +
    `calico-node on ${nodes.join(', ')}.`
}
